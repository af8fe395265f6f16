//! The event list: a monotone radix heap keyed by time, FIFO among equal times.
//!
//! Simulation time never goes backwards, so every event pushed is at or after the last
//! event popped — the condition under which a radix heap is exact. Events with equal
//! times pop in insertion order (the `(time, seq)` order). Push is O(1); an element moves
//! down a bucket at most 64 times over its life, usually once or twice.

use std::collections::VecDeque;

use crate::units::Ps;

/// A radix heap of `time → T`; equal times pop in insertion order.
///
/// Bucket 0 holds the events at exactly the last popped time (a FIFO); bucket `b > 0`
/// holds events whose time first differs from it at bit `b − 1`. All events with one
/// time always sit in one bucket, in insertion order, so FIFO order among equal times
/// is kept through redistribution.
pub struct EventList<T: Copy> {
    last: Ps,
    now: VecDeque<T>,
    buckets: Vec<Vec<(Ps, T)>>,
    /// Bit b set when `buckets[b]` is non-empty.
    mask: u128,
    len: usize,
}

impl<T: Copy> Default for EventList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> EventList<T> {
    pub fn new() -> Self {
        EventList { last: 0, now: VecDeque::new(), buckets: (0..65).map(|_| Vec::new()).collect(), mask: 0, len: 0 }
    }

    #[inline]
    fn bucket(last: Ps, t: Ps) -> usize {
        64 - (t ^ last).leading_zeros() as usize
    }

    /// Schedule `ev` at `time` (≥ the time of the last popped event).
    #[inline]
    pub fn push(&mut self, time: Ps, ev: T) {
        if time < self.last {
            // only from outside the event loop (a peek settled a later time as `last`)
            self.rebase(time);
        }
        self.len += 1;
        if time == self.last {
            self.now.push_back(ev);
        } else {
            let b = Self::bucket(self.last, time);
            self.buckets[b].push((time, ev));
            self.mask |= 1 << b;
        }
    }

    /// Re-file every pending event relative to an earlier `last` (equal times keep their
    /// order: they always share one bucket, which is re-filed in order).
    fn rebase(&mut self, time: Ps) {
        let old = self.last;
        let mut items: Vec<(Ps, T)> = self.now.drain(..).map(|ev| (old, ev)).collect();
        for b in 1..self.buckets.len() {
            items.append(&mut self.buckets[b]);
        }
        self.mask = 0;
        self.last = time;
        for (t, ev) in items {
            if t == time {
                self.now.push_back(ev);
            } else {
                let b = Self::bucket(time, t);
                self.buckets[b].push((t, ev));
                self.mask |= 1 << b;
            }
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Ps> {
        self.settle()?;
        Some(self.last)
    }

    /// Make bucket 0 hold the earliest events; `None` when empty.
    #[inline]
    fn settle(&mut self) -> Option<()> {
        if self.len == 0 {
            return None;
        }
        if self.now.is_empty() {
            let i = self.mask.trailing_zeros() as usize;
            let mut items = std::mem::take(&mut self.buckets[i]);
            self.mask &= !(1 << i);
            let new_last = items.iter().map(|x| x.0).min().expect("non-empty bucket");
            self.last = new_last;
            for &(t, ev) in &items {
                if t == new_last {
                    self.now.push_back(ev);
                } else {
                    let b = Self::bucket(new_last, t);
                    self.buckets[b].push((t, ev));
                    self.mask |= 1 << b;
                }
            }
            items.clear();
            self.buckets[i] = items; // keep the allocation
        }
        Some(())
    }

    /// Remove and return the earliest event as `(time, event)`.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ps, T)> {
        self.settle()?;
        let ev = self.now.pop_front().expect("settled");
        self.len -= 1;
        Some((self.last, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the last pop) pop in (time, insertion) order.
        #[test]
        fn pops_in_time_then_insertion_order(ops in proptest::collection::vec((0u64..50, any::<bool>()), 1..400)) {
            let mut h = EventList::new();
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            let mut now = 0u64;
            let mut seq = 0u64;
            let mut id = 0u32;
            for (dt, pop) in ops {
                if pop && !reference.is_empty() {
                    reference.sort();
                    let (t, _, want) = reference.remove(0);
                    let (gt, got) = h.pop().unwrap();
                    prop_assert_eq!((gt, got), (t, want));
                    now = t;
                } else {
                    seq += 1;
                    id += 1;
                    h.push(now + dt, id);
                    reference.push((now + dt, seq, id));
                }
            }
            // a push before the settled minimum (from outside the event loop) still pops in order
            if let Some(t) = h.peek_time() {
                id += 1;
                seq += 1;
                let early = t.saturating_sub(1).max(now);
                h.push(early, id);
                reference.push((early, seq, id));
            }
            reference.sort();
            for (t, _, want) in reference {
                prop_assert_eq!(h.pop().unwrap(), (t, want));
            }
            prop_assert!(h.pop().is_none());
        }
    }
}
