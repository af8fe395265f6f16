//! Opera (NSDI'20): expander slices of a staggered rotor fabric, NDP for low-latency flows
//! over multi-hop paths of the current slice, RotorLB for bulk flows, host-side buffering.
//!
//! Layout: N ToRs, U rotor uplinks and H hosts per ToR; host h sits below ToR h / H.
//! Every link (host NIC, ToR port) runs at one rate; ToR-ToR links have propagation `prop`,
//! host links `host_prop`. Rotor timing and paths: [`topo`].
//!
//! **Low-latency flows** (size < cutoff) use NDP: the sender starts with an initial window
//! of packets; the receiver answers every data packet with an ACK and every trimmed header
//! with a NACK (both sent at once), and owes one pull per arrival to its pull pacer, which
//! allows one pull per full-packet time at the host link rate (× `pull_rate`): when the
//! pacer is free the pull rides on that ACK/NACK (htsim's pull bit), otherwise a PULL packet
//! is queued and released in arrival order. One pacer per receiving host (NDP), or one per
//! flow with `pacer_per_flow` (as opera-sim instantiates them). A PULL with number k lets
//! the sender send until it has sent k packets beyond its window; retransmissions
//! (NACKed or bounced sequence numbers) go first. Host NICs serve control > retransmitted
//! data > new data > bulk. Each ToR port has a data queue of `queue_pkts` full packets and a
//! header/control queue of `hi_cap_bytes`; an arriving data packet that finds the data queue
//! full is trimmed to its header (or, with probability ½, the last queued data packet is
//! trimmed instead and the arrival queued, as htsim's NDP queue does); headers and control
//! are served 640 B : 1500 B against data (htsim's ratio); a header that finds the header
//! queue full is returned to its sender (return-to-sender), which resends at once; a
//! control packet or bounce that finds it full is dropped and the flow's retransmission
//! timer (`rto`) recovers.
//!
//! *Routing (DECIDE):* a packet gets its source route when it reaches its first ToR: the
//! shortest path of the superslice current at that instant over the U − 1 rotors that
//! stay up through the next superslice's ε + δ (the one reconfiguring at the end of this
//! superslice is excluded, as in Opera's path tables). Each hop is the rotor that path
//! names. At every uplink, a packet is put on the wire only if the circuit is up, still
//! leads to the ToR its path expects, and stays up until its last bit is sent; otherwise
//! it is **re-routed at that ToR** over the current slice's shortest path (counted in
//! `reroutes`) instead of being sent into a circuit that is going or gone. So no bit is
//! ever sent on a circuit that is down. With the generator's ε (longest path at full
//! queues) this never triggers in the paper's traces (0 reroutes on ws10/dm10 first 50 ms).
//!
//! *Queues (DECIDE):* the header/control queue holds the same bytes as the data queue
//! (8 × 1500 B, as opera-sim sizes it), not 8 headers. *Pull spacing:* one full packet
//! (1500 B) per pull at `pull_rate` 1; opera-sim spaces pulls by the 1436 B payload.
//! *FCT:* the last byte reaching the receiver; the sender-side completion (every ACK back,
//! what opera-sim prints) is reported per flow as well.
//!
//! Events: a transmission schedules its packet's arrival at the next node directly (end of
//! serialization + propagation); a port or NIC schedules a wake-up for its next
//! transmission only when more is queued. Idle parts of the fabric cost nothing.
//!
//! **Bulk flows** (size ≥ cutoff) use RotorLB at the hosts. At the start of every
//! superslice one rotor begins a new matching, held for (U − 1)·D + ε; for every ToR pair
//! (a, b) it connects, hosts of a commit packets to hosts of b: first relayed (non-local)
//! packets for hosts of b (≤ max/H per destination), then their own direct traffic to b
//! (fair share of the sender and receiver capacity `max` = hold × rate / U packets), then
//! offer the rest of their own traffic for two-hop VLB; each host of b accepts offers
//! while its relay backlog for that final destination stays under 2·max/H packets. A
//! host spreads each commitment of n packets evenly over the hold (as opera-sim's commit
//! queues do), at most one packet per U packet times per rotor, lowest priority at its NIC,
//! into that rotor's uplink, where bulk waits behind all NDP traffic; a bulk packet whose
//! circuit no longer leads to the committed ToR when it reaches the head returns to its
//! host's queue. Relays hold packets in host memory. Bulk therefore crosses at most two
//! ToR-to-ToR hops (direct or via one intermediate rack). The offer/accept step runs only
//! while some host holds bulk data: no work per slice when nothing bulk is queued.
//!
//! **Monitoring.** With `sample_interval_ps` > 0 a sample is taken every interval (and once
//! more at the end of the run, [`Opera::final_sample`]): per watched ToR port, the bytes
//! queued there (data + header/control + bulk waiting, not the packet on the wire) and the
//! wire bytes it sent during the interval; network-wide, the bytes queued at all ToR
//! ports and sent by them, trims, bounces, delivered payload bytes, congestion events and
//! push-back messages during the interval, and the bulk bytes held at hosts. Samples are
//! not events of the simulated network (neither `events` nor `trace_hash` see them); their
//! cost is O(watched ports) each, nothing when sampling is off (two counters per transmission).
//!
//! **OpenOptics services (OO §5.2; DECIDE how they map onto Opera).** *Congestion
//! detection*: an NDP data packet finds its ToR data queue full (`congestion_events`);
//! Opera's response is the trimming it always does, so detection alone changes nothing
//! but the counter. *Push-back*: on such an event the ToR sends a push-back message
//! (header-sized control packet, routed like NDP control over the current slice, lost if
//! a header queue is full) to the ToR of the trimmed packet's source, at most one per
//! (congested port, source ToR, destination ToR) and superslice; the source ToR forwards it
//! to all its hosts, which hold *new* NDP data for the congested destination ToR until the
//! end of the superslice in which the congestion happened (retransmissions, control and
//! bulk still go; held packets return to the front of the NIC queue in order). Flow
//! pausing, EQO queue estimation and buffer offloading have no meaning here and are
//! refused by the Python layer: RotorLB already holds bulk at hosts until a direct circuit
//! is up, the ToR ports are FIFO NDP queues (exact occupancy, no calendar queues).
//!
//! Invariants checked every run: no bit sent while a circuit is down (guardband
//! violations), no uplink transmission whose circuit does not pair both ends (collisions),
//! bulk bytes conserved exactly (offered = delivered + unsent + relayed + committed + in the
//! network), every completed flow delivered exactly its size (duplicates counted apart),
//! queued bytes tracked for the time series equal the sum over the ports' queues.

pub mod topo;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::error::SpecError;
use crate::event::EventList;
use crate::metrics::RunTotals;
use crate::rng::{mix64, Stream};
use crate::units::{Ps, Rate, NONE};
use topo::{Rotors, NO_HOP};

/// When a run may stop before its duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Duration,
    /// All flows started and every low-latency (NDP) flow completed.
    NdpDone,
    /// All flows started and completed.
    AllDone,
}

/// A validated Opera run description (plain data).
#[derive(Debug, Clone)]
pub struct OperaSpec {
    pub tors: u32,
    pub uplinks: u32,
    pub hosts_per_tor: u32,
    /// `tors / uplinks` rows of `tors * uplinks` ToR ids; empty = generate.
    pub matchings: Vec<u32>,
    pub link_rate_bps: u64,
    pub prop_ps: Ps,
    pub host_prop_ps: Ps,
    /// ε and δ (0 = auto from the longest path) and the reconfiguration time r.
    pub eps_ps: Ps,
    pub delta_ps: Ps,
    pub reconf_ps: Ps,
    /// Full packet on the wire and header bytes (payload = packet − header).
    pub packet_bytes: u32,
    pub header_bytes: u32,
    pub queue_pkts: u32,
    pub hi_cap_bytes: u32,
    pub cutoff_bytes: u64,
    pub initial_window: u32,
    pub pull_rate: f64,
    /// One pull pacer per flow (opera-sim) instead of one per receiving host (NDP).
    pub pacer_per_flow: bool,
    pub rto_ps: Ps,
    pub stop: Stop,
    pub seed: u64,
    /// Time-series sampling interval (0: off) and the ToR ports sampled
    /// (`tor * (hosts_per_tor + uplinks) + k`, host ports first, then rotor uplinks).
    pub sample_interval_ps: Ps,
    pub watch_ports: Vec<u32>,
    /// OpenOptics services (see the module doc): count congestion events; push back sources.
    pub congestion_detection: bool,
    pub pushback: bool,
    pub flow_start_ps: Vec<Ps>,
    pub flow_src: Vec<u32>,
    pub flow_dst: Vec<u32>,
    pub flow_size: Vec<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Header,
    Ack,
    Nack,
    Pull,
    Bounce,
    Bulk,
    /// Push-back message: `seq` = congested destination ToR, `pull` = superslice it pauses.
    PushBack,
}

#[derive(Clone, Copy)]
struct Pkt {
    flow: u32,
    /// Data/Header/Ack/Nack/Bounce: packet index.
    seq: u32,
    /// Ack/Nack/Pull: the cumulative pull number it carries (0: none).
    pull: u32,
    kind: Kind,
    hops: u8,
    wire: u16,
    payload: u16,
    /// Host it is heading to (bulk: the committed host in the next rack).
    dst: u32,
    /// Superslice index of its source route (NONE: not routed yet).
    route: u32,
    /// Bulk: final destination host, holder host that sent it, rotor and expected ToR.
    fin: u32,
    holder: u32,
    rotor: u8,
    want: u32,
}

#[derive(Clone, Copy)]
enum Ev {
    Start(u32),
    PortFree(u32),
    AtTor(u32, u32),
    AtHost(u32, u32),
    Pacer(u32),
    NicWake(u32),
    Rlb,
    Rto(u32),
    Sample,
}

#[derive(Default)]
struct Port {
    hi: VecDeque<u32>,
    lo: VecDeque<u32>,
    rlb: VecDeque<u32>,
    hi_bytes: u32,
    lo_bytes: u32,
    crt: u32,
    rlb_bytes: u32,
    /// Wire bytes transmitted so far, and at the last sample.
    tx_bytes: u64,
    tx_sampled: u64,
    /// End of the current transmission; a wake-up (PortFree) is pending at `wake` (0: none).
    free_at: Ps,
    wake: Ps,
}

/// One committed bulk packet: (flow, payload, final destination, committed host).
#[derive(Clone, Copy)]
struct Item {
    flow: u32,
    payload: u32,
    fin: u32,
    label: u32,
    /// Earliest send time: a commitment of n packets is spread evenly over the hold.
    at: Ps,
}

#[derive(Default)]
struct Host {
    hi: VecDeque<u32>,
    mid: VecDeque<u32>,
    lo: VecDeque<u32>,
    /// End of the NIC's current transmission; a NicWake is pending at `wake` (0: none).
    free_at: Ps,
    wake: Ps,
    // RotorLB
    commits: Vec<VecDeque<Item>>,
    commit_next: Vec<Ps>,
    commit_end: Vec<Ps>,
    rr: u32,
    local: Vec<u32>,
    relay: BTreeMap<u32, VecDeque<(u32, u32)>>,
    relay_pkts: u32,
    active: bool,
    /// Push-back: per destination ToR, new data is held until this time (empty: never paused);
    /// held packets with the time their pause ends.
    paused: Vec<Ps>,
    held: VecDeque<(u32, Ps)>,
}

/// A receiver's pull pacer: flows owed a pull, in arrival order, released one per gap.
#[derive(Default)]
struct Pacer {
    queue: VecDeque<u32>,
    next: Ps,
    pending: bool,
}

#[derive(Default)]
struct Flow {
    src: u32,
    dst: u32,
    size: u64,
    start: Ps,
    npk: u32,
    bulk: bool,
    next_new: u32,
    last_pull: u32,
    rtx: VecDeque<u32>,
    acked: Vec<u64>,
    rto_pending: bool,
    got: Vec<u64>,
    received: u32,
    delivered: u64,
    pulls_issued: u32,
    finish: Ps,
    unsent: u64,
    max_hops: u32,
    rtx_count: u32,
    acked_n: u32,
    /// When the sender held an ACK for every packet (NDP; opera-sim's completion time).
    acked_at: Ps,
    started: bool,
}

/// What an Opera run reports: the common totals plus named metrics and the hop histogram
/// of delivered data packets (NDP: ToR-to-ToR hops; bulk separately).
#[derive(Debug, Clone, Default)]
pub struct OperaOutput {
    pub totals: RunTotals,
    pub metrics: Vec<(String, f64)>,
    pub ndp_hops_hist: Vec<u64>,
    pub bulk_hops_hist: Vec<u64>,
    pub flow_bulk: Vec<bool>,
    pub flow_rtx: Vec<u32>,
    /// Per flow: when its sender held every ACK (`u64::MAX`: not yet or bulk).
    pub flow_acked_ps: Vec<Ps>,
    /// Wire bytes each ToR port transmitted during the run.
    pub port_tx_bytes: Vec<u64>,
    /// Per watched port and sample: time, port, queued bytes, bytes sent in the interval.
    pub ts: (Vec<Ps>, Vec<u32>, Vec<u64>, Vec<u64>),
    /// Network-wide samples.
    pub series: Vec<NetSample>,
}

/// One network-wide sample: levels at `time_ps`, counters over the interval ending there.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetSample {
    pub time_ps: Ps,
    /// Bytes queued at all ToR ports (data + header/control + bulk).
    pub queued_bytes: u64,
    /// Wire bytes sent by all ToR ports in the interval.
    pub tx_bytes: u64,
    pub trims: u64,
    pub bounces: u64,
    pub delivered_bytes: u64,
    /// Bulk bytes held at hosts (unsent, relayed, committed).
    pub bulk_host_bytes: u64,
    pub congestion_events: u64,
    pub pushback_msgs: u64,
}
crate::with_totals!(OperaOutput);

#[inline]
fn bit(v: &[u64], i: u32) -> bool {
    v[(i / 64) as usize] >> (i % 64) & 1 == 1
}
#[inline]
fn set_bit(v: &mut [u64], i: u32) {
    v[(i / 64) as usize] |= 1 << (i % 64);
}

/// The Opera engine.
pub struct Opera {
    rot: Rotors,
    n: u32,
    u: u32,
    hpr: u32,
    ppt: u32,
    rate: Rate,
    prop: Ps,
    host_prop: Ps,
    hdr: u32,
    mss: u32,
    lo_cap: u32,
    hi_cap: u32,
    iw: u32,
    pull_gap: Ps,
    rto: Ps,
    stop: Stop,
    ev: EventList<Ev>,
    now: Ps,
    stopped: bool,
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    ports: Vec<Port>,
    hosts: Vec<Host>,
    pacers: Vec<Pacer>,
    flow_pacer: bool,
    flows: Vec<Flow>,
    order: Vec<u32>,
    next_start: usize,
    rng: Stream,
    t: RunTotals,
    // RotorLB
    rlb_pending: bool,
    tor_active: Vec<u32>,
    hold: Ps,
    max_pkts: u32,
    rlb_pace: Ps,
    send_cap: Vec<u32>,
    recv_cap: Vec<u32>,
    // counters
    ndp_flows: u64,
    ndp_done: u64,
    bulk_flows_done: u64,
    trims: u64,
    bounces: u64,
    ctrl_drops: u64,
    reroutes: u64,
    unroutable: u64,
    rtx_sent: u64,
    rto_fired: u64,
    dup_bytes: u64,
    pulls: u64,
    acks: u64,
    nacks: u64,
    rlb_slices: u64,
    rlb_commit_pkts: u64,
    bulk_returns: u64,
    bulk_relayed: u64,
    bulk_offered: u64,
    bulk_delivered: u64,
    bulk_unsent: u64,
    bulk_relay_bytes: u64,
    bulk_commit_bytes: u64,
    bulk_net_bytes: u64,
    ndp_hops: Vec<u64>,
    bulk_hops: Vec<u64>,
    peak_pkts: usize,
    // monitoring
    sample_iv: Ps,
    watch: Vec<u32>,
    queued_total: u64,
    tx_total: u64,
    last_sample: NetSample,
    ts: (Vec<Ps>, Vec<u32>, Vec<u64>, Vec<u64>),
    series: Vec<NetSample>,
    // services
    detect: bool,
    pushback: bool,
    congestion_events: u64,
    pushback_msgs: u64,
    pushback_lost: u64,
    pushback_rx: u64,
    paused_pkts: u64,
    /// (congested port, source ToR, destination ToR) that got a push-back in superslice `pb_slice`.
    pb_sent: BTreeSet<(u32, u32, u32)>,
    pb_slice: u64,
}

impl Opera {
    pub fn new(s: OperaSpec) -> Result<Self, SpecError> {
        let nf = s.flow_size.len();
        if s.flow_start_ps.len() != nf || s.flow_src.len() != nf || s.flow_dst.len() != nf {
            return Err(SpecError::new("flows", nf, "flow columns differ in length"));
        }
        if s.hosts_per_tor < 1 {
            return Err(SpecError::new("hosts_per_tor", s.hosts_per_tor, "need at least one host per ToR"));
        }
        if s.link_rate_bps == 0 {
            return Err(SpecError::new("link_rate", 0, "must be positive"));
        }
        if s.header_bytes == 0 || s.packet_bytes <= s.header_bytes || s.packet_bytes > 65_000 {
            return Err(SpecError::new("packet_bytes", s.packet_bytes, "must exceed the header and be at most 65000 B"));
        }
        if s.queue_pkts < 1 {
            return Err(SpecError::new("queue", s.queue_pkts, "need at least one packet of data queue"));
        }
        if s.hi_cap_bytes < s.header_bytes {
            return Err(SpecError::new("header_queue", s.hi_cap_bytes, "must hold at least one header"));
        }
        if s.initial_window < 1 {
            return Err(SpecError::new("initial_window", s.initial_window, "must be >= 1"));
        }
        if !(s.pull_rate > 0.0 && s.pull_rate <= 100.0) {
            return Err(SpecError::new("pull_rate", s.pull_rate, "must be in (0, 100]"));
        }
        if s.rto_ps == 0 {
            return Err(SpecError::new("rto", 0, "must be positive"));
        }
        let n_ports = s.tors as u64 * (s.hosts_per_tor + s.uplinks) as u64;
        if let Some(&w) = s.watch_ports.iter().find(|&&w| w as u64 >= n_ports) {
            return Err(SpecError::new("watch_ports", w, format!("port id must be < {n_ports}")));
        }
        let rate = Rate::new(s.link_rate_bps);
        let full_ser = rate.tx(s.packet_bytes as u64);
        if s.uplinks < 2 || !s.tors.is_multiple_of(s.uplinks) {
            return Err(SpecError::new("uplinks", s.uplinks, format!("must be >= 2 and divide the ToR count {}", s.tors)));
        }
        let rot = if s.matchings.is_empty() {
            Rotors::generated(s.tors, s.uplinks, s.seed, s.eps_ps, s.delta_ps, s.reconf_ps, s.prop_ps, full_ser, s.queue_pkts)?.0
        } else {
            Rotors::new(s.tors, s.uplinks, &s.matchings, s.eps_ps, s.delta_ps, s.reconf_ps, s.prop_ps, full_ser, s.queue_pkts)?
        };
        let hosts_n = s.tors * s.hosts_per_tor;
        let mss = s.packet_bytes - s.header_bytes;
        let mut flows = Vec::with_capacity(nf);
        for i in 0..nf {
            let (a, b, sz) = (s.flow_src[i], s.flow_dst[i], s.flow_size[i]);
            if a >= hosts_n || b >= hosts_n || a == b {
                return Err(SpecError::new(format!("flows[{i}]"), (a, b), format!("src/dst must be distinct hosts 0..{}", hosts_n - 1)));
            }
            if sz == 0 {
                return Err(SpecError::new(format!("flows[{i}].size"), 0, "must be positive"));
            }
            let npk = sz.div_ceil(mss as u64);
            if npk > u32::MAX as u64 / 2 {
                return Err(SpecError::new(format!("flows[{i}].size"), sz, "too large"));
            }
            flows.push(Flow { src: a, dst: b, size: sz, start: s.flow_start_ps[i], npk: npk as u32,
                              bulk: sz >= s.cutoff_bytes, finish: Ps::MAX, acked_at: Ps::MAX, ..Default::default() });
        }
        let mut order: Vec<u32> = (0..nf as u32).collect();
        order.sort_by_key(|&i| s.flow_start_ps[i as usize]);
        let ppt = s.hosts_per_tor + s.uplinks;
        let u = s.uplinks;
        let hold = (u as u64 - 1) * rot.d + rot.eps;
        let max_pkts = ((hold as u128 * s.link_rate_bps as u128) / (8 * 1_000_000_000_000u128 * s.packet_bytes as u128 * u as u128)) as u32;
        let hosts = (0..hosts_n).map(|_| Host {
            commits: (0..u).map(|_| VecDeque::new()).collect(),
            commit_next: vec![0; u as usize],
            commit_end: vec![0; u as usize],
            ..Default::default()
        }).collect();
        let mut t = RunTotals { flow_finish_ps: vec![u64::MAX; nf], flow_delivered: vec![0; nf], flow_hops: vec![0; nf], ..Default::default() };
        t.trace_hash = 0x9e37_79b9;
        let mut ev = EventList::new();
        if let Some(&f) = order.first() {
            ev.push(s.flow_start_ps[f as usize], Ev::Start(f));
        }
        if s.sample_interval_ps > 0 {
            ev.push(s.sample_interval_ps, Ev::Sample);
        }
        Ok(Opera {
            n: s.tors, u, hpr: s.hosts_per_tor, ppt, rate, prop: s.prop_ps, host_prop: s.host_prop_ps,
            hdr: s.header_bytes, mss, lo_cap: s.queue_pkts * s.packet_bytes, hi_cap: s.hi_cap_bytes,
            iw: s.initial_window, pull_gap: ((full_ser as f64) / s.pull_rate).round().max(1.0) as Ps, rto: s.rto_ps,
            stop: s.stop, ev, now: 0, stopped: false, pkts: Vec::new(), free: Vec::new(),
            ports: (0..s.tors * ppt).map(|_| Port::default()).collect(), hosts,
            pacers: (0..if s.pacer_per_flow { nf } else { hosts_n as usize }).map(|_| Pacer::default()).collect(),
            flow_pacer: s.pacer_per_flow, flows, order, next_start: 1,
            rng: Stream::new(s.seed, "opera.trim"), t, rlb_pending: false, tor_active: vec![0; s.tors as usize],
            hold, max_pkts: max_pkts.max(1), rlb_pace: u as u64 * full_ser,
            send_cap: vec![0; hosts_n as usize], recv_cap: vec![0; hosts_n as usize],
            ndp_flows: 0, ndp_done: 0, bulk_flows_done: 0, trims: 0, bounces: 0, ctrl_drops: 0, reroutes: 0, unroutable: 0,
            rtx_sent: 0, rto_fired: 0, dup_bytes: 0, pulls: 0, acks: 0, nacks: 0, rlb_slices: 0, rlb_commit_pkts: 0,
            bulk_returns: 0, bulk_relayed: 0, bulk_offered: 0, bulk_delivered: 0, bulk_unsent: 0,
            bulk_relay_bytes: 0, bulk_commit_bytes: 0, bulk_net_bytes: 0,
            ndp_hops: vec![0; 16], bulk_hops: vec![0; 16], peak_pkts: 0, rot,
            sample_iv: s.sample_interval_ps, watch: s.watch_ports, queued_total: 0, tx_total: 0,
            last_sample: NetSample::default(), ts: Default::default(), series: Vec::new(),
            detect: s.congestion_detection || s.pushback, pushback: s.pushback, congestion_events: 0,
            pushback_msgs: 0, pushback_lost: 0, pushback_rx: 0, paused_pkts: 0, pb_sent: BTreeSet::new(), pb_slice: 0,
        })
    }

    pub fn now(&self) -> Ps {
        self.now
    }

    /// The rotor fabric (timing, circuits, paths).
    pub fn rotors(&self) -> &Rotors {
        &self.rot
    }

    /// Run every event up to and including `until` (or until the stop condition holds).
    pub fn run_until(&mut self, until: Ps) {
        while !self.stopped {
            match self.ev.peek_time() {
                Some(t) if t <= until => {}
                _ => break,
            }
            let (t, e) = self.ev.pop().unwrap();
            self.now = t;
            if let Ev::Sample = e {
                // monitoring only: not an event of the simulated network
                self.sample();
                self.ev.push(t + self.sample_iv, Ev::Sample);
                continue;
            }
            self.t.events += 1;
            self.t.trace_hash = mix64(self.t.trace_hash ^ t ^ (self.t.events << 40));
            self.handle(e);
            if self.stop != Stop::Duration && self.t.flows_started as usize == self.flows.len() {
                let done = match self.stop {
                    Stop::NdpDone => self.ndp_done == self.ndp_flows,
                    _ => self.t.flows_completed as usize == self.flows.len(),
                };
                if done {
                    self.stopped = true;
                }
            }
        }
        if !self.stopped && until > self.now {
            self.now = until;
        }
    }

    /// True once the stop condition held.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    fn handle(&mut self, e: Ev) {
        match e {
            Ev::Start(f) => {
                if self.next_start < self.order.len() {
                    let g = self.order[self.next_start];
                    self.ev.push(self.flows[g as usize].start, Ev::Start(g));
                }
                self.next_start += 1;
                self.start_flow(f);
            }
            Ev::PortFree(p) => {
                let pt = &mut self.ports[p as usize];
                if pt.wake == self.now {
                    pt.wake = 0;
                }
                self.port_kick(p);
            }
            Ev::AtTor(p, tor) => self.at_tor(p, tor),
            Ev::AtHost(p, h) => self.at_host(p, h),
            Ev::Pacer(k) => {
                self.pacers[k as usize].pending = false;
                self.emit_pull(k);
            }
            Ev::NicWake(h) => {
                let hs = &mut self.hosts[h as usize];
                if hs.wake == self.now {
                    hs.wake = 0;
                }
                self.nic_kick(h);
            }
            Ev::Rlb => self.rlb_slice(),
            Ev::Rto(f) => self.rto_fire(f),
            Ev::Sample => unreachable!("samples are taken in run_until"),
        }
    }

    // ------------------------------------------------------------------ packets
    fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(i) = self.free.pop() {
            self.pkts[i as usize] = p;
            i
        } else {
            self.pkts.push(p);
            let live = self.pkts.len();
            self.peak_pkts = self.peak_pkts.max(live);
            (self.pkts.len() - 1) as u32
        }
    }

    fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    fn ctrl(&mut self, kind: Kind, flow: u32, seq: u32, to: u32) -> u32 {
        self.alloc(Pkt { flow, seq, pull: 0, kind, hops: 0, wire: self.hdr as u16, payload: 0, dst: to, route: NONE,
                         fin: to, holder: NONE, rotor: 0, want: NONE })
    }

    #[inline]
    fn tor_of(&self, h: u32) -> u32 {
        h / self.hpr
    }

    // ------------------------------------------------------------------ flows / NDP sender
    fn start_flow(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        fl.started = true;
        self.t.flows_started += 1;
        self.t.bytes_offered += fl.size;
        let words = (fl.npk as usize).div_ceil(64);
        if fl.bulk {
            fl.unsent = fl.size;
            let (src, size) = (fl.src, fl.size);
            self.bulk_offered += size;
            self.bulk_unsent += size;
            self.hosts[src as usize].local.push(f);
            self.rlb_activate(src);
        } else {
            fl.got = vec![0; words];
            fl.acked = vec![0; words];
            self.ndp_flows += 1;
            let n = self.iw.min(fl.npk);
            for _ in 0..n {
                self.send_packet(f);
            }
        }
    }

    fn payload_of(&self, f: u32, seq: u32) -> u32 {
        let fl = &self.flows[f as usize];
        if seq + 1 == fl.npk { (fl.size - (fl.npk as u64 - 1) * self.mss as u64) as u32 } else { self.mss }
    }

    /// Send one packet of flow `f`: a retransmission if any is queued, else new data.
    fn send_packet(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        let (seq, rtx) = if let Some(s) = fl.rtx.pop_front() {
            fl.rtx_count += 1;
            (s, true)
        } else if fl.next_new < fl.npk {
            fl.next_new += 1;
            (fl.next_new - 1, false)
        } else {
            return;
        };
        let (src, dst) = (fl.src, fl.dst);
        let pl = self.payload_of(f, seq);
        let p = self.alloc(Pkt { flow: f, seq, pull: 0, kind: Kind::Data, hops: 0, wire: (pl + self.hdr) as u16, payload: pl as u16,
                                 dst, route: NONE, fin: dst, holder: src, rotor: 0, want: NONE });
        let h = &mut self.hosts[src as usize];
        if rtx {
            self.rtx_sent += 1;
            h.mid.push_back(p);
        } else {
            h.lo.push_back(p);
        }
        self.nic_kick(src);
    }

    fn arm_rto(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        if !fl.rto_pending && fl.finish == Ps::MAX && !fl.bulk {
            fl.rto_pending = true;
            self.ev.push(self.now + self.rto, Ev::Rto(f));
        }
    }

    fn rto_fire(&mut self, f: u32) {
        self.flows[f as usize].rto_pending = false;
        if self.flows[f as usize].finish != Ps::MAX {
            return;
        }
        self.rto_fired += 1;
        let fl = &mut self.flows[f as usize];
        for s in 0..fl.next_new {
            if !bit(&fl.acked, s) && !fl.rtx.contains(&s) {
                fl.rtx.push_back(s);
            }
        }
        let n = (fl.rtx.len() as u32).max(1).min(self.iw);
        for _ in 0..n {
            self.send_packet(f);
        }
        self.arm_rto(f);
    }

    // ------------------------------------------------------------------ host NIC
    fn nic_kick(&mut self, h: u32) {
        let free = self.hosts[h as usize].free_at;
        if self.now < free {
            self.nic_wake(h, free);
        } else {
            self.nic_start(h);
        }
    }

    fn nic_wake(&mut self, h: u32, t: Ps) {
        let hs = &mut self.hosts[h as usize];
        if hs.wake == 0 || hs.wake > t {
            hs.wake = t;
            self.ev.push(t, Ev::NicWake(h));
        }
    }

    /// Start the NIC's next transmission; the packet is scheduled straight to its ToR and
    /// the NIC wakes when free only if more is waiting.
    fn nic_start(&mut self, h: u32) {
        let now = self.now;
        if self.pushback && !self.hosts[h as usize].held.is_empty() {
            self.unhold(h);
        }
        let hs = &mut self.hosts[h as usize];
        let ctl = hs.hi.pop_front().or_else(|| hs.mid.pop_front());
        let p = if ctl.is_some() {
            ctl
        } else if let Some(p) = self.pop_new(h) {
            Some(p)
        } else {
            self.rlb_pick(h)
        };
        if self.pushback {
            if let Some(t) = self.hosts[h as usize].held.iter().map(|x| x.1).min() {
                self.nic_wake(h, t);
            }
        }
        let Some(p) = p else { return };
        let ser = self.rate.tx(self.pkts[p as usize].wire as u64);
        let tor = self.tor_of(h);
        self.t.packet_hops += 1;
        self.ev.push(now + ser + self.host_prop, Ev::AtTor(p, tor));
        let hs = &mut self.hosts[h as usize];
        hs.free_at = now + ser;
        if !hs.hi.is_empty() || !hs.mid.is_empty() || !hs.lo.is_empty() || hs.commits.iter().any(|c| !c.is_empty()) {
            self.nic_wake(h, now + ser);
        }
    }

    /// The next new NDP data packet host `h` may send: with push-back, packets for a
    /// destination ToR paused at this host are held until the pause ends.
    fn pop_new(&mut self, h: u32) -> Option<u32> {
        loop {
            let p = self.hosts[h as usize].lo.pop_front()?;
            if self.pushback {
                let d = self.tor_of(self.pkts[p as usize].dst);
                let hs = &mut self.hosts[h as usize];
                if !hs.paused.is_empty() && hs.paused[d as usize] > self.now {
                    let until = hs.paused[d as usize];
                    hs.held.push_back((p, until));
                    self.paused_pkts += 1;
                    continue;
                }
            }
            return Some(p);
        }
    }

    /// Return held packets whose pause ended to the front of the new-data queue, in order.
    fn unhold(&mut self, h: u32) {
        let now = self.now;
        let hs = &mut self.hosts[h as usize];
        if hs.held.iter().all(|x| x.1 > now) {
            return;
        }
        let (back, keep): (Vec<_>, Vec<_>) = hs.held.drain(..).partition(|x| x.1 <= now);
        hs.held = keep.into();
        for &(p, _) in back.iter().rev() {
            hs.lo.push_front(p);
        }
    }

    // ------------------------------------------------------------------ services
    /// Push-back: the ToR of `port` found its data queue full for a packet of flow `f` to
    /// host `dst`; it sends one message per (port, source ToR, destination ToR) and
    /// superslice to the source ToR, which forwards it to all its hosts.
    fn push_back(&mut self, port: u32, f: u32, dst: u32) {
        let tor = port / self.ppt;
        let src = self.flows[f as usize].src;
        let (stor, dtor) = (self.tor_of(src), self.tor_of(dst));
        let slice = self.now / self.rot.d;
        if slice != self.pb_slice {
            self.pb_sent.clear();
            self.pb_slice = slice;
        }
        if !self.pb_sent.insert((port, stor, dtor)) {
            return;
        }
        self.pushback_msgs += 1;
        let m = self.ctrl(Kind::PushBack, f, dtor, src);
        self.pkts[m as usize].pull = slice.min(u32::MAX as u64) as u32;
        if stor == tor {
            self.pushback_fanout(m, tor);
        } else {
            self.route_at(m, tor);
        }
    }

    /// The source ToR forwards a push-back message to every host below it.
    fn pushback_fanout(&mut self, m: u32, tor: u32) {
        for k in 0..self.hpr {
            let c = if k == 0 { m } else { self.alloc(self.pkts[m as usize]) };
            self.pkts[c as usize].dst = tor * self.hpr + k;
            self.enqueue(tor * self.ppt + k, c);
        }
    }

    // ------------------------------------------------------------------ monitoring
    fn sample(&mut self) {
        let now = self.now;
        for i in 0..self.watch.len() {
            let w = self.watch[i];
            let pt = &mut self.ports[w as usize];
            self.ts.0.push(now);
            self.ts.1.push(w);
            self.ts.2.push((pt.hi_bytes + pt.lo_bytes + pt.rlb_bytes) as u64);
            self.ts.3.push(pt.tx_bytes - pt.tx_sampled);
            pt.tx_sampled = pt.tx_bytes;
        }
        let s = NetSample {
            time_ps: now, queued_bytes: self.queued_total, tx_bytes: self.tx_total, trims: self.trims,
            bounces: self.bounces, delivered_bytes: self.t.bytes_delivered,
            bulk_host_bytes: self.bulk_unsent + self.bulk_relay_bytes + self.bulk_commit_bytes,
            congestion_events: self.congestion_events, pushback_msgs: self.pushback_msgs,
        };
        let p = self.last_sample;
        self.series.push(NetSample {
            tx_bytes: s.tx_bytes - p.tx_bytes, trims: s.trims - p.trims, bounces: s.bounces - p.bounces,
            delivered_bytes: s.delivered_bytes - p.delivered_bytes,
            congestion_events: s.congestion_events - p.congestion_events,
            pushback_msgs: s.pushback_msgs - p.pushback_msgs, ..s
        });
        self.last_sample = s;
    }

    /// Close the time series at the end of a run: one last (partial-interval) sample at
    /// `now` unless a sample was taken there already (no-op when sampling is off).
    pub fn final_sample(&mut self) {
        if self.sample_iv > 0 && self.now > self.last_sample.time_ps {
            self.sample();
        }
    }

    // ------------------------------------------------------------------ ToR
    fn at_tor(&mut self, p: u32, tor: u32) {
        let pk = self.pkts[p as usize];
        let dtor = self.tor_of(pk.dst);
        if dtor == tor && pk.kind == Kind::PushBack {
            self.pushback_fanout(p, tor);
            return;
        }
        if dtor == tor {
            let port = tor * self.ppt + pk.dst % self.hpr;
            self.enqueue(port, p);
            return;
        }
        if pk.kind == Kind::Bulk {
            let port = tor * self.ppt + self.hpr + pk.rotor as u32;
            self.enqueue(port, p);
            return;
        }
        self.route_at(p, tor);
    }

    /// Forward an NDP packet at `tor` on its source route (routing it first if needed).
    fn route_at(&mut self, p: u32, tor: u32) {
        let pk = &mut self.pkts[p as usize];
        if pk.route == NONE {
            pk.route = self.rot.slice_idx(self.now);
        }
        let dtor = pk.dst / self.hpr;
        let r = self.rot.next_hop(pk.route, tor, dtor);
        debug_assert!(r != NO_HOP);
        let port = tor * self.ppt + self.hpr + r as u32;
        self.enqueue(port, p);
    }

    fn enqueue(&mut self, port: u32, p: u32) {
        let kind = self.pkts[p as usize].kind;
        match kind {
            Kind::Bulk => {
                let wire = self.pkts[p as usize].wire as u32;
                let pt = &mut self.ports[port as usize];
                pt.rlb.push_back(p);
                pt.rlb_bytes += wire;
                self.queued_total += wire as u64;
            }
            Kind::Data => {
                let wire = self.pkts[p as usize].wire as u32;
                let pt = &mut self.ports[port as usize];
                if pt.lo_bytes + wire <= self.lo_cap {
                    pt.lo_bytes += wire;
                    pt.lo.push_back(p);
                    self.queued_total += wire as u64;
                } else {
                    let mut victim = p;
                    if self.rng.below(2) == 1 {
                        if let Some(&tail) = pt.lo.back() {
                            let tw = self.pkts[tail as usize].wire as u32;
                            if tw >= wire {
                                pt.lo.pop_back();
                                pt.lo_bytes -= tw;
                                pt.lo_bytes += wire;
                                self.queued_total -= (tw - wire) as u64;
                                pt.lo.push_back(p);
                                victim = tail;
                            }
                        }
                    }
                    let v = &mut self.pkts[victim as usize];
                    let (vf, vdst) = (v.flow, v.dst);
                    v.kind = Kind::Header;
                    v.payload = 0;
                    v.wire = self.hdr as u16;
                    self.trims += 1;
                    self.enqueue_hi(port, victim);
                    if self.detect {
                        // congestion detection: the data queue is full; trimming is
                        // Opera's response, push-back the optional last resort
                        self.congestion_events += 1;
                        if self.pushback {
                            self.push_back(port, vf, vdst);
                        }
                    }
                }
            }
            _ => self.enqueue_hi(port, p),
        }
        self.port_kick(port);
    }

    fn enqueue_hi(&mut self, port: u32, p: u32) {
        let pt = &mut self.ports[port as usize];
        let w = self.pkts[p as usize].wire as u32;
        if pt.hi_bytes + w <= self.hi_cap {
            pt.hi_bytes += w;
            pt.hi.push_back(p);
            self.queued_total += w as u64;
            return;
        }
        let pk = self.pkts[p as usize];
        if pk.kind == Kind::PushBack {
            self.pushback_lost += 1;
            self.release(p);
            return;
        }
        let tor = port / self.ppt;
        if pk.kind == Kind::Header {
            // return to sender: the header heads back to the flow's source host
            self.bounces += 1;
            let src = self.flows[pk.flow as usize].src;
            let b = &mut self.pkts[p as usize];
            b.kind = Kind::Bounce;
            b.dst = src;
            b.route = NONE;
            if self.tor_of(src) == tor {
                let dp = tor * self.ppt + src % self.hpr;
                self.enqueue(dp, p);
            } else {
                self.route_at(p, tor);
            }
            return;
        }
        self.ctrl_drops += 1;
        self.arm_rto(pk.flow);
        self.release(p);
    }

    fn port_kick(&mut self, port: u32) {
        let pt = &mut self.ports[port as usize];
        if self.now < pt.free_at {
            if pt.wake == 0 || pt.wake > pt.free_at {
                pt.wake = pt.free_at;
                self.ev.push(pt.free_at, Ev::PortFree(port));
            }
        } else {
            self.port_start(port);
        }
    }

    fn port_start(&mut self, port: u32) {
        let now = self.now;
        let tor = port / self.ppt;
        let k = port % self.ppt;
        loop {
            let pt = &mut self.ports[port as usize];
            let p = if !pt.hi.is_empty() && !pt.lo.is_empty() {
                if pt.crt >= 640 + 1500 {
                    pt.crt = 0;
                }
                if pt.crt < 640 {
                    pt.crt += 64;
                    pt.hi.pop_front().unwrap()
                } else {
                    let p = pt.lo.pop_front().unwrap();
                    pt.crt += self.pkts[p as usize].wire as u32;
                    p
                }
            } else if let Some(p) = pt.hi.pop_front() {
                p
            } else if let Some(p) = pt.lo.pop_front() {
                p
            } else if let Some(p) = pt.rlb.pop_front() {
                p
            } else {
                return;
            };
            let pk = self.pkts[p as usize];
            match pk.kind {
                Kind::Data => self.ports[port as usize].lo_bytes -= pk.wire as u32,
                Kind::Bulk => self.ports[port as usize].rlb_bytes -= pk.wire as u32,
                _ => self.ports[port as usize].hi_bytes -= pk.wire as u32,
            }
            self.queued_total -= pk.wire as u64;
            let ser = self.rate.tx(pk.wire as u64);
            let mut to = NONE;
            if k >= self.hpr {
                let rotor = k - self.hpr;
                let (peer, up, down_at) = self.rot.state(tor, rotor, now);
                let fits = up && peer != NONE && now + ser <= down_at;
                if pk.kind == Kind::Bulk {
                    if !(fits && peer == pk.want) {
                        self.bulk_return(p);
                        continue;
                    }
                } else {
                    let want = self.rot.peer_in(pk.route, tor, rotor);
                    if !(fits && peer == want) {
                        // the circuit this path expects is gone or going: re-route here over
                        // the current slice's shortest path
                        self.reroutes += 1;
                        let nr = self.rot.slice_idx(now);
                        let dtor = pk.dst / self.hpr;
                        let r2 = self.rot.next_hop(nr, tor, dtor) as u32;
                        let (peer2, up2, down2) = self.rot.state(tor, r2, now);
                        if !(up2 && peer2 != NONE && peer2 == self.rot.peer_in(nr, tor, r2) && now + ser <= down2) {
                            // cannot happen with consistent slice paths; never send into a down circuit
                            self.unroutable += 1;
                            self.drop_ndp(p);
                            continue;
                        }
                        self.pkts[p as usize].route = nr;
                        if r2 != rotor {
                            let np = tor * self.ppt + self.hpr + r2;
                            self.enqueue(np, p);
                            continue;
                        }
                    }
                }
                let (bad, pp) = self.rot.check_tx(tor, rotor, now, ser);
                if bad {
                    self.t.guardband_violations += 1;
                }
                if self.rot.sched.peer(pp, self.rot.sched.slice_at(now + self.rot.reconf).idx) != tor * self.u + rotor {
                    self.t.collisions += 1;
                }
                to = peer;
            }
            // the packet goes straight to the next node; the port wakes when free only if
            // more is queued
            self.t.packet_hops += 1;
            self.ports[port as usize].tx_bytes += pk.wire as u64;
            self.tx_total += pk.wire as u64;
            if k >= self.hpr {
                self.pkts[p as usize].hops = self.pkts[p as usize].hops.saturating_add(1);
                self.ev.push(now + ser + self.prop, Ev::AtTor(p, to));
            } else {
                let h = tor * self.hpr + k;
                self.ev.push(now + ser + self.host_prop, Ev::AtHost(p, h));
            }
            let pt = &mut self.ports[port as usize];
            pt.free_at = now + ser;
            if !(pt.hi.is_empty() && pt.lo.is_empty() && pt.rlb.is_empty()) && (pt.wake == 0 || pt.wake > now + ser) {
                pt.wake = now + ser;
                self.ev.push(now + ser, Ev::PortFree(port));
            }
            return;
        }
    }

    fn drop_ndp(&mut self, p: u32) {
        let pk = self.pkts[p as usize];
        self.arm_rto(pk.flow);
        self.release(p);
    }

    // ------------------------------------------------------------------ hosts (receivers)
    fn at_host(&mut self, p: u32, h: u32) {
        let pk = self.pkts[p as usize];
        self.release(p);
        let f = pk.flow;
        match pk.kind {
            Kind::Data => {
                let hops = pk.hops as u32;
                let fl = &mut self.flows[f as usize];
                fl.max_hops = fl.max_hops.max(hops);
                if bit(&fl.got, pk.seq) {
                    self.dup_bytes += pk.payload as u64;
                } else {
                    set_bit(&mut fl.got, pk.seq);
                    fl.received += 1;
                    fl.delivered += pk.payload as u64;
                    self.t.bytes_delivered += pk.payload as u64;
                    let hi = (hops as usize).min(self.ndp_hops.len() - 1);
                    self.ndp_hops[hi] += 1;
                    if fl.received == fl.npk {
                        fl.finish = self.now;
                        self.t.flows_completed += 1;
                        self.ndp_done += 1;
                    }
                }
                let src = self.flows[f as usize].src;
                let a = self.ctrl(Kind::Ack, f, pk.seq, src);
                self.acks += 1;
                self.pkts[a as usize].pull = self.pull_for(h, f);
                self.hosts[h as usize].hi.push_back(a);
                self.nic_kick(h);
            }
            Kind::Header => {
                let src = self.flows[f as usize].src;
                let a = self.ctrl(Kind::Nack, f, pk.seq, src);
                self.nacks += 1;
                self.pkts[a as usize].pull = self.pull_for(h, f);
                self.hosts[h as usize].hi.push_back(a);
                self.nic_kick(h);
            }
            Kind::Ack => {
                let fl = &mut self.flows[f as usize];
                if !bit(&fl.acked, pk.seq) {
                    set_bit(&mut fl.acked, pk.seq);
                    fl.acked_n += 1;
                    if fl.acked_n == fl.npk {
                        fl.acked_at = self.now;
                    }
                }
                self.pulled(f, pk.pull);
            }
            Kind::Nack | Kind::Bounce => {
                let fl = &mut self.flows[f as usize];
                if fl.finish == Ps::MAX && !bit(&fl.acked, pk.seq) && !fl.rtx.contains(&pk.seq) {
                    fl.rtx.push_back(pk.seq);
                }
                if pk.kind == Kind::Bounce || fl.next_new >= fl.npk {
                    self.send_packet(f);
                }
                self.pulled(f, pk.pull);
            }
            Kind::Pull => self.pulled(f, pk.pull),
            Kind::Bulk => self.bulk_arrive(pk, h),
            Kind::PushBack => {
                // stop new data to the congested destination ToR for the rest of the superslice
                self.pushback_rx += 1;
                let until = (pk.pull as u64 + 1) * self.rot.d;
                if until > self.now {
                    let n = self.n as usize;
                    let hs = &mut self.hosts[h as usize];
                    if hs.paused.is_empty() {
                        hs.paused = vec![0; n];
                    }
                    let e = &mut hs.paused[pk.seq as usize];
                    *e = (*e).max(until);
                }
            }
        }
    }

    /// Sender side of a pull: send until `pull` packets beyond the window went out.
    fn pulled(&mut self, f: u32, pull: u32) {
        let fl = &mut self.flows[f as usize];
        let todo = pull.saturating_sub(fl.last_pull);
        fl.last_pull = fl.last_pull.max(pull);
        for _ in 0..todo {
            self.send_packet(f);
        }
    }

    /// Receiver `h` owes flow `f` one pull: when its pacer is free the pull rides on the
    /// ACK/NACK being sent (its number is returned), otherwise a PULL is queued (0 returned).
    fn pull_for(&mut self, h: u32, f: u32) -> u32 {
        if self.flows[f as usize].finish != Ps::MAX {
            return 0;
        }
        let k = if self.flow_pacer { f } else { h };
        let now = self.now;
        let pc = &mut self.pacers[k as usize];
        if pc.queue.is_empty() && !pc.pending && now >= pc.next {
            pc.next = now + self.pull_gap;
            let fl = &mut self.flows[f as usize];
            fl.pulls_issued += 1;
            self.pulls += 1;
            return fl.pulls_issued;
        }
        pc.queue.push_back(f);
        if !pc.pending {
            pc.pending = true;
            let t = pc.next.max(now);
            self.ev.push(t, Ev::Pacer(k));
        }
        0
    }

    /// Pacer `k` releases one queued PULL.
    fn emit_pull(&mut self, k: u32) {
        loop {
            let Some(f) = self.pacers[k as usize].queue.pop_front() else { return };
            if self.flows[f as usize].finish != Ps::MAX {
                continue;
            }
            let fl = &mut self.flows[f as usize];
            fl.pulls_issued += 1;
            let (n, src, dst) = (fl.pulls_issued, fl.src, fl.dst);
            let p = self.ctrl(Kind::Pull, f, 0, src);
            self.pkts[p as usize].pull = n;
            self.pulls += 1;
            self.hosts[dst as usize].hi.push_back(p);
            self.nic_kick(dst);
            let pc = &mut self.pacers[k as usize];
            pc.next = self.now + self.pull_gap;
            if !pc.queue.is_empty() {
                pc.pending = true;
                self.ev.push(pc.next, Ev::Pacer(k));
            }
            return;
        }
    }

    // ------------------------------------------------------------------ RotorLB
    fn rlb_activate(&mut self, h: u32) {
        let tor = self.tor_of(h);
        let hs = &mut self.hosts[h as usize];
        if !hs.active {
            hs.active = true;
            self.tor_active[tor as usize] += 1;
        }
        if !self.rlb_pending {
            self.rlb_pending = true;
            let next = (self.now / self.rot.d + 1) * self.rot.d;
            self.ev.push(next, Ev::Rlb);
        }
    }

    fn host_has_bulk(&self, h: u32) -> bool {
        let hs = &self.hosts[h as usize];
        !hs.local.is_empty() || hs.relay_pkts > 0 || hs.commits.iter().any(|c| !c.is_empty())
    }

    /// Return the unsent commitments of rotor `r` at host `h` to its queues.
    fn expire_commits(&mut self, h: u32, r: u32) {
        while let Some(it) = self.hosts[h as usize].commits[r as usize].pop_back() {
            self.bulk_commit_bytes -= it.payload as u64;
            self.requeue(h, it, true);
        }
    }

    fn requeue(&mut self, h: u32, it: Item, front: bool) {
        let fl = &mut self.flows[it.flow as usize];
        if fl.src == h {
            if fl.unsent == 0 {
                self.hosts[h as usize].local.push(it.flow);
            }
            fl.unsent += it.payload as u64;
            self.bulk_unsent += it.payload as u64;
        } else {
            let hs = &mut self.hosts[h as usize];
            let q = hs.relay.entry(it.fin).or_default();
            if front {
                q.push_front((it.flow, it.payload));
            } else {
                q.push_back((it.flow, it.payload));
            }
            hs.relay_pkts += 1;
            self.bulk_relay_bytes += it.payload as u64;
        }
    }

    fn bulk_return(&mut self, p: u32) {
        let pk = self.pkts[p as usize];
        self.release(p);
        self.bulk_returns += 1;
        self.bulk_net_bytes -= pk.payload as u64;
        let it = Item { flow: pk.flow, payload: pk.payload as u32, fin: pk.fin, label: pk.dst, at: 0 };
        self.requeue(pk.holder, it, true);
        self.rlb_activate(pk.holder);
    }

    fn bulk_arrive(&mut self, pk: Pkt, h: u32) {
        self.bulk_net_bytes -= pk.payload as u64;
        let hi = (pk.hops as usize).min(self.bulk_hops.len() - 1);
        if pk.fin == h {
            self.bulk_hops[hi] += 1;
            let f = pk.flow;
            let fl = &mut self.flows[f as usize];
            fl.delivered += pk.payload as u64;
            fl.max_hops = fl.max_hops.max(pk.hops as u32);
            self.t.bytes_delivered += pk.payload as u64;
            self.bulk_delivered += pk.payload as u64;
            if fl.delivered == fl.size {
                fl.finish = self.now;
                self.t.flows_completed += 1;
                self.bulk_flows_done += 1;
            }
        } else {
            self.bulk_relayed += 1;
            let it = Item { flow: pk.flow, payload: pk.payload as u32, fin: pk.fin, label: h, at: 0 };
            // the relay keeps the packet's hop count in the flow's maximum when delivered
            self.flows[pk.flow as usize].max_hops = self.flows[pk.flow as usize].max_hops.max(pk.hops as u32);
            self.requeue(h, it, false);
            self.rlb_activate(h);
        }
    }

    /// Local (own) bulk packets host `h` has for host `d`.
    fn local_pkts(&self, h: u32, d: u32) -> u32 {
        let mut n = 0u64;
        for &f in &self.hosts[h as usize].local {
            let fl = &self.flows[f as usize];
            if fl.dst == d {
                n += fl.unsent.div_ceil(self.mss as u64);
            }
        }
        n.min(u32::MAX as u64) as u32
    }

    fn relay_pkts_for(&self, h: u32, d: u32) -> u32 {
        self.hosts[h as usize].relay.get(&d).map_or(0, |q| q.len() as u32)
    }

    /// Move up to `n` own packets for `d` (or relayed ones when `relay`) into host `h`'s
    /// commit queue of rotor `r`, labelled for host `label`.
    fn commit(&mut self, h: u32, r: u32, label: u32, d: u32, relay: bool, mut n: u32) {
        let mut items = Vec::new();
        if relay {
            let hs = &mut self.hosts[h as usize];
            if let Some(q) = hs.relay.get_mut(&d) {
                while n > 0 {
                    let Some((f, pl)) = q.pop_front() else { break };
                    items.push(Item { flow: f, payload: pl, fin: d, label, at: 0 });
                    hs.relay_pkts -= 1;
                    self.bulk_relay_bytes -= pl as u64;
                    n -= 1;
                }
                if q.is_empty() {
                    hs.relay.remove(&d);
                }
            }
        } else {
            let mut i = 0;
            while n > 0 && i < self.hosts[h as usize].local.len() {
                let f = self.hosts[h as usize].local[i];
                let fl = &mut self.flows[f as usize];
                if fl.dst != d {
                    i += 1;
                    continue;
                }
                while n > 0 && fl.unsent > 0 {
                    let pl = fl.unsent.min(self.mss as u64) as u32;
                    fl.unsent -= pl as u64;
                    self.bulk_unsent -= pl as u64;
                    items.push(Item { flow: f, payload: pl, fin: d, label, at: 0 });
                    n -= 1;
                }
                if fl.unsent == 0 {
                    self.hosts[h as usize].local.remove(i);
                } else {
                    i += 1;
                }
            }
        }
        if items.is_empty() {
            return;
        }
        self.rlb_commit_pkts += items.len() as u64;
        let n = items.len() as u64;
        let hs = &mut self.hosts[h as usize];
        for (k, mut it) in items.into_iter().enumerate() {
            it.at = self.now + k as u64 * self.hold / n;
            self.bulk_commit_bytes += it.payload as u64;
            hs.commits[r as usize].push_back(it);
        }
        hs.commits[r as usize].make_contiguous().sort_by_key(|it| it.at);
        self.nic_kick(h);
    }

    /// The next paced bulk packet host `h` may send now, if any.
    fn rlb_pick(&mut self, h: u32) -> Option<u32> {
        let now = self.now;
        let u = self.u;
        let mut wake = Ps::MAX;
        for i in 0..u {
            let r = (self.hosts[h as usize].rr + i) % u;
            let hs = &self.hosts[h as usize];
            if hs.commits[r as usize].is_empty() {
                continue;
            }
            if now >= hs.commit_end[r as usize] {
                self.expire_commits(h, r);
                continue;
            }
            let ready = hs.commit_next[r as usize].max(hs.commits[r as usize][0].at);
            if now < ready {
                wake = wake.min(ready);
                continue;
            }
            let hs = &mut self.hosts[h as usize];
            let it = hs.commits[r as usize].pop_front().unwrap();
            hs.commit_next[r as usize] = now + self.rlb_pace;
            hs.rr = (r + 1) % u;
            self.bulk_commit_bytes -= it.payload as u64;
            self.bulk_net_bytes += it.payload as u64;
            let want = self.tor_of(it.label);
            // a relayed packet already crossed one ToR-to-ToR hop to reach its relay
            let hops = if self.flows[it.flow as usize].src == h { 0 } else { 1 };
            let p = self.alloc(Pkt { flow: it.flow, seq: 0, pull: 0, kind: Kind::Bulk, hops, wire: (it.payload + self.hdr) as u16,
                                     payload: it.payload as u16, dst: it.label, route: NONE, fin: it.fin, holder: h,
                                     rotor: r as u8, want });
            return Some(p);
        }
        if wake != Ps::MAX {
            let hs = &mut self.hosts[h as usize];
            if hs.wake == 0 || hs.wake > wake {
                hs.wake = wake;
                self.ev.push(wake, Ev::NicWake(h));
            }
        }
        None
    }

    /// Offer/accept at the start of a superslice for the rotor that just took a new matching.
    fn rlb_slice(&mut self) {
        self.rlb_pending = false;
        self.rlb_slices += 1;
        let now = self.now;
        let s_abs = now / self.rot.d;
        let idx = (s_abs % self.n as u64) as u32;
        let prev = (idx + self.n - 1) % self.n;
        let r = self.rot.changing[prev as usize];
        let hpr = self.hpr;
        let active: Vec<u32> = (0..self.n).filter(|&t| self.tor_active[t as usize] > 0).collect();
        let cap_dst = (self.max_pkts / hpr).max(1);
        let acc_cap = 2 * cap_dst;
        let mut pairs = Vec::new();
        // phase 1: relayed traffic, then direct traffic; collect offers
        let mut offers: Vec<(u32, u32, u32)> = Vec::new(); // (src host, final dst, pkts)
        for &a in &active {
            let b = self.rot.peer_in(idx, a, r);
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].active {
                    self.expire_commits(i, r);
                }
            }
            if b == NONE {
                continue;
            }
            pairs.push((a, b));
            for i in a * hpr..(a + 1) * hpr {
                self.send_cap[i as usize] = self.max_pkts;
            }
            for j in b * hpr..(b + 1) * hpr {
                self.recv_cap[j as usize] = self.max_pkts;
            }
            let end = now + self.hold;
            for i in a * hpr..(a + 1) * hpr {
                if !self.hosts[i as usize].active {
                    continue;
                }
                let hs = &mut self.hosts[i as usize];
                hs.commit_end[r as usize] = end;
                hs.commit_next[r as usize] = now;
                for j in b * hpr..(b + 1) * hpr {
                    let n = self.relay_pkts_for(i, j).min(cap_dst).min(self.send_cap[i as usize]).min(self.recv_cap[j as usize]);
                    if n > 0 {
                        self.send_cap[i as usize] -= n;
                        self.recv_cap[j as usize] -= n;
                        self.commit(i, r, j, j, true, n);
                    }
                }
            }
            // direct: progressive filling, one packet per (i, j) per round
            let mut demand: Vec<(u32, u32, u32)> = Vec::new();
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].local.is_empty() {
                    continue;
                }
                for j in b * hpr..(b + 1) * hpr {
                    let d = self.local_pkts(i, j);
                    if d > 0 {
                        demand.push((i, j, d));
                    }
                }
            }
            let mut grant = vec![0u32; demand.len()];
            loop {
                let mut progress = false;
                for (k, &(i, j, d)) in demand.iter().enumerate() {
                    if grant[k] < d && self.send_cap[i as usize] > 0 && self.recv_cap[j as usize] > 0 {
                        grant[k] += 1;
                        self.send_cap[i as usize] -= 1;
                        self.recv_cap[j as usize] -= 1;
                        progress = true;
                    }
                }
                if !progress {
                    break;
                }
            }
            for (k, &(i, j, _)) in demand.iter().enumerate() {
                if grant[k] > 0 {
                    self.commit(i, r, j, j, false, grant[k]);
                }
            }
            // offers: the rest of each host's own traffic to other racks, fair share of its capacity
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].local.is_empty() || self.send_cap[i as usize] == 0 {
                    continue;
                }
                let mut dsts: Vec<(u32, u32)> = Vec::new();
                for &f in &self.hosts[i as usize].local {
                    let fl = &self.flows[f as usize];
                    if fl.dst / hpr == b || fl.dst / hpr == a {
                        continue;
                    }
                    let pk = fl.unsent.div_ceil(self.mss as u64) as u32;
                    match dsts.iter_mut().find(|x| x.0 == fl.dst) {
                        Some(x) => x.1 += pk,
                        None => dsts.push((fl.dst, pk)),
                    }
                }
                dsts.sort_unstable();
                let mut give = vec![0u32; dsts.len()];
                let mut cap = self.send_cap[i as usize];
                while cap > 0 {
                    let mut progress = false;
                    for (k, &(_, want)) in dsts.iter().enumerate() {
                        if cap > 0 && give[k] < want {
                            give[k] += 1;
                            cap -= 1;
                            progress = true;
                        }
                    }
                    if !progress {
                        break;
                    }
                }
                for (k, &(d, _)) in dsts.iter().enumerate() {
                    if give[k] > 0 {
                        offers.push((i, d, give[k]));
                    }
                }
            }
        }
        // phase 2: hosts of b accept offers while their relay backlog per final destination allows
        for &(a, b) in &pairs {
            let my: Vec<usize> = (0..offers.len()).filter(|&k| offers[k].0 / hpr == a).collect();
            if my.is_empty() {
                continue;
            }
            for j in b * hpr..(b + 1) * hpr {
                let mut acc: Vec<(usize, u32)> = Vec::new();
                let mut room: Vec<u32> = my.iter().map(|&k| {
                    let d = offers[k].1;
                    acc_cap.saturating_sub(self.relay_pkts_for(j, d) + self.local_pkts(j, d))
                }).collect();
                loop {
                    let mut progress = false;
                    for (m, &k) in my.iter().enumerate() {
                        let (i, _, n) = offers[k];
                        if n > 0 && room[m] > 0 && self.recv_cap[j as usize] > 0 && self.send_cap[i as usize] > 0 {
                            offers[k].2 -= 1;
                            room[m] -= 1;
                            self.recv_cap[j as usize] -= 1;
                            self.send_cap[i as usize] -= 1;
                            match acc.iter_mut().find(|x| x.0 == k) {
                                Some(x) => x.1 += 1,
                                None => acc.push((k, 1)),
                            }
                            progress = true;
                        }
                    }
                    if !progress {
                        break;
                    }
                }
                for (k, n) in acc {
                    let (i, d, _) = offers[k];
                    self.commit(i, r, j, d, false, n);
                }
            }
        }
        // deactivate hosts with nothing left; keep the slice loop only while bulk is queued
        let mut any = false;
        for &a in &active {
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].active && !self.host_has_bulk(i) {
                    self.hosts[i as usize].active = false;
                    self.tor_active[a as usize] -= 1;
                }
            }
            any |= self.tor_active[a as usize] > 0;
        }
        if any && !self.rlb_pending {
            self.rlb_pending = true;
            self.ev.push((s_abs + 1) * self.rot.d, Ev::Rlb);
        }
    }

    // ------------------------------------------------------------------ output
    pub fn output(&self) -> OperaOutput {
        let mut t = self.t.clone();
        t.now_ps = self.now;
        // bytes not yet delivered, from the flows' own records (nothing is dropped for good:
        // NDP resends, RotorLB holds at hosts), checked against the offered counter below
        t.bytes_in_flight = self.flows.iter().filter(|f| f.started).map(|f| f.size - f.delivered.min(f.size)).sum();
        t.drops = vec![];
        for (i, f) in self.flows.iter().enumerate() {
            t.flow_finish_ps[i] = f.finish;
            t.flow_delivered[i] = f.delivered;
            t.flow_hops[i] = f.max_hops;
        }
        let mut errs = Vec::new();
        if t.bytes_offered != t.bytes_delivered + t.bytes_dropped + t.bytes_in_flight {
            errs.push(format!("byte conservation: offered {} != delivered {} + dropped {} + in flight {}",
                              t.bytes_offered, t.bytes_delivered, t.bytes_dropped, t.bytes_in_flight));
        }
        let sum: u64 = self.flows.iter().map(|f| f.delivered).sum();
        if sum != t.bytes_delivered {
            errs.push(format!("per-flow delivered bytes {sum} != total {}", t.bytes_delivered));
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.delivered > f.size || (f.finish != Ps::MAX && f.delivered != f.size) {
                errs.push(format!("flow {i}: delivered {} of {} bytes", f.delivered, f.size));
                break;
            }
        }
        let bulk_sum = self.bulk_delivered + self.bulk_unsent + self.bulk_relay_bytes + self.bulk_commit_bytes + self.bulk_net_bytes;
        if bulk_sum != self.bulk_offered {
            errs.push(format!("bulk bytes not conserved: offered {} != delivered {} + unsent {} + relayed {} + committed {} + in network {}",
                self.bulk_offered, self.bulk_delivered, self.bulk_unsent, self.bulk_relay_bytes, self.bulk_commit_bytes, self.bulk_net_bytes));
        }
        if t.collisions > 0 {
            errs.push(format!("{} optical collisions", t.collisions));
        }
        if t.guardband_violations > 0 {
            errs.push(format!("{} guardband violations", t.guardband_violations));
        }
        if self.bulk_hops.iter().skip(3).any(|&x| x > 0) {
            errs.push("a bulk packet crossed more than two ToR-to-ToR hops".into());
        }
        let queued: u64 = self.ports.iter().map(|p| (p.hi_bytes + p.lo_bytes + p.rlb_bytes) as u64).sum();
        if queued != self.queued_total {
            errs.push(format!("queued bytes {} != sum over ports {queued}", self.queued_total));
        }
        t.invariant_errors = errs;
        let r = &self.rot;
        let m = |k: &str, v: f64| (k.to_string(), v);
        let metrics = vec![
            m("superslice_ps", r.d as f64), m("eps_ps", r.eps as f64), m("delta_ps", r.delta as f64),
            m("reconf_ps", r.reconf as f64), m("cycle_ps", (r.d * r.n as u64) as f64),
            m("duty_cycle", 1.0 - r.reconf as f64 / (r.d as f64 * r.u as f64)),
            m("max_path_hops", r.max_hops as f64), m("rlb_hold_ps", self.hold as f64), m("rlb_max_pkts", self.max_pkts as f64),
            m("ndp_flows", self.ndp_flows as f64), m("ndp_completed", self.ndp_done as f64),
            m("bulk_flows", (self.t.flows_started - self.ndp_flows) as f64), m("bulk_completed", self.bulk_flows_done as f64),
            m("trims", self.trims as f64), m("bounces", self.bounces as f64), m("ctrl_drops", self.ctrl_drops as f64),
            m("reroutes", self.reroutes as f64), m("unroutable", self.unroutable as f64), m("retransmissions", self.rtx_sent as f64), m("rto_fired", self.rto_fired as f64),
            m("duplicate_bytes", self.dup_bytes as f64), m("pulls", self.pulls as f64), m("acks", self.acks as f64),
            m("nacks", self.nacks as f64), m("rlb_slices", self.rlb_slices as f64), m("rlb_committed_pkts", self.rlb_commit_pkts as f64),
            m("bulk_returns", self.bulk_returns as f64), m("bulk_relayed_pkts", self.bulk_relayed as f64),
            m("bulk_offered_bytes", self.bulk_offered as f64), m("bulk_delivered_bytes", self.bulk_delivered as f64),
            m("bulk_host_queued_bytes", (self.bulk_unsent + self.bulk_relay_bytes + self.bulk_commit_bytes) as f64),
            m("peak_packets", self.peak_pkts as f64), m("stopped_early", if self.stopped { 1.0 } else { 0.0 }),
            m("congestion_events", self.congestion_events as f64), m("pushback_messages", self.pushback_msgs as f64),
            m("pushback_received", self.pushback_rx as f64), m("pushback_lost", self.pushback_lost as f64),
            m("paused_packets", self.paused_pkts as f64),
        ];
        OperaOutput {
            totals: t, metrics, ndp_hops_hist: self.ndp_hops.clone(), bulk_hops_hist: self.bulk_hops.clone(),
            flow_bulk: self.flows.iter().map(|f| f.bulk).collect(),
            flow_rtx: self.flows.iter().map(|f| f.rtx_count).collect(),
            flow_acked_ps: self.flows.iter().map(|f| f.acked_at).collect(),
            port_tx_bytes: self.ports.iter().map(|p| p.tx_bytes).collect(),
            ts: self.ts.clone(),
            series: self.series.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
