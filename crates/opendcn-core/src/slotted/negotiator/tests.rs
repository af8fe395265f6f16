use super::*;
use crate::rng::Stream;

fn spec(n: u32, s: u32, topo: Topology) -> NegSpec {
    NegSpec {
        tors: n,
        ports: s,
        topology: topo,
        port_rate_bps: 100_000_000_000,
        guardband_ps: 10_000,
        pre_slots: 0,
        pre_slot_ps: 60_000,
        ctrl_bytes: 30,
        sched_slots: 30,
        sched_slot_ps: 90_000,
        header_bytes: 10,
        prop_ps: 2_000_000,
        pb: true,
        pq: true,
        pias_t1: 1000,
        pias_t2: 10_000,
        req_threshold_pkts: 3,
        transition_guard: false,
        variant: Variant::Base,
        fail_fraction: 0.0,
        fail_at_ps: 0,
        recover_at_ps: 0,
        detect_epochs: 3,
        relay_threshold: 0,
        relay_capacity: 0,
        fault_relay: true,
        seed: 1,
        duration_ps: 100_000_000,
        sample_ps: 0,
        flow_start_ps: vec![],
        flow_src: vec![],
        flow_dst: vec![],
        flow_size: vec![],
    }
}

#[test]
fn default_epoch_is_3_66_us() {
    let mut s = spec(128, 8, Topology::Parallel);
    let l = layout(&s).unwrap();
    assert_eq!(l.epoch_ps, 3_660_000);
    assert_eq!(l.pre_slots, 16);
    assert_eq!(l.pb_payload, 595);
    assert_eq!(l.sched.len(), 30);
    assert_eq!(l.sched[0], (960_000, 90_000, 0, 1115));
    s.topology = Topology::ThinClos;
    assert_eq!(layout(&s).unwrap().pre_slots, 16);
    s.pb = false;
    let l = layout(&s).unwrap();
    assert_eq!(l.epoch_ps, 3_660_000);
    assert_eq!(l.pre_slot_ps, 12_400);
    let total: u64 = l.sched.iter().map(|x| x.1).sum();
    assert_eq!(16 * 12_400 + total, 3_660_000);
}

#[test]
fn matching_is_conflict_free_on_random_requests() {
    for topo in [Topology::Parallel, Topology::ThinClos] {
        let (n, s) = (32u32, 4u32);
        let mut m = Matcher::new(n, s, topo, 7);
        let mut rng = Stream::new(3, "test");
        for _round in 0..200 {
            // random request sets per destination
            let mut grants_per_src: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n as usize];
            let mut dst_port_used = std::collections::BTreeSet::new();
            for d in 0..n {
                let mut reqs: Vec<(u32, u64)> = (0..n).filter(|&i| i != d && rng.below(3) == 0).map(|i| (i, 0)).collect();
                reqs.sort_unstable();
                let mut out = Vec::new();
                m.grant(d, &reqs, false, |_| true, |_, _| Some(0), &mut out);
                for (src, p, _) in out {
                    assert!(reqs.iter().any(|r| r.0 == src));
                    assert!(dst_port_used.insert((d, p)), "port {p} of {d} granted twice");
                    if topo == Topology::ThinClos {
                        assert_eq!((d / (n / s) + s - src / (n / s)) % s, p);
                    }
                    grants_per_src[src as usize].push((p, d));
                }
            }
            let mut rx_used = std::collections::BTreeSet::new();
            for i in 0..n {
                let g = &mut grants_per_src[i as usize];
                g.sort_unstable();
                for p in 0..s {
                    let c: Vec<(u32, u64)> = g.iter().filter(|x| x.0 == p).map(|x| (x.1, 0)).collect();
                    if let Some(d) = m.accept(i, p, &c, |_| true) {
                        assert!(c.iter().any(|x| x.0 == d));
                        assert!(rx_used.insert((d, p)), "two sources on ingress port {p} of {d}");
                    }
                }
            }
        }
    }
}

#[test]
fn single_mouse_with_piggyback_has_exact_fct() {
    let mut s = spec(16, 4, Topology::Parallel);
    s.flow_start_ps = vec![0];
    s.flow_src = vec![0];
    s.flow_dst = vec![9];
    s.flow_size = vec![500];
    let mut sim = Negotiator::new(s).unwrap();
    sim.run_until(u64::MAX);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    // offset 9 → index 8 → round slot 2, port 0 in epoch 0
    let expect = 2 * 60_000 + 10_000 + (30 + 500) * 80 + 2_000_000;
    assert_eq!(o.flow_finish_ps[0], expect);
}
#[test]
fn a_conflicting_assignment_is_caught_as_a_collision() {
    let mut s = spec(16, 8, Topology::Parallel);
    // every ToR sends 1 MB to every other ToR at t = 0
    for i in 0..16u32 {
        for d in 0..16u32 {
            if i != d {
                s.flow_start_ps.push(0);
                s.flow_src.push(i);
                s.flow_dst.push(d);
                s.flow_size.push(1_000_000);
            }
        }
    }
    let mut sim = Negotiator::new(s.clone()).unwrap();
    sim.run_until(3 * 3_660_000 + 960_000); // start of the scheduled phase of epoch 3
    assert!(sim.output().invariant_errors.is_empty());
    // sabotage: ToR 1 and ToR 2 both send to ingress port 0 of ToR 5
    sim.acc[(1 * 8) as usize] = 5;
    sim.acc[(2 * 8) as usize] = 5;
    for i in [1u32, 2] {
        if !sim.sched_src.contains(&i) {
            sim.sched_src.push(i);
        }
    }
    sim.run_until(4 * 3_660_000);
    let o = sim.output();
    assert!(o.collisions > 0);
    assert!(o.invariant_errors.iter().any(|e| e.contains("collision")));
}

/// The ledger's two balances hold with relayed cells cut to fit piggyback slots and
/// cells dropped on failed links, and each catches a bookkeeping slip: a counter
/// bumped twice, and a cell gone from the engine's state uncounted.
#[test]
fn ledger_balances_catch_bookkeeping_slips() {
    let mut s = spec(16, 4, Topology::ThinClos);
    s.fail_fraction = 0.15;
    s.fail_at_ps = 5_000_000;
    s.recover_at_ps = 30_000_000;
    s.duration_ps = 40_000_000;
    for i in 0..16u32 {
        for k in [1u32, 6, 11] {
            s.flow_start_ps.push((i * k) as u64 * 100_000);
            s.flow_src.push(i);
            s.flow_dst.push((i + k) % 16);
            s.flow_size.push(200_000);
        }
    }
    let mut sim = Negotiator::new(s).unwrap();
    sim.run_until(u64::MAX);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    let p = o.packets.clone();
    let dropped: u64 = p.dropped.iter().map(|x| x.1).sum();
    assert!(dropped > 0 && p.in_flight > 0 && p.delivered > 0, "{p:?}");
    assert_eq!(p.sent, p.delivered + dropped + p.in_flight);
    assert_eq!(p.dropped_bytes, o.drops);
    assert!(o.metrics.iter().any(|(k, v)| k == "fault_relay_bytes" && *v > 0.0));
    assert!(!sim.b.late.is_empty(), "cells arriving after the end");
    let errors = |sim: &Negotiator| sim.output().totals.invariant_errors;
    let has = |e: &[String], what: &str| e.iter().any(|x| x.starts_with(what));
    // counters: a dropped cell counted twice; payload counted as delivered twice
    sim.b.ledger.pkts_dropped[0] += 1;
    let e = errors(&sim);
    assert!(has(&e, "packet balance") && !has(&e, "payload balance"), "{e:?}");
    sim.b.ledger.pkts_dropped[0] -= 1;
    sim.b.ledger.delivered += 7;
    let e = errors(&sim);
    assert!(has(&e, "payload balance") && !has(&e, "packet balance"), "{e:?}");
    sim.b.ledger.delivered -= 7;
    // state: a cell on its last hop is lost; a relayed cell appears from nowhere
    let late = sim.b.late.pop().unwrap();
    let e = errors(&sim);
    assert!(has(&e, "payload balance") && has(&e, "packet balance"), "{e:?}");
    sim.b.late.push(late);
    sim.rq[1].push_back(RCell { flow: 0, bytes: 100, ready: 0 });
    let e = errors(&sim);
    assert!(has(&e, "payload balance") && has(&e, "packet balance"), "{e:?}");
    sim.rq[1].pop_back();
    assert!(errors(&sim).is_empty());
}

/// Epochs from the start of a predefined phase to the first epoch start at or after
/// the arrival of the scheduling message sent in its first-round slot k.
fn ctrl_epochs(sim: &Negotiator, k: u32) -> u64 {
    let off = k as u64 * sim.lay.pre_slot_ps + sim.spec.guardband_ps + sim.rate.tx(sim.spec.ctrl_bytes) + sim.spec.prop_ps;
    off.div_ceil(sim.lay.epoch_ps)
}

/// The scheduling messages of one predefined phase arrive in two different epochs.
fn straddles(sim: &Negotiator) -> bool {
    ctrl_epochs(sim, 0) != ctrl_epochs(sim, sim.lay.rr_slots - 1)
}

/// Every ordered pair sends `size` bytes at t = 0.
fn all_to_all(s: &mut NegSpec, size: u64) {
    for i in 0..s.tors {
        for d in 0..s.tors {
            if i != d {
                s.flow_start_ps.push(0);
                s.flow_src.push(i);
                s.flow_dst.push(d);
                s.flow_size.push(size);
            }
        }
    }
}

/// Thin-clos with fewer ToRs than ports: W = 1, a one-step round robin (as `Fabric`).
#[test]
fn thin_clos_with_fewer_tors_than_ports_runs() {
    let mut s = spec(3, 4, Topology::ThinClos);
    s.duration_ps = 40_000_000;
    all_to_all(&mut s, 20_000);
    let mut sim = Negotiator::new(s).unwrap();
    assert_eq!((sim.lay.rr_slots, sim.lay.pre_slots), (1, 1));
    sim.run_until(u64::MAX);
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert_eq!((o.flows_completed, o.bytes_delivered), (6, 120_000));
}

/// 2 predefined + 10 scheduled slots (1.02 us epoch) with 2 us propagation: a GRANT
/// sent in predefined slot 0 of epoch g arrives at g·E + 2012.4 ns (before the start
/// of g + 2 at 2040 ns), one sent in slot 1 at g·E + 2072.4 ns (after it). The
/// grants of one GRANT round are conflict-free among themselves only, so they must
/// all be used in one scheduled phase, g + 3 — not split over g + 2 and g + 3, where
/// they would meet the grants of rounds g − 1 and g + 1 on the same ingress ports.
#[test]
fn grants_of_one_round_share_a_scheduled_phase_when_their_arrivals_straddle_an_epoch() {
    let mut s = spec(4, 2, Topology::Parallel);
    s.pre_slots = 2;
    s.sched_slots = 10;
    s.duration_ps = 60_000_000;
    all_to_all(&mut s, 100_000);
    let mut sim = Negotiator::new(s).unwrap();
    assert_eq!(sim.lay.epoch_ps, 1_020_000);
    assert_eq!((ctrl_epochs(&sim, 0), ctrl_epochs(&sim, 1)), (2, 3));
    assert_eq!(sim.req_lag, 3);
    sim.run_until(u64::MAX);
    let o = sim.output();
    assert_eq!(o.collisions, 0);
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    assert_eq!(o.flows_completed, 12);
    assert_eq!((o.bytes_delivered, o.bytes_dropped, o.bytes_in_flight), (1_200_000, 0, 0));
}

/// Random tiny layouts (predefined and scheduled slots, propagation — half of them
/// placing an epoch start among the first round's control arrivals —, ToRs, ports,
/// topology, piggybacking, variant) with all-to-all traffic: never a collision, the
/// ledger balances, offered = delivered + in flight with no drop at every check, and
/// every offered byte is delivered in the end (stateful variant: see below).
#[test]
fn random_layouts_never_collide_and_deliver_everything() {
    let mut rng = Stream::new(11, "neg.layouts");
    let (mut cases, mut straddling) = (0, 0);
    while cases < 1500 {
        let topo = if rng.below(2) == 0 { Topology::Parallel } else { Topology::ThinClos };
        let n = 2 + rng.below(8);
        let p = 1 + rng.below(4);
        if topo == Topology::ThinClos && n >= p && n % p != 0 {
            continue;
        }
        let mut s = spec(n, p, topo);
        let rr = match topo {
            Topology::Parallel => (n - 1).div_ceil(p),
            Topology::ThinClos => n / p.min(n),
        };
        s.pre_slots = [0, rr, rr + 1, 2 * rr + 1][rng.below(4) as usize];
        s.sched_slots = 1 + rng.below(40);
        s.pb = rng.below(4) != 0;
        let lay = layout(&s).unwrap();
        s.prop_ps = if lay.rr_slots >= 2 && rng.below(2) == 0 {
            // an epoch start between the arrivals of first-round slots k−1 and k (or
            // exactly at k−1's)
            let k = 1 + rng.below(lay.rr_slots - 1) as u64;
            let x = rng.below(lay.pre_slot_ps as u32) as u64;
            let first = s.guardband_ps + Rate::new(s.port_rate_bps).tx(s.ctrl_bytes) + (k - 1) * lay.pre_slot_ps + x;
            ((1 + rng.below(4) as u64) * lay.epoch_ps).saturating_sub(first).max(1)
        } else {
            1_000 + rng.below(5_000_000) as u64
        };
        s.variant = match rng.below(8) {
            0 => Variant::DataSize,
            1 => Variant::HolDelay { alpha: 0.001 },
            2 => Variant::Iterative { iters: 2 },
            3 => Variant::Stateful,
            4 => Variant::Projector,
            5 if topo == Topology::ThinClos => Variant::Relay,
            _ => Variant::Base,
        };
        s.seed = rng.next_u64() % 1000;
        s.duration_ps = u64::MAX / 4;
        let mut sizes = 0u64;
        for i in 0..n {
            for d in 0..n {
                if i == d {
                    continue;
                }
                for _ in 0..1 + rng.below(2) {
                    s.flow_start_ps.push(rng.below(5_000_000) as u64);
                    s.flow_src.push(i);
                    s.flow_dst.push(d);
                    let size = 1 + rng.below(6_000) as u64;
                    s.flow_size.push(size);
                    sizes += size;
                }
            }
        }
        let flows = s.flow_size.len() as u64;
        let what = format!("N={n} S={p} {topo:?} pre={} sched={} prop={} pb={} {:?}", s.pre_slots, s.sched_slots, s.prop_ps, s.pb, s.variant);
        let mut sim = Negotiator::new(s).unwrap_or_else(|e| panic!("{what}: {e:?}"));
        straddling += straddles(&sim) as u32;
        let epoch = sim.lay.epoch_ps;
        let mut t = 0;
        loop {
            t += 20 * epoch;
            sim.run_until(t);
            let o = sim.output();
            assert_eq!(o.collisions, 0, "{what}");
            assert!(o.invariant_errors.is_empty(), "{what}: {:?}", o.invariant_errors);
            assert_eq!((o.bytes_offered, o.bytes_dropped), (o.bytes_delivered + o.bytes_in_flight, 0), "{what}");
            if o.flows_completed == flows && o.bytes_in_flight == 0 {
                assert_eq!((o.bytes_offered, o.bytes_delivered), (sizes, sizes), "{what}");
                assert!(o.flow_delivered.iter().zip(&sim.spec.flow_size).all(|(a, b)| a == b), "{what}");
                break;
            }
            assert!(t < 3_000 * epoch, "{what}: not drained after {} epochs", t / epoch);
        }
        cases += 1;
    }
    assert!(straddling >= 400, "only {straddling} straddling layouts");
}
