//! The event list: a monotone radix heap keyed by time (base-256 digits), FIFO among
//! equal times, with a short sorted run of the next events in front of it.
//!
//! Simulation time never goes backwards, so every event pushed is at or after the last
//! event popped — the condition under which a radix heap is exact. Events with equal
//! times pop in insertion order (the `(time, seq)` order). Push is O(1). An event sits in
//! the bucket of the highest base-256 digit in which its time differs from `last`, and of
//! its value of that digit; each time it is redistributed it goes to a lower digit, so it
//! moves at most 8 times over its life — for the microseconds ahead that a network
//! schedules, two or three times (a binary radix heap moves it about once per bit).
//!
//! A bucket of the lowest levels (a window of at most 2^16 ps = 65.5 ns) holding at most
//! `SORT_MAX` events is not redistributed: it is sorted (stably) and moved to the front
//! run whole, which costs less than moving each of its events down digit by digit. A
//! fuller one (a large network has thousands of events in such a window) is
//! redistributed like any other, which keeps both the sorts and the front run short.
//!
//! The front run holds the next few events in order (at least `lookahead` of them when
//! that many are pending), so that the engine can see them coming and prefetch what they
//! will touch ([`EventList::ahead`]). An event pushed before the end of the run (before
//! the last time taken out of the radix heap) goes into a second short run, `late`, at its
//! place in `(time, seq)` order; a pop takes the earlier head of the two runs. Inserting
//! into the front run itself moved about 150 events per insertion in the Clos benchmark.

use std::collections::VecDeque;

use crate::units::Ps;

/// How far ahead of the last time taken from the radix heap the front run may be filled:
/// events whose time differs from it in the lowest `HORIZON_LEVELS` digits only
/// (2^16 ps = 65.5 ns).
const HORIZON_LEVELS: u32 = 2;
const LEVELS: usize = 8;
/// Buckets below this level (a window of at most 2^16 ps = 65.5 ns) are sorted into the
/// front run in one step instead of being redistributed.
const SORT_LEVELS: usize = 3;
/// A bucket of those levels with more events than this is redistributed all the same: a
/// busy window (thousands of events in 65.5 ns in a large network) costs more to sort
/// whole, and fills the front run so far ahead that every event pushed into it is an
/// insertion in the middle of a long run.
const SORT_MAX: usize = 1024;
const DIGITS: usize = 256;
/// A low bucket of at most this many events is sorted by comparison; a larger one by a
/// counting sort on each of its varying digits (one or two passes over 256 counters).
const SMALL_SORT: usize = 32;

/// Stable counting sort of `src` by base-256 digit `shift / 8` of the time into `dst`.
fn radix_pass<T: Copy>(src: &[(Ps, T)], dst: &mut Vec<(Ps, T)>, shift: u32) {
    let mut start = [0u32; DIGITS + 1];
    for x in src {
        start[((x.0 >> shift) & 0xff) as usize + 1] += 1;
    }
    for i in 0..DIGITS {
        start[i + 1] += start[i];
    }
    dst.clear();
    dst.resize(src.len(), src[0]);
    for &x in src {
        let k = ((x.0 >> shift) & 0xff) as usize;
        dst[start[k] as usize] = x;
        start[k] += 1;
    }
}

/// A radix heap of `time → T`; equal times pop in insertion order.
///
/// `front` holds events in `(time, seq)` order, every one of them at or before `last`;
/// `late` too, each of its events before the end of `front` (it came in before that end,
/// which pops after it). So every event of `late` was pushed after every event of
/// `front` with the same time (events taken from the radix heap are after `last`), and
/// at equal times `front` pops first;
/// the radix heap holds the rest, all after `last`: bucket `(l, d)` holds the events
/// whose time first differs from `last` (from the top) in base-256 digit `l`, and has
/// value `d` there. All events with one time always sit in one bucket, in insertion
/// order, so FIFO order among equal times is kept through redistribution. Buckets of a
/// lower level, and of a lower digit at one level, hold earlier events.
pub struct EventList<T: Copy> {
    last: Ps,
    front: VecDeque<(Ps, T)>,
    late: VecDeque<(Ps, T)>,
    buckets: Vec<Vec<(Ps, T)>>,
    /// Bit l set when level l has a non-empty bucket.
    levels: u8,
    /// Per level, bit d set when bucket (l, d) is non-empty.
    digits: [[u64; DIGITS / 64]; LEVELS],
    len: usize,
    /// Events kept in `front` when that many are pending.
    lookahead: usize,
    /// Scratch space of the radix sort of a low bucket (kept for its allocation).
    scratch: Vec<(Ps, T)>,
    /// Per level, the allocations of the buckets emptied last (the latest on top): a
    /// bucket that receives its first event takes the most recently emptied one, whose
    /// lines are still in cache, instead of the allocation it had a cycle of its level
    /// earlier (a level-2 bucket of a large network holds thousands of events, and the
    /// 256 of them do not fit in cache).
    spare: [Vec<Vec<(Ps, T)>>; LEVELS],
}

impl<T: Copy> EventList<T> {
    /// An event list that keeps the next `k` events (at least one) in order in front.
    pub fn with_lookahead(k: usize) -> Self {
        EventList { last: 0, front: VecDeque::new(), late: VecDeque::new(), buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
                    levels: 0, digits: [[0; DIGITS / 64]; LEVELS], len: 0, lookahead: k.max(1),
                    scratch: Vec::new(), spare: Default::default() }
    }

    /// Bucket of time `t` (> `last`): level and digit.
    #[inline]
    fn bucket(last: Ps, t: Ps) -> (usize, usize) {
        let level = (63 - (t ^ last).leading_zeros()) as usize / 8;
        (level, ((t >> (8 * level)) & 0xff) as usize)
    }

    #[inline]
    fn put(&mut self, level: usize, digit: usize, item: (Ps, T)) {
        let b = &mut self.buckets[level * DIGITS + digit];
        if b.capacity() == 0 {
            if let Some(v) = self.spare[level].pop() {
                *b = v;
            }
        }
        b.push(item);
        self.digits[level][digit / 64] |= 1 << (digit % 64);
        self.levels |= 1 << level;
    }

    /// Schedule `ev` at `time` (≥ the time of the last popped event).
    #[inline]
    pub fn push(&mut self, time: Ps, ev: T) {
        self.len += 1;
        if time > self.last {
            let (l, d) = Self::bucket(self.last, time);
            self.put(l, d, (time, ev));
        } else if self.front.back().is_none_or(|x| x.0 <= time) {
            self.front.push_back((time, ev));
        } else if self.late.back().is_none_or(|x| x.0 <= time) {
            // before the end of the front run, or after events already in `late`
            self.late.push_back((time, ev));
        } else {
            // after the events of `late` at or before its time (it is the latest pushed)
            let i = self.late.partition_point(|x| x.0 <= time);
            self.late.insert(i, (time, ev));
        }
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Ps> {
        self.settle();
        match (self.front.front(), self.late.front()) {
            (Some(f), Some(l)) => Some(f.0.min(l.0)),
            (f, l) => f.or(l).map(|x| x.0),
        }
    }

    /// Event `k` of the front run (call after `peek_time` or `pop`): a hint of what
    /// comes, exact while no event has been pushed before the run's end (`late` is
    /// empty); the engine prefetches with it.
    #[inline]
    pub fn ahead(&self, k: usize) -> Option<&(Ps, T)> {
        self.front.get(k)
    }

    /// Fill the front run up to `lookahead` events from the radix heap, taking events
    /// beyond the first only while they are near (differing from `last` in the lowest
    /// [`HORIZON_LEVELS`] digits only): an event pushed before `last` is inserted into
    /// the run, so `last` must not run far ahead of the time being simulated.
    #[inline]
    fn settle(&mut self) {
        if self.front.is_empty() && self.levels != 0 {
            self.refill();
        }
        while self.front.len() < self.lookahead && self.levels != 0 && self.levels.trailing_zeros() < HORIZON_LEVELS {
            self.refill();
        }
    }

    /// Move the earliest events of the radix heap (those at its least time) to the back of
    /// the front run.
    fn refill(&mut self) {
        let l = self.levels.trailing_zeros() as usize;
        let words = &mut self.digits[l];
        let w = words.iter().position(|&x| x != 0).expect("a level bit names a non-empty bucket");
        let d = w * 64 + words[w].trailing_zeros() as usize;
        words[w] &= !(1 << (d % 64));
        if words.iter().all(|&x| x == 0) {
            self.levels &= !(1 << l);
        }
        let mut items = std::mem::take(&mut self.buckets[l * DIGITS + d]);
        if l == 0 {
            // one time: the bucket is its events in insertion order
            self.last = items[0].0;
            self.front.extend(items.drain(..));
        } else if l < SORT_LEVELS && items.len() <= SORT_MAX {
            // a window of at most 2^(8·(SORT_LEVELS − 1)) ps: sorting it (stably, so equal
            // times keep their insertion order) is cheaper than redistributing it digit
            // by digit; every event left in the heap is after the whole window
            if items.len() <= SMALL_SORT {
                items.sort_by_key(|x| x.0);
                self.last = items[items.len() - 1].0;
                self.front.extend(items.drain(..));
            } else {
                // the events agree with `last` above digit l: a stable counting sort on
                // each lower digit, from the lowest, orders them by time
                radix_pass(&items, &mut self.scratch, 0);
                let sorted = if l == 1 {
                    &mut self.scratch
                } else {
                    radix_pass(&self.scratch, &mut items, 8);
                    &mut items
                };
                self.last = sorted[sorted.len() - 1].0;
                self.front.extend(sorted.drain(..));
                items.clear();
            }
        } else {
            let new_last = items.iter().map(|x| x.0).min().expect("non-empty bucket");
            self.last = new_last;
            for &(t, ev) in &items {
                if t == new_last {
                    self.front.push_back((t, ev));
                } else {
                    let (l2, d2) = Self::bucket(new_last, t);
                    self.put(l2, d2, (t, ev));
                }
            }
            items.clear();
        }
        if items.capacity() > 0 {
            self.spare[l].push(items); // keep the allocation for the next bucket
        }
    }

    /// Remove and return the earliest event as `(time, event)`.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ps, T)> {
        if self.front.is_empty() {
            self.settle();
        }
        let x = match (self.front.front(), self.late.front()) {
            (Some(f), Some(l)) if l.0 < f.0 => self.late.pop_front(),
            (Some(_), _) => self.front.pop_front(),
            (None, _) => self.late.pop_front(),
        }?;
        self.len -= 1;
        Some(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the last pop) pop in (time, insertion) order.
        #[test]
        fn pops_in_time_then_insertion_order(ops in proptest::collection::vec((0u64..50, any::<bool>(), any::<bool>()), 1..400),
                                             k in 1usize..12) {
            let mut h = EventList::with_lookahead(k);
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            let mut now = 0u64;
            let mut seq = 0u64;
            let mut id = 0u32;
            for (dt, pop, far) in ops {
                // some events beyond the front run's horizon, some many digits ahead
                let dt = if !far { dt } else if dt % 2 == 0 { dt << 15 } else { dt << 41 };
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
                    if dt % 3 == 0 {
                        // the engine peeks between pushes: the front run refills early
                        h.peek_time();
                    }
                }
            }
            // the front run holds the next events in order (at least the earliest)
            if h.peek_time().is_some() && h.late.is_empty() {
                reference.sort();
                prop_assert!(h.ahead(0).is_some());
                for (i, &(t, _, want)) in reference.iter().enumerate().take(k) {
                    if let Some(&x) = h.ahead(i) {
                        prop_assert_eq!(x, (t, want));
                    }
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

        /// Full low buckets (sorted by counting sort) still pop in (time, insertion) order:
        /// batches of events in windows of 2^8 to 2^24 ps, many of them at equal times.
        #[test]
        fn full_low_buckets_pop_in_order(batches in proptest::collection::vec(
                                             (proptest::collection::vec(0u64..1 << 24, 1..300), 0u32..4, 0u64..1 << 20), 1..6)) {
            let mut h = EventList::with_lookahead(4);
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (offsets, coarse, gap) in batches {
                // window widths 2^8, 2^16, 2^24 and coarse equal-time clusters
                let mask = [0xff, 0xffff, 0xff_ffff, 0xff_ff00][coarse as usize];
                for o in offsets {
                    seq += 1;
                    let t = now + gap + (o & mask);
                    h.push(t, seq as u32);
                    reference.push((t, seq, seq as u32));
                }
                reference.sort();
                // pop half of what is pending, then push the next batch after the last pop
                for _ in 0..reference.len() / 2 {
                    let (t, _, want) = reference.remove(0);
                    prop_assert_eq!(h.pop().unwrap(), (t, want));
                    now = t;
                }
            }
            reference.sort();
            for (t, _, want) in reference {
                prop_assert_eq!(h.pop().unwrap(), (t, want));
            }
            prop_assert!(h.pop().is_none());
        }
    }
}
