//! Endpoints and flows: the per-host state and the per-flow records.

mod admit;
mod flows;
mod inject;

pub(in crate::sim) use flows::Deps;

use crate::sim::*;

#[derive(Debug, Clone)]
pub(in crate::sim) struct Endpoint {
    pub(in crate::sim) node: u32,
    pub(in crate::sim) rate: Rate,
    pub(in crate::sim) prop: Ps,
    pub(in crate::sim) down_port: u32,
    pub(in crate::sim) busy_until: Ps,
    /// Bytes of other than bulk traffic this endpoint's NIC has sent (RotorLB's NIC push).
    pub(in crate::sim) nic_bytes: u64,
    pub(in crate::sim) scheduled: bool,
    /// Ideal-transport flows per destination: destination → its slot in `voqs` (looked
    /// up only when a flow arrives for a destination without one, or a queue empties).
    pub(in crate::sim) voq: BTreeMap<u32, u32>,
    /// The per-destination queues, in slots (`voq_free`: slots not in use). An injection
    /// try reads only its slot, not the map nor the flow record.
    pub(in crate::sim) voqs: Vec<Voq>,
    pub(in crate::sim) voq_free: Vec<u32>,
    /// Slots of destinations with data that may go now, in round-robin order.
    pub(in crate::sim) rr: VecDeque<u32>,
    /// Destinations with data that cannot go before a time (egress full, slice full,
    /// pushed back, paused): (time, destination, slot), in (time, destination) order.
    /// Each destination with data is in exactly one of `rr` and `sleeping`.
    pub(in crate::sim) sleeping: std::collections::BinaryHeap<std::cmp::Reverse<(Ps, u32, u32)>>,
    /// When the pending injection event fires (valid while `scheduled`).
    pub(in crate::sim) sched_at: Ps,
    /// Control packets (ACK, NACK, PULL) waiting for the link, served first.
    pub(in crate::sim) ctrl: VecDeque<u32>,
    /// Transport flows that may send now, in round-robin order, and those waiting for
    /// room at the egress until a time. A flow blocked by its window is in neither.
    pub(in crate::sim) tready: VecDeque<u32>,
    pub(in crate::sim) tsleep: std::collections::BinaryHeap<std::cmp::Reverse<(Ps, u32)>>,
    /// Alternates data service between ideal and transport flows.
    pub(in crate::sim) turn: bool,
}

/// The ideal-transport flows of one source endpoint to one destination endpoint, in FIFO
/// order; the head flow's progress is kept here (and written through to its record).
#[derive(Debug, Clone, Default)]
pub(in crate::sim) struct Voq {
    pub(in crate::sim) dst: u32,
    pub(in crate::sim) dst_node: u32,
    /// The flow being sent, its size and its bytes injected so far.
    pub(in crate::sim) head: u32,
    pub(in crate::sim) size: u64,
    pub(in crate::sim) injected: u64,
    /// The flows queued behind it.
    pub(in crate::sim) rest: VecDeque<u32>,
}

#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Flow {
    pub(in crate::sim) start: Ps,
    pub(in crate::sim) src: u32,
    pub(in crate::sim) dst: u32,
    pub(in crate::sim) size: u64,
    pub(in crate::sim) injected: u64,
    pub(in crate::sim) delivered: u64,
    pub(in crate::sim) finish: Ps,
    pub(in crate::sim) max_hops: u16,
    pub(in crate::sim) tp: TransportKind,
    /// Index of its connection state in `Sim::conns` (NONE: none, or finished).
    pub(in crate::sim) conn: u32,
    /// A built packet that the egress could not take yet (NONE: none).
    pub(in crate::sim) parked: u32,
    /// In its endpoint's `tready` or `tsleep`.
    pub(in crate::sim) inq: bool,
    /// Time of its pending timer event (`Ps::MAX`: none).
    pub(in crate::sim) timer_at: Ps,
    pub(in crate::sim) retx: u32,
    pub(in crate::sim) timeouts: u32,
    /// When its sender held an acknowledgement of every byte (`Ps::MAX`: not yet, or ideal).
    pub(in crate::sim) acked_at: Ps,
    /// It has started (its bytes are offered).
    pub(in crate::sim) started: bool,
}
