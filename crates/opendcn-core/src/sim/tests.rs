use super::*;
use crate::spec::{Services, TransportKind};

/// A rotor fabric of 7 nodes with 2 optical uplinks each, 3 slices of 2 µs with a
/// 200-ns guardband (uplink k of node a reaches node a + 1 + 2s + k in slice s), ideal
/// flows between every ordered pair, `buffer` bytes per port.
fn rotor7(router: RouterKind, buffer: u64, seed: u64) -> SimSpec {
    let (n, u, slices) = (7u32, 2u32, 3u32);
    let ports = (n * u) as usize;
    let mut sched_peer = vec![NONE; ports * slices as usize];
    for s in 0..slices {
        for a in 0..n {
            for k in 0..u {
                let b = (a + 1 + s * u + k) % n;
                sched_peer[(s * n * u + a * u + k) as usize] = b * u + k;
            }
        }
    }
    let mut spec = pair(TransportKind::Ideal, 0, buffer);
    let mut flows = (vec![], vec![], vec![], vec![]);
    let mut r = seed;
    for i in 0..300u64 {
        r = crate::rng::mix64(r ^ i);
        let (a, b) = ((r % n as u64) as u32, ((r >> 8) % (n as u64 - 1)) as u32);
        flows.0.push(i * 200_000 + (r >> 20) % 100_000);
        flows.1.push(a);
        flows.2.push(if b >= a { b + 1 } else { b });
        flows.3.push(1_000 + (r >> 32) % 60_000);
    }
    spec.nodes = n;
    spec.port_offset = (0..=n).map(|a| a * u).collect();
    spec.port_kind = vec![PortKind::Optical; ports];
    spec.port_rate_bps = vec![100_000_000_000; ports];
    spec.port_prop_ps = vec![500_000; ports];
    spec.port_buffer_bytes = vec![buffer; ports];
    spec.port_peer = vec![NONE; ports];
    spec.slice_ps = vec![2_000_000; slices as usize];
    spec.guardband_ps = 200_000;
    spec.sched_peer = sched_peer;
    spec.ep_node = (0..n).collect();
    spec.ep_rate_bps = vec![200_000_000_000; n as usize];
    spec.ep_prop_ps = vec![0; n as usize];
    spec.ep_down_port = vec![NONE; n as usize];
    spec.router = router;
    spec.entries = vec![];
    spec.seed = seed;
    spec.loss = vec![];
    spec.flow_transport = vec![TransportKind::Ideal; flows.0.len()];
    (spec.flow_start_ps, spec.flow_src, spec.flow_dst, spec.flow_size) = flows;
    spec
}

#[test]
fn lean_paths_give_the_same_results() {
    // the lean relay (`relay_calendar`) and source (`inject_calendar`) against the
    // general route / admit / enqueue / plan, with buffers that overflow (relayed
    // packets dropped, sources refused) and with room to spare (sources refused by
    // full slices)
    for router in [RouterKind::Vlb, RouterKind::Direct] {
        for (buffer, seed) in [(6_000, 1), (9_000, 2), (1 << 30, 3)] {
            let run = |lean: bool| {
                let mut sim = Sim::new(rotor7(router, buffer, seed)).unwrap();
                assert!(sim.mode.lean && sim.mode.lean_src);
                (sim.mode.lean, sim.mode.lean_src) = (lean, lean);
                sim.run_until(80_000_000);
                sim.output()
            };
            let (fast, general) = (run(true), run(false));
            assert!(fast.invariant_errors.is_empty(), "{:?}", fast.invariant_errors);
            assert!(fast.totals.bytes_delivered > 1_000_000);
            assert_eq!(fast.event_counts[0], general.event_counts[0]);
            assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{router:?} buffer {buffer}");
        }
    }
    // the small buffers drop relayed packets
    let mut sim = Sim::new(rotor7(RouterKind::Vlb, 6_000, 1)).unwrap();
    sim.run_until(80_000_000);
    assert!(sim.acct.drops[DROP_BUFFER] > 0, "{:?}", sim.acct.drops);
}

#[test]
fn a_failed_rotor_port_keeps_nothing_planned() {
    // a rotor port plans in one calendar queue per slice of the cycle: a failure drops
    // what waits in every one of them, and nothing departs on it while it is down
    let mut sim = Sim::new(rotor7(RouterKind::Vlb, 1 << 30, 4)).unwrap();
    let at = 31_000_000;
    sim.fail_ports(at, vec![0, 1], true).unwrap();
    sim.run_until(at - 1);
    let planned = |sim: &Sim, gp: usize| -> usize {
        let pt = &sim.net.ports[gp];
        if pt.cal == NONE {
            return 0;
        }
        sim.net.cal[pt.cal as usize..pt.cal as usize + 3].iter().filter(|q| q.planned.iter().any(|e| e.0 > sim.clock.now)).count()
            + pt.departs.unreleased().filter(|e| e.0 > sim.clock.now).count()
    };
    assert!(planned(&sim, 0) + planned(&sim, 1) >= 2, "the ports have packets waiting in several slice queues");
    sim.run_until(at);
    assert_eq!(planned(&sim, 0) + planned(&sim, 1), 0);
    assert_eq!(sim.net.ports[0].bytes + sim.net.ports[1].bytes, 0);
    assert!(sim.acct.drops[DROP_FAILED] > 0);
    sim.run_until(80_000_000);
    let out = sim.output();
    assert!(out.invariant_errors.is_empty(), "{:?}", out.invariant_errors);
}

#[test]
fn flat_calendar_ports_give_the_same_results() {
    // one collection of planned transmissions per port (a list, or a heap for a full
    // buffer) against one FIFO per calendar queue:
    // with full buffers (relayed packets dropped, sources refused), with room, under
    // hop-by-hop and source routes, with a failure and a reconfiguration in the run
    let mut flat_used = false;
    for router in [RouterKind::Vlb, RouterKind::Direct, RouterKind::Hoho, RouterKind::Ucmp] {
        for (buffer, seed) in [(6_000, 1), (9_000, 2), (1 << 30, 3)] {
            let run = |flat: bool| {
                let mut spec = rotor7(router, buffer, seed);
                // port and network samples read what the ports have sent
                (spec.sample_interval_ps, spec.watch_ports, spec.net_series) = (3_000_000, vec![0, 3, 8], true);
                let mut sim = Sim::new(spec).unwrap();
                sim.mode.flat_cal &= flat;
                sim.fail_ports(23_000_000, vec![4, 5], true).unwrap();
                sim.fail_ports(41_000_000, vec![4, 5], false).unwrap();
                // the same matchings with slices 0 and 1 swapped
                let (np, ns) = (sim.net.ports.len() as u32, sim.sched.slices());
                let peer: Vec<u32> = (0..ns).flat_map(|k| (0..np).map(move |g| (k, g)))
                    .map(|(k, g)| sim.sched.peer(g, if k < 2 { 1 - k } else { k })).collect();
                sim.run_until(50_000_000);
                let used = sim.net.ports.iter().any(|p| p.departs.unreleased().next().is_some());
                // (a cyclic schedule changes at the next slice boundary: 54 us)
                sim.reconfigure_with(52_900_000, peer, 1_000_000, seed == 2, false).unwrap();
                sim.run_until(80_000_000);
                (sim.output(), used)
            };
            let ((flat, used), (fifo, unused)) = (run(true), run(false));
            flat_used |= used;
            assert!(!unused);
            assert!(flat.invariant_errors.is_empty(), "{:?}", flat.invariant_errors);
            assert!(flat.totals.bytes_delivered > 1_000_000);
            assert_eq!(format!("{flat:?}"), format!("{fifo:?}"), "{router:?} buffer {buffer}");
        }
    }
    assert!(flat_used);
}

/// Two nodes joined by one 100 Gb/s electrical link, one flow 0 -> 1 with `tp`.
fn pair(tp: TransportKind, size: u64, buffer: u64) -> SimSpec {
    SimSpec {
        nodes: 2,
        port_offset: vec![0, 1, 2],
        port_kind: vec![PortKind::Electrical; 2],
        port_rate_bps: vec![100_000_000_000; 2],
        port_prop_ps: vec![500_000; 2],
        port_buffer_bytes: vec![buffer; 2],
        port_peer: vec![1, 0],
        slice_ps: vec![],
        guardband_ps: 0,
        sched_peer: vec![],
        hosts_mode: false,
        ep_node: vec![0, 1],
        ep_rate_bps: vec![100_000_000_000; 2],
        ep_prop_ps: vec![0; 2],
        ep_down_port: vec![NONE; 2],
        router: RouterKind::Table,
        multipath: Multipath::Packet,
        max_hop: 3,
        ucmp_alpha: 1.0,
        expander_paths: 1,
        services: Services::default(),
        entries: vec![(0, Entry { arr: WILD, src: WILD, dst: 1, dep: WILD, port: 0 }),
                      (1, Entry { arr: WILD, src: WILD, dst: 0, dep: WILD, port: 1 })],
        routes: vec![],
        flow_start_ps: vec![0],
        flow_src: vec![0],
        flow_dst: vec![1],
        flow_size: vec![size],
        mtu_bytes: 1500,
        header_bytes: 0,
        seed: 1,
        sample_interval_ps: 0,
        watch_ports: vec![],
        collect_tm: false,
        flow_transport: vec![tp],
        transport: TransportParams::default(),
        port_disc: vec![],
        loss: vec![(0, 3)],
        pias_thresholds: vec![],
        stop_when: Default::default(),
        net_series: false,
        hold_unrouted: false,
        admission_control: false,
        flow_dep_ptr: vec![],
        flow_dep_ids: vec![],
        flow_gap_ps: vec![],
        flow_coflow: vec![],
        flow_app_rate_bps: vec![],
        hop_limit: 0,
        lookahead_ps: 0,
        port_link_class: vec![],
        shared_buffer_bytes: vec![],
        buffer_alpha: vec![],
        log_drops: 0,
    }
}

/// Three nodes on a static optical fabric, one port each: 0 - 1 joined, 2 alone;
/// no routes; one ideal flow 0 -> 1 of `size` bytes; holding on.
fn ta_line(size: u64) -> SimSpec {
    let mut s = pair(TransportKind::Ideal, size, 10_000);
    s.nodes = 3;
    s.port_offset = vec![0, 1, 2, 3];
    s.port_kind = vec![PortKind::Optical; 3];
    s.port_rate_bps = vec![100_000_000_000; 3];
    s.port_prop_ps = vec![500_000; 3];
    s.port_buffer_bytes = vec![10_000; 3];
    s.port_peer = vec![NONE; 3];
    s.sched_peer = vec![NONE; 3];
    s.ep_node = vec![0, 1, 2];
    s.ep_rate_bps = vec![100_000_000_000; 3];
    s.ep_prop_ps = vec![0; 3];
    s.ep_down_port = vec![NONE; 3];
    s.entries = vec![];
    s.loss = vec![];
    s.hold_unrouted = true;
    s
}

#[test]
fn held_packets_wait_for_tables_and_circuits_and_are_in_flight_meanwhile() {
    let mut sim = Sim::new(ta_line(15_000)).unwrap();
    sim.run_until(10_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    // the hold takes one port buffer (10 kB): 6 packets held, the source waits
    assert_eq!((o.hold.packets, o.hold.bytes, o.packets.in_flight, o.bytes_in_flight), (6, 9_000, 6, 15_000));
    assert!(o.hold.refused > 0 && o.drops.iter().all(|(_, v)| *v == 0));
    assert_eq!(sim.demand(), vec![(0, 1, 15_000)]);
    // a circuit 0 - 1 and a route: the held packets leave after the 1 us delay
    sim.reconfigure_with(10_000_000, vec![1, 0, NONE], 1_000_000, false, false).unwrap();
    sim.set_tables(&[(0, Entry { arr: WILD, src: WILD, dst: 1, dep: WILD, port: 0 })]).unwrap();
    sim.run_until(100_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    // the 6 held leave first, the 4 the source still had follow (routed at once)
    assert_eq!((o.bytes_delivered, o.hold.packets, o.hold.total, o.hold.released), (15_000, 0, 6, 6));
    // 10 packets of 1500 B (120 ns each) from 11 us, plus the propagation
    assert_eq!(o.flow_finish_ps[0], 11_000_000 + 10 * 120_000 + 500_000);
}

#[test]
fn a_drained_reconfiguration_switches_when_the_network_is_empty() {
    let mut spec = ta_line(150_000);
    spec.sched_peer = vec![1, 0, NONE];
    spec.entries = vec![(0, Entry { arr: WILD, src: WILD, dst: 1, dep: WILD, port: 0 })];
    let mut sim = Sim::new(spec).unwrap();
    sim.run_until(5_000_000);
    sim.reconfigure_with(5_000_000, vec![1, 0, NONE], 0, false, true).unwrap();
    sim.run_until(5_000_000);
    assert!(sim.rc.in_net > 0 && sim.rc.draining != NONE);
    sim.run_until(1_000_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    let (req, sw, up) = o.switches[0];
    // the switch waits for the last packet in the network: its last bit left at most
    // one 1500 B packet time (120 ns) after the request, plus the 500 ns propagation
    assert_eq!((req, up), (5_000_000, sw));
    assert!(sw > req && sw <= req + 120_000 + 500_000 + 120_000, "{sw}");
    assert_eq!((o.bytes_delivered, o.drain_refused > 0, o.draining), (150_000, true, false));
    assert!(sim.reconfigure_with(0, vec![1, 0, NONE], 0, false, true).is_ok());
}

/// Three ideal flows on the electrical pair: 1 after 0 (+ 1 us gap), 2 after 0 and 1.
fn chain() -> SimSpec {
    let mut s = pair(TransportKind::Ideal, 15_000, 1_000_000);
    s.loss = vec![];
    s.flow_start_ps = vec![0, 0, 0];
    s.flow_src = vec![0, 0, 1];
    s.flow_dst = vec![1, 1, 0];
    s.flow_size = vec![15_000, 3_000, 1_500];
    s.flow_transport = vec![TransportKind::Ideal; 3];
    s.flow_dep_ptr = vec![0, 0, 1, 3];
    s.flow_dep_ids = vec![0, 0, 1];
    s.flow_gap_ps = vec![0, 1_000_000, 0];
    s
}

#[test]
fn a_dependent_flow_starts_when_its_last_dependency_finishes_plus_its_gap() {
    let mut sim = Sim::new(chain()).unwrap();
    sim.run_until(100_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    // 1500 B take 120 ns at 100 Gb/s; the propagation is 500 ns
    let f0 = 10 * 120_000 + 500_000;
    let f1 = f0 + 1_000_000 + 2 * 120_000 + 500_000;
    let f2 = f1 + 120_000 + 500_000;
    assert_eq!(o.flow_finish_ps, vec![f0, f1, f2]);
    assert_eq!(o.flow_start_ps, vec![0, f0 + 1_000_000, f1]);
    assert_eq!((o.flows_started, o.flows_completed, o.event_counts[16]), (3, 3, 2));
}

#[test]
fn flows_whose_dependency_never_finishes_never_start() {
    let mut s = chain();
    s.loss = vec![(0, 9)]; // the last packet of flow 0 is lost: it never finishes
    let mut sim = Sim::new(s).unwrap();
    sim.run_until(100_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert_eq!((o.flows_started, o.bytes_offered, o.bytes_dropped), (1, 15_000, 1_500));
    assert_eq!(&o.flow_start_ps[1..], &[Ps::MAX, Ps::MAX]);
}

#[test]
fn a_coflow_starts_when_every_flow_of_the_one_before_has_finished() {
    let mut s = chain();
    s.flow_start_ps = vec![0, 0, 0, 0];
    s.flow_src = vec![0, 1, 0, 1];
    s.flow_dst = vec![1, 0, 1, 0];
    s.flow_size = vec![15_000, 1_500, 3_000, 1_500];
    s.flow_transport = vec![TransportKind::Ideal; 4];
    s.flow_dep_ptr = vec![];
    s.flow_dep_ids = vec![];
    s.flow_coflow = vec![0, 0, 1, 1];
    s.flow_gap_ps = vec![0, 0, 1_000_000, 0];
    let mut sim = Sim::new(s.clone()).unwrap();
    sim.run_until(100_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    // co-flow 0 ends with its longer flow (10 packets of 120 ns, 500 ns propagation)
    let barrier = 10 * 120_000 + 500_000;
    assert_eq!(o.flow_start_ps, vec![0, 0, barrier + 1_000_000, barrier]);
    assert_eq!(o.flow_finish_ps, vec![barrier, 620_000, barrier + 1_000_000 + 2 * 120_000 + 500_000, barrier + 620_000]);
    assert_eq!((o.flows_started, o.flows_completed, o.event_counts[16]), (4, 4, 2));
    // a co-flow whose flow never finishes holds the next one back
    let mut lossy = s.clone();
    lossy.loss = vec![(0, 9)];
    let mut sim = Sim::new(lossy).unwrap();
    sim.run_until(100_000_000);
    let o = sim.output();
    assert_eq!((o.flows_started, o.flows_completed), (2, 1));
    // ids must be dense, and barriers do not mix with per-flow dependencies
    let mut bad = s.clone();
    bad.flow_coflow = vec![0, 0, 2, 2];
    let e = Sim::new(bad).err().expect("a missing co-flow");
    assert!(e.to_string().contains("flows.coflow") && e.to_string().contains("co-flow 1"), "{e}");
    let mut bad = s;
    bad.flow_dep_ptr = vec![0, 0, 0, 0, 1];
    bad.flow_dep_ids = vec![0];
    let e = Sim::new(bad).err().expect("both kinds");
    assert!(e.to_string().contains("flows.coflow") && e.to_string().contains("cannot be combined"), "{e}");
}

#[test]
fn dependency_cycles_and_unknown_flows_are_refused() {
    let mut s = chain();
    s.flow_dep_ptr = vec![0, 1, 2, 3];
    s.flow_dep_ids = vec![2, 0, 1]; // 0 after 2, 1 after 0, 2 after 1
    let e = Sim::new(s.clone()).err().expect("a cycle");
    assert!(e.to_string().contains("cycle") && e.to_string().contains("flows["), "{e}");
    s.flow_dep_ids = vec![1, 1, 2];
    let e = Sim::new(s.clone()).err().expect("itself");
    assert!(e.to_string().contains("flows[1].after") && e.to_string().contains("itself"), "{e}");
    s.flow_dep_ids = vec![1, 7, 0];
    let e = Sim::new(s).err().expect("unknown");
    assert!(e.to_string().contains("flows[1].after") && e.to_string().contains("unknown flow"), "{e}");
}

fn has(o: &SimOutput, what: &str) -> bool {
    o.invariant_errors.iter().any(|e| e.contains(what))
}

/// The balances are checked against in-flight figures scanned from the engine's state,
/// so a slip in any counter, or a packet lost from the books, is caught.
#[test]
fn ledger_balances_catch_bookkeeping_slips() {
    for tp in [TransportKind::Ideal, TransportKind::Tcp] {
        let mut sim = Sim::new(pair(tp, 150_000, 1_000_000)).unwrap();
        sim.run_until(3_000_000); // mid-flow: packets on the wire and in queues
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert!(o.packets.in_flight > 0 && o.packets.dropped.iter().any(|(r, n)| r == "injected" && *n == 1));
        sim.acct.ledger.delivered += 1;
        assert!(has(&sim.output(), "payload balance"));
        sim.acct.ledger.delivered -= 1;
        sim.acct.ledger.sent += 1;
        let o = sim.output();
        assert!(has(&o, "packet balance") && !has(&o, "payload balance"));
        sim.acct.ledger.sent -= 1;
        // a packet that vanishes from the pool without passing through the books
        let live = (0..sim.pool.pkt.len() as u32).find(|i| !sim.pool.free.contains(i)).unwrap();
        sim.pool.free.push(live);
        assert!(has(&sim.output(), "packet balance"));
        sim.pool.free.pop();
        assert!(sim.output().invariant_errors.is_empty());
        // a class of links that sent fewer bytes than were delivered across it (a packet
        // that crossed on a header's wire time)
        for m in [1usize, 2, 4, 7] {
            sim.acct.delivered_by_class[m] += 1 << 40;
            assert!(has(&sim.output(), "payload bytes delivered across them"));
            sim.acct.delivered_by_class[m] -= 1 << 40;
        }
        assert!(sim.output().invariant_errors.is_empty());
        // the run finishes clean: TCP recovers the injected loss, ideal loses it
        sim.run_until(1_000_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        if tp == TransportKind::Tcp {
            assert_eq!((o.bytes_delivered, o.bytes_dropped, o.flows_completed), (150_000, 0, 1));
            assert_eq!(o.flow_retx, vec![1]);
        } else {
            assert_eq!((o.bytes_delivered, o.bytes_dropped), (148_500, 1_500));
        }
        assert_eq!(o.packets.in_flight, 0);
    }
}

/// A TCP flow whose application writes at 100 Mb/s: 1 MB takes 80 ms however fast the
/// 100 Gb/s link is (its last segment is written at 80 ms and arrives one propagation
/// delay and a serialisation later), every byte arrives once, and a rate on a flow
/// without TCP is refused.
#[test]
fn an_application_rate_paces_a_tcp_flow_end_to_end() {
    let mut s = pair(TransportKind::Tcp, 1_000_000, 1_000_000);
    s.loss = vec![];
    s.flow_app_rate_bps = vec![100_000_000];
    let mut sim = Sim::new(s.clone()).unwrap();
    sim.run_until(200 * 1_000_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert_eq!((o.bytes_delivered, o.flows_completed), (1_000_000, 1));
    let fin = o.flow_finish_ps[0];
    let written = 80 * 1_000_000_000; // 1 MB at 100 Mb/s
    assert!(fin >= written && fin < written + 2_000_000, "finished at {fin} ps");
    // without the rate: about 80 us at line rate (slow start included), far below
    s.flow_app_rate_bps = vec![];
    let mut fast = Sim::new(s.clone()).unwrap();
    fast.run_until(200 * 1_000_000_000);
    assert!(fast.output().flow_finish_ps[0] < 1_000_000_000);
    s.flow_transport = vec![TransportKind::Ideal];
    s.flow_app_rate_bps = vec![100_000_000];
    let e = Sim::new(s).err().expect("an ideal flow has no application");
    assert!(e.to_string().contains("flows[0].rate"), "{e}");
}

/// Tables that send a packet back and forth between two nodes (its destination is a
/// third): with a hop limit each packet is dropped as `loop` once it has crossed that many
/// links, the ledger balances, and the reason is listed only when a limit is set.
#[test]
fn a_hop_limit_drops_looping_packets_as_loop() {
    let mut s = ta_line(3_000);
    s.sched_peer = vec![1, 0, NONE];
    s.hold_unrouted = false;
    s.flow_dst = vec![2];
    s.entries = vec![(0, Entry { arr: WILD, src: WILD, dst: 2, dep: WILD, port: 0 }),
                     (1, Entry { arr: WILD, src: WILD, dst: 2, dep: WILD, port: 1 })];
    let mut without = Sim::new(s.clone()).unwrap();
    without.run_until(100_000_000);
    let o = without.output();
    assert!(o.drops.iter().all(|(r, _)| r != "loop") && o.packets.in_flight == 2, "{:?}", o.drops);
    s.hop_limit = 8;
    let mut sim = Sim::new(s).unwrap();
    sim.run_until(100_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert_eq!(o.drops.iter().find(|(r, _)| r == "loop").map(|x| x.1), Some(3_000));
    assert_eq!(o.packets.dropped.iter().find(|(r, _)| r == "loop").map(|x| x.1), Some(2));
    assert_eq!((o.bytes_dropped, o.packets.in_flight, o.packet_hops), (3_000, 0, 16));
}
