"""A traffic-aware network of 4 ToRs (one circuit per ToR, chosen by a bipartite matching
of the traffic waiting at the ToRs): hosts 0 and 1 send to host 2 and 3 in turn; every
200 us of simulated time the controller reads the queues and reconfigures the circuits
toward the pairs with the most bytes waiting."""

from opendcn.openoptics import OpticalRouting, OpticalTopo, Toolbox


def main(quiet: bool = True) -> dict:
    net = Toolbox.BaseNetwork("ta", nb_node=4, backend="ns3", arch_mode="TA", tor_host_link_bw_gbps=10,
                              ocs_tor_link_bw_gbps=10, simulation_stop_s=0.003, quiet=quiet)
    net.deploy_topo(OpticalTopo.static_topo(nb_node=4, nb_link=1))
    net.deploy_routing(OpticalRouting.routing_direct_ta(net.get_topo()), routing_mode="Per-hop", arch_mode="TA")
    u = net.udp_traffic()
    u.flow(0, 2, num_packets=200, interval_s=5e-6, start_s=0.0, packet_size_bytes=1000)
    u.flow(1, 3, num_packets=200, interval_s=5e-6, start_s=0.0, packet_size_bytes=1000)
    u.flow(0, 3, num_packets=200, interval_s=5e-6, start_s=0.0012, packet_size_bytes=1000)
    flows = u.install()
    net.start_traffic_aware(topo_func=OpticalTopo.bipartite_matching, update_interval=200e-6)
    stats = [f.stats() for f in flows]
    out = {"reconfigurations": net.reconfigurations, "sent": sum(s.tx_packets for s in stats),
           "received": sum(s.rx_packets for s in stats)}
    if not quiet:
        print(f"{out['received']}/{out['sent']} datagrams delivered, {out['reconfigurations']} reconfigurations")
    return out


if __name__ == "__main__":
    main(quiet=False)
