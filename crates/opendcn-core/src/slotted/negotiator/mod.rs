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

mod control;
mod failures;
mod matcher;
mod output;
mod slots;
mod spec;
mod variants;

pub use matcher::Matcher;
pub use spec::{layout, Layout, NegSpec, Variant};

use super::common::*;
use crate::error::SpecError;
use crate::units::{Ps, Rate, NONE};

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
        // the per-pair state (VOQs, first request and data epochs, variants' tables), refused
        // before it is allocated when it cannot fit
        let per_pair = std::mem::size_of::<Voq>() as u64 + 16
            + if spec.variant == Variant::Stateful { 16 } else { 0 }
            + if fault_relay_on { 4 } else { 0 }
            + if rbuf { std::mem::size_of::<std::collections::VecDeque<u32>>() as u64 + 8 } else { 0 }
            + if relay_on { 8 } else { 0 };
        crate::error::check_memory("tors", n, n as u64 * n as u64 * per_pair,
                                   &format!("NegotiaToR's per-pair state for {n} ToRs"))?;
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
}

#[cfg(test)]
mod tests;
