use super::super::tests::{has, spec, uniform};
use super::*;

/// The window engine's balances, mid-window (flights in the log of the window being
/// served and in the one being received): each catches a bookkeeping slip.
#[test]
fn ledger_balances_catch_bookkeeping_slips() {
    let mut s = spec(64, 2, 8, 500_000, Cc::HbhSpray);
    s.duration_ps = 20_000_000;
    s.token_budget = 2;
    s.first_hop_budget = 2;
    s.threads = 2;
    uniform(&mut s, 1500, 5000, 20_000_000, 3);
    let mut sim = WindowSim::new(s.clone()).unwrap();
    let stop = 10_000_000 + 3 * sim.cx.tau;
    sim.run_until(stop);
    assert_ne!(sim.cx.t % sim.cx.d, 0, "mid-window");
    let o = sim.output();
    assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    let p = &o.packets;
    assert!(p.sent_ctrl > 0 && p.delivered > 0 && p.in_flight > 0, "{p:?}");
    assert_eq!(p.sent, p.delivered + p.in_flight);
    // the same books as the timeslot engine's at the same instant
    let mut ts = super::super::ShaleSim::new(s).unwrap();
    ts.run_until(stop);
    assert_eq!(format!("{:?}", ts.output().packets), format!("{p:?}"));
    // counters
    sim.works[1].lg.sent += 1;
    let o = sim.output();
    assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
    sim.works[1].lg.sent -= 1;
    sim.works[0].lg.delivered += 5;
    let o = sim.output();
    assert!(has(&o, "payload balance") && !has(&o, "packet balance"), "{:?}", o.invariant_errors);
    sim.works[0].lg.delivered -= 5;
    // a flight of this window lost without a trace: a token-only one (cells only),
    // one with a cell (both)
    let (wi, i) = (0..2).find_map(|w| sim.works[w].out.iter().position(|o| o.fl.cell == 0).map(|i| (w, i))).expect("a token-only flight");
    let fl = sim.works[wi].out.remove(i);
    let o = sim.output();
    assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
    sim.works[wi].out.insert(i, fl);
    let (wi, i) = (0..2).find_map(|w| sim.works[w].out.iter().position(|o| o.fl.cell != 0).map(|i| (w, i))).expect("a flight with a cell");
    let fl = sim.works[wi].out.remove(i);
    let o = sim.output();
    assert!(has(&o, "payload balance") && has(&o, "packet balance"), "{:?}", o.invariant_errors);
    sim.works[wi].out.insert(i, fl);
    assert!(sim.output().invariant_errors.is_empty());
    sim.run_until(u64::MAX);
    assert!(sim.output().invariant_errors.is_empty());
}
