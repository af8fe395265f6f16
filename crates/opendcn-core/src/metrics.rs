//! What every engine reports about a run: the counters of the summary, the per-flow
//! columns and the invariant checks. Each engine's output struct holds one `RunTotals`
//! (and dereferences to it) next to its own extras.

use crate::units::Ps;

/// Counters, per-flow columns and violated invariants of one run.
#[derive(Debug, Clone, Default)]
pub struct RunTotals {
    pub now_ps: Ps,
    pub events: u64,
    /// One packet (or cell) crossing one link.
    pub packet_hops: u64,
    pub flows_started: u64,
    pub flows_completed: u64,
    /// Payload bytes of started flows; offered == delivered + dropped + in flight.
    pub bytes_offered: u64,
    pub bytes_delivered: u64,
    pub bytes_dropped: u64,
    pub bytes_in_flight: u64,
    /// Dropped payload bytes by reason.
    pub drops: Vec<(String, u64)>,
    pub collisions: u64,
    pub guardband_violations: u64,
    /// Hash of the event trace (identical for the same spec and seed).
    pub trace_hash: u64,
    /// Per flow, in the caller's order: finish time (`u64::MAX` if not completed),
    /// delivered bytes, most hops of its packets.
    pub flow_finish_ps: Vec<Ps>,
    pub flow_delivered: Vec<u64>,
    pub flow_hops: Vec<u32>,
    /// Violated invariants, empty when the run is sound.
    pub invariant_errors: Vec<String>,
}

/// Give an engine's output struct (with a `totals: RunTotals` field) the common fields.
#[macro_export]
macro_rules! with_totals {
    ($t:ty) => {
        impl std::ops::Deref for $t {
            type Target = $crate::metrics::RunTotals;
            fn deref(&self) -> &Self::Target {
                &self.totals
            }
        }
        impl std::ops::DerefMut for $t {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.totals
            }
        }
    };
}
