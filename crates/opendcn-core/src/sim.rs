//! The simulation: events, packets, ports with calendar queues, links, endpoints,
//! metrics and invariants.
//!
//! What is modeled and what is simplified:
//! - Events are ordered by `(time, seq)`; one pending event per busy component. A port
//!   schedules only its next transmit-done; a packet on a link is one arrival event.
//! - Ports are output-queued and store-and-forward. An optical port keeps one calendar
//!   queue per slice of the cycle (a packet waits in the queue of its departure slice;
//!   rank = departure − arrival slice) plus a FIFO for wildcard departures. A packet is
//!   sent only if its whole serialization fits in the up-time of the current slice
//!   (`[start + guardband, end)`); otherwise it waits for the next occurrence of its
//!   slice. Slice timing applies at the sender's egress (OpenOptics rotates queues early
//!   to absorb the switch-to-switch delay).
//! - Buffers are per egress port, in bytes over all its queues; a packet that does not fit
//!   is dropped (`buffer_overflow`). Sources never drop: an endpoint whose next packet
//!   does not fit waits until that port sends something (ideal back-pressure).
//! - Endpoints hold per-destination queues of flows and inject packets round-robin over
//!   destinations at their link rate. With hosts below nodes, the host link adds its
//!   serialization and propagation; the node delivers through a host downlink port.
//! - A runtime reconfiguration of a static schedule takes the changed circuits down for the
//!   reconfiguration delay; a packet being serialized on a changed circuit is dropped
//!   (`reconfiguration`), as in OpenOptics' emulated fabric.
//! - Invariants checked at the end of every run: payload bytes offered == delivered +
//!   dropped + in flight (counted independently), optical collisions (two senders on one
//!   receiving port in one slice) and guardband violations (bits sent while a circuit is
//!   not up).

use std::collections::{BTreeMap, VecDeque};

use crate::error::SpecError;
use crate::event::EventList;
use crate::rng::{mix64, Stream};
use crate::schedule::Schedule;
use crate::spec::{Multipath, PortKind, RouterKind, SimSpec};
use crate::timeflow::{build_tables, Action, ConnIndex, Entry, Router, Routes, WILD};
use crate::schedule::SliceRef;
use crate::units::{Ps, Rate, NONE};

/// Drop reasons, indexed into `SimOutput::drops`.
pub const DROP_REASONS: [&str; 4] = ["buffer_overflow", "no_route", "no_circuit", "reconfiguration"];
const DROP_BUFFER: usize = 0;
const DROP_NO_ROUTE: usize = 1;
const DROP_NO_CIRCUIT: usize = 2;
const DROP_RECONF: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Arrive(u32),
    HostArrive(u32),
    TxDone(u32),
    Wake(u32),
    Inject(u32),
    NextFlows,
    SliceBoundary,
    SliceUp,
    Sample,
    Reconfig(u32),
}

/// Names of the event kinds, in the order of `SimOutput::event_counts`.
pub const EVENT_KINDS: [&str; 10] = ["arrive", "host_arrive", "tx_done", "wake", "inject", "next_flows",
                                      "slice_boundary", "slice_up", "sample", "reconfig"];

impl Ev {
    fn kind(self) -> usize {
        (self.code() >> 32) as usize
    }

    fn code(self) -> u64 {
        match self {
            Ev::Arrive(x) => x as u64,
            Ev::HostArrive(x) => 1 << 32 | x as u64,
            Ev::TxDone(x) => 2 << 32 | x as u64,
            Ev::Wake(x) => 3 << 32 | x as u64,
            Ev::Inject(x) => 4 << 32 | x as u64,
            Ev::NextFlows => 5 << 32,
            Ev::SliceBoundary => 6 << 32,
            Ev::SliceUp => 7 << 32,
            Ev::Sample => 8 << 32,
            Ev::Reconfig(x) => 9 << 32 | x as u64,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Packet {
    flow: u32,
    src_node: u32,
    dst_node: u32,
    dst_ep: u32,
    payload: u32,
    wire: u32,
    /// Arrival slice at the node that holds it (the slice the previous hop sent it in).
    tag: u32,
    /// Node (or host endpoint, when `to_host`) the packet is travelling to.
    at: u32,
    route: u32,
    pos: u32,
    /// Egress port and departure slice reserved at injection (hosts mode).
    q_port: u32,
    q_dep: u32,
    hops: u16,
    to_host: bool,
    doomed: bool,
}

#[derive(Debug, Clone)]
struct Port {
    kind: PortKind,
    rate: Rate,
    /// Packets in all queues of this port.
    queued: u32,
    prop: Ps,
    cap: u64,
    bytes: u64,
    peer: u32,
    busy_until: Ps,
    /// Time of this port's pending transmit-done event (`Ps::MAX`: none).
    txdone_at: Ps,
    wake_at: Ps,
    down_until: Ps,
    fifo: VecDeque<u32>,
    cal: Vec<VecDeque<u32>>,
    /// Absolute slice in which this port was last put on the active list, and its index.
    active_abs: u64,
    active_idx: u32,
    last_pkt: u32,
    tx_bytes: u64,
    tx_bytes_sampled: u64,
    blocked: Vec<u32>,
    rx_abs: u64,
    rx_sender: u32,
}

#[derive(Debug, Clone)]
struct Endpoint {
    node: u32,
    rate: Rate,
    prop: Ps,
    down_port: u32,
    busy_until: Ps,
    scheduled: bool,
    blocked: bool,
    held: u32,
    voq: BTreeMap<u32, VecDeque<u32>>,
    rr: VecDeque<u32>,
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
}

/// Everything a run reports.
#[derive(Debug, Clone, Default)]
pub struct SimOutput {
    pub now_ps: Ps,
    pub events: u64,
    pub packet_hops: u64,
    pub flows_started: u64,
    pub flows_completed: u64,
    pub bytes_offered: u64,
    pub bytes_delivered: u64,
    pub bytes_dropped: u64,
    pub bytes_in_flight: u64,
    pub drops: Vec<(String, u64)>,
    pub collisions: u64,
    pub guardband_violations: u64,
    pub trace_hash: u64,
    pub peak_packets: u64,
    /// Events executed per kind (see [`EVENT_KINDS`]).
    pub event_counts: Vec<u64>,
    /// Per-flow columns (all flows given; `finish` = u64::MAX when not completed).
    pub flow_finish_ps: Vec<Ps>,
    pub flow_delivered: Vec<u64>,
    pub flow_hops: Vec<u16>,
    /// Time series: one row per (sample, watched port).
    pub ts_time_ps: Vec<Ps>,
    pub ts_port: Vec<u32>,
    pub ts_queued_bytes: Vec<u64>,
    pub ts_tx_bytes: Vec<u64>,
    /// Violated invariants, empty when the run is sound.
    pub invariant_errors: Vec<String>,
}

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
    eps: Vec<Endpoint>,
    hosts_mode: bool,
    flows: Vec<Flow>,
    next_flow: usize,
    pool: Vec<Packet>,
    free: Vec<u32>,
    live: u64,
    peak_live: u64,
    mtu: u32,
    header: u32,
    rng_route: Stream,
    seed: u64,
    // slotted fabric state
    has_optical: bool,
    pending: Vec<Vec<u32>>,
    active: Vec<u32>,
    to_kick: Vec<u32>,
    // reconfiguration
    reconfigs: Vec<(Vec<u32>, Ps)>,
    // metrics
    events: u64,
    event_counts: [u64; 10],
    packet_hops: u64,
    flows_started: u64,
    flows_completed: u64,
    offered: u64,
    delivered: u64,
    drops: [u64; DROP_REASONS.len()],
    collisions: u64,
    gb_violations: u64,
    trace: u64,
    sample_interval: Ps,
    watch: Vec<u32>,
    out_ts: (Vec<Ps>, Vec<u32>, Vec<u64>, Vec<u64>),
    collect_tm: bool,
    tm: BTreeMap<(u32, u32), u64>,
    scratch: Vec<Action>,
    scratch_ids: Vec<u32>,
    /// The slice containing `now` as of the last lookup (refreshed when `now` leaves it).
    cur: SliceRef,
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
                Router::Source(routes)
            }
            RouterKind::Vlb | RouterKind::Direct => {
                if !has_optical {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router), "built-in VLB/direct routing needs optical ports"));
                }
                let ci = ConnIndex::new(&sched, &port_node, &spec.port_offset, &optical);
                if spec.router == RouterKind::Vlb { Router::Vlb(ci) } else { Router::Direct(ci) }
            }
        };
        let slices = sched.slices() as usize;
        let ports = (0..n_ports).map(|gp| Port {
            kind: spec.port_kind[gp],
            rate: Rate::new(spec.port_rate_bps[gp]),
            queued: 0,
            prop: spec.port_prop_ps[gp],
            cap: spec.port_buffer_bytes[gp],
            bytes: 0,
            peer: spec.port_peer[gp],
            busy_until: 0,
            txdone_at: Ps::MAX,
            wake_at: 0,
            down_until: 0,
            fifo: VecDeque::new(),
            cal: Vec::new(),
            active_abs: u64::MAX,
            active_idx: 0,
            last_pkt: NONE,
            tx_bytes: 0,
            tx_bytes_sampled: 0,
            blocked: Vec::new(),
            rx_abs: u64::MAX,
            rx_sender: NONE,
        }).collect();
        let eps = (0..spec.ep_node.len()).map(|i| Endpoint {
            node: spec.ep_node[i],
            rate: Rate::new(spec.ep_rate_bps[i]),
            prop: spec.ep_prop_ps[i],
            down_port: spec.ep_down_port[i],
            busy_until: 0,
            scheduled: false,
            blocked: false,
            held: NONE,
            voq: BTreeMap::new(),
            rr: VecDeque::new(),
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
        }).collect();
        let mut sim = Sim {
            now: 0,
            heap: EventList::new(),
            sched,
            router,
            multipath: spec.multipath,
            port_node,
            port_offset: spec.port_offset.clone(),
            optical,
            ports,
            eps,
            hosts_mode: spec.hosts_mode,
            flows,
            next_flow: 0,
            pool: Vec::new(),
            free: Vec::new(),
            live: 0,
            peak_live: 0,
            mtu: spec.mtu_bytes,
            header: spec.header_bytes,
            rng_route: Stream::new(spec.seed, "routing"),
            seed: spec.seed,
            has_optical,
            pending: vec![Vec::new(); slices],
            active: Vec::new(),
            to_kick: Vec::new(),
            reconfigs: Vec::new(),
            events: 0,
            event_counts: [0; 10],
            packet_hops: 0,
            flows_started: 0,
            flows_completed: 0,
            offered: 0,
            delivered: 0,
            drops: [0; DROP_REASONS.len()],
            collisions: 0,
            gb_violations: 0,
            trace: 0xcbf2_9ce4_8422_2325,
            sample_interval: spec.sample_interval_ps,
            watch: spec.watch_ports.clone(),
            out_ts: Default::default(),
            collect_tm: spec.collect_tm,
            tm: BTreeMap::new(),
            scratch: Vec::new(),
            scratch_ids: Vec::new(),
            cur: SliceRef { abs: 0, idx: 0, start: 0, end: 0 },
        };
        if !sim.flows.is_empty() {
            let t = sim.flows[0].start;
            sim.push(t, Ev::NextFlows);
        }
        if sim.has_optical && !sim.sched.is_static() {
            sim.push(0, Ev::SliceBoundary);
        }
        if sim.sample_interval > 0 && !sim.watch.is_empty() {
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

    /// Run every event with time ≤ `t_end`; afterwards `now() == t_end`.
    pub fn run_until(&mut self, t_end: Ps) {
        while let Some(t) = self.heap.peek_time() {
            if t > t_end {
                break;
            }
            let (time, ev) = self.heap.pop().expect("peeked");
            self.now = time;
            self.events += 1;
            self.event_counts[ev.kind()] += 1;
            self.trace = (self.trace ^ time ^ ev.code().rotate_left(17)).wrapping_mul(0x0000_0100_0000_01b3);
            match ev {
                Ev::Arrive(p) => self.on_arrive(p),
                Ev::HostArrive(p) => self.on_host_arrive(p),
                Ev::TxDone(port) => {
                    self.ports[port as usize].txdone_at = Ps::MAX;
                    self.try_send(port);
                }
                Ev::Wake(port) => {
                    self.ports[port as usize].wake_at = 0;
                    self.try_send(port);
                }
                Ev::Inject(e) => {
                    self.eps[e as usize].scheduled = false;
                    self.inject(e);
                }
                Ev::NextFlows => self.on_next_flows(),
                Ev::SliceBoundary => self.on_slice_boundary(),
                Ev::SliceUp => {
                    let kick = std::mem::take(&mut self.to_kick);
                    for &p in &kick {
                        self.try_send(p);
                    }
                    self.to_kick = kick;
                    self.to_kick.clear();
                }
                Ev::Sample => self.on_sample(),
                Ev::Reconfig(i) => self.on_reconfig(i),
            }
        }
        if t_end > self.now {
            self.now = t_end;
        }
    }

    // ---------------------------------------------------------------- packets and pool

    fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        self.peak_live = self.peak_live.max(self.live);
        if let Some(id) = self.free.pop() {
            self.pool[id as usize] = p;
            id
        } else {
            self.pool.push(p);
            (self.pool.len() - 1) as u32
        }
    }

    fn release(&mut self, id: u32) {
        self.live -= 1;
        self.pool[id as usize].payload = 0;
        self.pool[id as usize].wire = 0;
        self.free.push(id);
    }

    fn drop_pkt(&mut self, id: u32, reason: usize) {
        self.drops[reason] += self.pool[id as usize].payload as u64;
        self.release(id);
    }

    // ---------------------------------------------------------------- flows and endpoints

    fn on_next_flows(&mut self) {
        while self.next_flow < self.flows.len() && self.flows[self.next_flow].start <= self.now {
            let f = self.next_flow as u32;
            self.next_flow += 1;
            let fl = self.flows[f as usize];
            self.offered += fl.size;
            self.flows_started += 1;
            let ep = &mut self.eps[fl.src as usize];
            let q = ep.voq.entry(fl.dst).or_default();
            if q.is_empty() {
                ep.rr.push_back(fl.dst);
            }
            q.push_back(f);
            if !ep.scheduled && !ep.blocked && ep.busy_until <= self.now {
                self.inject(fl.src);
            }
        }
        if self.next_flow < self.flows.len() {
            let t = self.flows[self.next_flow].start;
            self.push(t, Ev::NextFlows);
        }
    }

    /// Take the next packet of endpoint `e` (round robin over destinations).
    fn next_packet(&mut self, e: u32) -> Option<u32> {
        let ep = &mut self.eps[e as usize];
        let dst = ep.rr.pop_front()?;
        let q = ep.voq.get_mut(&dst).expect("rr names a destination with a queue");
        let f = *q.front().expect("queues in rr are non-empty");
        let fl = &mut self.flows[f as usize];
        let payload = (fl.size - fl.injected).min(self.mtu as u64) as u32;
        fl.injected += payload as u64;
        if fl.injected == fl.size {
            q.pop_front();
        }
        if q.is_empty() {
            ep.voq.remove(&dst);
        } else {
            ep.rr.push_back(dst);
        }
        let src_node = ep.node;
        let dst_node = self.eps[dst as usize].node;
        if self.collect_tm {
            *self.tm.entry((src_node, dst_node)).or_default() += payload as u64;
        }
        Some(self.alloc(Packet {
            flow: f,
            src_node,
            dst_node,
            dst_ep: dst,
            payload,
            wire: payload + self.header,
            tag: 0,
            at: src_node,
            route: NONE,
            pos: 0,
            q_port: NONE,
            q_dep: WILD,
            hops: 0,
            to_host: false,
            doomed: false,
        }))
    }

    /// Endpoint `e` injects its next packet if its link is free and the egress has room.
    fn inject(&mut self, e: u32) {
        let ep = &self.eps[e as usize];
        if ep.busy_until > self.now {
            let t = ep.busy_until;
            self.schedule_inject(e, t);
            return;
        }
        let held = ep.held;
        self.eps[e as usize].blocked = false;
        let pid = if held != NONE {
            let h = held;
            self.eps[e as usize].held = NONE;
            h
        } else {
            match self.next_packet(e) {
                Some(p) => p,
                None => return,
            }
        };
        let (node, rate, prop) = (self.eps[e as usize].node, self.eps[e as usize].rate, self.eps[e as usize].prop);
        let wire = self.pool[pid as usize].wire as u64;
        let ser = rate.tx(wire);
        let t_arr = if self.hosts_mode { self.now + ser + prop } else { self.now };
        let tag = if t_arr == self.now { self.slice_now().idx } else { self.sched.slice_at(t_arr).idx };
        self.pool[pid as usize].tag = tag;
        let ep_busy = self.now + ser;
        if self.pool[pid as usize].dst_node == node {
            // same node (hosts mode): straight to the host downlink
            if self.hosts_mode {
                self.eps[e as usize].busy_until = ep_busy;
                self.packet_hops += 1;
                self.pool[pid as usize].q_port = NONE;
                self.push(t_arr, Ev::HostArrive(pid));
                self.schedule_inject(e, ep_busy);
                return;
            }
        }
        match self.route(node, pid) {
            None => {
                self.drop_pkt(pid, DROP_NO_ROUTE);
                self.schedule_inject(e, self.now);
            }
            Some(act) => {
                let port = &mut self.ports[act.port as usize];
                if port.bytes + wire > port.cap {
                    // ideal back-pressure: hold the packet until this port sends something
                    port.blocked.push(e);
                    let ep = &mut self.eps[e as usize];
                    ep.held = pid;
                    ep.blocked = true;
                    return;
                }
                port.bytes += wire;
                self.eps[e as usize].busy_until = ep_busy;
                if self.hosts_mode {
                    self.packet_hops += 1;
                    let p = &mut self.pool[pid as usize];
                    p.q_port = act.port;
                    p.q_dep = act.dep;
                    self.push(t_arr, Ev::HostArrive(pid));
                } else {
                    self.enqueue_reserved(act.port, pid, act.dep);
                }
                if !self.eps[e as usize].rr.is_empty() {
                    self.schedule_inject(e, ep_busy);
                }
            }
        }
    }

    fn on_host_arrive(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        if p.q_port == NONE {
            // intra-node traffic: hand to the host downlink of the destination
            let dp = self.eps[p.dst_ep as usize].down_port;
            self.enqueue(dp, pid, WILD);
        } else {
            self.enqueue_reserved(p.q_port, pid, p.q_dep);
        }
    }

    // ---------------------------------------------------------------- routing

    /// Decide the next hop of packet `pid` at `node`; `None` when nothing matches.
    fn route(&mut self, node: u32, pid: u32) -> Option<Action> {
        let p = self.pool[pid as usize];
        let mut cands = std::mem::take(&mut self.scratch);
        let res = match &self.router {
            Router::Source(routes) => {
                if p.route == NONE {
                    let mut ids = std::mem::take(&mut self.scratch_ids);
                    routes.candidates(node, p.dst_node, p.tag, &mut ids);
                    let pick = if ids.is_empty() { None } else {
                        let k = self.choose(ids.len() as u32, p.flow, node);
                        Some(ids[k as usize])
                    };
                    self.scratch_ids = ids;
                    pick.and_then(|r| {
                        let pk = &mut self.pool[pid as usize];
                        pk.route = r;
                        pk.pos = 1;
                        routes_hop(&self.router, r, 0)
                    })
                } else {
                    let pk = &mut self.pool[pid as usize];
                    pk.pos += 1;
                    routes_hop(&self.router, p.route, p.pos)
                }
            }
            Router::Table(t) => {
                t[node as usize].lookup(p.src_node, p.dst_node, p.tag, &mut cands);
                self.pick(&cands, p.flow, node)
            }
            Router::Direct(ci) => ci.first_direct(node, p.dst_node, p.tag),
            Router::Vlb(ci) => {
                if p.src_node == node {
                    ci.vlb_spray(node, p.dst_node, p.tag, &mut cands);
                    self.pick(&cands, p.flow, node)
                } else {
                    ci.first_direct(node, p.dst_node, p.tag)
                }
            }
        };
        self.scratch = cands;
        res
    }

    fn pick(&mut self, cands: &[Action], flow: u32, node: u32) -> Option<Action> {
        match cands.len() {
            0 => None,
            1 => Some(cands[0]),
            n => Some(cands[self.choose(n as u32, flow, node) as usize]),
        }
    }

    #[inline]
    fn choose(&mut self, n: u32, flow: u32, node: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        match self.multipath {
            Multipath::Packet => self.rng_route.below(n),
            Multipath::Flow => (mix64(self.seed ^ ((flow as u64) << 32 | node as u64)) % n as u64) as u32,
        }
    }

    /// The candidate actions at `node` for a packet (src node, dst node) that arrived in
    /// slice `arr` — what the router would choose among (for equivalence tests).
    pub fn candidates(&mut self, node: u32, src: u32, dst: u32, arr: u32) -> Vec<Action> {
        let mut out = Vec::new();
        match &self.router {
            Router::Table(t) => t[node as usize].lookup(src, dst, arr, &mut out),
            Router::Direct(ci) => out.extend(ci.first_direct(node, dst, arr)),
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
        }
        out
    }

    // ---------------------------------------------------------------- ports

    /// Enqueue a packet arriving from a link; drops it if the port's buffer is full.
    fn enqueue(&mut self, port: u32, pid: u32, dep: u32) {
        let wire = self.pool[pid as usize].wire as u64;
        let pt = &mut self.ports[port as usize];
        if pt.bytes + wire > pt.cap {
            self.drop_pkt(pid, DROP_BUFFER);
            return;
        }
        pt.bytes += wire;
        self.enqueue_reserved(port, pid, dep);
    }

    /// Enqueue a packet whose buffer space is already counted.
    fn enqueue_reserved(&mut self, port: u32, pid: u32, dep: u32) {
        let slices = self.sched.slices() as usize;
        let pt = &mut self.ports[port as usize];
        pt.queued += 1;
        if pt.kind == PortKind::Optical && dep != WILD {
            if pt.cal.is_empty() {
                pt.cal = vec![VecDeque::new(); slices];
            }
            let q = &mut pt.cal[dep as usize];
            q.push_back(pid);
            if q.len() == 1 {
                self.pending[dep as usize].push(port);
            }
        } else {
            pt.fifo.push_back(pid);
            if pt.kind == PortKind::Optical && pt.fifo.len() == 1 && !self.sched.is_static() {
                let nxt = (self.slice_now().idx + 1) % self.sched.slices();
                self.pending[nxt as usize].push(port);
            }
        }
        self.try_send(port);
    }

    /// At most one transmit-done event per port is pending; when it fires while the port
    /// is still busy, `try_send` schedules the next one.
    #[inline]
    fn schedule_txdone(&mut self, port: u32, t: Ps) {
        if self.ports[port as usize].txdone_at == Ps::MAX {
            self.ports[port as usize].txdone_at = t;
            self.push(t, Ev::TxDone(port));
        }
    }

    /// At most one injection event per endpoint is pending.
    #[inline]
    fn schedule_inject(&mut self, e: u32, t: Ps) {
        if !self.eps[e as usize].scheduled {
            self.eps[e as usize].scheduled = true;
            self.push(t, Ev::Inject(e));
        }
    }

    /// Start the next transmission on `port` if it can send now.
    fn try_send(&mut self, port: u32) {
        let now = self.now;
        let pt = &self.ports[port as usize];
        if pt.busy_until > now {
            if pt.queued > 0 {
                let t = pt.busy_until;
                self.schedule_txdone(port, t);
            }
            return;
        }
        if now < pt.down_until {
            if pt.wake_at != pt.down_until {
                let t = pt.down_until;
                self.ports[port as usize].wake_at = t;
                self.push(t, Ev::Wake(port));
            }
            return;
        }
        match pt.kind {
            PortKind::Optical => self.try_send_optical(port),
            PortKind::Electrical | PortKind::HostDown => {
                let Some(&pid) = self.ports[port as usize].fifo.front() else { return };
                let pt = &mut self.ports[port as usize];
                pt.fifo.pop_front();
                let rx = pt.peer;
                let ser = pt.rate.tx(self.pool[pid as usize].wire as u64);
                self.transmit(port, pid, rx, ser, None);
            }
            PortKind::Unused => {}
        }
    }

    fn try_send_optical(&mut self, port: u32) {
        let now = self.now;
        let s = self.slice_now();
        let up = s.start + self.sched.guardband();
        let pt = &mut self.ports[port as usize];
        if pt.active_abs != s.abs {
            pt.active_abs = s.abs;
            pt.active_idx = s.idx;
            self.active.push(port);
        }
        let from_cal = !pt.cal.is_empty() && !pt.cal[s.idx as usize].is_empty();
        if !from_cal && pt.fifo.is_empty() {
            return;
        }
        if now < up {
            if pt.wake_at != up {
                pt.wake_at = up;
                self.push(up, Ev::Wake(port));
            }
            return;
        }
        let rx = self.sched.peer(port, s.idx);
        if rx == NONE {
            if from_cal {
                // routing sent packets to a slice in which this port has no circuit
                let q = std::mem::take(&mut self.ports[port as usize].cal[s.idx as usize]);
                for pid in q {
                    let w = self.pool[pid as usize].wire as u64;
                    self.ports[port as usize].bytes -= w;
                    self.ports[port as usize].queued -= 1;
                    self.drop_pkt(pid, DROP_NO_CIRCUIT);
                }
            }
            return;
        }
        let pt = &self.ports[port as usize];
        let pid = if from_cal { pt.cal[s.idx as usize][0] } else { pt.fifo[0] };
        let ser = pt.rate.tx(self.pool[pid as usize].wire as u64);
        if now + ser > s.end {
            return; // does not fit: waits for the next occurrence of its slice
        }
        let pt = &mut self.ports[port as usize];
        if from_cal {
            pt.cal[s.idx as usize].pop_front();
        } else {
            pt.fifo.pop_front();
        }
        self.transmit(port, pid, rx, ser, Some((s.abs, up, s.end)));
    }

    /// Put packet `pid` on the wire of `port` towards `rx` (a port, or a host for downlinks).
    fn transmit(&mut self, port: u32, pid: u32, rx: u32, ser: Ps, slot: Option<(u64, Ps, Ps)>) {
        let now = self.now;
        let wire = self.pool[pid as usize].wire as u64;
        let pt = &mut self.ports[port as usize];
        pt.bytes -= wire;
        pt.queued -= 1;
        pt.busy_until = now + ser;
        pt.tx_bytes += wire;
        pt.last_pkt = pid;
        let prop = pt.prop;
        let kind = pt.kind;
        let more = pt.queued > 0;
        let blocked = std::mem::take(&mut pt.blocked);
        self.packet_hops += 1;
        if let Some((abs, up, end)) = slot {
            if now < up || now + ser > end || now < self.ports[port as usize].down_until {
                self.gb_violations += 1;
            }
            let r = &mut self.ports[rx as usize];
            if r.rx_abs == abs && r.rx_sender != port {
                self.collisions += 1;
            }
            r.rx_abs = abs;
            r.rx_sender = port;
        }
        let tag = if kind == PortKind::Optical || self.sched.is_static() {
            self.slice_now().idx
        } else {
            self.sched.slice_at(now + ser + prop).idx
        };
        let to_host = kind == PortKind::HostDown;
        let at = if to_host { rx } else { self.port_node[rx as usize] };
        let p = &mut self.pool[pid as usize];
        p.tag = tag;
        p.at = at;
        p.to_host = to_host;
        p.hops += 1;
        self.push(now + ser + prop, Ev::Arrive(pid));
        if more {
            self.schedule_txdone(port, now + ser);
        }
        for e in blocked {
            self.schedule_inject(e, now);
        }
    }

    fn on_arrive(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        if p.doomed {
            self.drop_pkt(pid, DROP_RECONF);
            return;
        }
        if p.to_host {
            self.deliver(pid);
            return;
        }
        if p.at == p.dst_node {
            if self.hosts_mode {
                let dp = self.eps[p.dst_ep as usize].down_port;
                self.enqueue(dp, pid, WILD);
            } else {
                self.deliver(pid);
            }
            return;
        }
        match self.route(p.at, pid) {
            Some(a) => self.enqueue(a.port, pid, a.dep),
            None => self.drop_pkt(pid, DROP_NO_ROUTE),
        }
    }

    fn deliver(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        let fl = &mut self.flows[p.flow as usize];
        fl.delivered += p.payload as u64;
        fl.max_hops = fl.max_hops.max(p.hops);
        self.delivered += p.payload as u64;
        if fl.delivered == fl.size {
            fl.finish = self.now;
            self.flows_completed += 1;
        }
        self.release(pid);
    }

    // ---------------------------------------------------------------- slices

    fn on_slice_boundary(&mut self) {
        let s = self.slice_now();
        // ports that were active in the previous slice and still hold packets for it (or
        // for any slice) come back when their slice does
        let active = std::mem::take(&mut self.active);
        let nslices = self.sched.slices();
        for &p in &active {
            let pt = &self.ports[p as usize];
            let old = pt.active_idx;
            if !pt.cal.is_empty() && !pt.cal[old as usize].is_empty() && old != s.idx {
                self.pending[old as usize].push(p);
            }
            if !pt.fifo.is_empty() {
                self.pending[s.idx as usize].push(p);
            }
        }
        self.active = active;
        self.active.clear();
        let mut kick = std::mem::take(&mut self.pending[s.idx as usize]);
        kick.sort_unstable();
        kick.dedup();
        // keep the allocation of the kick list for the slice's pending list
        self.to_kick.extend_from_slice(&kick);
        kick.clear();
        self.pending[s.idx as usize] = kick;
        let up = s.start + self.sched.guardband();
        if !self.to_kick.is_empty() {
            if up == self.now {
                let k = std::mem::take(&mut self.to_kick);
                for &p in &k {
                    self.try_send(p);
                }
                self.to_kick = k;
                self.to_kick.clear();
            } else {
                self.push(up, Ev::SliceUp);
            }
        }
        let _ = nslices;
        self.push(s.end, Ev::SliceBoundary);
    }

    // ---------------------------------------------------------------- monitoring, control

    fn on_sample(&mut self) {
        for &w in &self.watch {
            let pt = &mut self.ports[w as usize];
            self.out_ts.0.push(self.now);
            self.out_ts.1.push(w);
            self.out_ts.2.push(pt.bytes);
            self.out_ts.3.push(pt.tx_bytes - pt.tx_bytes_sampled);
            pt.tx_bytes_sampled = pt.tx_bytes;
        }
        let t = self.now + self.sample_interval;
        self.push(t, Ev::Sample);
    }

    /// Take the traffic matrix collected since the last call: (src node, dst node, bytes).
    pub fn take_tm(&mut self) -> Vec<(u32, u32, u64)> {
        std::mem::take(&mut self.tm).into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// Reconfigure a static schedule at time `at` (≥ now): the new peer table, with the
    /// changed circuits down for `delay` ps.
    pub fn reconfigure(&mut self, at: Ps, peer: Vec<u32>, delay: Ps) -> Result<(), SpecError> {
        if !self.sched.is_static() {
            return Err(SpecError::new("reconfigure", "cyclic schedule", "only static schedules are reconfigured at run time"));
        }
        if peer.len() != self.ports.len() {
            return Err(SpecError::new("reconfigure.peer", peer.len(), format!("expected {} entries", self.ports.len())));
        }
        for (gp, &q) in peer.iter().enumerate() {
            if q != NONE && (!self.optical[gp] || !self.optical.get(q as usize).copied().unwrap_or(false)) {
                return Err(SpecError::new(format!("reconfigure.peer[{gp}]"), q, "circuits must join two optical ports"));
            }
        }
        // check the pairing now so a bad table fails at the call, not mid-run
        Schedule::fixed(self.ports.len(), peer.clone())?;
        let at = at.max(self.now);
        self.reconfigs.push((peer, delay));
        let i = (self.reconfigs.len() - 1) as u32;
        self.push(at, Ev::Reconfig(i));
        Ok(())
    }

    fn on_reconfig(&mut self, i: u32) {
        let (peer, delay) = std::mem::take(&mut self.reconfigs[i as usize]);
        let changed = self.sched.reconnect(peer).expect("validated in reconfigure()");
        let now = self.now;
        for gp in changed {
            let pt = &mut self.ports[gp as usize];
            pt.down_until = now + delay;
            if pt.busy_until > now && pt.last_pkt != NONE {
                self.pool[pt.last_pkt as usize].doomed = true;
            }
        }
        if let Router::Vlb(_) | Router::Direct(_) = self.router {
            let ci = ConnIndex::new(&self.sched, &self.port_node, &self.port_offset, &self.optical);
            self.router = match self.router { Router::Vlb(_) => Router::Vlb(ci), _ => Router::Direct(ci) };
        }
    }

    /// Replace the table router's entries (a traffic-aware control loop installing routes).
    pub fn set_tables(&mut self, items: &[(u32, Entry)]) -> Result<(), SpecError> {
        let t = build_tables(self.port_offset.len() - 1, &self.port_offset, items)?;
        self.router = Router::Table(t);
        Ok(())
    }

    // ---------------------------------------------------------------- results

    /// Counters, per-flow columns, time series and invariant checks at the current time.
    pub fn output(&self) -> SimOutput {
        let mut in_flight: u64 = self.flows[..self.next_flow].iter().map(|f| f.size - f.injected).sum();
        let mut live = 0u64;
        let free: std::collections::BTreeSet<u32> = self.free.iter().copied().collect();
        for (i, p) in self.pool.iter().enumerate() {
            if !free.contains(&(i as u32)) {
                in_flight += p.payload as u64;
                live += 1;
            }
        }
        let dropped: u64 = self.drops.iter().sum();
        let mut errors = Vec::new();
        if self.offered != self.delivered + dropped + in_flight {
            errors.push(format!("byte conservation: offered {} != delivered {} + dropped {} + in flight {}",
                                self.offered, self.delivered, dropped, in_flight));
        }
        if live != self.live {
            errors.push(format!("packet pool: {} live packets counted, {} tracked", live, self.live));
        }
        let flow_delivered: u64 = self.flows.iter().map(|f| f.delivered).sum();
        if flow_delivered != self.delivered {
            errors.push(format!("per-flow delivered {} != delivered {}", flow_delivered, self.delivered));
        }
        if self.collisions > 0 {
            errors.push(format!("{} optical collisions", self.collisions));
        }
        if self.gb_violations > 0 {
            errors.push(format!("{} guardband violations", self.gb_violations));
        }
        SimOutput {
            now_ps: self.now,
            events: self.events,
            packet_hops: self.packet_hops,
            flows_started: self.flows_started,
            flows_completed: self.flows_completed,
            bytes_offered: self.offered,
            bytes_delivered: self.delivered,
            bytes_dropped: dropped,
            bytes_in_flight: in_flight,
            drops: DROP_REASONS.iter().zip(self.drops.iter()).map(|(r, &v)| (r.to_string(), v)).collect(),
            collisions: self.collisions,
            guardband_violations: self.gb_violations,
            trace_hash: self.trace,
            peak_packets: self.peak_live,
            event_counts: self.event_counts.to_vec(),
            flow_finish_ps: self.flows.iter().map(|f| f.finish).collect(),
            flow_delivered: self.flows.iter().map(|f| f.delivered).collect(),
            flow_hops: self.flows.iter().map(|f| f.max_hops).collect(),
            ts_time_ps: self.out_ts.0.clone(),
            ts_port: self.out_ts.1.clone(),
            ts_queued_bytes: self.out_ts.2.clone(),
            ts_tx_bytes: self.out_ts.3.clone(),
            invariant_errors: errors,
        }
    }

    /// Bytes currently queued at `port` (global id).
    pub fn port_bytes(&self, port: u32) -> u64 {
        self.ports[port as usize].bytes
    }
}

fn routes_hop(router: &Router, id: u32, pos: u32) -> Option<Action> {
    match router {
        Router::Source(r) => r.hop(id, pos),
        _ => None,
    }
}
