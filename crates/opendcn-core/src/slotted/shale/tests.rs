use super::*;

pub(super) fn spec(n: u32, h: u32, lanes: u32, prop_ps: Ps, cc: Cc) -> ShaleSpec {
    ShaleSpec {
        nodes: n,
        h,
        h_hi: 0,
        inter_num: 0,
        inter_den: 1,
        cutoff_bytes: 0,
        lanes,
        slot_ps: 45_056,
        guard_ps: 4_096,
        lane_rate_bps: 50_000_000_000,
        cell_bytes: 256,
        header_bytes: 12,
        prop_ps,
        cc,
        token_budget: 1,
        first_hop_budget: 1,
        isd_cap_num: 5,
        isd_cap_den: 8 * h as u64,
        init_window: 64,
        pull_every: 20,
        ndp_queue: 100,
        fail_nodes: vec![],
        fail_links: vec![],
        invalidation: true,
        token_one_each: false,
        recover_at_ps: u64::MAX,
        fail_at_ps: 0,
        flow_start_ps: vec![],
        flow_src: vec![],
        flow_dst: vec![],
        flow_size: vec![],
        seed: 1,
        duration_ps: 1_000_000_000,
        sample_ps: 0,
        services: Default::default(),
        threads: 1,
    }
}

pub(super) fn uniform(s: &mut ShaleSpec, flows: usize, size: u64, span_ps: Ps, seed: u64) {
    let mut r = Stream::new(seed, "test.flows");
    let n = s.nodes;
    let mut v: Vec<(Ps, u32, u32, u64)> = (0..flows)
        .map(|_| {
            let a = r.below(n);
            let b = (a + 1 + r.below(n - 1)) % n;
            ((r.next_u64() % span_ps), a, b, size)
        })
        .collect();
    v.sort();
    s.flow_start_ps = v.iter().map(|x| x.0).collect();
    s.flow_src = v.iter().map(|x| x.1).collect();
    s.flow_dst = v.iter().map(|x| x.2).collect();
    s.flow_size = v.iter().map(|x| x.3).collect();
}

#[test]
fn one_cell_latency_and_hops_bound() {
    for (n, h) in [(16u32, 2u32), (64, 3), (16, 1), (81, 4), (16, 4)] {
        let m = schedule::exact_root(n, h).unwrap() as u64;
        let bound = 2 * h as u64 * (m - 1);
        for (src, dst, start) in [(0u32, n - 1, 0u64), (3, 5 % n, 7 * 45_056), (n - 1, 0, 123_456)] {
            if src == dst {
                continue;
            }
            for cc in [Cc::None, Cc::HbhSpray] {
                let mut s = spec(n, h, 1, 0, cc);
                s.flow_start_ps = vec![start];
                s.flow_src = vec![src];
                s.flow_dst = vec![dst];
                s.flow_size = vec![100];
                let mut sim = ShaleSim::new(s).unwrap();
                sim.run_until(u64::MAX);
                let o = sim.output();
                assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
                let fin = o.flow_finish_ps[0];
                assert_ne!(fin, u64::MAX);
                let first_slot = start.div_ceil(45_056);
                let lat_slots = (fin - first_slot * 45_056) / 45_056;
                assert!(lat_slots <= bound, "n {n} h {h}: {lat_slots} > {bound}");
                assert!(o.flow_hops[0] <= 2 * h);
            }
        }
    }
}

#[test]
fn conservation_determinism_and_hbh_invariant() {
    for cc in [Cc::None, Cc::Hbh, Cc::Spray, Cc::HbhSpray, Cc::Priority, Cc::Isd, Cc::Rd, Cc::Ndp] {
        let mut s = spec(64, 3, 8, 500_000, cc);
        s.duration_ps = 50_000_000;
        s.token_budget = 2;
        s.first_hop_budget = 2;
        uniform(&mut s, 4000, 5000, 40_000_000, 3);
        let mut a = ShaleSim::new(s.clone()).unwrap();
        a.run_until(20_000_000);
        a.run_until(u64::MAX);
        let oa = a.output();
        assert!(oa.invariant_errors.is_empty(), "{cc:?}: {:?}", oa.invariant_errors);
        assert!(oa.bytes_delivered > 0);
        let mut b = ShaleSim::new(s).unwrap();
        b.run_until(u64::MAX);
        let ob = b.output();
        assert_eq!(oa.trace_hash, ob.trace_hash);
        assert_eq!(oa.flow_finish_ps, ob.flow_finish_ps);
    }
}

#[test]
fn failures_drop_and_reroute() {
    let mut s = spec(64, 2, 8, 500_000, Cc::HbhSpray);
    s.duration_ps = 40_000_000;
    s.token_budget = 2;
    s.first_hop_budget = 2;
    s.fail_nodes = vec![5, 17];
    s.fail_at_ps = 5_000_000;
    uniform(&mut s, 3000, 3000, 30_000_000, 5);
    let mut a = ShaleSim::new(s).unwrap();
    a.run_until(u64::MAX);
    let o = a.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert!(o.bytes_dropped > 0);
}

#[test]
fn wrong_schedule_is_caught() {
    // a cell that does not fit the slot minus the guard band counts as a violation
    let mut s = spec(16, 2, 1, 0, Cc::None);
    s.lane_rate_bps = 40_000_000_000;
    s.flow_start_ps = vec![0];
    s.flow_src = vec![0];
    s.flow_dst = vec![5];
    s.flow_size = vec![1000];
    let mut sim = ShaleSim::new(s).unwrap();
    sim.run_until(u64::MAX);
    assert!(sim.output().guardband_violations > 0);
}

/// A mixed workload: `flows` flows of sizes cycling through 1 cell .. 60 cells.
fn mixed(s: &mut ShaleSpec, flows: usize, span_ps: Ps, seed: u64) {
    uniform(s, flows, 0, span_ps, seed);
    let sizes = [100u64, 244, 1_000, 5_000, 14_640, 300];
    s.flow_size = (0..flows).map(|i| sizes[i % sizes.len()]).collect();
}

fn run_chunked(mut run: ShaleRun, step_ps: Ps, end_ps: Ps) -> ShaleOutput {
    let mut until = 0;
    while until < end_ps {
        until += step_ps;
        run.run_until(until);
    }
    run.run_until(u64::MAX);
    run.output()
}

#[test]
fn window_engine_matches_the_timeslot_engine() {
    let mut cases = 0;
    for (n, h, h_hi) in [(16u32, 2u32, 0u32), (64, 2, 0), (64, 3, 0), (81, 4, 0), (16, 1, 0), (81, 2, 4), (64, 3, 2)] {
        for (ci, cc) in [Cc::None, Cc::Hbh, Cc::Spray, Cc::HbhSpray].into_iter().enumerate() {
            let lanes = if (ci + n as usize) % 2 == 0 { 8 } else { 1 };
            let prop = if ci % 2 == 0 { 500_000 } else { 20_000 };
            let mut s = spec(n, h, lanes, prop, cc);
            s.h_hi = h_hi;
            if h_hi != 0 {
                s.inter_num = 2;
                s.inter_den = 5;
                s.cutoff_bytes = 1_000;
            }
            s.token_budget = 1 + ci as u32 % 2;
            s.first_hop_budget = 1 + ci as u32 % 3;
            s.duration_ps = 30_000_000 + 1_234_567 * ci as u64;
            s.sample_ps = 1_000_000;
            mixed(&mut s, 40 * n as usize, 20_000_000, 7 + ci as u64);
            let a = run_chunked(ShaleRun::new(s.clone(), "timeslot").unwrap(), 3_333_333, s.duration_ps);
            let b = run_chunked(ShaleRun::new(s.clone(), "window").unwrap(), 1_777_777 + ci as u64 * 45_056, s.duration_ps);
            assert!(a.invariant_errors.is_empty(), "{:?}", a.invariant_errors);
            assert!(a.packet_hops > 1000 && a.flows_completed > 10, "{n} {h} {cc:?}: a real load");
            assert_eq!(format!("{:?}", a), format!("{:?}", b), "{n} nodes h={h} h_hi={h_hi} {cc:?}");
            // several workers, node ranges of unequal length: the same run
            let mut st = s.clone();
            st.threads = 2 + (ci as u32 + n) % 4;
            let c = run_chunked(ShaleRun::new(st.clone(), "window").unwrap(), 2_500_000, st.duration_ps);
            assert_eq!(format!("{:?}", a), format!("{:?}", c), "{n} nodes h={h} {cc:?} {} threads", st.threads);
            cases += 1;
        }
    }
    assert_eq!(cases, 28);
}

#[test]
fn window_engine_refuses_what_it_does_not_model() {
    let mut s = spec(16, 2, 1, 0, Cc::Priority);
    assert_eq!(ShaleRun::new(s.clone(), "auto").unwrap().engine(), "timeslot");
    assert_eq!(ShaleRun::new(s.clone(), "window").err().unwrap().field, "engine");
    s.cc = Cc::HbhSpray;
    assert_eq!(ShaleRun::new(s.clone(), "auto").unwrap().engine(), "window");
    s.fail_nodes = vec![3];
    assert_eq!(ShaleRun::new(s.clone(), "auto").unwrap().engine(), "timeslot");
    assert_eq!(ShaleRun::new(s, "bogus").err().unwrap().field, "engine");
}

/// Invariant errors of `o` that start with `what`.
pub(super) fn has(o: &ShaleOutput, what: &str) -> bool {
    o.invariant_errors.iter().any(|e| e.starts_with(what))
}

/// The ledger's two balances hold mid-run (cells queued, on links, token-only cells on
/// their way), and each catches a bookkeeping slip: a counter bumped twice, a cell or a
/// token-only cell gone from the engine's state uncounted.
#[test]
fn ledger_balances_catch_bookkeeping_slips() {
    let mut s = spec(64, 2, 8, 500_000, Cc::HbhSpray);
    s.duration_ps = 20_000_000;
    s.token_budget = 2;
    s.first_hop_budget = 2;
    uniform(&mut s, 1500, 5000, 20_000_000, 3);
    let mut sim = ShaleSim::new(s).unwrap();
    sim.run_until(10_000_000);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    let p = &o.packets;
    assert!(p.sent_ctrl > 0 && p.delivered > 0 && p.in_flight > 0, "{p:?}");
    assert_eq!(p.sent, p.delivered + p.in_flight);
    // counters
    sim.ledger.pkts_delivered += 1;
    let o = sim.output();
    assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
    sim.ledger.pkts_delivered -= 1;
    sim.ledger.offered += 3;
    let o = sim.output();
    assert!(has(&o, "payload balance") && !has(&o, "packet balance"), "{:?}", o.invariant_errors);
    sim.ledger.offered -= 3;
    // a token-only cell lost on its way: only the cell balance sees it
    let (ri, fi) = sim.ring.iter().enumerate().find_map(|(r, b)| b.iter().position(|f| f.cell == NONE).map(|i| (r, i))).expect("a token-only flight");
    let fl = sim.ring[ri].remove(fi);
    let o = sim.output();
    assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
    sim.ring[ri].insert(fi, fl);
    // a cell on a link freed without a trace: both
    let c = sim.ring.iter().flatten().find(|f| f.cell != NONE).expect("a cell on a link").cell;
    sim.free_cells.push(c);
    let o = sim.output();
    assert!(has(&o, "payload balance") && has(&o, "packet balance"), "{:?}", o.invariant_errors);
    sim.free_cells.pop();
    assert!(sim.output().invariant_errors.is_empty());
    sim.run_until(u64::MAX);
    assert!(sim.output().invariant_errors.is_empty());
}

/// NDP: a trimmed cell keeps its payload in flight until its NACK returns it to the
/// source, where it ends (trimmed) and its payload is sent again (retransmitted); cells
/// of failed nodes and links are dropped by reason, with their payload lost.
#[test]
fn ledger_counts_trims_and_drops() {
    let mut s = spec(64, 2, 8, 500_000, Cc::Ndp);
    s.ndp_queue = 2;
    s.duration_ps = 30_000_000;
    s.fail_nodes = vec![5, 40];
    s.fail_links = vec![1, 2, 9, 10];
    s.fail_at_ps = 8_000_000;
    uniform(&mut s, 2000, 5000, 25_000_000, 9);
    let mut sim = ShaleSim::new(s).unwrap();
    sim.run_until(u64::MAX);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    let p = &o.packets;
    let dropped: u64 = p.dropped.iter().map(|x| x.1).sum();
    assert!(p.trims > 0 && p.trimmed > 0 && p.sent_retx > 0 && dropped > 0, "{p:?}");
    assert!(p.trimmed <= p.trims && p.sent_retx <= p.trimmed);
    assert_eq!(p.sent, p.delivered + dropped + p.trimmed + p.in_flight);
    // payload lost = cells' payload dropped + unsent data of failed sources
    let cell_bytes: u64 = p.dropped_bytes.iter().map(|x| x.1).sum();
    assert!(o.bytes_dropped >= cell_bytes && cell_bytes > 0);
    sim.ledger.pkts_trimmed += 1;
    let o = sim.output();
    assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
}


mod invalidation_state {
    use super::super::invalidation::{NbrSets, RECV, SENT};
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// The per-(node, destination, n) neighbour bitmaps behave as a set of
        /// (key, neighbour) pairs: insert / remove report changes, take returns the bits
        /// ascending, and the bit count matches.
        #[test]
        fn neighbour_sets_match_a_set(ops in proptest::collection::vec((0u8..3, 0usize..2, 0u64..6, 0u32..200), 1..600)) {
            let mut a = NbrSets::new(200);
            let mut m: BTreeSet<(usize, u64, u32)> = BTreeSet::new();
            for (op, half, key, k) in ops {
                match op {
                    0 => prop_assert_eq!(a.insert(key, k, half), m.insert((half, key, k))),
                    1 => prop_assert_eq!(a.remove(key, k, half), m.remove(&(half, key, k))),
                    _ => {
                        let mut out = Vec::new();
                        a.take(key, half, &mut out);
                        let want: Vec<u32> = m.iter().filter(|e| e.0 == half && e.1 == key).map(|e| e.2).collect();
                        m.retain(|e| !(e.0 == half && e.1 == key));
                        prop_assert_eq!(out, want);
                    }
                }
                for h in [RECV, SENT] {
                    prop_assert_eq!(a.len(h), m.iter().filter(|e| e.0 == h).count() as u64);
                }
                let keys: BTreeSet<u64> = m.iter().map(|e| e.1).collect();
                prop_assert_eq!(a.keys(), keys.len());
                for key in 0..6 {
                    for h in [RECV, SENT] {
                        prop_assert_eq!(a.any(key, h), m.iter().any(|e| e.0 == h && e.1 == key));
                        for k in [0u32, 63, 64, 130, 199] {
                            prop_assert_eq!(a.contains(key, k, h), m.contains(&(h, key, k)));
                        }
                    }
                }
            }
        }
    }

    /// A link's own tokens and the phase broadcasts meant for it leave in the order they
    /// were queued; a broadcast skips the links it is not for; dropping a link's queue
    /// drops its pending broadcasts.
    #[test]
    fn broadcasts_merge_with_link_tokens_in_queue_order() {
        let mut s = spec(64, 2, 8, 500_000, Cc::HbhSpray);
        s.duration_ps = 1_000_000;
        s.fail_nodes = vec![5];
        s.fail_at_ps = 500_000;
        let mut sim = ShaleSim::new(s).unwrap();
        assert!(sim.bc.on);
        let (x, k0) = (3u32, 7u32); // phase 1 of node 3: neighbour indices 7..14
        let (k_in, k_out) = (k0 + 2, k0 + 4); // its links with bits 2 and 4
        let mut sel = vec![0u64; 1];
        sel[0] = 1 << 2;
        sim.push_token(x, k_in, 11, 0);
        sim.push_bcast(x, k0, 20, 0x40, &sel);
        sim.push_token(x, k_out, 12, 0);
        sim.push_token(x, k_in, 13, 1);
        sim.push_bcast(x, k0, 21, 0x41, &sel);
        let (xi, xo) = (sim.ix(x, k_in), sim.ix(x, k_out));
        let mut got = Vec::new();
        while let Some(t) = sim.pop_token(x, k_in, xi) {
            got.push(t);
        }
        assert_eq!(got, vec![(11, 0), (20, 0x40), (13, 1), (21, 0x41)]);
        assert!(!sim.has_token(x, k_in, xi));
        assert_eq!(sim.pop_token(x, k_out, xo), Some((12, 0)));
        assert_eq!(sim.pop_token(x, k_out, xo), None);
        sim.push_bcast(x, k0, 22, 0x40, &sel);
        assert!(sim.has_token(x, k_in, xi));
        sim.bc.drop_link(x, k_in);
        assert!(!sim.has_token(x, k_in, xi));
    }

    /// With one token field for each kind, a link's hop-by-hop tokens leave even while
    /// older invalidation broadcasts wait: pops by kind, and the older-first merge.
    #[test]
    fn tokens_pop_by_kind() {
        let mut s = spec(64, 2, 8, 500_000, Cc::HbhSpray);
        s.duration_ps = 1_000_000;
        s.fail_nodes = vec![5];
        s.fail_at_ps = 500_000;
        let mut sim = ShaleSim::new(s).unwrap();
        let (x, k0) = (3u32, 7u32);
        let k_in = k0 + 2;
        let sel = vec![1u64 << 2];
        sim.push_bcast(x, k0, 20, 0x40, &sel);
        sim.push_bcast(x, k0, 21, 0x40, &sel);
        sim.push_token(x, k_in, 11, 0);
        sim.push_bcast(x, k0, 22, 0x40, &sel);
        sim.push_token(x, k_in, 12, 1);
        let xi = sim.ix(x, k_in);
        // the oldest is a broadcast; the hop-by-hop queue's head comes next by kind
        assert_eq!(sim.pop_token_kind(x, k_in, xi, None), Some(((20, 0x40), true)));
        assert_eq!(sim.pop_token_kind(x, k_in, xi, Some(false)), Some(((11, 0), false)));
        assert_eq!(sim.pop_token_kind(x, k_in, xi, Some(true)), Some(((21, 0x40), true)));
        assert_eq!(sim.pop_token_kind(x, k_in, xi, Some(false)), Some(((12, 1), false)));
        assert_eq!(sim.pop_token_kind(x, k_in, xi, Some(false)), None);
        assert_eq!(sim.pop_token_kind(x, k_in, xi, None), Some(((22, 0x40), true)));
        assert_eq!(sim.pop_token_kind(x, k_in, xi, Some(true)), None);
        assert!(!sim.has_token(x, k_in, xi));
    }

    /// Node failures at 1 296 nodes: the invalidation state is kept per (node,
    /// destination, n), so the neighbour bitmaps hold every invalidation received while
    /// the map stays at most one key per (node, failed destination, n).
    #[test]
    fn invalidation_state_is_per_destination() {
        let mut s = spec(1296, 2, 8, 500_000, Cc::HbhSpray);
        s.duration_ps = 3_000_000;
        s.fail_nodes = (0..26).map(|i| i * 49 + 7).collect();
        s.fail_at_ps = 0;
        uniform(&mut s, 2000, 3000, 2_000_000, 9);
        let mut sim = ShaleSim::new(s).unwrap();
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert!(sim.inval.len(RECV) > 0);
        let keys = sim.inval.keys();
        assert!(keys <= 1296 * 26 * 2, "{keys} keys");
        assert!(
            sim.inval.len(RECV) > 10 * keys as u64,
            "{} bits in {keys} keys",
            sim.inval.len(RECV)
        );
    }
}
