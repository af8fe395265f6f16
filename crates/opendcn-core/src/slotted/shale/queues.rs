//! Per-link queues and pools: each (node, neighbour index)'s PIEO of buckets and token
//! queue, the active lists of the neighbour indices, the cell pool, buffer occupancy, and
//! cells and flights lost.

use super::{key, Cc, Flight, PEntry, ShaleSim, Tok, HI};
use crate::units::NONE;

impl ShaleSim {
    #[inline]
    pub(super) fn is_listed(&self, i: usize) -> bool {
        self.listed[i >> 6] >> (i & 63) & 1 != 0
    }

    #[inline]
    pub(super) fn set_listed(&mut self, i: usize, on: bool) {
        if on {
            self.listed[i >> 6] |= 1 << (i & 63);
        } else {
            self.listed[i >> 6] &= !(1 << (i & 63));
        }
    }

    pub(super) fn list_at(&mut self, x: u32, k: u32) {
        let xk = self.ix(x, k);
        if !self.is_listed(xk) {
            self.set_listed(xk, true);
            self.active[k as usize].push(x);
        }
    }

    /// A forwarded (or dropped) cell leaves node x: hbh bookkeeping and token back.
    pub(super) fn release(&mut self, x: u32, cell: u32) {
        let c = self.cells[cell as usize];
        if !self.cc.hbh() || c.prev == NONE {
            return;
        }
        let hk = key(c.prev, self.rev_k[c.back_k as usize], c.dst, c.r_in);
        self.outstanding.update(hk, |v| if v >> 32 > 0 { v - HI } else { v });
        self.push_token(x, c.back_k, c.dst, c.r_in);
    }

    /// Queue a token (d, r) at x for its neighbour index k.
    pub(super) fn push_token(&mut self, x: u32, k: u32, d: u32, r: u8) {
        let xk = self.ix(x, k);
        let ti = match self.free_toks.pop() {
            Some(i) => i,
            None => {
                self.toks.push(Tok { d: 0, r: 0, next: NONE, seq: 0 });
                (self.toks.len() - 1) as u32
            }
        };
        let seq = if self.bc.on {
            let s = &mut self.bc.seq[x as usize];
            *s = s.wrapping_add(1);
            s.wrapping_sub(1)
        } else {
            0
        };
        self.toks[ti as usize] = Tok { d, r, next: NONE, seq };
        if self.lk[xk].tt == NONE {
            self.lk[xk].th = ti;
        } else {
            let tl = self.lk[xk].tt;
            self.toks[tl as usize].next = ti;
        }
        self.lk[xk].tt = ti;
        self.list_at(x, k);
    }

    pub(super) fn drop_tokens(&mut self, xk: usize) {
        let mut ti = self.lk[xk].th;
        while ti != NONE {
            self.free_toks.push(ti);
            ti = self.toks[ti as usize].next;
        }
        self.lk[xk].th = NONE;
        self.lk[xk].tt = NONE;
    }

    /// Remove and return the first eligible cell queued at x for neighbour index k.
    pub(super) fn extract(&mut self, x: u32, k: u32, y: u32, sg: u8) -> u32 {
        let xk = self.ix(x, k);
        let mut e = self.lk[xk].ph;
        if e == NONE {
            return NONE;
        }
        let hbh = self.cc.hbh();
        if self.cc == Cc::Priority {
            // lowest priority value among all queued cells
            let (mut be, mut bpe, mut bc, mut bpc, mut bp) = (NONE, NONE, NONE, NONE, u64::MAX);
            let mut pe = NONE;
            while e != NONE {
                let en = self.entries[e as usize];
                let mut pc = NONE;
                let mut c = en.head;
                while c != NONE {
                    let cl = &self.cells[c as usize];
                    let prio = self.f_prio[cl.flow as usize];
                    if prio < bp {
                        (be, bpe, bc, bpc, bp) = (e, pe, c, pc, prio);
                    }
                    pc = c;
                    c = cl.next;
                }
                pe = e;
                e = en.next;
            }
            self.unlink_cell(x, k, be, bpe, bc, bpc, false);
            self.dequeued(x, bc);
            return bc;
        }
        let mut pe = NONE;
        while e != NONE {
            let en = self.entries[e as usize];
            let ok = !hbh || en.d() == y || self.has_credit(x, k, en.d(), en.r().saturating_sub(1), sg);
            if ok {
                let c = en.head;
                self.unlink_cell(x, k, e, pe, c, NONE, true);
                self.dequeued(x, c);
                return c;
            }
            pe = e;
            e = en.next;
        }
        NONE
    }

    /// Unlink cell c (after pc in entry e, which follows pe in the PIEO of xk). With
    /// `rotate`, a non-empty entry moves to the tail.
    pub(super) fn unlink_cell(&mut self, x: u32, k: u32, e: u32, pe: u32, c: u32, pc: u32, rotate: bool) {
        let xk = self.ix(x, k);
        let qi = self.qx(x, k);
        let cnext = self.cells[c as usize].next;
        let en = &mut self.entries[e as usize];
        if pc == NONE {
            en.head = cnext;
        } else {
            self.cells[pc as usize].next = cnext;
        }
        let en = &mut self.entries[e as usize];
        if en.tail == c {
            en.tail = pc;
        }
        self.cells[c as usize].next = NONE;
        self.qcells[qi] -= 1;
        let en = self.entries[e as usize];
        let empty = en.head == NONE;
        if empty || (rotate && en.next != NONE) {
            // unlink entry
            if pe == NONE {
                self.lk[xk].ph = en.next;
            } else {
                self.entries[pe as usize].next = en.next;
            }
            if self.lk[xk].pt == e {
                self.lk[xk].pt = pe;
            }
            if empty {
                self.nbuckets[x as usize] -= 1;
                let bk = key(x, 0, en.d(), en.r());
                if self.bucket_ref.decr(bk).expect("bucket refcount") == 0 {
                    self.ndistinct[x as usize] -= 1;
                }
                self.free_entries.push(e);
            } else {
                self.entries[e as usize].next = NONE;
                let tl = self.lk[xk].pt;
                if tl == NONE {
                    self.lk[xk].ph = e;
                } else {
                    self.entries[tl as usize].next = e;
                }
                self.lk[xk].pt = e;
            }
        }
    }

    fn set_buf(&mut self, y: u32, v: u32) {
        let t = self.t;
        let old = self.buf[y as usize] as usize;
        let dt = t - self.buf_last[y as usize];
        if dt > 0 {
            if self.hist.len() <= old {
                self.hist.resize(old + 1, 0);
            }
            self.hist[old] += dt;
        }
        self.buf_last[y as usize] = t;
        self.buf[y as usize] = v;
        self.total_buf = self.total_buf + v as u64 - old as u64;
        self.max_buf = self.max_buf.max(v);
        self.interval_max_buf = self.interval_max_buf.max(v);
    }

    /// Bookkeeping of a cell leaving node x's queues.
    pub(super) fn dequeued(&mut self, x: u32, c: u32) {
        let _ = c;
        let v = self.buf[x as usize] - 1;
        self.set_buf(x, v);
    }

    pub(super) fn enqueue(&mut self, y: u32, k: u32, c: u32) {
        let yk = self.ix(y, k);
        let (d, r) = {
            let cl = &self.cells[c as usize];
            (cl.dst, cl.r)
        };
        let mut e = self.lk[yk].ph;
        let dr = PEntry::new(d, r, NONE, NONE, NONE).dr;
        let mut len = 0;
        while e != NONE {
            let en = self.entries[e as usize];
            if en.dr == dr {
                break;
            }
            e = en.next;
            len += 1;
        }
        if e == NONE {
            let ne = PEntry::new(d, r, c, c, NONE);
            e = match self.free_entries.pop() {
                Some(i) => {
                    self.entries[i as usize] = ne;
                    i
                }
                None => {
                    self.entries.push(ne);
                    (self.entries.len() - 1) as u32
                }
            };
            let tl = self.lk[yk].pt;
            if tl == NONE {
                self.lk[yk].ph = e;
            } else {
                self.entries[tl as usize].next = e;
            }
            self.lk[yk].pt = e;
            // the whole PIEO was walked: it now holds len + 1 buckets
            self.max_pieo = self.max_pieo.max(len + 1);
            self.nbuckets[y as usize] += 1;
            self.max_buckets = self.max_buckets.max(self.nbuckets[y as usize]);
            if self.bucket_ref.incr(key(y, 0, d, r)) == 1 {
                self.ndistinct[y as usize] += 1;
                self.max_distinct = self.max_distinct.max(self.ndistinct[y as usize]);
            }
        } else {
            let tl = self.entries[e as usize].tail;
            self.cells[tl as usize].next = c;
            self.entries[e as usize].tail = c;
        }
        self.cells[c as usize].next = NONE;
        let qi = self.qx(y, k);
        self.qcells[qi] += 1;
        let v = self.buf[y as usize] + 1;
        self.set_buf(y, v);
        self.list_at(y, k);
    }

    pub(super) fn free_cell(&mut self, c: u32) {
        self.cells[c as usize].bytes = 0;
        self.cells[c as usize].flow = NONE;
        self.free_cells.push(c);
    }

    pub(super) fn drop_cell(&mut self, at: u32, c: u32, reason: usize) {
        self.release(at, c);
        let b = self.cells[c as usize].bytes as u64;
        self.ledger.drop(reason, b, true);
        self.free_cell(c);
    }

    /// Flow data not yet cut into cells is lost (its source failed): payload, no cell.
    pub(super) fn lose_unsent(&mut self, reason: usize, bytes: u64) {
        self.ledger.lose(reason, bytes);
    }

    /// Flight fl is lost (failed link or receiver): its cell, or the token-only cell.
    pub(super) fn lose_flight(&mut self, fl: &Flight, reason: usize) {
        if fl.cell != NONE {
            let b = self.cells[fl.cell as usize].bytes as u64;
            self.ledger.drop(reason, b, true);
            self.free_cell(fl.cell);
        } else {
            self.ledger.drop(reason, 0, true);
        }
    }
}
