use super::*;

fn spec(tors: u32, uplinks: u32, hpr: u32, flows: &[(Ps, u32, u32, u64)]) -> OperaSpec {
    OperaSpec {
        tors, uplinks, hosts_per_tor: hpr, matchings: vec![], link_rate_bps: 10_000_000_000,
        prop_ps: 500_000, host_prop_ps: 0, eps_ps: 0, delta_ps: 0, reconf_ps: 10_000_000,
        packet_bytes: 1500, header_bytes: 64, queue_pkts: 8, hi_cap_bytes: 12_000,
        cutoff_bytes: 15_000_000, initial_window: 20, pull_rate: 1.0, pacer_per_flow: false, rto_ps: 1_000_000_000,
        stop: Stop::Duration, seed: 1, sample_interval_ps: 0, watch_ports: vec![],
        congestion_detection: false, pushback: false,
        flow_start_ps: flows.iter().map(|f| f.0).collect(), flow_src: flows.iter().map(|f| f.1).collect(),
        flow_dst: flows.iter().map(|f| f.2).collect(), flow_size: flows.iter().map(|f| f.3).collect(),
    }
}

fn run(s: OperaSpec, until: Ps) -> OperaOutput {
    let mut o = Opera::new(s).unwrap();
    o.run_until(until);
    o.output()
}

fn metric(o: &OperaOutput, k: &str) -> f64 {
    o.metrics.iter().find(|m| m.0 == k).unwrap().1
}

#[test]
fn idle_low_latency_flow_never_waits_for_a_circuit() {
    // one packet and a 10-packet flow on an idle network: FCT is the store-and-forward time
    // of the path the current slice gives, no wait for any circuit
    let ser = |b: u64| b * 800; // ps per byte at 10 Gb/s
    for (size, start) in [(1000u64, 3_000_000u64), (14_360, 3_000_000)] {
        let s = spec(8, 4, 2, &[(start, 0, 15, size)]);
        let o = run(s, 1_000_000_000);
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        let hops = o.flow_hops[0] as u64;
        assert!(hops >= 1);
        let npk = size.div_ceil(1436);
        let last = size - (npk - 1) * 1436 + 64;
        let nic: u64 = (npk - 1) * ser(1500);
        let want = nic + (hops + 2) * ser(last) + hops * 500_000;
        assert_eq!(o.flow_finish_ps[0] - start, want, "size {size} hops {hops}");
        assert_eq!(metric(&o, "trims"), 0.0);
        assert_eq!(metric(&o, "reroutes"), 0.0);
    }
}

#[test]
fn bulk_crosses_only_direct_or_two_hop_paths_and_conserves_bytes() {
    let flows: Vec<(Ps, u32, u32, u64)> = (0..4u32).map(|i| (i as u64 * 1000, i, 12 + i % 4, 300_000u64)).collect();
    let mut s = spec(8, 4, 2, &flows);
    s.cutoff_bytes = 100_000;
    let mut o = Opera::new(s).unwrap();
    o.run_until(200_000_000_000);
    let out = o.output();
    assert!(out.invariant_errors.is_empty(), "{:?}", out.invariant_errors);
    assert_eq!(out.flows_completed, 4);
    assert!(out.flow_hops.iter().all(|&h| (1..=2).contains(&h)));
    assert_eq!(out.bulk_hops_hist.iter().skip(3).sum::<u64>(), 0);
    assert!(out.bulk_hops_hist[1] > 0);
    assert_eq!(out.bytes_delivered, 1_200_000);
    // once nothing bulk is queued the offer/accept loop stops
    let slices = metric(&out, "rlb_slices");
    o.run_until(400_000_000_000);
    assert_eq!(metric(&o.output(), "rlb_slices"), slices);
}

#[test]
fn incast_trims_and_still_delivers_every_byte_once() {
    // 7 senders from other racks into one host
    let flows: Vec<(Ps, u32, u32, u64)> = (0..7).map(|i| (1_000_000, 2 + 2 * i, 0, 200_000)).collect();
    let o = run(spec(8, 4, 2, &flows), 2_000_000_000_000);
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert!(metric(&o, "trims") > 0.0);
    assert!(metric(&o, "retransmissions") > 0.0);
    assert_eq!(o.flows_completed, 7);
    assert!(o.flow_delivered.iter().all(|&d| d == 200_000));
    assert_eq!(o.bytes_delivered, 1_400_000);
    assert_eq!(o.collisions + o.guardband_violations, 0);
}

#[test]
fn deterministic_and_stops_when_ndp_done() {
    let flows: Vec<(Ps, u32, u32, u64)> = (0..40u32).map(|i| (i as u64 * 50_000, (i * 7) % 32, (i * 13 + 5) % 32, 20_000 + i as u64 * 3000))
        .filter(|f| f.1 / 2 != f.2 / 2).collect();
    let mut s = spec(16, 4, 2, &flows);
    s.stop = Stop::NdpDone;
    let a = run(s.clone(), 10_000_000_000_000);
    let b = run(s, 10_000_000_000_000);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.flow_finish_ps, b.flow_finish_ps);
    assert_eq!(a.flows_completed as usize, flows.len());
    assert_eq!(a.now_ps, *a.flow_finish_ps.iter().max().unwrap());
}

fn incast(hpr: u32, size: u64) -> Vec<(Ps, u32, u32, u64)> {
    (hpr..8 * hpr).map(|h| ((1 + h as u64 % 3) * 1_000_000, h, 0, size)).collect()
}

#[test]
fn time_series_adds_up_and_does_not_change_the_run() {
    // incast plus bulk: samples every 7 us (not a divisor of anything), all 8 x 8 ports watched
    let mut flows = incast(4, 30_000);
    flows.push((0, 5, 30, 400_000));
    let mut s = spec(8, 4, 4, &flows);
    s.cutoff_bytes = 100_000;
    let base = run(s.clone(), 3_000_000_000);
    s.sample_interval_ps = 7_000_000;
    s.watch_ports = (0..64).collect();
    let mut o = Opera::new(s).unwrap();
    o.run_until(3_000_000_000);
    o.final_sample();
    o.final_sample(); // idempotent at the same time
    let out = o.output();
    assert!(out.invariant_errors.is_empty(), "{:?}", out.invariant_errors);
    // monitoring is not part of the simulated network
    assert_eq!(out.trace_hash, base.trace_hash);
    assert_eq!(out.events, base.events);
    assert_eq!(out.flow_finish_ps, base.flow_finish_ps);
    let ser = &out.series;
    assert_eq!(ser.len(), 3_000_000_000 / 7_000_000 + 1);
    assert_eq!(ser.last().unwrap().time_ps, 3_000_000_000);
    assert_eq!(ser.iter().map(|x| x.delivered_bytes).sum::<u64>(), out.bytes_delivered);
    assert_eq!(ser.iter().map(|x| x.trims).sum::<u64>() as f64, metric(&out, "trims"));
    assert_eq!(ser.iter().map(|x| x.bounces).sum::<u64>() as f64, metric(&out, "bounces"));
    assert_eq!(ser.last().unwrap().bulk_host_bytes as f64, metric(&out, "bulk_host_queued_bytes"));
    assert!(ser.iter().any(|x| x.bulk_host_bytes > 0) && ser.iter().any(|x| x.queued_bytes > 0));
    // per port: tx over samples = the port's total; network rows = sum over ports
    let (t, p, q, tx) = &out.ts;
    for port in 0..64u32 {
        let sum: u64 = (0..p.len()).filter(|&i| p[i] == port).map(|i| tx[i]).sum();
        assert_eq!(sum, out.port_tx_bytes[port as usize], "port {port}");
    }
    for x in ser {
        let rows: Vec<usize> = (0..t.len()).filter(|&i| t[i] == x.time_ps).collect();
        assert_eq!(rows.len(), 64);
        assert_eq!(rows.iter().map(|&i| q[i]).sum::<u64>(), x.queued_bytes);
        assert_eq!(rows.iter().map(|&i| tx[i]).sum::<u64>(), x.tx_bytes);
    }
}

#[test]
fn detection_only_counts_and_pushback_reduces_trims_under_incast() {
    let flows = incast(4, 30_000);
    let base = run(spec(8, 4, 4, &flows), 5_000_000_000);
    let mut s = spec(8, 4, 4, &flows);
    s.congestion_detection = true;
    let det = run(s.clone(), 5_000_000_000);
    assert_eq!(det.trace_hash, base.trace_hash);
    assert_eq!(det.flow_finish_ps, base.flow_finish_ps);
    assert_eq!(metric(&det, "congestion_events"), metric(&base, "trims"));
    assert_eq!(metric(&base, "congestion_events"), 0.0);
    assert_eq!(metric(&det, "pushback_messages"), 0.0);
    s.pushback = true;
    let pb = run(s, 5_000_000_000);
    assert!(pb.invariant_errors.is_empty(), "{:?}", pb.invariant_errors);
    assert_eq!(pb.flows_completed, 28);
    assert_eq!(pb.bytes_delivered, 28 * 30_000);
    assert!(metric(&pb, "pushback_messages") > 0.0 && metric(&pb, "paused_packets") > 0.0);
    // every delivered message reaches all 4 hosts of its source ToR (none lost here)
    assert_eq!(metric(&pb, "pushback_lost"), 0.0);
    assert_eq!(metric(&pb, "pushback_received"), 4.0 * metric(&pb, "pushback_messages"));
    assert!(metric(&pb, "trims") < 0.8 * metric(&base, "trims"), "{} vs {}", metric(&pb, "trims"), metric(&base, "trims"));
    assert!(metric(&pb, "bounces") < metric(&base, "bounces"));
}

#[test]
fn bad_watch_port_is_a_spec_error() {
    let mut s = spec(8, 4, 2, &[]);
    s.watch_ports = vec![48];
    assert_eq!(Opera::new(s).err().unwrap().field, "watch_ports");
}
