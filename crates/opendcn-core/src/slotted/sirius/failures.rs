//! Link and ToR failures of the Sirius engine (docs/arch/sirius.md#failures).
//!
//! Elements: a *link* is port p of ToR i — its transceiver with the egress fiber to its
//! AWGR and the ingress fiber from its AWGR, failing together (the packet engine's
//! `(node, port)` of a cyclic fabric); a *node* is a ToR, all its ports with it. Each is
//! down over windows [at, until), moved to slot starts (a failure or recovery takes
//! effect at the first slot that starts at or after its time).
//!
//! Physics: a cell is lost when its receiving ToR is down at its arrival (`failed_node`)
//! or the ingress port it arrives on is (`failed_link`); it is decided, and counted in
//! the ledger, when the cell is sent. A failed ToR loses what it holds at the failure:
//! its source queues (payload lost, no cell dropped) and the relayed cells queued at it
//! (cells dropped); flows that start at a failed ToR are lost whole. A ToR never sends on
//! its own failed port, nor while it is down (it knows at once).
//!
//! Knowledge (DECIDE, Shale's detection on an SRRD round robin, SHL §3.4): every slot
//! carries a cell from m to i once per cycle (a header-only cell when idle, as for the
//! occupancy reports), and its header says whether m's ingress port from i is up. ToR i
//! uses its circuit to m in slot k only if the latest such cell it can have received —
//! the one of m's round-robin slot q ≤ k − L, L the report lag — arrived (m up, m's
//! egress and i's ingress port on that circuit up, i up, all at q) and said m hears i.
//! Silence means down, so a failure stops i between L and W − 1 + L slots after it
//! (recovery: the same after the repair), and the pairs whose reverse circuit failed
//! stop too (i cannot tell a failed peer from a failed path to it). Cells sent before
//! i knows are lost. As intermediate for d, i uses m only if m can reach d as i knows
//! it: m's own view of its circuit to d in m's latest report to i (in-band, one more
//! report path: up to twice the delay), or m's current view with `cc = Ideal`. Relayed
//! cells already queued at m for a d that m cannot reach wait there for the repair.
//! Before a ToR's first report everything counts as up.

use super::Sirius;
use crate::error::SpecError;
use crate::units::Ps;

/// Failures to inject: link j = port `link_port[j]` of ToR `link_node[j]`, down over
/// [`link_at_ps[j]`, `link_until_ps[j]`); node j likewise (`until = u64::MAX`: it never
/// recovers). An element may appear more than once (the union of its windows).
#[derive(Debug, Clone, Default)]
pub struct SirFailSpec {
    pub link_node: Vec<u32>,
    pub link_port: Vec<u32>,
    pub link_at_ps: Vec<Ps>,
    pub link_until_ps: Vec<Ps>,
    pub node: Vec<u32>,
    pub node_at_ps: Vec<Ps>,
    pub node_until_ps: Vec<Ps>,
    /// Bin width of the delivered-bandwidth series (0: none).
    pub bin_ps: Ps,
}

/// Per-port cell counters (each phase relative to the port's own down windows, its
/// ToR's included): cells sent out of the port before / during / after, cells that
/// arrived on it before / during / after, cells lost at it.
const OUT: usize = 0;
const IN: usize = 3;
const LOST: usize = 6;

pub(super) struct FailState {
    pub on: bool,
    slot: Ps,
    s: u32,
    /// Down windows (slot-aligned) per port (i·S + p) and per ToR.
    port_win: Vec<Vec<(Ps, Ps)>>,
    node_win: Vec<Vec<(Ps, Ps)>>,
    /// (slot, ToR) of every ToR failure, in order; the next to apply.
    node_events: Vec<(u64, u32)>,
    next_ev: usize,
    cnt: Vec<[u64; 7]>,
    /// Payload delivered per bin (by arrival) over the run.
    bins: Vec<u64>,
    bin_ps: Ps,
    first_down: Ps,
    last_up: Ps,
    pub m_idle: u64,
    pub m_unreach: u64,
    m_lag_max: u64,
    m_lost_cells: u64,
}

#[inline]
fn inside(w: &[(Ps, Ps)], t: Ps) -> bool {
    w.iter().any(|&(a, b)| a <= t && t < b)
}

impl FailState {
    /// `g`: the ports that reach the fabric (0..g); `end`: the run's duration.
    pub fn new(f: &SirFailSpec, n: u32, s: u32, g: u32, slot: Ps, end: Ps) -> Result<Self, SpecError> {
        let nl = f.link_node.len();
        if f.link_port.len() != nl || f.link_at_ps.len() != nl || f.link_until_ps.len() != nl {
            return Err(SpecError::new("fail_links", nl, "link failure columns differ in length"));
        }
        let nn = f.node.len();
        if f.node_at_ps.len() != nn || f.node_until_ps.len() != nn {
            return Err(SpecError::new("fail_nodes", nn, "node failure columns differ in length"));
        }
        let align = |t: Ps| if t == Ps::MAX { Ps::MAX } else { t.div_ceil(slot).saturating_mul(slot) };
        let mut port_win = vec![Vec::new(); (n * s) as usize];
        let mut node_win = vec![Vec::new(); n as usize];
        let mut first_down = Ps::MAX;
        let mut last_up = 0;
        for j in 0..nl {
            let (x, p) = (f.link_node[j], f.link_port[j]);
            if x >= n || p >= s {
                return Err(SpecError::new(format!("fail_links[{j}]"), (x, p), "no such (ToR, port)"));
            }
            if p >= g {
                return Err(SpecError::new(format!("fail_links[{j}]"), (x, p), "that port does not reach the fabric"));
            }
            if f.link_until_ps[j] <= f.link_at_ps[j] {
                return Err(SpecError::new("recover_at", f.link_until_ps[j], "must be after fail_at"));
            }
            let w = (align(f.link_at_ps[j]), align(f.link_until_ps[j]));
            first_down = first_down.min(w.0);
            last_up = last_up.max(w.1);
            port_win[(x * s + p) as usize].push(w);
        }
        let mut node_events = Vec::new();
        for j in 0..nn {
            let x = f.node[j];
            if x >= n {
                return Err(SpecError::new(format!("fail_nodes[{j}]"), x, "no such ToR"));
            }
            if f.node_until_ps[j] <= f.node_at_ps[j] {
                return Err(SpecError::new("recover_at", f.node_until_ps[j], "must be after fail_at"));
            }
            let w = (align(f.node_at_ps[j]), align(f.node_until_ps[j]));
            first_down = first_down.min(w.0);
            last_up = last_up.max(w.1);
            if w.0 < w.1 {
                node_events.push((w.0 / slot, x));
            }
            node_win[x as usize].push(w);
        }
        node_events.sort_unstable();
        let on = nl + nn > 0;
        let n_bins = if on && f.bin_ps > 0 { end.div_ceil(f.bin_ps) as usize } else { 0 };
        Ok(FailState {
            on,
            slot,
            s,
            port_win,
            node_win,
            node_events,
            next_ev: 0,
            cnt: vec![[0; 7]; if on { (n * s) as usize } else { 0 }],
            bins: vec![0; n_bins],
            bin_ps: f.bin_ps,
            first_down,
            last_up,
            m_idle: 0,
            m_unreach: 0,
            m_lag_max: 0,
            m_lost_cells: 0,
        })
    }

    #[inline]
    pub fn node_up(&self, x: u32, t: Ps) -> bool {
        !inside(&self.node_win[x as usize], t)
    }

    /// Port p of ToR x itself (its ToR's state aside).
    #[inline]
    fn port_up(&self, x: u32, p: u32, t: Ps) -> bool {
        !inside(&self.port_win[(x * self.s + p) as usize], t)
    }

    /// 0 before the first down window of port p of x (its ToR's windows included), 1
    /// inside one, 2 after.
    fn phase(&self, x: u32, p: u32, t: Ps) -> usize {
        let a = &self.port_win[(x * self.s + p) as usize];
        let b = &self.node_win[x as usize];
        if inside(a, t) || inside(b, t) {
            1
        } else if a.iter().chain(b).all(|w| w.0 > t) {
            0
        } else {
            2
        }
    }

    /// Start of the window of `w` holding t.
    fn start_of(w: &[(Ps, Ps)], t: Ps) -> Option<Ps> {
        w.iter().find(|&&(a, b)| a <= t && t < b).map(|w| w.0)
    }

    /// Payload delivered at `arr` (within the run).
    #[inline]
    pub fn delivered(&mut self, arr: Ps, bytes: u64) {
        if let Some(b) = arr.saturating_sub(1).checked_div(self.bin_ps) {
            if let Some(x) = self.bins.get_mut(b as usize) {
                *x += bytes;
            }
        }
    }
}

impl Sirius {
    /// Does i use its circuit to m in slot k (see the module doc)?
    pub(super) fn hears(&self, i: u32, m: u32, k: u64) -> bool {
        let f = &self.fail;
        let t = k * f.slot;
        if t < f.first_down {
            return true; // nothing has failed yet
        }
        let p = self.fab.pair_port(i, m);
        if !f.node_up(i, t) || !f.port_up(i, p, t) {
            return false;
        }
        let Some(q) = self.report_slot(i, m, k) else { return true };
        let tq = q * f.slot;
        if tq >= f.last_up {
            return true; // a report from after every repair
        }
        let pr = self.fab.pair_port(m, i);
        // m's cell of slot q arrived at i, and says m's ingress port from i is up
        f.node_up(m, tq) && f.node_up(i, tq) && f.port_up(m, pr, tq) && f.port_up(i, pr, tq) && f.port_up(m, p, tq)
    }

    /// Can i relay a cell for d through m in slot k, as far as i knows (m's view of its
    /// circuit to d from m's latest report to i; m's current view with ideal credits)?
    pub(super) fn reachable(&self, i: u32, m: u32, d: u32, k: u64) -> bool {
        if self.spec.cc == super::RelayCc::Ideal {
            return self.hears(m, d, k);
        }
        match self.report_slot(i, m, k) {
            None => true,
            Some(q) => self.hears(m, d, q),
        }
    }

    /// A cell leaves port p of i towards m in slot k and arrives at `arr`: count it on
    /// both ports; the drop reason if it is lost.
    pub(super) fn fate(&mut self, i: u32, m: u32, p: u32, k: u64, arr: Ps) -> Option<&'static str> {
        let f = &mut self.fail;
        let t = k * f.slot;
        let ph = f.phase(i, p, t);
        f.cnt[(i * f.s + p) as usize][OUT + ph] += 1;
        let pm = (m * f.s + p) as usize;
        let start = match FailState::start_of(&f.node_win[m as usize], arr) {
            Some(a) => Some((a, "failed_node")),
            None => FailState::start_of(&f.port_win[pm], arr).map(|a| (a, "failed_link")),
        };
        match start {
            Some((a, reason)) => {
                f.cnt[pm][LOST] += 1;
                f.m_lost_cells += 1;
                f.m_lag_max = f.m_lag_max.max(k.saturating_sub(a / f.slot));
                Some(reason)
            }
            None => {
                let ph = f.phase(m, p, arr);
                f.cnt[pm][IN + ph] += 1;
                None
            }
        }
    }

    /// ToRs failing by slot k lose what they hold: source queues (payload lost) and the
    /// relayed cells queued at them (cells dropped).
    pub(super) fn apply_node_failures(&mut self, k: u64) {
        while let Some(&(ks, x)) = self.fail.node_events.get(self.fail.next_ev) {
            if ks > k {
                break;
            }
            self.fail.next_ev += 1;
            let n = self.n;
            for d in 0..n {
                let vi = (x * n + d) as usize;
                for l in 0..3 {
                    while let Some(seg) = self.voq[vi].q[l].pop_front() {
                        self.b.lose_unsent(&mut self.fl, seg.flow, seg.bytes, "failed_node");
                        self.src_bytes[x as usize] -= seg.bytes;
                    }
                    self.voq[vi].level_bytes[l] = 0;
                    self.list_remove(x, d, l);
                }
                self.voq[vi].bytes = 0;
                let cells = std::mem::take(&mut self.relay[vi]);
                for c in &cells {
                    // every cell queued here arrived before the failure (later ones were
                    // lost on arrival)
                    self.b.drop(&mut self.fl, c.flow, c.bytes, "failed_node");
                    self.relay_bytes[x as usize] -= c.bytes;
                }
                let cnt = cells.len() as u32;
                self.rcount[vi] -= cnt;
                if self.track && cnt > 0 {
                    if self.occ[vi] < cnt {
                        self.m_occ_underflow += 1;
                        self.occ[vi] = 0;
                    } else {
                        self.occ[vi] -= cnt;
                    }
                    if self.spec.cc == super::RelayCc::Inband {
                        self.occ_logged(vi, k, k);
                    }
                }
            }
        }
    }

    /// The failure part of the output: metrics, series (delivered payload per bin, the
    /// cell counters of every port that was ever down) and the check that no cell left
    /// or reached a port while it was down.
    pub(super) fn failure_output(&self, o: &mut super::SlottedOutput) {
        let f = &self.fail;
        if !f.on {
            return;
        }
        let never = |t: Ps| if t == Ps::MAX { -1.0 } else { t as f64 };
        o.metrics.extend([
            ("failure_start_ps".to_string(), never(f.first_down)),
            ("failure_end_ps".to_string(), never(f.last_up)),
            ("failure_detect_max_slots".to_string(), (self.fab.w as u64 - 1 + self.lag) as f64),
            ("failed_port_slots_idle".to_string(), f.m_idle as f64),
            ("relay_skipped_unreachable".to_string(), f.m_unreach as f64),
            ("cells_lost_to_failures".to_string(), f.m_lost_cells as f64),
            ("cells_sent_after_failure_max_slots".to_string(), f.m_lag_max as f64),
        ]);
        let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 9];
        let mut crossed = 0u64;
        for x in 0..self.n {
            for p in 0..self.fab.g.min(self.s) {
                let pi = (x * self.s + p) as usize;
                if f.port_win[pi].is_empty() && f.node_win[x as usize].is_empty() {
                    continue;
                }
                cols[0].push(x as f64);
                cols[1].push(p as f64);
                for (j, &v) in f.cnt[pi].iter().enumerate() {
                    cols[2 + j].push(v as f64);
                }
                crossed += f.cnt[pi][OUT + 1] + f.cnt[pi][IN + 1];
            }
        }
        if crossed > 0 {
            o.invariant_errors.push(format!("{crossed} cells left or reached a port while it was down"));
        }
        let names = ["node", "port", "out_before", "out_during", "out_after", "in_before", "in_during", "in_after", "lost"];
        for (name, c) in names.iter().zip(cols) {
            o.series.push((format!("failure_port_{name}"), c));
        }
        if f.bin_ps > 0 {
            o.metrics.push(("failure_bin_ps".to_string(), f.bin_ps as f64));
            o.series.push(("failure_delivered_bytes".to_string(), f.bins.iter().map(|&x| x as f64).collect()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::spec;
    use super::super::SirSpec;
    use super::*;

    fn metric(o: &super::super::SlottedOutput, k: &str) -> f64 {
        o.metrics.iter().find(|(n, _)| n == k).unwrap_or_else(|| panic!("no metric {k}")).1
    }

    fn series<'a>(o: &'a super::super::SlottedOutput, k: &str) -> &'a [f64] {
        &o.series.iter().find(|(n, _)| n == k).unwrap_or_else(|| panic!("no series {k}")).1
    }

    fn dropped(o: &super::super::SlottedOutput, why: &str) -> u64 {
        o.packets.dropped.iter().find(|(r, _)| r == why).map_or(0, |x| x.1)
    }

    /// 2 ToRs × 1 port: they meet in every odd slot; a full cell sent in slot k arrives at
    /// (k + 21) × 100 ns and the report lag is L = 21 slots. Port 0 of ToR 1 is down over
    /// [5 us, 10 us) = slots [50, 100).
    /// - 0 → 1: cells arriving in [5, 10) us, sent in odd slots 29..=71, are lost; 0 hears
    ///   of the failure from 1's cell of slot 51 in slot 72 (silence: 1's egress is the
    ///   failed port) and of the repair from its cell of slot 101, so sends again from 123.
    /// - 1 → 0: ToR 1 stops at once on its own port (slot 50) and needs 0's cell of slot
    ///   101 (its ingress was down before) to start again, at 123.
    #[test]
    fn a_failed_port_stops_its_circuits_by_the_round_robin_reports() {
        let mut s = spec(2, 1);
        s.pq = false;
        s.flow_start_ps = vec![0, 0];
        s.flow_src = vec![0, 1];
        s.flow_dst = vec![1, 0];
        s.flow_size = vec![1115 * 1000, 1115 * 1000];
        s.duration_ps = 20_000_000;
        s.fail = SirFailSpec {
            link_node: vec![1],
            link_port: vec![0],
            link_at_ps: vec![5_000_000],
            link_until_ps: vec![10_000_000],
            bin_ps: 1_000_000,
            ..Default::default()
        };
        let mut sim = Sirius::new(s).unwrap();
        assert_eq!(sim.lag, 21);
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        let odd = |a: u64, b: u64| (a..=b).filter(|k| k % 2 == 1).count() as u64;
        let lost = odd(29, 71);
        assert_eq!(lost, 22);
        assert_eq!(dropped(&o, "failed_link"), lost);
        assert_eq!(o.drops, vec![("failed_link".to_string(), lost * 1115)]);
        // delivered: 0 → 1 in odd slots 1..=27 and 123..=179, 1 → 0 in 1..=49 and 123..=179;
        // slots 181..=199 arrive after the end
        let (fwd, back, late) = (odd(1, 27) + odd(123, 179), odd(1, 49) + odd(123, 179), 2 * odd(181, 199));
        assert_eq!(o.packets.delivered, fwd + back);
        assert_eq!(o.packets.in_flight, late);
        assert_eq!(o.packets.sent, fwd + back + late + lost);
        // the failed port's counters: [out before, during, after], [in ...], lost
        assert_eq!(series(&o, "failure_port_node"), &[1.0]);
        assert_eq!(series(&o, "failure_port_port"), &[0.0]);
        let c = |k: &str| series(&o, &format!("failure_port_{k}"))[0] as u64;
        assert_eq!([c("out_before"), c("out_during"), c("out_after")], [odd(1, 49), 0, odd(123, 199)]);
        assert_eq!([c("in_before"), c("in_during"), c("in_after")], [odd(1, 27), 0, odd(123, 199)]);
        assert_eq!(c("lost"), lost);
        // port-slots a sender left idle: 0 in odd 72..=121, 1 in odd 50..=121
        assert_eq!(metric(&o, "failed_port_slots_idle") as u64, odd(72, 121) + odd(50, 121));
        assert_eq!(metric(&o, "cells_sent_after_failure_max_slots"), 21.0);
        assert_eq!(metric(&o, "failure_start_ps"), 5e6);
        assert_eq!(metric(&o, "failure_end_ps"), 1e7);
        // delivered payload per microsecond: cells of slot k arrive in bin (k + 20) / 10
        let bins = series(&o, "failure_delivered_bytes");
        assert_eq!(bins.len(), 20);
        assert_eq!(bins.iter().sum::<f64>() as u64, (fwd + back) * 1115);
        // (6, 7] us: 1 → 0 only, its cells of slots 41..=49; nothing arrives in (7, 14] us;
        // (14, 15] us: both ways, slots 123..=129
        assert_eq!(bins[6], 1115.0 * odd(41, 49) as f64);
        assert_eq!(bins[7..14].iter().sum::<f64>(), 0.0);
        assert_eq!(bins[14], 1115.0 * 2.0 * odd(123, 129) as f64);
    }

    /// Without failures the engine runs exactly as before (the same trace), and with a
    /// window that never comes the trace is the same too.
    #[test]
    fn failures_outside_the_run_change_nothing() {
        let mk = |fail: SirFailSpec| {
            let mut s = spec(16, 4);
            s.flow_start_ps = vec![0; 16];
            s.flow_src = (0..16).collect();
            s.flow_dst = (0..16).map(|i| (i + 5) % 16).collect();
            s.flow_size = vec![200_000; 16];
            s.duration_ps = 30_000_000;
            s.fail = fail;
            let mut sim = Sirius::new(s).unwrap();
            sim.run_until(u64::MAX);
            sim.output()
        };
        let a = mk(Default::default());
        let b = mk(SirFailSpec { link_node: vec![3], link_port: vec![1], link_at_ps: vec![40_000_000], link_until_ps: vec![u64::MAX], ..Default::default() });
        assert_eq!(a.trace_hash, b.trace_hash);
        assert_eq!(a.bytes_delivered, b.bytes_delivered);
        assert!(a.series.is_empty() && !b.series.is_empty());
    }

    /// 4 ToRs × 1 port, port 0 of ToR 3 (its only one) down from 1 us for good; 0 sends a
    /// large flow to 3 through the intermediates 1 and 2. Once the reports have come
    /// round, no cell is sent towards 3 and 0 starts no relay cell for 3: the relay queues
    /// at 1 and 2 stay as they are, waiting for a repair.
    #[test]
    fn sources_stop_relaying_towards_an_unreachable_destination() {
        let mut s = spec(4, 1);
        s.pq = false;
        s.flow_start_ps = vec![0];
        s.flow_src = vec![0];
        s.flow_dst = vec![3];
        s.flow_size = vec![10_000_000];
        s.duration_ps = 40_000_000;
        s.fail = SirFailSpec { link_node: vec![3], link_port: vec![0], link_at_ps: vec![1_000_000], link_until_ps: vec![u64::MAX], ..Default::default() };
        let mut sim = Sirius::new(s).unwrap();
        // detection of a circuit: at most W − 1 + L = 24 slots; of a relay's onward
        // circuit: twice that
        sim.run_until(1_000_000 + 100_000 * 60);
        let q = |sim: &Sirius| (sim.relay[4 + 3].len(), sim.relay[2 * 4 + 3].len(), sim.voq[3].bytes, sim.b.ledger.sent);
        let before = q(&sim);
        let lost = sim.fail.m_lost_cells;
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(q(&sim), before);
        assert_eq!(sim.fail.m_lost_cells, lost);
        assert!(before.0 + before.1 > 0, "relayed cells wait at the intermediates");
        assert!(metric(&o, "relay_skipped_unreachable") > 0.0);
        assert!(dropped(&o, "failed_link") > 0);
        assert!(metric(&o, "cells_sent_after_failure_max_slots") <= 2.0 * metric(&o, "failure_detect_max_slots"));
        assert_eq!(series(&o, "failure_port_in_during")[0], 0.0);
    }

    /// ToR 2 of 4 fails over [3 us, 8 us): it loses its source queue (a flow it sends),
    /// the relayed cells queued at it, the cells sent to it before the others heard, and
    /// a flow that starts at it meanwhile; after the repair it relays again.
    #[test]
    fn a_failed_tor_loses_what_it_holds_and_comes_back() {
        let mut s = spec(4, 1);
        s.pq = false;
        s.flow_start_ps = vec![0, 0, 5_000_000, 0];
        s.flow_src = vec![0, 2, 2, 1];
        s.flow_dst = vec![1, 3, 0, 3];
        s.flow_size = vec![1_000_000, 1_000_000, 5000, 1_000_000];
        s.duration_ps = 30_000_000;
        s.fail = SirFailSpec { node: vec![2], node_at_ps: vec![3_000_000], node_until_ps: vec![8_000_000], ..Default::default() };
        let mut sim = Sirius::new(s).unwrap();
        sim.run_until(2_900_000);
        let held = sim.voq[2 * 4 + 3].bytes + sim.relay[2 * 4..3 * 4].iter().flatten().map(|c| c.bytes).sum::<u64>();
        assert!(held > 0);
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(o.flow_delivered[2], 0, "the flow that starts at the failed ToR is lost");
        let lost = o.drops.iter().find(|(r, _)| r == "failed_node").unwrap().1;
        assert!(lost >= held + 5000);
        assert_eq!(o.bytes_dropped, o.drops.iter().map(|x| x.1).sum::<u64>());
        let c = |k: &str| series(&o, &format!("failure_port_{k}"))[0] as u64;
        assert_eq!(series(&o, "failure_port_node"), &[2.0]);
        assert_eq!((c("out_during"), c("in_during")), (0, 0));
        assert!(c("out_after") > 0 && c("in_after") > 0, "ToR 2 sends and relays again");
        assert!(c("lost") > 0);
    }

    #[test]
    fn bad_failures_are_refused() {
        let bad = |f: SirFailSpec| Sirius::new(SirSpec { fail: f, ..spec(16, 4) }).err().expect("refused").field;
        let link = |x: u32, p: u32, at: u64, until: u64| SirFailSpec { link_node: vec![x], link_port: vec![p], link_at_ps: vec![at], link_until_ps: vec![until], ..Default::default() };
        assert_eq!(bad(link(16, 0, 0, 5)), "fail_links[0]");
        assert_eq!(bad(link(0, 4, 0, 5)), "fail_links[0]");
        assert_eq!(bad(link(0, 1, 5, 5)), "recover_at");
        assert_eq!(bad(SirFailSpec { node: vec![16], node_at_ps: vec![0], node_until_ps: vec![1], ..Default::default() }), "fail_nodes[0]");
        assert_eq!(bad(SirFailSpec { link_node: vec![1], ..Default::default() }), "fail_links");
        // 6 ToRs x 8 ports: W = 1, ports 6 and 7 reach nothing
        let r = Sirius::new(SirSpec { fail: link(0, 6, 0, 5), ..spec(6, 8) });
        assert_eq!(r.err().unwrap().field, "fail_links[0]");
    }
}
