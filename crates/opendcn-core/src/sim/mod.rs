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

mod accounting;
mod build;
mod endpoint;
mod event;
mod fate;
mod faults;
mod messages;
mod net;
mod packet;
mod prefetch;
mod rotorlb;
mod routing;
mod services;
mod transports;
pub mod buffer;
pub mod droplog;
pub use messages::{Message, MessageTotals};
pub use accounting::{HoldStats, NetSample, PacketTotals, SimOutput, LINK_CLASSES, REORDER_BUCKETS};
pub use event::EVENT_KINDS;
pub use fate::DROP_REASONS;
use accounting::LogHist;
use endpoint::{Endpoint, Flow, Voq};
use event::Ev;
use fate::*;
use net::port::*;
use packet::*;
use routing::choose_among;
use transports::Conn;

/// Events the event list keeps in view ahead of the one being run (for prefetching).
const LOOKAHEAD: usize = 8;
/// How far ahead the next hop of an arrival is prefetched (its packet is in cache by then).
const NEAR: usize = 3;

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

impl Sim {
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

    /// True once the run ended early by its stop condition (`now` is when).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

}

#[cfg(test)]
mod tests;
