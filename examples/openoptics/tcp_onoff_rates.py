"""TCP on-off flows on a 4-ToR rotor with 10 Gbps links: each application writes 250 KB at
its rate (20, 50 or 100 Mbps), so each flow takes its bytes x 8 / rate, and its
throughput is its rate, however fast the network could carry it."""

from opendcn.openoptics import OpticalRouting, OpticalTopo, Toolbox

RATES_MBPS = (20, 50, 100)
SIZE = 250_000


def main(quiet: bool = True) -> dict:
    net = Toolbox.BaseNetwork("tcp-onoff", nb_node=4, backend="ns3", time_slice_duration_us=20, guardband_us=1,
                              tor_host_link_bw_gbps=10, ocs_tor_link_bw_gbps=10, simulation_stop_s=0.2, quiet=quiet)
    net.deploy_topo(OpticalTopo.round_robin(nb_node=4))
    net.deploy_routing(OpticalRouting.routing_direct(net.get_topo()), routing_mode="Per-hop")
    t = net.tcp_traffic()
    for i, rate in enumerate(RATES_MBPS):
        t.onoff(i, (i + 1) % 4, rate=f"{rate}Mbps", start_s=0.0, size_bytes=SIZE)
    flows = t.install()
    net.start()
    out = {}
    for rate, f in zip(RATES_MBPS, flows):
        s = f.stats()
        out[rate] = {"fct_ms": s.fct_s * 1e3, "throughput_mbps": s.throughput_bps / 1e6, "rx_bytes": s.rx_bytes,
                     "expected_ms": SIZE * 8 / (rate * 1e6) * 1e3}
        if not quiet:
            print(f"{rate} Mbps: {s.rx_bytes} B in {s.fct_s * 1e3:.2f} ms (bytes x 8 / rate: "
                  f"{out[rate]['expected_ms']:.2f} ms), {s.throughput_bps / 1e6:.1f} Mbps")
    return out


if __name__ == "__main__":
    main(quiet=False)
