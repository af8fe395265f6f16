//! The planned transmissions of one calendar port, for its buffer's byte count.
//!
//! A rotor port plans each packet into the calendar queue of its departure slice, so its
//! departures are not planned in time order. Keeping one FIFO per queue makes every plan
//! write to the tail of one of many lists (a slice's worth per port, thousands in a
//! fabric), which a packet-hop pays as a cache miss. [`Departures`] keeps them as one
//! collection per port, in one of two forms chosen by how the port is used:
//!
//! - a **list** in the order planned (every plan writes next to the last one), which a
//!   release passes over: right when releases are rare against plans (the lazy release
//!   of a port with room: once the list has doubled, or at a sample);
//! - a **heap** by departure time, which a release pops: right when a test asks for the
//!   exact count at nearly every departure (a full buffer), where passes would read the
//!   whole buffer's worth of plans each time.
//!
//! A pass that follows few plans turns the list into a heap; a release that follows many
//! plans turns the heap back into a list. Both give the same releases.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::units::Ps;

/// A planned transmission: departure (start of serialization), wire bytes, packet.
pub type Planned = (Ps, u32, u32);

/// A pass that follows at most this many plans makes the list a heap; a release that
/// follows more than four times as many makes the heap a list again.
const FEW: u32 = 16;

/// The list is passed over at least when it holds this many.
const SCAN_MIN: usize = 64;

/// One port's planned transmissions not yet released (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct Departures {
    /// The list form, in the order planned (empty while `heap` is used).
    list: Vec<Reverse<Planned>>,
    /// The heap form, earliest departure on top (empty while `list` is used).
    heap: BinaryHeap<Reverse<Planned>>,
    is_heap: bool,
    /// A release passes over the list once it holds this many.
    scan_at: u32,
    /// Plans since the last release that took anything (heap) or the last pass (list).
    pushed: u32,
}

impl Departures {
    /// Plan a transmission. True: the list is long enough that the caller should release
    /// the departed ones.
    #[inline]
    pub fn push(&mut self, e: Planned) -> bool {
        self.pushed += 1;
        if self.is_heap {
            self.heap.push(Reverse(e));
            return false;
        }
        self.list.push(Reverse(e));
        self.list.len() >= (self.scan_at as usize).max(SCAN_MIN)
    }

    /// Release every transmission departing at or before `now`: `f` sees each exactly
    /// once (from the heap in time order, from the list in plan order). Returns the
    /// earliest departure left.
    #[inline]
    pub fn release(&mut self, now: Ps, mut f: impl FnMut(Planned)) -> Option<Ps> {
        if self.is_heap {
            let mut took = false;
            while let Some(top) = self.heap.peek_mut() {
                let Reverse(e) = *top;
                if e.0 > now {
                    break;
                }
                std::collections::binary_heap::PeekMut::pop(top);
                f(e);
                took = true;
            }
            let next = self.heap.peek().map(|r| r.0 .0);
            if took {
                if self.pushed > 4 * FEW {
                    // plans come faster than releases again: back to the list
                    self.list = std::mem::take(&mut self.heap).into_vec();
                    self.is_heap = false;
                    self.scan_at = (2 * self.list.len()) as u32;
                }
                self.pushed = 0;
            }
            return next;
        }
        let mut next = Ps::MAX;
        self.list.retain(|&Reverse(e)| {
            if e.0 <= now {
                f(e);
                return false;
            }
            next = next.min(e.0);
            true
        });
        self.scan_at = (2 * self.list.len()) as u32;
        if self.pushed <= FEW && self.list.len() > SCAN_MIN {
            // releases come about as often as plans: a heap answers them
            self.heap = BinaryHeap::from(std::mem::take(&mut self.list));
            self.is_heap = true;
        }
        self.pushed = 0;
        (next != Ps::MAX).then_some(next)
    }

    /// The unreleased transmissions, in no particular order.
    pub fn unreleased(&self) -> impl Iterator<Item = &Planned> {
        self.list.iter().chain(self.heap.iter()).map(|r| &r.0)
    }

    /// Take every transmission out (in no particular order), leaving none.
    pub fn take_all(&mut self) -> Vec<Planned> {
        let out = self.unreleased().copied().collect();
        *self = Departures::default();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain list: every release gives exactly the departed transmissions not
        /// yet released, `next` is the earliest left, and what is left is the rest.
        #[test]
        fn releases_exactly_the_departed(ops in prop::collection::vec((0u8..4, 0u64..400, 1u32..3000), 1..400)) {
            let mut d = Departures::default();
            let mut reference: Vec<Planned> = Vec::new();
            let (mut now, mut id) = (0u64, 0u32);
            for (op, x, wire) in ops {
                match op {
                    // plan (some at `now`, some far ahead, equal times included)
                    0 | 1 => {
                        let t = now + if op == 0 { x % 7 } else { x };
                        d.push((t, wire, id));
                        reference.push((t, wire, id));
                        id += 1;
                    }
                    // time moves on, then a release
                    _ => {
                        now += x % 60;
                        let mut got = Vec::new();
                        let mut last = None;
                        let next = d.release(now, |e| {
                            // from the heap in time order; from the list in plan order
                            got.push(e);
                            last = Some(e);
                        });
                        let mut want: Vec<Planned> = reference.iter().copied().filter(|e| e.0 <= now).collect();
                        reference.retain(|e| e.0 > now);
                        got.sort_unstable();
                        want.sort_unstable();
                        prop_assert_eq!(&got, &want);
                        prop_assert_eq!(last.is_some(), !want.is_empty());
                        prop_assert_eq!(next, reference.iter().map(|e| e.0).min());
                    }
                }
                // what is not released is exactly the reference (departed ones wait for
                // the next release in both)
                let mut left: Vec<Planned> = d.unreleased().copied().collect();
                left.sort_unstable();
                let mut r = reference.clone();
                r.sort_unstable();
                prop_assert_eq!(&left, &r);
            }
            let mut rest = d.take_all();
            rest.sort_unstable();
            reference.sort_unstable();
            prop_assert_eq!(rest, reference);
            prop_assert_eq!(d.release(u64::MAX, |_| panic!("nothing is left")), None);
        }
    }

    #[test]
    fn a_full_buffer_turns_the_list_into_a_heap_and_back() {
        // 600 planned far apart, then released one departure at a time with a plan now
        // and then (a full buffer): the list becomes a heap, whose releases take only
        // what departed
        let mut d = Departures::default();
        for k in 0..600u64 {
            d.push((1_000 + 7 * k, 1500, k as u32));
        }
        assert_eq!(d.release(0, |_| panic!("nothing departed")), Some(1_000));
        assert!(!d.is_heap, "600 plans since the last pass");
        let mut out = Vec::new();
        assert_eq!(d.release(1_000, |e| out.push(e.2)), Some(1_007));
        assert!(d.is_heap, "a release right after a pass");
        for k in 2..300u64 {
            assert_eq!(d.release(1_000 + 7 * k - 7, |e| out.push(e.2)), Some(1_000 + 7 * k));
        }
        assert_eq!(out, (0..299).collect::<Vec<u32>>());
        assert!(d.is_heap);
        // many plans before the next release: back to the list
        for k in 0..100u64 {
            d.push((100_000 + k, 1, 1_000 + k as u32));
        }
        let mut n = 0;
        assert_eq!(d.release(100_000 + 49, |_| n += 1), Some(100_050));
        assert_eq!(n, 301 + 50);
        assert!(!d.is_heap);
        assert_eq!(d.unreleased().count(), 50);
    }
}
