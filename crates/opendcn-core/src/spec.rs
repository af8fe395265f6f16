//! The plain-data input of one simulation, validated once before the run.
//!
//! Nodes own contiguous ranges of global port ids (`port_offset`). Port kinds:
//! optical (peer given by the schedule), electrical (static peer port), host downlink
//! (delivers to a host endpoint), or unused. Endpoints are where flows start and end:
//! either the nodes themselves (ideal injection at the host-side rate) or hosts below
//! nodes, each with its own link.

use crate::error::SpecError;
use crate::timeflow::{Entry, WILD};
use crate::units::{Ps, NONE};

/// Kind of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    Unused,
    Optical,
    Electrical,
    HostDown,
}

impl PortKind {
    pub fn from_code(c: u8) -> Option<PortKind> {
        Some(match c {
            0 => PortKind::Unused,
            1 => PortKind::Optical,
            2 => PortKind::Electrical,
            3 => PortKind::HostDown,
            _ => return None,
        })
    }
}

/// Which router the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterKind {
    Table,
    Source,
    Vlb,
    Direct,
    /// Hop-on hop-off: per hop, the first hop of the earliest path.
    Hoho,
    /// Uniform-cost multipath: source-routed choice among earliest paths by flow age.
    Ucmp,
    /// Opera: the shortest path of the expander of the slice in which the packet is first
    /// routed, over the circuits that stay up into the next slice ([`crate::expander`]).
    Expander,
}

/// Per-packet or per-flow choice among multipath candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Multipath {
    Packet,
    Flow,
    /// Per packet, the candidate port with the fewest bytes queued (first on ties).
    Adaptive,
}

/// OpenOptics infrastructure services (§5.2), switched per run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Services {
    /// Detect a full calendar queue: a relayed packet that no longer fits in the first
    /// occurrence of its departure slice (exact occupancy, bandwidth × remaining time).
    pub congestion_detection: bool,
    /// On detection, send a push-back message to the packet's source node, which stops
    /// sending to that destination until the congested slice has come round again.
    pub pushback: bool,
    /// Sources hold elephants (flows that sent ≥ `elephant_bytes`, PIAS flow aging) until
    /// their departure slice is the current one (the circuit is up).
    pub flow_pausing: bool,
    pub elephant_bytes: u64,
    /// Queue-occupancy estimation (EQO) update interval; 0 = detection uses the exact
    /// occupancy. With EQO, detection compares the estimate with the admissible bytes.
    pub eqo_interval_ps: Ps,
    /// Buffer offloading: calendar queues a ToR keeps per optical port (the current slice
    /// and the next N − 1); later departures wait on a host below it. 0 = off.
    pub offload_queues: u32,
}

/// End-to-end transport of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// Back-pressured injection at the host-side rate; a dropped packet is lost.
    #[default]
    Ideal,
    /// TCP NewReno.
    Tcp,
    /// TCP with DCTCP's reaction to ECN marks.
    Dctcp,
    /// NDP: trimming, pulls paced by the receiver, NACK-driven retransmission.
    Ndp,
    /// Lossless link-level credit-based flow control (HPC): injection as `Ideal`, every
    /// fabric link sends only against credits of the next node's buffer per virtual
    /// channel, so nothing is ever dropped.
    Credit,
    /// Opera's RotorLB for bulk flows: data waits at hosts and crosses only direct
    /// circuits, or two of them via a relay host (see `transport::rotorlb`).
    RotorLb,
}

/// When a run may end before its duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopWhen {
    #[default]
    Duration,
    /// Every flow started and every flow whose transport is not RotorLB finished (Opera's
    /// traces are replayed that way).
    LowLatencyDone,
    /// Every flow started and finished.
    AllDone,
}

impl TransportKind {
    /// The engine code of a transport (the inverse of [`TransportKind::from_code`]).
    pub fn code(self) -> i64 {
        match self {
            TransportKind::Ideal => 0,
            TransportKind::Tcp => 1,
            TransportKind::Dctcp => 2,
            TransportKind::Ndp => 3,
            TransportKind::Credit => 4,
            TransportKind::RotorLb => 5,
        }
    }

    pub fn from_code(c: i64) -> Option<TransportKind> {
        Some(match c {
            0 => TransportKind::Ideal,
            1 => TransportKind::Tcp,
            2 => TransportKind::Dctcp,
            3 => TransportKind::Ndp,
            4 => TransportKind::Credit,
            5 => TransportKind::RotorLb,
            _ => return None,
        })
    }

    /// True when the transport recovers what the network drops.
    pub fn reliable(self) -> bool {
        matches!(self, TransportKind::Tcp | TransportKind::Dctcp | TransportKind::Ndp | TransportKind::RotorLb)
    }
}

/// Parameters of the transports (shared by every flow that uses them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportParams {
    /// Wire bytes of a control packet (ACK, NACK, PULL) and of a trimmed header.
    pub ctrl_bytes: u32,
    pub tcp_init_cwnd: u32,
    /// Initial slow-start threshold in segments (`u32::MAX`: unlimited).
    pub tcp_init_ssthresh: u32,
    pub tcp_dupack: u32,
    pub tcp_min_rto_ps: Ps,
    pub tcp_init_rto_ps: Ps,
    pub tcp_max_rto_ps: Ps,
    pub dctcp_g: f64,
    pub ndp_init_window: u32,
    pub ndp_rto_ps: Ps,
    /// NDP: a header that finds the header queue full returns to its sender.
    pub ndp_return_to_sender: bool,
    /// Credit: bytes of credit per (link, virtual channel), virtual channels per link,
    /// and how long a port may wait for credit before the watchdog looks for a deadlock.
    pub credit_bytes: u64,
    pub credit_vcs: u32,
    pub deadlock_timeout_ps: Ps,
    /// Credit: how a packet's virtual channel is chosen. `None`: by hop count (the n-th
    /// link uses channel n, the last channel beyond). `Some(step)`: by the routing's rule —
    /// the first link uses channel 0, and a packet whose previous link left through a
    /// port of VC class `a` (`Discipline::vc_class`) goes one channel up (capped at the
    /// last) when it takes a port of class `b` if bit `8 a + b` of `step` is set, else
    /// stays on its channel.
    pub credit_vc_step: Option<u64>,
    /// NDP pull pacing: pulls per full-packet time of the receiver's link, and one pacer
    /// per flow instead of one per receiving endpoint.
    pub ndp_pull_rate: f64,
    pub ndp_pacer_per_flow: bool,
    /// Every data packet of a flow of at least one MSS is a full MSS on the wire (its
    /// last one padded), as htsim's and opera-sim's NDP size their packets; the payload
    /// counted is the flow's own.
    pub pad_segments: bool,
    /// RotorLB at the NIC as opera-sim serves it: while a host holds committed bulk
    /// packets, its NIC serves the bulk class in full-packet slots, and a slot with no
    /// bulk packet due is spent idle (opera-sim's dummy packets), so a higher-priority
    /// packet waits for the slot in service.
    pub bulk_slots: bool,
    /// RotorLB as opera-sim's NIC pushes it back: for every 1 500 bytes of other traffic
    /// a host's NIC sends, one committed bulk packet of that host goes back to its queue
    /// (opera-sim's `RlbModule::NICpush`): the slot it was committed to went to that traffic.
    pub nic_push: bool,
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            ctrl_bytes: 64,
            tcp_init_cwnd: 10,
            tcp_init_ssthresh: u32::MAX,
            tcp_dupack: 3,
            tcp_min_rto_ps: 1_000_000_000,
            tcp_init_rto_ps: 1_000_000_000,
            tcp_max_rto_ps: 1_000_000_000_000,
            dctcp_g: 1.0 / 16.0,
            ndp_init_window: 20,
            ndp_rto_ps: 1_000_000_000,
            ndp_return_to_sender: true,
            credit_bytes: 64_000,
            credit_vcs: 1,
            deadlock_timeout_ps: 100_000_000,
            credit_vc_step: None,
            ndp_pull_rate: 1.0,
            ndp_pacer_per_flow: false,
            pad_segments: false,
            bulk_slots: false,
            nic_push: false,
        }
    }
}

/// How a port queues and serves packets.
///
/// With one class and no trimming the port is a FIFO whose departures are planned at
/// enqueue (calendar queues on cyclic optical ports). With several classes (strict
/// priority, class 0 first) or trimming, the port is served: it picks its next packet
/// when the previous one has been serialized.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Discipline {
    /// Byte cap of each priority class (empty: one class capped by the port buffer).
    pub class_cap: Vec<u64>,
    /// ECN: mark data packets that find more than this many bytes queued (0: off).
    pub ecn_k: u64,
    /// NDP trimming: a data packet that finds its class full is cut to its header, which
    /// goes to class 0.
    pub trim: bool,
    /// Credit-based flow control on this port's link (one queue per virtual channel).
    pub credit: bool,
    /// Credit: the port's class (0..8) for the routing's virtual-channel rule
    /// (`TransportParams::credit_vc_step`).
    pub vc_class: u8,
    /// Weighted service: relative weight of each class (deficit round robin, a weight of
    /// w serves w full packets per round); empty: strict priority.
    pub weights: Vec<u32>,
}

impl Discipline {
    /// Whether the port needs the served model (priority classes or trimming).
    pub fn served(&self) -> bool {
        self.class_cap.len() > 1 || self.trim || self.credit
    }
}

/// One simulation, as plain data.
#[derive(Debug, Clone)]
pub struct SimSpec {
    pub nodes: u32,
    /// Ports of node n are `port_offset[n]..port_offset[n+1]` (len = nodes + 1).
    pub port_offset: Vec<u32>,
    pub port_kind: Vec<PortKind>,
    pub port_rate_bps: Vec<u64>,
    pub port_prop_ps: Vec<Ps>,
    pub port_buffer_bytes: Vec<u64>,
    /// Electrical: the peer's global port; host downlink: the host endpoint; else NONE.
    pub port_peer: Vec<u32>,
    /// Slice durations of the cycle; empty = static schedule.
    pub slice_ps: Vec<Ps>,
    pub guardband_ps: Ps,
    /// Peer global port per (slice, global port) for optical ports (static: one row).
    pub sched_peer: Vec<u32>,
    /// True when endpoints are hosts below nodes.
    pub hosts_mode: bool,
    pub ep_node: Vec<u32>,
    pub ep_rate_bps: Vec<u64>,
    pub ep_prop_ps: Vec<Ps>,
    /// Hosts mode: the node's downlink port to this host.
    pub ep_down_port: Vec<u32>,
    pub router: RouterKind,
    pub multipath: Multipath,
    /// HOHO/UCMP: most hops of a path; UCMP's weight of extra hops.
    pub max_hop: u32,
    pub ucmp_alpha: f64,
    /// Expander router: most shortest paths kept per (slice, node, destination), one drawn
    /// per packet (per flow with `Multipath::Flow`) where it is first routed; 1 = the BFS
    /// path only ([`crate::expander`]).
    pub expander_paths: u32,
    pub services: Services,
    /// Table router: (node, entry) with global port ids.
    pub entries: Vec<(u32, Entry)>,
    /// Source router: (src node, dst node, ts, hops as (global port, dep)).
    pub routes: Vec<(u32, u32, u32, Vec<(u32, u32)>)>,
    pub flow_start_ps: Vec<Ps>,
    pub flow_src: Vec<u32>,
    pub flow_dst: Vec<u32>,
    pub flow_size: Vec<u64>,
    /// Payload bytes per packet (the last packet of a flow may be shorter).
    pub mtu_bytes: u32,
    /// Header bytes added to each packet on the wire.
    pub header_bytes: u32,
    pub seed: u64,
    /// Time-series sampling period (0 = off) and the ports sampled.
    pub sample_interval_ps: Ps,
    pub watch_ports: Vec<u32>,
    /// Count injected bytes per (src node, dst node) for traffic-matrix collection.
    pub collect_tm: bool,
    /// Per flow: its transport (empty: every flow is ideal).
    pub flow_transport: Vec<TransportKind>,
    pub transport: TransportParams,
    /// Per port: its discipline (empty: every port is a FIFO without ECN).
    pub port_disc: Vec<Discipline>,
    /// Loss injection: (flow, segment) pairs whose first data copy is dropped where it
    /// first arrives after leaving its source (drop reason `injected`).
    pub loss: Vec<(u32, u32)>,
    /// PIAS: sources tag a data packet with priority level i while its flow has sent fewer
    /// than `pias_thresholds[i]` bytes (the last level beyond); served ports put level i
    /// in class 1 + i (class 0: control and headers). Empty: off.
    pub pias_thresholds: Vec<u64>,
    pub stop_when: StopWhen,
    /// Take network-wide samples too (every `sample_interval_ps`).
    pub net_series: bool,
    /// Hold a packet that finds no route at a node (instead of dropping it as `no_route`)
    /// until new tables or circuits give it one: for static schedules that a controller
    /// reconfigures during the run (traffic-aware fabrics). A node's hold takes as many
    /// bytes as the buffers of its network ports together.
    pub hold_unrouted: bool,
    /// OpenOptics' per-hop admission control: a packet whose calendar queue (the departure
    /// slice its routing chose) has no room left in that slice's next occurrence takes the
    /// routing decision of the following arrival slices, in order, until one has room;
    /// none within a cycle: dropped (`adm_fail`). Hop-by-hop routers on cyclic fabrics
    /// only (not source routes).
    pub admission_control: bool,
    /// Flow dependencies: flow `i` starts only when the flows
    /// `flow_dep_ids[flow_dep_ptr[i]..flow_dep_ptr[i + 1]]` have finished, at the last one's
    /// finish + `flow_gap_ps[i]` (and not before its `flow_start_ps`). Empty: none.
    pub flow_dep_ptr: Vec<u32>,
    pub flow_dep_ids: Vec<u32>,
    pub flow_gap_ps: Vec<Ps>,
    /// Co-flow barriers: flow `i` belongs to co-flow `flow_coflow[i]` (`NONE`: to none);
    /// the ids are dense from 0. Every flow of co-flow `c ≥ 1` starts only when every
    /// flow of co-flow `c − 1` has finished, at that time + `flow_gap_ps[i]` (and not
    /// before its `flow_start_ps`). Empty: none. Not combined with `flow_dep_ptr`.
    pub flow_coflow: Vec<u32>,
    /// Per flow: the rate (bit/s) at which an application writes its bytes, 0: all of them
    /// at the start (TCP and DCTCP flows only: an iperf-like on-off source). Empty: none.
    pub flow_app_rate_bps: Vec<u64>,
    /// Links a packet may cross: a relay node that would send it on after this many drops
    /// it as `loop` (a routing loop). 0: no limit.
    pub hop_limit: u32,
    /// Arrival slices read this far ahead: a packet's arrival slice at its next hop (what
    /// its table lookup matches) is the slice at its arrival there plus this, as
    /// OpenOptics' Mininet ToRs advance the ingress slice by the guardband. 0: the slice
    /// the packet was sent in.
    pub lookahead_ps: Ps,
    /// Link class of each port in the metrics (index into `sim::LINK_CLASSES`: 0
    /// electrical, 1 static optical, 2 reconfigurable optical), overriding the class its
    /// kind gives (`NONE`: keep it; empty: keep every port's). For a static schedule that
    /// a controller reconfigures on some ports only: those are reconfigurable.
    pub port_link_class: Vec<u32>,
    /// Per node: a buffer pool of this many bytes shared by the node's ports, with
    /// dynamic-threshold admission (`sim::buffer`); 0 (or empty): static per-port buffers.
    pub shared_buffer_bytes: Vec<u64>,
    /// The dynamic threshold's alpha per priority class (empty: 1.0; the last value covers
    /// the classes beyond).
    pub buffer_alpha: Vec<f64>,
    /// Most dropped packets recorded one by one, with every push-back message (0: none;
    /// `sim::droplog`).
    pub log_drops: u64,
}

impl SimSpec {
    pub fn n_ports(&self) -> usize {
        *self.port_offset.last().unwrap_or(&0) as usize
    }

    /// Check every array against the others; the first problem found is returned.
    pub fn validate(&self) -> Result<(), SpecError> {
        let n = self.nodes as usize;
        if n == 0 {
            return Err(SpecError::new("nodes", 0, "need at least one node"));
        }
        if self.port_offset.len() != n + 1 || self.port_offset[0] != 0 {
            return Err(SpecError::new("port_offset", self.port_offset.len(), format!("expected {} offsets starting at 0", n + 1)));
        }
        if self.port_offset.windows(2).any(|w| w[1] < w[0]) {
            return Err(SpecError::new("port_offset", &self.port_offset, "offsets must not decrease"));
        }
        let p = self.n_ports();
        for (name, len) in [("port_kind", self.port_kind.len()), ("port_rate_bps", self.port_rate_bps.len()),
                            ("port_prop_ps", self.port_prop_ps.len()), ("port_buffer_bytes", self.port_buffer_bytes.len()),
                            ("port_peer", self.port_peer.len())] {
            if len != p {
                return Err(SpecError::new(name, len, format!("expected one value per port ({p})")));
            }
        }
        if !self.shared_buffer_bytes.is_empty() && self.shared_buffer_bytes.len() != self.nodes as usize {
            return Err(SpecError::new("shared_buffer", self.shared_buffer_bytes.len(), format!("expected one pool per node ({})", self.nodes)));
        }
        if let Some(n) = (0..self.shared_buffer_bytes.len()).find(|&n| {
            let b = self.shared_buffer_bytes[n];
            b > 0 && b < (self.mtu_bytes + self.header_bytes) as u64
        }) {
            return Err(SpecError::new(format!("shared_buffer[{n}]"), self.shared_buffer_bytes[n], "a pool must hold at least one packet"));
        }
        if !self.port_link_class.is_empty() {
            if self.port_link_class.len() != p {
                return Err(SpecError::new("port_link_class", self.port_link_class.len(), format!("expected one value per port ({p})")));
            }
            for (gp, &c) in self.port_link_class.iter().enumerate() {
                if c != NONE && (c > 2 || self.port_kind[gp] == PortKind::HostDown) {
                    return Err(SpecError::new(format!("ports[{gp}].link_class"), c,
                        "expected 0 (electrical), 1 (static optical) or 2 (reconfigurable optical), on a network port"));
                }
            }
        }
        let e = self.ep_node.len();
        for (name, len) in [("ep_rate_bps", self.ep_rate_bps.len()), ("ep_prop_ps", self.ep_prop_ps.len()),
                            ("ep_down_port", self.ep_down_port.len())] {
            if len != e {
                return Err(SpecError::new(name, len, format!("expected one value per endpoint ({e})")));
            }
        }
        for gp in 0..p {
            let kind = self.port_kind[gp];
            if kind != PortKind::Unused && self.port_rate_bps[gp] == 0 {
                return Err(SpecError::new(format!("ports[{gp}].rate"), 0, "rate must be positive"));
            }
            match kind {
                PortKind::Electrical => {
                    let q = self.port_peer[gp];
                    if q as usize >= p || self.port_peer[q as usize] != gp as u32 || self.port_kind[q as usize] != PortKind::Electrical {
                        return Err(SpecError::new(format!("ports[{gp}].peer"), q, "electrical links must pair two electrical ports"));
                    }
                }
                PortKind::HostDown => {
                    let h = self.port_peer[gp];
                    if h as usize >= e || self.ep_down_port[h as usize] != gp as u32 {
                        return Err(SpecError::new(format!("ports[{gp}].peer"), h, "host downlink must name the host that uses it"));
                    }
                }
                _ => {}
            }
        }
        for (i, &node) in self.ep_node.iter().enumerate() {
            if node as usize >= n {
                return Err(SpecError::new(format!("endpoints[{i}].node"), node, format!("node out of range 0..{n}")));
            }
            if self.ep_rate_bps[i] == 0 {
                return Err(SpecError::new(format!("endpoints[{i}].rate"), 0, "rate must be positive"));
            }
            if self.hosts_mode {
                let dp = self.ep_down_port[i];
                if dp as usize >= p || self.port_kind[dp as usize] != PortKind::HostDown {
                    return Err(SpecError::new(format!("endpoints[{i}].down_port"), dp, "not a host downlink port"));
                }
            }
        }
        let f = self.flow_src.len();
        for (name, len) in [("flows.start", self.flow_start_ps.len()), ("flows.dst", self.flow_dst.len()), ("flows.size", self.flow_size.len())] {
            if len != f {
                return Err(SpecError::new(name, len, format!("expected one value per flow ({f})")));
            }
        }
        for i in 0..f {
            if self.flow_src[i] as usize >= e {
                return Err(SpecError::new(format!("flows[{i}].src"), self.flow_src[i], format!("unknown endpoint (0..{e})")));
            }
            if self.flow_dst[i] as usize >= e {
                return Err(SpecError::new(format!("flows[{i}].dst"), self.flow_dst[i], format!("unknown endpoint (0..{e})")));
            }
            if self.flow_src[i] == self.flow_dst[i] {
                return Err(SpecError::new(format!("flows[{i}].dst"), self.flow_dst[i], "a flow needs two different endpoints"));
            }
            if self.flow_size[i] == 0 {
                return Err(SpecError::new(format!("flows[{i}].size"), 0, "size must be positive"));
            }
            if i > 0 && self.flow_start_ps[i] < self.flow_start_ps[i - 1] && self.flow_dep_ptr.is_empty() {
                return Err(SpecError::new(format!("flows[{i}].start"), self.flow_start_ps[i], "flows must be sorted by start time"));
            }
        }
        self.validate_deps(f)?;
        if !self.flow_transport.is_empty() && self.flow_transport.len() != f {
            return Err(SpecError::new("flows.transport", self.flow_transport.len(), format!("expected one value per flow ({f})")));
        }
        if !self.flow_app_rate_bps.is_empty() {
            if self.flow_app_rate_bps.len() != f {
                return Err(SpecError::new("flows.rate", self.flow_app_rate_bps.len(), format!("expected one value per flow ({f})")));
            }
            for (i, &r) in self.flow_app_rate_bps.iter().enumerate() {
                let tcp = matches!(self.flow_transport.get(i), Some(TransportKind::Tcp) | Some(TransportKind::Dctcp));
                if r > 0 && !tcp {
                    return Err(SpecError::new(format!("flows[{i}].rate"), r, "an application rate needs a TCP or DCTCP flow"));
                }
            }
        }
        if self.pias_thresholds.windows(2).any(|w| w[1] <= w[0]) || self.pias_thresholds.contains(&0) {
            return Err(SpecError::new("pias_thresholds", &self.pias_thresholds, "expected increasing positive byte counts"));
        }
        for (i, &(fl, _)) in self.loss.iter().enumerate() {
            if fl as usize >= f {
                return Err(SpecError::new(format!("loss[{i}].flow"), fl, format!("unknown flow (0..{f})")));
            }
        }
        if !self.port_disc.is_empty() && self.port_disc.len() != p {
            return Err(SpecError::new("port_disc", self.port_disc.len(), format!("expected one value per port ({p})")));
        }
        for (gp, d) in self.port_disc.iter().enumerate() {
            if d.class_cap.len() > 8 {
                return Err(SpecError::new(format!("ports[{gp}].classes"), d.class_cap.len(), "at most 8 priority classes"));
            }
            if !d.weights.is_empty() && (d.weights.len() != d.class_cap.len() || d.weights.contains(&0)) {
                return Err(SpecError::new(format!("ports[{gp}].weights"), &d.weights,
                    "one positive weight per priority class"));
            }
            if d.class_cap.len() > 1 && d.class_cap.contains(&0) {
                return Err(SpecError::new(format!("ports[{gp}].class_cap"), &d.class_cap, "every priority class needs a positive byte cap"));
            }
            if d.served() && self.port_kind[gp] == PortKind::Optical && !self.slice_ps.is_empty() && self.router != RouterKind::Expander {
                return Err(SpecError::new(format!("ports[{gp}].discipline"), "priority/trim",
                    "priority classes and trimming on a cyclic optical port need the expander router (routes re-decided when a circuit goes); \
                     elsewhere they are supported on electrical, host and static optical ports"));
            }
        }
        let t = &self.transport;
        let uses = |k: TransportKind| self.flow_transport.contains(&k);
        if uses(TransportKind::Tcp) || uses(TransportKind::Dctcp) {
            if t.tcp_init_cwnd == 0 {
                return Err(SpecError::new("tcp_init_cwnd", 0, "must be at least one segment"));
            }
            if t.tcp_init_ssthresh == 0 {
                return Err(SpecError::new("tcp_init_ssthresh", 0, "must be at least one segment"));
            }
            if t.tcp_dupack == 0 {
                return Err(SpecError::new("tcp_dupack", 0, "must be at least 1"));
            }
            if t.tcp_min_rto_ps == 0 || t.tcp_init_rto_ps == 0 || t.tcp_max_rto_ps < t.tcp_min_rto_ps {
                return Err(SpecError::new("tcp_rto", (t.tcp_min_rto_ps, t.tcp_init_rto_ps, t.tcp_max_rto_ps),
                    "min and initial RTO must be positive and max RTO >= min RTO"));
            }
            if !(t.dctcp_g > 0.0 && t.dctcp_g <= 1.0) {
                return Err(SpecError::new("dctcp_g", t.dctcp_g, "expected 0 < g <= 1"));
            }
        }
        if uses(TransportKind::Ndp) {
            if t.ndp_init_window == 0 {
                return Err(SpecError::new("ndp_init_window", 0, "must be at least one packet"));
            }
            if t.ndp_rto_ps == 0 {
                return Err(SpecError::new("ndp_rto", 0, "must be positive"));
            }
            if !(t.ndp_pull_rate > 0.0 && t.ndp_pull_rate <= 100.0) {
                return Err(SpecError::new("ndp_pull_rate", t.ndp_pull_rate, "must be in (0, 100]"));
            }
        }
        if uses(TransportKind::Credit) {
            if let Some(k) = self.flow_transport.iter().find(|&&k| k != TransportKind::Credit) {
                return Err(SpecError::new("transport", format!("{k:?}").to_lowercase(),
                    "credit-based flow control makes the whole network lossless: every flow uses credit"));
            }
            if t.credit_bytes < (self.mtu_bytes + self.header_bytes) as u64 {
                return Err(SpecError::new("credit_bytes", t.credit_bytes,
                    format!("credits per (link, virtual channel) must hold one full packet ({} B)", self.mtu_bytes + self.header_bytes)));
            }
            if !(1..=8).contains(&t.credit_vcs) {
                return Err(SpecError::new("credit_vcs", t.credit_vcs, "expected 1..=8 virtual channels"));
            }
            if t.deadlock_timeout_ps == 0 {
                return Err(SpecError::new("deadlock_timeout", 0, "must be positive"));
            }
            if let Some(gp) = self.port_disc.iter().position(|d| d.vc_class >= 8) {
                return Err(SpecError::new(format!("ports[{gp}].vc_class"), self.port_disc[gp].vc_class,
                    "expected a virtual-channel class 0..8"));
            }
        }
        if self.flow_transport.iter().any(|k| k.reliable()) && (t.ctrl_bytes == 0 || t.ctrl_bytes > self.header_bytes + self.mtu_bytes) {
            return Err(SpecError::new("ctrl_bytes", t.ctrl_bytes, "control packets need 1..=MTU wire bytes"));
        }
        if self.mtu_bytes == 0 {
            return Err(SpecError::new("mtu", 0, "must be positive"));
        }
        for &w in &self.watch_ports {
            if w as usize >= p {
                return Err(SpecError::new("watch_ports", w, format!("port out of range 0..{p}")));
            }
        }
        for (i, r) in self.routes.iter().enumerate() {
            if r.0 as usize >= n || r.1 as usize >= n {
                return Err(SpecError::new(format!("routes[{i}]"), (r.0, r.1), format!("node out of range 0..{n}")));
            }
            if r.3.is_empty() {
                return Err(SpecError::new(format!("routes[{i}].hops"), 0, "a route needs at least one hop"));
            }
            for &(gp, dep) in &r.3 {
                if gp as usize >= p {
                    return Err(SpecError::new(format!("routes[{i}].port"), gp, format!("port out of range 0..{p}")));
                }
                let s = self.slice_ps.len().max(1) as u32;
                if dep != WILD && dep >= s {
                    return Err(SpecError::new(format!("routes[{i}].dep_ts"), dep, format!("slice out of range 0..{s}")));
                }
            }
        }
        let s = self.slice_ps.len().max(1) as u32;
        for (i, (_, en)) in self.entries.iter().enumerate() {
            for (name, v) in [("arr_ts", en.arr), ("dep_ts", en.dep)] {
                if v != WILD && v >= s {
                    return Err(SpecError::new(format!("tables[{i}].{name}"), v, format!("slice out of range 0..{s}")));
                }
            }
        }
        if self.services.offload_queues > 0 {
            if !self.hosts_mode {
                return Err(SpecError::new("buffer_offload", self.services.offload_queues,
                    "buffer offloading needs hosts below the nodes (hosts_per_node >= 1)"));
            }
            if self.slice_ps.is_empty() {
                return Err(SpecError::new("buffer_offload", self.services.offload_queues,
                    "buffer offloading needs a cyclic optical schedule"));
            }
        }
        if self.services.eqo_interval_ps > 0 && self.slice_ps.is_empty() {
            return Err(SpecError::new("eqo_interval", self.services.eqo_interval_ps,
                "queue-occupancy estimation needs a cyclic optical schedule"));
        }
        let _ = NONE;
        Ok(())
    }

    /// Co-flow barriers: one id per flow, dense from 0, gaps per flow if any; not with
    /// per-flow dependencies.
    fn validate_coflows(&self, f: usize) -> Result<(), SpecError> {
        if !self.flow_dep_ptr.is_empty() || !self.flow_dep_ids.is_empty() {
            return Err(SpecError::new("flows.coflow", self.flow_coflow.len(), "co-flow barriers and per-flow dependencies cannot be combined"));
        }
        if self.flow_coflow.len() != f {
            return Err(SpecError::new("flows.coflow", self.flow_coflow.len(), format!("expected one value per flow ({f})")));
        }
        if !self.flow_gap_ps.is_empty() && self.flow_gap_ps.len() != f {
            return Err(SpecError::new("flows.gap", self.flow_gap_ps.len(), format!("expected one value per flow ({f})")));
        }
        let n = self.coflows();
        let mut used = vec![false; n];
        for &c in &self.flow_coflow {
            if c != NONE {
                used[c as usize] = true;
            }
        }
        if let Some(c) = used.iter().position(|&u| !u) {
            return Err(SpecError::new("flows.coflow", c, format!("co-flow ids must be dense: no flow in co-flow {c} of 0..{n}")));
        }
        Ok(())
    }

    /// Number of co-flows (0 without barriers).
    pub fn coflows(&self) -> usize {
        self.flow_coflow.iter().filter(|&&c| c != NONE).map(|&c| c as usize + 1).max().unwrap_or(0)
    }

    /// The flows flow `i` waits for (empty without dependencies).
    pub fn deps_of(&self, i: usize) -> &[u32] {
        if self.flow_dep_ptr.is_empty() {
            return &[];
        }
        &self.flow_dep_ids[self.flow_dep_ptr[i] as usize..self.flow_dep_ptr[i + 1] as usize]
    }

    /// Dependencies: well-formed lists of known flows, no flow after itself, no cycle.
    fn validate_deps(&self, f: usize) -> Result<(), SpecError> {
        if !self.flow_coflow.is_empty() {
            return self.validate_coflows(f);
        }
        if self.flow_dep_ptr.is_empty() {
            if !self.flow_dep_ids.is_empty() || !self.flow_gap_ps.is_empty() {
                return Err(SpecError::new("flows.after", self.flow_dep_ids.len(), "dependency ids without flow_dep_ptr"));
            }
            return Ok(());
        }
        let ptr = &self.flow_dep_ptr;
        if ptr.len() != f + 1 || ptr[0] != 0 || ptr.windows(2).any(|w| w[1] < w[0]) || ptr[f] as usize != self.flow_dep_ids.len() {
            return Err(SpecError::new("flows.after", ptr.len(), format!("expected {} non-decreasing offsets from 0 to {}", f + 1, self.flow_dep_ids.len())));
        }
        if !self.flow_gap_ps.is_empty() && self.flow_gap_ps.len() != f {
            return Err(SpecError::new("flows.gap", self.flow_gap_ps.len(), format!("expected one value per flow ({f})")));
        }
        for i in 0..f {
            for &d in self.deps_of(i) {
                if d as usize >= f {
                    return Err(SpecError::new(format!("flows[{i}].after"), d, format!("unknown flow (0..{f})")));
                }
                if d as usize == i {
                    return Err(SpecError::new(format!("flows[{i}].after"), d, "a flow cannot start after itself"));
                }
            }
        }
        // Kahn's algorithm: what is left after peeling flows whose dependencies are all
        // peeled lies on (or behind) a cycle
        let mut waiting: Vec<u32> = (0..f).map(|i| self.deps_of(i).len() as u32).collect();
        let mut after: Vec<Vec<u32>> = vec![Vec::new(); f];
        for i in 0..f {
            for &d in self.deps_of(i) {
                after[d as usize].push(i as u32);
            }
        }
        let mut ready: Vec<u32> = (0..f as u32).filter(|&i| waiting[i as usize] == 0).collect();
        let mut peeled = 0usize;
        while let Some(g) = ready.pop() {
            peeled += 1;
            for &h in &after[g as usize] {
                waiting[h as usize] -= 1;
                if waiting[h as usize] == 0 {
                    ready.push(h);
                }
            }
        }
        if peeled < f {
            // name a flow on the cycle: follow unpeeled dependencies until one repeats
            let mut cur = (0..f).find(|&i| waiting[i] > 0).expect("some flow is unpeeled");
            let mut seen = vec![false; f];
            while !seen[cur] {
                seen[cur] = true;
                cur = *self.deps_of(cur).iter().find(|&&d| waiting[d as usize] > 0).expect("an unpeeled flow waits for an unpeeled one") as usize;
            }
            return Err(SpecError::new(format!("flows[{cur}].after"), self.deps_of(cur),
                "the flow depends on itself through a cycle of dependencies"));
        }
        Ok(())
    }
}
