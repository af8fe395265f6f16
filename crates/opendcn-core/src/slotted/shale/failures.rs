//! Node failures (ALGORITHMS §5.5, partial): detection by the first missed cell, dropping
//! at failed nodes, re-spraying / resetting cells queued towards a failed neighbour.

use super::ShaleSim;
use crate::units::NONE;

impl ShaleSim {
    pub(super) fn precompute_detection(&mut self) {
        if !self.any_failed {
            return;
        }
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
        // a failed link a-b: each end notices at the first slot the other should have sent
        // to it, and from then on stops sending to it (symmetric detection)
        for &(a, b) in &self.link_list.clone() {
            for t in self.fail_tick..self.fail_tick + span {
                let (s, p, j, _) = self.plan.slot(t);
                let sub = &self.plan.subs[s];
                if sub.tx_peer(a, p, j) == b {
                    self.detect.entry(((b as u64) << 32) | a as u64).or_insert(t + self.d);
                }
                if sub.tx_peer(b, p, j) == a {
                    self.detect.entry(((a as u64) << 32) | b as u64).or_insert(t + self.d);
                }
            }
        }
        for &f in &self.fail_list.clone() {
            for t in self.fail_tick..self.fail_tick + span {
                let (s, p, j, _) = self.plan.slot(t);
                let y = self.plan.subs[s].tx_peer(f, p, j);
                self.detect.entry(((y as u64) << 32) | f as u64).or_insert(t + self.d);
            }
        }
        let mut ev: Vec<(u64, u32, u32)> =
            self.detect.iter().map(|(&kx, &dt)| (dt, (kx >> 32) as u32, kx as u32)).collect();
        ev.sort_unstable();
        self.det_events = ev;
    }

    /// Was the link a-b down when a cell was sent over it in timeslot t_send?
    #[inline]
    pub(super) fn link_lost(&self, a: u32, b: u32, t_send: u64) -> bool {
        if self.link_list.is_empty() || t_send < self.fail_tick {
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
        while self.pieo_head[xk] != NONE {
            let e = self.pieo_head[xk];
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
                while self.pieo_head[fk] != NONE {
                    let e = self.pieo_head[fk];
                    let c = self.entries[e as usize].head;
                    self.unlink_cell(f, k, e, NONE, c, NONE, false);
                    self.dequeued(f, c);
                    let b = self.cells[c as usize].bytes as u64;
                    self.dropped += b;
                    self.drops[0] += b;
                    self.free_cell(c);
                }
                self.drop_tokens(fk);
            }
            for sg in 0..nsub {
                let li = f as usize * nsub + sg;
                for fl in std::mem::take(&mut self.local[li]) {
                    if self.e2e() {
                        self.tp_flow_gone(fl as usize, t);
                    }
                    let b = self.f_unsent[fl as usize];
                    self.f_unsent[fl as usize] = 0;
                    self.unsent_total -= b;
                    self.dropped += b;
                    self.drops[0] += b;
                }
            }
        }
        let _ = t;
    }

}
