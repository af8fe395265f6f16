//! Hop-by-hop credit table, per node x and neighbour index k (neighbour y) and bucket
//! ⟨d, r⟩: `out` = cells x sent to y for bucket ⟨d, r⟩ at y whose token has not come
//! back (the sender's credit), `held` = cells of bucket ⟨d, r⟩ that x holds, received
//! from y (the receiver's side, for the invariant check). Both live in x's own line for
//! k, so a hop touches only the lines of the two nodes it joins: one 64-byte line of up
//! to `CW` buckets, found by a short scan; lines that need more buckets spill into a map.
//! A link rarely has more buckets in flight than a round trip holds cells, so nearly
//! every access is a single cache line (this replaces two hash maps keyed by
//! (node, k, d, r)).

use super::{key, Map};

pub(super) const CW: usize = 7;

#[derive(Clone, Copy, Default)]
struct Cred {
    /// (d << 2 | r) + 1; 0 = free.
    tag: u32,
    out: u16,
    held: u16,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub(super) struct Line {
    e: [Cred; CW],
    /// Buckets of this link in the spill map.
    spilled: u32,
}

/// The credit table (see the module doc).
#[derive(Default)]
pub(super) struct Credits {
    lines: Vec<Line>,
    spill_out: Map,
    spill_held: Map,
    /// (link, bucket) pairs with outstanding cells.
    pub entries: u64,
}

#[inline]
fn tag(d: u32, r: u8) -> u32 {
    ((d << 2) | r as u32) + 1
}

impl Credits {
    pub fn new(links: usize) -> Self {
        Credits { lines: vec![Line::default(); links], ..Default::default() }
    }

    /// Outstanding cells of bucket ⟨d, r⟩ on link `li` (= ix(x, k)).
    #[inline]
    pub fn out(&self, li: usize, x: u32, k: u32, d: u32, r: u8) -> u32 {
        let l = &self.lines[li];
        let tg = tag(d, r);
        for c in &l.e {
            if c.tag == tg {
                return c.out as u32;
            }
        }
        if l.spilled > 0 {
            return self.spill_out.get(&key(x, k, d, r)).copied().unwrap_or(0);
        }
        0
    }

    /// Add `dout` to the outstanding and `dheld` to the held count (never below 0);
    /// returns the new held count.
    pub fn add(&mut self, li: usize, x: u32, k: u32, d: u32, r: u8, dout: i32, dheld: i32) -> u32 {
        let tg = tag(d, r);
        let l = &mut self.lines[li];
        let mut free = usize::MAX;
        for i in 0..CW {
            let c = &mut l.e[i];
            if c.tag == tg {
                let was_out = c.out;
                c.out = (c.out as i32 + dout).max(0) as u16;
                c.held = (c.held as i32 + dheld).max(0) as u16;
                let held = c.held as u32;
                match (was_out > 0, c.out > 0) {
                    (false, true) => self.entries += 1,
                    (true, false) => self.entries -= 1,
                    _ => {}
                }
                if c.out == 0 && c.held == 0 {
                    c.tag = 0;
                }
                return held;
            }
            if c.tag == 0 && free == usize::MAX {
                free = i;
            }
        }
        let kk = key(x, k, d, r);
        if l.spilled > 0 {
            let so = self.spill_out.get(&kk).copied();
            let sh = self.spill_held.get(&kk).copied();
            if so.is_some() || sh.is_some() {
                let (o0, h0) = (so.unwrap_or(0), sh.unwrap_or(0));
                let o = (o0 as i32 + dout).max(0) as u32;
                let h = (h0 as i32 + dheld).max(0) as u32;
                match (o0 > 0, o > 0) {
                    (false, true) => self.entries += 1,
                    (true, false) => self.entries -= 1,
                    _ => {}
                }
                if o > 0 {
                    self.spill_out.insert(kk, o);
                } else {
                    self.spill_out.remove(&kk);
                }
                if h > 0 {
                    self.spill_held.insert(kk, h);
                } else {
                    self.spill_held.remove(&kk);
                }
                if o == 0 && h == 0 {
                    l.spilled -= 1;
                }
                return h;
            }
        }
        // a new bucket on this link
        let o = dout.max(0) as u32;
        let h = dheld.max(0) as u32;
        if o == 0 && h == 0 {
            return 0;
        }
        if o > 0 {
            self.entries += 1;
        }
        if free != usize::MAX && o <= u16::MAX as u32 && h <= u16::MAX as u32 {
            l.e[free] = Cred { tag: tg, out: o as u16, held: h as u16 };
        } else {
            l.spilled += 1;
            if o > 0 {
                self.spill_out.insert(kk, o);
            }
            if h > 0 {
                self.spill_held.insert(kk, h);
            }
        }
        h
    }
}
