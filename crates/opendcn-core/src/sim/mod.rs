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
mod clock;
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
use accounting::{Counters, LogHist, Sampling};
use build::Modes;
use endpoint::{Deps, Endpoint, Flow, Voq};
use faults::{Failures, Reconfigs};
use net::{Credit, Net};
use rotorlb::RlbGlue;
use routing::Routing;
use services::{Hold, PushBack};
use clock::Clock;
use event::Ev;
use fate::*;
use net::port::*;
use packet::*;
use routing::{choose_among, NoRoute};
use transports::TransportGlue;

/// Events the event list keeps in view ahead of the one being run (for prefetching).
const LOOKAHEAD: usize = 8;
/// How far ahead the next hop of an arrival is prefetched (its packet is in cache by then).
const NEAR: usize = 3;

/// A simulation in progress.
pub struct Sim {
    heap: EventList<Ev>,
    sched: Schedule,
    eps: Vec<Endpoint>,
    flows: Vec<Flow>,
    // OpenOptics infrastructure services
    services: crate::spec::Services,
    eqo: crate::services::Eqo,
    offload: crate::services::Offload,
    /// When the run may end before its duration; flows that count for `LowLatencyDone`
    /// (transport other than bulk), and how many of them finished.
    stop_when: StopWhen,
    ll_total: u64,
    ll_done: u64,
    stopped: bool,
    /// Control messages of controllers, their mailbox, and the received-bytes counters
    /// (see `messages`).
    msg: messages::Messages,
    /// Per-drop and per-push-back records, when the spec asks for them.
    droplog: droplog::DropLog,
    /// The simulated time and the slice that contains it.
    clock: Clock,
    /// The packets: their records, by id.
    pool: Pool,
    /// Counters, histograms, the trace hash and the packet ledger.
    acct: Counters,
    /// Time series and the traffic matrix.
    smp: Sampling,
    /// Congestion detection and push-back.
    pb: PushBack,
    /// Packets held without a route.
    hold: Hold,
    /// Runtime reconfigurations and drains.
    rc: Reconfigs,
    /// Link and node failures.
    fail: Failures,
    /// Credit-based flow control: blocked ports and the deadlock watchdog.
    credit: Credit,
    /// Transport connections, pull pacers and their parameters.
    tg: TransportGlue,
    /// RotorLB at the hosts.
    rlb: RlbGlue,
    /// Flow start order, dependencies and co-flow barriers.
    deps: Deps,
    /// Ports, calendar queues and the switch buffers.
    net: Net,
    /// Routing state: the router, multipath choice and its random streams.
    rt: Routing,
    /// The run's modes, decided once when it is built.
    mode: Modes,
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
        self.clock.now
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
            if t > t_end || self.credit.deadlock.is_some() {
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
                if let (Ev::Arrive(p, _), Router::Table(t)) = (ev, &self.rt.router) {
                    if let Some(pk) = self.pool.pkt.get(p as usize) {
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
            self.clock.advance(time, &self.sched);
            self.acct.events += 1;
            self.acct.event_counts[ev.kind()] += 1;
            if !matches!(ev, Ev::Sample | Ev::Watchdog) {
                // samples and the deadlock watchdog observe the run; they are not part of it
                self.acct.trace.record(time, ev.code());
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
                    if self.pool.pkt[p as usize].epoch == epoch {
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
        if t_end > self.clock.now && self.credit.deadlock.is_none() && !self.stopped {
            self.clock.advance(t_end, &self.sched);
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
