//! Invalidation tokens (docs/arch/shale.md#failures-and-invalidation): telling upstream nodes that a bucket has no
//! valid route any more, so they stop sending cells that could only be dropped or reset.
//!
//! A token {j, n} sent by y to its neighbour z means "y cannot forward cells for j that
//! arrive with n spraying hops left over the link z→y": z must not send such cells to y.
//! Tokens travel in the token fields of cell headers (two per header, shared with the
//! hop-by-hop tokens, one flag bit marks them: DECIDE §7.29 — one extra bit per token)
//! and reach z the next time y is connected to z, one hop delay later.
//!
//! * Detection: when x notices that it cannot send to its neighbour j (j failed, or the
//!   link x–j failed), it has no direct route to j: it sends {j, 0} to all its neighbours.
//! * z receives {j, n} from y (link z→y in phase p): cells queued at z for y that would
//!   arrive with n sprays left are taken back: spraying hops are re-sprayed to another
//!   valid neighbour of phase p, direct hops are reset to their first spraying hop (j
//!   alive) or dropped (j failed). Then
//!   - if every neighbour of phase p has now invalidated {j, n}, z cannot forward
//!     {j, n + 1} cells whose next spray is in phase p: it sends {j, n + 1} to all its
//!     neighbours of the preceding phase (when n + 1 < h);
//!   - if n = 0 and y is z's direct next hop towards j in phase p, z's direct semi-path to
//!     j through y is gone for every arrival phase a whose next differing coordinate is p:
//!     z sends {j, 0} to all its neighbours of those phases a (the spec's "phases p … q−1").
//! * A node that has to reset a cell for j because its direct next hop failed (node or
//!   link, known locally) sends {j, 0} the same way, once: this replaces the spec's
//!   inference of failed links from the direct-path tree, on demand per destination.
//!   Each token is sent once per (node, neighbour, bucket).
//! * Routing: a spraying hop avoids neighbours that invalidated the cell's bucket; a
//!   direct hop to an invalidated neighbour is reset / dropped as above; a source does
//!   not start a cell for j on a first hop that invalidated {j, h − 1}. A spraying hop
//!   whose phase has live neighbours that all invalidated the bucket drops the cell
//!   (reason no_route); one whose neighbours all failed is skipped (as before).
//!
//! * Recovery (all failed nodes and links recover at one time, `recover_at`): a node that
//!   sees cells from a recovered neighbour again sends re-validation tokens (a second flag
//!   bit) undoing every invalidation it sent; a node receiving a re-validation of
//!   {j, n} forgets it and undoes every invalidation it sent about j, and so on upstream.
//!   Since nothing stays failed, undoing everything is exact; invalidations of a later
//!   failure are not modelled (one failure time, one recovery time).

use super::{key, ShaleSim};

/// Flag bits of an invalidation / re-validation token in the token's index byte.
pub(super) const INV: u8 = 0x40;
pub(super) const REV: u8 = 0x20;

impl ShaleSim {
    /// Has node z been told not to send bucket ⟨j, n⟩ cells to its neighbour index k?
    #[inline]
    pub(super) fn invalid(&self, z: u32, k: u32, j: u32, n: u8) -> bool {
        !self.inval.is_empty() && self.inval.contains_key(key(z, k, j, n))
    }

    /// Queue token {j, n} from z to its neighbour index k (once).
    fn send_inval(&mut self, z: u32, k: u32, j: u32, n: u8) {
        if self.inval_sent.insert(key(z, k, j, n), 1).is_some() {
            return;
        }
        self.inval_tokens += 1;
        let list = self.sent_by_dst.entry(key(z, 0, j, 0)).or_default();
        if list.is_empty() {
            self.sent_dsts.entry(z).or_default().push(j);
        }
        list.push((k, n));
        self.push_token(z, k, j, n | INV);
    }

    /// Undo every invalidation z sent about destination j: re-validation tokens.
    fn revalidate(&mut self, z: u32, j: u32) {
        if let Some(list) = self.sent_by_dst.remove(&key(z, 0, j, 0)) {
            for (k, n) in list {
                self.inval_sent.remove(key(z, k, j, n));
                self.revalidation_tokens += 1;
                self.push_token(z, k, j, n | INV | REV);
            }
        }
    }

    /// Re-detection events due at t: x sees cells from z again (recovery). It undoes
    /// every invalidation it sent (all failures recover together, so none still holds).
    pub(super) fn redetections_due(&mut self, t: u64) {
        while self.redet_next < self.redet_events.len() && self.redet_events[self.redet_next].0 <= t {
            let (_, x, _z) = self.redet_events[self.redet_next];
            self.redet_next += 1;
            let dsts = self.sent_dsts.remove(&x).unwrap_or_default();
            for j in dsts {
                self.revalidate(x, j);
            }
        }
    }

    /// Send {j, n} from z to all its neighbours of phase p in sub-schedule sg (except the
    /// ones z knows are gone).
    fn inval_phase(&mut self, z: u32, sg: usize, p: u32, j: u32, n: u8, t: u64) {
        let m = self.plan.subs[sg].m;
        let base = self.plan.koff[sg] + p * (m - 1);
        for jj in 1..m {
            let y = self.plan.subs[sg].tx_peer(z, p, jj);
            if !self.knows_dead(z, y, t) {
                self.send_inval(z, base + jj - 1, j, n);
            }
        }
    }

    /// Detection events due at t: x noticed it cannot send to j.
    pub(super) fn detections_due(&mut self, t: u64) {
        while self.det_next < self.det_events.len() && self.det_events[self.det_next].0 <= t {
            let (_, x, j) = self.det_events[self.det_next];
            self.det_next += 1;
            if self.is_dead(x, t) {
                continue;
            }
            for sg in 0..self.plan.subs.len() {
                let h = self.plan.subs[sg].h;
                let ebs = &self.plan.subs[sg];
                let diff = (0..h).filter(|&q| ebs.coord(x, q) != ebs.coord(j, q)).count();
                if diff == 1 {
                    for p in 0..h {
                        self.inval_phase(x, sg, p, j, 0, t);
                    }
                }
            }
        }
    }

    /// z received the re-validation of {j, n} from its neighbour index k: forget it, and
    /// undo what z sent about j.
    pub(super) fn on_reval(&mut self, z: u32, k: u32, j: u32, n: u8) {
        if self.inval.remove(key(z, k, j, n)).is_some() {
            self.revalidate(z, j);
        }
    }

    /// z received {j, n} from its neighbour index k (sub-schedule sg).
    pub(super) fn on_inval(&mut self, z: u32, k: u32, j: u32, n: u8, sg: usize, t: u64) {
        if self.inval.insert(key(z, k, j, n), 1).is_some() {
            return;
        }
        let (h, m) = (self.plan.subs[sg].h, self.plan.subs[sg].m);
        let koff = self.plan.koff[sg];
        let p = (k - koff) / (m - 1);
        // take back the cells queued for that neighbour which would arrive in ⟨j, n⟩
        let zk = self.ix(z, k);
        let mut taken = Vec::new();
        let mut pe = super::NONE;
        let mut e = self.lk[zk].ph;
        while e != super::NONE {
            let en = self.entries[e as usize];
            let hit = en.d() == j && (en.r() as u32 == n as u32 + 1 || (n == 0 && en.r() == 0));
            if hit {
                // unlink the whole bucket, cell by cell (the entry goes when empty)
                let mut c = en.head;
                while c != super::NONE {
                    let nx = self.cells[c as usize].next;
                    self.unlink_cell(z, k, e, pe, c, super::NONE, false);
                    self.dequeued(z, c);
                    taken.push(c);
                    c = nx;
                }
                e = if pe == super::NONE { self.lk[zk].ph } else { self.entries[pe as usize].next };
                continue;
            }
            pe = e;
            e = en.next;
        }
        for c in taken {
            self.inval_requeued += 1;
            self.route(z, c, sg, (p + h - 1) % h, t);
        }
        // propagate
        if (n as u32) + 1 < h {
            // every neighbour of phase p failed (as z knows) or invalidated {j, n}?
            let base = koff + p * (m - 1);
            let blocked = (1..m).all(|jj| {
                let y = self.plan.subs[sg].tx_peer(z, p, jj);
                self.knows_dead(z, y, t) || self.invalid(z, base + jj - 1, j, n)
            });
            if blocked {
                self.inval_phase(z, sg, (p + h - 1) % h, j, n + 1, t);
            }
        }
        if n == 0 {
            let ebs = &self.plan.subs[sg];
            let (cz, cj) = (ebs.coord(z, p), ebs.coord(j, p));
            let y = ebs.tx_peer(z, p, (k - koff) % (m - 1) + 1);
            if cz != cj && ebs.coord(y, p) == cj {
                // y is z's direct hop towards j in phase p
                self.direct_broken(z, sg, p, j, t);
            }
        }
    }

    /// z's direct hop towards j in phase p is gone (invalidated, or z knows the neighbour
    /// or the link failed): send {j, 0} to z's neighbours of every arrival phase a whose
    /// next differing coordinate is p (they would route such cells through it).
    pub(super) fn direct_broken(&mut self, z: u32, sg: usize, p: u32, j: u32, t: u64) {
        if !self.invalidation {
            return;
        }
        let h = self.plan.subs[sg].h;
        for a in 0..h {
            let ebs = &self.plan.subs[sg];
            let mut q = a;
            loop {
                q = (q + 1) % h;
                if ebs.coord(z, q) != ebs.coord(j, q) {
                    break;
                }
            }
            if q == p {
                self.inval_phase(z, sg, a, j, 0, t);
            }
        }
    }
}
