//! Sirius-like traffic-oblivious baseline (NegotiaToR's TO baseline, see
//! docs/arch/sirius.md): a thin-clos of passive AWGRs with tunable lasers, a static cyclic round robin
//! (every ToR pair connected once every W = N/S slots on its one port), fixed-size
//! timeslots that start with a guardband, VLB relay through intermediate ToRs with
//! congestion control of the intermediate queues, PIAS priorities at sources only.
//!
//! Decisions (the seed papers do not give Sirius' parameters, docs/arch/sirius.md#decisions):
//! * Timeslot 100 ns = 10 ns guardband + 90 ns = one 1125-B cell (10-B header + 1115-B
//!   payload) at 100 Gb/s, the same data packet as NegotiaToR's scheduled slot.
//! * At a source connected to ToR m in a slot, one cell leaves each port, chosen in this
//!   order: (1) relayed cells waiting at this ToR for m (second hop, FIFO); (2) own data,
//!   highest PIAS level first: at a level, data for m itself goes direct (one hop),
//!   otherwise a cell of another destination d is sent to m as intermediate (first hop),
//!   destinations taken round robin, at most 32 candidates inspected per port-slot.
//! * Congestion control of the intermediate queues, threshold `relay_cap` cells per
//!   (intermediate m, final destination d); two models (`cc`):
//!   - `Inband` (default, what Sirius can build): m's occupancy of its queue for every d
//!     travels only in-band, piggybacked on the cell m sends to i in the round robin
//!     (once per cycle; an idle slot still carries a header-only cell). The report is a
//!     snapshot taken at the start of m's slot q (after the cells that arrived by then,
//!     before m's own departures of that slot) and is usable by i from slot
//!     q + L, L = ⌈(slot − guardband + propagation) / slot⌉ (the cell fully received):
//!     i's knowledge is one round-robin cycle plus the propagation old (up to
//!     W − 1 + L slots, at least L). i estimates occupancy(m, d) = last report + the
//!     cells i itself sent to m for d that had not yet arrived at m when the report was
//!     taken, and sends a relay cell for d to m only while that estimate is below
//!     `relay_cap`. Cells other sources sent meanwhile are unknown to i, so queues can
//!     overshoot the threshold (buffers are unlimited; nothing is dropped; the peak is
//!     reported as `max_relay_queue_cells`). The report's bytes (one count per
//!     destination) are charged by the architecture as cell header bytes (`header_bytes`
//!     includes them; `--report-bits`, default enough for counts up to 2 x `relay_cap`).
//!   - `Ideal` (the earlier model, kept for comparison): credits known without delay —
//!     m accepts at most `relay_cap` cells per d (queued at m plus on their way), so a
//!     queue never exceeds the threshold.
//! * Default threshold 8 cells: the in-band feedback loop spans ⌈(L + W)/W⌉ + 1 cycles
//!   (3 + 1 = 4 at 128 ToRs × 8 ports, W = 16, L = 21), and a (m, d) queue drains one
//!   cell per cycle, so a threshold below ~4 starves a source that alone relays through
//!   m to d (permutation traffic); 8 = twice that loop, i.e. 8 × 1125 B per destination
//!   (≈ 1.1 MB per ToR at 128 ToRs) of relay buffer, and the same value as the ideal
//!   model so the two can be compared at one threshold.
//! * Intermediates keep one FIFO per final destination and no priorities (PIAS at
//!   sources only, as in NEG §4.1).
//!
//! OpenOptics infrastructure services (docs/arch/sirius.md#openoptics-services) mapped onto the cell model
//! (`services`, [`crate::services::SlotServices`]):
//! * Congestion detection: the slot queues that wait for a future slot are the relay
//!   queues (m, d) — served one cell per occurrence of the m→d round-robin slot (once a
//!   cycle). A relay cell that reaches m and finds (m, d) already holding ≥ 1 cell (what
//!   the next occurrence carries) is a congestion event. Occupancy is counted exactly
//!   (cells arrived and not yet sent on); `queue_estimation = eqo` is rejected (a
//!   packet switch's byte estimate has no slotted counterpart). A source VOQ is not a
//!   slot queue here: VLB lets any slot carry its cells.
//! * Push-back: the message from m to the cell's source i rides m's next round-robin
//!   cell to i (the first m→i slot at or after the detection) and is usable L slots after
//!   it — the in-band path of Sirius' occupancy reports. i then starts no new cell towards
//!   d (direct or relayed) until the congested m→d slot has come round again — as many
//!   times as the queue ahead of the cell needs: for as long, counted from the message's
//!   arrival, as from the detection to the end of the m→d occurrence that carries the
//!   detected cell (the first occurrence at or after the detection plus one cycle per
//!   cell found queued; with one cell found, the packet engine's "one cycle more"). A
//!   slot is 100 ns while a report takes up to a cycle plus a propagation delay, so a
//!   pause ending at a fixed time after the detection would mostly have expired when the
//!   source hears of it (DECIDE, see [`crate::services::SlotServices::joined`]).
//!   Nothing is dropped by design; the defining effect is a bounded relay queue
//!   (`max_relay_queue_cells`) where it otherwise grows with the offered load.
//! * Flow pausing: a flow that has started ≥ `elephant_bytes` at its source (PIAS flow
//!   aging) sends only on its direct circuit (no VLB first hop); a VOQ level whose head
//!   flow is such an elephant is skipped as a relay candidate.
//! * Buffer offload: the endpoints are ToRs with no hosts below them; rejected.
//! * `paused_attempts` counts relay/direct candidates skipped by push-back or pausing.
//!
//! Failures of ToR ports and ToRs (docs/arch/sirius.md#failures, `sirius/failures.rs`):
//! detected through the round-robin cells (silence = down), nothing sent on a circuit its
//! sender knows to be down, VLB only through intermediates that report their onward
//! circuit up, cells lost where they arrive at a failed element.

mod failures;

pub use failures::SirFailSpec;

use super::common::*;
use crate::error::SpecError;
use crate::services::SlotServices;
use crate::units::{Ps, Rate, NONE};
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct SirSpec {
    pub tors: u32,
    pub ports: u32,
    pub port_rate_bps: u64,
    pub slot_ps: Ps,
    pub guardband_ps: Ps,
    pub header_bytes: u64,
    pub prop_ps: Ps,
    pub pq: bool,
    pub pias_t1: u64,
    pub pias_t2: u64,
    pub relay_cap: u32,
    pub cc: RelayCc,
    /// Relay rule: false = a source's data for the slot's peer goes direct first (only
    /// other destinations' cells are relayed); true = Valiant for every cell (the slot's
    /// peer is the next cell's intermediate whatever its destination; a cell whose
    /// destination is the peer goes direct).
    pub relay_all: bool,
    /// OpenOptics infrastructure services (see the module doc).
    pub services: crate::spec::Services,
    /// Link and ToR failures (`sirius/failures.rs`).
    pub fail: SirFailSpec,
    pub seed: u64,
    pub duration_ps: Ps,
    pub sample_ps: Ps,
    pub flow_start_ps: Vec<u64>,
    pub flow_src: Vec<u32>,
    pub flow_dst: Vec<u32>,
    pub flow_size: Vec<u64>,
}

/// How sources learn the occupancy of the intermediate queues (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayCc {
    /// Credits known instantly; queued + en route ≤ `relay_cap`.
    Ideal,
    /// Occupancy piggybacked on the round-robin cells: one cycle plus propagation old.
    Inband,
    /// Request-grant: a relay cell leaves only with a grant of its intermediate, asked
    /// for and answered in the headers of the round-robin cells.
    Grant,
}

const SCAN: usize = 32;

#[derive(Clone, Copy)]
struct Cell {
    flow: u32,
    bytes: u64,
    ready: Ps,
}

pub struct Sirius {
    spec: SirSpec,
    rate: Rate,
    n: u32,
    s: u32,
    payload: u64,
    fab: Fabric,
    pias: Pias,
    fl: Flows,
    b: Books,
    voq: Vec<Voq>,
    lists: Vec<Vec<u32>>, // per (i, level): destinations with data at that level
    lpos: Vec<u32>,       // per ((i·N + d)·3 + level): index in list or NONE
    cursor: Vec<u32>,
    relay: Vec<VecDeque<Cell>>, // per (m·N + d)
    rcount: Vec<u32>,
    svc: SlotServices,
    fail: failures::FailState,
    /// Count the occupancy of the relay queues (in-band congestion control or
    /// congestion detection).
    track: bool,
    /// per flow: bytes started at the source (flow pausing only).
    f_sent: Vec<u64>,
    // in-band congestion control
    /// per (m·N + d): cells arrived at m for d and not yet sent on (m's own view).
    occ: Vec<u32>,
    /// per (m·N + d): (first snapshot slot it holds for, occupancy) — the changes of
    /// `occ` as seen by snapshots, oldest first, pruned to the last `hist` slots.
    occ_log: Vec<VecDeque<(u64, u32)>>,
    /// per arrival slot (mod len): (m·N + d, source) of relay cells that arrive at m then.
    arrivals: Vec<Vec<(u32, u32)>>,
    /// per (i·N + m): (arrival slot at m, d) of relay cells i sent to m not yet covered
    /// by the latest report from m that i has received.
    own: Vec<VecDeque<(u64, u32)>>,
    /// report lag L in slots; snapshot history kept (slots).
    lag: u64,
    hist: u64,
    src_bytes: Vec<u64>,
    relay_bytes: Vec<u64>,
    active: Vec<u32>,
    in_active: Vec<bool>,
    slot: u64,
    done: bool,
    m_direct: u64,
    m_first: u64,
    m_second: u64,
    m_idle_relay_blocked: u64,
    m_max_relay: u32,
    m_max_occ: u32,
    m_over_cap: u64,
    m_stale_sum: u64,
    m_stale_n: u64,
    m_occ_underflow: u64,
    // request-grant congestion control (cc = Grant)
    /// per decision slot (mod len): (m, i, d), requests m answers in that slot.
    gq: Vec<Vec<(u32, u32, u32)>>,
    /// per (i·N + m): grants m sent i, (slot from which i may use it, d), oldest first.
    grants: Vec<VecDeque<(u64, u32)>>,
    /// per (m·N + d): cells m granted that have not yet left their source.
    gres: Vec<u32>,
    /// per (i·N + d): i's requests and grants outstanding for d.
    pend: Vec<u32>,
    m_requests: u64,
    m_grants: u64,
    m_refused: u64,
    m_grants_unused: u64,
    m_grant_wait_sum: u64,
    m_grant_wait_n: u64,
}

impl Sirius {
    pub fn new(spec: SirSpec) -> Result<Self, SpecError> {
        let fab = Fabric::new(spec.tors, spec.ports, Topology::ThinClos)?;
        let rate = Rate::new(spec.port_rate_bps);
        if spec.port_rate_bps == 0 {
            return Err(SpecError::new("link_rate", 0, "must be positive"));
        }
        if spec.slot_ps <= spec.guardband_ps {
            return Err(SpecError::new("slot", spec.slot_ps, "must be longer than the guardband"));
        }
        let cap = bytes_in(spec.slot_ps - spec.guardband_ps, rate);
        if cap <= spec.header_bytes {
            return Err(SpecError::new("slot", spec.slot_ps, "must hold the cell header plus at least one byte"));
        }
        if spec.relay_cap == 0 {
            return Err(SpecError::new("relay_cap", 0, "must be >= 1 cell"));
        }
        if spec.prop_ps == 0 {
            return Err(SpecError::new("propagation", 0, "must be positive"));
        }
        if spec.pias_t1 == 0 || spec.pias_t2 <= spec.pias_t1 {
            return Err(SpecError::new("pias_thresholds", (spec.pias_t1, spec.pias_t2), "need 0 < first < second"));
        }
        let (n, s) = (spec.tors, spec.ports);
        let fl = Flows::new(spec.flow_start_ps.clone(), spec.flow_src.clone(), spec.flow_dst.clone(), spec.flow_size.clone(), n)?;
        let nn = (n * n) as usize;
        let w = fab.w as u64;
        let lag = (spec.slot_ps - spec.guardband_ps + spec.prop_ps).div_ceil(spec.slot_ps);
        let arr_ring = (spec.slot_ps + spec.prop_ps).div_ceil(spec.slot_ps) as usize + 2;
        let inband = spec.cc == RelayCc::Inband;
        let grant = spec.cc == RelayCc::Grant;
        let svc = SlotServices::new(spec.services, "sirius")?;
        let fail = failures::FailState::new(&spec.fail, n, s, fab.g, spec.slot_ps, spec.duration_ps)?;
        if grant && fail.on {
            return Err(SpecError::new("cc", "grant", "link and ToR failures are modelled with cc inband or ideal only"));
        }
        if grant && (svc.cfg.congestion_detection || svc.cfg.pushback || svc.cfg.flow_pausing || svc.cfg.offload_queues > 0) {
            return Err(SpecError::new("cc", "grant", "the OpenOptics services are modelled with cc inband or ideal only"));
        }
        let gn = if grant { nn } else { 0 };
        let track = inband || svc.cfg.congestion_detection;
        let f_sent = vec![0; if svc.cfg.flow_pausing { spec.flow_size.len() } else { 0 }];
        Ok(Sirius {
            svc,
            fail,
            track,
            f_sent,
            rate,
            n,
            s,
            payload: cap - spec.header_bytes,
            fab,
            pias: Pias { on: spec.pq, t1: spec.pias_t1, t2: spec.pias_t2 },
            fl,
            b: Books::new(n, spec.duration_ps, spec.sample_ps),
            voq: vec![Voq::default(); nn],
            lists: vec![Vec::new(); 3 * n as usize],
            lpos: vec![NONE; 3 * nn],
            cursor: vec![0; 3 * n as usize],
            relay: vec![VecDeque::new(); nn],
            rcount: vec![0; nn],
            occ: vec![0; if track { nn } else { 0 }],
            occ_log: vec![VecDeque::new(); if inband { nn } else { 0 }],
            arrivals: vec![Vec::new(); if track { arr_ring } else { 0 }],
            own: vec![VecDeque::new(); if inband { nn } else { 0 }],
            lag,
            hist: lag + w + 1,
            src_bytes: vec![0; n as usize],
            relay_bytes: vec![0; n as usize],
            active: Vec::new(),
            in_active: vec![false; n as usize],
            slot: 0,
            done: false,
            m_direct: 0,
            m_first: 0,
            m_second: 0,
            m_idle_relay_blocked: 0,
            m_max_relay: 0,
            m_max_occ: 0,
            m_over_cap: 0,
            m_stale_sum: 0,
            m_stale_n: 0,
            m_occ_underflow: 0,
            gq: vec![Vec::new(); if grant { (lag + w + 2) as usize } else { 0 }],
            grants: vec![VecDeque::new(); gn],
            gres: vec![0; gn],
            pend: vec![0; gn],
            m_requests: 0,
            m_grants: 0,
            m_refused: 0,
            m_grants_unused: 0,
            m_grant_wait_sum: 0,
            m_grant_wait_n: 0,
            spec,
        })
    }

    fn activate(&mut self, i: u32) {
        if !self.in_active[i as usize] {
            self.in_active[i as usize] = true;
            self.active.push(i);
        }
    }

    fn list_add(&mut self, i: u32, d: u32, l: usize) {
        let k = ((i * self.n + d) * 3) as usize + l;
        if self.lpos[k] == NONE {
            let li = i as usize * 3 + l;
            self.lpos[k] = self.lists[li].len() as u32;
            self.lists[li].push(d);
        }
    }

    fn list_remove(&mut self, i: u32, d: u32, l: usize) {
        let k = ((i * self.n + d) * 3) as usize + l;
        let at = self.lpos[k];
        if at == NONE {
            return;
        }
        let li = i as usize * 3 + l;
        let list = &mut self.lists[li];
        list.swap_remove(at as usize);
        if (at as usize) < list.len() {
            let moved = list[at as usize];
            self.lpos[((i * self.n + moved) * 3) as usize + l] = at;
        }
        self.lpos[k] = NONE;
    }

    fn admit(&mut self, t: Ps) {
        while let Some(f) = self.fl.pop_until(t) {
            let fi = f as usize;
            let (i, d, size) = (self.fl.src[fi], self.fl.dst[fi], self.fl.size[fi]);
            if self.fail.on && !self.fail.node_up(i, self.fl.start[fi]) {
                // a flow that starts at a failed ToR is lost whole
                self.b.offer(size);
                self.b.lose_unsent(&mut self.fl, f, size, "failed_node");
                self.b.events += 1;
                continue;
            }
            let parts = self.pias.split(size);
            self.voq[(i * self.n + d) as usize].push(f, parts);
            for (l, &b) in parts.iter().enumerate() {
                if b > 0 {
                    self.list_add(i, d, l);
                }
            }
            self.src_bytes[i as usize] += size;
            self.b.offer(size);
            self.b.events += 1;
            self.activate(i);
        }
    }

    /// Pop one packet of level l from VOQ(i, d) and keep the level lists in sync: a
    /// cell is cut and sent (direct or first hop of a relay).
    fn take(&mut self, i: u32, d: u32, l: usize) -> (u32, u64) {
        self.b.cell_sent();
        let v = &mut self.voq[(i * self.n + d) as usize];
        let (f, b) = v.pop_level(l, self.payload);
        let empty = v.q[l].is_empty();
        if empty {
            self.list_remove(i, d, l);
        }
        self.src_bytes[i as usize] -= b;
        if self.svc.cfg.flow_pausing {
            self.f_sent[f as usize] += b;
        }
        (f, b)
    }

    /// Record that `occ[mi]` (just changed) holds for snapshots from slot `eff` on;
    /// drop history no report can still need at slot `k`.
    fn occ_logged(&mut self, mi: usize, eff: u64, k: u64) {
        let v = self.occ[mi];
        let log = &mut self.occ_log[mi];
        match log.back_mut() {
            Some(e) if e.0 == eff => e.1 = v,
            _ => log.push_back((eff, v)),
        }
        let floor = k.saturating_sub(self.hist);
        while log.len() >= 2 && log[1].0 <= floor {
            log.pop_front();
        }
    }

    /// m's occupancy for destination d in the snapshot of slot q (0 before any change).
    fn snapshot(&self, m: u32, d: u32, q: u64) -> u32 {
        let log = &self.occ_log[(m * self.n + d) as usize];
        let at = log.partition_point(|e| e.0 <= q);
        if at == 0 { 0 } else { log[at - 1].1 }
    }

    /// The slot of the latest report from m that i can use in slot k: m's round-robin
    /// slot towards i (step thin_rr_step(m, i)) no later than k − L. None before the
    /// first one (all queues are then known to start empty).
    pub fn report_slot(&self, i: u32, m: u32, k: u64) -> Option<u64> {
        let w = self.fab.w as u64;
        let c = self.fab.thin_rr_step(m, i) as u64;
        let kl = k.checked_sub(self.lag)?;
        if kl < c {
            return None;
        }
        Some(kl - (kl - c) % w)
    }

    /// Source i's in-band estimate, in slot k, of intermediate m's queue for d: the
    /// latest report plus i's own cells for d that had not reached m when it was taken.
    pub fn estimate(&mut self, i: u32, m: u32, d: u32, k: u64) -> u32 {
        let q = self.report_slot(i, m, k);
        let own = &mut self.own[(i * self.n + m) as usize];
        if let Some(q) = q {
            while own.front().is_some_and(|e| e.0 <= q) {
                own.pop_front();
            }
        }
        let mine = own.iter().filter(|e| e.1 == d).count() as u32;
        mine + q.map_or(0, |q| self.snapshot(m, d, q))
    }

    /// Age (slots) in slot k of the report from m that i uses (None before the first).
    pub fn report_age(&self, i: u32, m: u32, k: u64) -> Option<u64> {
        self.report_slot(i, m, k).map(|q| k - q)
    }

    /// m's own count of cells queued (arrived) for d.
    pub fn relay_occupancy(&self, m: u32, d: u32) -> u32 {
        if self.spec.cc == RelayCc::Inband {
            self.occ[(m * self.n + d) as usize]
        } else {
            self.relay[(m * self.n + d) as usize].iter().filter(|c| c.ready <= self.slot * self.spec.slot_ps + self.spec.guardband_ps).count() as u32
        }
    }

    /// Current slot index (the next to run).
    pub fn slot(&self) -> u64 {
        self.slot
    }

    fn slot_step(&mut self) {
        let k = self.slot;
        let w = self.fab.w;
        let c = (k % w as u64) as u32;
        let ts = k * self.spec.slot_ps;
        let tx0 = ts + self.spec.guardband_ps;
        self.admit(tx0);
        while self.b.sample_due(ts) {
            let q: Vec<u64> = (0..self.n as usize).map(|i| self.src_bytes[i] + self.relay_bytes[i]).collect();
            self.b.record_queue(q.into_iter());
        }
        let inband = self.spec.cc == RelayCc::Inband;
        self.svc.deliver(k);
        if self.track {
            // relay cells that reached their intermediate by this slot's transmit time
            let r = self.arrivals.len();
            let bucket = std::mem::take(&mut self.arrivals[(k % r as u64) as usize]);
            let wu = w as u64;
            for &(mi, src) in &bucket {
                let mi = mi as usize;
                let (m, d) = (mi as u32 / self.n, mi as u32 % self.n);
                // congestion: the queue already holds what the next m→d slot carries
                // (one cell); the push-back rides m's next round-robin cell to the
                // source, usable L slots after it leaves
                let next = |c: u32| k + (c as u64 + wu - k % wu) % wu;
                let arrive = next(self.fab.thin_rr_step(m, src)) + self.lag;
                // this cell leaves in the occ-th m→d slot after the next one
                let until = next(self.fab.thin_rr_step(m, d)) + self.occ[mi] as u64 * wu + 1;
                self.svc.joined(self.occ[mi] as u64, 1, src, d, arrive, until - k);
                if inband && self.occ[mi] >= self.spec.relay_cap {
                    self.m_over_cap += 1;
                }
                self.occ[mi] += 1;
                self.m_max_occ = self.m_max_occ.max(self.occ[mi]);
                if inband {
                    self.occ_logged(mi, k, k);
                }
            }
            let mut bucket = bucket;
            bucket.clear();
            self.arrivals[(k % r as u64) as usize] = bucket;
        }
        if self.fail.on {
            self.apply_node_failures(k);
        }
        let grant = self.spec.cc == RelayCc::Grant;
        if grant {
            self.decide_requests(k);
        }
        let levels = if self.spec.pq { 3 } else { 1 };
        let prop = self.spec.prop_ps;
        let mut a = 0;
        while a < self.active.len() {
            let i = self.active[a];
            if self.src_bytes[i as usize] == 0 && self.relay_bytes[i as usize] == 0 {
                self.in_active[i as usize] = false;
                self.active.swap_remove(a);
                if grant {
                    self.release_grants(i);
                }
                continue;
            }
            a += 1;
            for p in 0..self.s {
                let m = self.fab.thin_rr(c, i, p);
                if m == NONE {
                    continue;
                }
                if self.fail.on && !self.hears(i, m, k) {
                    // i knows its circuit to m is down (or does not know it is up): idle
                    self.fail.m_idle += 1;
                    continue;
                }
                // (1) relayed cells for m (second hop)
                let ri = (i * self.n + m) as usize;
                if let Some(cell) = self.relay[ri].front().copied() {
                    if cell.ready <= tx0 {
                        self.relay[ri].pop_front();
                        self.rcount[ri] -= 1;
                        if self.track {
                            if self.occ[ri] == 0 {
                                self.m_occ_underflow += 1;
                            } else {
                                self.occ[ri] -= 1;
                            }
                            if inband {
                                self.occ_logged(ri, k + 1, k);
                            }
                        }
                        self.relay_bytes[i as usize] -= cell.bytes;
                        let dur = self.rate.tx(self.spec.header_bytes + cell.bytes);
                        self.b.check_window(tx0, dur, tx0, ts + self.spec.slot_ps);
                        self.fab.transmit(k, i, p, m);
                        let arr = tx0 + dur + prop;
                        self.m_second += cell.bytes;
                        if self.fail.on {
                            if let Some(why) = self.fate(i, m, p, k, arr) {
                                self.b.sent(&mut self.fl, cell.flow, i, tx0, arr, cell.bytes, 2, false);
                                self.b.drop(&mut self.fl, cell.flow, cell.bytes, why);
                                continue;
                            }
                            if arr <= self.spec.duration_ps {
                                self.fail.delivered(arr, cell.bytes);
                            }
                        }
                        self.b.sent(&mut self.fl, cell.flow, i, tx0, arr, cell.bytes, 2, true);
                        continue;
                    }
                }
                if grant {
                    self.grant_port(i, p, m, k, tx0, ts, levels);
                    continue;
                }
                if self.src_bytes[i as usize] == 0 {
                    continue;
                }
                // (2) own data, highest level first: direct, else relay via m
                let mut blocked = false;
                'lv: for l in 0..levels {
                    let dv = (i * self.n + m) as usize;
                    if !self.spec.relay_all && !self.voq[dv].q[l].is_empty() && !self.svc.pushed_back(i, m, k) {
                        self.send_direct(i, p, m, l, k, tx0, ts);
                        blocked = false;
                        break 'lv;
                    }
                    let li = i as usize * 3 + l;
                    let len = self.lists[li].len();
                    if len == 0 {
                        continue;
                    }
                    let start = self.cursor[li] as usize % len;
                    for x in 0..len.min(SCAN) {
                        let j = (start + x) % len;
                        let d = self.lists[li][j];
                        if d == m && self.spec.relay_all && !self.svc.pushed_back(i, m, k) {
                            // Valiant for every cell: this one's intermediate is its destination
                            self.cursor[li] = (j + 1) as u32;
                            self.send_direct(i, p, m, l, k, tx0, ts);
                            blocked = false;
                            break 'lv;
                        }
                        if d == m || self.svc.pushed_back(i, d, k) {
                            continue;
                        }
                        if self.fail.on && !self.reachable(i, m, d, k) {
                            self.fail.m_unreach += 1;
                            continue;
                        }
                        if self.svc.cfg.flow_pausing {
                            // an elephant (PIAS aging) sends on its direct circuit only
                            let f = self.voq[(i * self.n + d) as usize].head_flow(l).expect("listed level");
                            if self.svc.elephant(self.f_sent[f as usize]) {
                                continue;
                            }
                        }
                        let mi = (m * self.n + d) as usize;
                        let full = if inband {
                            self.estimate(i, m, d, k) >= self.spec.relay_cap
                        } else {
                            self.rcount[mi] >= self.spec.relay_cap
                        };
                        if full {
                            blocked = true;
                            continue;
                        }
                        self.cursor[li] = (j + 1) as u32;
                        let (f, bytes) = self.take(i, d, l);
                        let dur = self.rate.tx(self.spec.header_bytes + bytes);
                        self.b.check_window(tx0, dur, tx0, ts + self.spec.slot_ps);
                        self.fab.transmit(k, i, p, m);
                        let arr = tx0 + dur + prop;
                        self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, 1, false);
                        self.m_first += bytes;
                        blocked = false;
                        if self.fail.on {
                            if let Some(why) = self.fate(i, m, p, k, arr) {
                                self.b.drop(&mut self.fl, f, bytes, why);
                                break 'lv;
                            }
                        }
                        self.relay[mi].push_back(Cell { flow: f, bytes, ready: arr });
                        if self.track {
                            let ka = (arr - self.spec.guardband_ps).div_ceil(self.spec.slot_ps);
                            let r = self.arrivals.len() as u64;
                            debug_assert!(ka > k && ka - k < r);
                            self.arrivals[(ka % r) as usize].push((mi as u32, i));
                        }
                        if inband {
                            let ka = (arr - self.spec.guardband_ps).div_ceil(self.spec.slot_ps);
                            self.own[(i * self.n + m) as usize].push_back((ka, d));
                            if let Some(age) = self.report_age(i, m, k) {
                                self.m_stale_sum += age;
                                self.m_stale_n += 1;
                            }
                        }
                        self.rcount[mi] += 1;
                        self.m_max_relay = self.m_max_relay.max(self.rcount[mi]);
                        self.relay_bytes[m as usize] += bytes;
                        self.activate(m);
                        break 'lv;
                    }
                }
                if blocked {
                    self.m_idle_relay_blocked += 1;
                }
            }
        }
        self.b.events += 1;
    }

    /// Send one cell of level l of i's own data for m on port p, direct (one hop).
    #[allow(clippy::too_many_arguments)]
    fn send_direct(&mut self, i: u32, p: u32, m: u32, l: usize, k: u64, tx0: Ps, ts: Ps) {
        let (f, bytes) = self.take(i, m, l);
        let dur = self.rate.tx(self.spec.header_bytes + bytes);
        self.b.check_window(tx0, dur, tx0, ts + self.spec.slot_ps);
        self.fab.transmit(k, i, p, m);
        let arr = tx0 + dur + self.spec.prop_ps;
        self.m_direct += bytes;
        if self.fail.on {
            if let Some(why) = self.fate(i, m, p, k, arr) {
                self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, 1, false);
                self.b.drop(&mut self.fl, f, bytes, why);
                return;
            }
            if arr <= self.spec.duration_ps {
                self.fail.delivered(arr, bytes);
            }
        }
        self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, 1, true);
    }

    /// cc = Grant: m answers the requests it received, in its round-robin slot to their
    /// source: a grant when its queue for d, the cells on their way to it and the cells
    /// it granted that have not left their source stay below `relay_cap` (the space is
    /// reserved), else nothing (the source may ask again). A request whose source no
    /// longer holds data for d is dropped (the source would discard the grant).
    fn decide_requests(&mut self, k: u64) {
        let r = self.gq.len() as u64;
        let mut bucket = std::mem::take(&mut self.gq[(k % r) as usize]);
        for &(m, i, d) in &bucket {
            let id = (i * self.n + d) as usize;
            self.pend[id] -= 1;
            if self.voq[id].bytes == 0 {
                continue;
            }
            let mi = (m * self.n + d) as usize;
            if self.rcount[mi] + self.gres[mi] < self.spec.relay_cap {
                self.gres[mi] += 1;
                self.pend[id] += 1;
                self.m_grants += 1;
                self.grants[(i * self.n + m) as usize].push_back((k + self.lag, d));
            } else {
                self.m_refused += 1;
            }
        }
        bucket.clear();
        self.gq[(k % r) as usize] = bucket;
    }

    /// Return the grants a source holds when it has nothing left to send.
    fn release_grants(&mut self, i: u32) {
        for m in 0..self.n {
            let im = (i * self.n + m) as usize;
            while let Some((_, d)) = self.grants[im].pop_front() {
                self.gres[(m * self.n + d) as usize] -= 1;
                self.pend[(i * self.n + d) as usize] -= 1;
                self.m_grants_unused += 1;
            }
        }
    }

    /// cc = Grant: the cell of source i's port p, connected to m in slot k (after its
    /// relayed cells): own data highest level first, direct to m or the relay cell of
    /// m's oldest usable grant; then the header's request to m for one destination.
    #[allow(clippy::too_many_arguments)]
    fn grant_port(&mut self, i: u32, p: u32, m: u32, k: u64, tx0: Ps, ts: Ps, levels: usize) {
        let n = self.n;
        let im = (i * n + m) as usize;
        // a grant whose destination has no data left is returned
        while let Some(&(from, d)) = self.grants[im].front() {
            if from > k || self.voq[(i * n + d) as usize].bytes > 0 {
                break;
            }
            self.grants[im].pop_front();
            self.gres[(m * n + d) as usize] -= 1;
            self.pend[(i * n + d) as usize] -= 1;
            self.m_grants_unused += 1;
        }
        let granted = self.grants[im].front().copied().filter(|&(from, _)| from <= k).map(|(_, d)| d);
        for l in 0..levels {
            let direct = !self.voq[im].q[l].is_empty();
            let relay = granted.is_some_and(|d| !self.voq[(i * n + d) as usize].q[l].is_empty());
            // at one level: direct first, or the granted relay cell first when every cell
            // is relayed (Valiant for every cell)
            if direct && !(relay && self.spec.relay_all) {
                self.send_direct(i, p, m, l, k, tx0, ts);
                break;
            }
            if !relay {
                continue;
            }
            let d = granted.expect("a granted destination");
            let id = (i * n + d) as usize;
            let (from, _) = self.grants[im].pop_front().expect("the granted cell");
            self.m_grant_wait_sum += k - from;
            self.m_grant_wait_n += 1;
            let mi = (m * n + d) as usize;
            self.gres[mi] -= 1;
            self.pend[id] -= 1;
            let (f, bytes) = self.take(i, d, l);
            let dur = self.rate.tx(self.spec.header_bytes + bytes);
            self.b.check_window(tx0, dur, tx0, ts + self.spec.slot_ps);
            self.fab.transmit(k, i, p, m);
            let arr = tx0 + dur + self.spec.prop_ps;
            self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, 1, false);
            self.m_first += bytes;
            self.relay[mi].push_back(Cell { flow: f, bytes, ready: arr });
            self.rcount[mi] += 1;
            self.m_max_relay = self.m_max_relay.max(self.rcount[mi]);
            self.relay_bytes[m as usize] += bytes;
            self.activate(m);
            break;
        }
        // the request in this cell's header: the highest level's next destination (round
        // robin) with more cells waiting than requests and grants outstanding
        for l in 0..levels {
            let li = i as usize * 3 + l;
            let len = self.lists[li].len();
            if len == 0 {
                continue;
            }
            let start = self.cursor[li] as usize % len;
            for x in 0..len.min(SCAN) {
                let j = (start + x) % len;
                let d = self.lists[li][j];
                if d == m {
                    continue;
                }
                let id = (i * n + d) as usize;
                let cells = self.voq[id].bytes.div_ceil(self.payload);
                if (self.pend[id] as u64) < cells {
                    self.cursor[li] = (j + 1) as u32;
                    self.pend[id] += 1;
                    self.m_requests += 1;
                    // m answers in its first slot to i at or after the request's arrival
                    let w = self.fab.w as u64;
                    let at = k + self.lag;
                    let step = self.fab.thin_rr_step(m, i) as u64;
                    let dec = at + (step + w - at % w) % w;
                    let r = self.gq.len() as u64;
                    debug_assert!(dec > k && dec - k < r);
                    self.gq[(dec % r) as usize].push((m, i, d));
                    return;
                }
            }
        }
    }

    pub fn run_until(&mut self, t: Ps) {
        let end = t.min(self.spec.duration_ps);
        while !self.done {
            let ts = self.slot * self.spec.slot_ps;
            if ts >= end {
                if ts >= self.spec.duration_ps {
                    self.done = true;
                }
                break;
            }
            self.slot_step();
            self.slot += 1;
        }
    }

    pub fn now(&self) -> Ps {
        (self.slot * self.spec.slot_ps).min(self.spec.duration_ps)
    }

    pub fn output(&self) -> SlottedOutput {
        // in flight, from the queues: bytes not yet cut at the sources, relayed cells
        let vq = Held::voqs(&self.voq);
        let rq: u64 = self.relay.iter().flat_map(|q| q.iter()).map(|c| c.bytes).sum();
        let rc: u64 = self.relay.iter().map(|q| q.len() as u64).sum();
        let mut o = finish_output(&self.b, &self.fl, &self.fab, self.now(), Held { bytes: vq + rq, cells: rc }, Vec::new());
        let rcs: u64 = self.rcount.iter().map(|&x| x as u64).sum();
        if rc != rcs {
            o.invariant_errors.push(format!("relay credits {rcs} != relay cells {rc}"));
        }
        let inband = self.spec.cc == RelayCc::Inband;
        let grant = self.spec.cc == RelayCc::Grant;
        if grant {
            let g: u64 = self.grants.iter().map(|q| q.len() as u64).sum();
            let r: u64 = self.gres.iter().map(|&x| x as u64).sum();
            if g != r {
                o.invariant_errors.push(format!("grants held {g} != grants reserved {r}"));
            }
        }
        let over = if grant {
            self.rcount.iter().zip(&self.gres).any(|(&x, &g)| x + g > self.spec.relay_cap)
        } else {
            !inband && self.rcount.iter().any(|&x| x > self.spec.relay_cap)
        };
        if over {
            o.invariant_errors.push("an intermediate queue exceeded its credit cap".into());
        }
        if self.track {
            let pending: u64 = self.arrivals.iter().map(|b| b.len() as u64).sum();
            let occ: u64 = self.occ.iter().map(|&x| x as u64).sum();
            if occ + pending != rc || self.m_occ_underflow > 0 {
                o.invariant_errors.push(format!(
                    "relay occupancy {occ} + arriving {pending} != relay cells {rc} (underflows {})",
                    self.m_occ_underflow
                ));
            }
        }
        let (awgrs, ports) = self.fab.awgrs();
        o.metrics = vec![
            ("direct_bytes".into(), self.m_direct as f64),
            ("relay_first_hop_bytes".into(), self.m_first as f64),
            ("relay_second_hop_bytes".into(), self.m_second as f64),
            ("relay_blocked_port_slots".into(), self.m_idle_relay_blocked as f64),
            ("max_relay_queue_cells".into(), if inband { self.m_max_occ } else { self.m_max_relay } as f64),
            ("max_relay_committed_cells".into(), self.m_max_relay as f64),
            ("relay_cap_cells".into(), self.spec.relay_cap as f64),
            ("cc_inband".into(), if inband { 1.0 } else { 0.0 }),
            ("relay_cells_over_cap".into(), self.m_over_cap as f64),
            ("relay_report_lag_slots".into(), if inband { self.lag as f64 } else { 0.0 }),
            (
                "relay_report_age_mean_slots".into(),
                if self.m_stale_n > 0 { self.m_stale_sum as f64 / self.m_stale_n as f64 } else { 0.0 },
            ),
            ("relay_queued_bytes_end".into(), rq as f64),
            ("cell_payload_bytes".into(), self.payload as f64),
            ("slot_ps".into(), self.spec.slot_ps as f64),
            ("cycle_slots".into(), self.fab.w as f64),
            ("duty_cycle".into(), 1.0 - self.spec.guardband_ps as f64 / self.spec.slot_ps as f64),
            ("awgrs".into(), awgrs as f64),
            ("awgr_ports".into(), ports as f64),
        ];
        if grant {
            o.metrics.extend([
                ("relay_requests".into(), self.m_requests as f64),
                ("relay_grants".into(), self.m_grants as f64),
                ("relay_requests_refused".into(), self.m_refused as f64),
                ("relay_grants_unused".into(), self.m_grants_unused as f64),
                (
                    "relay_grant_wait_mean_slots".into(),
                    if self.m_grant_wait_n > 0 { self.m_grant_wait_sum as f64 / self.m_grant_wait_n as f64 } else { 0.0 },
                ),
            ]);
        }
        o.metrics.extend(self.svc.metrics());
        self.failure_output(&mut o);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn spec(n: u32, s: u32) -> SirSpec {
        SirSpec {
            tors: n,
            ports: s,
            port_rate_bps: 100_000_000_000,
            slot_ps: 100_000,
            guardband_ps: 10_000,
            header_bytes: 10,
            prop_ps: 2_000_000,
            pq: true,
            pias_t1: 1000,
            pias_t2: 10_000,
            relay_cap: 8,
            relay_all: false,
            cc: RelayCc::Inband,
            services: Default::default(),
            fail: Default::default(),
            seed: 1,
            duration_ps: 200_000_000,
            sample_ps: 0,
            flow_start_ps: vec![],
            flow_src: vec![],
            flow_dst: vec![],
            flow_size: vec![],
        }
    }

    fn metric(o: &SlottedOutput, key: &str) -> f64 {
        o.metrics.iter().find(|(k, _)| k == key).map(|(_, v)| *v).expect(key)
    }

    /// 4 ToRs × 1 port (step c connects i → (i + c) mod 4), L = 21 slots. Flow 3 → 2 of
    /// thirty cells under request-grant: slot 1 connects 3 → 0 and carries the request "a
    /// cell for 2"; 0 answers in its first slot to 3 at or after slot 22 (step 3: slot 23),
    /// the grant is usable at 3 from slot 44, and 3's next slot to 0 is 45 (step 1): the
    /// first relayed cell leaves then; until then only the direct slots (≡ 3) carry cells.
    #[test]
    fn a_relay_cell_waits_for_its_grant() {
        let mut s = spec(4, 1);
        s.pq = false;
        s.cc = RelayCc::Grant;
        s.flow_start_ps = vec![0];
        s.flow_src = vec![3];
        s.flow_dst = vec![2];
        s.flow_size = vec![30 * 1115];
        s.duration_ps = 20_000_000;
        let mut sim = Sirius::new(s).unwrap();
        let slot = 100_000;
        sim.run_until(45 * slot);
        assert_eq!(sim.rcount.iter().sum::<u32>(), 0, "nothing relayed before the grant is usable");
        assert!(sim.gres[2] >= 1, "0 reserved a place for 2");
        sim.run_until(46 * slot);
        assert_eq!(sim.rcount[2], 1, "the granted cell left in slot 45");
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(o.flows_completed, 1);
        assert!(metric(&o, "relay_grants") >= 1.0 && metric(&o, "relay_requests") >= metric(&o, "relay_grants"));
    }

    /// Many sources relaying to one destination: under request-grant an intermediate's
    /// queue plus its outstanding grants never exceed the threshold, requests beyond it
    /// are refused, and every byte arrives.
    #[test]
    fn grants_never_exceed_the_threshold() {
        let mut s = spec(16, 4);
        s.cc = RelayCc::Grant;
        s.relay_all = true;
        s.relay_cap = 2;
        s.flow_start_ps = (0..15).map(|_| 0).collect();
        s.flow_src = (1..16).collect();
        s.flow_dst = vec![0; 15];
        s.flow_size = vec![200_000; 15];
        s.duration_ps = 2_000_000_000;
        let mut sim = Sirius::new(s).unwrap();
        let mut peak = 0;
        for k in 1..2000u64 {
            sim.run_until(k * 100_000);
            for mi in 0..(16 * 16) {
                assert!(sim.rcount[mi] + sim.gres[mi] <= 2, "slot {k}");
                peak = peak.max(sim.rcount[mi] + sim.gres[mi]);
            }
        }
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(o.flows_completed, 15);
        assert_eq!(peak, 2);
        assert!(metric(&o, "relay_requests_refused") > 0.0);
    }

    /// All-to-all: with the direct-first rule every cell finds its destination's slot and
    /// nothing is relayed; Valiant for every cell relays most of them.
    #[test]
    fn the_relay_rule_decides_what_all_to_all_relays() {
        let run = |all: bool| {
            let mut s = spec(16, 4);
            s.relay_all = all;
            for i in 0..16u32 {
                for d in 0..16u32 {
                    if i != d {
                        s.flow_start_ps.push(0);
                        s.flow_src.push(i);
                        s.flow_dst.push(d);
                        s.flow_size.push(20_000);
                    }
                }
            }
            let mut sim = Sirius::new(s).unwrap();
            sim.run_until(u64::MAX);
            let o = sim.output();
            assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
            assert_eq!(o.flows_completed, 240);
            metric(&o, "relay_first_hop_bytes") / (240.0 * 20_000.0)
        };
        assert_eq!(run(false), 0.0);
        assert!(run(true) > 0.5);
    }

    #[test]
    fn a_large_flow_is_spread_and_conserved() {
        let mut s = spec(16, 4);
        s.flow_start_ps = vec![0, 0];
        s.flow_src = vec![0, 3];
        s.flow_dst = vec![5, 5];
        s.flow_size = vec![2_000_000, 700];
        let mut sim = Sirius::new(s).unwrap();
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(o.flows_completed, 2);
        assert!(o.metrics.iter().any(|(k, v)| k == "relay_first_hop_bytes" && *v > 1e6));
        assert_eq!(o.flow_hops[0], 2);
    }

    /// 4 ToRs × 1 port (W = 4, step c connects i → (i + c) mod 4), L = 21 slots.
    /// Flow 3 → 2 of two cells, no PIAS: slot 1 relays via 0, slot 2 relays via 1; that
    /// cell reaches 1 at 2.3 µs (counted from slot 23) and leaves for 2 in slot 25.
    /// ToR 0 hears from 1 in slots ≡ 3 (mod 4): the snapshot of slot 23 (occupancy 1)
    /// is usable from slot 44 to 47 only — one cycle plus propagation late, and the
    /// departure is seen from slot 48 (snapshot 27).
    #[test]
    fn inband_knowledge_lags_by_the_report_path() {
        let mut s = spec(4, 1);
        s.pq = false;
        s.flow_start_ps = vec![0];
        s.flow_src = vec![3];
        s.flow_dst = vec![2];
        s.flow_size = vec![2230];
        s.duration_ps = 10_000_000;
        let mut sim = Sirius::new(s).unwrap();
        assert_eq!(sim.lag, 21);
        let slot = 100_000;
        let mut truth = Vec::new();
        for k in 0..60u64 {
            sim.run_until(k * slot);
            assert_eq!(sim.slot(), k);
            truth.push(sim.relay_occupancy(1, 2));
            let e0 = sim.estimate(0, 1, 2, k);
            let expect0 = u32::from((44..48).contains(&k));
            assert_eq!(e0, expect0, "ToR 0's view of 1's queue for 2 in slot {k}");
            if let Some(age) = sim.report_age(0, 1, k) {
                assert!((21..25).contains(&age), "age {age} in slot {k}");
            }
            // the sender counts its own cell until a report from 1 (slots ≡ 2 mod 4)
            // taken after the arrival reaches it: snapshot 26 at slot 47
            if k >= 3 {
                let e3 = sim.estimate(3, 1, 2, k);
                assert_eq!(e3, u32::from(k < 47), "ToR 3's view in slot {k}");
            }
        }
        // the real queue held the cell between its arrival and its departure only
        // (relay_occupancy at slot k is the state after slot k − 1)
        let held: Vec<u64> = (0..60).filter(|&k| truth[k as usize] == 1).collect();
        assert_eq!(held, vec![24, 25]);
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        assert_eq!(o.flows_completed, 1);
        assert_eq!(o.flow_hops[0], 2);
    }

    /// 4 ToRs × 1 port (step c connects i → (i + c) mod 4), L = 6 slots at 500 ns.
    /// Flow 1 → 3 relays via 2 in slot 1 (reaches 2 in slot 7, leaves in slot 9, the
    /// 2 → 3 step ≡ 1); flow 0 → 3 starts after slot 1's transmit time and relays via 2 in
    /// slot 2, reaching 2 in slot 8: the queue holds the earlier cell — exactly one
    /// congestion event. Push-back rides 2's next cell to 0 (slot 10, step 2) and is
    /// usable from slot 16; the pause lasts slot 8 → end of slot 13 (the 2 → 3 slot 13
    /// carries the detected cell's place), 6 slots: ToR 0 starts nothing for 3 in slots
    /// 16..21. Flow 0 → 3 of slot 17 then leaves in slot 22 (via 2) instead of slot 17.
    #[test]
    fn congestion_is_detected_on_the_relay_queue_and_pushes_the_source_back() {
        let run = |svc: crate::spec::Services| {
            let mut s = spec(4, 1);
            s.pq = false;
            s.prop_ps = 500_000;
            s.services = svc;
            s.flow_start_ps = vec![0, 150_000, 1_650_000];
            s.flow_src = vec![1, 0, 0];
            s.flow_dst = vec![3, 3, 3];
            s.flow_size = vec![1000, 1000, 1000];
            s.duration_ps = 10_000_000;
            let mut sim = Sirius::new(s).unwrap();
            assert_eq!(sim.lag, 6);
            sim.run_until(u64::MAX);
            let o = sim.output();
            assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
            assert_eq!(o.flows_completed, 3);
            let g = |k: &str| o.metrics.iter().find(|(n, _)| n == k).unwrap().1 as u64;
            (g("svc_congestion_events"), g("svc_pushback_msgs"), g("svc_paused_attempts"), o.flow_finish_ps.clone())
        };
        let plain = run(Default::default());
        let det = run(crate::spec::Services { congestion_detection: true, ..Default::default() });
        let pb = run(crate::spec::Services { pushback: true, ..Default::default() });
        assert_eq!(plain.0, 0);
        assert_eq!((det.0, det.1, det.2), (1, 0, 0));
        assert_eq!(det.3, plain.3);
        assert_eq!((pb.0, pb.1), (1, 1));
        assert!(pb.2 >= 1);
        assert_eq!(pb.3[..2], plain.3[..2]);
        // sent in slot 22 via 2 (reaches 2 in slot 28, leaves in slot 29) instead of slot
        // 17 via 1 (reaches 1 in slot 23, leaves in the 1 → 3 slot 26)
        let slot = 100_000;
        assert_eq!(pb.3[2] / slot, 29 + 5);
        assert_eq!(plain.3[2] / slot, 26 + 5);
    }

    /// Many sources send to one destination: with instant credits the intermediate
    /// queues never pass the threshold; in-band, stale reports let them overshoot, and
    /// nothing is lost either way.
    #[test]
    fn inband_queues_overshoot_ideal_ones_do_not() {
        let mut peak = Vec::new();
        for cc in [RelayCc::Ideal, RelayCc::Inband] {
            let mut s = spec(16, 4);
            s.cc = cc;
            s.relay_cap = 4;
            s.flow_start_ps = vec![0; 15];
            s.flow_src = (1..16).collect();
            s.flow_dst = vec![0; 15];
            s.flow_size = vec![100_000; 15];
            s.duration_ps = 100_000_000;
            let mut sim = Sirius::new(s).unwrap();
            sim.run_until(u64::MAX);
            let o = sim.output();
            assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
            assert_eq!(o.flows_completed, 15);
            let g = |k: &str| o.metrics.iter().find(|(n, _)| n == k).unwrap().1;
            peak.push((g("max_relay_queue_cells"), g("relay_cells_over_cap")));
        }
        assert!(peak[0].0 <= 4.0 && peak[0].1 == 0.0, "{peak:?}");
        assert!(peak[1].0 > 4.0 && peak[1].1 > 0.0, "{peak:?}");
    }

    /// The ledger's two balances hold on a run cut off mid-traffic (cells queued at
    /// sources, relayed, on the wire past the end), and each catches a bookkeeping slip:
    /// a counter bumped twice, and a cell gone from the engine's state uncounted.
    #[test]
    fn ledger_balances_catch_bookkeeping_slips() {
        let mut s = spec(16, 4);
        // an incast to ToR 0 and a flow 0 → 9: relay queues fill
        s.flow_start_ps = vec![0; 16];
        s.flow_src = (1..16).chain([0]).collect();
        s.flow_dst = vec![0; 15].into_iter().chain([9]).collect();
        s.flow_size = vec![100_000; 16];
        s.duration_ps = 20_000_000;
        let mut sim = Sirius::new(s).unwrap();
        sim.run_until(u64::MAX);
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        let p = &o.packets;
        assert!(p.delivered > 0 && p.in_flight > 0, "{p:?}");
        assert_eq!(p.sent, p.delivered + p.in_flight);
        assert_eq!((p.sent_ctrl, p.trimmed), (0, 0));
        let ri = sim.relay.iter().position(|q| !q.is_empty()).expect("relayed cells at the end");
        assert!(!sim.b.late.is_empty(), "cells arriving after the end");
        let errors = |sim: &Sirius| sim.output().totals.invariant_errors;
        let has = |e: &[String], what: &str| e.iter().any(|x| x.starts_with(what));
        // counters: a cell counted as sent twice; payload counted as delivered twice
        sim.b.ledger.sent += 1;
        let e = errors(&sim);
        assert!(has(&e, "packet balance") && !has(&e, "payload balance"), "{e:?}");
        sim.b.ledger.sent -= 1;
        sim.b.ledger.delivered += 7;
        let e = errors(&sim);
        assert!(has(&e, "payload balance") && !has(&e, "packet balance"), "{e:?}");
        sim.b.ledger.delivered -= 7;
        // state: a relayed cell vanishes from its queue; a cell on its last hop is lost
        let c = sim.relay[ri].pop_back().unwrap();
        let e = errors(&sim);
        assert!(has(&e, "payload balance") && has(&e, "packet balance"), "{e:?}");
        sim.relay[ri].push_back(c);
        let late = sim.b.late.pop().unwrap();
        let e = errors(&sim);
        assert!(has(&e, "payload balance") && has(&e, "packet balance"), "{e:?}");
        sim.b.late.push(late);
        assert!(errors(&sim).is_empty());
    }
}
