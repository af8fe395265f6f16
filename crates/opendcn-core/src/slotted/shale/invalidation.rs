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

//! * State (DECIDE, a simulator representation that keeps the protocol's behaviour): what a
//!   node received and sent is one bitmap of its neighbour indices per (node, destination,
//!   sprays left), not one entry per neighbour; a token sent to every neighbour of a phase
//!   is one entry in that phase's broadcast log, which each link reads through a cursor,
//!   merged in order with the link's own token queue by a per-node sequence number. At
//!   10 000 nodes one failed destination otherwise costs about 10^6 entries.

use super::{key, Map, ShaleSim, NONE};

/// Flag bits of an invalidation / re-validation token in the token's index byte.
pub(super) const INV: u8 = 0x40;
pub(super) const REV: u8 = 0x20;

impl ShaleSim {
    /// Has node z been told not to send bucket ⟨j, n⟩ cells to its neighbour index k?
    #[inline]
    pub(super) fn invalid(&self, z: u32, k: u32, j: u32, n: u8) -> bool {
        !self.inval.is_empty(RECV) && self.inval.contains(key(z, 0, j, n), k, RECV)
    }

    /// Undo every invalidation z sent about destination j: re-validation tokens, one
    /// broadcast per (n, phase) over the neighbours that were sent {j, n}.
    fn revalidate(&mut self, z: u32, j: u32) {
        let hmax = self.hmax;
        let mut ks = Vec::new();
        let mut sel = vec![0u64; self.bc.words];
        for n in 0..hmax {
            ks.clear();
            self.inval.take(key(z, 0, j, n), SENT, &mut ks);
            let mut i = 0;
            while i < ks.len() {
                let g = self.bc.k_g[ks[i] as usize];
                let k0 = ks[i] - self.bc.k_bit[ks[i] as usize];
                sel.fill(0);
                while i < ks.len() && self.bc.k_g[ks[i] as usize] == g {
                    let b = self.bc.k_bit[ks[i] as usize];
                    sel[(b >> 6) as usize] |= 1 << (b & 63);
                    self.revalidation_tokens += 1;
                    i += 1;
                }
                self.push_bcast(z, k0, j, n | INV | REV, &sel);
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
    /// ones z knows are gone, and the ones it already sent {j, n} to), once each.
    fn inval_phase(&mut self, z: u32, sg: usize, p: u32, j: u32, n: u8, t: u64) {
        let m = self.plan.subs[sg].m;
        let base = self.plan.koff[sg] + p * (m - 1);
        let kz = key(z, 0, j, n);
        let mut sel = vec![0u64; self.bc.words];
        let mut count = 0;
        let slot = self.inval.slot(kz);
        let first = self.inval.half_empty(slot, SENT);
        for jj in 1..m {
            let y = self.plan.subs[sg].tx_peer(z, p, jj);
            if !self.knows_dead(z, y, t) && self.inval.set_at(slot, base + jj - 1, SENT) {
                sel[((jj - 1) >> 6) as usize] |= 1 << ((jj - 1) & 63);
                count += 1;
            }
        }
        if count == 0 {
            self.inval.release_if_empty(kz, slot);
            return;
        }
        self.inval_tokens += count;
        // z's first invalidation about j (since its last re-validation of j)?
        if first && (0..self.hmax).all(|m| m == n || !self.inval.any(key(z, 0, j, m), SENT)) {
            self.sent_dsts.entry(z).or_default().push(j);
        }
        self.push_bcast(z, base, j, n | INV, &sel);
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
        if self.inval.remove(key(z, 0, j, n), k, RECV) {
            self.revalidate(z, j);
        }
    }

    /// z received {j, n} from its neighbour index k (sub-schedule sg).
    pub(super) fn on_inval(&mut self, z: u32, k: u32, j: u32, n: u8, sg: usize, t: u64) {
        if !self.inval.insert(key(z, 0, j, n), k, RECV) {
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

/// Sets of a node's neighbour indices per (node, destination, sprays left), two per key:
/// the neighbours it received {j, n} from ([`RECV`]) and the ones it sent {j, n} to
/// ([`SENT`]). One bitmap over the node's neighbour indices per key and half, in one slot
/// allocated when the key's first bit is set and freed when its last is cleared.
#[derive(Default)]
pub(super) struct NbrSets {
    /// key(z, 0, j, n) -> slot in `pool`.
    map: Map,
    words: usize,
    pool: Vec<u64>,
    free: Vec<u32>,
    bits: [u64; 2],
}

/// Halves of an [`NbrSets`] slot.
pub(super) const RECV: usize = 0;
pub(super) const SENT: usize = 1;

impl NbrSets {
    pub(super) fn new(neighbours: u32) -> NbrSets {
        NbrSets { words: (neighbours as usize).div_ceil(64).max(1), ..Default::default() }
    }

    /// Bits set in one half over all keys.
    pub(super) fn len(&self, half: usize) -> u64 {
        self.bits[half]
    }

    pub(super) fn is_empty(&self, half: usize) -> bool {
        self.bits[half] == 0
    }

    /// Keys with at least one bit set.
    #[cfg(test)]
    pub(super) fn keys(&self) -> usize {
        self.map.len()
    }

    #[inline]
    fn word(&self, s: usize, half: usize, k: u32) -> usize {
        (2 * s + half) * self.words + (k >> 6) as usize
    }

    #[inline]
    pub(super) fn contains(&self, key: u64, k: u32, half: usize) -> bool {
        match self.map.get(key) {
            Some(s) => self.pool[self.word(s as usize, half, k)] >> (k & 63) & 1 != 0,
            None => false,
        }
    }

    /// Whether key has a bit set in `half`.
    pub(super) fn any(&self, key: u64, half: usize) -> bool {
        match self.map.get(key) {
            Some(s) => {
                let a = (2 * s as usize + half) * self.words;
                self.pool[a..a + self.words].iter().any(|&w| w != 0)
            }
            None => false,
        }
    }

    /// Set bit k of key's `half`; whether it was clear.
    pub(super) fn insert(&mut self, key: u64, k: u32, half: usize) -> bool {
        let s = self.slot(key);
        self.set_at(s, k, half)
    }

    /// The slot of key, allocated (empty) if it has none: to set several bits with one
    /// lookup (`set_at`), then `release_if_empty`.
    pub(super) fn slot(&mut self, key: u64) -> usize {
        match self.map.get(key) {
            Some(s) => s as usize,
            None => {
                let s = match self.free.pop() {
                    Some(s) => s as usize,
                    None => {
                        self.pool.resize(self.pool.len() + 2 * self.words, 0);
                        self.pool.len() / (2 * self.words) - 1
                    }
                };
                self.map.insert(key, s as u64);
                s
            }
        }
    }

    /// Whether slot s has no bit set in `half`.
    pub(super) fn half_empty(&self, s: usize, half: usize) -> bool {
        let a = (2 * s + half) * self.words;
        self.pool[a..a + self.words].iter().all(|&w| w == 0)
    }

    /// Free slot s of key if no bit of it is set.
    pub(super) fn release_if_empty(&mut self, key: u64, s: usize) {
        if self.pool[2 * s * self.words..2 * (s + 1) * self.words].iter().all(|&w| w == 0) {
            self.map.remove(key);
            self.free.push(s as u32);
        }
    }

    /// Set bit k of `half` in slot s; whether it was clear.
    #[inline]
    pub(super) fn set_at(&mut self, s: usize, k: u32, half: usize) -> bool {
        let i = self.word(s, half, k);
        let w = &mut self.pool[i];
        let b = 1u64 << (k & 63);
        if *w & b != 0 {
            return false;
        }
        *w |= b;
        self.bits[half] += 1;
        true
    }

    /// Clear bit k of key's `half`; whether it was set.
    pub(super) fn remove(&mut self, key: u64, k: u32, half: usize) -> bool {
        let Some(s) = self.map.get(key) else { return false };
        let s = s as usize;
        let i = self.word(s, half, k);
        let b = 1u64 << (k & 63);
        if self.pool[i] & b == 0 {
            return false;
        }
        self.pool[i] &= !b;
        self.bits[half] -= 1;
        self.release_if_empty(key, s);
        true
    }

    /// Clear key's `half`, appending its set bits (ascending) to `out`.
    pub(super) fn take(&mut self, key: u64, half: usize, out: &mut Vec<u32>) {
        let Some(s) = self.map.get(key) else { return };
        let s = s as usize;
        let a = (2 * s + half) * self.words;
        for (i, w) in self.pool[a..a + self.words].iter_mut().enumerate() {
            let mut v = *w;
            while v != 0 {
                out.push(i as u32 * 64 + v.trailing_zeros());
                self.bits[half] -= 1;
                v &= v - 1;
            }
            *w = 0;
        }
        self.release_if_empty(key, s);
    }
}

/// A token queued for several neighbours of one phase at once: one entry of the phase's
/// broadcast log, with the bitmap (over the phase's neighbours) of the links it is for.
#[derive(Clone, Copy)]
struct Bcast {
    j: u32,
    r: u8,
    seq: u32,
}

/// Broadcast logs per (node, phase), each link's cursor into its phase's log, and the
/// per-node sequence numbers that order them against the links' own token queues.
#[derive(Default)]
pub(super) struct Bcasts {
    pub(super) on: bool,
    /// Phases over all sub-schedules; phase index and bit (within the phase) of each
    /// neighbour index.
    np: u32,
    k_g: Vec<u32>,
    k_bit: Vec<u32>,
    pub(super) words: usize,
    logs: Vec<Vec<Bcast>>,
    bits: Vec<Vec<u64>>,
    cur: Vec<u32>,
    pub(super) seq: Vec<u32>,
    n: usize,
}

impl Bcasts {
    pub(super) fn new(plan: &super::schedule::Plan, n: u32) -> Bcasts {
        let mut k_g = Vec::new();
        let mut k_bit = Vec::new();
        let mut np = 0;
        let mut mmax = 2;
        for s in &plan.subs {
            for p in 0..s.h {
                for b in 0..s.m - 1 {
                    k_g.push(np + p);
                    k_bit.push(b);
                }
            }
            np += s.h;
            mmax = mmax.max(s.m);
        }
        let n = n as usize;
        let links = k_g.len() * n;
        Bcasts {
            on: true,
            np,
            k_g,
            k_bit,
            words: ((mmax - 1) as usize).div_ceil(64),
            logs: (0..n * np as usize).map(|_| Vec::new()).collect(),
            bits: (0..n * np as usize).map(|_| Vec::new()).collect(),
            cur: vec![0; links],
            seq: vec![0; n],
            n,
        }
    }

    #[inline]
    fn log_of(&self, x: u32, k: u32) -> usize {
        x as usize * self.np as usize + self.k_g[k as usize] as usize
    }

    /// Advance link (x, k)'s cursor past the entries not meant for it; the position of
    /// its next entry, if any.
    #[inline]
    fn head(&mut self, x: u32, k: u32) -> Option<(usize, usize)> {
        let li = self.log_of(x, k);
        let xk = k as usize * self.n + x as usize;
        let log = &self.logs[li];
        let mut c = self.cur[xk] as usize;
        if c >= log.len() {
            return None;
        }
        let b = self.k_bit[k as usize] as usize;
        let (w, m) = (b >> 6, 1u64 << (b & 63));
        let bits = &self.bits[li];
        while c < log.len() && bits[c * self.words + w] & m == 0 {
            c += 1;
        }
        self.cur[xk] = c as u32;
        (c < log.len()).then_some((li, c))
    }

    /// Drop every queued entry of link (x, k).
    pub(super) fn drop_link(&mut self, x: u32, k: u32) {
        let li = self.log_of(x, k);
        self.cur[k as usize * self.n + x as usize] = self.logs[li].len() as u32;
    }
}

impl ShaleSim {
    /// Queue token (j, r) at z for its phase-local neighbour bits `sel` (bit b = the
    /// phase's (b + 1)-th neighbour) of the phase that neighbour index `k0` (the phase's
    /// first) belongs to: one broadcast entry, listed at each of those links.
    pub(super) fn push_bcast(&mut self, z: u32, k0: u32, j: u32, r: u8, sel: &[u64]) {
        let b = &mut self.bc;
        let li = b.log_of(z, k0);
        let seq = b.seq[z as usize];
        b.seq[z as usize] = seq.wrapping_add(1);
        b.logs[li].push(Bcast { j, r, seq });
        let words = b.words;
        b.bits[li].extend_from_slice(&sel[..words]);
        for (i, &w) in sel[..words].iter().enumerate() {
            let mut v = w;
            while v != 0 {
                let bit = i as u32 * 64 + v.trailing_zeros();
                v &= v - 1;
                self.list_at(z, k0 + bit);
            }
        }
    }

    /// Take link (x, k)'s next token: the older of its own queue's head and its next
    /// broadcast entry.
    #[inline]
    pub(super) fn pop_token(&mut self, x: u32, k: u32, xk: usize) -> Option<(u32, u8)> {
        self.pop_token_kind(x, k, xk, None).map(|(t, _)| t)
    }

    /// Take link (x, k)'s next token of one kind (`Some(true)`: the broadcast log of
    /// invalidations, `Some(false)`: its own hop-by-hop queue) or the older of both
    /// (`None`), with the kind it came from.
    #[inline]
    pub(super) fn pop_token_kind(&mut self, x: u32, k: u32, xk: usize, from_log: Option<bool>) -> Option<((u32, u8), bool)> {
        let th = self.lk[xk].th;
        let bh = if self.bc.on && from_log != Some(false) { self.bc.head(x, k) } else { None };
        if let Some((li, c)) = bh {
            let e = self.bc.logs[li][c];
            let own_ok = from_log != Some(true) && th != NONE;
            // sequence numbers wrap: compare by signed distance
            if !own_ok || (e.seq.wrapping_sub(self.toks[th as usize].seq) as i32) < 0 {
                self.bc.cur[xk] = c as u32 + 1;
                return Some(((e.j, e.r), true));
            }
        }
        if th == NONE || from_log == Some(true) {
            return None;
        }
        let tk = self.toks[th as usize];
        self.lk[xk].th = tk.next;
        if tk.next == NONE {
            self.lk[xk].tt = NONE;
        }
        self.free_toks.push(th);
        Some(((tk.d, tk.r), false))
    }

    /// Does link (x, k) still hold a token to send?
    #[inline]
    pub(super) fn has_token(&mut self, x: u32, k: u32, xk: usize) -> bool {
        self.lk[xk].th != NONE || (self.bc.on && self.bc.head(x, k).is_some())
    }
}
