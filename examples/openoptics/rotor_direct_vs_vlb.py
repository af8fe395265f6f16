"""An 8-ToR rotor network (round-robin circuits, one uplink per ToR, 50 us slices):
every host sends datagrams to every other, first with direct routing (a packet waits at
its ToR for the circuit to its destination), then with Valiant load balancing, source routed (a packet
leaves on whatever circuit is up and its intermediate sends it on by its next circuit to
the destination)."""

from opendcn.openoptics import OpticalRouting, OpticalTopo, Toolbox

NODES = 8


def run(routing: str, quiet: bool = True) -> dict:
    net = Toolbox.BaseNetwork(f"rotor-{routing}", nb_node=NODES, backend="ns3", time_slice_duration_us=50,
                              guardband_us=1, tor_host_link_bw_gbps=10, ocs_tor_link_bw_gbps=10,
                              simulation_stop_s=0.005, quiet=quiet)
    net.deploy_topo(OpticalTopo.round_robin(nb_node=NODES))
    topo = net.get_topo()
    paths = OpticalRouting.routing_direct(topo) if routing == "direct" else \
        OpticalRouting.routing_vlb(topo, net.tor_ocs_ports)
    # VLB's second step (on from the intermediate) is taken only by source routing, as in
    # OpenOptics (per hop, each node keeps a path's first step only)
    net.deploy_routing(paths, routing_mode="Per-hop" if routing == "direct" else "Source")
    flows = net.udp_traffic().all_to_all(num_packets=10, interval_s=100e-6, start_s=0.0,
                                         packet_size_bytes=1000).install()
    net.start()
    stats = [f.stats() for f in flows]
    return {"sent": sum(s.tx_packets for s in stats), "received": sum(s.rx_packets for s in stats),
            "mean_delay_us": 1e6 * sum(s.delay_avg_s * s.rx_packets for s in stats) /
            max(1, sum(s.rx_packets for s in stats)),
            "max_delay_us": 1e6 * max(s.delay_max_s for s in stats)}


def main(quiet: bool = True) -> dict:
    out = {r: run(r, quiet) for r in ("direct", "vlb")}
    if not quiet:
        for r, m in out.items():
            print(f"{r}: {m['received']}/{m['sent']} datagrams, delay mean {m['mean_delay_us']:.1f} us, "
                  f"max {m['max_delay_us']:.1f} us")
    return out


if __name__ == "__main__":
    main(quiet=False)
