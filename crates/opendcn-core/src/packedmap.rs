//! A small, dense counter table: keys below 2^44, counts below 2^20, one 8-byte word a
//! slot (the key above the count), linear probing up to 3/4 full, backward-shift
//! deletion. For per-node tables that are streamed through the caches as a whole (the
//! Shale window engine), where size, not probe length, sets the cost: a table of 134
//! counters takes 2 KB here and 8 KB as a [`crate::flatmap::FlatMap`].
//!
//! A count that reaches zero removes its key, so the table holds exactly the nonzero
//! counters. Deterministic: nothing depends on addresses.

const CBITS: u32 = 20;
const CMASK: u64 = (1 << CBITS) - 1;
/// Largest key + 1 (a stored key is key + 1, so that 0 marks an empty slot).
pub const KEY_LIMIT: u64 = 1 << 44;
pub const COUNT_LIMIT: u32 = (1 << CBITS) - 1;

pub struct PackedMap {
    slots: Vec<u64>,
    shift: u32,
    mask: usize,
    len: usize,
}

impl Default for PackedMap {
    fn default() -> Self {
        PackedMap::new()
    }
}

impl PackedMap {
    pub fn new() -> PackedMap {
        PackedMap { slots: vec![0; 8], shift: 61, mask: 7, len: 0 }
    }

    #[inline]
    fn home(&self, sk: u64) -> usize {
        // Fibonacci hashing: one multiply, the high bits
        (sk.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Slot of stored key sk, or the empty slot ending its probe sequence.
    #[inline]
    fn find(&self, sk: u64) -> (usize, bool) {
        let mut i = self.home(sk);
        loop {
            let w = self.slots[i];
            if w == 0 {
                return (i, false);
            }
            if w >> CBITS == sk {
                return (i, true);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The count of `key` (0 when absent).
    #[inline]
    pub fn get(&self, key: u64) -> u32 {
        debug_assert!(key + 1 < KEY_LIMIT);
        let (i, hit) = self.find(key + 1);
        if hit {
            (self.slots[i] & CMASK) as u32
        } else {
            0
        }
    }

    #[inline]
    pub fn contains_key(&self, key: u64) -> bool {
        self.find(key + 1).1
    }

    /// Add one to `key`'s count (saturating at [`COUNT_LIMIT`]); the new count.
    #[inline]
    pub fn incr(&mut self, key: u64) -> u32 {
        debug_assert!(key + 1 < KEY_LIMIT);
        let sk = key + 1;
        let (i, hit) = self.find(sk);
        if hit {
            let c = ((self.slots[i] & CMASK) as u32 + 1).min(COUNT_LIMIT);
            self.slots[i] = sk << CBITS | c as u64;
            return c;
        }
        self.slots[i] = sk << CBITS | 1;
        self.len += 1;
        if self.len * 4 > self.slots.len() * 3 {
            self.grow();
        }
        1
    }

    /// Subtract one from `key`'s count if it is positive (removing the key at zero);
    /// the new count.
    #[inline]
    pub fn decr_sat(&mut self, key: u64) -> u32 {
        let (i, hit) = self.find(key + 1);
        if !hit {
            return 0;
        }
        let c = self.slots[i] & CMASK;
        if c <= 1 {
            self.remove_at(i);
            0
        } else {
            self.slots[i] -= 1;
            c as u32 - 1
        }
    }

    fn remove_at(&mut self, mut hole: usize) {
        self.len -= 1;
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let w = self.slots[i];
            if w == 0 {
                break;
            }
            let home = self.home(w >> CBITS);
            if (hole.wrapping_sub(home) & self.mask) <= (i.wrapping_sub(home) & self.mask) {
                self.slots[hole] = w;
                hole = i;
            }
        }
        self.slots[hole] = 0;
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let cap = old.len() * 2;
        self.slots = vec![0; cap];
        self.shift = 64 - cap.trailing_zeros();
        self.mask = cap - 1;
        for w in old {
            if w != 0 {
                let (i, _) = self.find(w >> CBITS);
                self.slots[i] = w;
            }
        }
    }

    /// Every key, in slot order.
    pub fn keys(&self) -> Vec<u64> {
        self.slots.iter().filter(|&&w| w != 0).map(|&w| (w >> CBITS) - 1).collect()
    }

    /// The table's slots, to queue for a [`crate::prefetch::Spread`].
    pub fn slots(&self) -> &[u64] {
        &self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn matches_a_hashmap_under_random_churn() {
        let mut m = PackedMap::new();
        let mut r: HashMap<u64, u32> = HashMap::new();
        let mut s = 0x9876_5432_u64;
        for step in 0..300_000u64 {
            s = crate::rng::mix64(s ^ step);
            // a small key space spread over the whole 44 bits, so keys collide, come and go
            let key = ((s >> 20) % 2000).wrapping_mul(0x0000_0777_7777_7771) % (KEY_LIMIT - 1);
            if s % 3 == 0 {
                let v = m.decr_sat(key);
                let mut w = 0;
                if let Some(e) = r.get_mut(&key) {
                    *e -= 1;
                    w = *e;
                    if *e == 0 {
                        r.remove(&key);
                    }
                }
                assert_eq!(v, w);
            } else {
                let v = m.incr(key);
                let e = r.entry(key).or_insert(0);
                *e += 1;
                assert_eq!(v, *e);
            }
            assert_eq!(m.len(), r.len());
            assert!(m.len() * 4 <= m.capacity() * 3);
        }
        for (&k, &v) in &r {
            assert_eq!(m.get(k), v);
        }
        assert_eq!(m.get(KEY_LIMIT - 2), 0);
        let mut ks = m.keys();
        ks.sort_unstable();
        let mut rk: Vec<u64> = r.keys().copied().collect();
        rk.sort_unstable();
        assert_eq!(ks, rk);
    }
}
