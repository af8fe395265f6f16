//! The simulation: events, packets, ports with calendar queues, links, endpoints,
//! metrics and invariants.
//!
//! What is modeled and what is simplified:
//! - Events are ordered by `(time, seq)`. Work is one arrival event per packet-hop plus
//!   one injection event per packet sent by an endpoint: idle ports, idle nodes and slice
//!   boundaries cost nothing.
//! - Ports are output-queued and store-and-forward. An optical port keeps one FIFO
//!   calendar queue per slice of the cycle (a packet waits in the queue of its departure
//!   slice; rank = departure − arrival slice). A packet is sent only if its whole
//!   serialization fits in the up-time of its slice (`[start + guardband, end)`);
//!   otherwise it — and the packets queued behind it — wait for the next occurrence of
//!   that slice. Because every queue is FIFO and slices do not overlap, a packet's
//!   departure time is fully determined when it is enqueued: the port *plans* it then
//!   (the tail of its calendar queue, or of its link for electrical ports) and schedules
//!   only its arrival at the next hop. A wildcard departure on an optical port means the
//!   first slice, from now, in which the port has a circuit and the packet fits.
//!   Slice timing applies at the sender's egress (OpenOptics rotates queues early to
//!   absorb the switch-to-switch delay).
//! - Buffers are per egress port, in bytes over all its queues; a packet occupies the
//!   buffer from its enqueue to the start of its transmission. A packet that does not fit
//!   is dropped (`buffer_overflow`). Sources never drop: an endpoint whose next packet
//!   does not fit waits until that port starts its next transmission (ideal
//!   back-pressure).
//! - Endpoints hold per-destination queues of flows and inject packets round-robin over
//!   destinations at their link rate. With hosts below nodes, the host link adds its
//!   serialization and propagation; the node delivers through a host downlink port.
//! - A runtime reconfiguration of a static schedule takes the changed circuits down for the
//!   reconfiguration delay; a packet being serialized on a changed circuit is dropped
//!   (`reconfiguration`), as in OpenOptics' emulated fabric, and packets planned on it
//!   but not yet sent are planned again on the new circuit after the delay.
//! - Invariants checked at the end of every run: payload bytes offered == delivered +
//!   dropped + in flight (counted independently), optical collisions (two senders on one
//!   receiving port in one slice, checked as packets arrive) and guardband violations
//!   (bits planned while a circuit is not up, checked against the schedule for every
//!   transmission).

use std::collections::{BTreeMap, VecDeque};
use smallvec::{smallvec, SmallVec};

use crate::departures::{Departures, Planned};
use crate::error::SpecError;
use crate::event::EventList;
use crate::rng::{mix64, Stream};
use crate::schedule::Schedule;
use crate::ledger::Ledger;
use crate::spec::{Discipline, Multipath, PortKind, RouterKind, SimSpec, StopWhen, TransportKind, TransportParams};
use crate::transport::ndp::{NdpConfig, NdpReceiver, NdpSender, PullPacer};
use crate::transport::tcp::{TcpAck, TcpConfig, TcpReceiver, TcpSender};
use crate::transport::rotorlb::{Arrival, BulkPkt, Poll, RotorLb, RotorLbConfig};
use crate::transport::Send;
use crate::timeflow::{build_tables, Action, ConnIndex, Entry, Router, Routes, WILD};
use crate::schedule::SliceRef;
use crate::units::{Ps, Rate, NONE};

mod messages;
pub mod buffer;
pub mod droplog;
pub use messages::{Message, MessageTotals};

/// Drop reasons, indexed into `SimOutput::drops`.
pub const DROP_REASONS: [&str; 11] = ["buffer_overflow", "no_route", "no_circuit", "reconfiguration", "oversize",
                                       "class_overflow", "header_overflow", "injected", "bulk_returned", "failed_link",
                                       "adm_fail"];
const DROP_BUFFER: usize = 0;
const DROP_NO_ROUTE: usize = 1;
const DROP_NO_CIRCUIT: usize = 2;
const DROP_RECONF: usize = 3;
const DROP_OVERSIZE: usize = 4;
/// A priority class of a served port is full (drop-tail per class).
const DROP_CLASS: usize = 5;
/// A trimmed header (or control packet) finds the header class full.
const DROP_HEADER: usize = 6;
/// A loss the spec asked for (`SimSpec::loss`): the first copy of a data segment.
const DROP_INJECTED: usize = 7;
/// A RotorLB packet whose circuit no longer led to its committed rack (or that found no
/// room): it goes back to its holder host, nothing is lost.
const DROP_RETURNED: usize = 8;
/// A packet queued on a link that failed, or with no way on but a failed link (listed
/// only in runs with failures).
const DROP_FAILED: usize = 9;
/// Admission control found no slice with room within a cycle (listed only in runs with
/// admission control).
const DROP_ADM: usize = 10;

/// Events the event list keeps in view ahead of the one being run (for prefetching).
const LOOKAHEAD: usize = 8;
/// How far ahead the next hop of an arrival is prefetched (its packet is in cache by then).
const NEAR: usize = 3;

/// Packet kinds.
const K_DATA: u8 = 0;
const K_ACK: u8 = 1;
const K_NACK: u8 = 2;
const K_PULL: u8 = 3;
/// A RotorLB bulk packet (its route and hosts are in `Sim::bulk_meta`).
const K_BULK: u8 = 4;
/// A control message between nodes (`Sim::send_message`; `flow` is its message id).
const K_MSG: u8 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    /// A packet reaches the far end of a link (packet id, plan epoch).
    Arrive(u32, u16),
    HostArrive(u32),
    Inject(u32),
    NextFlows,
    Sample,
    Reconfig(u32),
    /// A push-back message reaches a source node (index into the pending messages).
    PushBack(u32),
    /// An offloaded packet leaves its host for the ToR (buffer offloading).
    OffloadSend(u32),
    /// An offloaded packet reaches its ToR again.
    OffloadReturn(u32, u16),
    /// A served port has finished a transmission.
    PortFree(u32),
    /// A flow's transport timer (lazy: stale unless it matches the flow's armed time).
    Timer(u32),
    /// An NDP pull pacer (of a receiving endpoint, or of a flow) may release a pull.
    Pacer(u32),
    /// Credit returns to a port (the oldest of its pending returns).
    Credit(u32),
    /// The deadlock watchdog of a credit-based network.
    Watchdog,
    /// RotorLB's offer/accept step (a rotor has just taken a new matching).
    Rlb,
    /// Held packets (no route yet) are tried again (after new tables, or when a port
    /// that a released packet needs has room again).
    Release,
    /// A flow whose dependencies have finished starts.
    Start(u32),
}

/// Names of the event kinds, in the order of `SimOutput::event_counts`.
pub const EVENT_KINDS: [&str; 17] = ["arrive", "host_arrive", "inject", "next_flows", "sample", "reconfig", "pushback",
                                   "offload_send", "offload_return", "port_free", "timer", "pacer", "credit", "watchdog", "rlb", "release",
                                   "flow_start"];

impl Ev {
    fn kind(self) -> usize {
        match self {
            Ev::Arrive(..) => 0,
            Ev::HostArrive(_) => 1,
            Ev::Inject(_) => 2,
            Ev::NextFlows => 3,
            Ev::Sample => 4,
            Ev::Reconfig(_) => 5,
            Ev::PushBack(_) => 6,
            Ev::OffloadSend(_) => 7,
            Ev::OffloadReturn(..) => 8,
            Ev::PortFree(_) => 9,
            Ev::Timer(_) => 10,
            Ev::Pacer(_) => 11,
            Ev::Credit(_) => 12,
            Ev::Watchdog => 13,
            Ev::Rlb => 14,
            Ev::Release => 15,
            Ev::Start(_) => 16,
        }
    }

    fn code(self) -> u64 {
        let id = match self {
            Ev::Arrive(x, e) | Ev::OffloadReturn(x, e) => x as u64 | (e as u64) << 40,
            Ev::HostArrive(x) | Ev::Inject(x) | Ev::Reconfig(x) | Ev::PushBack(x) | Ev::OffloadSend(x)
            | Ev::PortFree(x) | Ev::Timer(x) | Ev::Pacer(x) | Ev::Credit(x) | Ev::Start(x) => x as u64,
            Ev::NextFlows | Ev::Sample | Ev::Watchdog | Ev::Rlb | Ev::Release => 0,
        };
        id ^ (self.kind() as u64) << 32
    }
}

/// A packet: what its hops read, in one cache line (the rest, read where it enters and
/// leaves the network, is its [`PacketX`] in `Sim::pool_x`).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct Packet {
    flow: u32,
    src_node: u32,
    dst_node: u32,
    wire: u32,
    /// Arrival slice at the node that holds it (the slice the previous hop sent it in).
    tag: u32,
    /// Node (or host endpoint, when `to_host`) the packet is travelling to.
    at: u32,
    /// Receiving port of its current link (collision check), or NONE.
    rx: u32,
    /// Sending port of its current link and the absolute slice it was sent in.
    from: u32,
    sent_abs: u32,
    route: u32,
    pos: u32,
    /// Credit networks: the port whose link credit this packet holds (NONE: none), and
    /// the virtual channel it used there (kept after the credit goes back: the channel
    /// of its previous fabric link, which a routing-chosen channel rule starts from).
    cred_port: u32,
    hops: u16,
    /// Bumped when a planned transmission is cancelled (reconfiguration).
    epoch: u16,
    /// Routing generation its source route belongs to (routes die with a reconfiguration).
    rgen: u16,
    cred_vc: u8,
    /// `K_DATA`, `K_ACK`, `K_NACK` or `K_PULL`.
    kind: u8,
    /// Link classes crossed (bit 0 electrical, 1 static optical, 2 reconfigurable optical).
    classes: u8,
    /// PIAS priority level (0 highest), set when the packet leaves its source.
    prio: u8,
    to_host: bool,
    doomed: bool,
    /// Cut to its header by a trimming port (its payload no longer travels).
    trimmed: bool,
    /// Data: carries an ECN congestion mark. ACK: echoes one (ECE).
    ce: bool,
    /// Admitted into the network by its source and not yet gone (counted in `in_net`).
    innet: bool,
    /// Data of an NDP flow (its port class, read at every hop without the flow record).
    ndp: bool,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// The rest of a packet (`Sim::pool_x`, same index): read where it enters the network,
/// crosses a host link, or is delivered.
#[derive(Debug, Clone, Copy, Default)]
struct PacketX {
    dst_ep: u32,
    payload: u32,
    /// Egress port and departure slice reserved at injection (hosts mode).
    q_port: u32,
    q_dep: u32,
    /// Data: segment number. ACK: next expected segment (TCP) or the segment acknowledged
    /// (NDP). NACK: the trimmed segment. PULL: the cumulative pull number.
    seq: u32,
    /// Hosts mode: the reconfiguration count of `q_port` when the port was chosen (a
    /// different count at the ToR: the port's circuit changed while the packet crossed
    /// its host link).
    q_gen: u16,
    /// Data sent again by its transport (push-back holds only new data).
    retx: bool,
    /// Data: the time it entered the network. ACK: the echoed send time of the data.
    ts: Ps,
}

/// What a served optical port may do with its head packet on a cyclic schedule.
enum Gate {
    /// Send it now to this receiving port.
    Send(u32),
    /// It left the port (re-routed to another port, or dropped).
    Moved,
    /// Its circuit is down: wait until this time.
    Wait(Ps),
}

/// Where and when a planned packet goes ([`Sim::launch`]): its departure, serialization
/// and wire bytes, the absolute slice it is sent in and the arrival slice it carries, the
/// node (or host) it reaches and the port receiving it (NONE: not an optical circuit).
struct Launch {
    d: Ps,
    ser: Ps,
    wire: u64,
    abs: u64,
    tag: u32,
    at: u32,
    rx: u32,
    to_host: bool,
}

/// A departure on a slotted port: (start of the serialization, absolute slice, slice
/// index, receiving port).
type SlotPlan = (Ps, u64, u32, u32);

/// One calendar queue of a port (a slice index of a slotted port's cycle; the only queue
/// of any other port): the state one packet-hop reads and writes, in one cache line.
#[derive(Debug, Clone, Default)]
#[repr(align(64))]
struct CalQ {
    /// (absolute slice, time) at which the queue's tail ends (slotted ports).
    tail: (u64, Ps),
    /// Bytes planned but not started.
    bytes: u64,
    /// Planned transmissions not yet departed (departures grow along the FIFO).
    planned: VecDeque<Planned>,
    /// Transmissions planned here since this queue last had its port release the
    /// departed ones (at [`LAZY_RELEASE`] it does).
    lazy: u32,
}

const _: () = assert!(std::mem::size_of::<CalQ>() == 64);

/// A port. The fields a packet-hop touches come first, in two cache lines (`repr(C)`
/// keeps this order; the assertion below keeps them within 128 bytes).
#[derive(Debug, Clone)]
#[repr(C, align(64))]
struct Port {
    // first line: admission and planning
    /// The least of the calendar queues' first departures (`Ps::MAX`: nothing planned),
    /// read first so that a port with nothing due costs no more.
    next_dep: Ps,
    /// Bytes planned but not yet departed (the buffer occupancy).
    bytes: u64,
    cap: u64,
    rate: Rate,
    prop: Ps,
    down_until: Ps,
    /// First of its calendar queues in `Sim::cal` (NONE: not yet used): one per slice
    /// index of a slotted port, one for any other port.
    cal: u32,
    kind: PortKind,
    /// Served model (priority classes / trimming): per class its FIFO of packets and
    /// bytes, the byte caps, trimming, and whether a `PortFree` event is pending.
    served: bool,
    trim: bool,
    free_pending: bool,
    // second line: departures
    /// A small heap of the calendar queues' first departures (slotted ports whose plans
    /// are not in `departs`; a port with one queue finds its next departure in that queue).
    heads: std::collections::BinaryHeap<std::cmp::Reverse<(Ps, u32)>>,
    /// Tail of the FIFO of an electrical / host / static optical port.
    busy_until: Ps,
    tx_bytes: u64,
    /// Last packet released (departed) and the end of its serialization.
    last_end: Ps,
    /// ECN marking threshold in bytes (0: off).
    ecn_k: u64,
    last_pkt: u32,
    peer: u32,
    // third line: a calendar port's planned transmissions (when `Sim::flat_cal`)
    departs: Departures,
    // the rest
    tx_bytes_sampled: u64,
    classes: SmallVec<[VecDeque<u32>; INLINE_CLASSES]>,
    class_bytes: SmallVec<[u64; INLINE_CLASSES]>,
    class_cap: SmallVec<[u64; INLINE_CLASSES]>,
    /// Credit-based flow control: bytes of credit per virtual channel (empty: none), the
    /// returns on their way back (arrival time, virtual channel, bytes; in time order, as
    /// every return of a port crosses the same link), the next channel to serve, since when
    /// the port has waited for credit with packets queued (`Ps::MAX`: not), and the time of
    /// its pending credit wake-up (`Ps::MAX`: none). Returns are taken in lazily, when the
    /// port next picks a packet; only a port that waits for credit gets an event for one.
    credit: SmallVec<[u64; INLINE_CLASSES]>,
    cred_ret: VecDeque<(Ps, u8, u32)>,
    rr_vc: usize,
    blocked_since: Ps,
    cred_wake: Ps,
    /// Weighted service (deficit round robin): bytes per round of each class (empty:
    /// strict priority), the deficits and the class being served.
    quantum: Vec<u64>,
    deficit: Vec<u64>,
    drr: usize,
}

/// A calendar queue has its port release the departed transmissions at least every this
/// many transmissions planned in it (`Sim::release_for` releases when a test needs it).
const LAZY_RELEASE: u32 = 128;

/// Port queues, their byte counts, caps and credits are kept in the port up to this many
/// classes (virtual channels), so serving a port reads no further allocation.
const INLINE_CLASSES: usize = 4;

const _: () = assert!(std::mem::offset_of!(Port, free_pending) < 64 && std::mem::offset_of!(Port, peer) + 4 <= 128
    && std::mem::offset_of!(Port, departs) == 128);

#[derive(Debug, Clone)]
struct Endpoint {
    node: u32,
    rate: Rate,
    prop: Ps,
    down_port: u32,
    busy_until: Ps,
    scheduled: bool,
    /// Ideal-transport flows per destination: destination → its slot in `voqs` (looked
    /// up only when a flow arrives for a destination without one, or a queue empties).
    voq: BTreeMap<u32, u32>,
    /// The per-destination queues, in slots (`voq_free`: slots not in use). An injection
    /// try reads only its slot, not the map nor the flow record.
    voqs: Vec<Voq>,
    voq_free: Vec<u32>,
    /// Slots of destinations with data that may go now, in round-robin order.
    rr: VecDeque<u32>,
    /// Destinations with data that cannot go before a time (egress full, slice full,
    /// pushed back, paused): (time, destination, slot), in (time, destination) order.
    /// Each destination with data is in exactly one of `rr` and `sleeping`.
    sleeping: std::collections::BinaryHeap<std::cmp::Reverse<(Ps, u32, u32)>>,
    /// When the pending injection event fires (valid while `scheduled`).
    sched_at: Ps,
    /// Control packets (ACK, NACK, PULL) waiting for the link, served first.
    ctrl: VecDeque<u32>,
    /// Transport flows that may send now, in round-robin order, and those waiting for
    /// room at the egress until a time. A flow blocked by its window is in neither.
    tready: VecDeque<u32>,
    tsleep: std::collections::BinaryHeap<std::cmp::Reverse<(Ps, u32)>>,
    /// Alternates data service between ideal and transport flows.
    turn: bool,
}

/// The ideal-transport flows of one source endpoint to one destination endpoint, in FIFO
/// order; the head flow's progress is kept here (and written through to its record).
#[derive(Debug, Clone, Default)]
struct Voq {
    dst: u32,
    dst_node: u32,
    /// The flow being sent, its size and its bytes injected so far.
    head: u32,
    size: u64,
    injected: u64,
    /// The flows queued behind it.
    rest: VecDeque<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Flow {
    start: Ps,
    src: u32,
    dst: u32,
    size: u64,
    injected: u64,
    delivered: u64,
    finish: Ps,
    max_hops: u16,
    tp: TransportKind,
    /// Index of its connection state in `Sim::conns` (NONE: none, or finished).
    conn: u32,
    /// A built packet that the egress could not take yet (NONE: none).
    parked: u32,
    /// In its endpoint's `tready` or `tsleep`.
    inq: bool,
    /// Time of its pending timer event (`Ps::MAX`: none).
    timer_at: Ps,
    retx: u32,
    timeouts: u32,
    /// When its sender held an acknowledgement of every byte (`Ps::MAX`: not yet, or ideal).
    acked_at: Ps,
    /// It has started (its bytes are offered).
    started: bool,
}

/// Sender and receiver state of one flow with an end-to-end transport.
enum Conn {
    Tcp(TcpSender, TcpReceiver),
    Ndp(NdpSender, NdpReceiver),
}

impl Conn {
    fn can_send(&self) -> bool {
        match self {
            Conn::Tcp(s, _) => s.can_send(),
            Conn::Ndp(s, _) => s.can_send(),
        }
    }
    fn poll_send(&mut self, now: Ps) -> Option<Send> {
        match self {
            Conn::Tcp(s, _) => s.poll_send(now),
            Conn::Ndp(s, _) => s.poll_send(now),
        }
    }
    fn timer(&self) -> Option<Ps> {
        match self {
            Conn::Tcp(s, _) => s.timer(),
            Conn::Ndp(s, _) => s.timer(),
        }
    }
    fn on_timer(&mut self, now: Ps) {
        match self {
            Conn::Tcp(s, _) => s.on_timer(now),
            Conn::Ndp(s, _) => s.on_timer(now),
        }
    }
    fn sender_done(&self) -> bool {
        match self {
            Conn::Tcp(s, _) => s.done(),
            Conn::Ndp(s, _) => s.done(),
        }
    }
    fn stats(&self) -> crate::transport::SenderStats {
        match self {
            Conn::Tcp(s, _) => s.stats(),
            Conn::Ndp(s, _) => s.stats(),
        }
    }
    /// Payload bytes the receiver has not received yet, counted from its bits.
    fn missing_bytes(&self, size: u64, mss: u32) -> u64 {
        let set = match self {
            Conn::Tcp(_, r) => r.received(),
            Conn::Ndp(_, r) => r.received(),
        };
        let n = crate::transport::segments(size, mss);
        (0..n).filter(|&q| !set.contains(q)).map(|q| crate::transport::seg_len(size, mss, q) as u64).sum()
    }
}

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
    /// again at a hop that missed its planned slice (`Sim::ucmp_missed`).
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
struct LogHist {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
}

impl LogHist {
    fn new() -> Self {
        LogHist { counts: vec![0; 64 * 32], n: 0, sum: 0 }
    }
    #[inline]
    fn bucket(v: u64) -> usize {
        if v < 32 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize; // >= 5
        let sub = ((v >> (e - 5)) & 31) as usize;
        (e - 4) * 32 + sub
    }
    /// The smallest value of a bucket's range.
    fn low(b: usize) -> u64 {
        if b < 32 {
            return b as u64;
        }
        let e = b / 32 + 4;
        let sub = (b % 32) as u64;
        (1u64 << e) | (sub << (e - 5))
    }
    #[inline]
    fn add(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.n += 1;
        self.sum += v as u128;
    }
    fn quantile(&self, q: f64) -> u64 {
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

/// A simulation in progress.
pub struct Sim {
    now: Ps,
    heap: EventList<Ev>,
    sched: Schedule,
    router: Router,
    multipath: Multipath,
    port_node: Vec<u32>,
    port_offset: Vec<u32>,
    optical: Vec<bool>,
    ports: Vec<Port>,
    /// The ports' calendar queues (see `Port::cal`).
    cal: Vec<CalQ>,
    /// Per receiving port: the absolute slice and the sender of the last packet it
    /// received (the collision check).
    rx_last: Vec<(u32, u32)>,
    eps: Vec<Endpoint>,
    hosts_mode: bool,
    flows: Vec<Flow>,
    next_flow: usize,
    pool: Vec<Packet>,
    pool_x: Vec<PacketX>,
    free: Vec<u32>,
    live: u64,
    peak_live: u64,
    mtu: u32,
    header: u32,
    rng_route: Stream,
    /// Expander router with k paths per pair: which path a packet takes.
    rng_paths: Stream,
    seed: u64,
    // reconfiguration
    /// Pending reconfigurations: new peer table, delay, drop what is queued on changed ports.
    reconfigs: Vec<(Vec<u32>, Ps, bool, Ps)>,
    reconfigs_applied: u64,
    max_hop: u32,
    /// Bumped whenever a reconfiguration rebuilds a path-based router.
    route_gen: u16,
    /// Per global port: how many reconfigurations changed its circuit (wrapping).
    port_gen: Vec<u16>,
    rerouted_at_tor: u64,
    // OpenOptics infrastructure services
    services: crate::spec::Services,
    /// Push-back: (source node << 32 | destination node) → until when that pair's new
    /// data waits (one flat table: a source's try reads one slot).
    paused: crate::flatmap::FlatMap,
    pushbacks: Vec<(u32, u32, Ps)>,
    congestion_events: u64,
    pushback_msgs: u64,
    paused_attempts: u64,
    /// Push-back from served ports: (port, source node, destination node) already sent in
    /// routing slice `pb_slice`.
    pb_sent: std::collections::BTreeSet<(u32, u32, u32)>,
    pb_slice: u64,
    eqo: crate::services::Eqo,
    offload: crate::services::Offload,
    // metrics
    events: u64,
    event_counts: [u64; EVENT_KINDS.len()],
    packet_hops: u64,
    flows_started: u64,
    flows_completed: u64,
    offered: u64,
    delivered: u64,
    drops: [u64; DROP_REASONS.len()],
    collisions: u64,
    gb_violations: u64,
    /// Expander routing: packets re-routed at a node because their circuit had gone.
    reroutes: u64,
    expander: bool,
    trace: crate::trace::TraceHash,
    sample_interval: Ps,
    watch: Vec<u32>,
    out_ts: (Vec<Ps>, Vec<u32>, Vec<u64>, Vec<u64>),
    collect_tm: bool,
    tm: BTreeMap<(u32, u32), u64>,
    scratch: Vec<Action>,
    /// The departure a source's admission planned for its packet (packet, port, time,
    /// plan), which `enqueue_reserved` commits right after instead of planning again.
    preplan: Option<(u32, u32, Ps, Option<SlotPlan>)>,
    /// The slice containing `now` as of the last lookup (refreshed when `now` leaves it).
    cur: SliceRef,
    /// (flow, bytes it has injected) while an ideal source's packet is being admitted:
    /// what UCMP reads without loading the flow record (NONE: no such packet).
    sent_hint: (u32, u64),
    // transports and the ledger
    ledger: Ledger,
    tparams: TransportParams,
    conns: Vec<Option<Conn>>,
    conn_free: Vec<u32>,
    ecn_marks: u64,
    latency: LogHist,
    reorder: [u64; 6],
    delivered_by_hops: Vec<u64>,
    /// Data packets delivered to their final endpoint by hops: [other, RotorLB bulk].
    pkts_by_hops: [Vec<u64>; 2],
    delivered_by_class: [u64; 8],
    /// Delivered payload bytes by (hops, set of link classes crossed), same indices.
    delivered_by_hops_class: Vec<[u64; 8]>,
    class_tx: [u64; 4],
    /// Per port: its link class (index into `LINK_CLASSES`).
    port_class: Vec<u8>,
    /// (flow, segment) pairs whose first data copy is dropped at its first arrival.
    loss: std::collections::BTreeSet<(u32, u32)>,
    /// Credit networks: ports waiting for credit, the pending watchdog time, and the
    /// cycle of ports of a detected deadlock (the run stops there).
    /// (`blocked` lists every port waiting for credit, and may still list ports that have
    /// sent since: the watchdog drops those; `blocked_listed` says which ports it lists.)
    blocked: Vec<u32>,
    blocked_listed: Vec<bool>,
    watchdog_at: Ps,
    deadlock: Option<Vec<u32>>,
    credit_net: bool,
    /// Credit networks with a routing-chosen virtual-channel rule: each port's VC class
    /// (empty: channels by hop count; see `TransportParams::credit_vc_step`).
    port_vc: Vec<u8>,
    /// PIAS thresholds in bytes sent (empty: off).
    pias: Vec<u64>,
    /// NDP pull pacers by key (receiving endpoint, or flow) and their pending event times.
    pacers: Vec<Option<PullPacer>>,
    pacer_at: Vec<Ps>,
    /// When the run may end before its duration; flows that count for `LowLatencyDone`
    /// (transport other than bulk), and how many of them finished.
    stop_when: StopWhen,
    /// Network-wide time series: on, its samples and the last levels.
    net_series: bool,
    out_net: Vec<NetSample>,
    net_last: NetSample,
    /// RotorLB state of the hosts (when some flow uses it), the global port of each
    /// (node, rotor) — a node's k-th optical port is rotor k — the bulk packets' routes
    /// by packet id, and whether an offer/accept step is scheduled.
    rlb: Option<RotorLb>,
    rlb_ports: Vec<u32>,
    bulk_meta: Vec<BulkPkt>,
    rlb_event: bool,
    ll_total: u64,
    ll_done: u64,
    stopped: bool,
    /// Holding packets that have no route yet (`SimSpec::hold_unrouted`): per node, per
    /// destination node, the held packets in arrival order; per node the wire bytes held
    /// (or reserved by a packet on its host link towards the hold) and the hold's
    /// capacity; endpoints refused by a full hold (woken when it drains); the pending
    /// release time (`Ps::MAX`: none) and the counters.
    hold_on: bool,
    holds: Vec<BTreeMap<u32, VecDeque<u32>>>,
    hold_bytes: Vec<u64>,
    hold_cap: Vec<u64>,
    hold_waiters: Vec<Vec<u32>>,
    release_at: Ps,
    hold: HoldStats,
    hold_peak_node: Vec<u64>,
    /// Drained reconfigurations (`reconfigure(.., drain)`): per reconfiguration whether it
    /// drains, the tables that take effect at its switch, and its state (0 requested, 1
    /// draining, 2 switched); the one draining (NONE: none) and those waiting for it; a
    /// switch event pending; packets admitted into the network and not yet gone;
    /// endpoints refused during a drain; injections refused; per applied drained
    /// reconfiguration (requested, switched, circuits up) times.
    reconfig_drain: Vec<bool>,
    reconfig_tables: Vec<Option<Vec<crate::timeflow::NodeTable>>>,
    reconfig_state: Vec<u8>,
    draining: u32,
    drain_queue: VecDeque<u32>,
    switch_pending: bool,
    in_net: u64,
    drain_waiters: Vec<u32>,
    drain_refused: u64,
    switch_log: Vec<(Ps, Ps, Ps)>,
    /// Failures: the ports that go down (true) or come back (false) at each event.
    failures: Vec<(Vec<u32>, bool)>,
    /// Ports down now (a failed link: both its ends), and how many.
    down: Vec<bool>,
    n_down: u32,
    /// The last route() found only down ports (no_route() drops as `failed_link`).
    failed_route: bool,
    /// Port-down intervals, for the output: (port, from, until; Ps::MAX = still down).
    fail_log: Vec<(u32, Ps, Ps)>,
    /// Flows without dependencies in order of start (`next_flow` indexes it); per flow
    /// the dependencies not yet finished and the gap after the last; per flow the flows
    /// waiting for it (`dependents[dep_ptr[f]..dep_ptr[f + 1]]`).
    timed: Vec<u32>,
    dep_wait: Vec<u32>,
    dep_gap: Vec<Ps>,
    dependents_ptr: Vec<u32>,
    dependents: Vec<u32>,
    /// Co-flow barriers (empty: none): each flow's co-flow (NONE: none), the unfinished
    /// flows of each co-flow, and each co-flow's flows (`coflow_flows[coflow_ptr[c]..
    /// coflow_ptr[c + 1]]`).
    flow_coflow: Vec<u32>,
    coflow_left: Vec<u32>,
    coflow_ptr: Vec<u32>,
    coflow_flows: Vec<u32>,
    /// Admission control is on (the spec asked, on a cyclic fabric with hop-by-hop
    /// routing), whether the spec asked, and packets sent by a later slice's decision.
    adm: bool,
    /// No option that acts on a relayed packet's hop is on (hosts, offloading, EQO,
    /// congestion detection, admission control) and the schedule cycles: relayed hops on
    /// calendar ports may take [`Sim::relay_calendar`].
    lean: bool,
    /// `lean`, with only calendar ports (slotted optical, no served queues, no ECN) and VLB
    /// or direct routing, and no service that acts on a source's packet: an ideal flow's
    /// packet may take [`Sim::inject_calendar`].
    lean_src: bool,
    /// The calendar ports (slotted, cyclic) keep only their queues' tails, and their
    /// planned transmissions as one [`Departures`] each (`Port::departs`): plans are written
    /// near each other instead of at the tails of a slice's worth of FIFOs per port. Set
    /// when no reader needs a queue's own bytes (ECN marking, queue estimation) and
    /// adaptive multipath does not read every candidate's exact count at every packet.
    flat_cal: bool,
    /// Some port marks ECN (else no hop reads a port's marking threshold).
    any_ecn: bool,
    adm_listed: bool,
    adm_deferred: u64,
    /// Control messages of controllers, their mailbox, and the received-bytes counters
    /// (see `messages`).
    msg: messages::Messages,
    /// Switch buffers shared by their ports (dynamic thresholds); `shared_on` when any.
    shared: buffer::SharedBuffers,
    shared_on: bool,
    /// Per-drop and per-push-back records, when the spec asks for them.
    droplog: droplog::DropLog,
}

/// `Ev::Reconfig` of a drained reconfiguration's switch (its index | this bit).
const SWITCH: u32 = 1 << 31;
/// `Ev::Reconfig` of a link failure or recovery (its index into `Sim::failures` | this bit).
const FAIL: u32 = 1 << 30;

/// Wake-up time of an endpoint refused by a full hold: none until the hold drains (the
/// endpoint is kicked then).
const HOLD_WAIT: Ps = Ps::MAX / 2;
/// `Packet::q_port` of a packet crossing its host link towards its ToR's hold.
const HOLD_PORT: u32 = NONE - 1;

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

impl Sim {
    /// Validate a spec and build the simulation at t = 0.
    pub fn new(spec: SimSpec) -> Result<Self, SpecError> {
        spec.validate()?;
        let n_ports = spec.n_ports();
        let nodes = spec.nodes as usize;
        let mut port_node = vec![0u32; n_ports];
        for n in 0..nodes {
            for gp in spec.port_offset[n]..spec.port_offset[n + 1] {
                port_node[gp as usize] = n as u32;
            }
        }
        let optical: Vec<bool> = spec.port_kind.iter().map(|&k| k == PortKind::Optical).collect();
        let has_optical = optical.iter().any(|&o| o);
        let mut peer = spec.sched_peer.clone();
        if peer.is_empty() {
            peer = vec![NONE; n_ports * spec.slice_ps.len().max(1)];
        }
        // only optical ports take their peer from the schedule
        let rows = peer.len() / n_ports.max(1);
        for r in 0..rows {
            for gp in 0..n_ports {
                if !optical[gp] {
                    peer[r * n_ports + gp] = NONE;
                }
            }
        }
        let sched = if spec.slice_ps.is_empty() {
            Schedule::fixed(n_ports, peer)?
        } else {
            Schedule::cyclic(spec.slice_ps.clone(), spec.guardband_ps, n_ports, peer)?
        };
        for gp in 0..n_ports {
            if optical[gp] {
                for idx in 0..sched.slices() {
                    let q = sched.peer(gp as u32, idx);
                    if q != NONE && !optical[q as usize] {
                        return Err(SpecError::new(format!("schedule.peer[{idx}][{gp}]"), q, "optical circuits must join two optical ports"));
                    }
                }
            }
        }
        let router = match spec.router {
            RouterKind::Table => Router::Table(build_tables(nodes, &spec.port_offset, &spec.entries)?),
            RouterKind::Source => {
                let mut rs: Vec<_> = spec.routes.clone();
                rs.sort();
                let mut routes = Routes::default();
                for (src, dst, ts, hops) in rs {
                    routes.routes.push((src, dst, ts, routes.hops.len() as u32, hops.len() as u32));
                    routes.hops.extend(hops.iter().map(|&(port, dep)| Action { port, dep }));
                }
                routes.index(nodes);
                Router::Source(routes)
            }
            RouterKind::Vlb | RouterKind::Direct => {
                if !has_optical {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router), "built-in VLB/direct routing needs optical ports"));
                }
                let ci = ConnIndex::new(&sched, &port_node, &spec.port_offset, &optical);
                if spec.router == RouterKind::Vlb { Router::Vlb(ci) } else { Router::Direct(ci) }
            }
            RouterKind::Hoho | RouterKind::Ucmp => {
                if !has_optical || sched.is_static() {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router), "HOHO/UCMP need a cyclic optical schedule"));
                }
                if spec.max_hop == 0 || spec.max_hop > 8 {
                    return Err(SpecError::new("max_hop", spec.max_hop, "expected 1..=8"));
                }
                let cells = nodes as u64 * nodes as u64 * sched.slices() as u64 * spec.max_hop as u64;
                if cells > 200_000_000 {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router),
                        format!("earliest-path index too large ({nodes} nodes x {} slices); use vlb or direct", sched.slices())));
                }
                let idx = crate::earliest::EarliestIndex::new(&sched, &port_node, &spec.port_offset, &optical, spec.max_hop);
                if spec.router == RouterKind::Hoho {
                    Router::Hoho(idx)
                } else {
                    if !(spec.ucmp_alpha >= 0.0 && spec.ucmp_alpha.is_finite()) {
                        return Err(SpecError::new("ucmp_alpha", spec.ucmp_alpha, "must be a non-negative number"));
                    }
                    let rate = (0..n_ports).filter(|&g| optical[g]).map(|g| spec.port_rate_bps[g]).min().unwrap_or(1);
                    Router::Ucmp(idx, spec.ucmp_alpha, spec.slice_ps[0], rate)
                }
            }
            RouterKind::Expander => {
                if !has_optical {
                    return Err(SpecError::new("routing", "expander", "needs optical ports"));
                }
                Router::Expander(crate::expander::SlicePaths::with_paths(&sched, &port_node, &spec.port_offset, &optical,
                                                                         spec.expander_paths)?)
            }
        };
        let no_disc = Discipline::default();
        let ports = (0..n_ports).map(|gp| {
            let d = spec.port_disc.get(gp).unwrap_or(&no_disc);
            let vcs = spec.transport.credit_vcs.max(1) as usize;
            let classes = if d.credit { vcs } else { d.class_cap.len().max(1) };
            Port {
            kind: spec.port_kind[gp],
            rate: Rate::new(spec.port_rate_bps[gp]),
            prop: spec.port_prop_ps[gp],
            cap: spec.port_buffer_bytes[gp],
            bytes: 0,
            peer: spec.port_peer[gp],
            busy_until: 0,
            cal: NONE,
            heads: std::collections::BinaryHeap::new(),
            departs: Departures::default(),
            next_dep: Ps::MAX,
            down_until: 0,
            last_pkt: NONE,
            last_end: 0,
            tx_bytes: 0,
            tx_bytes_sampled: 0,
            ecn_k: d.ecn_k,
            served: d.served(),
            trim: d.trim,
            classes: if d.served() { smallvec![VecDeque::new(); classes] } else { SmallVec::new() },
            class_bytes: smallvec![0; if d.served() { classes } else { 0 }],
            class_cap: if d.credit { smallvec![u64::MAX; vcs] } else if d.class_cap.is_empty() { smallvec![spec.port_buffer_bytes[gp]] } else { SmallVec::from_slice(&d.class_cap) },
            free_pending: false,
            credit: if d.credit && spec.port_kind[gp] != PortKind::HostDown { smallvec![spec.transport.credit_bytes; vcs] } else { SmallVec::new() },
            cred_ret: VecDeque::new(),
            rr_vc: 0,
            blocked_since: Ps::MAX,
            cred_wake: Ps::MAX,
            quantum: d.weights.iter().map(|&w| w as u64 * (spec.mtu_bytes + spec.header_bytes) as u64).collect(),
            deficit: vec![0; d.weights.len()],
            drr: 0,
        }}).collect();
        let port_class: Vec<u8> = (0..n_ports).map(|gp| match spec.port_kind[gp] {
            PortKind::Electrical | PortKind::Unused => 0,
            PortKind::Optical if spec.slice_ps.is_empty() => 1,
            PortKind::Optical => 2,
            PortKind::HostDown => 3,
        }).enumerate().map(|(gp, c)| match spec.port_link_class.get(gp) {
            Some(&o) if o != NONE => o as u8,
            _ => c,
        }).collect();
        let eps = (0..spec.ep_node.len()).map(|i| Endpoint {
            node: spec.ep_node[i],
            rate: Rate::new(spec.ep_rate_bps[i]),
            prop: spec.ep_prop_ps[i],
            down_port: spec.ep_down_port[i],
            busy_until: 0,
            scheduled: false,
            voq: BTreeMap::new(),
            voqs: Vec::new(),
            voq_free: Vec::new(),
            rr: VecDeque::new(),
            sleeping: std::collections::BinaryHeap::new(),
            sched_at: 0,
            ctrl: VecDeque::new(),
            tready: VecDeque::new(),
            tsleep: std::collections::BinaryHeap::new(),
            turn: false,
        }).collect();
        let flows = (0..spec.flow_src.len()).map(|i| Flow {
            start: spec.flow_start_ps[i],
            src: spec.flow_src[i],
            dst: spec.flow_dst[i],
            size: spec.flow_size[i],
            injected: 0,
            delivered: 0,
            finish: Ps::MAX,
            max_hops: 0,
            tp: spec.flow_transport.get(i).copied().unwrap_or_default(),
            conn: NONE,
            parked: NONE,
            inq: false,
            timer_at: Ps::MAX,
            retx: 0,
            timeouts: 0,
            acked_at: Ps::MAX,
            started: false,
        }).collect();
        // flows without dependencies start at their time, in order; the others when the
        // last of their dependencies finishes
        let nf = spec.flow_src.len();
        // (a flow of co-flow c >= 1 waits for one barrier: the end of co-flow c - 1)
        let barrier = |i: usize| spec.flow_coflow.get(i).is_some_and(|&c| c != NONE && c > 0);
        let mut timed: Vec<u32> = (0..nf as u32).filter(|&i| spec.deps_of(i as usize).is_empty() && !barrier(i as usize)).collect();
        timed.sort_by_key(|&i| spec.flow_start_ps[i as usize]);
        let dep_wait: Vec<u32> = (0..nf).map(|i| spec.deps_of(i).len() as u32 + barrier(i) as u32).collect();
        // co-flows: unfinished flows per co-flow, and each co-flow's flows
        let ncf = spec.coflows();
        let mut coflow_left = vec![0u32; ncf];
        let mut coflow_ptr = vec![0u32; if ncf > 0 { ncf + 1 } else { 0 }];
        let mut coflow_flows = Vec::new();
        if ncf > 0 {
            for &c in &spec.flow_coflow {
                if c != NONE {
                    coflow_left[c as usize] += 1;
                    coflow_ptr[c as usize + 1] += 1;
                }
            }
            for c in 0..ncf {
                coflow_ptr[c + 1] += coflow_ptr[c];
            }
            coflow_flows = vec![0u32; coflow_ptr[ncf] as usize];
            let mut at = coflow_ptr.clone();
            for (i, &c) in spec.flow_coflow.iter().enumerate() {
                if c != NONE {
                    coflow_flows[at[c as usize] as usize] = i as u32;
                    at[c as usize] += 1;
                }
            }
        }
        let mut dependents_ptr = vec![0u32; if spec.flow_dep_ptr.is_empty() { 0 } else { nf + 1 }];
        let mut dependents = vec![0u32; spec.flow_dep_ids.len()];
        if !dependents_ptr.is_empty() {
            for &d in &spec.flow_dep_ids {
                dependents_ptr[d as usize + 1] += 1;
            }
            for i in 0..nf {
                dependents_ptr[i + 1] += dependents_ptr[i];
            }
            let mut at = dependents_ptr.clone();
            for i in 0..nf {
                for &d in spec.deps_of(i) {
                    dependents[at[d as usize] as usize] = i as u32;
                    at[d as usize] += 1;
                }
            }
        }
        let dep_gap = if spec.flow_gap_ps.is_empty() { vec![0; if dependents_ptr.is_empty() && ncf == 0 { 0 } else { nf }] } else { spec.flow_gap_ps.clone() };
        let adm = spec.admission_control && !sched.is_static()
            && matches!(router, Router::Table(_) | Router::Direct(_) | Router::Vlb(_) | Router::Hoho(_));
        let mut sim = Sim {
            now: 0,
            heap: EventList::with_lookahead(LOOKAHEAD),
            sched,
            router,
            multipath: spec.multipath,
            port_node,
            port_offset: spec.port_offset.clone(),
            optical,
            ports,
            cal: Vec::new(),
            rx_last: vec![(u32::MAX, NONE); n_ports],
            eps,
            hosts_mode: spec.hosts_mode,
            flows,
            next_flow: 0,
            pool: Vec::new(),
            pool_x: Vec::new(),
            free: Vec::new(),
            live: 0,
            peak_live: 0,
            mtu: spec.mtu_bytes,
            header: spec.header_bytes,
            rng_route: Stream::new(spec.seed, "routing"),
            rng_paths: Stream::new(spec.seed, "routing.expander_paths"),
            seed: spec.seed,
            reconfigs: Vec::new(),
            reconfigs_applied: 0,
            max_hop: spec.max_hop,
            route_gen: 0,
            port_gen: vec![0; n_ports],
            rerouted_at_tor: 0,
            services: spec.services,
            paused: crate::flatmap::FlatMap::with_capacity(16),
            pushbacks: Vec::new(),
            congestion_events: 0,
            pushback_msgs: 0,
            paused_attempts: 0,
            pb_sent: std::collections::BTreeSet::new(),
            pb_slice: u64::MAX,
            eqo: crate::services::Eqo::new(spec.services.eqo_interval_ps, n_ports),
            offload: crate::services::Offload::new(spec.services.offload_queues, {
                let mut nh = vec![Vec::new(); nodes];
                if spec.hosts_mode {
                    for (i, &n) in spec.ep_node.iter().enumerate() {
                        nh[n as usize].push(i as u32);
                    }
                }
                nh
            }, spec.seed),
            events: 0,
            event_counts: [0; EVENT_KINDS.len()],
            packet_hops: 0,
            flows_started: 0,
            flows_completed: 0,
            offered: 0,
            delivered: 0,
            drops: [0; DROP_REASONS.len()],
            collisions: 0,
            gb_violations: 0,
            reroutes: 0,
            expander: spec.router == RouterKind::Expander,
            trace: crate::trace::TraceHash::start(),
            sample_interval: spec.sample_interval_ps,
            watch: spec.watch_ports.clone(),
            out_ts: Default::default(),
            collect_tm: spec.collect_tm,
            tm: BTreeMap::new(),
            scratch: Vec::new(),
            preplan: None,
            cur: SliceRef { abs: 0, idx: 0, start: 0, end: 0 },
            sent_hint: (NONE, 0),
            ledger: Ledger::new(DROP_REASONS.len()),
            tparams: spec.transport,
            conns: Vec::new(),
            conn_free: Vec::new(),
            ecn_marks: 0,
            latency: LogHist::new(),
            reorder: [0; 6],
            delivered_by_hops: vec![0; 17],
            pkts_by_hops: [vec![0; 17], vec![0; 17]],
            delivered_by_class: [0; 8],
            delivered_by_hops_class: vec![[0; 8]; 17],
            class_tx: [0; 4],
            port_class,
            loss: spec.loss.iter().copied().collect(),
            blocked: Vec::new(),
            blocked_listed: vec![false; n_ports],
            watchdog_at: Ps::MAX,
            deadlock: None,
            credit_net: spec.flow_transport.contains(&TransportKind::Credit),
            port_vc: if spec.transport.credit_vc_step.is_some() {
                (0..n_ports).map(|gp| spec.port_disc.get(gp).map_or(0, |d| d.vc_class)).collect()
            } else {
                Vec::new()
            },
            pias: spec.pias_thresholds.clone(),
            pacers: Vec::new(),
            pacer_at: Vec::new(),
            stop_when: spec.stop_when,
            net_series: spec.net_series,
            out_net: Vec::new(),
            net_last: NetSample::default(),
            rlb: None,
            rlb_ports: Vec::new(),
            bulk_meta: Vec::new(),
            rlb_event: false,
            ll_total: spec.flow_transport.iter().filter(|&&t| t != TransportKind::RotorLb).count() as u64
                + (spec.flow_src.len() - spec.flow_transport.len().min(spec.flow_src.len())) as u64,
            ll_done: 0,
            stopped: false,
            hold_on: spec.hold_unrouted,
            holds: vec![BTreeMap::new(); nodes],
            hold_bytes: vec![0; nodes],
            hold_cap: (0..nodes).map(|n| (spec.port_offset[n]..spec.port_offset[n + 1])
                .filter(|&g| spec.port_kind[g as usize] != PortKind::HostDown)
                .map(|g| spec.port_buffer_bytes[g as usize]).sum()).collect(),
            hold_waiters: vec![Vec::new(); nodes],
            release_at: Ps::MAX,
            hold: HoldStats::default(),
            hold_peak_node: vec![0; nodes],
            reconfig_drain: Vec::new(),
            reconfig_tables: Vec::new(),
            reconfig_state: Vec::new(),
            draining: NONE,
            drain_queue: VecDeque::new(),
            switch_pending: false,
            in_net: 0,
            drain_waiters: Vec::new(),
            drain_refused: 0,
            switch_log: Vec::new(),
            failures: Vec::new(),
            down: Vec::new(),
            n_down: 0,
            failed_route: false,
            fail_log: Vec::new(),
            timed,
            dep_wait,
            dep_gap,
            dependents_ptr,
            dependents,
            flow_coflow: spec.flow_coflow.clone(),
            coflow_left,
            coflow_ptr,
            coflow_flows,
            adm,
            lean: false,
            lean_src: false,
            flat_cal: false,
            any_ecn: false,
            adm_listed: spec.admission_control,
            adm_deferred: 0,
            msg: messages::Messages::default(),
            shared: buffer::SharedBuffers::default(),
            shared_on: false,
            droplog: droplog::DropLog::new(spec.log_drops),
        };
        sim.shared = buffer::SharedBuffers::new(spec.shared_buffer_bytes.clone(), spec.buffer_alpha.clone(),
            spec.port_buffer_bytes.clone(),
            sim.ports.iter().map(|p| p.class_cap.iter().copied().collect()).collect())?;
        sim.shared_on = sim.shared.on();
        for n in 0..nodes {
            let b = sim.shared.pool(n as u32);
            if b > 0 {
                sim.hold_cap[n] = b;
            }
        }
        sim.any_ecn = sim.ports.iter().any(|p| p.ecn_k > 0);
        sim.flat_cal = !sim.any_ecn && !sim.eqo.enabled() && sim.multipath != Multipath::Adaptive;
        sim.lean = !sim.shared_on && !sim.hosts_mode && !sim.offload.enabled() && !sim.eqo.enabled() && !sim.services.congestion_detection
            && !sim.adm && !sim.sched.is_static();
        if spec.flow_transport.contains(&TransportKind::RotorLb) {
            sim.setup_rotorlb(&spec)?;
        }
        sim.lean_src = sim.lean && matches!(sim.router, Router::Vlb(_) | Router::Direct(_)) && !sim.services.pushback
            && !sim.services.flow_pausing && sim.pias.is_empty() && sim.rlb.is_none() && !sim.expander
            && sim.ports.iter().all(|p| p.kind == PortKind::Optical && !p.served && p.ecn_k == 0);
        if let Some(&f) = sim.timed.first() {
            let t = sim.flows[f as usize].start;
            sim.push(t, Ev::NextFlows);
        }
        if sim.sample_interval > 0 && (!sim.watch.is_empty() || sim.net_series) {
            sim.push(sim.sample_interval, Ev::Sample);
        }
        Ok(sim)
    }

    /// Current simulated time.
    pub fn now(&self) -> Ps {
        self.now
    }

    /// The slice containing `now` (cached: time only moves forward).
    #[inline]
    fn slice_now(&mut self) -> SliceRef {
        if self.now >= self.cur.end || self.now < self.cur.start {
            self.cur = self.sched.slice_at(self.now);
        }
        self.cur
    }

    #[inline]
    fn push(&mut self, time: Ps, ev: Ev) {
        self.heap.push(time, ev);
    }

    /// Run every event with time ≤ `t_end`; afterwards `now() == t_end` — unless an event
    /// delivered a control message (`send_message`): the run then stops right after that
    /// event, at its time, so that a controller reads the mailbox (`take_messages`) at the
    /// exact moment of delivery; calling again continues. Returns true when it stopped so.
    pub fn run_until(&mut self, t_end: Ps) -> bool {
        while let Some(t) = self.heap.peek_time() {
            if t > t_end || self.deadlock.is_some() {
                break;
            }
            if self.stopped {
                break;
            }
            if let Some(&(_, ev)) = self.heap.ahead(LOOKAHEAD - 1) {
                self.prefetch(ev);
            }
            if let Some(&(_, ev)) = self.heap.ahead(NEAR + 2) {
                self.prefetch_deref(ev, 1);
            }
            if let Some(&(_, ev)) = self.heap.ahead(NEAR) {
                if let Ev::Arrive(p, _) = ev {
                    self.prefetch_next_hop(p);
                }
                self.prefetch_deref(ev, 2);
            }
            if let Some(&(_, ev)) = self.heap.ahead(1) {
                if let (Ev::Arrive(p, _), Router::Table(t)) = (ev, &self.router) {
                    if let Some(pk) = self.pool.get(p as usize) {
                        if !pk.to_host && pk.at != pk.dst_node {
                            if let Some(nt) = t.get(pk.at as usize) {
                                nt.prefetch_fast_actions(pk.src_node, pk.dst_node);
                            }
                        }
                    }
                }
                self.prefetch_deref(ev, 3);
            }
            let (time, ev) = self.heap.pop().expect("peeked");
            self.now = time;
            self.events += 1;
            self.event_counts[ev.kind()] += 1;
            if !matches!(ev, Ev::Sample | Ev::Watchdog) {
                // samples and the deadlock watchdog observe the run; they are not part of it
                self.trace.record(time, ev.code());
            }
            match ev {
                Ev::Arrive(p, epoch) => self.on_arrive(p, epoch),
                Ev::HostArrive(p) => self.on_host_arrive(p),
                Ev::Inject(e) => {
                    // a transport may have asked for an earlier injection (`kick`): the
                    // later event is then stale
                    let ep = &mut self.eps[e as usize];
                    if ep.scheduled && ep.sched_at == time {
                        ep.scheduled = false;
                        self.inject(e);
                    }
                }
                Ev::NextFlows => self.on_next_flows(),
                Ev::Sample => self.on_sample(),
                Ev::Reconfig(i) => self.on_reconfig(i),
                Ev::PushBack(i) => self.on_pushback(i),
                Ev::OffloadSend(p) => self.on_offload_send(p),
                Ev::OffloadReturn(p, epoch) => {
                    if self.pool[p as usize].epoch == epoch {
                        self.on_offload_return(p);
                    }
                }
                Ev::PortFree(port) => self.on_port_free(port),
                Ev::Timer(f) => self.on_timer(f),
                Ev::Pacer(e) => self.on_pacer(e),
                Ev::Credit(port) => self.on_credit(port),
                Ev::Watchdog => self.on_watchdog(),
                Ev::Rlb => self.on_rlb(),
                Ev::Release => self.on_release(),
                Ev::Start(f) => {
                    self.start_flow(f);
                    self.check_stop();
                }
            }
            if self.msg.new_mail {
                self.msg.new_mail = false;
                return true;
            }
        }
        if t_end > self.now && self.deadlock.is_none() && !self.stopped {
            self.now = t_end;
        }
        false
    }

    /// Hint the cache about the memory a coming event will touch first (the packet of an
    /// arrival): the loop is bound by memory latency, and the event list shows the next
    /// events [`LOOKAHEAD`] ahead.
    #[inline]
    fn prefetch(&self, ev: Ev) {
        match ev {
            Ev::Arrive(p, _) => {
                if let Some(pk) = self.pool.get(p as usize) {
                    crate::prefetch::read(pk);
                }
            }
            Ev::HostArrive(p) => {
                // crossing a host link reads the rest of the packet too (its reserved port)
                if let (Some(pk), Some(px)) = (self.pool.get(p as usize), self.pool_x.get(p as usize)) {
                    crate::prefetch::read(pk);
                    crate::prefetch::read(px);
                }
            }
            Ev::PortFree(port) | Ev::Credit(port) => {
                if let Some(pt) = self.ports.get(port as usize) {
                    // the lines start_tx reads: the head of the port, its queues, credits
                    // and pending credit returns
                    // addresses only: reading the port here (its queues' length) would wait
                    // for the very line being asked for
                    crate::prefetch::read(pt);
                    crate::prefetch::read(&pt.busy_until);
                    crate::prefetch::read(&pt.classes);
                    crate::prefetch::read(&pt.class_bytes);
                    crate::prefetch::read(&pt.credit);
                    crate::prefetch::read(&pt.cred_ret);
                }
            }
            Ev::Inject(e) => {
                if let Some(ep) = self.eps.get(e as usize) {
                    crate::prefetch::read(ep);
                }
            }
            _ => {}
        }
    }

    /// The later stages of [`Sim::prefetch`] for events that reach their data through
    /// pointers (a served port's queues, an endpoint's round robin): each stage reads what
    /// the one before brought into cache and hints the next link of the chain, so that by
    /// the time the event runs its queue heads and their packets are in cache.
    #[inline]
    fn prefetch_deref(&self, ev: Ev, stage: u8) {
        match ev {
            Ev::PortFree(port) | Ev::Credit(port) => {
                let Some(pt) = self.ports.get(port as usize) else { return };
                // the queues are inside the port (read at the first stage): their heads,
                // then the head packets, then the ports that gave those packets credit
                // (the sent one returns it)
                match stage {
                    1 => {
                        for q in &pt.classes {
                            if let Some(h) = q.front() {
                                crate::prefetch::read(h);
                            }
                        }
                        if let Some(r) = pt.cred_ret.front() {
                            crate::prefetch::read(r);
                        }
                    }
                    2 => {
                        for q in &pt.classes {
                            if let Some(&h) = q.front() {
                                crate::prefetch::at(&self.pool, h as usize);
                            }
                        }
                    }
                    _ => {
                        for q in &pt.classes {
                            if let Some(up) = q.front().and_then(|&h| self.pool.get(h as usize))
                                .and_then(|p| self.ports.get(p.cred_port as usize)) {
                                crate::prefetch::read(&up.cred_ret);
                                crate::prefetch::read(&up.blocked_since);
                            }
                        }
                    }
                }
            }
            Ev::Inject(e) => {
                let Some(ep) = self.eps.get(e as usize) else { return };
                match stage {
                    1 => {
                        if let Some(s) = ep.rr.front() {
                            crate::prefetch::read(s);
                        }
                    }
                    2 => {
                        if let Some(&s) = ep.rr.front() {
                            crate::prefetch::at(&ep.voqs, s as usize);
                        }
                        if self.lean_src {
                            // the uplinks a try may take (VLB picks one at random)
                            for pt in self.src_ports(ep.node) {
                                crate::prefetch::read(pt);
                            }
                        }
                    }
                    _ => {
                        if let Some(q) = ep.rr.front().and_then(|&s| ep.voqs.get(s as usize)) {
                            crate::prefetch::at(&self.flows, q.head as usize);
                        }
                        if self.lean_src {
                            // and their calendar queues of the current slice
                            let idx = self.cur.idx as usize;
                            for pt in self.src_ports(ep.node) {
                                if pt.cal != NONE {
                                    crate::prefetch::at(&self.cal, pt.cal as usize + idx);
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The first few ports of `node` (those an injection prefetches).
    #[inline]
    fn src_ports(&self, node: u32) -> &[Port] {
        let (a, b) = (self.port_offset[node as usize] as usize, self.port_offset[node as usize + 1] as usize);
        &self.ports[a..b.min(a + 8)]
    }

    /// Hint the cache about where a coming arrival (whose packet was prefetched earlier)
    /// goes next, under VLB or direct routing (which answer cheaply): its flow when it is
    /// delivered, else its next port and calendar queue.
    #[inline]
    fn prefetch_next_hop(&self, pid: u32) {
        if let Router::Table(t) = &self.router {
            // a table router: the entry of the packet's destination at its next node (read
            // one stage later, in `run_until`, for its source bits and candidates; kept
            // inline there: as an arm of `prefetch_deref` the fat-tree credit run took 5 %
            // longer)
            let Some(p) = self.pool.get(pid as usize) else { return };
            if p.to_host || p.at == p.dst_node {
                // delivered: its flow and the rest of the packet (payload, send time)
                if let Some(f) = self.flows.get(p.flow as usize) {
                    crate::prefetch::read(f);
                }
                crate::prefetch::at(&self.pool_x, pid as usize);
            } else if let Some(nt) = t.get(p.at as usize) {
                nt.prefetch_fast(p.dst_node);
            }
            return;
        }
        let (Router::Vlb(ci) | Router::Direct(ci)) = &self.router else { return };
        let Some(p) = self.pool.get(pid as usize) else { return };
        if p.to_host || p.at == p.dst_node {
            if let Some(f) = self.flows.get(p.flow as usize) {
                crate::prefetch::read(f);
            }
            crate::prefetch::at(&self.pool_x, pid as usize);
            return;
        }
        if matches!(self.router, Router::Vlb(_)) && p.src_node == p.at {
            return;
        }
        if let Some(a) = ci.first_direct(p.at, p.dst_node, p.tag) {
            if let Some(pt) = self.ports.get(a.port as usize) {
                crate::prefetch::read(pt);
                if self.flat_cal {
                    crate::prefetch::read(&pt.departs);
                } else {
                    crate::prefetch::read(&pt.heads);
                }
                if pt.cal != NONE && a.dep != WILD {
                    if let Some(cq) = self.cal.get((pt.cal + a.dep) as usize) {
                        crate::prefetch::read(cq);
                    }
                }
            }
        }
    }

    /// Expander routing: the global ports of slice `idx`'s path from node `a` to node `b`
    /// (None: another router, or an index out of range).
    pub fn expander_path(&self, a: u32, b: u32, idx: u32) -> Option<Vec<u32>> {
        self.expander_paths(a, b, idx).map(|mut v| v.swap_remove(0))
    }

    /// Expander routing: the global ports of every path slice `idx` keeps from node `a` to
    /// node `b` (path 0 first: the BFS path; at most the router's k).
    pub fn expander_paths(&self, a: u32, b: u32, idx: u32) -> Option<Vec<Vec<u32>>> {
        let Router::Expander(sp) = &self.router else { return None };
        let n = self.port_offset.len() as u32 - 1;
        if a >= n || b >= n || idx >= self.sched.slices() {
            return None;
        }
        (0..sp.n_paths(idx, a, b)).map(|i| self.expander_walk(sp, a, b, idx, sp.code(idx, a, b, i))).collect()
    }

    fn expander_walk(&self, sp: &crate::expander::SlicePaths, a: u32, b: u32, idx: u32, code: u32) -> Option<Vec<u32>> {
        let n = self.port_offset.len() as u32 - 1;
        let mut out = Vec::new();
        let mut c = a;
        while c != b {
            let p = sp.next_on(idx, c, b, code);
            if p == NONE || out.len() > n as usize {
                return None;
            }
            out.push(p);
            c = self.port_node[self.sched.peer(p, idx) as usize];
        }
        Some(out)
    }

    /// True once the run ended early by its stop condition (`now` is when).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// A flow finished (last byte at its receiver): count it, and end the run early when
    /// the stop condition holds (every flow started, and every low-latency flow or every
    /// flow finished).
    fn flow_finished(&mut self, f: u32) {
        self.flows[f as usize].finish = self.now;
        self.flows_completed += 1;
        if self.flows[f as usize].tp != TransportKind::RotorLb {
            self.ll_done += 1;
        }
        if !self.dependents_ptr.is_empty() {
            // the flows waiting for this one: the last dependency to finish starts them
            let (a, b) = (self.dependents_ptr[f as usize] as usize, self.dependents_ptr[f as usize + 1] as usize);
            for k in a..b {
                self.one_wait_less(self.dependents[k] as usize);
            }
        }
        if let Some(&c) = self.flow_coflow.get(f as usize) {
            // the last flow of a co-flow lifts the barrier of the next one
            if c != NONE {
                self.coflow_left[c as usize] -= 1;
                let next = c as usize + 1;
                if self.coflow_left[c as usize] == 0 && next < self.coflow_left.len() {
                    for k in self.coflow_ptr[next] as usize..self.coflow_ptr[next + 1] as usize {
                        self.one_wait_less(self.coflow_flows[k] as usize);
                    }
                }
            }
        }
        self.check_stop();
    }

    /// Flow `h` has one unfinished dependency (or barrier) less; at none it starts now +
    /// its gap, and not before its own start.
    fn one_wait_less(&mut self, h: usize) {
        self.dep_wait[h] -= 1;
        if self.dep_wait[h] == 0 {
            let t = self.flows[h].start.max(self.now.saturating_add(self.dep_gap[h]));
            self.flows[h].start = t;
            self.push(t, Ev::Start(h as u32));
        }
    }

    fn check_stop(&mut self) {
        let all_started = self.flows_started == self.flows.len() as u64;
        self.stopped |= all_started && match self.stop_when {
            StopWhen::Duration => false,
            StopWhen::LowLatencyDone => self.ll_done == self.ll_total,
            StopWhen::AllDone => self.flows_completed == self.flows.len() as u64,
        };
    }

    // ---------------------------------------------------------------- packets and pool

    fn alloc(&mut self, mut p: Packet, x: PacketX) -> u32 {
        self.live += 1;
        self.peak_live = self.peak_live.max(self.live);
        if let Some(id) = self.free.pop() {
            // a reused slot gets a new epoch, so no stale event of its last packet matches
            p.epoch = self.pool[id as usize].epoch.wrapping_add(1);
            self.pool[id as usize] = p;
            self.pool_x[id as usize] = x;
            // the slot the next packet will take, unless one is released first
            if let Some(&next) = self.free.last() {
                crate::prefetch::read(&self.pool[next as usize]);
                crate::prefetch::read(&self.pool_x[next as usize]);
            }
            id
        } else {
            self.pool.push(p);
            self.pool_x.push(x);
            (self.pool.len() - 1) as u32
        }
    }

    #[inline]
    fn release(&mut self, id: u32) {
        if self.pool[id as usize].innet {
            self.pool[id as usize].innet = false;
            self.in_net -= 1;
            if self.draining != NONE {
                self.check_drain();
            }
        }
        self.live -= 1;
        self.pool_x[id as usize].payload = 0;
        self.pool[id as usize].wire = 0;
        self.free.push(id);
    }

    fn drop_pkt(&mut self, id: u32, reason: usize) {
        self.return_credit(id);
        let p = self.pool[id as usize];
        if self.droplog.on() {
            self.droplog.drop(droplog::DropRec { time: self.now, node: p.at, src_node: p.src_node, dst_node: p.dst_node,
                                                 flow: p.flow, reason: reason as u8, hops: p.hops });
        }
        let px = self.pool_x[id as usize];
        if p.kind == K_BULK {
            // RotorLB keeps the payload at its holder host, which sends it again
            self.ledger.drop(reason, px.payload as u64, false);
            let meta = self.bulk_meta[id as usize];
            self.release(id);
            if self.rlb.as_mut().expect("bulk packets come from RotorLB").on_return(&meta) {
                self.schedule_rlb();
            }
            return;
        }
        if p.kind == K_MSG {
            self.msg.dropped += 1;
        }
        let payload = if p.kind == K_DATA && !p.trimmed { px.payload as u64 } else { 0 };
        // the payload of an unreliable flow is gone for good; a transport sends it again
        let lost = payload > 0 && !self.flows[p.flow as usize].tp.reliable();
        self.ledger.drop(reason, payload, lost);
        if lost {
            self.drops[reason] += payload;
        }
        self.release(id);
    }

    // ---------------------------------------------------------------- flows and endpoints

    fn on_next_flows(&mut self) {
        while self.next_flow < self.timed.len() && self.flows[self.timed[self.next_flow] as usize].start <= self.now {
            let f = self.timed[self.next_flow];
            self.next_flow += 1;
            self.start_flow(f);
        }
        if self.next_flow < self.timed.len() {
            let t = self.flows[self.timed[self.next_flow] as usize].start;
            self.push(t, Ev::NextFlows);
        } else {
            self.check_stop();
        }
    }

    /// Flow `f` starts now: its bytes are offered and its source may send.
    fn start_flow(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        self.flows[f as usize].started = true;
        self.offered += fl.size;
        self.ledger.offer(fl.size);
        self.flows_started += 1;
        if fl.tp == TransportKind::RotorLb && self.eps[fl.src as usize].node == self.eps[fl.dst as usize].node {
            // a bulk flow inside one rack never crosses the rotors: NDP through its ToR
            self.flows[f as usize].tp = TransportKind::Ndp;
            self.ll_total += 1;
            self.open_conn(f);
            return;
        }
        if fl.tp == TransportKind::RotorLb {
            let rlb = self.rlb.as_mut().expect("built for bulk flows");
            if rlb.add_flow(f, fl.src, fl.dst, fl.size) {
                self.schedule_rlb();
            }
            return;
        }
        if fl.tp.reliable() {
            self.open_conn(f);
            return;
        }
        let dst_node = self.eps[fl.dst as usize].node;
        let ep = &mut self.eps[fl.src as usize];
        match ep.voq.get(&fl.dst) {
            Some(&slot) => ep.voqs[slot as usize].rest.push_back(f),
            None => {
                let q = Voq { dst: fl.dst, dst_node, head: f, size: fl.size, injected: fl.injected, rest: VecDeque::new() };
                let slot = match ep.voq_free.pop() {
                    Some(k) => {
                        ep.voqs[k as usize] = q;
                        k
                    }
                    None => {
                        ep.voqs.push(q);
                        (ep.voqs.len() - 1) as u32
                    }
                };
                ep.voq.insert(fl.dst, slot);
                ep.rr.push_back(slot);
            }
        }
        if !ep.scheduled {
            self.inject(fl.src);
        }
    }

    /// Create the transport state of flow `f` and let its source send.
    fn open_conn(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        let t = &self.tparams;
        let mss = self.mtu;
        let conn = match fl.tp {
            TransportKind::Tcp | TransportKind::Dctcp => {
                let cfg = TcpConfig {
                    mss,
                    init_cwnd: t.tcp_init_cwnd,
                    init_ssthresh: t.tcp_init_ssthresh,
                    dupack: t.tcp_dupack,
                    min_rto: t.tcp_min_rto_ps,
                    init_rto: t.tcp_init_rto_ps,
                    max_rto: t.tcp_max_rto_ps,
                    dctcp: fl.tp == TransportKind::Dctcp,
                    dctcp_g: t.dctcp_g,
                };
                Conn::Tcp(TcpSender::new(cfg, fl.size), TcpReceiver::new(fl.size, mss))
            }
            TransportKind::Ndp => {
                let cfg = NdpConfig { mss, init_window: t.ndp_init_window, rto: t.ndp_rto_ps };
                Conn::Ndp(NdpSender::new(cfg, fl.size), NdpReceiver::new(fl.size, mss))
            }
            TransportKind::Ideal | TransportKind::Credit | TransportKind::RotorLb => unreachable!("ideal, credit and bulk flows have no connection state"),
        };
        let id = match self.conn_free.pop() {
            Some(id) => {
                self.conns[id as usize] = Some(conn);
                id
            }
            None => {
                self.conns.push(Some(conn));
                (self.conns.len() - 1) as u32
            }
        };
        let fm = &mut self.flows[f as usize];
        fm.conn = id;
        fm.inq = true;
        self.eps[fl.src as usize].tready.push_back(f);
        self.kick(fl.src);
    }

    /// Let endpoint `e` send as soon as its link is free (used when a transport has
    /// something new to send; ideal flows keep their own wake-ups).
    fn kick(&mut self, e: u32) {
        let ep = &self.eps[e as usize];
        let t = ep.busy_until.max(self.now);
        if !ep.scheduled {
            if t == self.now {
                self.inject(e);
            } else {
                self.schedule_inject(e, t);
            }
        } else if ep.sched_at > t {
            // an earlier injection than the pending one; the later event finds nothing more
            self.eps[e as usize].sched_at = t;
            self.push(t, Ev::Inject(e));
        }
    }

    /// Endpoint `e` injects its next packet if its link is free: control packets first,
    /// then data, alternating between ideal flows (round robin over destinations) and
    /// transport flows (round robin over flows). A packet that the egress cannot take
    /// now (buffer full, or — for a source node on a slotted fabric — no room left in the
    /// first occurrence of its departure slice) is not injected, and the next candidate
    /// is tried. When none can go, the endpoint waits until room may have appeared.
    fn inject(&mut self, e: u32) {
        let ep = &self.eps[e as usize];
        if ep.busy_until > self.now {
            let t = ep.busy_until;
            self.schedule_inject(e, t);
            return;
        }
        let now = self.now;
        let ep = &mut self.eps[e as usize];
        while let Some(&std::cmp::Reverse((t, _, k))) = ep.sleeping.peek() {
            if t > now {
                break;
            }
            ep.sleeping.pop();
            ep.rr.push_back(k);
            // the tries that follow read these slots in this order
            crate::prefetch::at(&ep.voqs, k as usize);
        }
        while let Some(&std::cmp::Reverse((t, f))) = ep.tsleep.peek() {
            if t > now {
                break;
            }
            ep.tsleep.pop();
            ep.tready.push_back(f);
        }
        let mut ctrl_wait = None;
        let mut sent = false;
        if let Some(&pid) = self.eps[e as usize].ctrl.front() {
            self.pool[pid as usize].route = NONE;
            match self.admit(e, pid) {
                Ok(()) => {
                    self.eps[e as usize].ctrl.pop_front();
                    sent = true;
                }
                Err(t) => ctrl_wait = Some(t.max(now + 1)),
            }
        }
        while !sent {
            let ep = &mut self.eps[e as usize];
            let ideal = match (ep.rr.is_empty(), ep.tready.is_empty()) {
                (true, true) => break,
                (false, true) => true,
                (true, false) => false,
                (false, false) => {
                    ep.turn = !ep.turn;
                    ep.turn
                }
            };
            sent = if ideal { self.try_inject_one(e).is_ok() } else { self.try_inject_flow(e).is_ok() };
        }
        // RotorLB bulk data: lowest priority at the NIC, paced by its commitments
        let mut bulk_wait = None;
        if !sent && self.rlb.is_some() {
            match self.rlb.as_mut().expect("checked").poll_send(e, now) {
                Poll::Send(b) => {
                    self.inject_bulk(e, b);
                    sent = true;
                }
                Poll::Wait(t) => bulk_wait = Some(t.max(now + 1)),
                Poll::Idle => {}
            }
        }
        let bulk_more = sent && self.rlb.as_ref().is_some_and(|r| r.has_committed(e));
        let ep = &self.eps[e as usize];
        let next = if !ep.rr.is_empty() || !ep.tready.is_empty() || (!ep.ctrl.is_empty() && ctrl_wait.is_none()) || bulk_more {
            Some(ep.busy_until)
        } else {
            [ep.sleeping.peek().map(|r| r.0 .0), ep.tsleep.peek().map(|r| r.0 .0), ctrl_wait, bulk_wait]
                .into_iter().flatten().min().map(|t| t.max(ep.busy_until))
        };
        if let Some(t) = next {
            if t < HOLD_WAIT {
                self.schedule_inject(e, t.max(self.now));
            }
        }
    }

    /// Try to inject the next packet of the destination at the head of the round robin;
    /// `Err(t)`: it cannot go now, retry at `t`.
    fn try_inject_one(&mut self, e: u32) -> Result<(), Ps> {
        let ep = &self.eps[e as usize];
        let slot = *ep.rr.front().expect("called with active destinations");
        let q = &ep.voqs[slot as usize];
        let (f, dst, dst_node) = (q.head, q.dst, q.dst_node);
        let q_injected = q.injected;
        let payload = (q.size - q_injected).min(self.mtu as u64) as u32;
        let seq = (q_injected / self.mtu as u64) as u32;
        let admitted = if self.lean_src && self.n_down == 0 && self.draining == NONE {
            self.inject_calendar(e, f, dst, dst_node, payload, seq)
        } else {
            let pid = self.new_packet_to(e, f, dst, dst_node, K_DATA, payload, seq, false);
            self.sent_hint = (f, q_injected);
            let admitted = self.admit(e, pid);
            self.sent_hint.0 = NONE;
            if admitted.is_err() {
                self.release(pid);
            }
            admitted
        };
        if let Err(wake) = admitted {
            self.ep_sleep(e, wake);
            return Err(wake);
        }
        // committed: the bytes leave the flow's queue
        self.ledger.send(false, false);
        let ep = &mut self.eps[e as usize];
        ep.rr.pop_front();
        let q = &mut ep.voqs[slot as usize];
        q.injected += payload as u64;
        self.flows[f as usize].injected = q.injected;
        if q.injected == q.size {
            match q.rest.pop_front() {
                Some(g) => {
                    let fl = &self.flows[g as usize];
                    (q.head, q.size, q.injected) = (g, fl.size, fl.injected);
                }
                None => {
                    ep.voq.remove(&dst);
                    ep.voq_free.push(slot);
                    return Ok(());
                }
            }
        }
        ep.rr.push_back(slot);
        Ok(())
    }

    /// [`Sim::new_packet_to`] and [`Sim::admit`] for a data packet of an ideal flow on a
    /// network of calendar ports under VLB or direct routing (`lean_src`), with the same
    /// result: the route and the admission tests come first, and only an admitted packet
    /// is made. A refused one leaves what making and releasing it would have left (its
    /// slot's epoch moves on, the peak of live packets counts it). `Err(t)`: refused
    /// until `t`.
    fn inject_calendar(&mut self, e: u32, f: u32, dst: u32, dst_node: u32, payload: u32, seq: u32) -> Result<(), Ps> {
        let ep = &self.eps[e as usize];
        let (node, rate) = (ep.node, ep.rate);
        let wire = (payload + self.header) as u64;
        let ser = rate.tx(wire);
        let cur = self.slice_now();
        let a = match &self.router {
            Router::Vlb(ci) if self.multipath != Multipath::Adaptive => {
                // what `pick` does with the spray when no link is down (`lean_src`)
                let (mp, seed, rng) = (self.multipath, self.seed, &mut self.rng_route);
                ci.vlb_pick(node, dst_node, cur.idx, |n| choose_among(mp, rng, seed, n, f, node))
            }
            Router::Vlb(ci) => {
                let mut cands = std::mem::take(&mut self.scratch);
                ci.vlb_spray(node, dst_node, cur.idx, &mut cands);
                let a = self.pick(&cands, f, node);
                self.scratch = cands;
                a
            }
            Router::Direct(ci) => ci.first_direct(node, dst_node, cur.idx),
            _ => unreachable!("lean_src holds for VLB and direct routing only"),
        };
        let refused = match a {
            // no way on: what admit does then (hold or drop) needs the packet
            None => None,
            Some(Action { port, dep }) => {
                self.release_for(port, wire);
                let pt = &self.ports[port as usize];
                if pt.bytes + wire > pt.cap {
                    Some(pt_wake(pt, self.now + ser))
                } else {
                    let first = self.sched.next_occurrence(cur, dep);
                    let base = self.cal_of(port) as usize;
                    let planned = self.find_slot(port, base, dep, self.ports[port as usize].rate.tx(wire), cur);
                    if matches!(planned, Some((_, abs, _, _)) if abs > first) {
                        // that occurrence of the departure slice is full
                        Some(self.sched.slice(first + 1).start)
                    } else {
                        // admitted: made, and sent on the plan just found
                        let pid = self.new_packet_to(e, f, dst, dst_node, K_DATA, payload, seq, false);
                        let now = self.now;
                        self.eps[e as usize].busy_until = now + ser;
                        let p = &mut self.pool[pid as usize];
                        p.tag = cur.idx;
                        p.innet = true;
                        self.pool_x[pid as usize].ts = now;
                        self.in_net += 1;
                        if self.collect_tm {
                            *self.tm.entry((node, dst_node)).or_default() += payload as u64;
                        }
                        self.ports[port as usize].bytes += wire;
                        match planned {
                            // what enqueue_reserved does with this plan when no option
                            // acts on the hop (lean_src): the hop of `relay_calendar`
                            Some(plan) => {
                                let pser = self.ports[port as usize].rate.tx(wire);
                                self.send_slot(port, pid, base, plan, pser, wire);
                            }
                            // no departure: the general path drops it and says why
                            None => {
                                self.preplan = Some((pid, port, now, planned));
                                self.enqueue_reserved(port, pid, dep);
                                self.preplan = None;
                            }
                        }
                        return Ok(());
                    }
                }
            }
        };
        match refused {
            Some(wake) => {
                // what a packet made and released again leaves behind
                self.peak_live = self.peak_live.max(self.live + 1);
                match self.free.last() {
                    Some(&id) => {
                        let p = &mut self.pool[id as usize];
                        p.epoch = p.epoch.wrapping_add(1);
                    }
                    None => {
                        self.pool.push(Packet { dst_node, at: NONE, rx: NONE, from: NONE, route: NONE, cred_port: NONE,
                                                ..Packet::default() });
                        self.pool_x.push(PacketX { q_port: NONE, q_dep: WILD, ..PacketX::default() });
                        self.free.push((self.pool.len() - 1) as u32);
                    }
                }
                Err(wake)
            }
            None => {
                // the general path, which routes again (an empty choice draws nothing)
                let pid = self.new_packet_to(e, f, dst, dst_node, K_DATA, payload, seq, false);
                let admitted = self.admit(e, pid);
                if admitted.is_err() {
                    self.release(pid);
                }
                admitted
            }
        }
    }

    /// A packet of flow `f` leaving endpoint `e` for endpoint `to`.
    fn new_packet(&mut self, e: u32, f: u32, to: u32, kind: u8, payload: u32, seq: u32) -> u32 {
        let dst_node = self.eps[to as usize].node;
        let ndp = kind == K_DATA && self.flows.get(f as usize).is_some_and(|fl| fl.tp == TransportKind::Ndp);
        self.new_packet_to(e, f, to, dst_node, kind, payload, seq, ndp)
    }

    /// [`Self::new_packet`] with the destination's node and whether it is NDP data known.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn new_packet_to(&mut self, e: u32, f: u32, to: u32, dst_node: u32, kind: u8, payload: u32, seq: u32, ndp: bool) -> u32 {
        let prio = if kind == K_DATA && !self.pias.is_empty() { self.pias_level(seq as u64 * self.mtu as u64) } else { 0 };
        let node = self.eps[e as usize].node;
        let wire = if kind == K_DATA { payload + self.header } else { self.tparams.ctrl_bytes };
        self.alloc(Packet {
            flow: f,
            src_node: node,
            dst_node,
            wire,
            tag: 0,
            at: node,
            rx: NONE,
            from: NONE,
            sent_abs: 0,
            route: NONE,
            pos: 0,
            cred_port: NONE,
            hops: 0,
            epoch: 0,
            rgen: 0,
            cred_vc: 0,
            kind,
            classes: 0,
            prio,
            to_host: false,
            doomed: false,
            trimmed: false,
            ce: false,
            innet: false,
            ndp,
        }, PacketX { dst_ep: to, payload, q_port: NONE, q_dep: WILD, seq, q_gen: 0, retx: false, ts: 0 })
    }

    /// Route packet `pid` from endpoint `e` and put it into the network now if its egress
    /// can take it (the endpoint is then busy for its serialization). `Err(t)`: it cannot
    /// go before `t`; the caller keeps (or releases) the packet.
    fn admit(&mut self, e: u32, pid: u32) -> Result<(), Ps> {
        let ep = &self.eps[e as usize];
        let (node, rate, prop) = (ep.node, ep.rate, ep.prop);
        let p = self.pool[pid as usize];
        let dst_node = p.dst_node;
        let wire = p.wire as u64;
        let ser = rate.tx(wire);
        let t_arr = if self.hosts_mode { self.now + ser + prop } else { self.now };
        let cur = self.slice_now();
        let tag = if self.expander {
            self.route_slice(t_arr)
        } else if t_arr == self.now {
            cur.idx
        } else {
            self.sched.slice_at(t_arr).idx
        };
        self.pool[pid as usize].tag = tag;
        let is_data = p.kind == K_DATA;
        let ep_busy = self.now + ser;
        let same_node = self.hosts_mode && dst_node == node;
        if self.draining != NONE {
            // a drained reconfiguration: nothing enters the network until its switch
            if !self.drain_waiters.contains(&e) {
                self.drain_waiters.push(e);
            }
            self.drain_refused += 1;
            return Err(HOLD_WAIT);
        }
        if self.services.pushback && is_data && !self.pool_x[pid as usize].retx {
            if let Some(until) = self.paused.get((node as u64) << 32 | dst_node as u64) {
                if until > self.now {
                    self.paused_attempts += 1;
                    return Err(until);
                }
            }
        }
        let act = if same_node {
            None
        } else if p.kind == K_BULK {
            // RotorLB names the rotor: the holder's rack sends it on that uplink. A served
            // port checks the circuit when the packet reaches its head; a calendar port
            // plans it in the first slice whose circuit leads to the committed rack
            let b = self.bulk_meta[pid as usize];
            let port = self.rlb_ports[(node * self.rlb_uplinks() + b.rotor) as usize];
            if self.ports[port as usize].served {
                Some(Action { port, dep: WILD })
            } else {
                let n = self.sched.slices();
                (0..n).map(|k| (cur.idx + k) % n)
                    .find(|&i| { let q = self.sched.peer(port, i); q != NONE && self.port_node[q as usize] == b.want_tor })
                    .map(|dep| Action { port, dep })
            }
        } else {
            match self.route(node, pid) {
                // admission control at a source node: a later slice's decision if the chosen
                // slice has no room (none: the source waits, sources never drop)
                Some(a) if self.adm && !self.hosts_mode && !self.adm_fits(a, pid) => Some(self.adm_later(node, pid).unwrap_or(a)),
                other => other,
            }
        };
        let hold_src = act.is_none() && !same_node && self.hold_on && p.kind != K_BULK && !self.failed_route;
        if hold_src && self.hold_bytes[node as usize] + wire > self.hold_cap[node as usize] {
            // no route yet and the node's hold is full: the source waits until it drains
            self.hold.refused += 1;
            if !self.hold_waiters[node as usize].contains(&e) {
                self.hold_waiters[node as usize].push(e);
            }
            return Err(HOLD_WAIT);
        }
        if !same_node {
            if let Some(a) = act {
                // admission: buffer room, and no spill past the first occurrence of the slice
                self.release_for(a.port, wire);
                let pt = &self.ports[a.port as usize];
                if pt.served && (!self.hosts_mode || self.credit_net) {
                    let c = self.class_of(pid, a.port, pt.classes.len());
                    if pt.bytes + wire > pt.cap || pt.class_bytes[c] + wire > pt.class_cap[c] {
                        // room appears when the port starts its next transmission; a port
                        // waiting for credit is polled once per packet time
                        let now = self.now;
                        return Err(if pt.busy_until > now { pt.busy_until } else { now + pt.rate.tx(wire) });
                    }
                } else if !pt.served && pt.bytes + wire > pt.cap {
                    return Err(pt_wake(pt, self.now + ser));
                }
                let cyclic_optical = pt.kind == PortKind::Optical && !self.sched.is_static() && a.dep != WILD;
                if self.services.flow_pausing && is_data && cyclic_optical && a.dep != cur.idx
                    && self.flows[p.flow as usize].injected >= self.services.elephant_bytes {
                    // an elephant (aged past the PIAS threshold) waits for its circuit
                    let wake = self.sched.slice(self.sched.next_occurrence(cur, a.dep)).start;
                    self.paused_attempts += 1;
                    return Err(wake);
                }
                if !self.hosts_mode && cyclic_optical {
                    let first = self.sched.next_occurrence(cur, a.dep);
                    let planned = self.plan_slotted(a.port, a.dep, self.ports[a.port as usize].rate.tx(wire), cur, false);
                    if matches!(planned, Some((_, abs, _, _)) if abs > first) {
                        // that occurrence of the departure slice is full: no chance before it
                        // has ended
                        return Err(self.sched.slice(first + 1).start);
                    }
                    // enqueue_reserved commits this plan (nothing changes the queue before)
                    self.preplan = Some((pid, a.port, self.now, planned));
                }
            }
        }
        self.eps[e as usize].busy_until = ep_busy;
        self.pool[pid as usize].innet = true;
        self.in_net += 1;
        if is_data {
            let px = &mut self.pool_x[pid as usize];
            px.ts = self.now;
            if self.collect_tm {
                *self.tm.entry((node, dst_node)).or_default() += px.payload as u64;
            }
        }
        if same_node {
            // intra-node traffic (hosts mode): straight to the destination's host downlink
            self.packet_hops += 1;
            self.push(t_arr, Ev::HostArrive(pid));
            return Ok(());
        }
        match act {
            None if hold_src => {
                // no route yet: held at the node (a host's packet crosses its link first)
                self.hold_bytes[node as usize] += wire;
                if self.hosts_mode {
                    self.packet_hops += 1;
                    self.pool_x[pid as usize].q_port = HOLD_PORT;
                    self.push(t_arr, Ev::HostArrive(pid));
                } else {
                    self.hold_push(node, pid);
                }
            }
            None => {
                let why = if std::mem::take(&mut self.failed_route) { DROP_FAILED } else { DROP_NO_ROUTE };
                self.drop_pkt(pid, why)
            }
            Some(a) if self.n_down > 0 && self.down[a.port as usize] => self.drop_pkt(pid, DROP_FAILED),
            Some(a) => {
                let served = self.ports[a.port as usize].served;
                if self.hosts_mode {
                    if !served {
                        self.ports[a.port as usize].bytes += wire;
                    }
                    self.packet_hops += 1;
                    let g = self.port_gen[a.port as usize];
                    let px = &mut self.pool_x[pid as usize];
                    px.q_port = a.port;
                    px.q_dep = a.dep;
                    px.q_gen = g;
                    self.push(t_arr, Ev::HostArrive(pid));
                } else if served {
                    self.served_push(a.port, pid);
                } else {
                    self.ports[a.port as usize].bytes += wire;
                    self.enqueue_reserved(a.port, pid, a.dep);
                }
            }
        }
        // a plan left unused (the packet went another way) must not outlive this call
        self.preplan = None;
        Ok(())
    }

    /// Serve the transport flow at the head of endpoint `e`'s round robin: its parked
    /// packet, else the next segment its transport allows. `Err`: nothing went.
    fn try_inject_flow(&mut self, e: u32) -> Result<(), Ps> {
        let f = self.eps[e as usize].tready.pop_front().expect("called with ready flows");
        let fl = self.flows[f as usize];
        let pid = if fl.parked != NONE {
            fl.parked
        } else {
            let now = self.now;
            let sd = match self.conns.get_mut(fl.conn as usize).and_then(|c| c.as_mut()) {
                Some(c) => c.poll_send(now),
                None => None,
            };
            let Some(sd) = sd else {
                self.flows[f as usize].inq = false;
                return Err(now);
            };
            self.ledger.send(sd.retx, false);
            if !sd.retx {
                self.flows[f as usize].injected += sd.len as u64;
            }
            let pid = self.new_packet(e, f, fl.dst, K_DATA, sd.len, sd.seq);
            self.pool_x[pid as usize].retx = sd.retx;
            pid
        };
        // a fresh routing decision on every attempt
        let p = &mut self.pool[pid as usize];
        p.route = NONE;
        p.pos = 0;
        let res = self.admit(e, pid);
        let ep = &mut self.eps[e as usize];
        match res {
            Ok(()) => {
                self.flows[f as usize].parked = NONE;
                let more = self.conns.get(fl.conn as usize).and_then(|c| c.as_ref()).is_some_and(|c| c.can_send());
                if more {
                    ep.tready.push_back(f);
                } else {
                    self.flows[f as usize].inq = false;
                }
            }
            Err(t) => {
                self.flows[f as usize].parked = pid;
                ep.tsleep.push(std::cmp::Reverse((t.max(self.now + 1), f)));
            }
        }
        self.sync_timer(f);
        res
    }

    /// The destination at the head of endpoint `e`'s round robin cannot go before `t`.
    fn ep_sleep(&mut self, e: u32, t: Ps) {
        let now = self.now;
        let ep = &mut self.eps[e as usize];
        if let Some(k) = ep.rr.pop_front() {
            let d = ep.voqs[k as usize].dst;
            ep.sleeping.push(std::cmp::Reverse((t.max(now + 1), d, k)));
        }
    }

    fn on_host_arrive(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        let px = self.pool_x[pid as usize];
        if px.q_port == HOLD_PORT {
            self.pool_x[pid as usize].q_port = NONE;
            self.hold_arrive(p.at, pid);
            return;
        }
        if px.q_port == NONE {
            // intra-node traffic: hand to the host downlink of the destination
            let dp = self.eps[px.dst_ep as usize].down_port;
            self.enqueue(dp, pid, WILD);
        } else if self.n_down > 0 && self.down[px.q_port as usize] {
            // its ToR port failed while it crossed the host link
            if !self.ports[px.q_port as usize].served {
                self.ports[px.q_port as usize].bytes -= p.wire as u64;
            }
            self.drop_pkt(pid, DROP_FAILED);
        } else if self.port_gen[px.q_port as usize] != px.q_gen && matches!(self.router, Router::Table(_)) {
            // the port's circuit was reconfigured while the packet crossed its host link:
            // the ToR forwards it by the tables in force now, as any arrival (the space
            // reserved on the old choice is given back)
            if !self.ports[px.q_port as usize].served {
                self.ports[px.q_port as usize].bytes -= p.wire as u64;
            }
            self.pool_x[pid as usize].q_port = NONE;
            self.rerouted_at_tor += 1;
            match self.route(p.at, pid) {
                Some(a) => self.enqueue(a.port, pid, a.dep),
                None => self.no_route(p.at, pid),
            }
        } else if self.ports[px.q_port as usize].served {
            // a served port queues (and may trim or drop) what arrives from its hosts
            self.enqueue(px.q_port, pid, px.q_dep);
        } else if self.adm && !self.adm_fits(Action { port: px.q_port, dep: px.q_dep }, pid) {
            // admission control at the ToR: the space reserved on the chosen port is given
            // back and a later slice's decision is taken (its buffer checked as any arrival)
            self.ports[px.q_port as usize].bytes -= p.wire as u64;
            self.adm_congested(Action { port: px.q_port, dep: px.q_dep }, pid);
            match self.adm_later(p.at, pid) {
                Some(b) => self.enqueue(b.port, pid, b.dep),
                None => self.drop_pkt(pid, DROP_ADM),
            }
        } else {
            self.enqueue_reserved(px.q_port, pid, px.q_dep);
        }
    }

    // ---------------------------------------------------------------- routing

    /// Decide the next hop of packet `pid` at `node`; `None` when nothing matches.
    fn route(&mut self, node: u32, pid: u32) -> Option<Action> {
        let p = self.pool[pid as usize];
        self.failed_route = false;
        // UCMP: a stored route's hop that missed its planned slice (see `ucmp_missed`)
        let ucmp_late = match &self.router {
            // (only while the packet has hops left: a route chosen again keeps UCMP's bound on
            // the hops of the whole path)
            Router::Ucmp(idx, ..) if p.route != NONE && p.rgen == self.route_gen && p.pos > 0
                && (p.hops as usize) < idx.max_hop() => {
                idx.hop(p.route, p.pos).and_then(|h| self.ucmp_missed(h, p.sent_abs as u64, p.wire as u64))
            }
            _ => None,
        };
        let mut cands = std::mem::take(&mut self.scratch);
        let res = match &self.router {
            Router::Source(routes) => {
                let mut fresh = p.route == NONE;
                let mut out = None;
                if !fresh {
                    match routes.hop(p.route, p.pos) {
                        Some(a) if self.port_node[a.port as usize] == node => {
                            self.pool[pid as usize].pos += 1;
                            out = Some(a);
                        }
                        // the route does not pass here (a reconfiguration sent the packet
                        // elsewhere): a new source route from this node
                        Some(_) => fresh = true,
                        None => {}
                    }
                }
                if fresh {
                    let (a, b) = routes.candidate_range(node, p.dst_node, p.tag);
                    let pick = if a == b { None } else { Some(a + self.choose(b - a, p.flow, node)) };
                    out = pick.and_then(|r| {
                        let pk = &mut self.pool[pid as usize];
                        pk.route = r;
                        pk.pos = 1;
                        routes_hop(&self.router, r, 0)
                    });
                }
                out
            }
            Router::Table(t) => {
                let nt = &t[node as usize];
                match nt.fast_actions(p.src_node, p.dst_node) {
                    // read in place (no copy): the choice `pick` makes when no link is
                    // down and the choice is not adaptive
                    Some(acts) if self.n_down == 0 && self.multipath != Multipath::Adaptive => match acts.len() {
                        0 => None,
                        n => Some(acts[choose_among(self.multipath, &mut self.rng_route, self.seed, n as u32, p.flow,
                                                    node) as usize]),
                    },
                    _ => {
                        nt.lookup(p.src_node, p.dst_node, p.tag, &mut cands);
                        self.pick(&cands, p.flow, node)
                    }
                }
            }
            Router::Direct(ci) => ci.first_direct(node, p.dst_node, p.tag),
            Router::Hoho(idx) => idx.hoho(node, p.tag, p.dst_node),
            Router::Ucmp(idx, alpha, slice_ps, rate) => {
                // a route chosen before the circuits changed is chosen again from here, and
                // so is one whose hop here missed its planned slice (for the slice it can
                // still leave in)
                if p.route == NONE || p.rgen != self.route_gen || ucmp_late.is_some() {
                    let sent = if p.kind == K_MSG {
                        0
                    } else if self.sent_hint.0 == p.flow {
                        self.sent_hint.1
                    } else {
                        self.flows[p.flow as usize].injected
                    };
                    let arr = ucmp_late.unwrap_or(p.tag);
                    let left = if ucmp_late.is_some() { idx.max_hop() - p.hops as usize } else { usize::MAX };
                    let pick = idx.ucmp_within(node, arr, p.dst_node, sent, *slice_ps, *rate, *alpha, left);
                    if ucmp_late.is_some() {
                        if pick.is_none() {
                            // no path within the hops left: the packet keeps its plan
                            self.pool[pid as usize].pos += 1;
                        } else {
                            self.adm_deferred += 1;
                        }
                    }
                    let hop = match pick {
                        Some(r) => idx.hop(r, 0),
                        None if ucmp_late.is_some() => idx.hop(p.route, p.pos),
                        None => None,
                    };
                    if let Some(r) = pick {
                        let pk = &mut self.pool[pid as usize];
                        pk.route = r;
                        pk.pos = 1;
                        pk.rgen = self.route_gen;
                    }
                    hop
                } else {
                    let pk = &mut self.pool[pid as usize];
                    pk.pos += 1;
                    idx.hop(p.route, p.pos)
                }
            }
            Router::Vlb(ci) => {
                if p.src_node == node {
                    ci.vlb_spray(node, p.dst_node, p.tag, &mut cands);
                    self.pick(&cands, p.flow, node)
                } else {
                    ci.first_direct(node, p.dst_node, p.tag)
                }
            }
            Router::Expander(sp) => {
                // the source route is a path of the slice in which it is first routed; with
                // k paths per pair, the one drawn where it is first routed (opera-sim: per
                // packet, uniformly, at the source; a code in `pos`, 0 = the BFS path)
                let stale = p.route != NONE && sp.k() > 1 && p.rgen != self.route_gen;
                let port = if p.route == NONE || stale {
                    let slice = if stale { self.route_slice(self.now) } else { p.tag };
                    let n = sp.n_paths(slice, node, p.dst_node);
                    let i = choose_among(self.multipath, &mut self.rng_paths, self.seed, n, p.flow, node);
                    let code = sp.code(slice, node, p.dst_node, i);
                    let pk = &mut self.pool[pid as usize];
                    pk.route = slice;
                    pk.pos = code;
                    pk.rgen = self.route_gen;
                    sp.next_on(slice, node, p.dst_node, code)
                } else {
                    sp.next_on(p.route, node, p.dst_node, p.pos)
                };
                (port != NONE).then_some(Action { port, dep: WILD })
            }
        };
        self.scratch = cands;
        if self.n_down > 0 {
            if let Some(a) = res {
                if self.action_down(a) {
                    self.failed_route = true;
                    return None;
                }
            }
        }
        res
    }

    /// UCMP's slice-miss check (OpenOptics §6 Case III: packets "missing the planned time
    /// slice and being deferred to later slices"): hop `h` of a packet's source route was
    /// planned for the first occurrence of its departure slice at or after absolute slice
    /// `from_abs` (the slice the previous hop sent it in). When the packet can no longer be
    /// sent in that occurrence — it ends before the packet's serialization would, e.g. the
    /// slice ended while the packet crossed the previous link — returns the arrival slice to
    /// choose its route again for, from this node: the current slice if the planned one
    /// has passed, else the next (a per-hop lookup by arrival slice decides the same).
    /// `None`: the hop keeps its plan. A full calendar queue is not a miss here (without
    /// congestion detection a packet is enqueued in its planned slice's queue, §5.2).
    fn ucmp_missed(&self, h: Action, from_abs: u64, wire: u64) -> Option<u32> {
        if h.dep == WILD || self.sched.is_static() {
            return None;
        }
        let pt = &self.ports[h.port as usize];
        if pt.kind != PortKind::Optical || pt.served {
            return None;
        }
        let n = self.sched.slices();
        let intended = from_abs + ((h.dep + n - (from_abs % n as u64) as u32) % n) as u64;
        let (_, end) = self.sched.bounds(intended, h.dep);
        if self.now + pt.rate.tx(wire) <= end {
            return None;
        }
        let cur = self.sched.slice_at(self.now);
        Some(if cur.abs > intended { cur.idx } else { (cur.idx + 1) % n })
    }

    /// Does action `a` send into a failed link (its port, or on a cyclic fabric the port
    /// its departure slice connects it to)?
    fn action_down(&self, a: Action) -> bool {
        if self.down[a.port as usize] {
            return true;
        }
        if a.dep != WILD && !self.sched.is_static() {
            let q = self.sched.peer(a.port, a.dep);
            return q != NONE && self.down[q as usize];
        }
        false
    }

    /// Admission control: does the calendar queue of action `a` have room for packet
    /// `pid` in the next occurrence of its departure slice (bandwidth × the up-time left
    /// in it, after what is queued there)? Only calendar queues are checked: a wildcard
    /// departure, a static or electrical port always admits.
    /// Admission control found the calendar queue of `pid`'s decision `a` full: the
    /// congestion OpenOptics detects ("packets are deferred to later time slices when the
    /// primary queue is full", App. B). Counted with congestion detection on; with push-back
    /// on, the packet's source is told, as for a packet that fills its queue (§5.2).
    fn adm_congested(&mut self, a: Action, pid: u32) {
        if !self.services.congestion_detection {
            return;
        }
        self.congestion_events += 1;
        if self.services.pushback {
            let cur = self.slice_now();
            let first = self.sched.next_occurrence(cur, a.dep);
            self.send_pushback(a.port, pid, a.dep, first);
        }
    }

    fn adm_fits(&mut self, a: Action, pid: u32) -> bool {
        let pt = &self.ports[a.port as usize];
        if a.dep == WILD || pt.kind != PortKind::Optical || pt.served || self.sched.is_static() {
            return true;
        }
        let ser = pt.rate.tx(self.pool[pid as usize].wire as u64);
        let cur = self.slice_now();
        let first = self.sched.next_occurrence(cur, a.dep);
        matches!(self.plan_slotted(a.port, a.dep, ser, cur, false), Some((_, abs, _, _)) if abs == first)
    }

    /// Admission control at `node` for packet `pid` whose routing decision for its arrival
    /// slice has no room: the decisions for the following arrival slices, in order (at
    /// most a cycle), until one's calendar queue admits it; None when none does.
    fn adm_later(&mut self, node: u32, pid: u32) -> Option<Action> {
        let n = self.sched.slices();
        let tag = self.pool[pid as usize].tag;
        let mut out = None;
        for k in 1..n {
            self.pool[pid as usize].tag = (tag % n + k) % n;
            if let Some(a) = self.route(node, pid) {
                if self.adm_fits(a, pid) {
                    out = Some(a);
                    break;
                }
            }
        }
        self.pool[pid as usize].tag = tag;
        self.failed_route = false;
        if out.is_some() {
            self.adm_deferred += 1;
        }
        out
    }

    fn pick(&mut self, cands: &[Action], flow: u32, node: u32) -> Option<Action> {
        if self.n_down > 0 && cands.iter().any(|&a| self.action_down(a)) {
            let up: Vec<Action> = cands.iter().filter(|&&a| !self.action_down(a)).copied().collect();
            if up.is_empty() {
                // only failed links lead on: route() reports it
                return cands.first().copied();
            }
            return self.pick(&up, flow, node);
        }
        match cands.len() {
            0 => None,
            1 => Some(cands[0]),
            _ if self.multipath == Multipath::Adaptive => {
                // calendar ports release their departed transmissions lazily: the exact
                // occupancy first
                for a in cands {
                    self.release_departed(a.port);
                }
                cands.iter().min_by_key(|a| self.ports[a.port as usize].bytes).copied()
            }
            n => Some(cands[self.choose(n as u32, flow, node) as usize]),
        }
    }

    #[inline]
    fn choose(&mut self, n: u32, flow: u32, node: u32) -> u32 {
        choose_among(self.multipath, &mut self.rng_route, self.seed, n, flow, node)
    }

    /// The candidate actions at `node` for a packet (src node, dst node) that arrived in
    /// slice `arr` — what the router would choose among (for equivalence tests).
    pub fn candidates(&mut self, node: u32, src: u32, dst: u32, arr: u32) -> Vec<Action> {
        let mut out = Vec::new();
        match &self.router {
            Router::Table(t) => t[node as usize].lookup(src, dst, arr, &mut out),
            Router::Direct(ci) => out.extend(ci.first_direct(node, dst, arr)),
            Router::Hoho(idx) => out.extend(idx.hoho(node, arr, dst)),
            Router::Ucmp(idx, ..) => {
                if src == node {
                    out.extend(idx.candidates(node, arr, dst).iter().map(|c| c.hops[0]));
                }
            }
            Router::Vlb(ci) => {
                if src == node {
                    ci.vlb_spray(node, dst, arr, &mut out);
                } else {
                    out.extend(ci.first_direct(node, dst, arr));
                }
            }
            Router::Source(r) => {
                let mut ids = Vec::new();
                r.candidates(node, dst, arr, &mut ids);
                out.extend(ids.iter().filter_map(|&i| r.hop(i, 0)));
            }
            Router::Expander(sp) => {
                // a wildcard arrival: the slice a packet routed now would follow
                let n = self.port_offset.len() as u32 - 1;
                if node >= n || dst >= n {
                    return out;
                }
                let arr = if arr == WILD { self.route_slice(self.now) } else { arr % self.sched.slices() };
                // the first hops of the paths a packet first routed here may take
                for i in 0..sp.n_paths(arr, node, dst) {
                    let port = sp.next_on(arr, node, dst, sp.code(arr, node, dst, i));
                    if port != NONE && !out.iter().any(|a: &Action| a.port == port) {
                        out.push(Action { port, dep: WILD });
                    }
                }
            }
        }
        out
    }

    // ---------------------------------------------------------------- ports

    /// Enqueue a packet arriving from a link; drops it if the port's buffer is full.
    fn enqueue(&mut self, port: u32, pid: u32, dep: u32) {
        if self.n_down > 0 && self.down[port as usize] {
            // a way that bypasses the router (RotorLB's rotor) leads into a failed link
            self.drop_pkt(pid, DROP_FAILED);
            return;
        }
        if self.ports[port as usize].served {
            self.served_enqueue(port, pid);
            return;
        }
        let wire = self.pool[pid as usize].wire as u64;
        self.release_for(port, wire);
        let pt = &mut self.ports[port as usize];
        if pt.bytes + wire > pt.cap {
            if self.services.pushback && pt.kind == PortKind::Optical && dep != WILD && !self.sched.is_static() {
                // OpenOptics §5.2: a packet that its calendar queue rejects triggers a
                // push-back (the queue is full beyond its slice: its port's buffer is)
                let cur = self.slice_now();
                let first = self.sched.next_occurrence(cur, dep);
                self.congestion_events += 1;
                self.send_pushback(port, pid, dep, first);
            }
            self.drop_pkt(pid, DROP_BUFFER);
            self.droplog.at_port(port, dep);
            return;
        }
        pt.bytes += wire;
        if self.services.congestion_detection && pt.kind == PortKind::Optical && dep != WILD && !self.sched.is_static() {
            // congestion: the calendar queue of `dep` has no room left in its first
            // occurrence (bandwidth x remaining time of the slice)
            let cur = self.slice_now();
            let first = self.sched.next_occurrence(cur, dep);
            let ser = self.ports[port as usize].rate.tx(wire);
            let full = if self.eqo.enabled() {
                self.eqo_full(port, dep, wire, cur)
            } else {
                matches!(self.plan_slotted(port, dep, ser, cur, false), Some((_, abs, _, _)) if abs > first)
            };
            if full {
                self.congestion_events += 1;
                if self.services.pushback {
                    self.send_pushback(port, pid, dep, first);
                }
            }
        }
        self.enqueue_reserved(port, pid, dep);
    }

    /// Push-back from calendar queue `dep` of `port` (its first occurrence: absolute slice
    /// `first`), full for packet `pid`: a message travels back to the packet's source node,
    /// which stops sending to the packet's destination node until that slice has come
    /// round once more.
    fn send_pushback(&mut self, port: u32, pid: u32, dep: u32, first: u64) {
        let p = self.pool[pid as usize];
        let back = self.ports[port as usize].prop;
        let until = self.sched.slice(first).end + self.sched.cycle();
        self.droplog.pushback(self.now, self.now + back, p.src_node, p.dst_node, until, port, dep);
        self.pushbacks.push((p.src_node, p.dst_node, until));
        self.pushback_msgs += 1;
        let i = (self.pushbacks.len() - 1) as u32;
        self.push(self.now + back, Ev::PushBack(i));
    }

    /// Bandwidth × EQO interval of `port`, in bytes.
    fn eqo_bytes_per_tick(&self, port: u32) -> u64 {
        (self.ports[port as usize].rate.bps as u128 * self.services.eqo_interval_ps as u128 / 8_000_000_000_000) as u64
    }

    /// EQO congestion test: is calendar queue `dep` of `port` full for a packet of `wire`
    /// bytes? Full = estimate + wire > admissible bytes (bandwidth × remaining up-time of
    /// the active slice, or × the up-time of the next occurrence for another queue). The
    /// estimate is compared with the exact occupancy for the error statistics.
    fn eqo_full(&mut self, port: u32, dep: u32, wire: u64, cur: SliceRef) -> bool {
        let bpt = self.eqo_bytes_per_tick(port);
        let est = self.eqo.read(&self.sched, port, dep, bpt, self.now);
        self.release_departed(port);
        let base = self.ports[port as usize].cal;
        let exact = if base == NONE { 0 } else { self.cal.get((base + dep) as usize).map_or(0, |q| q.bytes) };
        self.eqo.record(est, exact);
        let s = self.sched.slice(self.sched.next_occurrence(cur, dep));
        let up_from = (s.start + self.sched.guard_of(port, s.idx)).max(self.now);
        let window = s.end.saturating_sub(up_from);
        let admissible = (self.ports[port as usize].rate.bps as u128 * window as u128 / 8_000_000_000_000) as u64;
        est + wire > admissible
    }

    /// Send a packet planned for absolute slice `abs` (beyond the window) down to a host
    /// below its ToR; false if no host can take it (it then stays in the ToR).
    fn offload_pkt(&mut self, port: u32, pid: u32, dep: u32, abs: u64) -> bool {
        let node = self.port_node[port as usize];
        let Some(h) = self.offload.pick_host(node) else { return false };
        let dp = self.eps[h as usize].down_port;
        let wire = self.pool[pid as usize].wire as u64;
        self.release_departed(dp);
        if self.shared_on {
            self.shared_refresh(dp);
        }
        if self.ports[dp as usize].bytes + wire > self.ports[dp as usize].cap {
            return false;
        }
        self.ports[port as usize].bytes -= wire;
        let hops = self.pool[pid as usize].hops;
        self.offload.hold(pid, crate::services::Held { port, dep, abs, hops }, wire);
        self.ports[dp as usize].bytes += wire;
        self.enqueue_reserved(dp, pid, WILD);
        true
    }

    /// An offloaded packet reached its host: it goes back up so that it reaches the ToR
    /// when its departure slice enters the window.
    fn on_offload_at_host(&mut self, pid: u32) {
        let h = self.pool[pid as usize].at;
        let held = self.offload.held[&pid];
        let ep = &self.eps[h as usize];
        let wire = self.pool[pid as usize].wire as u64;
        let up = ep.rate.tx(wire) + ep.prop;
        let back_at = self.sched.slice(held.abs + 1 - self.offload.queues as u64).start;
        let t = back_at.saturating_sub(up).max(self.now);
        self.push(t, Ev::OffloadSend(pid));
    }

    /// The host sends an offloaded packet up (its uplink is shared with its own traffic).
    fn on_offload_send(&mut self, pid: u32) {
        let h = self.pool[pid as usize].at;
        let wire = self.pool[pid as usize].wire as u64;
        let ep = &mut self.eps[h as usize];
        let t = self.now.max(ep.busy_until);
        let ser = ep.rate.tx(wire);
        ep.busy_until = t + ser;
        let arrive = t + ser + ep.prop;
        self.packet_hops += 1;
        let epoch = self.pool[pid as usize].epoch;
        self.push(arrive, Ev::OffloadReturn(pid, epoch));
    }

    /// An offloaded packet is back at its ToR: it joins its calendar queue (or goes down
    /// again if that occurrence filled up meanwhile).
    fn on_offload_return(&mut self, pid: u32) {
        let wire = self.pool[pid as usize].wire as u64;
        let held = self.offload.back(pid, wire).expect("offloaded packet is tracked");
        let p = &mut self.pool[pid as usize];
        p.hops = held.hops;
        p.to_host = false;
        p.at = self.port_node[held.port as usize];
        self.enqueue(held.port, pid, held.dep);
    }

    /// A push-back message arrives: its source stops sending to the destination until
    /// the congested slice has come round once more.
    /// Push-back from a served port that trimmed a packet: one message per (port, source
    /// node, destination node) and routing slice to the source node, which holds data for
    /// that destination until the slice ends. The message is a control-plane signal that
    /// takes one propagation and header time per hop of the current path back.
    fn trim_pushback(&mut self, port: u32, pid: u32) {
        let p = self.pool[pid as usize];
        let node = self.port_node[port as usize];
        let gb = self.sched.guardband();
        let (slice, until) = if self.sched.is_static() {
            (0, Ps::MAX)
        } else {
            let s = self.sched.slice_at(self.now.saturating_sub(gb));
            (s.abs, s.end + gb)
        };
        if slice != self.pb_slice {
            self.pb_sent.clear();
            self.pb_slice = slice;
        }
        if !self.pb_sent.insert((port, p.src_node, p.dst_node)) {
            return;
        }
        let hops = match &self.router {
            Router::Expander(sp) => sp.hops(self.route_slice(self.now), node, p.src_node).min(16) as u64,
            _ => 1,
        };
        let pt = &self.ports[port as usize];
        let delay = if node == p.src_node { 0 } else { hops * (pt.prop + pt.rate.tx(self.tparams.ctrl_bytes as u64)) };
        self.droplog.pushback(self.now, self.now + delay, p.src_node, p.dst_node, until, port, WILD);
        self.pushbacks.push((p.src_node, p.dst_node, until));
        self.pushback_msgs += 1;
        let i = (self.pushbacks.len() - 1) as u32;
        self.push(self.now + delay, Ev::PushBack(i));
    }

    fn on_pushback(&mut self, i: u32) {
        let (src, dst, until) = self.pushbacks[i as usize];
        self.paused.update((src as u64) << 32 | dst as u64, |old| old.max(until));
    }

    /// At most one injection event per endpoint is pending.
    #[inline]
    fn schedule_inject(&mut self, e: u32, t: Ps) {
        if !self.eps[e as usize].scheduled {
            self.eps[e as usize].scheduled = true;
            self.eps[e as usize].sched_at = t;
            self.push(t, Ev::Inject(e));
        }
    }

    /// Forget planned transmissions that have started by now (their buffer space frees).
    #[inline]
    fn release_departed(&mut self, port: u32) {
        let now = self.now;
        let single = self.ports[port as usize].kind != PortKind::Optical || self.sched.is_static();
        let pt = &mut self.ports[port as usize];
        if pt.next_dep > now {
            return;
        }
        let class_tx = &mut self.class_tx[self.port_class[port as usize] as usize];
        if self.flat_cal && !single {
            let dp = &mut pt.departs;
            let (mut freed, mut last) = (0u64, (0, 0, NONE));
            let next = dp.release(now, |(t, wire, pid)| {
                freed += wire as u64;
                if t >= last.0 {
                    last = (t, wire, pid);
                }
            });
            pt.bytes -= freed;
            pt.tx_bytes += freed;
            *class_tx += freed;
            // the last to depart (the one a circuit change could catch on the wire)
            if last.2 != NONE {
                pt.last_pkt = last.2;
                pt.last_end = last.0 + pt.rate.tx(last.1 as u64);
            }
            pt.next_dep = next.unwrap_or(Ps::MAX);
            return;
        }
        if single {
            // one calendar queue (a FIFO): no heap of queue heads, `next_dep` is its first
            // planned departure
            pt.next_dep = Self::drain_queue(pt, &mut self.cal[pt.cal as usize], class_tx, now).unwrap_or(Ps::MAX);
            return;
        }
        // a drained queue that has more planned is re-keyed in place (one sift instead of
        // a pop and a push); (time, queue) keys are distinct, so the order is the same
        let mut heads = std::mem::take(&mut pt.heads);
        while let Some(mut top) = heads.peek_mut() {
            let std::cmp::Reverse((t, idx)) = *top;
            if t > now {
                break;
            }
            match Self::drain_queue(pt, &mut self.cal[(pt.cal + idx) as usize], class_tx, now) {
                Some(next) => *top = std::cmp::Reverse((next, idx)),
                None => {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
        pt.next_dep = heads.peek().map_or(Ps::MAX, |r| r.0 .0);
        pt.heads = heads;
    }

    /// A shared switch buffer: set `port`'s caps from its node's pool (every port of the
    /// node released to the exact count first), so that the admission test that follows
    /// applies the dynamic threshold (`buffer`). Nothing for a node without a pool.
    #[inline(never)]
    fn shared_refresh(&mut self, port: u32) {
        let node = self.port_node[port as usize];
        if self.shared.pool(node) == 0 {
            return;
        }
        let (a, b) = (self.port_offset[node as usize], self.port_offset[node as usize + 1]);
        let mut used = self.hold_bytes[node as usize];
        for g in a..b {
            self.release_departed(g);
            used += self.ports[g as usize].bytes;
        }
        let pt = &mut self.ports[port as usize];
        let caps = self.shared.caps(node, port, used, pt.bytes, &pt.class_bytes);
        pt.cap = caps.port;
        for (c, v) in caps.classes.into_iter().enumerate() {
            if let Some(x) = pt.class_cap.get_mut(c) {
                *x = v;
            }
        }
    }

    /// Before `port` takes `wire` more bytes: release its departed transmissions when its
    /// count of bytes could refuse them (or ECN marking reads it). The count without the
    /// release is an upper bound of the exact one, so a test it passes the exact one passes
    /// too; releasing in batches (a calendar queue asks for it every [`LAZY_RELEASE`]
    /// plans) spares most hops the port's queue heads.
    #[inline]
    fn release_for(&mut self, port: u32, wire: u64) {
        if self.shared_on {
            self.shared_refresh(port);
        }
        let pt = &self.ports[port as usize];
        if pt.bytes + wire > pt.cap || pt.served || (self.any_ecn && pt.ecn_k > 0) {
            self.release_departed(port);
        }
    }

    /// Release the transmissions of one of `pt`'s calendar queues that have started by
    /// `now`; the queue's next planned departure, if any.
    #[inline]
    fn drain_queue(pt: &mut Port, cq: &mut CalQ, class_tx: &mut u64, now: Ps) -> Option<Ps> {
        while let Some(&(t, wire, pid)) = cq.planned.front() {
            if t > now {
                return Some(t);
            }
            cq.planned.pop_front();
            pt.bytes -= wire as u64;
            cq.bytes -= wire as u64;
            pt.tx_bytes += wire as u64;
            *class_tx += wire as u64;
            pt.last_pkt = pid;
            pt.last_end = t + pt.rate.tx(wire as u64);
        }
        None
    }

    /// The first of `port`'s calendar queues in `cal`, made on first use.
    #[inline]
    fn cal_of(&mut self, port: u32) -> u32 {
        let base = self.ports[port as usize].cal;
        if base != NONE {
            return base;
        }
        let n = if self.ports[port as usize].kind == PortKind::Optical && !self.sched.is_static() {
            self.sched.slices() as usize
        } else {
            1
        };
        let base = self.cal.len() as u32;
        self.cal.resize_with(self.cal.len() + n, CalQ::default);
        self.ports[port as usize].cal = base;
        base
    }

    /// Plan the transmission of a packet whose buffer space is already counted: find its
    /// departure (tail of its calendar queue or link), check it against the schedule, and
    /// schedule its arrival at the far end.
    fn enqueue_reserved(&mut self, port: u32, pid: u32, dep: u32) {
        let now = self.now;
        let wire = self.pool[pid as usize].wire as u64;
        let gb = self.sched.guardband();
        let cyclic = !self.sched.is_static();
        let cur = self.slice_now();
        let pt = &self.ports[port as usize];
        let ser = pt.rate.tx(wire);
        let kind = pt.kind;
        let mut offload_refused = false;
        if self.offload.enabled() && kind == PortKind::Optical && cyclic && dep != WILD {
            if let Some((_, abs, _, _)) = self.plan_slotted(port, dep, ser, cur, false) {
                if abs >= cur.abs + self.offload.queues as u64 {
                    if self.offload_pkt(port, pid, dep, abs) {
                        return;
                    }
                    // no host below can take it now: it stays in the ToR
                    self.offload.refused += 1;
                    offload_refused = true;
                }
            }
        }
        let pt = &self.ports[port as usize];
        // (departure time, absolute slice, slice index, receiving port)
        let plan = if kind == PortKind::Optical && cyclic {
            match self.preplan.take() {
                // the plan the source's admission just made for this packet (nothing has
                // moved since): committed without searching again
                Some((pp, pport, at, plan)) if pp == pid && pport == port && at == now => {
                    if let Some(pl) = plan {
                        self.commit_slot(self.ports[port as usize].cal as usize, pl, ser);
                    }
                    plan
                }
                _ => self.plan_slotted(port, dep, ser, cur, true),
            }
        } else {
            let rx = if kind == PortKind::Optical { self.sched.peer(port, 0) } else { pt.peer };
            if rx == NONE {
                None
            } else {
                let d = now.max(pt.busy_until).max(pt.down_until);
                self.ports[port as usize].busy_until = d + ser;
                // a static fabric's "slice" is the configuration in force (one per reconfiguration)
                Some((d, self.reconfigs_applied, cur.idx, rx))
            }
        };
        let Some((d, abs, idx, rx)) = plan else {
            let pt = &mut self.ports[port as usize];
            pt.bytes -= wire;
            let reason = if kind == PortKind::Optical && cyclic && ser + gb > self.sched.slice(cur.abs).end - cur.start {
                DROP_OVERSIZE
            } else {
                DROP_NO_CIRCUIT
            };
            self.drop_pkt(pid, reason);
            return;
        };
        if kind == PortKind::Optical {
            self.check_guard(port, d, ser, abs, idx, cyclic);
        }
        if self.offload.enabled() && !offload_refused && kind == PortKind::Optical && cyclic
            && dep != WILD && abs >= cur.abs + self.offload.queues as u64 {
            self.offload.window_violations += 1;
        }
        if self.eqo.enabled() && kind == PortKind::Optical && cyclic {
            let bpt = self.eqo_bytes_per_tick(port);
            self.eqo.read(&self.sched, port, idx, bpt, now);
            self.eqo.add(port, idx, wire);
        }
        let queued = self.ports[port as usize].bytes - wire;
        self.ecn_mark(port, pid, queued);
        let base = self.cal_of(port);
        let calendar = kind == PortKind::Optical && cyclic;
        let to_host = kind == PortKind::HostDown;
        let at = if to_host { rx } else { self.port_node[rx as usize] };
        // the arrival slice at the next hop is the slice the packet was sent in
        let tag = if kind == PortKind::Optical || !cyclic { idx } else { self.sched.slice_at(d).idx };
        let rx = if kind == PortKind::Optical { rx } else { NONE };
        // a port with one queue keeps no heap of queue heads (release_departed)
        let qi = if calendar { idx } else { 0 };
        self.launch(port, pid, base + qi, calendar, Launch { d, ser, wire, abs, tag, at, rx, to_host });
    }

    /// Queue a planned transmission in calendar queue `q` (an index into `cal`) of `port`
    /// and send its packet on: the queue's bytes and plan grow (a queue that was empty
    /// enters the port's heap of queue heads when `heads`), the packet leaves for its next
    /// node and its arrival is scheduled; every [`LAZY_RELEASE`] plans of the queue, the
    /// port releases what has departed.
    #[inline(always)]
    fn launch(&mut self, port: u32, pid: u32, q: u32, heads: bool, l: Launch) {
        let pt = &mut self.ports[port as usize];
        let batch = if heads && self.flat_cal {
            pt.next_dep = pt.next_dep.min(l.d);
            pt.departs.push((l.d, l.wire as u32, pid))
        } else {
            let cq = &mut self.cal[q as usize];
            cq.bytes += l.wire;
            if cq.planned.is_empty() {
                if heads {
                    pt.heads.push(std::cmp::Reverse((l.d, q - pt.cal)));
                }
                pt.next_dep = pt.next_dep.min(l.d);
            }
            cq.planned.push_back((l.d, l.wire as u32, pid));
            cq.lazy += 1;
            let batch = cq.lazy >= LAZY_RELEASE;
            if batch {
                cq.lazy = 0;
            }
            batch
        };
        let arrive = l.d + l.ser + pt.prop;
        let cls = self.port_class[port as usize];
        let p = &mut self.pool[pid as usize];
        p.tag = l.tag;
        p.at = l.at;
        p.rx = l.rx;
        p.from = port;
        p.sent_abs = l.abs as u32;
        p.to_host = l.to_host;
        p.hops += 1;
        if cls < 3 {
            p.classes |= 1 << cls;
        }
        let epoch = p.epoch;
        self.packet_hops += 1;
        self.push(arrive, Ev::Arrive(pid, epoch));
        if batch {
            self.release_departed(port);
        }
    }

    /// Departure of a packet on a slotted optical port: the first occurrence of its
    /// departure slice (or, for a wildcard, of any slice with a circuit) from now whose
    /// calendar queue tail leaves room for the whole serialization before the slice ends.
    /// With `commit` the queue's tail moves past it.
    fn plan_slotted(&mut self, port: u32, dep: u32, ser: Ps, cur: SliceRef, commit: bool) -> Option<SlotPlan> {
        let base = self.cal_of(port) as usize;
        let plan = self.find_slot(port, base, dep, ser, cur)?;
        if commit {
            self.commit_slot(base, plan, ser);
        }
        Some(plan)
    }

    /// Move the tail of the planned calendar queue (of the port whose queues start at
    /// `base`) past a transmission of `ser` planned there.
    #[inline]
    fn commit_slot(&mut self, base: usize, (t0, abs, idx, _): SlotPlan, ser: Ps) {
        self.cal[base + idx as usize].tail = (abs, t0 + ser);
    }

    /// Count a guardband violation if an optical port's transmission (start `d`, lasting
    /// `ser`, in slice `abs` of index `idx`) is not inside the circuit's up-time: after the
    /// slice's guardband (on a cyclic schedule), before its end, and after the port's
    /// reconfiguration delay.
    #[inline]
    fn check_guard(&mut self, port: u32, d: Ps, ser: Ps, abs: u64, idx: u32, cyclic: bool) {
        let (start, end) = self.sched.bounds(abs, idx);
        let up = start + if cyclic { self.sched.guard_of(port, idx) } else { 0 };
        if cyclic && (d < up || d + ser > end) || d < self.ports[port as usize].down_until {
            self.gb_violations += 1;
        }
    }

    /// [`Sim::plan_slotted`] without the commit, for a port whose calendar queues start at
    /// `base`: (departure, absolute slice, slice index, receiving port).
    #[inline]
    fn find_slot(&self, port: u32, base: usize, dep: u32, ser: Ps, cur: SliceRef) -> Option<SlotPlan> {
        let sched = &self.sched;
        let n = sched.slices();
        let now = self.now;
        let down = self.ports[port as usize].down_until;
        let tails = &self.cal[base..base + n as usize];
        // slice `abs` of index `idx`: the start of the packet's serialization, if it fits
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        fn fits(sched: &Schedule, tails: &[CalQ], port: u32, now: Ps, down: Ps, ser: Ps, abs: u64, idx: u32) -> Option<Ps> {
            let (start, end) = sched.bounds(abs, idx);
            let (ta, tt) = tails[idx as usize].tail;
            let t0 = now.max(start + sched.guard_of(port, idx)).max(if ta == abs { tt } else { 0 }).max(down);
            (t0 + ser <= end).then_some(t0)
        }
        let fits = |abs: u64, idx: u32| fits(sched, tails, port, now, down, ser, abs, idx);
        let (abs, t0, idx) = if dep == WILD {
            // first slice with a circuit and room, within two cycles
            let mut found = None;
            let from = if down > now { sched.slice_at(down).abs.max(cur.abs) } else { cur.abs };
            let mut idx = (from % n as u64) as u32;
            for k in 0..2 * n as u64 {
                let abs = from + k;
                let i = idx;
                idx = if idx + 1 == n { 0 } else { idx + 1 };
                if sched.peer(port, i) == NONE {
                    continue;
                }
                let (ta, _) = tails[i as usize].tail;
                if ta > abs {
                    continue; // this queue already spilled into a later occurrence
                }
                if let Some(t0) = fits(abs, i) {
                    found = Some((abs, t0, i));
                    break;
                }
            }
            found?
        } else {
            if sched.peer(port, dep) == NONE {
                return None;
            }
            let first = sched.next_occurrence(cur, dep);
            let mut abs = first.max(tails[dep as usize].tail.0);
            while down > now && sched.bounds(abs, dep).1 <= down {
                abs += n as u64; // the circuit is still being reconfigured
            }
            let mut tries = 0;
            loop {
                if let Some(t0) = fits(abs, dep) {
                    break (abs, t0, dep);
                }
                tries += 1;
                if tries > 2 {
                    return None; // never fits in an empty slice: oversize
                }
                // a fixed departure slice recurs every n slices
                abs += n as u64;
            }
        };
        Some((t0, abs, idx, sched.peer(port, idx)))
    }

    fn on_arrive(&mut self, pid: u32, epoch: u16) {
        let p = self.pool[pid as usize];
        if p.epoch != epoch {
            return; // a cancelled plan (re-planned after a reconfiguration)
        }
        if p.doomed {
            self.drop_pkt(pid, DROP_RECONF);
            return;
        }
        if !self.loss.is_empty() && p.kind == K_DATA && self.loss.remove(&(p.flow, self.pool_x[pid as usize].seq)) {
            self.drop_pkt(pid, DROP_INJECTED);
            return;
        }
        if p.rx != NONE {
            // two different senders into one receiving port in one slice is a collision
            let r = &mut self.rx_last[p.rx as usize];
            if r.0 == p.sent_abs && r.1 != p.from && r.1 != NONE {
                self.collisions += 1;
            }
            *r = (p.sent_abs, p.from);
        }
        if p.to_host {
            if self.offload.enabled() && self.offload.held.contains_key(&pid) {
                self.on_offload_at_host(pid);
            } else {
                self.deliver(pid);
            }
            return;
        }
        if p.kind == K_MSG {
            self.msg_arrive(pid);
            return;
        }
        if p.at == p.dst_node {
            if self.msg.rx_min != NONE && p.wire > self.msg.rx_min && p.kind == K_DATA {
                self.count_rx(pid);
            }
            if self.hosts_mode {
                let dp = self.eps[self.pool_x[pid as usize].dst_ep as usize].down_port;
                self.enqueue(dp, pid, WILD);
            } else {
                self.deliver(pid);
            }
            return;
        }
        if self.lean && self.relay_calendar(pid, p.at, p.src_node, p.dst_node, p.tag, p.wire as u64) {
            return;
        }
        match self.route(p.at, pid) {
            Some(a) if self.adm && !self.adm_fits(a, pid) => {
                self.adm_congested(a, pid);
                match self.adm_later(p.at, pid) {
                    Some(b) => self.enqueue(b.port, pid, b.dep),
                    None => self.drop_pkt(pid, DROP_ADM),
                }
            }
            Some(a) => self.enqueue(a.port, pid, a.dep),
            None => self.no_route(p.at, pid),
        }
    }

    /// The hop of a packet relayed at `node` under VLB or direct routing onto a calendar
    /// port (a slotted optical port without ECN), when no option acts on it (`lean`) and no
    /// link is down: what [`Sim::route`], [`Sim::enqueue`] and [`Sim::enqueue_reserved`]
    /// do, in one pass, with the same result. False: another case, and nothing changed
    /// (the general path takes it).
    #[inline]
    fn relay_calendar(&mut self, pid: u32, node: u32, src: u32, dst: u32, tag: u32, wire: u64) -> bool {
        if self.n_down > 0 {
            return false;
        }
        let a = match &self.router {
            Router::Direct(ci) => ci.first_direct(node, dst, tag),
            Router::Vlb(ci) if src != node => ci.first_direct(node, dst, tag),
            _ => return false,
        };
        let Some(Action { port, dep }) = a else { return false };
        let pt = &self.ports[port as usize];
        if pt.served || pt.kind != PortKind::Optical || dep == WILD || pt.cal == NONE || (self.any_ecn && pt.ecn_k > 0) {
            return false;
        }
        if pt.bytes + wire > pt.cap {
            self.release_departed(port);
            if self.ports[port as usize].bytes + wire > self.ports[port as usize].cap {
                self.drop_pkt(pid, DROP_BUFFER);
                self.droplog.at_port(port, dep);
                return true;
            }
        }
        let pt = &self.ports[port as usize];
        let (ser, base) = (pt.rate.tx(wire), pt.cal as usize);
        let cur = self.slice_now();
        // no departure: the general path drops it and says why
        let Some(plan) = self.find_slot(port, base, dep, ser, cur) else { return false };
        self.ports[port as usize].bytes += wire;
        self.send_slot(port, pid, base, plan, ser, wire);
        true
    }

    /// Send packet `pid` (its `wire` bytes already counted at `port`) on slot plan `plan`
    /// of the calendar port whose queues start at `base`, serialized in `ser`: the
    /// guardband check, the queue's new tail, and [`Sim::launch`].
    #[inline(always)]
    fn send_slot(&mut self, port: u32, pid: u32, base: usize, plan: SlotPlan, ser: Ps, wire: u64) {
        let (d, abs, idx, rx) = plan;
        self.check_guard(port, d, ser, abs, idx, true);
        self.commit_slot(base, plan, ser);
        let at = self.port_node[rx as usize];
        self.launch(port, pid, (base + idx as usize) as u32, true, Launch { d, ser, wire, abs, tag: idx, at, rx, to_host: false });
    }

    fn deliver(&mut self, pid: u32) {
        self.return_credit(pid);
        let p = self.pool[pid as usize];
        if p.kind == K_BULK {
            self.bulk_arrive(pid);
            return;
        }
        if self.flows[p.flow as usize].tp.reliable() {
            self.transport_arrive(pid);
            return;
        }
        self.latency.add(self.now - self.pool_x[pid as usize].ts);
        self.count_delivery(pid);
        let fl = &mut self.flows[p.flow as usize];
        if fl.delivered == fl.size {
            self.flow_finished(p.flow);
        }
        self.release(pid);
    }

    // ---------------------------------------------------------------- holding

    /// Packet `pid` at `node` found no route. With holding on it waits in the node's hold
    /// (a relayed packet that finds the hold full is dropped as `buffer_overflow`, except
    /// in a lossless credit network, whose link credit already bounds what a node holds);
    /// otherwise it is dropped as `no_route`.
    #[cold]
    fn no_route(&mut self, node: u32, pid: u32) {
        if std::mem::take(&mut self.failed_route) {
            self.drop_pkt(pid, DROP_FAILED);
            return;
        }
        if !self.hold_on || self.pool[pid as usize].kind == K_BULK {
            self.drop_pkt(pid, DROP_NO_ROUTE);
            return;
        }
        let wire = self.pool[pid as usize].wire as u64;
        if !self.credit_net && self.hold_bytes[node as usize] + wire > self.hold_cap[node as usize] {
            self.hold.overflow += 1;
            self.drop_pkt(pid, DROP_BUFFER);
            return;
        }
        self.hold_bytes[node as usize] += wire;
        self.hold_push(node, pid);
    }

    /// Append `pid` to its destination's hold at `node` (its bytes are already counted in
    /// `hold_bytes`). A packet keeps the link credit it holds: it occupies this node's
    /// buffer.
    fn hold_push(&mut self, node: u32, pid: u32) {
        let p = &mut self.pool[pid as usize];
        p.at = node;
        p.to_host = false;
        let (dst, wire) = (p.dst_node, p.wire as u64);
        self.holds[node as usize].entry(dst).or_default().push_back(pid);
        let h = &mut self.hold;
        h.packets += 1;
        h.bytes += wire;
        h.total += 1;
        h.peak_packets = h.peak_packets.max(h.packets);
        h.peak_bytes = h.peak_bytes.max(h.bytes);
        let pk = &mut self.hold_peak_node[node as usize];
        *pk = (*pk).max(self.hold_bytes[node as usize]);
        if self.draining != NONE {
            self.check_drain();
        }
    }

    /// A source's packet bound for the hold reached its ToR over the host link: routed on
    /// if the tables gave it a route meanwhile (and its port has room), else held.
    fn hold_arrive(&mut self, node: u32, pid: u32) {
        let wire = self.pool[pid as usize].wire as u64;
        self.pool[pid as usize].tag = self.slice_now().idx;
        if let Some(a) = self.route(node, pid) {
            match self.room(a.port, pid) {
                Ok(()) => {
                    self.hold_bytes[node as usize] -= wire;
                    self.wake_hold_waiters(node);
                    self.enqueue(a.port, pid, a.dep);
                    return;
                }
                Err(t) => self.schedule_release(t),
            }
        }
        self.hold_push(node, pid);
    }

    /// Can `port` take packet `pid` now? `Err(t)`: not before `t`.
    fn room(&mut self, port: u32, pid: u32) -> Result<(), Ps> {
        let wire = self.pool[pid as usize].wire as u64;
        let now = self.now;
        if self.ports[port as usize].served {
            if self.credit_net {
                return Ok(()); // lossless: the packet already holds its place (link credit)
            }
            if self.shared_on {
                self.shared_refresh(port);
            }
            let k = self.ports[port as usize].classes.len();
            let c = self.class_of(pid, port, k);
            let pt = &self.ports[port as usize];
            if pt.bytes + wire <= pt.cap && pt.class_bytes[c] + wire <= pt.class_cap[c] {
                return Ok(());
            }
            return Err(if pt.busy_until > now { pt.busy_until } else { now + pt.rate.tx(wire) });
        }
        self.release_for(port, wire);
        let pt = &self.ports[port as usize];
        if pt.bytes + wire <= pt.cap { Ok(()) } else { Err(pt_wake(pt, now + pt.rate.tx(wire))) }
    }

    /// Try the held packets again at the next event time `t` (one pending release).
    fn schedule_release(&mut self, t: Ps) {
        let t = t.max(self.now);
        if t < self.release_at {
            self.release_at = t;
            self.push(t, Ev::Release);
        }
    }

    fn on_release(&mut self) {
        if self.release_at != self.now {
            return; // superseded by an earlier release
        }
        self.release_at = Ps::MAX;
        let now = self.now;
        if self.reconfigs.iter().any(|r| r.3 == now && !r.0.is_empty()) {
            return; // a reconfiguration due now tries them once its circuits are set
        }
        self.release_held();
    }

    /// Route every held packet again, node by node and destination by destination, in
    /// arrival order. A packet with a route leaves the hold for its port; one whose port
    /// has no room stays, with the packets behind it for the same destination (first in,
    /// first out), and is tried again when the port may have room; one without a route
    /// stays.
    fn release_held(&mut self) {
        if self.hold.packets == 0 {
            return;
        }
        let tag = self.slice_now().idx;
        let mut wake = Ps::MAX;
        for node in 0..self.holds.len() as u32 {
            if self.holds[node as usize].is_empty() {
                continue;
            }
            let held = std::mem::take(&mut self.holds[node as usize]);
            let mut keep: BTreeMap<u32, VecDeque<u32>> = BTreeMap::new();
            let mut freed = false;
            for (dst, q) in held {
                let mut rest = VecDeque::new();
                let mut blocked = false;
                for pid in q {
                    if blocked {
                        rest.push_back(pid);
                        continue;
                    }
                    self.pool[pid as usize].tag = tag;
                    let Some(a) = self.route(node, pid) else {
                        rest.push_back(pid);
                        continue;
                    };
                    if let Err(t) = self.room(a.port, pid) {
                        wake = wake.min(t);
                        blocked = true;
                        rest.push_back(pid);
                        continue;
                    }
                    let wire = self.pool[pid as usize].wire as u64;
                    self.hold_bytes[node as usize] -= wire;
                    self.hold.packets -= 1;
                    self.hold.bytes -= wire;
                    self.hold.released += 1;
                    freed = true;
                    self.enqueue(a.port, pid, a.dep);
                }
                if !rest.is_empty() {
                    keep.insert(dst, rest);
                }
            }
            // packets held at this node meanwhile (a bounce) queue behind the older ones
            let newer = std::mem::replace(&mut self.holds[node as usize], keep);
            for (d, q) in newer {
                self.holds[node as usize].entry(d).or_default().extend(q);
            }
            if freed {
                self.wake_hold_waiters(node);
            }
        }
        if wake != Ps::MAX && self.hold.packets > 0 {
            self.schedule_release(wake);
        }
    }

    /// The hold of `node` has room again: endpoints it refused try again now.
    fn wake_hold_waiters(&mut self, node: u32) {
        if self.hold_waiters[node as usize].is_empty() {
            return;
        }
        for e in std::mem::take(&mut self.hold_waiters[node as usize]) {
            self.wake_endpoint(e);
        }
    }

    /// An endpoint that waits without a wake-up time (`HOLD_WAIT`) tries again now.
    fn wake_endpoint(&mut self, e: u32) {
        let now = self.now;
        let ep = &mut self.eps[e as usize];
        let fix = |t: Ps| if t >= HOLD_WAIT { now } else { t };
        if ep.sleeping.iter().any(|r| r.0 .0 >= HOLD_WAIT) {
            ep.sleeping = ep.sleeping.drain().map(|std::cmp::Reverse((t, d, k))| std::cmp::Reverse((fix(t), d, k))).collect();
        }
        if ep.tsleep.iter().any(|r| r.0 .0 >= HOLD_WAIT) {
            ep.tsleep = ep.tsleep.drain().map(|std::cmp::Reverse((t, f))| std::cmp::Reverse((fix(t), f))).collect();
        }
        self.kick(e);
    }

    // ---------------------------------------------------------------- served ports

    /// Priority class of a packet at `port` with `k` classes: control packets and
    /// trimmed headers 0, NDP data 1, other data 2 (Duo's HIGH / MEDIUM / LOW), capped
    /// at the port's lowest class. In a credit network: its virtual channel.
    #[inline]
    fn class_of(&self, pid: u32, port: u32, k: usize) -> usize {
        if k <= 1 {
            return 0;
        }
        let p = &self.pool[pid as usize];
        if self.credit_net {
            if self.port_vc.is_empty() {
                // virtual channel by hop count: a packet's n-th link uses channel n (the
                // last channel for longer paths), so channel dependencies only go up when
                // the channels cover the longest path
                return (p.hops as usize).min(k - 1);
            }
            // the routing's rule: channel 0 on the first link, then the channel of the
            // previous link (`cred_vc`), one up on the class transitions the rule names
            if p.hops == 0 || p.from == NONE {
                return 0;
            }
            let step = self.tparams.credit_vc_step.unwrap_or(0);
            let bit = 8 * self.port_vc[p.from as usize] as u32 + self.port_vc[port as usize] as u32;
            return (p.cred_vc as usize + ((step >> bit) & 1) as usize).min(k - 1);
        }
        let c = if p.kind == K_BULK {
            k - 1
        } else if p.kind != K_DATA || p.trimmed {
            0
        } else if !self.pias.is_empty() {
            1 + p.prio as usize
        } else if p.ndp {
            1
        } else {
            2
        };
        c.min(k - 1)
    }

    /// PIAS: the priority level of a data packet from the bytes its flow sent before it
    /// (level i while fewer than `pias[i]` bytes were sent; the last level beyond).
    #[inline]
    fn pias_level(&self, sent: u64) -> u8 {
        self.pias.iter().position(|&t| sent < t).unwrap_or(self.pias.len()) as u8
    }

    /// ECN: mark a data packet that finds more than K bytes queued at `port`.
    #[inline]
    fn ecn_mark(&mut self, port: u32, pid: u32, queued: u64) {
        let k = self.ports[port as usize].ecn_k;
        if k > 0 && queued > k {
            let p = &mut self.pool[pid as usize];
            if p.kind == K_DATA && !p.ce {
                p.ce = true;
                self.ecn_marks += 1;
            }
        }
    }

    /// A packet arrives at a served port: queue it in its class, trim an NDP data packet
    /// whose class is full to its header (class 0), return a header that finds class 0
    /// full to its sender (NDP's return-to-sender) or drop it, drop anything else that
    /// does not fit.
    fn served_enqueue(&mut self, port: u32, pid: u32) {
        if self.credit_net {
            // lossless: the upstream link's credit guaranteed this packet a place
            self.served_push(port, pid);
            return;
        }
        let k = self.ports[port as usize].classes.len();
        let queued = self.ports[port as usize].bytes;
        self.ecn_mark(port, pid, queued);
        if self.shared_on {
            self.shared_refresh(port);
        }
        let fits = |pt: &Port, c: usize, wire: u64| pt.bytes + wire <= pt.cap && pt.class_bytes[c] + wire <= pt.class_cap[c];
        let c = self.class_of(pid, port, k);
        let wire = self.pool[pid as usize].wire as u64;
        if fits(&self.ports[port as usize], c, wire) {
            self.served_push(port, pid);
            return;
        }
        let p = self.pool[pid as usize];
        let ndp = p.kind == K_DATA && p.ndp;
        if self.ports[port as usize].trim && ndp && !p.trimmed {
            let hdr = self.tparams.ctrl_bytes;
            if self.services.congestion_detection {
                // congestion on a served port: an NDP data packet finds its class full;
                // trimming is the response, push-back the optional next one
                self.congestion_events += 1;
                if self.services.pushback {
                    self.trim_pushback(port, pid);
                }
            }
            let pk = &mut self.pool[pid as usize];
            pk.trimmed = true;
            pk.wire = hdr;
            self.ledger.trims += 1;
            if fits(&self.ports[port as usize], 0, hdr as u64) {
                self.served_push(port, pid);
            } else if self.tparams.ndp_return_to_sender {
                self.bounce(port, pid);
            } else {
                self.drop_pkt(pid, DROP_HEADER);
            }
            return;
        }
        let reason = if c == 0 && (p.kind != K_DATA || p.trimmed) && k > 1 {
            DROP_HEADER
        } else if k > 1 && self.ports[port as usize].bytes + wire <= self.ports[port as usize].cap {
            DROP_CLASS
        } else {
            DROP_BUFFER
        };
        self.drop_pkt(pid, reason);
        self.droplog.at_port(port, WILD);
    }

    /// Return-to-sender: a trimmed header that found no room goes back to its sender as
    /// a NACK from the node of `port`.
    fn bounce(&mut self, port: u32, pid: u32) {
        let node = self.port_node[port as usize];
        let f = self.pool[pid as usize].flow;
        let src = self.flows[f as usize].src;
        let back = self.eps[src as usize].node;
        let cur = if self.expander { self.route_slice(self.now) } else { self.slice_now().idx };
        let p = &mut self.pool[pid as usize];
        p.kind = K_NACK;
        p.src_node = node;
        p.dst_node = back;
        self.pool_x[pid as usize].dst_ep = src;
        let p = &mut self.pool[pid as usize];
        p.route = NONE;
        p.pos = 0;
        p.tag = cur;
        self.ledger.bounces += 1;
        if back == node {
            if self.hosts_mode {
                let dp = self.eps[src as usize].down_port;
                self.enqueue(dp, pid, WILD);
            } else {
                self.deliver(pid);
            }
            return;
        }
        match self.route(node, pid) {
            Some(a) => self.enqueue(a.port, pid, a.dep),
            None => self.no_route(node, pid),
        }
    }

    /// Queue a packet that fits in its class, and start the port if it is idle.
    fn served_push(&mut self, port: u32, pid: u32) {
        let k = self.ports[port as usize].classes.len();
        let c = self.class_of(pid, port, k);
        let wire = self.pool[pid as usize].wire as u64;
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        pt.classes[c].push_back(pid);
        pt.class_bytes[c] += wire;
        pt.bytes += wire;
        if pt.free_pending {
            return;
        }
        if pt.busy_until <= now {
            self.start_tx(port);
        } else {
            pt.free_pending = true;
            let t = pt.busy_until;
            self.push(t, Ev::PortFree(port));
        }
    }

    /// An idle served port sends the head of its highest non-empty class.
    fn start_tx(&mut self, port: u32) {
        let now = self.now;
        let cur = self.slice_now();
        let cyclic = !self.sched.is_static();
        loop {
            let pt = &mut self.ports[port as usize];
            let c = if !pt.quantum.is_empty() {
                // weighted service: deficit round robin over the non-empty classes
                if pt.bytes == 0 {
                    return;
                }
                let k = pt.classes.len();
                loop {
                    let c = pt.drr;
                    match pt.classes[c].front() {
                        Some(&h) if self.pool[h as usize].wire as u64 <= pt.deficit[c] => {
                            pt.deficit[c] -= self.pool[h as usize].wire as u64;
                            break c;
                        }
                        Some(_) => {}
                        None => pt.deficit[c] = 0,
                    }
                    pt.drr = (c + 1) % k;
                    let nc = pt.drr;
                    if !pt.classes[nc].is_empty() {
                        pt.deficit[nc] += pt.quantum[nc];
                    }
                }
            } else if pt.credit.is_empty() {
                let Some(c) = pt.classes.iter().position(|q| !q.is_empty()) else { return };
                c
            } else {
                // virtual channels served round robin, each only against its credit
                // (with the returns that have arrived by now)
                while let Some(&(t, vc, bytes)) = pt.cred_ret.front() {
                    if t > now {
                        break;
                    }
                    pt.credit[vc as usize] += bytes as u64;
                    pt.cred_ret.pop_front();
                }
                let k = pt.classes.len();
                let mut pick = None;
                let mut any = false;
                for i in 0..k {
                    let v = (pt.rr_vc + i) % k;
                    if let Some(&h) = pt.classes[v].front() {
                        any = true;
                        if self.pool[h as usize].wire as u64 <= pt.credit[v] {
                            pick = Some(v);
                            break;
                        }
                    }
                }
                match pick {
                    Some(v) => v,
                    None => {
                        if any {
                            self.block(port);
                        }
                        return;
                    }
                }
            };
            let pid = pt.classes[c].pop_front().expect("non-empty class");
            let wire = self.pool[pid as usize].wire as u64;
            if !pt.credit.is_empty() {
                pt.credit[c] -= wire;
                pt.rr_vc = c + 1;
                pt.blocked_since = Ps::MAX;
            }
            let pt = &mut self.ports[port as usize];
            pt.class_bytes[c] -= wire;
            pt.bytes -= wire;
            let kind = pt.kind;
            let ser = pt.rate.tx(wire);
            let d = now.max(pt.down_until);
            let rx = if kind == PortKind::Optical && cyclic {
                match self.gate(port, pid, d, ser) {
                    Gate::Send(rx) => rx,
                    Gate::Moved => continue,
                    Gate::Wait(t) => {
                        // the circuit is down: the head waits for it, and so does the port
                        let pt = &mut self.ports[port as usize];
                        pt.classes[c].push_front(pid);
                        pt.class_bytes[c] += wire;
                        pt.bytes += wire;
                        pt.free_pending = true;
                        self.push(t, Ev::PortFree(port));
                        return;
                    }
                }
            } else if kind == PortKind::Optical {
                self.sched.peer(port, 0)
            } else {
                pt.peer
            };
            if rx == NONE {
                self.drop_pkt(pid, DROP_NO_CIRCUIT);
                continue;
            }
            if kind == PortKind::Optical && cyclic && !self.sched.window_ok(port, rx, d, ser) {
                self.gb_violations += 1;
            }
            let pt = &mut self.ports[port as usize];
            pt.busy_until = d + ser;
            pt.tx_bytes += wire;
            pt.last_pkt = pid;
            pt.last_end = d + ser;
            let prop = pt.prop;
            let more = pt.classes.iter().any(|q| !q.is_empty());
            if more {
                pt.free_pending = true;
            }
            let to_host = kind == PortKind::HostDown;
            let at = if to_host { rx } else { self.port_node[rx as usize] };
            let tag = if cyclic { self.sched.slice_at(d).idx } else { cur.idx };
            let cls = self.port_class[port as usize];
            self.class_tx[cls as usize] += wire;
            // the packet leaves this node's buffer: the link it came in on gets its credit
            // back, and it holds the credit of the link it now takes
            self.return_credit(pid);
            if !self.ports[port as usize].credit.is_empty() {
                let p = &mut self.pool[pid as usize];
                p.cred_port = port;
                p.cred_vc = c as u8;
            }
            let p = &mut self.pool[pid as usize];
            p.tag = tag;
            p.at = at;
            p.rx = if kind == PortKind::Optical { rx } else { NONE };
            p.from = port;
            p.sent_abs = if cyclic && kind == PortKind::Optical { self.sched.slice_at(d).abs as u32 } else { self.reconfigs_applied as u32 };
            p.to_host = to_host;
            p.hops += 1;
            if cls < 3 {
                p.classes |= 1 << cls;
            }
            let epoch = p.epoch;
            self.packet_hops += 1;
            self.push(d + ser + prop, Ev::Arrive(pid, epoch));
            if more {
                self.push(d + ser, Ev::PortFree(port));
            }
            return;
        }
    }

    /// Give the credit a packet holds back to its upstream port (after the propagation).
    fn return_credit(&mut self, pid: u32) {
        let p = &mut self.pool[pid as usize];
        if p.cred_port == NONE {
            return;
        }
        let (up, vc, wire) = (p.cred_port, p.cred_vc, p.wire);
        p.cred_port = NONE;
        let pt = &mut self.ports[up as usize];
        let t = self.now + pt.prop;
        pt.cred_ret.push_back((t, vc, wire));
        if pt.blocked_since != Ps::MAX && pt.cred_wake == Ps::MAX {
            pt.cred_wake = t;
            self.push(t, Ev::Credit(up));
        }
    }

    /// A port waiting for credit wakes when a return reaches it.
    fn on_credit(&mut self, port: u32) {
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        pt.cred_wake = Ps::MAX;
        if !pt.free_pending && pt.busy_until <= now && pt.bytes > 0 {
            self.start_tx(port);
        }
    }

    /// A credit port with packets queued cannot send: remember since when, and make sure
    /// the watchdog will look.
    fn block(&mut self, port: u32) {
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        if pt.cred_wake == Ps::MAX {
            if let Some(&(t, _, _)) = pt.cred_ret.front() {
                pt.cred_wake = t;
                self.push(t, Ev::Credit(port));
            }
        }
        let pt = &mut self.ports[port as usize];
        if pt.blocked_since == Ps::MAX {
            pt.blocked_since = now;
            if !self.blocked_listed[port as usize] {
                self.blocked_listed[port as usize] = true;
                self.blocked.push(port);
            }
        }
        if self.watchdog_at == Ps::MAX {
            self.watchdog_at = now + self.tparams.deadlock_timeout_ps;
            let t = self.watchdog_at;
            self.push(t, Ev::Watchdog);
        }
    }

    /// Look for a cycle of ports each waiting for credit that only packets queued at the
    /// next port of the cycle can give back: a deadlock, after which nothing moves.
    fn on_watchdog(&mut self) {
        self.watchdog_at = Ps::MAX;
        let now = self.now;
        let timeout = self.tparams.deadlock_timeout_ps;
        // the ports still waiting, in port order
        let (ports, listed) = (&self.ports, &mut self.blocked_listed);
        self.blocked.retain(|&p| {
            let waiting = ports[p as usize].blocked_since != Ps::MAX;
            listed[p as usize] = waiting;
            waiting
        });
        self.blocked.sort_unstable();
        let stuck: Vec<u32> = self.blocked.iter().copied()
            .filter(|&p| self.ports[p as usize].blocked_since.saturating_add(timeout) <= now).collect();
        let stuck_set: std::collections::BTreeSet<u32> = stuck.iter().copied().collect();
        // edges: port P waits for credit held by packets queued at ports R of P's next node
        let mut edges: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &p in &stuck {
            let pt = &self.ports[p as usize];
            let rx = if pt.kind == PortKind::Optical { self.sched.peer(p, 0) } else { pt.peer };
            if rx == NONE || pt.kind == PortKind::HostDown {
                continue;
            }
            let node = self.port_node[rx as usize] as usize;
            for r in self.port_offset[node]..self.port_offset[node + 1] {
                if !stuck_set.contains(&r) {
                    continue;
                }
                let holds = self.ports[r as usize].classes.iter().flatten().any(|&q| self.pool[q as usize].cred_port == p);
                if holds {
                    edges.entry(p).or_default().push(r);
                }
            }
        }
        // depth-first search for a cycle, in port order
        let mut state: BTreeMap<u32, u8> = BTreeMap::new();
        let mut found = None;
        for &start in &stuck {
            if found.is_some() || state.contains_key(&start) {
                continue;
            }
            let mut stack: Vec<(u32, usize)> = vec![(start, 0)];
            let mut path: Vec<u32> = vec![start];
            state.insert(start, 1);
            while let Some(&mut (u, ref mut i)) = stack.last_mut() {
                let next = edges.get(&u).and_then(|v| v.get(*i)).copied();
                *i += 1;
                match next {
                    Some(w) => match state.get(&w) {
                        Some(1) => {
                            let at = path.iter().position(|&x| x == w).expect("on the path");
                            found = Some(path[at..].to_vec());
                            break;
                        }
                        Some(_) => {}
                        None => {
                            state.insert(w, 1);
                            stack.push((w, 0));
                            path.push(w);
                        }
                    },
                    None => {
                        state.insert(u, 2);
                        stack.pop();
                        path.pop();
                    }
                }
            }
        }
        if found.is_some() {
            self.deadlock = found;
            return;
        }
        // Look again when the next blocked port has waited the timeout, and at least every
        // timeout while ports stay stuck without a cycle (a long congestion, not a deadlock:
        // checking it again at every picosecond would stall the run); never sooner than half
        // the timeout, so that ports crossing one by one are checked in batches (a deadlock
        // is reported at most 1.5 timeouts after its last port blocked).
        if !self.blocked.is_empty() {
            let next_cross = self.blocked.iter().map(|&p| self.ports[p as usize].blocked_since.saturating_add(timeout))
                .filter(|&t| t > now).min().unwrap_or(Ps::MAX);
            self.watchdog_at = next_cross.min(now + timeout).max(now + (timeout / 2).max(1));
            let t = self.watchdog_at;
            self.push(t, Ev::Watchdog);
        }
    }

    /// May the packet at the head of served optical `port` (cyclic schedule) start at `d`
    /// for `ser`? Only if its circuit is up and stays up (same peer) until its last bit,
    /// and — for a packet on an expander source route — still leads where that route
    /// expects. Otherwise an expander-routed packet is re-routed here over the current
    /// slice's path (never sent into a circuit that is going or gone), and any other packet
    /// waits for the port's next up period.
    fn gate(&mut self, port: u32, pid: u32, d: Ps, ser: Ps) -> Gate {
        let p = self.pool[pid as usize];
        if p.kind == K_BULK {
            // RotorLB: across only if the circuit leads to the committed rack until the
            // last bit; otherwise back to the holder host
            let want = self.bulk_meta[pid as usize].want_tor;
            if let Some((q, until)) = self.sched.circuit_at(port, d) {
                if d + ser <= until && self.port_node[q as usize] == want {
                    return Gate::Send(q);
                }
            }
            self.drop_pkt(pid, DROP_RETURNED);
            return Gate::Moved;
        }
        let expander = matches!(self.router, Router::Expander(_));
        let want = if expander && p.route != NONE { self.sched.peer(port, p.route) } else { NONE };
        if let Some((q, until)) = self.sched.circuit_at(port, d) {
            if d + ser <= until && (want == NONE || q == want) {
                return Gate::Send(q);
            }
        }
        if expander {
            self.reroutes += 1;
            let node = self.port_node[port as usize];
            let cur = self.route_slice(self.now);
            let pk = &mut self.pool[pid as usize];
            pk.route = NONE;
            pk.tag = cur;
            match self.route(node, pid) {
                Some(a) if a.port != port => {
                    self.served_enqueue(a.port, pid);
                    Gate::Moved
                }
                Some(_) => match self.sched.circuit_at(port, d) {
                    Some((q, until)) if d + ser <= until && q == self.sched.peer(port, cur) => Gate::Send(q),
                    _ => {
                        // cannot happen with consistent slice paths; never send into a down circuit
                        self.drop_pkt(pid, DROP_NO_CIRCUIT);
                        Gate::Moved
                    }
                },
                None => {
                    self.drop_pkt(pid, DROP_NO_ROUTE);
                    Gate::Moved
                }
            }
        } else {
            // the first up period from `d` long enough for the whole packet
            let n = self.sched.slices() as u64;
            let from = self.sched.slice_at(d).abs;
            for k in 0..=2 * n {
                let s = self.sched.slice(from + k);
                let t0 = d.max(s.start + self.sched.guard_of(port, s.idx));
                if t0 >= s.end {
                    continue;
                }
                if let Some((_, until)) = self.sched.circuit_at(port, t0) {
                    if t0 + ser <= until {
                        return Gate::Wait(t0);
                    }
                }
            }
            self.drop_pkt(pid, DROP_OVERSIZE);
            Gate::Moved
        }
    }

    // ---------------------------------------------------------------- RotorLB

    fn rlb_uplinks(&self) -> u32 {
        self.rlb.as_ref().map_or(0, |r| r.config().uplinks)
    }

    /// Build RotorLB for the bulk flows: hosts below nodes, the same number of hosts and
    /// of optical ports (rotors) at every node, a cyclic schedule of equal slices. Its
    /// hold is how long a new matching stays usable less one hop (propagation and a full
    /// packet): `U·D − r − δ`, Opera's `(U − 1)·D + ε`.
    fn setup_rotorlb(&mut self, spec: &SimSpec) -> Result<(), SpecError> {
        let field = "transport";
        let nodes = spec.nodes;
        if !spec.hosts_mode || spec.slice_ps.is_empty() {
            return Err(SpecError::new(field, "rotorlb", "needs hosts below nodes and a cyclic optical schedule"));
        }
        let d = spec.slice_ps[0];
        if spec.slice_ps.iter().any(|&x| x != d) {
            return Err(SpecError::new(field, "rotorlb", "needs slices of equal duration"));
        }
        let hpr = spec.ep_node.len() as u32 / nodes;
        if hpr == 0 || spec.ep_node.iter().enumerate().any(|(h, &n)| n != h as u32 / hpr) {
            return Err(SpecError::new(field, "rotorlb", "needs the same number of hosts below every node, numbered node by node"));
        }
        let mut ports = Vec::new();
        let mut u = None;
        for n in 0..nodes as usize {
            let own: Vec<u32> = (spec.port_offset[n]..spec.port_offset[n + 1]).filter(|&g| self.optical[g as usize]).collect();
            if *u.get_or_insert(own.len()) != own.len() || own.len() < 2 {
                return Err(SpecError::new(field, "rotorlb", "needs the same number (>= 2) of optical ports (rotors) at every node"));
            }
            ports.extend(own);
        }
        let u = u.unwrap_or(0) as u32;
        let rate = self.ports[ports[0] as usize].rate;
        let full = self.mtu as u64 + self.header as u64;
        let ser = rate.tx(full);
        let delta = self.ports[ports[0] as usize].prop + ser;
        let up = (u as u64 * d).saturating_sub(spec.guardband_ps);
        if up <= delta {
            return Err(SpecError::new(field, "rotorlb", "a matching is not held long enough for one hop"));
        }
        let hold = up - delta;
        let max = (hold as u128 * rate.bps as u128) / (8 * crate::units::PS_PER_S as u128 * full as u128 * u as u128);
        let cfg = RotorLbConfig { tors: nodes, uplinks: u, hosts_per_tor: hpr, mss: self.mtu, hold_ps: hold,
                                  max_pkts: (max.min(u32::MAX as u128) as u32).max(1), pace_ps: u as u64 * ser };
        self.rlb = Some(RotorLb::new(cfg));
        self.rlb_ports = ports;
        Ok(())
    }

    /// Schedule the next offer/accept step: when the next slice's new circuits are up.
    fn schedule_rlb(&mut self) {
        if self.rlb_event {
            return;
        }
        self.rlb_event = true;
        let cur = self.slice_now();
        let t = self.sched.slice(cur.abs + 1).start + self.sched.guardband();
        self.push(t, Ev::Rlb);
    }

    /// Offer/accept for every rotor whose circuits changed at the start of this slice.
    fn on_rlb(&mut self) {
        self.rlb_event = false;
        let idx = self.slice_now().idx;
        let u = self.rlb_uplinks();
        let n = self.rlb_ports.len() as u32 / u;
        for k in 0..u {
            if !(0..n).any(|t| self.sched.guard_of(self.rlb_ports[(t * u + k) as usize], idx) > 0) {
                continue;
            }
            let (ports, sched, port_node) = (&self.rlb_ports, &self.sched, &self.port_node);
            let peer = |t: u32| {
                let q = sched.peer(ports[(t * u + k) as usize], idx);
                (q != NONE && port_node[q as usize] != t).then(|| port_node[q as usize])
            };
            let hosts = self.rlb.as_mut().expect("scheduled by RotorLB").on_slice(self.now, k, peer);
            for h in hosts {
                self.kick(h);
            }
        }
        if self.rlb.as_mut().expect("scheduled by RotorLB").end_slice() {
            self.schedule_rlb();
        }
    }

    /// Put a committed bulk packet on host `e`'s link toward its rack's rotor uplink.
    fn inject_bulk(&mut self, e: u32, b: BulkPkt) {
        let pid = self.new_packet(e, b.flow, b.label, K_BULK, b.payload, 0);
        if self.bulk_meta.len() <= pid as usize {
            self.bulk_meta.resize(pid as usize + 1, b);
        }
        self.bulk_meta[pid as usize] = b;
        let p = &mut self.pool[pid as usize];
        p.dst_node = b.want_tor;
        p.hops = b.relayed as u16;
        self.ledger.send(false, false);
        if self.admit(e, pid).is_err() {
            // the uplink has no room: the packet stays with its holder
            self.drop_pkt(pid, DROP_RETURNED);
        }
    }

    /// A bulk packet reached host `label`: delivered there, or held for its final host.
    fn bulk_arrive(&mut self, pid: u32) {
        let meta = self.bulk_meta[pid as usize];
        let h = self.pool_x[pid as usize].dst_ep;
        let (arr, step) = self.rlb.as_mut().expect("bulk packets come from RotorLB").on_arrive(h, &meta);
        match arr {
            Arrival::Delivered { flow, .. } => {
                self.latency.add(self.now - self.pool_x[pid as usize].ts);
                self.count_delivery(pid);
                let fl = self.flows[flow as usize];
                if fl.delivered == fl.size {
                    self.flow_finished(flow);
                }
            }
            Arrival::Relayed => {
                let hops = self.pool[pid as usize].hops;
                let fl = &mut self.flows[meta.flow as usize];
                fl.max_hops = fl.max_hops.max(hops);
                self.ledger.deliver(0, 0);
            }
        }
        self.release(pid);
        if step {
            self.schedule_rlb();
        }
    }

    /// Expander routing: the slice whose paths a packet first routed at `t` follows. During
    /// the guardband at the start of slice j the circuits being set up are not up yet, so
    /// the paths are those of slice j − 1 (which avoid exactly those circuits).
    #[inline]
    fn route_slice(&self, t: Ps) -> u32 {
        let gb = self.sched.guardband();
        // before the first guardband ends, the previous slice is the last of the cycle
        let t = if t >= gb { t - gb } else { t + self.sched.cycle() - gb };
        self.sched.slice_at(t).idx
    }

    fn on_port_free(&mut self, port: u32) {
        self.ports[port as usize].free_pending = false;
        self.start_tx(port);
    }

    // ---------------------------------------------------------------- transports

    /// A packet of a transport flow reached its endpoint.
    fn transport_arrive(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        let px = self.pool_x[pid as usize];
        let f = p.flow;
        let fl = self.flows[f as usize];
        let now = self.now;
        if p.kind == K_DATA {
            // at the receiver
            let Some(conn) = self.conns.get_mut(fl.conn as usize).and_then(|c| c.as_mut()) else {
                // the sender has finished: a late copy
                if p.trimmed {
                    self.ledger.trimmed_end();
                } else {
                    self.ledger.deliver(0, px.payload as u64);
                }
                self.release(pid);
                return;
            };
            if p.trimmed {
                if let Conn::Ndp(_, r) = conn {
                    r.on_header(px.seq);
                }
                self.ledger.trimmed_end();
                self.release(pid);
                self.reply(f, K_NACK, px.seq, false, 0);
                self.request_pull(f);
                return;
            }
            let expected = match conn {
                Conn::Tcp(_, r) => r.received().cum,
                Conn::Ndp(_, r) => r.received().cum,
            };
            let (new, ack) = match conn {
                Conn::Tcp(_, r) => {
                    let (a, new) = r.on_data(px.seq, p.ce, px.ts);
                    (new, (a.cum, a.ece, a.ts_echo))
                }
                Conn::Ndp(_, r) => (r.on_data(px.seq), (px.seq, false, px.ts)),
            };
            let complete = match conn {
                Conn::Tcp(_, r) => r.complete(),
                Conn::Ndp(_, r) => r.complete(),
            };
            let d = px.seq as i64 - expected as i64;
            self.reorder[match d {
                i64::MIN..=-1 => 0,
                0 => 1,
                1..=10 => 2,
                11..=100 => 3,
                101..=1000 => 4,
                _ => 5,
            }] += 1;
            self.latency.add(now - px.ts);
            if new {
                self.count_delivery(pid);
                if complete {
                    self.flow_finished(f);
                }
            } else {
                self.ledger.deliver(0, px.payload as u64);
            }
            self.release(pid);
            self.reply(f, K_ACK, ack.0, ack.1, ack.2);
            if fl.tp == TransportKind::Ndp && !complete {
                self.request_pull(f);
            }
            return;
        }
        // control at the sender (a NACK that is a trimmed header came back: a bounce)
        if p.trimmed {
            self.ledger.trimmed_end();
        } else {
            self.ledger.deliver(0, 0);
        }
        self.release(pid);
        let Some(conn) = self.conns.get_mut(fl.conn as usize).and_then(|c| c.as_mut()) else { return };
        match conn {
            Conn::Tcp(s, _) => {
                if p.kind == K_ACK {
                    s.on_ack(now, TcpAck { cum: px.seq, ece: p.ce, ts_echo: px.ts });
                }
            }
            Conn::Ndp(s, _) => match p.kind {
                K_ACK => s.on_ack(now, px.seq),
                K_NACK if p.trimmed => s.on_bounce(now, px.seq),
                K_NACK => s.on_nack(now, px.seq),
                K_PULL => s.on_pull(now, px.seq),
                _ => {}
            },
        }
        self.after_sender_event(f);
    }

    /// Payload of a data packet delivered for the first time (ledger, flow, metrics).
    fn count_delivery(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        let px = self.pool_x[pid as usize];
        let fl = &mut self.flows[p.flow as usize];
        fl.delivered += px.payload as u64;
        fl.max_hops = fl.max_hops.max(p.hops);
        self.delivered += px.payload as u64;
        self.ledger.deliver(px.payload as u64, 0);
        let h = (p.hops as usize).min(self.delivered_by_hops.len() - 1);
        self.delivered_by_hops[h] += px.payload as u64;
        self.pkts_by_hops[(p.kind == K_BULK) as usize][h] += 1;
        self.delivered_by_class[p.classes as usize & 7] += px.payload as u64;
        self.delivered_by_hops_class[h][p.classes as usize & 7] += px.payload as u64;
    }

    /// The receiver of flow `f` sends a control packet back to its sender.
    fn reply(&mut self, f: u32, kind: u8, seq: u32, ce: bool, ts: Ps) {
        let fl = self.flows[f as usize];
        let c = self.new_packet(fl.dst, f, fl.src, kind, 0, seq);
        self.pool[c as usize].ce = ce;
        self.pool_x[c as usize].ts = ts;
        self.ledger.send(false, true);
        self.eps[fl.dst as usize].ctrl.push_back(c);
        self.kick(fl.dst);
    }

    /// NDP: the receiver of flow `f` owes its sender one pull, released by its pacer (one
    /// per receiving endpoint, or one per flow with `ndp_pacer_per_flow`), which lets one
    /// pull go per full-packet time at the receiver's link rate × `ndp_pull_rate`.
    fn request_pull(&mut self, f: u32) {
        let e = self.flows[f as usize].dst;
        let key = if self.tparams.ndp_pacer_per_flow { f } else { e };
        let full = self.eps[e as usize].rate.tx(self.mtu as u64 + self.header as u64);
        let interval = ((full as f64 / self.tparams.ndp_pull_rate).round() as Ps).max(1);
        if self.pacers.len() <= key as usize {
            self.pacers.resize_with(key as usize + 1, || None);
            self.pacer_at.resize(key as usize + 1, Ps::MAX);
        }
        self.pacers[key as usize].get_or_insert_with(|| PullPacer::new(interval)).request(f);
        self.schedule_pacer(key);
    }

    fn schedule_pacer(&mut self, key: u32) {
        let now = self.now;
        let Some(t) = self.pacers[key as usize].as_ref().and_then(|p| p.next_time()) else { return };
        let t = t.max(now);
        let at = &mut self.pacer_at[key as usize];
        if *at == Ps::MAX || t < *at {
            *at = t;
            self.push(t, Ev::Pacer(key));
        }
    }

    fn on_pacer(&mut self, key: u32) {
        let now = self.now;
        if self.pacer_at[key as usize] != now {
            return; // superseded
        }
        self.pacer_at[key as usize] = Ps::MAX;
        let pick = self.pacers[key as usize].as_mut().and_then(|p| p.poll(now));
        if let Some(f) = pick {
            let conn = self.flows[f as usize].conn;
            if let Some(Some(Conn::Ndp(_, r))) = self.conns.get_mut(conn as usize) {
                if !r.complete() {
                    let n = r.next_pull();
                    self.reply(f, K_PULL, n, false, 0);
                }
            }
        }
        self.schedule_pacer(key);
    }

    /// Keep one timer event for flow `f` no later than its transport's deadline.
    fn sync_timer(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        let Some(d) = self.conns.get(fl.conn as usize).and_then(|c| c.as_ref()).and_then(|c| c.timer()) else { return };
        if fl.timer_at == Ps::MAX || d < fl.timer_at {
            let t = d.max(self.now);
            self.flows[f as usize].timer_at = t;
            self.push(t, Ev::Timer(f));
        }
    }

    fn on_timer(&mut self, f: u32) {
        let now = self.now;
        if self.flows[f as usize].timer_at != now {
            return; // superseded
        }
        self.flows[f as usize].timer_at = Ps::MAX;
        let conn = self.flows[f as usize].conn;
        if let Some(Some(c)) = self.conns.get_mut(conn as usize) {
            c.on_timer(now);
            self.after_sender_event(f);
        }
    }

    /// After the sender of flow `f` reacted to something: free it when done, else keep
    /// its timer and let it send if its window opened.
    fn after_sender_event(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        let Some(c) = self.conns.get(fl.conn as usize).and_then(|c| c.as_ref()) else { return };
        if c.sender_done() {
            let st = c.stats();
            let fm = &mut self.flows[f as usize];
            fm.retx = st.retransmits;
            fm.timeouts = st.timeouts;
            fm.acked_at = self.now;
            fm.conn = NONE;
            fm.timer_at = Ps::MAX;
            self.conns[fl.conn as usize] = None;
            self.conn_free.push(fl.conn);
            if fl.tp == TransportKind::Ndp {
                let key = if self.tparams.ndp_pacer_per_flow { f } else { fl.dst };
                if let Some(Some(p)) = self.pacers.get_mut(key as usize) {
                    p.forget(f);
                }
            }
            return;
        }
        let can = c.can_send();
        self.sync_timer(f);
        if can && !fl.inq {
            self.flows[f as usize].inq = true;
            self.eps[fl.src as usize].tready.push_back(f);
            self.kick(fl.src);
        }
    }

    // ---------------------------------------------------------------- monitoring, control

    fn on_sample(&mut self) {
        self.sample_ports();
        if self.net_series {
            self.net_sample();
        }
        let t = self.now + self.sample_interval;
        self.push(t, Ev::Sample);
    }

    /// One row per watched port: bytes queued now, bytes sent since the last sample.
    fn sample_ports(&mut self) {
        for i in 0..self.watch.len() {
            let w = self.watch[i];
            self.release_departed(w);
            let pt = &mut self.ports[w as usize];
            self.out_ts.0.push(self.now);
            self.out_ts.1.push(w);
            self.out_ts.2.push(pt.bytes);
            self.out_ts.3.push(pt.tx_bytes - pt.tx_bytes_sampled);
            pt.tx_bytes_sampled = pt.tx_bytes;
        }
    }

    /// One network-wide sample: levels now, counters over the interval ending now.
    fn net_sample(&mut self) {
        let mut queued = 0;
        let mut tx = 0;
        for gp in 0..self.ports.len() as u32 {
            self.release_departed(gp);
            let pt = &self.ports[gp as usize];
            queued += pt.bytes;
            tx += pt.tx_bytes;
        }
        let bulk = self.rlb.as_ref().map_or(0, |r| { let (a, b, c) = r.held_bytes(); a + b + c });
        let s = NetSample {
            time_ps: self.now, queued_bytes: queued, tx_bytes: tx, trims: self.ledger.trims, bounces: self.ledger.bounces,
            delivered_bytes: self.delivered, bulk_host_bytes: bulk, congestion_events: self.congestion_events,
            pushback_msgs: self.pushback_msgs,
        };
        let p = self.net_last;
        self.out_net.push(NetSample {
            tx_bytes: s.tx_bytes - p.tx_bytes, trims: s.trims - p.trims, bounces: s.bounces - p.bounces,
            delivered_bytes: s.delivered_bytes - p.delivered_bytes, congestion_events: s.congestion_events - p.congestion_events,
            pushback_msgs: s.pushback_msgs - p.pushback_msgs, ..s
        });
        self.net_last = s;
    }

    /// Close the time series at the end of a run: one last (partial-interval) sample at
    /// `now` unless one was taken there (nothing when sampling is off).
    pub fn final_sample(&mut self) {
        if self.sample_interval == 0 || (self.watch.is_empty() && !self.net_series) {
            return;
        }
        let last = self.out_ts.0.last().copied().or(self.out_net.last().map(|x| x.time_ps)).unwrap_or(0);
        if self.now > last {
            self.sample_ports();
            if self.net_series {
                self.net_sample();
            }
        }
    }

    /// Start (or stop) counting injected bytes per (src node, dst node).
    pub fn set_collect_tm(&mut self, on: bool) {
        self.collect_tm = on;
    }

    /// Take the traffic matrix collected since the last call: (src node, dst node, bytes).
    pub fn take_tm(&mut self) -> Vec<(u32, u32, u64)> {
        std::mem::take(&mut self.tm).into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// Reconfigure a static schedule at time `at` (≥ now): the new peer table, with the
    /// changed circuits down for `delay` ps.
    ///
    /// Packets queued (not yet on the wire) on a changed port are routed again at their
    /// node (`drop_queued` false: routes are installed before circuits change), or dropped
    /// with reason `reconfiguration` (`drop_queued` true, as Duo's fabric does; transports
    /// recover them).
    ///
    /// `drain` (static schedules only): drain → switch → undrain. From `at` no packet
    /// enters the network (sources wait); packets already in it finish their trip under
    /// the old tables and circuits (with `drop_queued`, those queued on a changed port at
    /// `at` are dropped instead). Once none is left (packets held without a route
    /// excepted), the circuits change and the tables given by `set_tables` since the
    /// request take effect at the same instant; the changed circuits are down for `delay`,
    /// then the sources resume. Every packet is routed by one configuration's tables, and
    /// no packet is on a changed circuit when it switches.
    pub fn reconfigure(&mut self, at: Ps, peer: Vec<u32>, delay: Ps, drop_queued: bool) -> Result<(), SpecError> {
        self.reconfigure_with(at, peer, delay, drop_queued, false)
    }

    /// [`Sim::reconfigure`] with the choice of a drained reconfiguration.
    pub fn reconfigure_with(&mut self, at: Ps, peer: Vec<u32>, delay: Ps, drop_queued: bool, drain: bool) -> Result<(), SpecError> {
        if drain && !self.sched.is_static() {
            return Err(SpecError::new("reconfigure.drain", drain, "a drained reconfiguration needs a static schedule"));
        }
        let rows = self.sched.slices() as usize;
        if peer.len() != self.ports.len() * rows {
            return Err(SpecError::new("reconfigure.peer", peer.len(),
                format!("expected {rows} slices x {} ports entries (the cycle keeps its slices)", self.ports.len())));
        }
        let mut peer = peer;
        for (i, q) in peer.iter_mut().enumerate() {
            let gp = i % self.ports.len();
            if !self.optical[gp] {
                // as at construction: only optical ports take their peer from the schedule
                // (electrical links are static; the caller keeps them as they are)
                *q = NONE;
            } else if *q != NONE && !self.optical.get(*q as usize).copied().unwrap_or(false) {
                return Err(SpecError::new(format!("reconfigure.peer[{}][{gp}]", i / self.ports.len()), *q,
                    "circuits must join two optical ports"));
            }
        }
        // check the pairing now so a bad table fails at the call, not mid-run
        let mut probe = self.sched.clone();
        probe.reconnect(peer.clone())?;
        if let Router::Expander(sp) = &self.router {
            crate::expander::SlicePaths::with_paths(&probe, &self.port_node, &self.port_offset, &self.optical, sp.k())?;
        }
        let mut at = at.max(self.now);
        if !self.sched.is_static() {
            // a cyclic schedule changes at a slice boundary
            let s = self.sched.slice_at(at);
            if at > s.start {
                at = s.end;
            }
        }
        self.reconfigs.push((peer, delay, drop_queued, at));
        self.reconfig_drain.push(drain);
        self.reconfig_tables.push(None);
        self.reconfig_state.push(0);
        let i = (self.reconfigs.len() - 1) as u32;
        self.push(at, Ev::Reconfig(i));
        Ok(())
    }

    fn on_reconfig(&mut self, i: u32) {
        if i & SWITCH != 0 {
            self.switch(i & !SWITCH);
            return;
        }
        if i & FAIL != 0 {
            self.on_failure(i & !FAIL);
            return;
        }
        if self.reconfig_drain[i as usize] {
            if self.draining != NONE {
                self.drain_queue.push_back(i);
            } else {
                self.start_drain(i);
            }
            return;
        }
        self.reconfig_state[i as usize] = 2;
        let (peer, delay, drop_queued, _) = std::mem::take(&mut self.reconfigs[i as usize]);
        let changed = self.sched.reconnect(peer).expect("validated in reconfigure()");
        self.reconfigs_applied += 1;
        self.rebuild_router();
        let now = self.now;
        for gp in changed {
            self.port_gen[gp as usize] = self.port_gen[gp as usize].wrapping_add(1);
            self.release_departed(gp);
            let pt = &mut self.ports[gp as usize];
            pt.down_until = now + delay;
            if pt.last_end > now && pt.last_pkt != NONE {
                // being serialized while its circuit goes away
                self.pool[pt.last_pkt as usize].doomed = true;
            }
            // planned but not started: cancel and plan again on the new circuit
            let mut again: Vec<Planned> = Vec::new();
            if pt.cal != NONE {
                let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
                for cq in &mut self.cal[pt.cal as usize..(pt.cal + n) as usize] {
                    cq.tail = (0, 0);
                    cq.bytes = 0;
                    again.extend(cq.planned.drain(..));
                }
                again.extend(pt.departs.take_all());
            }
            pt.heads.clear();
            pt.next_dep = Ps::MAX;
            self.eqo.reset_port(gp);
            again.sort_unstable();
            pt.busy_until = 0;
            for &(_, _, pid) in &again {
                let p = &mut self.pool[pid as usize];
                p.epoch = p.epoch.wrapping_add(1);
                p.hops -= 1;
                self.packet_hops -= 1;
            }
            // a served port's queued packets join them, in class order
            let pt = &mut self.ports[gp as usize];
            for c in 0..pt.classes.len() {
                for pid in std::mem::take(&mut pt.classes[c]) {
                    again.push((0, self.pool[pid as usize].wire, pid));
                }
                pt.class_bytes[c] = 0;
            }
            // routes are installed before circuits change (OpenOptics' TA workflow): the
            // packets that had not left are routed again at their node, or dropped
            let node = self.port_node[gp as usize];
            for (_, wire, pid) in again {
                self.ports[gp as usize].bytes -= wire as u64;
                if drop_queued {
                    self.drop_pkt(pid, DROP_RECONF);
                    continue;
                }
                if matches!(self.router, Router::Source(_)) || self.msg_on_path(pid) {
                    // a source route is fixed at the source: the packet still leaves through
                    // the port its route names (queued as any packet arriving there); a node
                    // it then reaches off its route gives it a new route from there
                    self.enqueue(gp, pid, WILD);
                    continue;
                }
                self.pool[pid as usize].tag = self.slice_now().idx;
                match self.route(node, pid) {
                    Some(a) => self.enqueue(a.port, pid, a.dep),
                    None => self.no_route(node, pid),
                }
            }
        }
        // held packets may have a route now (after those re-queued from changed ports)
        self.release_held();
    }

    /// A drained reconfiguration starts: sources stop, the network empties.
    fn start_drain(&mut self, i: u32) {
        self.draining = i;
        self.reconfig_state[i as usize] = 1;
        if self.reconfigs[i as usize].2 {
            // queued = drop: what waits on a changed port is dropped now
            let new = &self.reconfigs[i as usize].0;
            let changed: Vec<u32> = (0..self.ports.len() as u32)
                .filter(|&gp| self.optical[gp as usize] && self.sched.peer(gp, 0) != new[gp as usize]).collect();
            for gp in changed {
                self.drop_queued_on(gp);
            }
        }
        self.check_drain();
    }

    /// Drop the packets queued (planned, not started) on `gp` (reason `reconfiguration`).
    fn drop_queued_on(&mut self, gp: u32) {
        self.drop_queued_as(gp, DROP_RECONF);
    }

    /// Drop the packets queued (planned, not started) on `gp`, for `reason`.
    fn drop_queued_as(&mut self, gp: u32, reason: usize) {
        self.release_departed(gp);
        let now = self.now;
        let pt = &mut self.ports[gp as usize];
        let mut gone: Vec<(u32, u32)> = Vec::new();
        if pt.cal != NONE {
            // every calendar queue of the port (one per slice of a cyclic schedule)
            let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
            let mut planned: Vec<Planned> = Vec::new();
            for cq in &mut self.cal[pt.cal as usize..(pt.cal + n) as usize] {
                cq.tail = (0, 0);
                cq.bytes = 0;
                planned.extend(cq.planned.drain(..));
            }
            planned.extend(pt.departs.take_all());
            // in the order they were to depart (the order of their drop records)
            planned.sort_unstable();
            gone.extend(planned.into_iter().map(|(_, w, pid)| (w, pid)));
            pt.heads.clear();
            pt.next_dep = Ps::MAX;
            pt.busy_until = pt.last_end.max(now);
            for &(_, pid) in &gone {
                let p = &mut self.pool[pid as usize];
                p.epoch = p.epoch.wrapping_add(1);
                p.hops -= 1;
                self.packet_hops -= 1;
            }
        }
        for c in 0..pt.classes.len() {
            for pid in std::mem::take(&mut pt.classes[c]) {
                gone.push((self.pool[pid as usize].wire, pid));
            }
            pt.class_bytes[c] = 0;
        }
        for (wire, pid) in gone {
            self.ports[gp as usize].bytes -= wire as u64;
            self.drop_pkt(pid, reason);
        }
    }

    /// Schedule a failure (`down`) or recovery of the fabric ports `ports` at `at` (a
    /// failed link is both its ends). From a failure on, nothing is sent into a down
    /// port: the packets queued on it are dropped (`failed_link`), routers that offer
    /// several ports choose among the others, and a packet whose only way on is a down
    /// port is dropped (`failed_link`); packets already on the wire arrive. Transports
    /// recover what they can. Recovery makes the ports usable again.
    pub fn fail_ports(&mut self, at: Ps, ports: Vec<u32>, down: bool) -> Result<(), SpecError> {
        if at < self.now {
            return Err(SpecError::new("fail_at", at, "is in the past of the running simulation"));
        }
        if self.credit_net {
            return Err(SpecError::new("failures", ports.len(), "a lossless (credit) network cannot lose a link's packets"));
        }
        for &p in &ports {
            if p as usize >= self.ports.len() || self.port_node[p as usize] as usize >= self.port_offset.len() - 1 {
                return Err(SpecError::new("failed port", p, "is not a port of a fabric node"));
            }
        }
        if self.down.is_empty() {
            self.down = vec![false; self.ports.len()];
        }
        let i = self.failures.len() as u32;
        self.failures.push((ports, down));
        self.push(at, Ev::Reconfig(i | FAIL));
        Ok(())
    }

    /// Whether the output lists drop reason `i`: `failed_link` only in runs with failures,
    /// `adm_fail` only in runs with admission control.
    fn reason_listed(&self, i: usize) -> bool {
        match i {
            DROP_FAILED => !self.down.is_empty(),
            DROP_ADM => self.adm_listed,
            _ => true,
        }
    }

    /// Port-down intervals so far: (port, from, until; `Ps::MAX` = still down).
    pub fn fail_log(&self) -> &[(u32, Ps, Ps)] {
        &self.fail_log
    }

    fn on_failure(&mut self, i: u32) {
        let (ports, down) = std::mem::take(&mut self.failures[i as usize]);
        for gp in ports {
            if self.down[gp as usize] == down {
                continue;
            }
            self.down[gp as usize] = down;
            if down {
                self.n_down += 1;
                self.fail_log.push((gp, self.now, Ps::MAX));
                self.drop_queued_as(gp, DROP_FAILED);
            } else {
                self.n_down -= 1;
                if let Some(e) = self.fail_log.iter_mut().rev().find(|e| e.0 == gp && e.2 == Ps::MAX) {
                    e.2 = self.now;
                }
            }
        }
    }

    /// The switch of the draining reconfiguration is due once the network holds nothing
    /// but packets held without a route.
    #[cold]
    fn check_drain(&mut self) {
        if self.draining != NONE && !self.switch_pending && self.in_net == self.hold.packets {
            self.switch_pending = true;
            let i = self.draining;
            self.push(self.now, Ev::Reconfig(i | SWITCH));
        }
    }

    /// Switch a drained reconfiguration: new circuits and tables at once, the changed
    /// circuits down for the delay, then the sources resume (and held packets are routed
    /// with the new tables, after the delay on a changed port).
    fn switch(&mut self, i: u32) {
        self.switch_pending = false;
        if self.in_net != self.hold.packets {
            // a packet entered meanwhile (cannot happen: sources are stopped); wait again
            self.check_drain();
            return;
        }
        self.draining = NONE;
        self.reconfig_state[i as usize] = 2;
        let (peer, delay, _, at) = std::mem::take(&mut self.reconfigs[i as usize]);
        let changed = self.sched.reconnect(peer).expect("validated in reconfigure()");
        self.reconfigs_applied += 1;
        self.rebuild_router();
        if let Some(t) = self.reconfig_tables[i as usize].take() {
            self.router = Router::Table(t);
        }
        let now = self.now;
        for gp in changed {
            self.port_gen[gp as usize] = self.port_gen[gp as usize].wrapping_add(1);
            self.release_departed(gp);
            let pt = &mut self.ports[gp as usize];
            pt.down_until = now + delay;
            pt.busy_until = pt.busy_until.max(now);
        }
        self.switch_log.push((at, now, now + delay));
        self.release_held();
        for e in std::mem::take(&mut self.drain_waiters) {
            self.wake_endpoint(e);
        }
        if let Some(j) = self.drain_queue.pop_front() {
            self.start_drain(j);
        }
    }

    /// Rebuild a schedule-derived router after the circuits changed.
    fn rebuild_router(&mut self) {
        match &self.router {
            Router::Vlb(_) | Router::Direct(_) => {
                let ci = ConnIndex::new(&self.sched, &self.port_node, &self.port_offset, &self.optical);
                self.router = match self.router { Router::Vlb(_) => Router::Vlb(ci), _ => Router::Direct(ci) };
            }
            Router::Hoho(_) | Router::Ucmp(..) => {
                self.route_gen = self.route_gen.wrapping_add(1);
                let idx = crate::earliest::EarliestIndex::new(&self.sched, &self.port_node, &self.port_offset, &self.optical, self.max_hop);
                self.router = match self.router {
                    Router::Ucmp(_, a, s, r) => Router::Ucmp(idx, a, s, r),
                    _ => Router::Hoho(idx),
                };
            }
            Router::Expander(old) => {
                let k = old.k();
                let sp = crate::expander::SlicePaths::with_paths(&self.sched, &self.port_node, &self.port_offset,
                                                                 &self.optical, k)
                    .expect("checked in reconfigure()");
                if k > 1 {
                    // path codes name paths of the old table: routed again where they are
                    self.route_gen = self.route_gen.wrapping_add(1);
                }
                self.router = Router::Expander(sp);
            }
            _ => {}
        }
    }

    /// (requested, switched, circuits up) of every drained reconfiguration applied so far.
    pub fn switch_log(&self) -> &[(Ps, Ps, Ps)] {
        &self.switch_log
    }

    /// Remaining bytes (not yet delivered) per (source node, destination node) of the flows
    /// that have started and not completed, at the current time: what a demand-aware
    /// controller reads. Sorted by (source, destination).
    pub fn demand(&self) -> Vec<(u32, u32, u64)> {
        let mut m: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for f in self.flows.iter().filter(|f| f.started) {
            if f.finish == Ps::MAX && f.delivered < f.size {
                let k = (self.eps[f.src as usize].node, self.eps[f.dst as usize].node);
                *m.entry(k).or_default() += f.size - f.delivered;
            }
        }
        m.into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// Per flow of the run, in order, at the current time: its finish time (`Ps::MAX`:
    /// not finished), payload bytes its source has sent (first transmissions) and bytes
    /// delivered.
    pub fn flow_progress(&self) -> (Vec<Ps>, Vec<u64>, Vec<u64>) {
        let fin = self.flows.iter().map(|f| f.finish).collect();
        let sent = self.flows.iter().map(|f| if f.started { f.injected } else { 0 }).collect();
        let got = self.flows.iter().map(|f| f.delivered).collect();
        (fin, sent, got)
    }

    /// Replace the table router's entries (a traffic-aware control loop installing routes).
    pub fn set_tables(&mut self, items: &[(u32, Entry)]) -> Result<(), SpecError> {
        let t = build_tables(self.port_offset.len() - 1, &self.port_offset, items)?;
        if let Some(i) = (0..self.reconfig_drain.len()).rev().find(|&i| self.reconfig_drain[i] && self.reconfig_state[i] < 2) {
            // a drained reconfiguration is pending: its tables take effect at its switch
            self.reconfig_tables[i] = Some(t);
            return Ok(());
        }
        self.router = Router::Table(t);
        if self.hold.packets > 0 {
            // held packets are tried with the new tables, after what is due now has run
            // (and after a reconfiguration due now, which tries them itself)
            self.schedule_release(self.now);
        }
        Ok(())
    }

    // ---------------------------------------------------------------- results

    /// Counters, per-flow columns, time series and invariant checks at the current time.
    pub fn output(&self) -> SimOutput {
        // payload in flight, from the engine's state: ideal flows' bytes not yet injected
        // and the payload of their live packets; transport flows' bytes their receivers
        // still miss (from the receivers' bits)
        let mut in_flight: u64 = 0;
        for f in self.flows.iter().filter(|f| f.started) {
            if f.tp == TransportKind::RotorLb {
                continue; // counted by RotorLB below
            }
            if !f.tp.reliable() {
                in_flight += f.size - f.injected;
            } else if let Some(Some(c)) = self.conns.get(f.conn as usize) {
                in_flight += c.missing_bytes(f.size, self.mtu);
            }
        }
        if let Some(r) = &self.rlb {
            // bulk payload held at hosts (unsent, relayed, committed) or in the network,
            // each by RotorLB's own counter
            let (a, b, c) = r.held_bytes();
            in_flight += a + b + c + r.net_bytes();
        }
        let mut live = 0u64;
        let mut msgs_live = 0u64;
        let free: std::collections::BTreeSet<u32> = self.free.iter().copied().collect();
        for (i, p) in self.pool.iter().enumerate() {
            if !free.contains(&(i as u32)) {
                if p.kind == K_DATA && !p.trimmed && !self.flows[p.flow as usize].tp.reliable() {
                    in_flight += self.pool_x[i].payload as u64;
                }
                msgs_live += (p.kind == K_MSG) as u64;
                live += 1;
            }
        }
        let dropped: u64 = self.drops.iter().sum();
        let mut errors = self.ledger.check(in_flight, live);
        if dropped != self.ledger.lost_total() {
            errors.push(format!("lost payload: {} by reason != {} in the ledger", dropped, self.ledger.lost_total()));
        }
        if live != self.live {
            errors.push(format!("packet pool: {} live packets counted, {} tracked", live, self.live));
        }
        errors.extend(self.msg.check(msgs_live));
        let innet = self.pool.iter().enumerate().filter(|(i, p)| p.innet && !free.contains(&(*i as u32))).count() as u64;
        if innet != self.in_net {
            errors.push(format!("packets in the network: {innet} counted, {} tracked", self.in_net));
        }
        // the holds, scanned: every held packet is live, and the counters agree
        let (mut held_pkts, mut held_bytes) = (0u64, 0u64);
        for (n, m) in self.holds.iter().enumerate() {
            let mut at_node = 0u64;
            for q in m.values() {
                for &pid in q {
                    if free.contains(&pid) {
                        errors.push(format!("hold of node {n}: packet {pid} is not live"));
                    }
                    held_pkts += 1;
                    at_node += self.pool[pid as usize].wire as u64;
                }
            }
            held_bytes += at_node;
            if at_node > self.hold_bytes[n] {
                errors.push(format!("hold of node {n}: {at_node} bytes held > {} counted", self.hold_bytes[n]));
            }
        }
        if (held_pkts, held_bytes) != (self.hold.packets, self.hold.bytes) {
            errors.push(format!("holds: {held_pkts} packets / {held_bytes} bytes held, {} / {} counted",
                                self.hold.packets, self.hold.bytes));
        }
        let flow_delivered: u64 = self.flows.iter().map(|f| f.delivered).sum();
        if flow_delivered != self.delivered {
            errors.push(format!("per-flow delivered {} != delivered {}", flow_delivered, self.delivered));
        }
        if self.collisions > 0 {
            errors.push(format!("{} optical collisions", self.collisions));
        }
        if let Some(r) = &self.rlb {
            if let Err(e) = r.check() {
                errors.push(format!("RotorLB: {e}"));
            }
        }
        if self.credit_net && self.ledger.dropped_total() > 0 {
            errors.push(format!("lossless credit network dropped {} packets", self.ledger.dropped_total()));
        }
        if let Some(cycle) = &self.deadlock {
            let names: Vec<String> = cycle.iter().map(|&p| {
                let n = self.port_node[p as usize];
                format!("node {} port {}", n, p - self.port_offset[n as usize])
            }).collect();
            errors.push(format!("deadlock at {} ps: ports waiting for each other's credit in a cycle: {}",
                                self.now, names.join(" -> ")));
        }
        if self.gb_violations > 0 {
            errors.push(format!("{} guardband violations", self.gb_violations));
        }
        if self.offload.window_violations > 0 {
            errors.push(format!("{} departures planned outside the offload window of {} slices",
                                self.offload.window_violations, self.offload.queues));
        }
        SimOutput {
            totals: crate::metrics::RunTotals {
                now_ps: self.now,
                events: self.events,
                packet_hops: self.packet_hops,
                flows_started: self.flows_started,
                flows_completed: self.flows_completed,
                bytes_offered: self.offered,
                bytes_delivered: self.delivered,
                bytes_dropped: dropped,
                bytes_in_flight: in_flight,
                drops: DROP_REASONS.iter().zip(self.drops.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                collisions: self.collisions,
                guardband_violations: self.gb_violations,
                trace_hash: self.trace.value(),
                flow_finish_ps: self.flows.iter().map(|f| f.finish).collect(),
                flow_delivered: self.flows.iter().map(|f| f.delivered).collect(),
                flow_hops: self.flows.iter().map(|f| f.max_hops as u32).collect(),
                invariant_errors: errors,
            },
            peak_packets: self.peak_live,
            event_counts: self.event_counts.to_vec(),
            ts_time_ps: self.out_ts.0.clone(),
            ts_port: self.out_ts.1.clone(),
            ts_queued_bytes: self.out_ts.2.clone(),
            ts_tx_bytes: self.out_ts.3.clone(),
            congestion_events: self.congestion_events,
            pushback_msgs: self.pushback_msgs,
            paused_attempts: self.paused_attempts,
            eqo_samples: self.eqo.samples,
            eqo_mean_abs_error: if self.eqo.samples > 0 { self.eqo.abs_err_sum as f64 / self.eqo.samples as f64 } else { 0.0 },
            eqo_max_abs_error: self.eqo.max_abs_err,
            eqo_mean_error: if self.eqo.samples > 0 { self.eqo.signed_err_sum as f64 / self.eqo.samples as f64 } else { 0.0 },
            offloaded_packets: self.offload.packets,
            offloaded_bytes: self.offload.bytes,
            offload_peak_host_bytes: self.offload.peak_held_bytes,
            offload_refused: self.offload.refused,
            shared_peak_bytes: self.shared.peak_bytes,
            shared_peak_node: self.shared.peak_node,
            drop_log: self.droplog.clone(),
            packets: PacketTotals {
                sent: self.ledger.sent,
                sent_retx: self.ledger.sent_retx,
                sent_ctrl: self.ledger.sent_ctrl,
                delivered: self.ledger.pkts_delivered,
                dropped: DROP_REASONS.iter().zip(self.ledger.pkts_dropped.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                dropped_bytes: DROP_REASONS.iter().zip(self.ledger.dropped_bytes.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                trimmed: self.ledger.pkts_trimmed,
                trims: self.ledger.trims,
                bounces: self.ledger.bounces,
                in_flight: live,
                duplicate_bytes: self.ledger.duplicate_bytes,
            },
            flow_acked_ps: self.flows.iter().map(|f| f.acked_at).collect(),
            flow_transport: self.flows.iter().map(|f| f.tp).collect(),
            flow_start_ps: self.flows.iter().map(|f| if f.started { f.start } else { Ps::MAX }).collect(),
            adm_deferred: self.adm_deferred,
            net_series: self.out_net.clone(),
            flow_retx: self.flows.iter().map(|f| match self.conns.get(f.conn as usize) {
                Some(Some(c)) => c.stats().retransmits,
                _ => f.retx,
            }).collect(),
            flow_timeouts: self.flows.iter().map(|f| match self.conns.get(f.conn as usize) {
                Some(Some(c)) => c.stats().timeouts,
                _ => f.timeouts,
            }).collect(),
            ecn_marks: self.ecn_marks,
            reroutes: self.reroutes,
            rlb_slices: self.rlb.as_ref().map_or(0, |r| r.stats().slices),
            rlb_committed_pkts: self.rlb.as_ref().map_or(0, |r| r.stats().committed_pkts),
            rlb_returns: self.rlb.as_ref().map_or(0, |r| r.stats().returns),
            rlb_relayed_pkts: self.rlb.as_ref().map_or(0, |r| r.stats().relayed_pkts),
            rlb_host_bytes: self.rlb.as_ref().map_or(0, |r| { let (a, b, c) = r.held_bytes(); a + b + c }),
            latency_count: self.latency.n,
            latency_mean_ps: if self.latency.n > 0 { self.latency.sum as f64 / self.latency.n as f64 } else { 0.0 },
            latency_p50_ps: self.latency.quantile(0.5),
            latency_p99_ps: self.latency.quantile(0.99),
            reorder: self.reorder,
            delivered_by_hops: self.delivered_by_hops.clone(),
            delivered_pkts_by_hops: self.pkts_by_hops[0].clone(),
            bulk_pkts_by_hops: self.pkts_by_hops[1].clone(),
            delivered_by_class: self.delivered_by_class,
            delivered_by_hops_class: self.delivered_by_hops_class.clone(),
            messages: self.msg.totals(msgs_live),
            class_tx_bytes: self.class_tx_now(),
            class_capacity_bytes: {
                let mut cap = [0u64; 4];
                for (gp, pt) in self.ports.iter().enumerate() {
                    if pt.kind != PortKind::Unused && (pt.kind != PortKind::Electrical || pt.peer != NONE) {
                        cap[self.port_class[gp] as usize] += (pt.rate.bps as u128 * self.now as u128 / 8_000_000_000_000) as u64;
                    }
                }
                cap
            },
            hold: self.hold,
            hold_peak_bytes_by_node: self.hold_peak_node.clone(),
            switches: self.switch_log.clone(),
            drain_refused: self.drain_refused,
            rerouted_at_tor: self.rerouted_at_tor,
            draining: self.draining != NONE,
        }
    }

    /// Bytes sent per link class up to now: what the releases counted, plus the planned
    /// transmissions that have started and wait for their port's next (lazy) release.
    fn class_tx_now(&self) -> [u64; 4] {
        let mut tx = self.class_tx;
        for (gp, pt) in self.ports.iter().enumerate() {
            if pt.cal == NONE || pt.next_dep > self.now {
                continue;
            }
            let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
            let started: u64 = self.cal[pt.cal as usize..(pt.cal + n) as usize].iter()
                .flat_map(|q| q.planned.iter().take_while(|e| e.0 <= self.now))
                .chain(pt.departs.unreleased().filter(|e| e.0 <= self.now))
                .map(|e| e.1 as u64).sum();
            tx[self.port_class[gp] as usize] += started;
        }
        tx
    }

    /// Bytes currently queued at `port` (global id).
    pub fn port_bytes(&mut self, port: u32) -> u64 {
        self.release_departed(port);
        self.ports[port as usize].bytes
    }
}

/// When a full port may have room again: its next planned departure, else `fallback`.
/// Which of `n` candidate actions a packet of `flow` at `node` takes: a draw of the
/// routing stream per packet, or a hash of (seed, flow, node) per flow; one candidate
/// draws nothing.
#[inline]
fn choose_among(multipath: Multipath, rng: &mut Stream, seed: u64, n: u32, flow: u32, node: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    match multipath {
        Multipath::Packet | Multipath::Adaptive => rng.below(n),
        Multipath::Flow => (mix64(seed ^ ((flow as u64) << 32 | node as u64)) % n as u64) as u32,
    }
}

fn pt_wake(pt: &Port, fallback: Ps) -> Ps {
    if pt.next_dep == Ps::MAX { fallback } else { pt.next_dep }
}

fn routes_hop(router: &Router, id: u32, pos: u32) -> Option<Action> {
    match router {
        Router::Source(r) => r.hop(id, pos),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Services, TransportKind};

    /// A rotor fabric of 7 nodes with 2 optical uplinks each, 3 slices of 2 µs with a
    /// 200-ns guardband (uplink k of node a reaches node a + 1 + 2s + k in slice s), ideal
    /// flows between every ordered pair, `buffer` bytes per port.
    fn rotor7(router: RouterKind, buffer: u64, seed: u64) -> SimSpec {
        let (n, u, slices) = (7u32, 2u32, 3u32);
        let ports = (n * u) as usize;
        let mut sched_peer = vec![NONE; ports * slices as usize];
        for s in 0..slices {
            for a in 0..n {
                for k in 0..u {
                    let b = (a + 1 + s * u + k) % n;
                    sched_peer[(s * n * u + a * u + k) as usize] = b * u + k;
                }
            }
        }
        let mut spec = pair(TransportKind::Ideal, 0, buffer);
        let mut flows = (vec![], vec![], vec![], vec![]);
        let mut r = seed;
        for i in 0..300u64 {
            r = crate::rng::mix64(r ^ i);
            let (a, b) = ((r % n as u64) as u32, ((r >> 8) % (n as u64 - 1)) as u32);
            flows.0.push(i * 200_000 + (r >> 20) % 100_000);
            flows.1.push(a);
            flows.2.push(if b >= a { b + 1 } else { b });
            flows.3.push(1_000 + (r >> 32) % 60_000);
        }
        spec.nodes = n;
        spec.port_offset = (0..=n).map(|a| a * u).collect();
        spec.port_kind = vec![PortKind::Optical; ports];
        spec.port_rate_bps = vec![100_000_000_000; ports];
        spec.port_prop_ps = vec![500_000; ports];
        spec.port_buffer_bytes = vec![buffer; ports];
        spec.port_peer = vec![NONE; ports];
        spec.slice_ps = vec![2_000_000; slices as usize];
        spec.guardband_ps = 200_000;
        spec.sched_peer = sched_peer;
        spec.ep_node = (0..n).collect();
        spec.ep_rate_bps = vec![200_000_000_000; n as usize];
        spec.ep_prop_ps = vec![0; n as usize];
        spec.ep_down_port = vec![NONE; n as usize];
        spec.router = router;
        spec.entries = vec![];
        spec.seed = seed;
        spec.loss = vec![];
        spec.flow_transport = vec![TransportKind::Ideal; flows.0.len()];
        (spec.flow_start_ps, spec.flow_src, spec.flow_dst, spec.flow_size) = flows;
        spec
    }

    #[test]
    fn lean_paths_give_the_same_results() {
        // the lean relay (`relay_calendar`) and source (`inject_calendar`) against the
        // general route / admit / enqueue / plan, with buffers that overflow (relayed
        // packets dropped, sources refused) and with room to spare (sources refused by
        // full slices)
        for router in [RouterKind::Vlb, RouterKind::Direct] {
            for (buffer, seed) in [(6_000, 1), (9_000, 2), (1 << 30, 3)] {
                let run = |lean: bool| {
                    let mut sim = Sim::new(rotor7(router, buffer, seed)).unwrap();
                    assert!(sim.lean && sim.lean_src);
                    (sim.lean, sim.lean_src) = (lean, lean);
                    sim.run_until(80_000_000);
                    sim.output()
                };
                let (fast, general) = (run(true), run(false));
                assert!(fast.invariant_errors.is_empty(), "{:?}", fast.invariant_errors);
                assert!(fast.totals.bytes_delivered > 1_000_000);
                assert_eq!(fast.event_counts[0], general.event_counts[0]);
                assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{router:?} buffer {buffer}");
            }
        }
        // the small buffers drop relayed packets
        let mut sim = Sim::new(rotor7(RouterKind::Vlb, 6_000, 1)).unwrap();
        sim.run_until(80_000_000);
        assert!(sim.drops[DROP_BUFFER] > 0, "{:?}", sim.drops);
    }

    #[test]
    fn a_failed_rotor_port_keeps_nothing_planned() {
        // a rotor port plans in one calendar queue per slice of the cycle: a failure drops
        // what waits in every one of them, and nothing departs on it while it is down
        let mut sim = Sim::new(rotor7(RouterKind::Vlb, 1 << 30, 4)).unwrap();
        let at = 31_000_000;
        sim.fail_ports(at, vec![0, 1], true).unwrap();
        sim.run_until(at - 1);
        let planned = |sim: &Sim, gp: usize| -> usize {
            let pt = &sim.ports[gp];
            if pt.cal == NONE {
                return 0;
            }
            sim.cal[pt.cal as usize..pt.cal as usize + 3].iter().filter(|q| q.planned.iter().any(|e| e.0 > sim.now)).count()
                + pt.departs.unreleased().filter(|e| e.0 > sim.now).count()
        };
        assert!(planned(&sim, 0) + planned(&sim, 1) >= 2, "the ports have packets waiting in several slice queues");
        sim.run_until(at);
        assert_eq!(planned(&sim, 0) + planned(&sim, 1), 0);
        assert_eq!(sim.ports[0].bytes + sim.ports[1].bytes, 0);
        assert!(sim.drops[DROP_FAILED] > 0);
        sim.run_until(80_000_000);
        let out = sim.output();
        assert!(out.invariant_errors.is_empty(), "{:?}", out.invariant_errors);
    }

    #[test]
    fn flat_calendar_ports_give_the_same_results() {
        // one collection of planned transmissions per port (a list, or a heap for a full
        // buffer) against one FIFO per calendar queue:
        // with full buffers (relayed packets dropped, sources refused), with room, under
        // hop-by-hop and source routes, with a failure and a reconfiguration in the run
        let mut flat_used = false;
        for router in [RouterKind::Vlb, RouterKind::Direct, RouterKind::Hoho, RouterKind::Ucmp] {
            for (buffer, seed) in [(6_000, 1), (9_000, 2), (1 << 30, 3)] {
                let run = |flat: bool| {
                    let mut spec = rotor7(router, buffer, seed);
                    // port and network samples read what the ports have sent
                    (spec.sample_interval_ps, spec.watch_ports, spec.net_series) = (3_000_000, vec![0, 3, 8], true);
                    let mut sim = Sim::new(spec).unwrap();
                    sim.flat_cal &= flat;
                    sim.fail_ports(23_000_000, vec![4, 5], true).unwrap();
                    sim.fail_ports(41_000_000, vec![4, 5], false).unwrap();
                    // the same matchings with slices 0 and 1 swapped
                    let (np, ns) = (sim.ports.len() as u32, sim.sched.slices());
                    let peer: Vec<u32> = (0..ns).flat_map(|k| (0..np).map(move |g| (k, g)))
                        .map(|(k, g)| sim.sched.peer(g, if k < 2 { 1 - k } else { k })).collect();
                    sim.run_until(50_000_000);
                    let used = sim.ports.iter().any(|p| p.departs.unreleased().next().is_some());
                    // (a cyclic schedule changes at the next slice boundary: 54 us)
                    sim.reconfigure(52_900_000, peer, 1_000_000, seed == 2).unwrap();
                    sim.run_until(80_000_000);
                    (sim.output(), used)
                };
                let ((flat, used), (fifo, unused)) = (run(true), run(false));
                flat_used |= used;
                assert!(!unused);
                assert!(flat.invariant_errors.is_empty(), "{:?}", flat.invariant_errors);
                assert!(flat.totals.bytes_delivered > 1_000_000);
                assert_eq!(format!("{flat:?}"), format!("{fifo:?}"), "{router:?} buffer {buffer}");
            }
        }
        assert!(flat_used);
    }

    /// Two nodes joined by one 100 Gb/s electrical link, one flow 0 -> 1 with `tp`.
    fn pair(tp: TransportKind, size: u64, buffer: u64) -> SimSpec {
        SimSpec {
            nodes: 2,
            port_offset: vec![0, 1, 2],
            port_kind: vec![PortKind::Electrical; 2],
            port_rate_bps: vec![100_000_000_000; 2],
            port_prop_ps: vec![500_000; 2],
            port_buffer_bytes: vec![buffer; 2],
            port_peer: vec![1, 0],
            slice_ps: vec![],
            guardband_ps: 0,
            sched_peer: vec![],
            hosts_mode: false,
            ep_node: vec![0, 1],
            ep_rate_bps: vec![100_000_000_000; 2],
            ep_prop_ps: vec![0; 2],
            ep_down_port: vec![NONE; 2],
            router: RouterKind::Table,
            multipath: Multipath::Packet,
            max_hop: 3,
            ucmp_alpha: 1.0,
            expander_paths: 1,
            services: Services::default(),
            entries: vec![(0, Entry { arr: WILD, src: WILD, dst: 1, dep: WILD, port: 0 }),
                          (1, Entry { arr: WILD, src: WILD, dst: 0, dep: WILD, port: 1 })],
            routes: vec![],
            flow_start_ps: vec![0],
            flow_src: vec![0],
            flow_dst: vec![1],
            flow_size: vec![size],
            mtu_bytes: 1500,
            header_bytes: 0,
            seed: 1,
            sample_interval_ps: 0,
            watch_ports: vec![],
            collect_tm: false,
            flow_transport: vec![tp],
            transport: TransportParams::default(),
            port_disc: vec![],
            loss: vec![(0, 3)],
            pias_thresholds: vec![],
            stop_when: Default::default(),
            net_series: false,
            hold_unrouted: false,
            admission_control: false,
            flow_dep_ptr: vec![],
            flow_dep_ids: vec![],
            flow_gap_ps: vec![],
            flow_coflow: vec![],
            port_link_class: vec![],
            shared_buffer_bytes: vec![],
            buffer_alpha: vec![],
            log_drops: 0,
        }
    }

    /// Three nodes on a static optical fabric, one port each: 0 - 1 joined, 2 alone;
    /// no routes; one ideal flow 0 -> 1 of `size` bytes; holding on.
    fn ta_line(size: u64) -> SimSpec {
        let mut s = pair(TransportKind::Ideal, size, 10_000);
        s.nodes = 3;
        s.port_offset = vec![0, 1, 2, 3];
        s.port_kind = vec![PortKind::Optical; 3];
        s.port_rate_bps = vec![100_000_000_000; 3];
        s.port_prop_ps = vec![500_000; 3];
        s.port_buffer_bytes = vec![10_000; 3];
        s.port_peer = vec![NONE; 3];
        s.sched_peer = vec![NONE; 3];
        s.ep_node = vec![0, 1, 2];
        s.ep_rate_bps = vec![100_000_000_000; 3];
        s.ep_prop_ps = vec![0; 3];
        s.ep_down_port = vec![NONE; 3];
        s.entries = vec![];
        s.loss = vec![];
        s.hold_unrouted = true;
        s
    }

    #[test]
    fn held_packets_wait_for_tables_and_circuits_and_are_in_flight_meanwhile() {
        let mut sim = Sim::new(ta_line(15_000)).unwrap();
        sim.run_until(10_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        // the hold takes one port buffer (10 kB): 6 packets held, the source waits
        assert_eq!((o.hold.packets, o.hold.bytes, o.packets.in_flight, o.bytes_in_flight), (6, 9_000, 6, 15_000));
        assert!(o.hold.refused > 0 && o.drops.iter().all(|(_, v)| *v == 0));
        assert_eq!(sim.demand(), vec![(0, 1, 15_000)]);
        // a circuit 0 - 1 and a route: the held packets leave after the 1 us delay
        sim.reconfigure(10_000_000, vec![1, 0, NONE], 1_000_000, false).unwrap();
        sim.set_tables(&[(0, Entry { arr: WILD, src: WILD, dst: 1, dep: WILD, port: 0 })]).unwrap();
        sim.run_until(100_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        // the 6 held leave first, the 4 the source still had follow (routed at once)
        assert_eq!((o.bytes_delivered, o.hold.packets, o.hold.total, o.hold.released), (15_000, 0, 6, 6));
        // 10 packets of 1500 B (120 ns each) from 11 us, plus the propagation
        assert_eq!(o.flow_finish_ps[0], 11_000_000 + 10 * 120_000 + 500_000);
    }

    #[test]
    fn a_drained_reconfiguration_switches_when_the_network_is_empty() {
        let mut spec = ta_line(150_000);
        spec.sched_peer = vec![1, 0, NONE];
        spec.entries = vec![(0, Entry { arr: WILD, src: WILD, dst: 1, dep: WILD, port: 0 })];
        let mut sim = Sim::new(spec).unwrap();
        sim.run_until(5_000_000);
        sim.reconfigure_with(5_000_000, vec![1, 0, NONE], 0, false, true).unwrap();
        sim.run_until(5_000_000);
        assert!(sim.in_net > 0 && sim.draining != NONE);
        sim.run_until(1_000_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        let (req, sw, up) = o.switches[0];
        // the switch waits for the last packet in the network: its last bit left at most
        // one 1500 B packet time (120 ns) after the request, plus the 500 ns propagation
        assert_eq!((req, up), (5_000_000, sw));
        assert!(sw > req && sw <= req + 120_000 + 500_000 + 120_000, "{sw}");
        assert_eq!((o.bytes_delivered, o.drain_refused > 0, o.draining), (150_000, true, false));
        assert!(sim.reconfigure_with(0, vec![1, 0, NONE], 0, false, true).is_ok());
    }

    /// Three ideal flows on the electrical pair: 1 after 0 (+ 1 us gap), 2 after 0 and 1.
    fn chain() -> SimSpec {
        let mut s = pair(TransportKind::Ideal, 15_000, 1_000_000);
        s.loss = vec![];
        s.flow_start_ps = vec![0, 0, 0];
        s.flow_src = vec![0, 0, 1];
        s.flow_dst = vec![1, 1, 0];
        s.flow_size = vec![15_000, 3_000, 1_500];
        s.flow_transport = vec![TransportKind::Ideal; 3];
        s.flow_dep_ptr = vec![0, 0, 1, 3];
        s.flow_dep_ids = vec![0, 0, 1];
        s.flow_gap_ps = vec![0, 1_000_000, 0];
        s
    }

    #[test]
    fn a_dependent_flow_starts_when_its_last_dependency_finishes_plus_its_gap() {
        let mut sim = Sim::new(chain()).unwrap();
        sim.run_until(100_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        // 1500 B take 120 ns at 100 Gb/s; the propagation is 500 ns
        let f0 = 10 * 120_000 + 500_000;
        let f1 = f0 + 1_000_000 + 2 * 120_000 + 500_000;
        let f2 = f1 + 120_000 + 500_000;
        assert_eq!(o.flow_finish_ps, vec![f0, f1, f2]);
        assert_eq!(o.flow_start_ps, vec![0, f0 + 1_000_000, f1]);
        assert_eq!((o.flows_started, o.flows_completed, o.event_counts[16]), (3, 3, 2));
    }

    #[test]
    fn flows_whose_dependency_never_finishes_never_start() {
        let mut s = chain();
        s.loss = vec![(0, 9)]; // the last packet of flow 0 is lost: it never finishes
        let mut sim = Sim::new(s).unwrap();
        sim.run_until(100_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!((o.flows_started, o.bytes_offered, o.bytes_dropped), (1, 15_000, 1_500));
        assert_eq!(&o.flow_start_ps[1..], &[Ps::MAX, Ps::MAX]);
    }

    #[test]
    fn a_coflow_starts_when_every_flow_of_the_one_before_has_finished() {
        let mut s = chain();
        s.flow_start_ps = vec![0, 0, 0, 0];
        s.flow_src = vec![0, 1, 0, 1];
        s.flow_dst = vec![1, 0, 1, 0];
        s.flow_size = vec![15_000, 1_500, 3_000, 1_500];
        s.flow_transport = vec![TransportKind::Ideal; 4];
        s.flow_dep_ptr = vec![];
        s.flow_dep_ids = vec![];
        s.flow_coflow = vec![0, 0, 1, 1];
        s.flow_gap_ps = vec![0, 0, 1_000_000, 0];
        let mut sim = Sim::new(s.clone()).unwrap();
        sim.run_until(100_000_000);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        // co-flow 0 ends with its longer flow (10 packets of 120 ns, 500 ns propagation)
        let barrier = 10 * 120_000 + 500_000;
        assert_eq!(o.flow_start_ps, vec![0, 0, barrier + 1_000_000, barrier]);
        assert_eq!(o.flow_finish_ps, vec![barrier, 620_000, barrier + 1_000_000 + 2 * 120_000 + 500_000, barrier + 620_000]);
        assert_eq!((o.flows_started, o.flows_completed, o.event_counts[16]), (4, 4, 2));
        // a co-flow whose flow never finishes holds the next one back
        let mut lossy = s.clone();
        lossy.loss = vec![(0, 9)];
        let mut sim = Sim::new(lossy).unwrap();
        sim.run_until(100_000_000);
        let o = sim.output();
        assert_eq!((o.flows_started, o.flows_completed), (2, 1));
        // ids must be dense, and barriers do not mix with per-flow dependencies
        let mut bad = s.clone();
        bad.flow_coflow = vec![0, 0, 2, 2];
        let e = Sim::new(bad).err().expect("a missing co-flow");
        assert!(e.to_string().contains("flows.coflow") && e.to_string().contains("co-flow 1"), "{e}");
        let mut bad = s;
        bad.flow_dep_ptr = vec![0, 0, 0, 0, 1];
        bad.flow_dep_ids = vec![0];
        let e = Sim::new(bad).err().expect("both kinds");
        assert!(e.to_string().contains("flows.coflow") && e.to_string().contains("cannot be combined"), "{e}");
    }

    #[test]
    fn dependency_cycles_and_unknown_flows_are_refused() {
        let mut s = chain();
        s.flow_dep_ptr = vec![0, 1, 2, 3];
        s.flow_dep_ids = vec![2, 0, 1]; // 0 after 2, 1 after 0, 2 after 1
        let e = Sim::new(s.clone()).err().expect("a cycle");
        assert!(e.to_string().contains("cycle") && e.to_string().contains("flows["), "{e}");
        s.flow_dep_ids = vec![1, 1, 2];
        let e = Sim::new(s.clone()).err().expect("itself");
        assert!(e.to_string().contains("flows[1].after") && e.to_string().contains("itself"), "{e}");
        s.flow_dep_ids = vec![1, 7, 0];
        let e = Sim::new(s).err().expect("unknown");
        assert!(e.to_string().contains("flows[1].after") && e.to_string().contains("unknown flow"), "{e}");
    }

    fn has(o: &SimOutput, what: &str) -> bool {
        o.invariant_errors.iter().any(|e| e.contains(what))
    }

    /// The balances are checked against in-flight figures scanned from the engine's state,
    /// so a slip in any counter, or a packet lost from the books, is caught.
    #[test]
    fn ledger_balances_catch_bookkeeping_slips() {
        for tp in [TransportKind::Ideal, TransportKind::Tcp] {
            let mut sim = Sim::new(pair(tp, 150_000, 1_000_000)).unwrap();
            sim.run_until(3_000_000); // mid-flow: packets on the wire and in queues
            let o = sim.output();
            assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
            assert!(o.packets.in_flight > 0 && o.packets.dropped.iter().any(|(r, n)| r == "injected" && *n == 1));
            sim.ledger.delivered += 1;
            assert!(has(&sim.output(), "payload balance"));
            sim.ledger.delivered -= 1;
            sim.ledger.sent += 1;
            let o = sim.output();
            assert!(has(&o, "packet balance") && !has(&o, "payload balance"));
            sim.ledger.sent -= 1;
            // a packet that vanishes from the pool without passing through the books
            let live = (0..sim.pool.len() as u32).find(|i| !sim.free.contains(i)).unwrap();
            sim.free.push(live);
            assert!(has(&sim.output(), "packet balance"));
            sim.free.pop();
            assert!(sim.output().invariant_errors.is_empty());
            // the run finishes clean: TCP recovers the injected loss, ideal loses it
            sim.run_until(1_000_000_000);
            let o = sim.output();
            assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
            if tp == TransportKind::Tcp {
                assert_eq!((o.bytes_delivered, o.bytes_dropped, o.flows_completed), (150_000, 0, 1));
                assert_eq!(o.flow_retx, vec![1]);
            } else {
                assert_eq!((o.bytes_delivered, o.bytes_dropped), (148_500, 1_500));
            }
            assert_eq!(o.packets.in_flight, 0);
        }
    }
}
