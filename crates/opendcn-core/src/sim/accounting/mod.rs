//! Accounting: counters, histograms and the output types of a run.

mod counters;
mod output;
mod sampling;

pub(in crate::sim) use counters::Counters;
pub(in crate::sim) use sampling::Sampling;

use crate::sim::*;

/// The packet-level ledger totals (see [`crate::ledger`]).
#[derive(Debug, Clone, Default)]
pub struct PacketTotals {
    pub sent: u64,
    pub sent_retx: u64,
    pub sent_ctrl: u64,
    pub delivered: u64,
    pub dropped: Vec<(String, u64)>,
    pub dropped_bytes: Vec<(String, u64)>,
    pub trimmed: u64,
    pub trims: u64,
    pub bounces: u64,
    pub in_flight: u64,
    pub duplicate_bytes: u64,
}

/// Everything a run reports.
#[derive(Debug, Clone, Default)]
pub struct SimOutput {
    /// The counters every engine reports.
    pub totals: crate::metrics::RunTotals,
    pub peak_packets: u64,
    /// Events executed per kind (see [`EVENT_KINDS`]).
    pub event_counts: Vec<u64>,
    /// Time series: one row per (sample, watched port).
    pub ts_time_ps: Vec<Ps>,
    pub ts_port: Vec<u32>,
    pub ts_queued_bytes: Vec<u64>,
    pub ts_tx_bytes: Vec<u64>,
    /// Infrastructure services: congestion events detected, push-back messages sent,
    /// injection attempts held back by push-back or flow pausing.
    pub congestion_events: u64,
    pub pushback_msgs: u64,
    pub paused_attempts: u64,
    /// Queue-occupancy estimation: estimates compared with the exact occupancy, mean and
    /// maximum absolute error and mean signed error (bytes).
    pub eqo_samples: u64,
    pub eqo_mean_abs_error: f64,
    pub eqo_max_abs_error: u64,
    pub eqo_mean_error: f64,
    /// Buffer offloading: packets (and bytes) sent down to hosts, peak bytes held on hosts.
    pub offloaded_packets: u64,
    pub offloaded_bytes: u64,
    pub offload_peak_host_bytes: u64,
    /// Packets beyond the window that stayed in the ToR because their host link was full.
    pub offload_refused: u64,
    /// Shared switch buffers: the largest occupancy of one switch's pool seen at an
    /// admission test, and that switch (0 without shared buffers).
    pub shared_peak_bytes: u64,
    pub shared_peak_node: u32,
    /// Per-drop and per-push-back records (empty unless the spec asked for them).
    pub drop_log: droplog::DropLog,
    /// The packet ledger (always counted).
    pub packets: PacketTotals,
    /// Per flow: retransmitted segments and retransmission timeouts (0 for ideal flows).
    pub flow_retx: Vec<u32>,
    pub flow_timeouts: Vec<u32>,
    /// Per flow: when its sender held an acknowledgement of every byte (`Ps::MAX`: not).
    pub flow_acked_ps: Vec<Ps>,
    /// Per flow: the transport it ran with (a bulk flow inside one rack runs NDP).
    pub flow_transport: Vec<TransportKind>,
    /// Per flow: when it started (`Ps::MAX`: not started — a flow whose dependencies had
    /// not all finished by the end).
    pub flow_start_ps: Vec<Ps>,
    /// Admission control: packets that took the routing decision of a later arrival slice
    /// because the slice first chosen had no room; UCMP: packets whose route was chosen
    /// again at a hop that missed its planned slice (`Sim::slice_missed`).
    pub adm_deferred: u64,
    /// Network-wide samples (with `net_series`).
    pub net_series: Vec<NetSample>,
    /// Data packets marked with ECN by ports.
    pub ecn_marks: u64,
    /// Expander routing: packets re-routed at a node because their circuit had gone.
    pub reroutes: u64,
    /// RotorLB: offer/accept steps, packets committed, packets returned to their holder,
    /// packets that reached a relay host, and bulk bytes held at hosts at the end.
    pub rlb_slices: u64,
    pub rlb_committed_pkts: u64,
    pub rlb_returns: u64,
    pub rlb_relayed_pkts: u64,
    pub rlb_host_bytes: u64,
    /// One-way latency of delivered data packets (entering the network to reaching the
    /// receiver): count, mean and quantiles from a log histogram (< 1/32 relative error).
    pub latency_count: u64,
    pub latency_mean_ps: f64,
    pub latency_p50_ps: u64,
    pub latency_p99_ps: u64,
    /// Reorder histogram of data arriving at transport receivers: received − expected
    /// segment number, in buckets `< 0`, `0`, `1-10`, `11-100`, `101-1000`, `> 1000`.
    pub reorder: [u64; 6],
    /// Delivered payload bytes by the most hops a packet took (index = hops, last = more).
    pub delivered_by_hops: Vec<u64>,
    /// Data packets delivered to their final endpoint by hops (same index), for flows on
    /// transports other than RotorLB and for RotorLB (a relayed packet counts both legs).
    pub delivered_pkts_by_hops: Vec<u64>,
    pub bulk_pkts_by_hops: Vec<u64>,
    /// Delivered payload bytes by the set of link classes crossed (bit 0 electrical,
    /// bit 1 static optical, bit 2 reconfigurable optical; index = the bit set).
    pub delivered_by_class: [u64; 8],
    /// Delivered payload bytes by (hops, set of link classes crossed): row = hops as in
    /// `delivered_by_hops`, column = the bit set as in `delivered_by_class`.
    pub delivered_by_hops_class: Vec<[u64; 8]>,
    /// Control messages (`Sim::send_message`): sent, delivered, dropped, in flight.
    pub messages: MessageTotals,
    /// Wire bytes sent and capacity × time (bytes) per link class: electrical, static
    /// optical, reconfigurable optical, host downlink.
    pub class_tx_bytes: [u64; 4],
    pub class_capacity_bytes: [u64; 4],
    /// Holding of packets without a route (zero when off), and per node the most wire
    /// bytes its hold kept at once.
    pub hold: HoldStats,
    pub hold_peak_bytes_by_node: Vec<u64>,
    /// Drained reconfigurations applied: (requested, switched, circuits up); injection
    /// attempts refused during drains; whether a drain was still in progress at the end.
    pub switches: Vec<(Ps, Ps, Ps)>,
    pub drain_refused: u64,
    pub draining: bool,
    /// Hosts mode: packets whose chosen ToR port was reconfigured while they crossed their
    /// host link, forwarded at the ToR by the tables in force on arrival.
    pub rerouted_at_tor: u64,
}

/// One network-wide sample: levels at `time_ps`, counters over the interval ending there.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetSample {
    pub time_ps: Ps,
    /// Bytes queued at all ports.
    pub queued_bytes: u64,
    /// Wire bytes sent by all ports in the interval.
    pub tx_bytes: u64,
    pub trims: u64,
    pub bounces: u64,
    pub delivered_bytes: u64,
    /// Bulk (RotorLB) bytes held at hosts: unsent, relayed, committed.
    pub bulk_host_bytes: u64,
    pub congestion_events: u64,
    pub pushback_msgs: u64,
}

/// Names of the reorder histogram buckets.
pub const REORDER_BUCKETS: [&str; 6] = ["<0", "0", "1-10", "11-100", "101-1000", ">1000"];

/// Names of the link classes of `class_tx_bytes`.
pub const LINK_CLASSES: [&str; 4] = ["electrical", "static_optical", "reconfigurable_optical", "host"];

/// A histogram of positive integers with 32 sub-buckets per power of two.
#[derive(Debug, Clone)]
pub(in crate::sim) struct LogHist {
    pub(in crate::sim) counts: Vec<u64>,
    pub(in crate::sim) n: u64,
    pub(in crate::sim) sum: u128,
}

impl LogHist {
    pub(in crate::sim) fn new() -> Self {
        LogHist { counts: vec![0; 64 * 32], n: 0, sum: 0 }
    }
    #[inline]
    pub(in crate::sim) fn bucket(v: u64) -> usize {
        if v < 32 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize; // >= 5
        let sub = ((v >> (e - 5)) & 31) as usize;
        (e - 4) * 32 + sub
    }
    /// The smallest value of a bucket's range.
    pub(in crate::sim) fn low(b: usize) -> u64 {
        if b < 32 {
            return b as u64;
        }
        let e = b / 32 + 4;
        let sub = (b % 32) as u64;
        (1u64 << e) | (sub << (e - 5))
    }
    #[inline]
    pub(in crate::sim) fn add(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.n += 1;
        self.sum += v as u128;
    }
    pub(in crate::sim) fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut acc = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return Self::low(b);
            }
        }
        0
    }
}

crate::with_totals!(SimOutput);

/// Packets held because they had no route yet (see `SimSpec::hold_unrouted`).
#[derive(Debug, Clone, Copy, Default)]
pub struct HoldStats {
    /// Held now (packets, wire bytes).
    pub packets: u64,
    pub bytes: u64,
    /// The most held at once over the run (packets, wire bytes).
    pub peak_packets: u64,
    pub peak_bytes: u64,
    /// Packets that entered a hold, and that left it with a route.
    pub total: u64,
    pub released: u64,
    /// Relayed packets that found their node's hold full (dropped as `buffer_overflow`).
    pub overflow: u64,
    /// Injection attempts refused because the source node's hold was full.
    pub refused: u64,
}
