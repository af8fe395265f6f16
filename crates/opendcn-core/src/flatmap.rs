//! A flat open-addressing map from `u64` keys to `u64` counters, for the engines' hot
//! per-(node, link, bucket) bookkeeping.
//!
//! Keys and values sit side by side in one array (16 bytes a slot, four to a cache line),
//! so a lookup in a table far larger than the caches costs one memory access where a
//! general-purpose map with separate control bytes costs two. Linear probing with
//! Fibonacci hashing; deletion shifts the following entries back (no tombstones), so
//! probe sequences stay short under the constant insert/remove churn of counters that
//! come and go. `u64::MAX` is reserved as the empty key. Deterministic: nothing depends
//! on addresses, and iteration (only used off the hot path) is in slot order.

const EMPTY: u64 = u64::MAX;

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Slot {
    key: u64,
    val: u64,
}

pub struct FlatMap {
    slots: Vec<Slot>,
    /// 64 − log2(capacity).
    shift: u32,
    mask: usize,
    len: usize,
}

impl Default for FlatMap {
    fn default() -> Self {
        FlatMap::with_capacity(16)
    }
}

impl FlatMap {
    pub fn with_capacity(n: usize) -> FlatMap {
        let cap = (n.max(8) * 2).next_power_of_two();
        FlatMap {
            slots: vec![Slot { key: EMPTY, val: 0 }; cap],
            shift: 64 - cap.trailing_zeros(),
            mask: cap - 1,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (crate::rng::mix64(key) >> self.shift) as usize
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot index holding `key`, or the empty slot ending its probe sequence.
    #[inline]
    fn find(&self, key: u64) -> (usize, bool) {
        debug_assert!(key != EMPTY);
        let mut i = self.home(key);
        loop {
            let k = self.slots[i].key;
            if k == key {
                return (i, true);
            }
            if k == EMPTY {
                return (i, false);
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        let (i, hit) = self.find(key);
        hit.then(|| self.slots[i].val)
    }

    #[inline]
    pub fn contains_key(&self, key: u64) -> bool {
        self.find(key).1
    }

    /// Hint the cache that `key` will be looked up soon (no effect on the contents).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        crate::prefetch::read(&self.slots[self.home(key)]);
    }

    /// Set `key` to `val`; the previous value, if any.
    pub fn insert(&mut self, key: u64, val: u64) -> Option<u64> {
        let (i, hit) = self.find(key);
        if hit {
            return Some(std::mem::replace(&mut self.slots[i].val, val));
        }
        self.slots[i] = Slot { key, val };
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            self.grow();
        }
        None
    }

    /// Add one to `key`'s value (inserting it at 1); the new value.
    #[inline]
    pub fn incr(&mut self, key: u64) -> u64 {
        let (i, hit) = self.find(key);
        if hit {
            self.slots[i].val += 1;
            return self.slots[i].val;
        }
        self.slots[i] = Slot { key, val: 1 };
        self.len += 1;
        if self.len * 2 > self.slots.len() {
            self.grow();
        }
        1
    }

    /// Subtract one from `key`'s value, removing the key when it reaches zero; the new
    /// value, or None when the key is absent.
    #[inline]
    pub fn decr(&mut self, key: u64) -> Option<u64> {
        let (i, hit) = self.find(key);
        if !hit {
            return None;
        }
        let v = self.slots[i].val - 1;
        if v == 0 {
            self.remove_at(i);
        } else {
            self.slots[i].val = v;
        }
        Some(v)
    }

    /// Replace `key`'s value v (0 when absent) by f(v) in one probe: a result of 0
    /// removes the key (or leaves it absent). Returns f(v).
    #[inline]
    pub fn update(&mut self, key: u64, f: impl FnOnce(u64) -> u64) -> u64 {
        let (i, hit) = self.find(key);
        let old = if hit { self.slots[i].val } else { 0 };
        let v = f(old);
        match (hit, v == 0) {
            (true, true) => self.remove_at(i),
            (true, false) => self.slots[i].val = v,
            (false, false) => {
                self.slots[i] = Slot { key, val: v };
                self.len += 1;
                if self.len * 2 > self.slots.len() {
                    self.grow();
                }
            }
            (false, true) => {}
        }
        v
    }

    pub fn remove(&mut self, key: u64) -> Option<u64> {
        let (i, hit) = self.find(key);
        if !hit {
            return None;
        }
        let v = self.slots[i].val;
        self.remove_at(i);
        Some(v)
    }

    /// Backward-shift deletion: move later members of the cluster into the hole when
    /// their home position allows it.
    fn remove_at(&mut self, mut hole: usize) {
        self.len -= 1;
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let k = self.slots[i].key;
            if k == EMPTY {
                break;
            }
            let home = self.home(k);
            // can the entry at i move to the hole? (its home is not in (hole, i])
            let dist_i = i.wrapping_sub(home) & self.mask;
            let dist_hole = hole.wrapping_sub(home) & self.mask;
            if dist_hole <= dist_i {
                self.slots[hole] = self.slots[i];
                hole = i;
            }
        }
        self.slots[hole] = Slot { key: EMPTY, val: 0 };
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let cap = old.len() * 2;
        self.slots = vec![Slot { key: EMPTY, val: 0 }; cap];
        self.shift = 64 - cap.trailing_zeros();
        self.mask = cap - 1;
        for s in old {
            if s.key != EMPTY {
                let (i, _) = self.find(s.key);
                self.slots[i] = s;
            }
        }
    }

    /// Every key, in slot order (deterministic for a given history of operations).
    pub fn keys(&self) -> Vec<u64> {
        self.slots.iter().filter(|s| s.key != EMPTY).map(|s| s.key).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn matches_a_hashmap_under_random_churn() {
        let mut m = FlatMap::default();
        let mut r: HashMap<u64, u64> = HashMap::new();
        let mut s = 0x1234_5678_u64;
        for step in 0..200_000u64 {
            s = crate::rng::mix64(s ^ step);
            // a small key space so that keys collide, come and go
            let key = (s >> 20) % 3000 * 0x1_0000_0001;
            match s % 5 {
                0 | 1 => {
                    let v = m.incr(key);
                    let e = r.entry(key).or_insert(0);
                    *e += 1;
                    assert_eq!(v, *e);
                }
                2 => {
                    let v = m.decr(key);
                    let e = r.get_mut(&key).map(|e| {
                        *e -= 1;
                        *e
                    });
                    if e == Some(0) {
                        r.remove(&key);
                    }
                    assert_eq!(v, e);
                }
                3 => assert_eq!(m.remove(key), r.remove(&key)),
                4 if s & 8 == 0 => {
                    // saturating decrement of the high half, in one probe
                    let v = m.update(key, |v| if v >> 32 > 0 { v - (1 << 32) } else { v });
                    let e = r.get(&key).copied().unwrap_or(0);
                    let w = if e >> 32 > 0 { e - (1 << 32) } else { e };
                    if w == 0 {
                        r.remove(&key);
                    } else {
                        r.insert(key, w);
                    }
                    assert_eq!(v, w);
                }
                _ => assert_eq!(m.insert(key, (step << 30) | 1), r.insert(key, (step << 30) | 1)),
            }
            assert_eq!(m.len(), r.len());
        }
        for (&k, &v) in &r {
            assert_eq!(m.get(k), Some(v));
        }
        let mut ks = m.keys();
        ks.sort_unstable();
        let mut rk: Vec<u64> = r.keys().copied().collect();
        rk.sort_unstable();
        assert_eq!(ks, rk);
    }
}
