"""Opera's topology (8 ToRs, 2 uplinks: in every slice one uplink of each ToR is being
reconfigured and the other forms an expander) with per-slice shortest paths fixed at the
source, checked by pinging every pair of hosts."""

from opendcn.openoptics import OpticalRouting, OpticalTopo, Toolbox


def main(quiet: bool = True) -> dict:
    net = Toolbox.BaseNetwork("opera", nb_node=8, nb_link=2, backend="ns3", time_slice_duration_us=100,
                              guardband_us=1, quiet=quiet)
    net.deploy_topo(OpticalTopo.opera(nb_node=8, nb_link=2))
    net.deploy_routing(OpticalRouting.routing_ksp(net.get_topo()), routing_mode="Source")
    net.start()                       # no traffic installed: ping every pair
    replies = [x for xs in net.ping_results.values() for x in xs]
    out = {"pairs": len(net.ping_results), "answered": sum(x is not None for x in replies), "sent": len(replies),
           "slices": net.nb_time_slices}
    if not quiet:
        print(f"{out['answered']}/{out['sent']} echo requests answered over {out['slices']} slices")
    return out


if __name__ == "__main__":
    main(quiet=False)
