//! NegotiaToR (Liang et al., SIGCOMM'24; docs/arch/negotiator.md): ToRs negotiate one-hop
//! circuits every epoch through an in-band control plane over one layer of AWGRs.
//!
//! Each epoch = a predefined phase (P slots with a guardband; a rotating round robin
//! gives every ToR pair one connection per epoch carrying the scheduling messages and
//! one piggybacked data packet) and a scheduled phase (no reconfiguration; each port
//! sends to the destination it accepted). Matching = binary ToR-level REQUEST,
//! port-level GRANT (one ring per ToR on the parallel network, one ring per port on
//! thin-clos), port-level ACCEPT (one ring per port), RRM pointer updates, pipelined
//! over three epochs. Engine shape: slot by slot over the active set (sources with
//! queued data, sources with accepted ports); control messages are modeled per message
//! with their exact propagation delay (a message is used at the first epoch start at or
//! after its arrival; the grants of one round together, see Pipeline).
//!
//! Decisions (summarized in docs/arch/negotiator.md#decisions):
//! * Thin-clos wiring: §1.2 construction generalized: W = N/S ToRs per group, AWGR(p,a)
//!   connects port p of group a to port p of group (a+p) mod S; a pair always uses the
//!   same port index on both ends. Requires S | N.
//! * Wavelength routing: the sender alone picks the output (cyclic AWGR); the engine
//!   checks every transmission against the wiring and for two senders on one AWGR output
//!   (destination ingress port) in one slot (collision).
//! * Predefined round robin (parallel): slot r, port p of ToR i reaches ToR
//!   i + 1 + r·S + ((p + e) mod S) (mod N) in epoch e — the port→offset assignment
//!   rotates by one port every epoch. Thin-clos: step c = slot mod W of the cyclic round
//!   robin. If more predefined slots than one round needs are configured, the round
//!   robin repeats (extra piggyback connections); scheduling messages use the first.
//! * Pipeline: request in predefined(e) → grant computed at the start of e+1 from the
//!   requests that have arrived, sent in predefined(e+1) → accept computed at the start
//!   of e+2, data in scheduled(e+2). A longer propagation stretches it automatically.
//!   A GRANT round is for one scheduled phase: the grants sent in predefined(g) are all
//!   accepted at the start of g + L, L = the epochs until the message of the latest
//!   first-round slot has arrived — even a grant that arrived an epoch earlier (when
//!   the first round's arrivals straddle an epoch start), since the ingress ports it
//!   names are only free of the neighbouring rounds' grants in that phase.
//! * Rings are randomly initialized once at start-up (stream "neg.rings"); a shared
//!   GRANT ring may grant several ports to one source when fewer sources request.
//! * Request threshold with PB: total bytes of the per-destination queue (all PIAS
//!   levels) > 3 piggybacked payloads, evaluated when the request is sent (before that
//!   slot's piggybacked packet leaves). Without PB: any queued byte.
//! * No guardband at the predefined→scheduled transition (the paper's arithmetic);
//!   `transition_guard` adds one at the start of the first scheduled slot.
//! * PB off: predefined slot = guardband + control bytes (10 ns + 30 B @ 100 Gb/s =
//!   12.4 ns); the freed time is added to the scheduled phase as full slots plus one
//!   shorter tail slot, so the epoch length is unchanged.
//! * Packets: a packet belongs to one flow and one PIAS level (the first 1 KB, the next
//!   9 KB, the rest are tagged at arrival); one packet per slot per port; data must have
//!   arrived by the start of the transmission.
//! * Failures: `fail_links` of the 2·N·S directed ToR–AWGR fibers (egress and ingress)
//!   fail at `fail_at` and are repaired at `recover_at`. Dummy messages in every
//!   predefined slot; ingress failure = nothing received on a port for K epochs;
//!   egress failure = only negative feedback from the port's receivers for K epochs
//!   (feedback rides on the reverse connection); K = `detect_epochs` (default 3, not
//!   given by the paper); recovery after K good epochs. The detecting ToR excludes the
//!   link at once, all others one epoch later (broadcast in the next predefined phase).
//!   Data sent on a failed, not yet excluded link is dropped ("link_failure"); lost
//!   scheduling messages are simply lost.
//! * Thin-clos relay around failures (§1.9, `fault_relay`, on by default): a pair whose
//!   one port-to-port path is known to its source as failed is detoured through an
//!   intermediate m (first working egress port of the source after a pair-dependent
//!   offset, first ToR behind it whose own path to the destination is known to work):
//!   the source's REQUESTs for the pair's data go to m as part of its demand towards m,
//!   its data crosses i → m (piggybacked or scheduled) into m's relay queue for the
//!   destination, and m requests and forwards it like its own traffic. The broadcast of a
//!   detection is idealized as reaching every ToR one epoch later (on thin-clos it would
//!   itself be relayed). The parallel network needs no relay (the rotating round robin
//!   keeps control connectivity; data uses the other ports).
//! * Variants (`variant`, docs/arch/negotiator.md#variants):
//!   - data-size (request carries the queue size, grant largest first), hol-delay
//!     (request carries (1−α)(HoL_q0+HoL_q1) + α·HoL_q2, α = 0.001, grant longest first
//!     — the §7.7 reading of the garbled formula).
//!   - iterative:N — iteration k+1 of a scheduling process sends, in the epoch after
//!     iteration k's ACCEPT (when the destinations have read the ACCEPTs), REQUESTs
//!     carrying the indices of the source's still unmatched ports; destinations grant
//!     only still unmatched ingress ports on those indices; RRM pointers move in every
//!     iteration. Each extra iteration adds 3 epochs: data of a process flows in
//!     scheduled(e + 2 + 3(N−1)); the matches of all iterations are used together.
//!     Message sizes unchanged (the port indices ride in the header).
//!   - relay (thin-clos only; needs PIAS): two-hop traffic-aware relay. ① At each epoch
//!     start a source offers the lowest-priority backlog of a destination that exceeds
//!     `relay_threshold` (default one port's scheduled phase, 30 × 1115 B) to one
//!     intermediate behind each of its ports that carries no high-volume direct traffic
//!     (at most one scheduled phase queued for the ToRs it reaches); volume ≤ one phase;
//!     intermediates rotate with the epoch. ② The intermediate grants relay volume only
//!     if its relay buffer for that destination (queued + granted, `relay_capacity`,
//!     default two phases) has room and its own link towards the destination carries no
//!     high-volume direct traffic; the volume rides on a direct grant to the same source
//!     or takes a free ingress port (relay-only grant). ③ ACCEPT takes direct grants
//!     first; on the accepted circuit the source sends its direct data first, then up to
//!     the granted volume from the lowest-priority queue. The intermediate forwards
//!     relayed data after its own mice and before its own lowest priority. Unused or
//!     rejected volume is released at the next epoch start.
//!   - stateful: each predefined message carries the bytes that arrived for the pair
//!     since the last report; the destination keeps pending bytes per source, subtracts
//!     piggybacked bytes it receives, grants only requesters with pending bytes > 0 and
//!     decrements by min(pending, one port's scheduled phase) per grant; the source's
//!     ACCEPT commits it, a reject reverts it when the ACCEPT message arrives.
//!   - projector (ProjecToR-like): at each epoch start a source assigns its ports to
//!     bundles (the data one port sends in one scheduled phase, in arrival order; thin-
//!     clos: the oldest among the ToRs the port reaches), oldest first by the waiting
//!     time of the bundle's first byte; per-port requests carry that age; each
//!     destination port grants the oldest request (ties: lowest source after a pointer
//!     rotating by epoch); the grant is the match (one iteration, no ACCEPT choice).
//!     PB, PQ and the request threshold are kept.

use super::common::*;
use crate::error::SpecError;
use crate::units::{Ps, Rate, NONE};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variant {
    Base,
    DataSize,
    HolDelay { alpha: f64 },
    /// Iterative NegotiaToR Matching with `iters` ≥ 1 iterations (§1.11).
    Iterative { iters: u32 },
    /// Traffic-aware selective two-hop relay (thin-clos only, §1.11).
    Relay,
    /// Stateful scheduling: per-source pending-bytes matrix at destinations (§1.11).
    Stateful,
    /// ProjecToR-like: per-port requests, oldest bundle first, one iteration (§1.11).
    Projector,
}

impl Variant {
    fn iters(&self) -> u32 {
        match *self {
            Variant::Iterative { iters } => iters,
            _ => 1,
        }
    }
}

/// Plain-data input of a NegotiaToR run.
#[derive(Debug, Clone)]
pub struct NegSpec {
    pub tors: u32,
    pub ports: u32,
    pub topology: Topology,
    pub port_rate_bps: u64,
    pub guardband_ps: Ps,
    /// 0 = one round robin (⌈(N−1)/S⌉ parallel, W thin-clos).
    pub pre_slots: u32,
    pub pre_slot_ps: Ps,
    pub ctrl_bytes: u64,
    pub sched_slots: u32,
    pub sched_slot_ps: Ps,
    pub header_bytes: u64,
    pub prop_ps: Ps,
    pub pb: bool,
    pub pq: bool,
    pub pias_t1: u64,
    pub pias_t2: u64,
    pub req_threshold_pkts: u64,
    pub transition_guard: bool,
    pub variant: Variant,
    pub fail_fraction: f64,
    pub fail_at_ps: Ps,
    pub recover_at_ps: Ps,
    pub detect_epochs: u32,
    /// Relay variant: lowest-priority bytes queued for one destination above which the
    /// source asks intermediates to relay (0 = one port's scheduled phase).
    pub relay_threshold: u64,
    /// Relay variant: relay buffer per (intermediate, final destination) in bytes
    /// (0 = two ports' scheduled phases).
    pub relay_capacity: u64,
    /// Thin-clos: relay scheduling messages and data around failed links.
    pub fault_relay: bool,
    pub seed: u64,
    pub duration_ps: Ps,
    pub sample_ps: Ps,
    pub flow_start_ps: Vec<u64>,
    pub flow_src: Vec<u32>,
    pub flow_dst: Vec<u32>,
    pub flow_size: Vec<u64>,
}

/// Derived epoch layout (all offsets from the epoch start).
#[derive(Debug, Clone)]
pub struct Layout {
    pub epoch_ps: Ps,
    pub pre_slots: u32,
    pub rr_slots: u32,
    pub pre_slot_ps: Ps,
    pub pb_payload: u64,
    /// Scheduled slots: (offset, length, window start offset within slot, payload).
    pub sched: Vec<(Ps, Ps, Ps, u64)>,
}

pub fn layout(s: &NegSpec) -> Result<Layout, SpecError> {
    let rate = Rate::new(s.port_rate_bps);
    if s.port_rate_bps == 0 {
        return Err(SpecError::new("link_rate", 0, "must be positive"));
    }
    let (n, p) = (s.tors, s.ports);
    let rr = match s.topology {
        Topology::Parallel => (n - 1).div_ceil(p),
        // W steps (W = 1 when N < S, as in `Fabric`)
        Topology::ThinClos => if n < p { 1 } else { n / p },
    };
    let pre_slots = if s.pre_slots == 0 { rr } else { s.pre_slots };
    if pre_slots < rr {
        return Err(SpecError::new("predefined_slots", s.pre_slots, format!("one round robin needs at least {rr} predefined slots")));
    }
    let ctrl_tx = rate.tx(s.ctrl_bytes);
    if s.pre_slot_ps < s.guardband_ps + ctrl_tx {
        return Err(SpecError::new("predefined_slot", s.pre_slot_ps, "must hold the guardband plus the control bytes"));
    }
    if s.sched_slot_ps == 0 || bytes_in(s.sched_slot_ps, rate) <= s.header_bytes {
        return Err(SpecError::new("scheduled_slot", s.sched_slot_ps, "must hold the data header plus at least one byte"));
    }
    let pb_payload = bytes_in(s.pre_slot_ps - s.guardband_ps, rate) - s.ctrl_bytes;
    if s.pb && pb_payload == 0 {
        return Err(SpecError::new("predefined_slot", s.pre_slot_ps, "leaves no room for a piggybacked payload"));
    }
    let epoch_ps = pre_slots as u64 * s.pre_slot_ps + s.sched_slots as u64 * s.sched_slot_ps;
    let eff_pre = if s.pb { s.pre_slot_ps } else { s.guardband_ps + ctrl_tx };
    let sched_start = pre_slots as u64 * eff_pre;
    let sched_len = epoch_ps - sched_start;
    let mut sched = Vec::new();
    let mut off = 0;
    while off < sched_len {
        let len = s.sched_slot_ps.min(sched_len - off);
        let lo = if off == 0 && s.transition_guard { s.guardband_ps } else { 0 };
        let win = len.saturating_sub(lo);
        let cap = bytes_in(win, rate);
        if cap > s.header_bytes {
            sched.push((sched_start + off, len, lo, cap - s.header_bytes));
        }
        off += len;
    }
    if sched.is_empty() && s.sched_slots > 0 {
        return Err(SpecError::new("scheduled_slots", s.sched_slots, "no scheduled slot fits a packet"));
    }
    Ok(Layout { epoch_ps, pre_slots, rr_slots: rr, pre_slot_ps: eff_pre, pb_payload: if s.pb { pb_payload } else { 0 }, sched })
}

/// Conflict-free port-level matching of one epoch: GRANT at destinations, ACCEPT at
/// sources (also used stand-alone by the property test).
pub struct Matcher {
    pub n: u32,
    pub s: u32,
    pub topo: Topology,
    pub w: u32,
    pub g: u32,
    /// Grant ring pointers: parallel one per ToR (index d), thin-clos one per port (d·S+p).
    pub gptr: Vec<u32>,
    /// Accept ring pointers, one per source port (i·S+p).
    pub aptr: Vec<u32>,
}

impl Matcher {
    pub fn new(n: u32, s: u32, topo: Topology, seed: u64) -> Self {
        let (w, g) = if topo == Topology::ThinClos {
            let w = if n < s { 1 } else { n / s };
            (w, n / w)
        } else {
            (n, 1)
        };
        let gptr = match topo {
            Topology::Parallel => random_pointers(seed, "neg.rings.grant", n as usize, n),
            Topology::ThinClos => random_pointers(seed, "neg.rings.grant", (n * s) as usize, w),
        };
        let aptr = match topo {
            Topology::Parallel => random_pointers(seed, "neg.rings.accept", (n * s) as usize, n),
            Topology::ThinClos => random_pointers(seed, "neg.rings.accept", (n * s) as usize, w),
        };
        Matcher { n, s, topo, w, g, gptr, aptr }
    }

    /// First entry of sorted `cands` (by key) at or after `ptr` cyclically in 0..modulo
    /// for which `ok` holds.
    fn ring_pick(cands: &[(u32, u64)], ptr: u32, mut ok: impl FnMut(u32) -> bool) -> Option<usize> {
        let len = cands.len();
        if len == 0 {
            return None;
        }
        let start = cands.partition_point(|c| c.0 < ptr);
        (0..len).map(|k| (start + k) % len).find(|&k| ok(cands[k].0))
    }

    /// GRANT at destination `d`: `reqs` = sorted (src, info) of the requests received.
    /// Pushes (src, port, amount) grants. `port_ok(p)` = own ingress usable;
    /// `take(src, p)` is called on the candidates of port p in ring-priority order and
    /// the first `Some(amount)` is granted (it may record state, e.g. a pending-bytes
    /// decrement). `by_info`: grant larger info first (informative variants).
    pub fn grant(&mut self, d: u32, reqs: &[(u32, u64)], by_info: bool, port_ok: impl Fn(u32) -> bool, mut take: impl FnMut(u32, u32) -> Option<u64>, out: &mut Vec<(u32, u32, u64)>) {
        match self.topo {
            Topology::Parallel => {
                if by_info {
                    // order: info desc, then ring distance from the pointer
                    let ptr = self.gptr[d as usize];
                    let n = self.n;
                    let mut ord: Vec<(u32, u64)> = reqs.to_vec();
                    ord.sort_by_key(|&(src, info)| (std::cmp::Reverse(info), (src + n - ptr) % n));
                    let mut k = 0usize;
                    for p in 0..self.s {
                        if !port_ok(p) {
                            continue;
                        }
                        let mut amt = 0;
                        if let Some(j) = (0..ord.len()).map(|x| (k + x) % ord.len()).find(|&j| take(ord[j].0, p).map(|a| amt = a).is_some()) {
                            let src = ord[j].0;
                            out.push((src, p, amt));
                            self.gptr[d as usize] = (src + 1) % n;
                            k = j + 1;
                        }
                    }
                    return;
                }
                for p in 0..self.s {
                    if !port_ok(p) {
                        continue;
                    }
                    let ptr = self.gptr[d as usize];
                    let mut amt = 0;
                    if let Some(k) = Self::ring_pick(reqs, ptr, |src| take(src, p).map(|a| amt = a).is_some()) {
                        let src = reqs[k].0;
                        out.push((src, p, amt));
                        self.gptr[d as usize] = (src + 1) % self.n;
                    }
                }
            }
            Topology::ThinClos => {
                let w = self.w;
                for p in 0..self.s.min(self.g) {
                    if !port_ok(p) {
                        continue;
                    }
                    let g = (d / w + self.g - p) % self.g; // source group reaching port p of d
                    let lo = reqs.partition_point(|c| c.0 < g * w);
                    let hi = reqs.partition_point(|c| c.0 < (g + 1) * w);
                    let group = &reqs[lo..hi];
                    let pi = (d * self.s + p) as usize;
                    let mut amt = 0;
                    let pick = if by_info {
                        let ptr = self.gptr[pi];
                        let mut ord: Vec<usize> = (0..group.len()).collect();
                        ord.sort_by_key(|&k| (std::cmp::Reverse(group[k].1), (group[k].0 % w + w - ptr) % w));
                        ord.into_iter().find(|&k| take(group[k].0, p).map(|a| amt = a).is_some())
                    } else {
                        Self::ring_pick(group, g * w + self.gptr[pi], |src| take(src, p).map(|a| amt = a).is_some())
                    };
                    if let Some(k) = pick {
                        let src = group[k].0;
                        out.push((src, p, amt));
                        self.gptr[pi] = (src % w + 1) % w;
                    }
                }
            }
        }
    }

    /// ACCEPT at source `i` for port `p`: `cands` = sorted (dst, 0) granting port p.
    pub fn accept(&mut self, i: u32, p: u32, cands: &[(u32, u64)], ok: impl Fn(u32) -> bool) -> Option<u32> {
        let pi = (i * self.s + p) as usize;
        let (ptr, w) = match self.topo {
            Topology::Parallel => (self.aptr[pi], self.n),
            Topology::ThinClos => {
                if p >= self.g {
                    return None;
                }
                let g = (i / self.w + p) % self.g;
                (g * self.w + self.aptr[pi], self.w)
            }
        };
        let k = Self::ring_pick(cands, ptr, ok)?;
        let d = cands[k].0;
        self.aptr[pi] = (d % w + 1) % w;
        Some(d)
    }
}

/// A REQUEST field as it travels (one per source → destination, or per requested port
/// for the ProjecToR-like variant, or per relay request). `proc_` = the scheduling
/// process (its start epoch) for the iterative variant, 0 otherwise; `mask` = source
/// ports the request may be granted on; `via` = final destination of a relay request
/// (`dst` is then the intermediate), NONE for a direct request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Req {
    dst: u32,
    proc_: u32,
    src: u32,
    via: u32,
    mask: u64,
    /// Request information (informative variants, bundle age) or relay volume.
    info: u64,
}

/// A GRANT field: destination `dst` grants its ingress port `port` to `src`. `relay`:
/// granted for relay only (no direct request); `via`/`vol`: relay volume the source
/// may send through `dst` towards `via`; `vol` is the pending-bytes decrement in the
/// stateful variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    src: u32,
    proc_: u32,
    port: u32,
    relay: bool,
    dst: u32,
    via: u32,
    vol: u64,
}

/// One scheduling process of the iterative variant: matches accumulated over its
/// iterations (source ports → destination, destination ingress ports taken).
struct Proc {
    it: u32,
    sacc: Vec<u32>,
    dtaken: Vec<bool>,
}

/// Relayed bytes waiting at an intermediate (usable from `ready`).
#[derive(Debug, Clone, Copy)]
struct RCell {
    flow: u32,
    bytes: u64,
    ready: Ps,
}

struct Failures {
    on: bool,
    links_eg: Vec<u32>,
    links_in: Vec<u32>,
    down_eg: Vec<bool>,
    down_in: Vec<bool>,
    local_eg: Vec<bool>,
    local_in: Vec<bool>,
    known_eg: Vec<bool>,
    known_in: Vec<bool>,
    bad_eg: Vec<u32>,
    bad_in: Vec<u32>,
    good_eg: Vec<u32>,
    good_in: Vec<u32>,
    state: u8, // 0 before failure, 1 failed, 2 repaired
    detect_epochs: Vec<u64>,
    fail_epoch: u64,
    recover_epoch: u64,
    recovered_epochs: Vec<u64>,
    active_until: u64,
}

/// One NegotiaToR simulation.
pub struct Negotiator {
    spec: NegSpec,
    pub lay: Layout,
    rate: Rate,
    n: u32,
    s: u32,
    fab: Fabric,
    pub matcher: Matcher,
    pias: Pias,
    fl: Flows,
    b: Books,
    voq: Vec<Voq>,
    src_bytes: Vec<u64>,
    active: Vec<u32>,
    in_active: Vec<bool>,
    // pipeline mailboxes indexed by epoch mod M
    mbox: usize,
    req_box: Vec<Vec<Req>>,
    grant_box: Vec<Vec<Grant>>,
    acc: Vec<u32>,
    // iterative variant
    iters: u32,
    req_lag: u64,
    acc_lag: u64,
    procs: std::collections::BTreeMap<u64, Proc>,
    due_now: Vec<u64>,
    due_next: Vec<u64>,
    // stateful variant: pending bytes per (dst·N + src) at the destination; bytes
    // arrived at the source and not yet reported per (src·N + dst); deltas in flight
    pend: Vec<i64>,
    unrep: Vec<u64>,
    pend_box: Vec<Vec<(u32, i64)>>,
    // the accepted grant's volume per source port and what the scheduled phase sent on
    // it: the difference goes back to the destination's pending bytes (a source that
    // sends less than granted, e.g. because the bytes left by piggyback meanwhile, would
    // otherwise leave a remnant the matrix no longer shows)
    svol: Vec<u64>,
    ssent: Vec<u64>,
    // ProjecToR-like variant: destination each source port requests this epoch
    proj_req: Vec<u32>,
    proj_age: Vec<u64>,
    // relay variant (and thin-clos relay around failures)
    relay_on: bool,
    /// Relay buffers exist (relay variant, or thin-clos relay around failed links).
    rbuf: bool,
    fault_relay_on: bool,
    /// Thin-clos detours around failed links: (src, intermediate, dst), sorted; and the
    /// intermediate per (src·N + dst) (NONE: direct).
    detour: Vec<(u32, u32, u32)>,
    detour_of: Vec<u32>,
    m_fault_relay_bytes: u64,
    m_detoured_max: u64,
    sched_cap: u64,
    relay_thr: u64,
    relay_cap: u64,
    rq: Vec<std::collections::VecDeque<RCell>>,
    rq_bytes: Vec<u64>,
    reserved: Vec<u64>,
    relay_bytes: Vec<u64>,
    racc: Vec<(u32, u64)>,
    rel_release: Vec<(u32, u64)>,
    relay_reqs: Vec<Req>,
    sched_src: Vec<u32>,
    // position
    epoch: u64,
    pos: u32,
    slot_id: u64,
    done: bool,
    req_thr: u64,
    conn_count: Vec<u64>,
    fail: Failures,
    // metrics
    m_ratio_sum: f64,
    m_ratio_epochs: u64,
    m_grants: u64,
    m_accepts: u64,
    m_pair_grants: u64,
    m_pair_accepts: u64,
    m_requests: u64,
    m_pb_pkts: u64,
    m_pb_bytes: u64,
    m_sched_pkts: u64,
    m_sched_bytes: u64,
    m_sched_idle: u64,
    m_lost_ctrl: u64,
    m_matched_ports: u64,
    m_matched_epochs: u64,
    m_relay_req: u64,
    m_relay_grants: u64,
    m_relay_first: u64,
    m_relay_second: u64,
    m_relay_max: u64,
    m_stateful_blocked: u64,
    first_req_epoch: Vec<u64>,
    first_data_epoch: Vec<u64>,
    pub trace_pairs: bool,
    tmp_grants: Vec<(u32, u32, u64)>,
    tmp_reqs: Vec<(Req, usize)>,
}

impl Negotiator {
    pub fn new(spec: NegSpec) -> Result<Self, SpecError> {
        let fab = Fabric::new(spec.tors, spec.ports, spec.topology)?;
        let lay = layout(&spec)?;
        if spec.prop_ps == 0 {
            return Err(SpecError::new("propagation", 0, "must be positive"));
        }
        if spec.pias_t1 == 0 || spec.pias_t2 <= spec.pias_t1 {
            return Err(SpecError::new("pias_thresholds", (spec.pias_t1, spec.pias_t2), "need 0 < first < second"));
        }
        if !(0.0..=1.0).contains(&spec.fail_fraction) {
            return Err(SpecError::new("fail_links", spec.fail_fraction, "must be a fraction in [0, 1]"));
        }
        if spec.fail_fraction > 0.0 && spec.recover_at_ps <= spec.fail_at_ps {
            return Err(SpecError::new("recover_at", spec.recover_at_ps, "must be after fail_at"));
        }
        if spec.detect_epochs == 0 {
            return Err(SpecError::new("detect_epochs", 0, "must be >= 1"));
        }
        let (n, s) = (spec.tors, spec.ports);
        let fl = Flows::new(
            spec.flow_start_ps.clone(),
            spec.flow_src.clone(),
            spec.flow_dst.clone(),
            spec.flow_size.clone(),
            n,
        )?;
        let b = Books::new(n, spec.duration_ps, spec.sample_ps);
        let rate = Rate::new(spec.port_rate_bps);
        let max_delay = lay.epoch_ps + spec.prop_ps + rate.tx(spec.ctrl_bytes);
        // epochs from a predefined phase to the first epoch start by which the scheduling
        // messages of all its first-round slots have arrived (the latest slot's): the lag
        // of a GRANT round to its scheduled phase, and of an iterative request
        let req_lag = ((lay.rr_slots as u64 - 1) * lay.pre_slot_ps + spec.guardband_ps + rate.tx(spec.ctrl_bytes) + spec.prop_ps).div_ceil(lay.epoch_ps);
        let acc_lag = 2 * req_lag;
        let mbox = (max_delay.div_ceil(lay.epoch_ps) + 3).max(acc_lag + 4) as usize;
        let iters = spec.variant.iters();
        if iters == 0 || iters > 64 {
            return Err(SpecError::new("variant", format!("iterative:{iters}"), "iterations must be 1..64"));
        }
        let relay_on = spec.variant == Variant::Relay;
        if relay_on && spec.topology != Topology::ThinClos {
            return Err(SpecError::new("variant", "relay", "the two-hop relay variant runs on thin-clos only (the parallel network reaches every ToR from every port)"));
        }
        if relay_on && !spec.pq {
            return Err(SpecError::new("variant", "relay", "relays only the lowest PIAS priority: needs priority queues (pq)"));
        }
        let sched_cap: u64 = lay.sched.iter().map(|x| x.3).sum();
        let fault_relay_on = spec.fault_relay && spec.topology == Topology::ThinClos && spec.fail_fraction > 0.0;
        let rbuf = relay_on || fault_relay_on;
        let matcher = Matcher::new(n, s, spec.topology, spec.seed);
        let nn = (n * n) as usize;
        let ns = (n * s) as usize;
        let mut me = Negotiator {
            rate,
            n,
            s,
            fab,
            matcher,
            pias: Pias { on: spec.pq, t1: spec.pias_t1, t2: spec.pias_t2 },
            fl,
            b,
            voq: vec![Voq::default(); nn],
            src_bytes: vec![0; n as usize],
            active: Vec::new(),
            in_active: vec![false; n as usize],
            mbox,
            req_box: vec![Vec::new(); mbox],
            grant_box: vec![Vec::new(); mbox],
            acc: vec![NONE; ns],
            sched_src: Vec::new(),
            iters,
            req_lag,
            acc_lag,
            procs: std::collections::BTreeMap::new(),
            due_now: Vec::new(),
            due_next: Vec::new(),
            pend: if spec.variant == Variant::Stateful { vec![0; nn] } else { Vec::new() },
            unrep: if spec.variant == Variant::Stateful { vec![0; nn] } else { Vec::new() },
            svol: if spec.variant == Variant::Stateful { vec![0; ns] } else { Vec::new() },
            ssent: if spec.variant == Variant::Stateful { vec![0; ns] } else { Vec::new() },
            pend_box: vec![Vec::new(); mbox],
            proj_req: vec![NONE; ns],
            proj_age: vec![0; ns],
            relay_on,
            rbuf,
            fault_relay_on,
            detour: Vec::new(),
            detour_of: if fault_relay_on { vec![NONE; nn] } else { Vec::new() },
            m_fault_relay_bytes: 0,
            m_detoured_max: 0,
            sched_cap,
            relay_thr: if spec.relay_threshold > 0 { spec.relay_threshold } else { sched_cap },
            relay_cap: if spec.relay_capacity > 0 { spec.relay_capacity } else { 2 * sched_cap },
            rq: if rbuf { vec![std::collections::VecDeque::new(); nn] } else { Vec::new() },
            rq_bytes: if rbuf { vec![0; nn] } else { Vec::new() },
            reserved: if relay_on { vec![0; nn] } else { Vec::new() },
            relay_bytes: vec![0; n as usize],
            racc: vec![(NONE, 0); ns],
            rel_release: Vec::new(),
            relay_reqs: Vec::new(),
            epoch: 0,
            pos: 0,
            slot_id: 0,
            done: false,
            req_thr: if spec.pb { spec.req_threshold_pkts * lay.pb_payload } else { 0 },
            conn_count: Vec::new(),
            fail: Failures {
                on: spec.fail_fraction > 0.0,
                links_eg: Vec::new(),
                links_in: Vec::new(),
                down_eg: vec![false; ns],
                down_in: vec![false; ns],
                local_eg: vec![false; ns],
                local_in: vec![false; ns],
                known_eg: vec![false; ns],
                known_in: vec![false; ns],
                bad_eg: vec![0; ns],
                bad_in: vec![0; ns],
                good_eg: vec![0; ns],
                good_in: vec![0; ns],
                state: 0,
                detect_epochs: Vec::new(),
                fail_epoch: 0,
                recover_epoch: 0,
                recovered_epochs: Vec::new(),
                active_until: 0,
            },
            m_ratio_sum: 0.0,
            m_ratio_epochs: 0,
            m_grants: 0,
            m_accepts: 0,
            m_pair_grants: 0,
            m_pair_accepts: 0,
            m_requests: 0,
            m_pb_pkts: 0,
            m_pb_bytes: 0,
            m_sched_pkts: 0,
            m_sched_bytes: 0,
            m_sched_idle: 0,
            m_lost_ctrl: 0,
            m_matched_ports: 0,
            m_matched_epochs: 0,
            m_relay_req: 0,
            m_relay_grants: 0,
            m_relay_first: 0,
            m_relay_second: 0,
            m_relay_max: 0,
            m_stateful_blocked: 0,
            first_req_epoch: vec![u64::MAX; nn],
            first_data_epoch: vec![u64::MAX; nn],
            trace_pairs: false,
            tmp_grants: Vec::new(),
            tmp_reqs: Vec::new(),
            lay,
            spec,
        };
        // control / dummy connections per predefined slot, and a static check that the
        // predefined round robin never puts two senders on one AWGR output
        for k in 0..me.lay.pre_slots {
            let mut c = 0;
            for rot in 0..me.rotations() {
                let mut seen = vec![false; ns];
                for i in 0..n {
                    for p in 0..s {
                        let d = me.pre_conn(rot as u64, k, i, p);
                        if d != NONE {
                            if rot == 0 {
                                c += 1;
                            }
                            if !me.fab.reaches(i, p, d) {
                                me.fab.unreachable += 1;
                            }
                            let key = (d * s + p) as usize;
                            if seen[key] {
                                me.fab.collisions += 1;
                            }
                            seen[key] = true;
                        }
                    }
                }
            }
            me.conn_count.push(c);
        }
        if me.fail.on {
            let total = 2 * ns;
            let count = ((me.spec.fail_fraction * total as f64).round() as usize).clamp(1, total);
            let mut st = crate::rng::Stream::new(me.spec.seed, "neg.failures");
            let mut idx: Vec<u32> = (0..total as u32).collect();
            for j in 0..count {
                let r = j + st.below((total - j) as u32) as usize;
                idx.swap(j, r);
            }
            let mut chosen = idx[..count].to_vec();
            chosen.sort_unstable();
            for l in chosen {
                if (l as usize) < ns {
                    me.fail.links_eg.push(l);
                } else {
                    me.fail.links_in.push(l - ns as u32);
                }
            }
        }
        Ok(me)
    }

    fn rotations(&self) -> u32 {
        match self.spec.topology {
            Topology::Parallel => self.s,
            Topology::ThinClos => 1,
        }
    }

    /// Destination of egress port p of ToR i in predefined slot k of epoch e (NONE: idle).
    #[inline]
    pub fn pre_conn(&self, e: u64, k: u32, i: u32, p: u32) -> u32 {
        let r = k % self.lay.rr_slots;
        match self.spec.topology {
            Topology::Parallel => {
                let q = ((p as u64 + e) % self.s as u64) as u32;
                let o = 1 + r * self.s + q;
                if o >= self.n { NONE } else { (i + o) % self.n }
            }
            Topology::ThinClos => self.fab.thin_rr(r, i, p),
        }
    }

    /// (slot, port) of the first predefined connection of pair (i → d) in epoch e.
    #[inline]
    pub fn pair_slot(&self, e: u64, i: u32, d: u32) -> (u32, u32) {
        match self.spec.topology {
            Topology::Parallel => {
                let idx = (d + self.n - i) % self.n - 1;
                let (r, q) = (idx / self.s, idx % self.s);
                let p = ((q as u64 + self.s as u64 - e % self.s as u64) % self.s as u64) as u32;
                (r, p)
            }
            Topology::ThinClos => (self.fab.thin_rr_step(i, d), self.fab.pair_port(i, d)),
        }
    }

    fn epoch_start(&self, e: u64) -> Ps {
        e * self.lay.epoch_ps
    }

    fn slot_time(&self, e: u64, pos: u32) -> Ps {
        let t0 = self.epoch_start(e);
        if pos < self.lay.pre_slots {
            t0 + pos as u64 * self.lay.pre_slot_ps
        } else {
            t0 + self.lay.sched[(pos - self.lay.pre_slots) as usize].0
        }
    }

    fn admit(&mut self, t: Ps) {
        while let Some(f) = self.fl.pop_until(t) {
            let fi = f as usize;
            let (i, d, size) = (self.fl.src[fi], self.fl.dst[fi], self.fl.size[fi]);
            self.voq[(i * self.n + d) as usize].push(f, self.pias.split(size));
            self.src_bytes[i as usize] += size;
            if !self.unrep.is_empty() {
                self.unrep[(i * self.n + d) as usize] += size;
            }
            self.b.offer(size);
            self.b.events += 1;
            if !self.in_active[i as usize] {
                self.in_active[i as usize] = true;
                self.active.push(i);
            }
        }
    }

    #[inline]
    fn link_up(&self, i: u32, p: u32, d: u32) -> bool {
        !(self.fail.down_eg[(i * self.s + p) as usize] || self.fail.down_in[(d * self.s + p) as usize])
    }

    /// Usable for data according to what ToR `me` knows.
    #[inline]
    fn usable(&self, i: u32, p: u32, d: u32) -> bool {
        let (e, g) = ((i * self.s + p) as usize, (d * self.s + p) as usize);
        !(self.fail.local_eg[e] || self.fail.known_eg[e] || self.fail.known_in[g])
    }

    /// Arrival time of the scheduling message of pair (i → d) sent in epoch e.
    fn ctrl_arrival(&self, e: u64, i: u32, d: u32) -> (Ps, u32) {
        let (k, p) = self.pair_slot(e, i, d);
        let t = self.epoch_start(e) + k as u64 * self.lay.pre_slot_ps + self.spec.guardband_ps + self.rate.tx(self.spec.ctrl_bytes);
        (t + self.spec.prop_ps, p)
    }

    fn mailbox_of(&self, arr: Ps) -> usize {
        (arr.div_ceil(self.lay.epoch_ps) % self.mbox as u64) as usize
    }

    fn request_info(&self, i: u32, d: u32, now: Ps) -> u64 {
        let v = &self.voq[(i * self.n + d) as usize];
        match self.spec.variant {
            Variant::DataSize => v.bytes,
            Variant::HolDelay { alpha } => {
                let hol = |l: usize| v.head_flow(l).map(|f| now.saturating_sub(self.fl.start[f as usize]) as f64).unwrap_or(0.0);
                ((1.0 - alpha) * (hol(0) + hol(1)) + alpha * hol(2)).round() as u64
            }
            _ => 0,
        }
    }

    /// Start of epoch e: failure bookkeeping, ACCEPT (grants that arrived), GRANT
    /// (requests that arrived).
    fn begin_epoch(&mut self) {
        let e = self.epoch;
        let t0 = self.epoch_start(e);
        self.update_failures(e, t0);
        if self.fault_relay_on {
            self.update_detours();
        }
        let slot = (e % self.mbox as u64) as usize;
        // stateful: size reports, piggyback receipts and reverted grants that arrived
        let deltas = std::mem::take(&mut self.pend_box[slot]);
        for &(k, dl) in &deltas {
            self.pend[k as usize] += dl;
        }
        self.pend_box[slot] = deltas;
        self.pend_box[slot].clear();
        // relay: allocations of the last scheduled phase not used (or not accepted)
        if self.relay_on {
            for pi in 0..self.racc.len() {
                let (via, rem) = self.racc[pi];
                if via != NONE && rem > 0 {
                    let m = self.acc[pi];
                    self.rel_release.push((m * self.n + via, rem));
                }
                self.racc[pi] = (NONE, 0);
            }
            for (k, v) in std::mem::take(&mut self.rel_release) {
                self.reserved[k as usize] -= v;
            }
        }
        self.accept_step(e, slot);
        self.grant_step(e, slot);
        if self.spec.variant == Variant::Projector || self.relay_on {
            self.admit(t0 + self.spec.guardband_ps);
            self.source_plans(e, t0 + self.spec.guardband_ps);
        }
    }

    /// ACCEPT at sources from the grants that arrived; fills `acc` (and `racc`) for this
    /// epoch's scheduled phase.
    fn accept_step(&mut self, e: u64, slot: usize) {
        if !self.svol.is_empty() {
            // stateful: settle the last scheduled phase's grants with their destinations
            for pi in 0..self.acc.len() {
                let d = self.acc[pi];
                if d != NONE {
                    let i = pi as u32 / self.s;
                    let delta = self.svol[pi] as i64 - self.ssent[pi] as i64;
                    if delta != 0 {
                        let (arr, _) = self.ctrl_arrival(e, i, d);
                        let mb = self.mailbox_of(arr);
                        self.pend_box[mb].push((d * self.n + i, delta));
                    }
                }
                self.svol[pi] = 0;
                self.ssent[pi] = 0;
            }
        }
        for x in self.acc.iter_mut() {
            *x = NONE;
        }
        self.sched_src.clear();
        self.due_now = std::mem::take(&mut self.due_next);
        let iterative = self.iters > 1;
        if iterative {
            self.procs.insert(e, Proc { it: 0, sacc: vec![NONE; (self.n * self.s) as usize], dtaken: vec![false; (self.n * self.s) as usize] });
        }
        let mut grants = std::mem::take(&mut self.grant_box[slot]);
        grants.sort_unstable_by_key(|g| (g.src, g.proc_, g.port, g.relay, g.dst));
        let mut pair_g = 0u64;
        let mut pair_a = 0u64;
        let mut cands: Vec<(u32, u64)> = Vec::new();
        let mut accepted_pairs: Vec<(u32, u32)> = Vec::new();
        let mut granted_pairs: Vec<(u32, u32)> = Vec::new();
        let s = self.s;
        let n = self.n;
        let mut j = 0;
        while j < grants.len() {
            let (i, pr) = (grants[j].src, grants[j].proc_ as u64);
            let mut h = j;
            while h < grants.len() && grants[h].src == i && grants[h].proc_ as u64 == pr {
                h += 1;
            }
            granted_pairs.clear();
            accepted_pairs.clear();
            let mut q = j;
            while q < h {
                let p = grants[q].port;
                let mut r = q;
                while r < h && grants[r].port == p {
                    granted_pairs.push((i, grants[r].dst));
                    r += 1;
                }
                let grp = &grants[q..r];
                self.m_grants += grp.len() as u64;
                let pi = (i * s + p) as usize;
                let own_ok = !self.fail.local_eg[pi] && !self.fail.known_eg[pi];
                let mut chosen: Option<usize> = None;
                if own_ok {
                    // direct grants first (relay-only grants when no direct one is usable)
                    for relay in [false, true] {
                        cands.clear();
                        cands.extend(grp.iter().filter(|g| g.relay == relay).map(|g| (g.dst, 0)));
                        if cands.is_empty() {
                            continue;
                        }
                        let known_in = &self.fail.known_in;
                        if let Some(d) = self.matcher.accept(i, p, &cands, |d| !known_in[(d * s + p) as usize]) {
                            chosen = grp.iter().position(|g| g.relay == relay && g.dst == d);
                            break;
                        }
                    }
                }
                for (x, g) in grp.iter().enumerate() {
                    if Some(x) == chosen {
                        continue;
                    }
                    // rejected: revert the destination's pending-bytes decrement, free the relay buffer
                    if !self.pend.is_empty() && g.vol > 0 {
                        let (arr, _) = self.ctrl_arrival(e, i, g.dst);
                        let mb = self.mailbox_of(arr);
                        self.pend_box[mb].push((g.dst * n + i, g.vol as i64));
                    }
                    if self.relay_on && g.via != NONE && g.vol > 0 {
                        self.rel_release.push((g.dst * n + g.via, g.vol));
                    }
                }
                if let Some(x) = chosen {
                    let g = grp[x];
                    let d = g.dst;
                    accepted_pairs.push((i, d));
                    self.m_accepts += 1;
                    if iterative {
                        let pc = self.procs.get_mut(&pr).expect("grant of a finished process");
                        pc.sacc[pi] = d;
                        pc.dtaken[(d * s + p) as usize] = true;
                    } else {
                        self.acc[pi] = d;
                        if !self.svol.is_empty() {
                            self.svol[pi] = g.vol;
                        }
                        if self.relay_on && g.via != NONE {
                            self.racc[pi] = (g.via, g.vol);
                        }
                    }
                }
                q = r;
            }
            granted_pairs.sort_unstable();
            granted_pairs.dedup();
            accepted_pairs.sort_unstable();
            accepted_pairs.dedup();
            pair_g += granted_pairs.len() as u64;
            pair_a += accepted_pairs.len() as u64;
            j = h;
        }
        self.b.events += grants.len() as u64;
        if pair_g > 0 {
            self.m_ratio_sum += pair_a as f64 / pair_g as f64;
            self.m_ratio_epochs += 1;
            self.m_pair_grants += pair_g;
            self.m_pair_accepts += pair_a;
        }
        grants.clear();
        self.grant_box[slot] = grants;
        // iterative: processes whose iteration's ACCEPT is due now advance or finish
        if iterative {
            let per = self.acc_lag + 1;
            let mut finished = None;
            for (&pstart, pc) in self.procs.iter_mut() {
                if e == pstart + pc.it as u64 * per + self.acc_lag {
                    if pc.it + 1 == self.iters {
                        finished = Some(pstart);
                    } else {
                        pc.it += 1;
                        self.due_next.push(pstart);
                    }
                }
            }
            if let Some(pstart) = finished {
                let pc = self.procs.remove(&pstart).unwrap();
                self.acc.copy_from_slice(&pc.sacc);
                // matches of early iterations over a link excluded since then are not used
                if self.fail.on {
                    for pi in 0..self.acc.len() {
                        let d = self.acc[pi];
                        if d != NONE && !self.usable(pi as u32 / s, pi as u32 % s, d) {
                            self.acc[pi] = NONE;
                        }
                    }
                }
            }
        }
        // sources with a matched port this epoch
        let mut matched = 0u64;
        for i in 0..n {
            let mut any = false;
            for p in 0..s {
                let d = self.acc[(i * s + p) as usize];
                if d != NONE {
                    any = true;
                    matched += 1;
                    let pr = (i * n + d) as usize;
                    if self.first_data_epoch[pr] == u64::MAX {
                        self.first_data_epoch[pr] = e;
                    }
                }
            }
            if any {
                self.sched_src.push(i);
            }
        }
        if matched > 0 {
            self.m_matched_ports += matched;
            self.m_matched_epochs += 1;
        }
    }

    /// GRANT at destinations from the requests that arrived; grants travel back in this
    /// epoch's predefined phase.
    fn grant_step(&mut self, e: u64, slot: usize) {
        let mut reqs = std::mem::take(&mut self.req_box[slot]);
        reqs.sort_unstable_by_key(|r| (r.dst, r.proc_, r.src, r.via, r.mask));
        self.b.events += reqs.len() as u64;
        let by_info = matches!(self.spec.variant, Variant::DataSize | Variant::HolDelay { .. });
        let (n, s) = (self.n, self.s);
        let mut list: Vec<(u32, u64)> = Vec::new();
        let mut masks: Vec<u64> = Vec::new();
        let mut relays: Vec<Req> = Vec::new();
        let mut out = std::mem::take(&mut self.tmp_grants);
        let mut j = 0;
        while j < reqs.len() {
            let (d, pr) = (reqs[j].dst, reqs[j].proc_ as u64);
            list.clear();
            masks.clear();
            relays.clear();
            while j < reqs.len() && reqs[j].dst == d && reqs[j].proc_ as u64 == pr {
                let r = reqs[j];
                if r.via != NONE {
                    relays.push(r);
                } else {
                    list.push((r.src, r.info));
                    masks.push(r.mask);
                }
                j += 1;
            }
            out.clear();
            if self.spec.variant == Variant::Projector {
                self.projector_grant(e, d, &list, &masks, &mut out);
            } else {
                let f = &self.fail;
                let taken = self.procs.get(&pr).map(|pc| &pc.dtaken);
                let port_ok = |p: u32| {
                    let k = (d * s + p) as usize;
                    !(f.local_in[k] || f.known_in[k] || taken.is_some_and(|t| t[k]))
                };
                let stateful = !self.pend.is_empty();
                let pend = &mut self.pend;
                let cap = self.sched_cap;
                let blocked = &mut self.m_stateful_blocked;
                let take = |src: u32, p: u32| -> Option<u64> {
                    let x = list.partition_point(|c| c.0 < src);
                    if masks[x] >> p & 1 == 0 || f.known_eg[(src * s + p) as usize] {
                        return None;
                    }
                    if stateful {
                        // grant only while the matrix shows pending bytes; decrement now
                        let k = (d * n + src) as usize;
                        if pend[k] <= 0 {
                            *blocked += 1;
                            return None;
                        }
                        let amt = (pend[k] as u64).min(cap);
                        pend[k] -= amt as i64;
                        return Some(amt);
                    }
                    Some(0)
                };
                self.matcher.grant(d, &list, by_info, port_ok, take, &mut out);
            }
            let mut grants: Vec<Grant> = out.iter().map(|&(src, p, vol)| Grant { src, proc_: pr as u32, port: p, relay: false, dst: d, via: NONE, vol }).collect();
            if self.relay_on && !relays.is_empty() {
                self.relay_grant(d, &relays, &mut grants);
            }
            grants.sort_unstable_by_key(|g| (g.src, g.port));
            // one grant message per (d → src), sent in this epoch's predefined phase. The
            // grants of one GRANT round are conflict-free only among themselves: all of
            // them are for one scheduled phase, e + req_lag, by whose start the message of
            // the latest first-round slot has arrived. (Reading each where it arrives would
            // split the round over two epochs when the arrivals straddle an epoch start, and
            // mix it there with the neighbouring rounds' grants of the same ingress ports.)
            let mut k = 0;
            while k < grants.len() {
                let src = grants[k].src;
                let (arr, p) = self.ctrl_arrival(e, d, src);
                let ok = self.link_up(d, p, src);
                let mb = if self.iters > 1 {
                    let pc = &self.procs[&pr];
                    ((pr + pc.it as u64 * (self.acc_lag + 1) + self.acc_lag) % self.mbox as u64) as usize
                } else {
                    debug_assert!(arr <= self.epoch_start(e + self.req_lag), "grant arrives after its scheduled phase");
                    ((e + self.req_lag) % self.mbox as u64) as usize
                };
                while k < grants.len() && grants[k].src == src {
                    if ok {
                        self.grant_box[mb].push(grants[k]);
                    } else {
                        self.m_lost_ctrl += 1;
                        let g = grants[k];
                        if self.relay_on && g.via != NONE && g.vol > 0 {
                            self.rel_release.push((d * n + g.via, g.vol));
                        }
                        if !self.pend.is_empty() && g.vol > 0 {
                            // no ACCEPT will come back: the destination reverts the decrement
                            // when the ACCEPT phase has passed
                            let mb = ((e + self.acc_lag) % self.mbox as u64) as usize;
                            self.pend_box[mb].push((d * n + g.src, g.vol as i64));
                        }
                    }
                    k += 1;
                }
            }
        }
        self.tmp_grants = out;
        reqs.clear();
        self.req_box[slot] = reqs;
    }

    /// ProjecToR-like GRANT at `d`: each ingress port grants the oldest bundle among the
    /// per-port requests for it (ties: lowest source after a pointer rotating by epoch).
    fn projector_grant(&mut self, e: u64, d: u32, list: &[(u32, u64)], masks: &[u64], out: &mut Vec<(u32, u32, u64)>) {
        let (n, s) = (self.n, self.s);
        let rot = (e % n as u64) as u32;
        for p in 0..s {
            let k = (d * s + p) as usize;
            if self.fail.local_in[k] || self.fail.known_in[k] {
                continue;
            }
            let best = (0..list.len())
                .filter(|&x| masks[x] >> p & 1 == 1 && !self.fail.known_eg[(list[x].0 * s + p) as usize])
                .min_by_key(|&x| (std::cmp::Reverse(list[x].1), (list[x].0 + n - rot) % n));
            if let Some(x) = best {
                out.push((list[x].0, p, 0));
            }
        }
    }

    fn update_failures(&mut self, e: u64, t0: Ps) {
        if !self.fail.on {
            return;
        }
        // detection from the previous epoch, under the physical state of that epoch
        if self.fail.state != 0 && !(self.fail.state == 2 && e > self.fail.active_until) {
            self.observe(e);
        }
        // physical state changes take effect from this epoch on
        if self.fail.state == 0 && t0 >= self.spec.fail_at_ps {
            self.fail.state = 1;
            self.fail.fail_epoch = e;
            for &l in &self.fail.links_eg {
                self.fail.down_eg[l as usize] = true;
            }
            for &l in &self.fail.links_in {
                self.fail.down_in[l as usize] = true;
            }
        }
        if self.fail.state == 1 && t0 >= self.spec.recover_at_ps {
            self.fail.state = 2;
            self.fail.recover_epoch = e;
            for x in self.fail.down_eg.iter_mut().chain(self.fail.down_in.iter_mut()) {
                *x = false;
            }
            self.fail.active_until = e + 4 * self.spec.detect_epochs as u64 + 4;
        }
    }

    /// Failure detection from the previous epoch's predefined phase (dummy messages in
    /// every slot, feedback on the reverse connection), then the broadcast of last
    /// epoch's detections.
    fn observe(&mut self, e: u64) {
        let ns = (self.n * self.s) as usize;
        // broadcast: what was detected locally last epoch becomes known everywhere
        self.fail.known_eg.copy_from_slice(&self.fail.local_eg);
        self.fail.known_in.copy_from_slice(&self.fail.local_in);
        // observations of the previous epoch's predefined phase (dummy messages and feedback)
        let pe = e.saturating_sub(1);
        let (n, s) = (self.n, self.s);
        let mut recv = vec![false; ns];
        let mut pos = vec![0u32; ns];
        let mut neg = vec![0u32; ns];
        for k in 0..self.lay.pre_slots {
            for i in 0..n {
                for p in 0..s {
                    let d = self.pre_conn(pe, k, i, p);
                    if d == NONE {
                        continue;
                    }
                    let delivered = self.link_up(i, p, d);
                    if delivered {
                        recv[(d * s + p) as usize] = true;
                    }
                    // feedback returns on the reverse connection d → i
                    let (_, pr) = self.pair_slot(pe, d, i);
                    if self.link_up(d, pr, i) {
                        if delivered {
                            pos[(i * s + p) as usize] += 1;
                        } else {
                            neg[(i * s + p) as usize] += 1;
                        }
                    }
                }
            }
        }
        let kth = self.spec.detect_epochs;
        for x in 0..ns {
            // ingress
            if recv[x] {
                self.fail.bad_in[x] = 0;
                self.fail.good_in[x] += 1;
                if self.fail.local_in[x] && self.fail.good_in[x] >= kth {
                    self.fail.local_in[x] = false;
                    self.fail.recovered_epochs.push(e);
                }
            } else {
                self.fail.good_in[x] = 0;
                self.fail.bad_in[x] += 1;
                if !self.fail.local_in[x] && self.fail.bad_in[x] >= kth {
                    self.fail.local_in[x] = true;
                    self.fail.detect_epochs.push(e);
                }
            }
            // egress
            if neg[x] > 0 && pos[x] == 0 {
                self.fail.good_eg[x] = 0;
                self.fail.bad_eg[x] += 1;
                if !self.fail.local_eg[x] && self.fail.bad_eg[x] >= kth {
                    self.fail.local_eg[x] = true;
                    self.fail.detect_epochs.push(e);
                }
            } else if pos[x] > 0 {
                self.fail.bad_eg[x] = 0;
                self.fail.good_eg[x] += 1;
                if self.fail.local_eg[x] && self.fail.good_eg[x] >= kth {
                    self.fail.local_eg[x] = false;
                    self.fail.recovered_epochs.push(e);
                }
            }
        }
        self.b.events += ns as u64;
    }

    fn sample(&mut self, t: Ps) {
        while self.b.sample_due(t) {
            let q: Vec<u64> = self.src_bytes.iter().zip(&self.relay_bytes).map(|(a, b)| a + b).collect();
            self.b.record_queue(q.into_iter());
        }
    }

    /// Predefined slot k of the current epoch: requests and piggybacked packets.
    fn pre_slot(&mut self, k: u32) {
        let e = self.epoch;
        let ts = self.slot_time(e, k);
        let tx0 = ts + self.spec.guardband_ps;
        self.admit(tx0);
        self.sample(ts);
        let first_round = k < self.lay.rr_slots;
        let mut pb_sent = 0u64;
        let mut a = 0;
        while a < self.active.len() {
            let i = self.active[a];
            if self.src_bytes[i as usize] == 0 && self.relay_bytes[i as usize] == 0 {
                self.in_active[i as usize] = false;
                self.active.swap_remove(a);
                continue;
            }
            a += 1;
            for p in 0..self.s {
                let d = self.pre_conn(e, k, i, p);
                if d == NONE {
                    continue;
                }
                let qb = self.queued_for(i, d);
                let up = self.link_up(i, p, d);
                if first_round && (qb > self.req_thr || self.relay_on || !self.unrep.is_empty()) {
                    self.send_control(e, i, d, qb, tx0, up);
                }
                if qb == 0 || self.lay.pb_payload == 0 || !self.usable(i, p, d) {
                    continue;
                }
                if let Some((f, bytes, hop, via)) = self.pop_for(i, d, self.lay.pb_payload, tx0) {
                    let dur = self.rate.tx(self.spec.ctrl_bytes + bytes);
                    self.b.check_window(tx0, dur, tx0, ts + self.lay.pre_slot_ps);
                    self.fab.transmit(self.slot_id, i, p, d);
                    pb_sent += 1;
                    if up {
                        let arr = tx0 + dur + self.spec.prop_ps;
                        self.forward(i, d, f, bytes, hop, via, tx0, arr, false);
                        self.m_pb_pkts += 1;
                        self.m_pb_bytes += bytes;
                        if !self.pend.is_empty() {
                            // the destination sees the piggybacked bytes arrive
                            let mb = self.mailbox_of(arr);
                            self.pend_box[mb].push((d * self.n + i, -(bytes as i64)));
                        }
                    } else {
                        self.b.packet_hops += 1;
                        self.b.drop(&mut self.fl, f, bytes, "link_failure");
                    }
                }
            }
        }
        // the remaining connections carry control-only (or dummy) messages
        self.b.packet_hops += self.conn_count[k as usize] - pb_sent;
        self.b.events += 1;
    }

    /// The scheduling-message fields source i sends to d in this epoch's round robin:
    /// REQUEST(s) (and the stateful size report, the relay requests addressed to d).
    fn send_control(&mut self, e: u64, i: u32, d: u32, qb: u64, tx0: Ps, up: bool) {
        let vi = (i * self.n + d) as usize;
        let arr = tx0 + self.rate.tx(self.spec.ctrl_bytes) + self.spec.prop_ps;
        if !self.unrep.is_empty() && self.unrep[vi] > 0 && up {
            let mb = self.mailbox_of(arr);
            self.pend_box[mb].push((d * self.n + i, self.unrep[vi] as i64));
            self.unrep[vi] = 0;
        }
        let s = self.s;
        let full = if s >= 64 { u64::MAX } else { (1u64 << s) - 1 };
        let mut reqs = std::mem::take(&mut self.tmp_reqs);
        reqs.clear();
        if qb > self.req_thr {
            match self.spec.variant {
                Variant::Projector => {
                    for p in 0..s {
                        let pi = (i * s + p) as usize;
                        if self.proj_req[pi] == d {
                            if self.first_req_epoch[vi] == u64::MAX && up {
                                self.first_req_epoch[vi] = e;
                            }
                            reqs.push((Req { dst: d, proc_: 0, src: i, via: NONE, info: self.proj_age[pi], mask: 1 << p }, self.mailbox_of(arr)));
                        }
                    }
                }
                _ => {
                    let iterative = self.iters > 1;
                    let mb = if iterative { ((e + self.req_lag) % self.mbox as u64) as usize } else { self.mailbox_of(arr) };
                    let info = self.request_info(i, d, tx0);
                    reqs.push((Req { dst: d, proc_: if iterative { e as u32 } else { 0 }, src: i, via: NONE, info, mask: full }, mb));
                    if self.first_req_epoch[vi] == u64::MAX && up {
                        self.first_req_epoch[vi] = e;
                    }
                    // later iterations: the indices of the ports still unmatched
                    for x in 0..self.due_now.len() {
                        let pr = self.due_now[x];
                        let pc = &self.procs[&pr];
                        let mut mask = 0u64;
                        for p in 0..s {
                            let pi = (i * s + p) as usize;
                            if pc.sacc[pi] == NONE && !self.fail.local_eg[pi] && !self.fail.known_eg[pi] && self.fab.reaches(i, p, d) {
                                mask |= 1 << p;
                            }
                        }
                        if mask != 0 {
                            let at = pr + pc.it as u64 * (self.acc_lag + 1) + self.req_lag;
                            reqs.push((Req { dst: d, proc_: pr as u32, src: i, via: NONE, info, mask }, (at % self.mbox as u64) as usize));
                        }
                    }
                }
            }
        }
        if self.relay_on {
            let lo = self.relay_reqs.partition_point(|r| (r.src, r.dst) < (i, d));
            let mut x = lo;
            while x < self.relay_reqs.len() && self.relay_reqs[x].src == i && self.relay_reqs[x].dst == d {
                reqs.push((self.relay_reqs[x], self.mailbox_of(arr)));
                self.m_relay_req += 1;
                x += 1;
            }
        }
        for &(r, mb) in &reqs {
            if r.via == NONE {
                self.m_requests += 1;
            }
            if up {
                self.req_box[mb].push(r);
            } else {
                self.m_lost_ctrl += 1;
            }
        }
        self.tmp_reqs = reqs;
    }

    /// Bytes ToR i has to send to d over their direct link: its own queue for d (unless
    /// detoured), data it relays for d, and data of pairs it detours through d.
    #[inline(always)]
    fn queued_for(&self, i: u32, d: u32) -> u64 {
        let vi = (i * self.n + d) as usize;
        let own = if self.fault_relay_on && self.detour_of[vi] != NONE { 0 } else { self.voq[vi].bytes };
        let mut q = own + if self.rbuf { self.rq_bytes[vi] } else { 0 };
        if !self.detour.is_empty() {
            let lo = self.detour.partition_point(|x| (x.0, x.1) < (i, d));
            q += self.detour[lo..].iter().take_while(|x| x.0 == i && x.1 == d).map(|x| self.voq[(i * self.n + x.2) as usize].bytes).sum::<u64>();
        }
        q
    }

    /// Take one packet of at most `max` payload bytes that ToR i sends to d at time t:
    /// (flow, bytes, hop, via). Relay buffers: i's own highest-priority data first, then
    /// data it relays for d (second hop, once arrived), then its own lowest priority,
    /// then data of pairs i detours through d around a failed link (first hop, `via` =
    /// the final destination).
    #[inline(always)]
    fn pop_for(&mut self, i: u32, d: u32, max: u64, t: Ps) -> Option<(u32, u64, u32, u32)> {
        let vi = (i * self.n + d) as usize;
        let detoured = self.fault_relay_on && self.detour_of[vi] != NONE;
        if self.rbuf {
            let v = &self.voq[vi];
            let mice = !detoured && v.top_level().is_some_and(|l| l < 2);
            if !mice && self.rq[vi].front().is_some_and(|c| c.ready <= t) {
                let c = self.rq[vi].front_mut().unwrap();
                let b = c.bytes.min(max);
                let f = c.flow;
                c.bytes -= b;
                if c.bytes == 0 {
                    self.rq[vi].pop_front();
                } else {
                    // the part that fits leaves as a new cell; the rest stays queued
                    self.b.cell_sent();
                }
                self.rq_bytes[vi] -= b;
                self.relay_bytes[i as usize] -= b;
                return Some((f, b, 2, NONE));
            }
        }
        if !detoured {
            if let Some((f, b)) = self.voq[vi].pop(max) {
                self.src_bytes[i as usize] -= b;
                self.b.cell_sent();
                return Some((f, b, 1, NONE));
            }
        }
        if !self.detour.is_empty() {
            let lo = self.detour.partition_point(|x| (x.0, x.1) < (i, d));
            let via = self.detour[lo..].iter().take_while(|x| x.0 == i && x.1 == d).map(|x| x.2).find(|&x| self.voq[(i * self.n + x) as usize].bytes > 0)?;
            let (f, b) = self.voq[(i * self.n + via) as usize].pop(max)?;
            self.src_bytes[i as usize] -= b;
            self.b.cell_sent();
            return Some((f, b, 1, via));
        }
        None
    }

    /// Payload of flow f that i sent to d at tx0 arrives at `arr`: delivered (final hop)
    /// or queued at the intermediate d for `via` (first hop of relayed data; `reserved`:
    /// it uses relay buffer d granted).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn forward(&mut self, i: u32, d: u32, f: u32, bytes: u64, hop: u32, via: u32, tx0: Ps, arr: Ps, reserved: bool) {
        if via == NONE {
            self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, hop, true);
            if hop == 2 {
                self.m_relay_second += bytes;
            }
            return;
        }
        self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, 1, false);
        let k = (d * self.n + via) as usize;
        self.rq[k].push_back(RCell { flow: f, bytes, ready: arr });
        self.rq_bytes[k] += bytes;
        if reserved {
            self.reserved[k] -= bytes;
            self.m_relay_first += bytes;
        } else {
            self.m_fault_relay_bytes += bytes;
        }
        self.relay_bytes[d as usize] += bytes;
        self.m_relay_max = self.m_relay_max.max(self.rq_bytes[k]);
        if !self.in_active[d as usize] {
            self.in_active[d as usize] = true;
            self.active.push(d);
        }
    }

    /// Thin-clos relay around failed links (§1.9): every pair whose one port-to-port path
    /// is known (to the source) to be down is detoured through an intermediate m reached
    /// over a working port of the source whose own path to the destination is known to
    /// work; the source's requests and data for the pair then go to m, and m forwards
    /// them like its own traffic (second hop).
    fn update_detours(&mut self) {
        let (n, s, w, g) = (self.n, self.s, self.fab.w, self.fab.g);
        for &(i, _, d) in &self.detour {
            self.detour_of[(i * n + d) as usize] = NONE;
        }
        self.detour.clear();
        let f = &self.fail;
        let down = |i: u32, p: u32, d: u32| {
            let (x, y) = ((i * s + p) as usize, (d * s + p) as usize);
            f.local_eg[x] || f.known_eg[x] || f.known_in[y]
        };
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for x in 0..(n * s) {
            let (t, p) = (x / s, x % s);
            if p >= g {
                continue;
            }
            if f.local_eg[x as usize] || f.known_eg[x as usize] {
                let grp = (t / w + p) % g;
                pairs.extend((grp * w..(grp + 1) * w).filter(|&d| d != t).map(|d| (t, d)));
            }
            if f.known_in[x as usize] {
                let grp = (t / w + g - p) % g;
                pairs.extend((grp * w..(grp + 1) * w).filter(|&i| i != t).map(|i| (i, t)));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        for (i, d) in pairs {
            let p = self.fab.pair_port(i, d);
            let mut found = NONE;
            'search: for a in 0..g {
                let q = ((i + d) % g + a) % g;
                if q == p {
                    continue;
                }
                let grp = (i / w + q) % g;
                for b in 0..w {
                    let m = grp * w + (i + d + b) % w;
                    if m == i || m == d || down(i, q, m) {
                        continue;
                    }
                    let pm = self.fab.pair_port(m, d);
                    if !down(m, pm, d) {
                        found = m;
                        break 'search;
                    }
                }
            }
            if found != NONE {
                self.detour.push((i, found, d));
            }
        }
        self.detour.sort_unstable();
        for &(i, m, d) in &self.detour {
            self.detour_of[(i * n + d) as usize] = m;
        }
        self.m_detoured_max = self.m_detoured_max.max(self.detour.len() as u64);
    }

    /// Epoch-start plans of the sources: the ProjecToR-like per-port requests (oldest
    /// bundles first) and the relay requests of the two-hop variant.
    fn source_plans(&mut self, e: u64, t: Ps) {
        let (n, s) = (self.n, self.s);
        self.relay_reqs.clear();
        let act = self.active.clone();
        for &i in &act {
            for p in 0..s {
                self.proj_req[(i * s + p) as usize] = NONE;
            }
            if self.spec.variant == Variant::Projector {
                self.projector_plan(i, t);
            }
            if self.relay_on {
                self.relay_plan(e, i);
            }
        }
        self.relay_reqs.sort_unstable_by_key(|r| (r.src, r.dst));
        let _ = n;
    }

    /// Arrival time of the byte at offset `off` of VOQ `vi` in arrival order (flows
    /// arrive whole; the PIAS levels are merged back by flow arrival).
    fn arrival_at(&self, vi: usize, off: u64) -> Option<Ps> {
        let v = &self.voq[vi];
        let mut idx = [0usize; 3];
        let mut cum = 0u64;
        loop {
            let mut best: Option<(usize, (Ps, u32))> = None;
            for l in 0..3 {
                if let Some(sg) = v.q[l].get(idx[l]) {
                    let key = (self.fl.start[sg.flow as usize], sg.flow);
                    if best.is_none_or(|b| key < b.1) {
                        best = Some((l, key));
                    }
                }
            }
            let (l, key) = best?;
            cum += v.q[l][idx[l]].bytes;
            if cum > off {
                return Some(key.0);
            }
            idx[l] += 1;
        }
    }

    /// ProjecToR-like: each source port requests one bundle (the data one port sends in
    /// one scheduled phase), the oldest first (waiting delay of the bundle's first byte).
    fn projector_plan(&mut self, i: u32, t: Ps) {
        let (n, s) = (self.n, self.s);
        let bsz = self.sched_cap.max(1);
        let ports: Vec<u32> = (0..s).filter(|&p| {
            let pi = (i * s + p) as usize;
            !self.fail.local_eg[pi] && !self.fail.known_eg[pi]
        }).collect();
        let cands: Vec<u32> = (0..n).filter(|&d| d != i && self.voq[(i * n + d) as usize].bytes > self.req_thr).collect();
        match self.spec.topology {
            Topology::Parallel => {
                let mut heap = std::collections::BinaryHeap::new();
                for &d in &cands {
                    if let Some(a) = self.arrival_at((i * n + d) as usize, 0) {
                        heap.push((t.saturating_sub(a), std::cmp::Reverse(d), 0u64));
                    }
                }
                for &p in &ports {
                    let Some((age, std::cmp::Reverse(d), k)) = heap.pop() else { break };
                    let pi = (i * s + p) as usize;
                    self.proj_req[pi] = d;
                    self.proj_age[pi] = age;
                    let vi = (i * n + d) as usize;
                    if let Some(a) = self.arrival_at(vi, (k + 1) * bsz) {
                        heap.push((t.saturating_sub(a), std::cmp::Reverse(d), k + 1));
                    }
                }
            }
            Topology::ThinClos => {
                for &p in &ports {
                    let best = cands
                        .iter()
                        .filter(|&&d| self.fab.reaches(i, p, d))
                        .filter_map(|&d| self.arrival_at((i * n + d) as usize, 0).map(|a| (t.saturating_sub(a), std::cmp::Reverse(d))))
                        .max();
                    if let Some((age, std::cmp::Reverse(d))) = best {
                        let pi = (i * s + p) as usize;
                        self.proj_req[pi] = d;
                        self.proj_age[pi] = age;
                    }
                }
            }
        }
    }

    /// Bytes ToR i has queued (own and relayed) for the ToRs its port p reaches.
    fn port_load(&self, i: u32, p: u32) -> u64 {
        let (n, w) = (self.n, self.fab.w);
        let grp = (i / w + p) % self.fab.g;
        (grp * w..(grp + 1) * w)
            .filter(|&d| d != i)
            .map(|d| {
                let vi = (i * n + d) as usize;
                self.voq[vi].bytes + if self.rbuf { self.rq_bytes[vi] } else { 0 }
            })
            .sum()
    }

    /// Two-hop relay, step 1 (source i): lowest-priority backlogs above the relay
    /// threshold are offered to one intermediate behind each port that carries no
    /// high-volume direct traffic of i (at most one scheduled phase queued).
    fn relay_plan(&mut self, e: u64, i: u32) {
        let (n, s, w, g) = (self.n, self.s, self.fab.w, self.fab.g);
        let mut eleph: Vec<(u64, u32)> = (0..n)
            .filter(|&d| d != i)
            .filter_map(|d| {
                let l2 = self.voq[(i * n + d) as usize].level_bytes[2];
                (l2 > self.relay_thr).then(|| (l2 - self.relay_thr, d))
            })
            .collect();
        if eleph.is_empty() {
            return;
        }
        eleph.sort_unstable_by_key(|&(x, d)| (std::cmp::Reverse(x), d));
        let mut x = 0usize;
        for p in 0..s.min(g) {
            let pi = (i * s + p) as usize;
            if self.fail.local_eg[pi] || self.fail.known_eg[pi] || self.port_load(i, p) > self.sched_cap {
                continue;
            }
            // next elephant whose direct port is not p
            let Some(k) = (0..eleph.len()).map(|y| (x + y) % eleph.len()).find(|&k| eleph[k].0 > 0 && self.fab.pair_port(i, eleph[k].1) != p) else { continue };
            x = k + 1;
            let d = eleph[k].1;
            let grp = (i / w + p) % g;
            let mut idx = ((e + i as u64 + d as u64) % w as u64) as u32;
            let mut m = grp * w + idx;
            if m == i || m == d {
                idx = (idx + 1) % w;
                m = grp * w + idx;
            }
            if m == i || m == d {
                continue;
            }
            let vol = eleph[k].0.min(self.sched_cap);
            eleph[k].0 -= vol;
            self.relay_reqs.push(Req { dst: m, proc_: 0, src: i, via: d, info: vol, mask: 1 << p });
        }
    }

    /// Two-hop relay, step 2 (intermediate m): relay volume granted only while m's relay
    /// buffer for the final destination has room and m's own link towards it carries no
    /// high-volume direct traffic; on a port already granted directly to the same source
    /// the volume rides on that grant, free ingress ports are granted for relay only.
    fn relay_grant(&mut self, m: u32, relays: &[Req], grants: &mut Vec<Grant>) {
        let (n, s, w) = (self.n, self.s, self.fab.w);
        let volume = |me: &mut Self, r: &Req| -> u64 {
            let k = (m * n + r.via) as usize;
            let used = me.rq_bytes[k] + me.reserved[k];
            if used >= me.relay_cap || me.port_load(m, me.fab.pair_port(m, r.via)) > me.sched_cap {
                return 0;
            }
            let v = r.info.min(me.relay_cap - used);
            me.reserved[k] += v;
            me.m_relay_grants += 1;
            v
        };
        let mut taken = vec![false; s as usize];
        for g in grants.iter_mut() {
            taken[g.port as usize] = true;
            if let Some(r) = relays.iter().find(|r| r.src == g.src && r.mask >> g.port & 1 == 1) {
                let v = volume(self, r);
                if v > 0 {
                    g.via = r.via;
                    g.vol = v;
                }
            }
        }
        for p in 0..s {
            let k = (m * s + p) as usize;
            if taken[p as usize] || self.fail.local_in[k] || self.fail.known_in[k] {
                continue;
            }
            let ptr = self.matcher.gptr[k];
            let mut order: Vec<&Req> = relays.iter().filter(|r| r.mask >> p & 1 == 1 && !self.fail.known_eg[(r.src * s + p) as usize]).collect();
            order.sort_by_key(|r| ((r.src % w + w - ptr) % w, r.src));
            for r in order {
                let v = volume(self, r);
                if v > 0 {
                    grants.push(Grant { src: r.src, proc_: 0, port: p, relay: true, dst: m, via: r.via, vol: v });
                    self.matcher.gptr[k] = (r.src % w + 1) % w;
                    break;
                }
            }
        }
    }

    /// Scheduled slot j of the current epoch: accepted ports send from their queues
    /// (relay variant: then the granted relay volume, first hop).
    fn sched_slot(&mut self, j: u32) {
        let e = self.epoch;
        let (off, len, lo, payload) = self.lay.sched[j as usize];
        let ts = self.epoch_start(e) + off;
        let tx0 = ts + lo;
        self.admit(tx0);
        self.sample(ts);
        let mut a = 0;
        while a < self.sched_src.len() {
            let i = self.sched_src[a];
            let mut busy = false;
            for p in 0..self.s {
                let pi = (i * self.s + p) as usize;
                let d = self.acc[pi];
                if d == NONE {
                    continue;
                }
                let vi = (i * self.n + d) as usize;
                let mut pkt = self.pop_for(i, d, payload, tx0).map(|(f, b, h, via)| (f, b, h, via, false));
                if pkt.is_none() && self.relay_on {
                    let (via, rem) = self.racc[pi];
                    if via != NONE && rem > 0 {
                        let v = &mut self.voq[(i * self.n + via) as usize];
                        if !v.q[2].is_empty() {
                            let (f, b) = v.pop_level(2, payload.min(rem));
                            self.src_bytes[i as usize] -= b;
                            self.b.cell_sent();
                            self.racc[pi].1 -= b;
                            pkt = Some((f, b, 1, via, true));
                        }
                    }
                }
                let Some((f, bytes, hop, via, reserved)) = pkt else {
                    self.m_sched_idle += 1;
                    if self.rbuf && (self.rq_bytes[vi] > 0 || (self.relay_on && self.racc[pi].0 != NONE && self.racc[pi].1 > 0 && self.voq[(i * self.n + self.racc[pi].0) as usize].level_bytes[2] > 0)) {
                        busy = true; // relayed data still on its way to i
                    }
                    continue;
                };
                busy = true;
                let dur = self.rate.tx(self.spec.header_bytes + bytes);
                self.b.check_window(tx0, dur, ts + lo, ts + len);
                self.fab.transmit(self.slot_id, i, p, d);
                let arr = tx0 + dur + self.spec.prop_ps;
                if !self.link_up(i, p, d) {
                    self.b.packet_hops += 1;
                    self.b.drop(&mut self.fl, f, bytes, "link_failure");
                } else {
                    self.forward(i, d, f, bytes, hop, via, tx0, arr, reserved);
                    if !self.ssent.is_empty() {
                        self.ssent[pi] += bytes;
                    }
                    if via == NONE {
                        self.m_sched_pkts += 1;
                        self.m_sched_bytes += bytes;
                    }
                }
            }
            if busy {
                a += 1;
            } else {
                self.sched_src.swap_remove(a);
            }
        }
        self.b.events += 1;
    }

    /// Advance: process every slot that starts before `t` (and before the end).
    pub fn run_until(&mut self, t: Ps) {
        let end = t.min(self.spec.duration_ps);
        let per_epoch = self.lay.pre_slots + self.lay.sched.len() as u32;
        while !self.done {
            let ts = self.slot_time(self.epoch, self.pos);
            if ts >= end {
                if ts >= self.spec.duration_ps {
                    self.done = true;
                }
                break;
            }
            if self.pos == 0 {
                self.begin_epoch();
            }
            if self.pos < self.lay.pre_slots {
                self.pre_slot(self.pos);
            } else {
                self.sched_slot(self.pos - self.lay.pre_slots);
            }
            self.slot_id += 1;
            self.pos += 1;
            if self.pos == per_epoch {
                self.pos = 0;
                self.epoch += 1;
            }
        }
    }

    pub fn now(&self) -> Ps {
        if self.done { self.spec.duration_ps } else { self.slot_time(self.epoch, self.pos).min(self.spec.duration_ps) }
    }

    /// Epoch in which pair (i → d) first sent a request / first got an accepted port.
    pub fn pair_epochs(&self, i: u32, d: u32) -> (u64, u64) {
        let k = (i * self.n + d) as usize;
        (self.first_req_epoch[k], self.first_data_epoch[k])
    }

    pub fn output(&self) -> SlottedOutput {
        // in flight, from the queues: bytes not yet cut at the sources, relayed cells
        // (held at their intermediate or on their way to it)
        let rq = self.rq.iter().flatten();
        let held = Held { bytes: Held::voqs(&self.voq) + rq.clone().map(|c| c.bytes).sum::<u64>(), cells: rq.count() as u64 };
        let queued: u64 = self.voq.iter().map(|v| v.bytes).sum::<u64>() + self.rq_bytes.iter().sum::<u64>();
        let now = self.now();
        let mut o = finish_output(&self.b, &self.fl, &self.fab, now, held, Vec::new());
        let src_sum: u64 = self.src_bytes.iter().chain(&self.relay_bytes).sum();
        if src_sum != queued || queued != held.bytes {
            o.invariant_errors.push(format!("per-source queued bytes {src_sum} != VOQ bytes {queued} (walked: {})", held.bytes));
        }
        let ratio = if self.m_ratio_epochs > 0 { self.m_ratio_sum / self.m_ratio_epochs as f64 } else { 0.0 };
        let port_ratio = if self.m_grants > 0 { self.m_accepts as f64 / self.m_grants as f64 } else { 0.0 };
        let (awgrs, awgr_ports) = self.fab.awgrs();
        let epochs = if self.lay.epoch_ps > 0 { now / self.lay.epoch_ps } else { 0 };
        let mut m: Vec<(String, f64)> = vec![
            ("match_ratio".into(), ratio),
            ("match_ratio_port".into(), port_ratio),
            ("match_epochs".into(), self.m_ratio_epochs as f64),
            ("grants".into(), self.m_grants as f64),
            ("accepts".into(), self.m_accepts as f64),
            ("pair_grants".into(), self.m_pair_grants as f64),
            ("pair_accepts".into(), self.m_pair_accepts as f64),
            ("requests".into(), self.m_requests as f64),
            ("lost_control_messages".into(), self.m_lost_ctrl as f64),
            ("pb_packets".into(), self.m_pb_pkts as f64),
            ("pb_bytes".into(), self.m_pb_bytes as f64),
            ("scheduled_packets".into(), self.m_sched_pkts as f64),
            ("scheduled_bytes".into(), self.m_sched_bytes as f64),
            ("scheduled_idle_port_slots".into(), self.m_sched_idle as f64),
            ("epoch_ps".into(), self.lay.epoch_ps as f64),
            ("epochs".into(), epochs as f64),
            ("predefined_slots".into(), self.lay.pre_slots as f64),
            ("predefined_slot_ps".into(), self.lay.pre_slot_ps as f64),
            ("round_robin_slots".into(), self.lay.rr_slots as f64),
            ("scheduled_slots".into(), self.lay.sched.len() as f64),
            ("pb_payload_bytes".into(), self.lay.pb_payload as f64),
            ("scheduled_payload_bytes".into(), self.lay.sched.first().map(|x| x.3).unwrap_or(0) as f64),
            ("request_threshold_bytes".into(), self.req_thr as f64),
            ("guardband_fraction".into(), (self.lay.pre_slots as u64 * self.spec.guardband_ps + if self.spec.transition_guard { self.spec.guardband_ps } else { 0 }) as f64 / self.lay.epoch_ps as f64),
            ("awgrs".into(), awgrs as f64),
            ("awgr_ports".into(), awgr_ports as f64),
            ("iterations".into(), self.iters as f64),
            ("scheduling_delay_epochs".into(), ((self.iters - 1) as u64 * (self.acc_lag + 1) + self.acc_lag) as f64),
            (
                "matched_port_fraction".into(),
                if self.m_matched_epochs > 0 { self.m_matched_ports as f64 / (self.m_matched_epochs * (self.n * self.s) as u64) as f64 } else { 0.0 },
            ),
        ];
        if !self.pend.is_empty() {
            m.push(("stateful_requests_not_granted".into(), self.m_stateful_blocked as f64));
        }
        if self.fault_relay_on {
            m.push(("fault_relay_bytes".into(), self.m_fault_relay_bytes as f64));
            m.push(("max_detoured_pairs".into(), self.m_detoured_max as f64));
        }
        if self.relay_on {
            m.push(("relay_requests".into(), self.m_relay_req as f64));
            m.push(("relay_grants".into(), self.m_relay_grants as f64));
            m.push(("relay_first_hop_bytes".into(), self.m_relay_first as f64));
            m.push(("relay_second_hop_bytes".into(), self.m_relay_second as f64));
            m.push(("max_relay_queue_bytes".into(), self.m_relay_max as f64));
            m.push(("relay_threshold_bytes".into(), self.relay_thr as f64));
            m.push(("relay_capacity_bytes".into(), self.relay_cap as f64));
            let rsv: u64 = self.reserved.iter().sum();
            let alloc: u64 = self.racc.iter().map(|x| x.1).sum();
            if rsv < alloc {
                o.invariant_errors.push(format!("relay reservations {rsv} below the accepted relay volume {alloc}"));
            }
        }
        if self.fail.on {
            let f = &self.fail;
            m.push(("failed_links".into(), (f.links_eg.len() + f.links_in.len()) as f64));
            m.push(("failed_egress_links".into(), f.links_eg.len() as f64));
            m.push(("failed_ingress_links".into(), f.links_in.len() as f64));
            m.push(("fail_epoch".into(), f.fail_epoch as f64));
            m.push(("recover_epoch".into(), f.recover_epoch as f64));
            m.push(("detections".into(), f.detect_epochs.len() as f64));
            let lat = |v: &Vec<u64>, base: u64| if v.is_empty() { -1.0 } else { v.iter().map(|&x| (x - base) as f64).sum::<f64>() / v.len() as f64 };
            m.push(("mean_detection_epochs".into(), lat(&f.detect_epochs, f.fail_epoch)));
            m.push(("max_detection_epochs".into(), f.detect_epochs.iter().map(|&x| x - f.fail_epoch).max().map(|x| x as f64).unwrap_or(-1.0)));
            m.push(("recoveries".into(), f.recovered_epochs.len() as f64));
            m.push(("mean_recovery_epochs".into(), lat(&f.recovered_epochs, f.recover_epoch)));
            let undetected = if f.state == 1 {
                f.links_eg.iter().filter(|&&l| !f.local_eg[l as usize]).count() + f.links_in.iter().filter(|&&l| !f.local_in[l as usize]).count()
            } else {
                0
            };
            m.push(("undetected_failed_links".into(), undetected as f64));
        }
        o.metrics = m;
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;

    fn spec(n: u32, s: u32, topo: Topology) -> NegSpec {
        NegSpec {
            tors: n,
            ports: s,
            topology: topo,
            port_rate_bps: 100_000_000_000,
            guardband_ps: 10_000,
            pre_slots: 0,
            pre_slot_ps: 60_000,
            ctrl_bytes: 30,
            sched_slots: 30,
            sched_slot_ps: 90_000,
            header_bytes: 10,
            prop_ps: 2_000_000,
            pb: true,
            pq: true,
            pias_t1: 1000,
            pias_t2: 10_000,
            req_threshold_pkts: 3,
            transition_guard: false,
            variant: Variant::Base,
            fail_fraction: 0.0,
            fail_at_ps: 0,
            recover_at_ps: 0,
            detect_epochs: 3,
            relay_threshold: 0,
            relay_capacity: 0,
            fault_relay: true,
            seed: 1,
            duration_ps: 100_000_000,
            sample_ps: 0,
            flow_start_ps: vec![],
            flow_src: vec![],
            flow_dst: vec![],
            flow_size: vec![],
        }
    }

    #[test]
    fn default_epoch_is_3_66_us() {
        let mut s = spec(128, 8, Topology::Parallel);
        let l = layout(&s).unwrap();
        assert_eq!(l.epoch_ps, 3_660_000);
        assert_eq!(l.pre_slots, 16);
        assert_eq!(l.pb_payload, 595);
        assert_eq!(l.sched.len(), 30);
        assert_eq!(l.sched[0], (960_000, 90_000, 0, 1115));
        s.topology = Topology::ThinClos;
        assert_eq!(layout(&s).unwrap().pre_slots, 16);
        s.pb = false;
        let l = layout(&s).unwrap();
        assert_eq!(l.epoch_ps, 3_660_000);
        assert_eq!(l.pre_slot_ps, 12_400);
        let total: u64 = l.sched.iter().map(|x| x.1).sum();
        assert_eq!(16 * 12_400 + total, 3_660_000);
    }

    #[test]
    fn matching_is_conflict_free_on_random_requests() {
        for topo in [Topology::Parallel, Topology::ThinClos] {
            let (n, s) = (32u32, 4u32);
            let mut m = Matcher::new(n, s, topo, 7);
            let mut rng = Stream::new(3, "test");
            for _round in 0..200 {
                // random request sets per destination
                let mut grants_per_src: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n as usize];
                let mut dst_port_used = std::collections::BTreeSet::new();
                for d in 0..n {
                    let mut reqs: Vec<(u32, u64)> = (0..n).filter(|&i| i != d && rng.below(3) == 0).map(|i| (i, 0)).collect();
                    reqs.sort_unstable();
                    let mut out = Vec::new();
                    m.grant(d, &reqs, false, |_| true, |_, _| Some(0), &mut out);
                    for (src, p, _) in out {
                        assert!(reqs.iter().any(|r| r.0 == src));
                        assert!(dst_port_used.insert((d, p)), "port {p} of {d} granted twice");
                        if topo == Topology::ThinClos {
                            assert_eq!((d / (n / s) + s - src / (n / s)) % s, p);
                        }
                        grants_per_src[src as usize].push((p, d));
                    }
                }
                let mut rx_used = std::collections::BTreeSet::new();
                for i in 0..n {
                    let g = &mut grants_per_src[i as usize];
                    g.sort_unstable();
                    for p in 0..s {
                        let c: Vec<(u32, u64)> = g.iter().filter(|x| x.0 == p).map(|x| (x.1, 0)).collect();
                        if let Some(d) = m.accept(i, p, &c, |_| true) {
                            assert!(c.iter().any(|x| x.0 == d));
                            assert!(rx_used.insert((d, p)), "two sources on ingress port {p} of {d}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn single_mouse_with_piggyback_has_exact_fct() {
        let mut s = spec(16, 4, Topology::Parallel);
        s.flow_start_ps = vec![0];
        s.flow_src = vec![0];
        s.flow_dst = vec![9];
        s.flow_size = vec![500];
        let mut sim = Negotiator::new(s).unwrap();
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        // offset 9 → index 8 → round slot 2, port 0 in epoch 0
        let expect = 2 * 60_000 + 10_000 + (30 + 500) * 80 + 2_000_000;
        assert_eq!(o.flow_finish_ps[0], expect);
    }
    #[test]
    fn a_conflicting_assignment_is_caught_as_a_collision() {
        let mut s = spec(16, 8, Topology::Parallel);
        // every ToR sends 1 MB to every other ToR at t = 0
        for i in 0..16u32 {
            for d in 0..16u32 {
                if i != d {
                    s.flow_start_ps.push(0);
                    s.flow_src.push(i);
                    s.flow_dst.push(d);
                    s.flow_size.push(1_000_000);
                }
            }
        }
        let mut sim = Negotiator::new(s.clone()).unwrap();
        sim.run_until(3 * 3_660_000 + 960_000); // start of the scheduled phase of epoch 3
        assert!(sim.output().invariant_errors.is_empty());
        // sabotage: ToR 1 and ToR 2 both send to ingress port 0 of ToR 5
        sim.acc[(1 * 8) as usize] = 5;
        sim.acc[(2 * 8) as usize] = 5;
        for i in [1u32, 2] {
            if !sim.sched_src.contains(&i) {
                sim.sched_src.push(i);
            }
        }
        sim.run_until(4 * 3_660_000);
        let o = sim.output();
        assert!(o.collisions > 0);
        assert!(o.invariant_errors.iter().any(|e| e.contains("collision")));
    }

    /// The ledger's two balances hold with relayed cells cut to fit piggyback slots and
    /// cells dropped on failed links, and each catches a bookkeeping slip: a counter
    /// bumped twice, and a cell gone from the engine's state uncounted.
    #[test]
    fn ledger_balances_catch_bookkeeping_slips() {
        let mut s = spec(16, 4, Topology::ThinClos);
        s.fail_fraction = 0.15;
        s.fail_at_ps = 5_000_000;
        s.recover_at_ps = 30_000_000;
        s.duration_ps = 40_000_000;
        for i in 0..16u32 {
            for k in [1u32, 6, 11] {
                s.flow_start_ps.push((i * k) as u64 * 100_000);
                s.flow_src.push(i);
                s.flow_dst.push((i + k) % 16);
                s.flow_size.push(200_000);
            }
        }
        let mut sim = Negotiator::new(s).unwrap();
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        let p = o.packets.clone();
        let dropped: u64 = p.dropped.iter().map(|x| x.1).sum();
        assert!(dropped > 0 && p.in_flight > 0 && p.delivered > 0, "{p:?}");
        assert_eq!(p.sent, p.delivered + dropped + p.in_flight);
        assert_eq!(p.dropped_bytes, o.drops);
        assert!(o.metrics.iter().any(|(k, v)| k == "fault_relay_bytes" && *v > 0.0));
        assert!(!sim.b.late.is_empty(), "cells arriving after the end");
        let errors = |sim: &Negotiator| sim.output().totals.invariant_errors;
        let has = |e: &[String], what: &str| e.iter().any(|x| x.starts_with(what));
        // counters: a dropped cell counted twice; payload counted as delivered twice
        sim.b.ledger.pkts_dropped[0] += 1;
        let e = errors(&sim);
        assert!(has(&e, "packet balance") && !has(&e, "payload balance"), "{e:?}");
        sim.b.ledger.pkts_dropped[0] -= 1;
        sim.b.ledger.delivered += 7;
        let e = errors(&sim);
        assert!(has(&e, "payload balance") && !has(&e, "packet balance"), "{e:?}");
        sim.b.ledger.delivered -= 7;
        // state: a cell on its last hop is lost; a relayed cell appears from nowhere
        let late = sim.b.late.pop().unwrap();
        let e = errors(&sim);
        assert!(has(&e, "payload balance") && has(&e, "packet balance"), "{e:?}");
        sim.b.late.push(late);
        sim.rq[1].push_back(RCell { flow: 0, bytes: 100, ready: 0 });
        let e = errors(&sim);
        assert!(has(&e, "payload balance") && has(&e, "packet balance"), "{e:?}");
        sim.rq[1].pop_back();
        assert!(errors(&sim).is_empty());
    }

    /// Epochs from the start of a predefined phase to the first epoch start at or after
    /// the arrival of the scheduling message sent in its first-round slot k.
    fn ctrl_epochs(sim: &Negotiator, k: u32) -> u64 {
        let off = k as u64 * sim.lay.pre_slot_ps + sim.spec.guardband_ps + sim.rate.tx(sim.spec.ctrl_bytes) + sim.spec.prop_ps;
        off.div_ceil(sim.lay.epoch_ps)
    }

    /// The scheduling messages of one predefined phase arrive in two different epochs.
    fn straddles(sim: &Negotiator) -> bool {
        ctrl_epochs(sim, 0) != ctrl_epochs(sim, sim.lay.rr_slots - 1)
    }

    /// Every ordered pair sends `size` bytes at t = 0.
    fn all_to_all(s: &mut NegSpec, size: u64) {
        for i in 0..s.tors {
            for d in 0..s.tors {
                if i != d {
                    s.flow_start_ps.push(0);
                    s.flow_src.push(i);
                    s.flow_dst.push(d);
                    s.flow_size.push(size);
                }
            }
        }
    }

    /// Thin-clos with fewer ToRs than ports: W = 1, a one-step round robin (as `Fabric`).
    #[test]
    fn thin_clos_with_fewer_tors_than_ports_runs() {
        let mut s = spec(3, 4, Topology::ThinClos);
        s.duration_ps = 40_000_000;
        all_to_all(&mut s, 20_000);
        let mut sim = Negotiator::new(s).unwrap();
        assert_eq!((sim.lay.rr_slots, sim.lay.pre_slots), (1, 1));
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!((o.flows_completed, o.bytes_delivered), (6, 120_000));
    }

    /// 2 predefined + 10 scheduled slots (1.02 us epoch) with 2 us propagation: a GRANT
    /// sent in predefined slot 0 of epoch g arrives at g·E + 2012.4 ns (before the start
    /// of g + 2 at 2040 ns), one sent in slot 1 at g·E + 2072.4 ns (after it). The
    /// grants of one GRANT round are conflict-free among themselves only, so they must
    /// all be used in one scheduled phase, g + 3 — not split over g + 2 and g + 3, where
    /// they would meet the grants of rounds g − 1 and g + 1 on the same ingress ports.
    #[test]
    fn grants_of_one_round_share_a_scheduled_phase_when_their_arrivals_straddle_an_epoch() {
        let mut s = spec(4, 2, Topology::Parallel);
        s.pre_slots = 2;
        s.sched_slots = 10;
        s.duration_ps = 60_000_000;
        all_to_all(&mut s, 100_000);
        let mut sim = Negotiator::new(s).unwrap();
        assert_eq!(sim.lay.epoch_ps, 1_020_000);
        assert_eq!((ctrl_epochs(&sim, 0), ctrl_epochs(&sim, 1)), (2, 3));
        assert_eq!(sim.req_lag, 3);
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert_eq!(o.collisions, 0);
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(o.flows_completed, 12);
        assert_eq!((o.bytes_delivered, o.bytes_dropped, o.bytes_in_flight), (1_200_000, 0, 0));
    }

    /// Random tiny layouts (predefined and scheduled slots, propagation — half of them
    /// placing an epoch start among the first round's control arrivals —, ToRs, ports,
    /// topology, piggybacking, variant) with all-to-all traffic: never a collision, the
    /// ledger balances, offered = delivered + in flight with no drop at every check, and
    /// every offered byte is delivered in the end (stateful variant: see below).
    #[test]
    fn random_layouts_never_collide_and_deliver_everything() {
        let mut rng = Stream::new(11, "neg.layouts");
        let (mut cases, mut straddling) = (0, 0);
        while cases < 1500 {
            let topo = if rng.below(2) == 0 { Topology::Parallel } else { Topology::ThinClos };
            let n = 2 + rng.below(8);
            let p = 1 + rng.below(4);
            if topo == Topology::ThinClos && n >= p && n % p != 0 {
                continue;
            }
            let mut s = spec(n, p, topo);
            let rr = match topo {
                Topology::Parallel => (n - 1).div_ceil(p),
                Topology::ThinClos => n / p.min(n),
            };
            s.pre_slots = [0, rr, rr + 1, 2 * rr + 1][rng.below(4) as usize];
            s.sched_slots = 1 + rng.below(40);
            s.pb = rng.below(4) != 0;
            let lay = layout(&s).unwrap();
            s.prop_ps = if lay.rr_slots >= 2 && rng.below(2) == 0 {
                // an epoch start between the arrivals of first-round slots k−1 and k (or
                // exactly at k−1's)
                let k = 1 + rng.below(lay.rr_slots - 1) as u64;
                let x = rng.below(lay.pre_slot_ps as u32) as u64;
                let first = s.guardband_ps + Rate::new(s.port_rate_bps).tx(s.ctrl_bytes) + (k - 1) * lay.pre_slot_ps + x;
                ((1 + rng.below(4) as u64) * lay.epoch_ps).saturating_sub(first).max(1)
            } else {
                1_000 + rng.below(5_000_000) as u64
            };
            s.variant = match rng.below(8) {
                0 => Variant::DataSize,
                1 => Variant::HolDelay { alpha: 0.001 },
                2 => Variant::Iterative { iters: 2 },
                3 => Variant::Stateful,
                4 => Variant::Projector,
                5 if topo == Topology::ThinClos => Variant::Relay,
                _ => Variant::Base,
            };
            s.seed = rng.next_u64() % 1000;
            s.duration_ps = u64::MAX / 4;
            let mut sizes = 0u64;
            for i in 0..n {
                for d in 0..n {
                    if i == d {
                        continue;
                    }
                    for _ in 0..1 + rng.below(2) {
                        s.flow_start_ps.push(rng.below(5_000_000) as u64);
                        s.flow_src.push(i);
                        s.flow_dst.push(d);
                        let size = 1 + rng.below(6_000) as u64;
                        s.flow_size.push(size);
                        sizes += size;
                    }
                }
            }
            let flows = s.flow_size.len() as u64;
            let what = format!("N={n} S={p} {topo:?} pre={} sched={} prop={} pb={} {:?}", s.pre_slots, s.sched_slots, s.prop_ps, s.pb, s.variant);
            let mut sim = Negotiator::new(s).unwrap_or_else(|e| panic!("{what}: {e:?}"));
            straddling += straddles(&sim) as u32;
            let epoch = sim.lay.epoch_ps;
            let mut t = 0;
            loop {
                t += 20 * epoch;
                sim.run_until(t);
                let o = sim.output();
                assert_eq!(o.collisions, 0, "{what}");
                assert!(o.invariant_errors.is_empty(), "{what}: {:?}", o.invariant_errors);
                assert_eq!((o.bytes_offered, o.bytes_dropped), (o.bytes_delivered + o.bytes_in_flight, 0), "{what}");
                if o.flows_completed == flows && o.bytes_in_flight == 0 {
                    assert_eq!((o.bytes_offered, o.bytes_delivered), (sizes, sizes), "{what}");
                    assert!(o.flow_delivered.iter().zip(&sim.spec.flow_size).all(|(a, b)| a == b), "{what}");
                    break;
                }
                assert!(t < 3_000 * epoch, "{what}: not drained after {} epochs", t / epoch);
            }
            cases += 1;
        }
        assert!(straddling >= 400, "only {straddling} straddling layouts");
    }
}
