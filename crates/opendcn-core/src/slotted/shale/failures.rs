//! Node and link failures (docs/arch/shale.md#failures-and-invalidation): detection by the first missed cell (and
//! re-detection of a recovered element by the first cell received again), dropping at
//! failed elements, re-spraying / resetting cells queued towards a failed neighbour,
//! hop-by-hop state reset at recovery. Invalidation tokens: see `invalidation`.

use super::ShaleSim;
use crate::units::NONE;

impl ShaleSim {
    /// For every (live end x, failed neighbour or link end z): the first timeslot ≥ `from`
    /// at which z sends to x, plus the hop delay (when x notices z's cells missing, or
    /// coming again after recovery).
    fn first_contacts(&self, from: u64) -> Vec<(u64, u64)> {
        let mut span = 0u64;
        for (i, s) in self.plan.subs.iter().enumerate() {
            let share = if self.plan.subs.len() == 1 {
                1
            } else if i == 1 {
                self.plan.num
            } else {
                self.plan.den - self.plan.num
            };
            span = span.max((s.epoch() as u64 * self.plan.den).div_ceil(share.max(1)) + self.plan.den + 2);
        }
        let mut out: std::collections::HashMap<u64, u64, std::hash::BuildHasherDefault<super::MixHasher>> =
            Default::default();
        // a failed link a-b: each end notices at the first slot the other should have sent
        // to it, and from then on stops sending to it (symmetric detection)
        for &(a, b) in &self.link_list {
            for t in from..from + span {
                let (s, p, j, _) = self.plan.slot(t);
                let sub = &self.plan.subs[s];
                if sub.tx_peer(a, p, j) == b {
                    out.entry(((b as u64) << 32) | a as u64).or_insert(t + self.d);
                }
                if sub.tx_peer(b, p, j) == a {
                    out.entry(((a as u64) << 32) | b as u64).or_insert(t + self.d);
                }
            }
        }
        for &f in &self.fail_list {
            for t in from..from + span {
                let (s, p, j, _) = self.plan.slot(t);
                let y = self.plan.subs[s].tx_peer(f, p, j);
                out.entry(((y as u64) << 32) | f as u64).or_insert(t + self.d);
            }
        }
        let mut v: Vec<(u64, u64)> = out.into_iter().collect();
        v.sort_unstable();
        v
    }

    pub(super) fn precompute_detection(&mut self) {
        if !self.any_failed {
            return;
        }
        let det = self.first_contacts(self.fail_tick);
        let mut ev: Vec<(u64, u32, u32)> = det.iter().map(|&(kx, dt)| (dt, (kx >> 32) as u32, kx as u32)).collect();
        self.detect = det.into_iter().collect();
        ev.sort_unstable();
        self.det_events = ev;
        if self.rec_tick != u64::MAX {
            let rev = self.first_contacts(self.rec_tick);
            let mut ev: Vec<(u64, u32, u32)> =
                rev.iter().map(|&(kx, rt)| (rt, (kx >> 32) as u32, kx as u32)).collect();
            ev.sort_unstable();
            self.redet_events = ev;
            self.revive = rev.into_iter().collect();
        }
    }

    /// Recovery (all failed nodes and links at once): forget the hop-by-hop state of the
    /// links that lost cells or tokens, and of the failed nodes themselves.
    pub(super) fn apply_recovery(&mut self) {
        let n = self.n;
        let gone = |sim: &ShaleSim, x: u32, k: u32| -> bool {
            if sim.failed[x as usize] {
                return true;
            }
            let (sg, p, j) = sim.plan.index_entry(k);
            let y = sim.plan.subs[sg].tx_peer(x, p, j);
            sim.failed[y as usize] || sim.link_list.binary_search(&(x.min(y), x.max(y))).is_ok()
        };
        let _ = n;
        let keys: Vec<u64> = self.outstanding.keys();
        for kx in keys {
            let (x, k) = ((kx >> 44) as u32, ((kx >> 23) & ((1 << 21) - 1)) as u32);
            if gone(self, x, k) {
                self.outstanding.remove(kx);
            }
        }
    }

    /// Was the link a-b down when a cell was sent over it in timeslot t_send?
    #[inline]
    pub(super) fn link_lost(&self, a: u32, b: u32, t_send: u64) -> bool {
        if self.link_list.is_empty() || t_send < self.fail_tick || t_send >= self.rec_tick {
            return false;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        self.down_links.contains_key(&(((lo as u64) << 32) | hi as u64))
    }

    /// x learned that its neighbour (index k, phase p) failed: move or drop what is queued.
    pub(super) fn reroute_queue(&mut self, x: u32, k: u32, sg: usize, p: u32, dead: u32, t: u64) {
        let xk = self.ix(x, k);
        let h = self.plan.subs[sg].h;
        let mut moved = Vec::new();
        while self.lk[xk].ph != NONE {
            let e = self.lk[xk].ph;
            let c = self.entries[e as usize].head;
            self.unlink_cell(x, k, e, NONE, c, NONE, false);
            self.dequeued(x, c);
            moved.push(c);
        }
        for c in moved {
            let cl = self.cells[c as usize];
            if cl.dst == dead && self.failed[dead as usize] {
                self.drop_cell(x, c, 0);
                continue;
            }
            if cl.r == 0 {
                self.cells[c as usize].r = h as u8; // direct hop via the failed node
            }
            // re-spray in the same phase
            self.route(x, c, sg, (p + h - 1) % h, t);
        }
    }

    pub(super) fn apply_failures(&mut self, t: u64) {
        let nsub = self.plan.subs.len();
        for fi in 0..self.fail_list.len() {
            let f = self.fail_list[fi];
            for k in 0..self.kk {
                let fk = self.ix(f, k);
                while self.lk[fk].ph != NONE {
                    let e = self.lk[fk].ph;
                    let c = self.entries[e as usize].head;
                    self.unlink_cell(f, k, e, NONE, c, NONE, false);
                    self.dequeued(f, c);
                    let b = self.cells[c as usize].bytes as u64;
                    self.ledger.drop(0, b, true);
                    self.free_cell(c);
                }
                self.drop_tokens(fk);
            }
            for sg in 0..nsub {
                let li = f as usize * nsub + sg;
                if !self.local[li].is_empty() {
                    self.backlogged -= 1;
                }
                for fl in std::mem::take(&mut self.local[li]) {
                    if self.e2e() {
                        self.tp_flow_gone(fl as usize, t);
                    }
                    let b = self.f_unsent[fl as usize];
                    self.f_unsent[fl as usize] = 0;
                    self.unsent_total -= b;
                    self.lose_unsent(0, b);
                }
            }
        }
        let _ = t;
    }

}
