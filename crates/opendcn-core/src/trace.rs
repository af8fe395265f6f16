//! The trace hash every engine reports: one formula for all.
//!
//! A run's hash is the wrapping sum, over the records an engine makes as it runs (an event
//! executed, a cell sent, a flow completed), of a 64-bit mix of the record's time and
//! content. The sum does not depend on the order of the records, so an engine that runs
//! independent parts apart (Shale's parallel windows) adds their partial hashes and gets
//! the hash a sequential run of the same records gives. Equal specs and seeds give equal
//! hashes; a changed schedule, route or timing changes the records and, with overwhelming
//! probability, the hash. Observing a run (time-series samples) records nothing.

use crate::rng::mix64;
use crate::units::Ps;

/// Accumulated trace hash (`Default`: an empty partial hash, to be merged).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceHash(u64);

impl TraceHash {
    /// The hash of a run before any record.
    pub const fn start() -> Self {
        TraceHash(0x0dcb_5eed_7ace_0001)
    }

    /// Add one record: something identified by `what` happened at `time`.
    #[inline]
    pub fn record(&mut self, time: Ps, what: u64) {
        self.0 = self.0.wrapping_add(mix64(time.rotate_left(29) ^ what));
    }

    /// Add a partial hash of records made apart.
    #[inline]
    pub fn merge(&mut self, other: TraceHash) {
        self.0 = self.0.wrapping_add(other.0);
    }

    pub fn value(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_free_and_mergeable() {
        let recs = [(5u64, 1u64), (5, 2), (9, 1), (1_000_000, 77)];
        let mut a = TraceHash::start();
        for &(t, w) in &recs {
            a.record(t, w);
        }
        let mut b = TraceHash::start();
        for &(t, w) in recs.iter().rev() {
            b.record(t, w);
        }
        assert_eq!(a, b);
        // two halves recorded apart and merged give the same hash
        let (mut p, mut q) = (TraceHash::default(), TraceHash::default());
        p.record(recs[0].0, recs[0].1);
        p.record(recs[3].0, recs[3].1);
        q.record(recs[1].0, recs[1].1);
        q.record(recs[2].0, recs[2].1);
        let mut c = TraceHash::start();
        c.merge(p);
        c.merge(q);
        assert_eq!(a, c);
        // a different time or record changes it
        let mut d = TraceHash::start();
        for &(t, w) in &recs[..3] {
            d.record(t, w);
        }
        d.record(1_000_001, 77);
        assert_ne!(a, d);
        assert_ne!(a, TraceHash::start());
    }
}
