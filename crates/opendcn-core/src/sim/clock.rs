//! The simulated time and the slice that contains it.

use crate::sim::*;

/// The simulated time and the slice that contains it. Time only moves forward, through
/// [`Clock::advance`], which keeps the slice current; reading either needs no `&mut`.
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Clock {
    pub(in crate::sim) now: Ps,
    /// The slice of the schedule containing `now` (kept by `advance`).
    pub(in crate::sim) cur: SliceRef,
}

impl Clock {
    /// The clock at time 0 of `sched`.
    pub(in crate::sim) fn start(sched: &Schedule) -> Self {
        Clock { now: 0, cur: sched.slice_at(0) }
    }

    /// Move to time `t` (never earlier than now), looking up the slice only when `t` has
    /// left the current one.
    #[inline]
    pub(in crate::sim) fn advance(&mut self, t: Ps, sched: &Schedule) {
        debug_assert!(t >= self.now, "time moves forward");
        self.now = t;
        if t >= self.cur.end || t < self.cur.start {
            self.cur = sched.slice_at(t);
        }
    }

    /// The slice containing `now`.
    #[inline]
    pub(in crate::sim) fn slice(&self) -> SliceRef {
        self.cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_follows_time_across_cycles() {
        // three slices of 2, 3 and 5 us, cycle of 10 us
        let sched = Schedule::cyclic(vec![2_000_000, 3_000_000, 5_000_000], 0, 2, vec![NONE; 6]).unwrap();
        let mut c = Clock::start(&sched);
        assert_eq!((c.slice().idx, c.slice().start, c.slice().end), (0, 0, 2_000_000));
        for t in [1, 1_999_999, 2_000_000, 4_999_999, 5_000_000, 10_000_000, 23_000_000, 23_000_000, 99_999_999] {
            c.advance(t, &sched);
            assert_eq!(c.now, t);
            assert_eq!(c.slice(), sched.slice_at(t), "at {t}");
        }
    }

    #[test]
    fn a_static_schedule_has_one_endless_slice() {
        let sched = Schedule::fixed(2, vec![NONE; 2]).unwrap();
        let mut c = Clock::start(&sched);
        c.advance(123_456_789, &sched);
        assert_eq!((c.slice().abs, c.slice().end), (0, Ps::MAX));
    }
}
