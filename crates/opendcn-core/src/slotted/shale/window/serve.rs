//! One worker serving its range of nodes through a window, node by node: a node's new
//! flows, arrivals and turns to send (event by event with one sub-schedule), its PIEO of
//! buckets, tokens and credits, the receipt and routing of its cells.

use super::super::{PEntry, Tok};
use super::{alloc, bkey, ck, cnt_decr, cnt_get, cnt_incr, next_bit, next_bit_circ, Fl, In, LFlow, Node, Out, QCell, Srv, PF_STEP};
use crate::rng::mix64;
use crate::units::NONE;

impl Srv<'_> {
    /// Nodes x0.. (`nodes`) through timeslots a..b, in node order.
    pub(super) fn serve_range(&mut self, nodes: &mut [Node], x0: u32, a: u64, b: u64) {
        let kk = self.kk as usize;
        for i in 0..nodes.len() {
            let x = x0 + i as u32;
            let xu = x as usize;
            self.w.pf.clear();
            if let Some(next) = nodes.get(i + 1) {
                // the next node's arena, link records and queue lengths arrive while
                // this one is served
                next.queue_prefetch(&mut self.w.pf);
                let r = (xu + 1) * kk - self.ko..(xu + 2) * kk - self.ko;
                self.w.pf.add(&self.lk[r.clone()]);
                self.w.pf.add(&self.qcells[r]);
            }
            let nd = &mut nodes[i];
            let (s0, s1) = (self.starts_off[xu], self.starts_off[xu + 1]);
            if !(nd.idle() && self.inb_off[xu] == self.inb_off[xu + 1] && s0 == s1) {
                self.serve(nd, x, a, b);
            }
            self.w.pf.finish();
        }
    }

    #[inline]
    fn has_credit(&self, nd: &Node, xk: usize, k: u32, d: u32, rz: u8, sigma: u8) -> bool {
        cnt_get(&self.lk[xk - self.ko].cr, &nd.credit, ck(k, d, rz), bkey(d, rz)) < self.budget(sigma, rz)
    }

    /// Node x through timeslots a..b: new flows, the arrival, then its turn to send.
    fn serve(&mut self, nd: &mut Node, x: u32, a: u64, b: u64) {
        let mut sp = self.starts_off[x as usize] as usize;
        let se = self.starts_off[x as usize + 1] as usize;
        let xbase = x as usize * self.kk as usize;
        let mut xc = [[0u32; 4]; 2];
        for (sg, e) in self.plan.subs.iter().enumerate() {
            let h = e.h as usize;
            xc[sg][..h].copy_from_slice(&self.coords[sg][x as usize * h..(x as usize + 1) * h]);
        }
        // this node's arrivals in a..b, by timeslot
        self.w.amask.iter_mut().for_each(|w| *w = 0);
        let first = a - self.cur_w * self.d;
        let (i0, i1) = (self.inb_off[x as usize] as usize, self.inb_off[x as usize + 1] as usize);
        for e in i0..i1 {
            let In { at, fl } = self.inb[e];
            let at = at as u64;
            if at >= first && at < first + (b - a) {
                let i = (at - first) as usize;
                if fl.cell != 0 && fl.dst == x {
                    // delivered here during this serve: its flow's record
                    self.fr.prefetch(fl.flow as usize);
                }
                if self.w.slots[i].vacant() {
                    self.w.slots[i] = fl;
                    self.w.amask[i >> 6] |= 1 << (i & 63);
                } else {
                    self.w.collisions += 1;
                    self.w.extra.push((i, fl));
                }
            }
        }
        if self.plan.subs.len() == 1 && self.w.extra.is_empty() {
            self.serve_sparse(nd, x, &xc, a, b, sp, se);
            return;
        }
        for t in a..b {
            self.w.pf.step(PF_STEP);
            let i = (t - a) as usize;
            if self.w_sample[i] {
                self.w.win[i].lvl = self.w.win[i].lvl.max(nd.buf);
            }
            while sp < se && self.f_start[self.starts[sp] as usize] <= t {
                self.activate(nd, self.starts[sp] as usize, i);
                sp += 1;
            }
            let fl = self.w.slots[i];
            if !fl.vacant() {
                self.w.slots[i] = Fl::default();
                self.receive(nd, x, &xc, fl, t, i);
            }
            if !self.w.extra.is_empty() {
                self.receive_extra(nd, x, &xc, t, i);
            }
            let (sg, _, _, k) = self.w_slot[i];
            let l = self.lk[xbase + k as usize - self.ko];
            if l.ph != NONE || l.th != NONE || !nd.local[sg as usize].is_empty() {
                self.visit(nd, x, &xc, t, i);
            }
        }
    }

    /// [`Ctx::serve`] for one sub-schedule (neighbour index = timeslot mod epoch): jump
    /// from event to event — an arrival, a new flow, a timeslot whose neighbour has cells
    /// or tokens queued (the next set bit of the node's link bits), or every timeslot
    /// while the node has unsent flow data — instead of stepping through the window.
    #[allow(clippy::too_many_arguments)]
    fn serve_sparse(&mut self, nd: &mut Node, x: u32, xc: &[[u32; 4]; 2], a: u64, b: u64, mut sp: usize, se: usize) {
        let w = (b - a) as usize;
        let kk = self.kk as usize;
        let lb = x as usize * self.lw;
        let mut i = 0;
        let mut si = 0;
        while i < w {
            self.w.pf.step(PF_STEP);
            // with unsent data the node sends in every timeslot
            let inext = if !nd.local[0].is_empty() {
                i
            } else {
                let ia = next_bit(&self.w.amask, i, w);
                let k0 = self.w_slot[i].3 as usize;
                let iv = next_bit_circ(&self.lbits[lb - self.bo..lb - self.bo + self.lw], k0, kk).map_or(w, |dk| i + dk);
                let is = if sp < se { (self.f_start[self.starts[sp] as usize] - a) as usize } else { w };
                ia.min(iv).min(is)
            };
            // sample timeslots up to the next event: the node's level is unchanged
            while si < self.w_samples.len() && self.w_samples[si] <= inext.min(w - 1) {
                let s = self.w_samples[si];
                if s >= i {
                    self.w.win[s].lvl = self.w.win[s].lvl.max(nd.buf);
                }
                si += 1;
            }
            if inext >= w {
                break;
            }
            i = inext;
            let t = a + i as u64;
            while sp < se && self.f_start[self.starts[sp] as usize] <= t {
                self.activate(nd, self.starts[sp] as usize, i);
                sp += 1;
            }
            if self.w.amask[i >> 6] >> (i & 63) & 1 != 0 {
                self.w.amask[i >> 6] &= !(1 << (i & 63));
                let fl = self.w.slots[i];
                self.w.slots[i] = Fl::default();
                self.receive(nd, x, xc, fl, t, i);
            }
            let (sg, _, _, k) = self.w_slot[i];
            let l = self.lk[x as usize * kk + k as usize - self.ko];
            if l.ph != NONE || l.th != NONE || !nd.local[sg as usize].is_empty() {
                self.visit(nd, x, xc, t, i);
            }
            i += 1;
        }
    }

    #[inline]
    fn set_lbit(&mut self, x: u32, k: u32) {
        let b = x as usize * self.lw * 64 + k as usize;
        self.lbits[(b >> 6) - self.bo] |= 1 << (b & 63);
    }

    fn receive_extra(&mut self, nd: &mut Node, x: u32, xc: &[[u32; 4]; 2], t: u64, i: usize) {
        let mut j = 0;
        while j < self.w.extra.len() {
            if self.w.extra[j].0 == i {
                let fl = self.w.extra.remove(j).1;
                self.receive(nd, x, xc, fl, t, i);
            } else {
                j += 1;
            }
        }
    }

    fn activate(&mut self, nd: &mut Node, f: usize, i: usize) {
        let size = self.f_size[f];
        self.w.lg.offer(size);
        self.w.flows_started += 1;
        let sg = self.f_sigma[f] as usize;
        if nd.local[sg].is_empty() {
            self.w.win[i].d_backlog += 1;
        }
        nd.local[sg].push(LFlow { flow: f as u32, dst: self.f_dst[f], unsent: size });
        self.w.win[i].d_unsent += size as i64;
    }

    fn set_buf(&mut self, nd: &mut Node, v: u32, t: u64, i: usize) {
        let old = nd.buf as usize;
        let dt = t - nd.buf_last;
        if dt > 0 {
            if self.w.hist.len() <= old {
                self.w.hist.resize(old + 1, 0);
            }
            self.w.hist[old] += dt;
        }
        nd.buf_last = t;
        nd.buf = v;
        let a = &mut self.w.win[i];
        a.d_buf += v as i64 - old as i64;
        a.mx = a.mx.max(v);
        self.w.max_buf = self.w.max_buf.max(v);
    }

    /// Node x's turn in timeslot t: the first eligible queued cell for this timeslot's
    /// neighbour, else a new cell, and up to two tokens.
    fn visit(&mut self, nd: &mut Node, x: u32, xc: &[[u32; 4]; 2], t: u64, i: usize) {
        self.w.events += 1;
        let (sg, p, j, k) = self.w_slot[i];
        let ebs = &self.plan.subs[sg as usize];
        // the peer differs from x in coordinate p only: c → c + j (mod m)
        let (m, pw, c) = (ebs.m, self.pow[sg as usize][p as usize], xc[sg as usize][p as usize]);
        let nc = if c + j >= m { c + j - m } else { c + j };
        let y = x - c * pw + nc * pw;
        let xk = x as usize * self.kk as usize + k as usize;
        let mut cell = self.extract(nd, xk, k, y, sg, t, i);
        if cell.is_none() {
            cell = self.new_cell(nd, xk, sg, k, y, i);
        }
        let mut tok = [0u32; 2];
        let mut ntok = 0u8;
        while (ntok as usize) < 2 && self.lk[xk - self.ko].th != NONE {
            let ti = self.lk[xk - self.ko].th;
            let tk = nd.toks[ti as usize];
            self.lk[xk - self.ko].th = tk.next;
            if tk.next == NONE {
                self.lk[xk - self.ko].tt = NONE;
            }
            nd.free_toks.push(ti);
            nd.ntoks -= 1;
            tok[ntok as usize] = tk.d | (tk.r as u32) << 24;
            ntok += 1;
        }
        if cell.is_none() && ntok == 0 {
            return;
        }
        self.w.tokens_sent += ntok as u64;
        // fabric check: the receiver's schedule expects x (y's coordinate back by j)
        let back = if nc >= j { nc - j } else { nc + m - j };
        if y - nc * pw + back * pw != x {
            self.w.collisions += 1;
        }
        let mut fl = Fl { ntok, tok, ..Fl::default() };
        if let Some(c) = cell {
            self.w.sends_cells += 1;
            self.w.packet_hops += 1;
            self.w.win[i].hops += 1;
            if !self.guard_ok {
                self.w.guard_viol += 1;
            }
            if c.back_k != NONE && self.hbh() {
                let bx = x as usize * self.kk as usize + c.back_k as usize;
                cnt_decr(&mut self.lk[bx - self.ko].ho, &mut nd.hold, ck(c.back_k, c.dst, c.r_in), bkey(c.dst, c.r_in));
                self.push_token(nd, x, c.back_k, c.dst, c.r_in);
            }
            let rz = c.r.saturating_sub(1);
            if self.hbh() && y != c.dst {
                cnt_incr(&mut self.lk[xk - self.ko].cr, &mut nd.credit, ck(k, c.dst, rz), bkey(c.dst, rz));
            }
            fl = Fl { flow: c.flow, dst: c.dst, bytes: c.bytes, tok, r: rz, hops: c.hops, ntok, cell: 1 };
        } else {
            self.w.sends_token_only += 1;
            self.w.lg.send(false, true);
        }
        // arrives at t + D: as far into the next window as t is into this one
        self.w.out.push(Out { y, at: (t - self.cur_w * self.d) as u32, fl });
        let l = self.lk[xk - self.ko];
        if l.ph == NONE && l.th == NONE {
            let b = x as usize * self.lw * 64 + k as usize;
            self.lbits[(b >> 6) - self.bo] &= !(1 << (b & 63));
        }
    }

    fn push_token(&mut self, nd: &mut Node, x: u32, k: u32, d: u32, r: u8) {
        let xk = x as usize * self.kk as usize + k as usize;
        let tk = Tok { d, r, next: NONE, seq: 0 };
        let ti = alloc(&mut nd.toks, &mut nd.free_toks, tk);
        let l = &mut self.lk[xk - self.ko];
        if l.tt == NONE {
            l.th = ti;
        } else {
            nd.toks[l.tt as usize].next = ti;
        }
        l.tt = ti;
        nd.ntoks += 1;
        self.set_lbit(x, k);
    }

    /// Remove and return the first queued cell for neighbour index k whose bucket has a
    /// credit (round robin among buckets).
    #[allow(clippy::too_many_arguments)]
    fn extract(&mut self, nd: &mut Node, xk: usize, k: u32, y: u32, sg: u8, t: u64, i: usize) -> Option<QCell> {
        let hbh = self.hbh();
        let mut e = self.lk[xk - self.ko].ph;
        let mut pe = NONE;
        while e != NONE {
            let en = nd.entries[e as usize];
            if !hbh || en.d() == y || self.has_credit(nd, xk, k, en.d(), en.r().saturating_sub(1), sg) {
                let c = en.head;
                let cell = nd.cells[c as usize];
                self.unlink(nd, xk, e, pe, c, cell.next);
                nd.free_cells.push(c);
                let v = nd.buf - 1;
                self.set_buf(nd, v, t, i);
                return Some(cell);
            }
            pe = e;
            e = en.next;
        }
        None
    }

    /// Unlink head cell c of entry e (after pe in the PIEO of xk); a bucket that still
    /// holds cells moves to the tail.
    fn unlink(&mut self, nd: &mut Node, xk: usize, e: u32, pe: u32, c: u32, cnext: u32) {
        let en = &mut nd.entries[e as usize];
        en.head = cnext;
        if en.tail == c {
            en.tail = NONE;
        }
        self.qcells[xk - self.ko] -= 1;
        let en = *en;
        let empty = en.head == NONE;
        if empty || en.next != NONE {
            let l = &mut self.lk[xk - self.ko];
            if pe == NONE {
                l.ph = en.next;
            } else {
                nd.entries[pe as usize].next = en.next;
            }
            if l.pt == e {
                l.pt = pe;
            }
            if empty {
                nd.nbuckets -= 1;
                nd.free_entries.push(e);
            } else {
                nd.entries[e as usize].next = NONE;
                let l = &mut self.lk[xk - self.ko];
                if l.pt == NONE {
                    l.ph = e;
                } else {
                    nd.entries[l.pt as usize].next = e;
                }
                l.pt = e;
            }
        }
    }

    /// A new cell of the first local flow (of this sub-schedule) with a first-hop credit.
    fn new_cell(&mut self, nd: &mut Node, xk: usize, sg: u8, k: u32, y: u32, i: usize) -> Option<QCell> {
        let li = sg as usize;
        if nd.local[li].is_empty() {
            return None;
        }
        let h = self.plan.subs[li].h as u8;
        let hbh = self.hbh();
        let pick = nd.local[li].iter().position(|lf| !hbh || lf.dst == y || self.has_credit(nd, xk, k, lf.dst, h - 1, sg))?;
        let lf = &mut nd.local[li][pick];
        let bytes = lf.unsent.min(self.payload);
        lf.unsent -= bytes;
        let (flow, dst, left) = (lf.flow, lf.dst, lf.unsent);
        let a = &mut self.w.win[i];
        a.d_unsent -= bytes as i64;
        if left == 0 {
            nd.local[li].remove(pick);
            if nd.local[li].is_empty() {
                a.d_backlog -= 1;
            }
        }
        self.w.new_cells += 1;
        self.w.lg.send(false, false);
        a.new += 1;
        a.d_live += 1;
        Some(QCell { flow, dst, bytes: bytes as u32, back_k: NONE, next: NONE, r: h, r_in: h, sigma: sg, hops: 0 })
    }

    /// Flight fl reaches node y in timeslot t: tokens return credits; the cell is
    /// delivered or routed to its next queue.
    fn receive(&mut self, nd: &mut Node, y: u32, yc: &[[u32; 4]; 2], fl: Fl, t: u64, i: usize) {
        self.w.events += 1;
        let (sg, p, j, _) = self.w_src[i];
        let m = self.plan.subs[sg as usize].m;
        let k_back = self.plan.koff[sg as usize] + p * (m - 1) + (m - j - 1);
        let yb = y as usize * self.kk as usize + k_back as usize;
        if self.hbh() {
            for &tk in &fl.tok[..fl.ntok as usize] {
                let (d, r) = (tk & 0xff_ffff, (tk >> 24) as u8);
                cnt_decr(&mut self.lk[yb - self.ko].cr, &mut nd.credit, ck(k_back, d, r), bkey(d, r));
            }
        }
        if fl.cell == 0 {
            // a token-only cell reached its neighbour
            self.w.lg.deliver(0, 0);
            return;
        }
        let hops = fl.hops + 1;
        if fl.dst == y {
            self.w.lg.deliver(fl.bytes as u64, 0);
            let a = &mut self.w.win[i];
            a.deliv += fl.bytes as u64;
            a.d_live -= 1;
            // SAFETY: a flow's record is written only where the flow is delivered, by the
            // worker serving its destination, and read only after the window
            let f = unsafe { self.fr.get(fl.flow as usize) };
            f.deliv += fl.bytes as u64;
            f.hops = f.hops.max(hops as u32);
            if f.deliv == f.size {
                f.finish = (t - self.d) * self.tau + self.slot_ps + self.prop_ps;
                self.w.flows_completed += 1;
                self.w.hash.record(t, (fl.flow as u64) << 24);
            }
            return;
        }
        if self.hbh() {
            let held = cnt_incr(&mut self.lk[yb - self.ko].ho, &mut nd.hold, ck(k_back, fl.dst, fl.r), bkey(fl.dst, fl.r));
            if held > self.budget(sg, fl.r) {
                self.w.hbh_viol += 1;
            }
        }
        let c = QCell { flow: fl.flow, dst: fl.dst, bytes: fl.bytes, back_k: k_back, next: NONE, r: fl.r, r_in: fl.r, sigma: sg, hops };
        // next hop: a spraying hop in the phase after p, or the direct semi-path
        let ebs = &self.plan.subs[sg as usize];
        let (h, koff) = (ebs.h, self.plan.koff[sg as usize]);
        let kz = if c.r > 0 {
            let q = if p + 1 == h { 0 } else { p + 1 };
            let kbase = koff + q * (m - 1);
            let z = mix64(self.spray_seed ^ ((y as u64) << 40 | nd.draws));
            nd.draws += 1;
            let start = (((z >> 32) * (m - 1) as u64) >> 32) as u32;
            let mut jj = start;
            if self.spray_short {
                let row = y as usize * self.kk as usize + kbase as usize;
                let mut best = u32::MAX;
                for s in 0..m - 1 {
                    let o = if start + s >= m - 1 { start + s - (m - 1) } else { start + s };
                    let qc = self.qcells[row + o as usize - self.ko];
                    if qc < best {
                        best = qc;
                        jj = o;
                        if qc == 0 {
                            break;
                        }
                    }
                }
            }
            kbase + jj
        } else {
            let mut q = p;
            loop {
                q = if q + 1 == h { 0 } else { q + 1 };
                let (cy, cd) = (yc[sg as usize][q as usize], self.coord(sg as usize, c.dst, q));
                if cy != cd {
                    break koff + q * (m - 1) + if cd > cy { cd - cy } else { cd + m - cy } - 1;
                }
            }
        };
        self.enqueue(nd, y, kz, c, t, i);
    }

    /// The distinct buckets (destination, remaining sprays) queued at node y.
    fn distinct_buckets(&mut self, nd: &Node, y: u32) -> u32 {
        let mut seen = std::mem::take(&mut self.w.scratch);
        seen.clear();
        let kk = self.kk as usize;
        for l in &self.lk[y as usize * kk - self.ko..(y as usize + 1) * kk - self.ko] {
            let mut e = l.ph;
            while e != NONE {
                let en = &nd.entries[e as usize];
                seen.push(en.dr);
                e = en.next;
            }
        }
        seen.sort_unstable();
        seen.dedup();
        let n = seen.len() as u32;
        self.w.scratch = seen;
        n
    }

    fn enqueue(&mut self, nd: &mut Node, y: u32, k: u32, c: QCell, t: u64, i: usize) {
        let yk = y as usize * self.kk as usize + k as usize;
        let ci = alloc(&mut nd.cells, &mut nd.free_cells, c);
        let dr = PEntry::new(c.dst, c.r, NONE, NONE, NONE).dr;
        let mut e = self.lk[yk - self.ko].ph;
        let mut len = 0;
        while e != NONE {
            let en = nd.entries[e as usize];
            if en.dr == dr {
                break;
            }
            e = en.next;
            len += 1;
        }
        if e == NONE {
            let ne = PEntry::new(c.dst, c.r, ci, ci, NONE);
            e = alloc(&mut nd.entries, &mut nd.free_entries, ne);
            let l = &mut self.lk[yk - self.ko];
            if l.pt == NONE {
                l.ph = e;
            } else {
                nd.entries[l.pt as usize].next = e;
            }
            l.pt = e;
            self.w.max_pieo = self.w.max_pieo.max(len + 1);
            nd.nbuckets += 1;
            self.w.max_buckets = self.w.max_buckets.max(nd.nbuckets);
            // distinct buckets ≤ bucket queues: only a node with more queues than the
            // largest distinct count so far can raise it, so only then are its counted
            if nd.nbuckets > self.w.max_distinct {
                let n = self.distinct_buckets(nd, y);
                self.w.max_distinct = self.w.max_distinct.max(n);
            }
        } else {
            let tl = nd.entries[e as usize].tail;
            nd.cells[tl as usize].next = ci;
            nd.entries[e as usize].tail = ci;
        }
        self.qcells[yk - self.ko] += 1;
        self.set_lbit(y, k);
        let v = nd.buf + 1;
        self.set_buf(nd, v, t, i);
    }
}
