//! Receipt and routing (§5.2): a flight's tokens return credits, its cell is delivered or
//! routed to its next hop (a spraying hop, else the direct semi-path, around failed and
//! invalidating neighbours) and queued there, where congestion detection sees it.

use super::{invalidation, key, Flight, ShaleSim, Spray, HI, LO};
use crate::rng::mix64;
use crate::units::NONE;

impl ShaleSim {
    pub(super) fn receive(&mut self, fl: Flight, t: u64) {
        self.events += 1;
        let y = fl.to;
        if self.any_failed && self.link_lost(fl.from, y, t - self.d) {
            // sent into a failed link before the sender noticed: cell and tokens are lost
            self.lose_flight(&fl, 2);
            return;
        }
        if self.is_dead(y, t) {
            self.lose_flight(&fl, 0);
            return;
        }
        for i in 0..fl.ntok as usize {
            let (d, r) = fl.tok[i];
            if r & invalidation::INV != 0 {
                let n = r & !(invalidation::INV | invalidation::REV);
                if r & invalidation::REV != 0 {
                    self.on_reval(y, fl.k_back, d, n);
                } else {
                    self.on_inval(y, fl.k_back, d, n, fl.sigma as usize, t);
                }
                continue;
            }
            if self.cc.hbh() {
                let ok = key(y, fl.k_back, d, r);
                self.outstanding.update(ok, |v| if v & LO > 0 { v - 1 } else { v });
            }
        }
        let c = fl.cell;
        if c == NONE {
            // a token-only cell reached its neighbour
            self.ledger.deliver(0, 0);
            return;
        }
        let (dst, flow, bytes) = {
            let cl = &mut self.cells[c as usize];
            cl.hops += 1;
            cl.prev = fl.from;
            cl.back_k = fl.k_back;
            (cl.dst, cl.flow as usize, cl.bytes as u64)
        };
        if dst == y {
            let hops = self.cells[c as usize].hops as u32;
            self.f_hops[flow] = self.f_hops[flow].max(hops);
            self.ledger.deliver(bytes, 0);
            self.f_deliv[flow] += bytes;
            if self.e2e() {
                self.tp_delivered(flow, t);
            }
            if self.f_deliv[flow] == self.f_size[flow] {
                let send = t - self.d;
                self.f_finish[flow] = send * self.tau + self.slot_ps + self.prop_ps;
                self.flows_completed += 1;
                // order-free: a sum over completions of (flow, timeslot)
                self.hash.record(t, (flow as u64) << 24);
            }
            self.free_cell(c);
            return;
        }
        if self.cc.hbh() {
            let cl = self.cells[c as usize];
            let hk = key(cl.prev, self.rev_k[cl.back_k as usize], cl.dst, cl.r_in);
            let held = (self.outstanding.update(hk, |v| v + HI) >> 32) as u32;
            if held > self.budget(cl.sigma, cl.r_in) {
                self.hbh_viol += 1;
            }
        }
        self.route(y, c, fl.sigma as usize, fl.phase as u32, t);
    }

    /// Congestion detection: forwarded cell c joins y's queue for neighbour index k,
    /// which the next occurrence of k carries one cell of; with push-back the cell's
    /// source, one propagation delay later, stops starting cells towards its destination
    /// for as long as the occurrence of k that carries c is away from the detection.
    fn congestion(&mut self, y: u32, k: u32, c: u32, t: u64) {
        if !self.svc.cfg.congestion_detection {
            return;
        }
        let occ = self.qcells[self.qx(y, k)] as u64;
        if occ == 0 {
            return;
        }
        let cl = self.cells[c as usize];
        let pause = if self.svc.cfg.pushback { self.plan.next_occurrence(k, t, occ) + 1 - t } else { 0 };
        self.svc.joined(occ, 1, self.f_src[cl.flow as usize], cl.dst, t + self.pb_delay, pause);
    }

    /// Cell c, routed at y to neighbour index k: trimmed (NDP at its queue cap) or queued.
    fn place(&mut self, y: u32, c: u32, k: u32, sg: usize, p_prev: u32, t: u64) {
        if self.tp_trim(y, k) {
            self.tp_do_trim(y, c, sg, p_prev, t);
        } else {
            self.congestion(y, k, c, t);
            self.enqueue(y, k, c);
        }
    }

    /// Choose cell c's next hop at node y (previous hop in phase p_prev) and enqueue it.
    pub(super) fn route(&mut self, y: u32, c: u32, sg: usize, p_prev: u32, t: u64) {
        let (h, m) = (self.plan.subs[sg].h, self.plan.subs[sg].m);
        let koff = self.plan.koff[sg];
        let mut resets = 0;
        let mut p_prev = p_prev;
        loop {
            let (r, d) = (self.cells[c as usize].r, self.cells[c as usize].dst);
            if r > 0 {
                let q = (p_prev + 1) % h;
                match self.choose_spray(y, sg, q, t, d, r - 1) {
                    Spray::To(j) => {
                        self.place(y, c, koff + q * (m - 1) + j - 1, sg, p_prev, t);
                        return;
                    }
                    Spray::AllInvalid => {
                        // live neighbours, but all invalidated this bucket
                        self.drop_cell(y, c, 1);
                        return;
                    }
                    Spray::AllDead => {
                        // every neighbour of this phase failed: skip this spraying hop
                        self.cells[c as usize].r = r - 1;
                        self.skipped_sprays += 1;
                        p_prev = q;
                        continue;
                    }
                }
            }
            let ebs = &self.plan.subs[sg];
            let mut q = p_prev;
            let mut found = false;
            for _ in 0..h {
                q = (q + 1) % h;
                if ebs.coord(y, q) != ebs.coord(d, q) {
                    found = true;
                    break;
                }
            }
            debug_assert!(found);
            let j = (ebs.coord(d, q) + m - ebs.coord(y, q)) % m;
            let z = ebs.tx_peer(y, q, j);
            let kz = koff + q * (m - 1) + j - 1;
            if self.knows_dead(y, z, t) || (z != d && self.invalid(y, kz, d, 0)) {
                let dead_dst = z == d && self.failed[d as usize];
                self.direct_broken(y, sg, q, d, t);
                if dead_dst || resets > 0 {
                    self.drop_cell(y, c, if dead_dst { 0 } else { 1 });
                    return;
                }
                // a direct hop via a failed node, over a failed link (its destination
                // alive) or to a neighbour that invalidated ⟨d, 0⟩: back to the first
                // spraying hop
                self.cells[c as usize].r = h as u8;
                resets += 1;
                continue;
            }
            self.place(y, c, koff + q * (m - 1) + j - 1, sg, p_prev, t);
            return;
        }
    }

    /// A spraying neighbour offset j (1..m) of y in phase q for a cell to d that will
    /// arrive with n sprays left, avoiding failed neighbours y knows of and neighbours
    /// that invalidated ⟨d, n⟩; `spray`: the fewest queued cells, ties from a random start.
    fn choose_spray(&mut self, y: u32, sg: usize, q: u32, t: u64, d: u32, n: u8) -> Spray {
        let m = self.plan.subs[sg].m;
        let kbase = self.plan.koff[sg] + q * (m - 1);
        let base = y as usize * self.kk as usize + kbase as usize;
        let start = self.spray_draw(y, m - 1);
        let any_failed = self.any_failed;
        let mut live = false;
        if self.cc.spray_short() {
            let mut best = u32::MAX;
            let mut bj = None;
            for i in 0..m - 1 {
                let jj = (start + i) % (m - 1);
                let qc = self.qcells[base + jj as usize];
                if qc < best {
                    if any_failed {
                        let z = self.plan.subs[sg].tx_peer(y, q, jj + 1);
                        if self.knows_dead(y, z, t) {
                            continue;
                        }
                        live = true;
                        if self.invalid(y, kbase + jj, d, n) {
                            continue;
                        }
                    }
                    best = qc;
                    bj = Some(jj + 1);
                    if qc == 0 {
                        break;
                    }
                }
            }
            return match bj {
                Some(j) => Spray::To(j),
                None if live || !self.all_dead(y, sg, q, t) => Spray::AllInvalid,
                None => Spray::AllDead,
            };
        }
        for i in 0..m - 1 {
            let jj = (start + i) % (m - 1) + 1;
            if !any_failed {
                return Spray::To(jj);
            }
            if !self.knows_dead(y, self.plan.subs[sg].tx_peer(y, q, jj), t) {
                live = true;
                if !self.invalid(y, kbase + jj - 1, d, n) {
                    return Spray::To(jj);
                }
            }
        }
        if live {
            Spray::AllInvalid
        } else {
            Spray::AllDead
        }
    }

    /// Node y's next spraying draw, uniform in 0..n.
    #[inline]
    fn spray_draw(&mut self, y: u32, n: u32) -> u32 {
        let c = &mut self.spray_ctr[y as usize];
        let z = mix64(self.spray_seed ^ ((y as u64) << 40 | *c));
        *c += 1;
        (((z >> 32) * n as u64) >> 32) as u32
    }

    /// Does y know that all its neighbours of phase q failed?
    fn all_dead(&self, y: u32, sg: usize, q: u32, t: u64) -> bool {
        let m = self.plan.subs[sg].m;
        (1..m).all(|jj| self.knows_dead(y, self.plan.subs[sg].tx_peer(y, q, jj), t))
    }
}
