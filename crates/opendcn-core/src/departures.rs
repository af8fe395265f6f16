//! The planned transmissions of one calendar port, for its buffer's byte count.
//!
//! A rotor port plans each packet into the calendar queue of its departure slice, so its
//! departures are not planned in time order. Keeping one FIFO per queue makes every plan
//! write to the tail of one of many lists (a slice's worth per port, thousands in a
//! fabric), which a packet-hop pays as a cache miss. [`Departures`] keeps them as one list
//! per port in the order they were planned (every plan writes near the last one). A pass
//! over the list releases the departed ones (the port's count of buffered bytes) and notes
//! the few earliest left, in time order, in `soon`; while no later plan departs before
//! them, the next releases take them from `soon` without a pass. So a pass comes when the
//! list has grown to twice what the last one left, when `soon` runs out, or when a plan
//! jumps ahead of it; a full buffer asked for its exact count at every departure passes
//! once every [`SOON`] departures.
use crate::units::Ps;

/// A planned transmission: departure (start of serialization), wire bytes, packet.
pub type Planned = (Ps, u32, u32);

/// How many of the earliest unreleased transmissions `soon` holds.
pub const SOON: usize = 8;

/// The list is passed over (released, compacted) at least when it holds this many.
const SCAN_MIN: usize = 64;

/// One port's planned transmissions not yet released (see the module documentation).
/// What a plan reads and writes is in one cache line (`cold` is read by releases).
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct Departures {
    /// The transmissions since the last pass, in the order planned; those departing at
    /// or before `done` were released from `soon` already.
    list: Vec<Planned>,
    /// Every unreleased transmission departing before `bound` is in `soon` (0: `soon` is
    /// not kept; the next release passes over the list).
    bound: Ps,
    /// A release passes over the list once it holds this many.
    scan_at: u32,
    n_soon: u32,
    /// Plans since the last pass, and whether a release took from `soon` since then: a
    /// pass finds `soon` again only where that pays (releases come often against plans;
    /// where every few plans jump ahead of `soon`, keeping it is wasted).
    pushed: u32,
    used: bool,
    /// Every transmission departing at or before this has been released.
    done: Ps,
    cold: Box<Cold>,
}

/// What only releases read.
#[derive(Debug, Clone, Default)]
struct Cold {
    /// The earliest unreleased transmissions in time order (equal times in plan order);
    /// `n_soon` of them.
    soon: [Planned; SOON],
    /// Transmissions planned to depart at or before `done` (at the very time of the last
    /// release): unreleased, though `list` would take them for released ones.
    early: Vec<Planned>,
}

const _: () = assert!(std::mem::size_of::<Departures>() == 64);

impl Default for Departures {
    fn default() -> Self {
        Departures { list: Vec::new(), bound: Ps::MAX, scan_at: SCAN_MIN as u32, n_soon: 0, pushed: 0, used: false, done: 0,
                     cold: Box::default() }
    }
}

impl Departures {
    /// Plan a transmission (wire bytes > 0). True: the list is long enough that the
    /// caller should release the departed ones.
    #[inline]
    pub fn push(&mut self, e: Planned) -> bool {
        debug_assert!(e.1 > 0, "a transmission has bytes");
        self.pushed += 1;
        if e.0 <= self.done {
            self.cold.early.push(e);
            self.bound = 0;
            return false;
        }
        self.list.push(e);
        if e.0 < self.bound {
            // it departs before what `soon` holds: `soon` is found again by the next pass
            self.bound = 0;
        }
        self.list.len() >= self.scan_at as usize
    }

    /// Release every transmission departing at or before `now` that is not released yet:
    /// `f` sees each exactly once (from `soon` in time order, from a pass in plan order).
    /// Returns the earliest departure left. `now` never goes back.
    #[inline]
    pub fn release(&mut self, now: Ps, mut f: impl FnMut(Planned)) -> Option<Ps> {
        if now < self.bound && self.list.len() < self.scan_at as usize {
            // every unreleased departure at or before `now` is in `soon`
            let soon = &mut self.cold.soon;
            let n = self.n_soon as usize;
            let mut k = 0;
            while k < n && soon[k].0 <= now {
                f(soon[k]);
                k += 1;
            }
            if k > 0 {
                soon.copy_within(k..n, 0);
                self.n_soon -= k as u32;
                self.used = true;
            }
            self.done = self.done.max(now);
            if self.n_soon > 0 || self.bound == Ps::MAX {
                return (self.n_soon > 0).then(|| soon[0].0);
            }
        }
        self.pass(now, f)
    }

    /// Release and drop what departed by `now`, compact the list, and find `soon` again
    /// where it pays. Returns the earliest departure left.
    fn pass(&mut self, now: Ps, mut f: impl FnMut(Planned)) -> Option<Ps> {
        let keep = self.used || self.pushed as usize <= 2 * SOON;
        let Departures { list, bound, scan_at, done, n_soon, cold, .. } = self;
        let Cold { soon, early } = &mut **cold;
        let mut n = 0;
        *bound = Ps::MAX;
        let mut next = Ps::MAX;
        let before = *done;
        list.retain(|&e| {
            if e.0 <= before {
                return false; // released from `soon`
            }
            if e.0 <= now {
                f(e);
                return false;
            }
            next = next.min(e.0);
            if keep && e.0 < *bound {
                insert_soon(soon, &mut n, bound, e);
            }
            true
        });
        for e in early.drain(..) {
            // planned at the time of an earlier release, so departed by now
            debug_assert!(e.0 <= now);
            f(e);
        }
        if !keep {
            *bound = 0;
        }
        *n_soon = n as u32;
        *done = now.max(*done);
        *scan_at = (2 * list.len()).max(SCAN_MIN) as u32;
        self.pushed = 0;
        self.used = false;
        (next != Ps::MAX).then_some(next)
    }

    /// The unreleased transmissions, in no particular order.
    pub fn unreleased(&self) -> impl Iterator<Item = &Planned> {
        let done = self.done;
        self.list.iter().filter(move |e| e.0 > done).chain(self.cold.early.iter())
    }

    /// Take every unreleased transmission out (in no particular order), leaving none.
    pub fn take_all(&mut self) -> Vec<Planned> {
        let mut out: Vec<Planned> = self.unreleased().copied().collect();
        out.shrink_to_fit();
        let done = self.done;
        *self = Departures { done, ..Departures::default() };
        out
    }
}

/// Put `e` in `soon` (`n` of them) in time order; if `soon` overflows, its latest leaves
/// and bounds it.
#[inline]
fn insert_soon(soon: &mut [Planned; SOON], n: &mut usize, bound: &mut Ps, e: Planned) {
    let i = soon[..*n].partition_point(|x| x.0 <= e.0);
    if *n == SOON {
        if i == SOON {
            *bound = (*bound).min(e.0);
            return;
        }
        *bound = soon[SOON - 1].0;
        soon.copy_within(i..SOON - 1, i + 1);
    } else {
        soon.copy_within(i..*n, i + 1);
        *n += 1;
    }
    soon[i] = e;
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
                            // from `soon` in time order; from a pass, in plan order
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
    fn a_full_buffer_passes_once_every_soon_departures() {
        // 600 planned far apart; releasing one departure at a time takes them from `soon`
        let mut d = Departures::default();
        for k in 0..600u64 {
            d.push((1_000 + 7 * k, 1500, k as u32));
        }
        d.release(0, |_| {});
        assert_eq!(d.list.len(), 600);
        let mut passes = 0;
        let mut out = Vec::new();
        for k in 0..600u64 {
            let before = d.list.len();
            d.release(1_000 + 7 * k, |e| out.push(e.2));
            if d.list.len() != before {
                passes += 1;
            }
        }
        assert_eq!(out, (0..600).collect::<Vec<u32>>());
        assert!(passes <= 600 / SOON + 1, "{passes} passes");
        assert_eq!(d.release(u64::MAX, |_| {}), None);
    }
}
