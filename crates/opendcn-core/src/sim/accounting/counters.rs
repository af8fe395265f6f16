//! Counters, histograms, the trace hash and the packet ledger.

use crate::sim::*;

/// Counters, histograms, the trace hash and the packet ledger.
pub(in crate::sim) struct Counters {
    pub(in crate::sim) rerouted_at_tor: u64,
    pub(in crate::sim) events: u64,
    pub(in crate::sim) event_counts: [u64; EVENT_KINDS.len()],
    pub(in crate::sim) packet_hops: u64,
    pub(in crate::sim) flows_started: u64,
    pub(in crate::sim) flows_completed: u64,
    pub(in crate::sim) offered: u64,
    pub(in crate::sim) delivered: u64,
    pub(in crate::sim) drops: [u64; DROP_REASONS.len()],
    pub(in crate::sim) collisions: u64,
    pub(in crate::sim) gb_violations: u64,
    /// Expander routing: packets re-routed at a node because their circuit had gone.
    pub(in crate::sim) reroutes: u64,
    pub(in crate::sim) trace: crate::trace::TraceHash,
    pub(in crate::sim) ledger: Ledger,
    pub(in crate::sim) ecn_marks: u64,
    pub(in crate::sim) latency: LogHist,
    pub(in crate::sim) reorder: [u64; 6],
    pub(in crate::sim) delivered_by_hops: Vec<u64>,
    /// Data packets delivered to their final endpoint by hops: [other, RotorLB bulk].
    pub(in crate::sim) pkts_by_hops: [Vec<u64>; 2],
    pub(in crate::sim) delivered_by_class: [u64; 8],
    /// Delivered payload bytes by (hops, set of link classes crossed), same indices.
    pub(in crate::sim) delivered_by_hops_class: Vec<[u64; 8]>,
    pub(in crate::sim) class_tx: [u64; 4],
    pub(in crate::sim) adm_deferred: u64,
}
