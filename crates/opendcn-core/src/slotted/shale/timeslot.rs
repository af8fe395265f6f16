//! The timeslot loop: the failure and invalidation events due, new flows and the
//! timeslot's arrivals, then the visits of the nodes with work for its neighbour index
//! (each sends its first eligible queued cell, else a new one, and up to two tokens),
//! with the software prefetch pipelines of the arrival and visit loops.

use super::{key, Cc, Cell, Flight, Sample, ShaleSim};
use crate::units::NONE;

impl ShaleSim {
    /// Append one time-series sample at the start of timeslot t.
    fn sample(&mut self, t: u64) {
        let s = Sample {
            time_ps: t * self.tau,
            buffered_cells: self.total_buf,
            max_node_cells: self.interval_max_buf,
            unsent_bytes: self.unsent_total,
            delivered_bytes: self.ledger.delivered,
            cell_hops: self.packet_hops,
            dropped_bytes: self.ledger.lost_total(),
            new_cells: self.new_cells,
            backlogged_sources: self.backlogged,
        };
        let p = self.last_sample;
        self.series.push(Sample {
            delivered_bytes: s.delivered_bytes - p.delivered_bytes,
            cell_hops: s.cell_hops - p.cell_hops,
            dropped_bytes: s.dropped_bytes - p.dropped_bytes,
            new_cells: s.new_cells - p.new_cells,
            ..s
        });
        self.last_sample = s;
        // the next interval starts from the current levels (O(N) per sample)
        self.interval_max_buf = self.buf.iter().copied().max().unwrap_or(0);
    }

    pub(super) fn step(&mut self, t: u64) {
        // cells that exist (queued at nodes or on links) at the start of timeslot t
        self.live_sum += (self.cells.len() - self.free_cells.len()) as u64;
        if self.sample_ticks > 0 && t > 0 && t.is_multiple_of(self.sample_ticks) {
            self.sample(t);
        }
        if self.any_failed && t == self.fail_tick {
            self.apply_failures(t);
        }
        if self.det_next < self.det_events.len() {
            self.detections_due(t);
        }
        if t == self.rec_tick && self.any_failed {
            self.apply_recovery();
        }
        if self.redet_next < self.redet_events.len() {
            self.redetections_due(t);
        }
        self.svc.deliver(t);
        // new flows
        while self.next_flow < self.f_start.len() && self.f_start[self.next_flow] <= t {
            let f = self.next_flow;
            self.next_flow += 1;
            let size = self.f_size[f];
            self.ledger.offer(size);
            self.flows_started += 1;
            let src = self.f_src[f];
            if self.is_dead(src, t) {
                self.lose_unsent(0, size);
                continue;
            }
            self.f_unsent[f] = size;
            self.unsent_total += size;
            if self.e2e() {
                self.tp_flow_start(f, t);
            }
            self.activate_local(f);
        }
        if self.e2e() {
            self.tp_ctrl_due(t);
        }
        // arrivals
        let ri = (t % self.ring.len() as u64) as usize;
        let mut arr = std::mem::take(&mut self.ring[ri]);
        for i in 0..arr.len() {
            self.prefetch_arrival(&arr, i);
            self.receive(arr[i], t);
        }
        arr.clear();
        self.ring[ri] = arr;
        // sends
        let (sg, p, j, k) = self.plan.slot(t);
        let mut list = std::mem::take(&mut self.active[k as usize]);
        let mut kept = std::mem::take(&mut self.scratch);
        kept.clear();
        for i in 0..list.len() {
            self.prefetch_visit(&list, i, k);
            let x = list[i];
            self.visited[x as usize] = t;
            if self.visit(x, t, sg, p, j, k) {
                kept.push(x);
            } else {
                let i = self.ix(x, k);
                self.set_listed(i, false);
            }
        }
        // nodes listed at k while visiting (none expected) are appended after the kept ones
        let added = std::mem::take(&mut self.active[k as usize]);
        kept.extend_from_slice(&added);
        self.active[k as usize] = kept;
        list.clear();
        self.scratch = list;
        // sources with local data
        let mut srcs = std::mem::take(&mut self.src_list[sg]);
        let nsub = self.plan.subs.len();
        let bit = 1u8 << sg;
        srcs.retain(|&x| {
            if self.local[x as usize * nsub + sg].is_empty() || self.is_dead(x, t) {
                self.src_listed[x as usize] &= !bit;
                return false;
            }
            if self.visited[x as usize] != t {
                self.visited[x as usize] = t;
                let xk = self.ix(x, k);
                let work = self.visit(x, t, sg, p, j, k);
                if work && !self.is_listed(xk) {
                    self.set_listed(xk, true);
                    self.active[k as usize].push(x);
                }
            }
            true
        });
        let added = std::mem::take(&mut self.src_list[sg]);
        srcs.extend_from_slice(&added);
        self.src_list[sg] = srcs;
    }

    /// Software pipeline over one timeslot's arrivals (hints only, no state change): the
    /// cell of the flight 16 ahead, then, 8 ahead, the counters its receipt will touch.
    #[inline(always)]
    fn prefetch_arrival(&self, arr: &[Flight], i: usize) {
        use crate::prefetch;
        if let Some(f) = arr.get(i + 16) {
            if f.cell != NONE {
                prefetch::at(&self.cells, f.cell as usize);
            }
        }
        if let Some(f) = arr.get(i + 8) {
            self.prefetch_receipt(f);
        }
        // 4 ahead: the first bucket queued on a direct hop's link
        if let Some(f) = arr.get(i + 4) {
            if f.cell != NONE {
                let c = &self.cells[f.cell as usize];
                if c.dst != f.to && c.r == 0 {
                    if let Some(kz) = self.direct_k(f.to, c.dst, f.sigma as usize, f.phase as u32) {
                        let ph = self.lk[self.ix(f.to, kz)].ph;
                        if ph != NONE {
                            prefetch::at(&self.entries, ph as usize);
                        }
                    }
                }
            }
        }
    }

    /// The counters and queues flight f's receipt touches (its cell is already cached).
    #[inline(always)]
    fn prefetch_receipt(&self, f: &Flight) {
        use crate::prefetch;
        if self.cc.hbh() {
            for &(d, r) in &f.tok[..f.ntok as usize] {
                self.outstanding.prefetch(key(f.to, f.k_back, d, r));
            }
        }
        if f.cell != NONE {
            let c = &self.cells[f.cell as usize];
            if self.cc.hbh() {
                self.outstanding.prefetch(key(f.from, self.rev_k[f.k_back as usize], c.dst, c.r_in));
            }
            // where the receiver will queue it: the direct hop's link record, or the row
            // of queue lengths a spraying hop chooses from
            let sg = f.sigma as usize;
            let ebs = &self.plan.subs[sg];
            let (h, m) = (ebs.h, ebs.m);
            if c.dst != f.to {
                if c.r > 0 {
                    let q = (f.phase as u32 + 1) % h;
                    let base = self.qx(f.to, self.plan.koff[sg] + q * (m - 1));
                    let mut o = 0;
                    while o < (m - 1) as usize {
                        prefetch::at(&self.qcells, base + o);
                        o += 16;
                    }
                } else if let Some(kz) = self.direct_k(f.to, c.dst, sg, f.phase as u32) {
                    prefetch::at(&self.lk, self.ix(f.to, kz));
                }
                self.bucket_ref.prefetch(key(f.to, 0, c.dst, c.r));
            }
        }
    }

    /// The neighbour index of y's direct hop towards d after phase p_prev (failures aside).
    #[inline]
    fn direct_k(&self, y: u32, d: u32, sg: usize, p_prev: u32) -> Option<u32> {
        let ebs = &self.plan.subs[sg];
        let (h, m) = (ebs.h, ebs.m);
        let mut q = p_prev;
        for _ in 0..h {
            q = (q + 1) % h;
            let (a, b) = (ebs.coord(y, q), ebs.coord(d, q));
            if a != b {
                return Some(self.plan.koff[sg] + q * (m - 1) + (b + m - a) % m - 1);
            }
        }
        None
    }

    /// Software pipeline over one timeslot's visits: the link record 16 ahead, its first
    /// PIEO entry and token 8 ahead, that entry's credit counter and cell 4 ahead.
    #[inline(always)]
    fn prefetch_visit(&self, list: &[u32], i: usize, k: u32) {
        use crate::prefetch;
        if let Some(&x) = list.get(i + 16) {
            prefetch::at(&self.lk, self.ix(x, k));
        }
        if let Some(&x) = list.get(i + 8) {
            let l = &self.lk[self.ix(x, k)];
            if l.ph != NONE {
                prefetch::at(&self.entries, l.ph as usize);
            }
            if l.th != NONE {
                prefetch::at(&self.toks, l.th as usize);
            }
        }
        if let Some(&x) = list.get(i + 4) {
            let l = &self.lk[self.ix(x, k)];
            if l.ph != NONE {
                let en = &self.entries[l.ph as usize];
                prefetch::at(&self.cells, en.head as usize);
                self.bucket_ref.prefetch(key(x, 0, en.d(), en.r()));
                if self.cc.hbh() {
                    self.outstanding.prefetch(key(x, k, en.d(), en.r().saturating_sub(1)));
                }
            }
        }
        if let Some(&x) = list.get(i + 2) {
            // the link back to the head cell's upstream node (its token) and its
            // receiver-side count
            let l = &self.lk[self.ix(x, k)];
            if l.ph != NONE {
                let c = &self.cells[self.entries[l.ph as usize].head as usize];
                if c.prev != NONE && self.cc.hbh() {
                    prefetch::at(&self.lk, self.ix(x, c.back_k));
                    self.outstanding.prefetch(key(c.prev, self.rev_k[c.back_k as usize], c.dst, c.r_in));
                }
            }
        }
    }

    /// Flow f has unsent data: list it at its source.
    pub(super) fn activate_local(&mut self, f: usize) {
        let src = self.f_src[f];
        let sg = self.f_sigma[f] as usize;
        let nsub = self.plan.subs.len();
        let li = src as usize * nsub + sg;
        if self.local[li].is_empty() {
            self.backlogged += 1;
        }
        self.local[li].push(f as u32);
        let bit = 1u8 << sg;
        if self.src_listed[src as usize] & bit == 0 {
            self.src_listed[src as usize] |= bit;
            self.src_list[sg].push(src);
        }
    }

    /// Node x's turn in timeslot t (neighbour index k). Returns whether x still has
    /// queued cells or tokens for index k.
    fn visit(&mut self, x: u32, t: u64, sg: usize, p: u32, j: u32, k: u32) -> bool {
        self.events += 1;
        let xk = self.ix(x, k);
        if self.is_dead(x, t) {
            return false;
        }
        let y = self.plan.subs[sg].tx_peer(x, p, j);
        if self.knows_dead(x, y, t) {
            self.reroute_queue(x, k, sg, p, y, t);
            self.drop_tokens(xk);
            if self.bc.on {
                self.bc.drop_link(x, k);
            }
            return false;
        }
        let mut cell = self.extract(x, k, y, sg as u8);
        if cell == NONE {
            cell = self.new_cell(x, sg, k, y, t);
        }
        let mut tok = [(0u32, 0u8); 2];
        let mut ntok = 0u8;
        if self.token_one_each && self.bc.on {
            // the oldest token, then one of the other kind if one waits
            if let Some((tk, from_log)) = self.pop_token_kind(x, k, xk, None) {
                tok[0] = tk;
                ntok = 1;
                if let Some((tk2, _)) = self.pop_token_kind(x, k, xk, Some(!from_log))
                    .or_else(|| self.pop_token_kind(x, k, xk, None)) {
                    tok[1] = tk2;
                    ntok = 2;
                }
            }
        } else {
            while (ntok as usize) < 2 {
                let Some(tk) = self.pop_token(x, k, xk) else { break };
                tok[ntok as usize] = tk;
                ntok += 1;
            }
        }
        if cell == NONE && ntok == 0 {
            return self.lk[xk].ph != NONE;
        }
        self.tokens_sent += ntok as u64;
        // fabric checks: one cell per receiver per lane per slot, and the receiver's
        // schedule must expect this sender
        let ebs = &self.plan.subs[sg];
        if self.rx_stamp[y as usize] == t {
            self.collisions += 1;
        } else {
            self.rx_stamp[y as usize] = t;
        }
        if ebs.rx_peer(y, p, j) != x {
            self.collisions += 1;
        }
        let m = ebs.m;
        let k_back = self.plan.koff[sg] + p * (m - 1) + (m - j - 1);
        if cell != NONE {
            self.sends_cells += 1;
            self.packet_hops += 1;
            if !self.guard_ok {
                self.guard_viol += 1;
            }
            let c = self.cells[cell as usize];
            if c.prev != NONE {
                self.release(x, cell);
            }
            let rz = c.r.saturating_sub(1);
            if self.cc.hbh() && y != c.dst {
                self.outstanding.update(key(x, k, c.dst, rz), |v| v + 1);
            }
            let cm = &mut self.cells[cell as usize];
            cm.r = rz;
            cm.r_in = rz;
        } else {
            self.sends_token_only += 1;
            self.ledger.send(false, true);
        }
        let ri = ((t + self.d) % self.ring.len() as u64) as usize;
        self.ring[ri].push(Flight { cell, to: y, from: x, k_back, phase: p as u8, sigma: sg as u8, ntok, tok });
        self.lk[xk].ph != NONE || self.has_token(x, k, xk)
    }

    fn new_cell(&mut self, x: u32, sg: usize, k: u32, y: u32, t: u64) -> u32 {
        let nsub = self.plan.subs.len();
        let li = x as usize * nsub + sg;
        if self.local[li].is_empty() {
            return NONE;
        }
        if self.any_failed && self.knows_dead(x, y, t) {
            return NONE;
        }
        let h = self.plan.subs[sg].h as u8;
        let hbh = self.cc.hbh();
        let e2e = self.e2e();
        let mut pick = usize::MAX;
        let mut best = u64::MAX;
        let (p, _) = self.plan.subs[sg].entry(k - self.plan.koff[sg]);
        let mut pick_r = h;
        for i in 0..self.local[li].len() {
            let f = self.local[li][i] as usize;
            let d = self.f_dst[f];
            if self.svc.pushed_back(x, d, t) {
                continue;
            }
            // flow pausing: an elephant (PIAS aging) takes no spraying hop; it starts a
            // cell only when this timeslot's peer is the destination or the first hop
            // of its direct semi-path (y holds d's coordinate of this phase)
            let direct = self.svc.cfg.flow_pausing && {
                let ebs = &self.plan.subs[sg];
                let elephant = self.f_size[f].saturating_sub(self.f_unsent[f]) >= self.svc.cfg.elephant_bytes;
                if elephant && d != y && ebs.coord(y, p) != ebs.coord(d, p) {
                    self.svc.elephant(self.f_size[f].saturating_sub(self.f_unsent[f]));
                    continue;
                }
                elephant
            };
            let r0 = if direct { 1 } else { h };
            if hbh && d != y && !self.has_credit(x, k, d, r0 - 1, sg as u8) {
                continue;
            }
            if d != y && self.invalid(x, k, d, r0 - 1) {
                continue;
            }
            if e2e && !self.tp_may_send(f, t) {
                continue;
            }
            if self.cc == Cc::Priority {
                if self.f_prio[f] < best {
                    best = self.f_prio[f];
                    pick = i;
                    pick_r = r0;
                }
            } else {
                pick = i;
                pick_r = r0;
                break;
            }
        }
        if pick == usize::MAX {
            return NONE;
        }
        let f = self.local[li][pick] as usize;
        let bytes = self.f_unsent[f].min(self.payload);
        self.f_unsent[f] -= bytes;
        self.unsent_total -= bytes;
        if self.f_unsent[f] == 0 {
            self.local[li].remove(pick);
            if self.local[li].is_empty() {
                self.backlogged -= 1;
            }
        }
        let retx = e2e && self.tp_sent(f, t, self.f_unsent[f] == 0);
        self.ledger.send(retx, false);
        self.new_cells += 1;
        let c = Cell {
            flow: f as u32,
            dst: self.f_dst[f],
            prev: NONE,
            back_k: NONE,
            next: NONE,
            bytes: bytes as u32,
            r: pick_r,
            r_in: pick_r,
            sigma: sg as u8,
            hops: 0,
        };
        match self.free_cells.pop() {
            Some(i) => {
                self.cells[i as usize] = c;
                i
            }
            None => {
                self.cells.push(c);
                (self.cells.len() - 1) as u32
            }
        }
    }
}
