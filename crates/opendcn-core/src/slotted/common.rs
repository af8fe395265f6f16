//! Shared pieces of the slotted engines (NegotiaToR, Sirius): AWGR fabric geometry
//! (parallel network and thin-clos), per-destination queues with PIAS levels, the flow
//! table, byte and cell accounting ([`Books`], kept with the shared [`Ledger`]), per-slot
//! collision and guardband checks, sampled time series and the output every slotted
//! engine returns.
//!
//! Cells are the slotted engines' packets. In the ledger: a cell is *sent* when a source
//! cuts it from its queue and puts it on a circuit (first hop; the second hop of a relayed
//! cell is the same cell), *delivered* when its last hop arrives at its destination by
//! the end of the run, *dropped* where the engine loses it (NegotiaToR's and Sirius'
//! failed links, Sirius' failed ToRs); payload a failed source held before cutting it into
//! cells is lost without a dropped cell ([`Books::lose_unsent`]).
//! A relay that forwards only part of a queued cell (a piggyback slot smaller than the
//! cell) sends that part as a new cell. In flight at the end: relayed cells held at (or
//! on their way to) an intermediate and cells on their last hop that arrive after the
//! end, counted by walking the relay queues and [`Books::late`]. Scheduling messages
//! (NegotiaToR's REQUEST / GRANT / ACCEPT, Sirius' occupancy reports) are fields of the
//! predefined-slot or cell headers delivered to mailboxes, not cells of their own with a
//! queue or a wire to cross, so they are not in the ledger (`control` stays 0).
//!
//! Units: time in integer picoseconds, sizes in bytes, rates in bit/s.

use crate::error::SpecError;
use crate::ledger::Ledger;
use crate::sim::PacketTotals;
use crate::units::{Ps, Rate, NONE};
use std::collections::VecDeque;

/// v mod m, by one subtraction when v < 2m (the usual case here: a sum of two values
/// below m).
#[inline(always)]
fn wrap(v: u32, m: u32) -> u32 {
    if v < m {
        v
    } else if v - m < m {
        v - m
    } else {
        v % m
    }
}

/// How the S ports of the N ToRs are wired through one layer of AWGRs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// S AWGRs of N ports; port s of every ToR on AWGR s; any port reaches any ToR.
    Parallel,
    /// ⌈N·S/W⌉ AWGRs of W = N/S ports (docs/arch/negotiator.md#fabrics): groups of W ToRs;
    /// AWGR(p, a) takes port p of group a and feeds port p of group (a + p) mod S.
    /// With N < S: W = 1, N groups, ports ≥ N unconnected.
    ThinClos,
}

/// The AWGR fabric: which (destination ToR, ingress port) a (source ToR, egress port)
/// reaches; slot-level round robins over it; per-slot collision check.
#[derive(Debug, Clone)]
pub struct Fabric {
    pub n: u32,
    pub s: u32,
    pub topo: Topology,
    /// ToRs per group (thin-clos: N/S; parallel: N).
    pub w: u32,
    /// Groups (thin-clos: S, or N when N < S with ports ≥ N left dark; parallel: 1).
    pub g: u32,
    /// Per ToR: its group (ToR / W) and its index in the group (ToR mod W), so that the
    /// per-slot geometry divides nothing.
    grp: Vec<u32>,
    idx: Vec<u32>,
    /// Stamp per (dst, ingress port): id of the last slot that received on it.
    rx_stamp: Vec<u64>,
    pub collisions: u64,
    pub unreachable: u64,
}

impl Fabric {
    pub fn new(n: u32, s: u32, topo: Topology) -> Result<Self, SpecError> {
        if n < 2 {
            return Err(SpecError::new("tors", n, "need at least 2 ToRs"));
        }
        if !(1..=64).contains(&s) {
            return Err(SpecError::new("ports", s, "need 1..64 ports per ToR"));
        }
        let w = match topo {
            Topology::Parallel => n,
            Topology::ThinClos => {
                if n < s {
                    1
                } else if !n.is_multiple_of(s) {
                    return Err(SpecError::new("tors", n, "thin-clos needs the ToR count to be a multiple of the port count (W = N/S)"));
                } else {
                    n / s
                }
            }
        };
        let g = if topo == Topology::ThinClos { n / w } else { 1 };
        Ok(Fabric {
            n,
            s,
            topo,
            w,
            g,
            grp: (0..n).map(|i| i / w).collect(),
            idx: (0..n).map(|i| i % w).collect(),
            rx_stamp: vec![u64::MAX; (n * s) as usize],
            collisions: 0,
            unreachable: 0,
        })
    }

    /// Number of AWGRs and their port count.
    pub fn awgrs(&self) -> (u32, u32) {
        match self.topo {
            Topology::Parallel => (self.s, self.n),
            Topology::ThinClos => (self.g * self.g.min(self.s), self.w),
        }
    }

    /// Can egress port `p` of `src` reach `dst` (whose ingress port is then `p` as well)?
    #[inline]
    pub fn reaches(&self, src: u32, p: u32, dst: u32) -> bool {
        match self.topo {
            Topology::Parallel => p < self.s,
            Topology::ThinClos => p < self.g && wrap(self.grp[src as usize] + p, self.g) == self.grp[dst as usize],
        }
    }

    /// Thin-clos: the one port index a pair uses (on both ends).
    #[inline]
    pub fn pair_port(&self, src: u32, dst: u32) -> u32 {
        wrap(self.grp[dst as usize] + self.g - self.grp[src as usize], self.g)
    }

    /// Record one transmission on (src, port p) → dst in slot `slot_id`; counts a
    /// collision if that AWGR output (dst's ingress port p) already carried a
    /// transmission in this slot, and an unreachable wavelength if the wiring does not
    /// connect them.
    #[inline]
    pub fn transmit(&mut self, slot_id: u64, src: u32, p: u32, dst: u32) {
        if !self.reaches(src, p, dst) || src == dst {
            self.unreachable += 1;
        }
        let k = (dst * self.s + p) as usize;
        if self.rx_stamp[k] == slot_id {
            self.collisions += 1;
        }
        self.rx_stamp[k] = slot_id;
    }

    /// Thin-clos cyclic round robin: in round-robin step `c` (0..W), egress port p of
    /// `src` reaches the ToR of group (a + p) mod S with index (x + c) mod W (NONE for
    /// the self-loop).
    #[inline]
    pub fn thin_rr(&self, c: u32, src: u32, p: u32) -> u32 {
        if p >= self.g {
            return NONE;
        }
        let (a, x) = (self.grp[src as usize], self.idx[src as usize]);
        let d = wrap(a + p, self.g) * self.w + wrap(x + c, self.w);
        if d == src { NONE } else { d }
    }

    /// Inverse of `thin_rr`: the step at which `src` meets `dst` (port = pair_port).
    #[inline]
    pub fn thin_rr_step(&self, src: u32, dst: u32) -> u32 {
        wrap(self.idx[dst as usize] + self.w - self.idx[src as usize], self.w)
    }
}

/// One queued piece of a flow: `bytes` of flow `flow` at one PIAS level.
#[derive(Debug, Clone, Copy)]
pub struct Seg {
    pub flow: u32,
    pub bytes: u64,
}

/// PIAS thresholds: cumulative bytes at which a flow drops to level 1 and to level 2.
#[derive(Debug, Clone, Copy)]
pub struct Pias {
    pub on: bool,
    pub t1: u64,
    pub t2: u64,
}

impl Pias {
    /// Split a new flow of `size` bytes into its three level segments.
    pub fn split(&self, size: u64) -> [u64; 3] {
        if !self.on {
            return [size, 0, 0];
        }
        let a = size.min(self.t1);
        let b = size.saturating_sub(self.t1).min(self.t2 - self.t1);
        [a, b, size - a - b]
    }
}

/// A per-destination queue (VOQ) with up to three PIAS levels, FIFO within a level.
#[derive(Debug, Default, Clone)]
pub struct Voq {
    pub q: [VecDeque<Seg>; 3],
    pub bytes: u64,
    pub level_bytes: [u64; 3],
}

impl Voq {
    pub fn push(&mut self, flow: u32, parts: [u64; 3]) {
        for (l, &b) in parts.iter().enumerate() {
            if b > 0 {
                self.q[l].push_back(Seg { flow, bytes: b });
                self.level_bytes[l] += b;
                self.bytes += b;
            }
        }
    }

    /// Highest non-empty level.
    #[inline]
    pub fn top_level(&self) -> Option<usize> {
        (0..3).find(|&l| !self.q[l].is_empty())
    }

    /// Take one packet of at most `max` payload bytes from level `l`: (flow, bytes).
    /// A packet belongs to one flow and one level.
    #[inline]
    pub fn pop_level(&mut self, l: usize, max: u64) -> (u32, u64) {
        let head = self.q[l].front_mut().expect("pop from an empty level");
        let b = head.bytes.min(max);
        let f = head.flow;
        head.bytes -= b;
        if head.bytes == 0 {
            self.q[l].pop_front();
        }
        self.level_bytes[l] -= b;
        self.bytes -= b;
        (f, b)
    }

    /// Take one packet from the highest non-empty level.
    #[inline]
    pub fn pop(&mut self, max: u64) -> Option<(u32, u64)> {
        self.top_level().map(|l| self.pop_level(l, max))
    }

    /// Flow id at the head of level `l`.
    pub fn head_flow(&self, l: usize) -> Option<u32> {
        self.q[l].front().map(|s| s.flow)
    }
}

/// Input flows sorted by start; results are reported in the caller's order.
pub struct Flows {
    pub start: Vec<Ps>,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub size: Vec<u64>,
    /// Processing order (indices into the caller's arrays, by (start, index)).
    pub order: Vec<u32>,
    /// Next index into `order` to admit.
    pub next: usize,
    /// Per flow, what its deliveries update, side by side (one cache line per delivery).
    pub st: Vec<FlowSt>,
}

/// A flow's running state.
#[derive(Debug, Clone, Copy)]
pub struct FlowSt {
    /// Bytes of the flow that arrive at the destination by the end of the run.
    pub delivered: u64,
    /// Bytes of the flow not yet transmitted on their final hop.
    pub unsent: u64,
    /// Latest arrival time of any of the flow's bytes at the destination.
    pub last_arr: Ps,
    pub hops: u32,
    /// The destination (a copy of the column, for the receive series).
    pub dst: u32,
}

impl Flows {
    pub fn new(start: Vec<Ps>, src: Vec<u32>, dst: Vec<u32>, size: Vec<u64>, n: u32) -> Result<Self, SpecError> {
        let m = start.len();
        if src.len() != m || dst.len() != m || size.len() != m {
            return Err(SpecError::new("flows", m, "flow columns differ in length"));
        }
        if m >= u32::MAX as usize {
            return Err(SpecError::new("flows", m, "too many flows"));
        }
        for i in 0..m {
            if src[i] >= n || dst[i] >= n {
                return Err(SpecError::new("flow_src/flow_dst", (src[i], dst[i]), "endpoint out of range"));
            }
            if src[i] == dst[i] {
                return Err(SpecError::new("flow_dst", dst[i], "a flow must go to another ToR"));
            }
            if size[i] == 0 {
                return Err(SpecError::new("flow_size", 0, "flows must have at least one byte"));
            }
        }
        let mut order: Vec<u32> = (0..m as u32).collect();
        order.sort_by_key(|&i| (start[i as usize], i));
        Ok(Flows {
            st: (0..m).map(|i| FlowSt { delivered: 0, unsent: size[i], last_arr: 0, hops: 0, dst: dst[i] }).collect(),
            start,
            src,
            dst,
            size,
            order,
            next: 0,
        })
    }

    /// Next flow to admit if it starts at or before `t`.
    #[inline]
    pub fn pop_until(&mut self, t: Ps) -> Option<u32> {
        let &f = self.order.get(self.next)?;
        if self.start[f as usize] <= t {
            self.next += 1;
            Some(f)
        } else {
            None
        }
    }
}

/// Byte and cell counters, checks and samples shared by the slotted engines.
pub struct Books {
    pub end_ps: Ps,
    /// Offered, delivered and lost payload; cells sent, delivered and dropped, bumped
    /// where each happens (see the module doc).
    pub ledger: Ledger,
    /// Names of the ledger's drop reasons, in the order they first occurred.
    pub reasons: Vec<&'static str>,
    /// Payload not yet on its last hop (source queues and relay queues), a running count
    /// checked against a walk of the queues at the end.
    pub queued: u64,
    /// Cells on their last hop that arrive after the end of the run: (flow, payload).
    /// Only the last propagation delay of a run adds to it.
    pub late: Vec<(u32, u64)>,
    pub guard_violations: u64,
    pub packet_hops: u64,
    pub events: u64,
    pub flows_started: u64,
    pub hash: crate::trace::TraceHash,
    // time series: per node, per interval
    pub sample_ps: Ps,
    pub n: u32,
    pub ts_tx: Vec<u64>,
    pub ts_rx: Vec<u64>,
    pub ts_queued: Vec<u64>,
    pub next_sample: Ps,
    pub n_bins: usize,
}

impl Books {
    pub fn new(n: u32, end_ps: Ps, sample_ps: Ps) -> Self {
        let n_bins = if sample_ps > 0 { end_ps.div_ceil(sample_ps) as usize } else { 0 };
        Books {
            end_ps,
            ledger: Ledger::new(0),
            reasons: Vec::new(),
            queued: 0,
            late: Vec::new(),
            guard_violations: 0,
            packet_hops: 0,
            events: 0,
            flows_started: 0,
            hash: crate::trace::TraceHash::start(),
            sample_ps,
            n,
            ts_tx: vec![0; n_bins * n as usize],
            ts_rx: vec![0; n_bins * n as usize],
            ts_queued: vec![0; n_bins * n as usize],
            next_sample: if sample_ps > 0 { sample_ps } else { Ps::MAX },
            n_bins,
        }
    }

    /// A flow of `size` bytes starts: its bytes are offered and queued at its source.
    #[inline]
    pub fn offer(&mut self, size: u64) {
        self.ledger.offer(size);
        self.queued += size;
        self.flows_started += 1;
    }

    /// A source cuts a cell from its queue and puts it on a circuit (or a relay sends
    /// the cut-off part of a relayed cell as a new cell).
    #[inline]
    pub fn cell_sent(&mut self) {
        self.ledger.send(false, false);
    }

    /// Check a transmission interval against its window (circuit up).
    #[inline]
    pub fn check_window(&mut self, start: Ps, dur: Ps, win_lo: Ps, win_hi: Ps) {
        if start < win_lo || start + dur > win_hi {
            self.guard_violations += 1;
        }
    }

    #[inline]
    pub fn bin(&self, t: Ps) -> Option<usize> {
        if self.sample_ps == 0 || t >= self.end_ps {
            return None;
        }
        Some((t / self.sample_ps) as usize)
    }

    /// Payload `bytes` of `flow` leave `node` at `t` on a hop arriving at `arr`;
    /// `last_hop` when `arr` is the arrival at the flow's destination.
    #[inline]
    pub fn sent(&mut self, fl: &mut Flows, flow: u32, node: u32, t: Ps, arr: Ps, bytes: u64, hop: u32, last_hop: bool) {
        self.packet_hops += 1;
        self.hash.record(t, ((flow as u64) << 20) ^ bytes);
        if let Some(b) = self.bin(t) {
            self.ts_tx[b * self.n as usize + node as usize] += bytes;
        }
        if !last_hop {
            return;
        }
        let st = &mut fl.st[flow as usize];
        self.queued -= bytes;
        st.unsent -= bytes;
        if hop > st.hops {
            st.hops = hop;
        }
        if arr > st.last_arr {
            st.last_arr = arr;
        }
        if arr <= self.end_ps {
            self.ledger.deliver(bytes, 0);
            st.delivered += bytes;
            if let Some(b) = self.bin(arr.saturating_sub(1)) {
                self.ts_rx[b * self.n as usize + st.dst as usize] += bytes;
            }
        } else {
            self.late.push((flow, bytes));
        }
    }

    /// A cell of `flow` carrying `bytes` is lost (e.g. on a failed link), for `reason`;
    /// no transport sends its payload again.
    pub fn drop(&mut self, fl: &mut Flows, flow: u32, bytes: u64, reason: &'static str) {
        self.queued -= bytes;
        fl.st[flow as usize].unsent -= bytes;
        let r = self.reason(reason);
        self.ledger.drop(r, bytes, true);
    }

    /// `bytes` of `flow` still queued at its source (never cut into a cell) are lost,
    /// for `reason` (e.g. the source ToR failed): lost payload, no dropped cell.
    pub fn lose_unsent(&mut self, fl: &mut Flows, flow: u32, bytes: u64, reason: &'static str) {
        self.queued -= bytes;
        fl.st[flow as usize].unsent -= bytes;
        let r = self.reason(reason);
        self.ledger.lose(r, bytes);
    }

    /// The ledger index of drop reason `reason`, added when it first occurs (so a run
    /// without drops lists none).
    fn reason(&mut self, reason: &'static str) -> usize {
        match self.reasons.iter().position(|&x| x == reason) {
            Some(r) => r,
            None => {
                self.reasons.push(reason);
                let l = &mut self.ledger;
                l.lost.push(0);
                l.pkts_dropped.push(0);
                l.dropped_bytes.push(0);
                self.reasons.len() - 1
            }
        }
    }

    /// Take queued-bytes samples at every sample boundary up to `t` (call with the queued
    /// bytes per node).
    pub fn sample_due(&self, t: Ps) -> bool {
        t >= self.next_sample && self.next_sample <= self.end_ps
    }

    pub fn record_queue(&mut self, per_node: impl Iterator<Item = u64>) {
        let b = (self.next_sample / self.sample_ps) as usize - 1;
        if b < self.n_bins {
            for (i, q) in per_node.enumerate() {
                self.ts_queued[b * self.n as usize + i] = q;
            }
        }
        self.next_sample += self.sample_ps;
    }
}

/// What a slotted run returns (columns in the caller's flow order).
#[derive(Debug, Clone, Default)]
pub struct SlottedOutput {
    /// The counters every engine reports.
    pub totals: crate::metrics::RunTotals,
    /// The cell ledger, as the packet engine reports its packets.
    pub packets: PacketTotals,
    pub ts_time_ps: Vec<u64>,
    pub ts_node: Vec<u32>,
    pub ts_queued_bytes: Vec<u64>,
    pub ts_tx_bytes: Vec<u64>,
    pub ts_rx_bytes: Vec<u64>,
    /// Architecture metrics (name, value).
    pub metrics: Vec<(String, f64)>,
    /// Named per-epoch (or per-interval) series, e.g. match ratio per epoch.
    pub series: Vec<(String, Vec<f64>)>,
}

crate::with_totals!(SlottedOutput);

/// The ledger's totals in the packet engine's form: `reasons` names the ledger's drop
/// reason indices; `in_flight` is the cells the engine counted in its state.
pub fn packet_totals(l: &Ledger, reasons: &[&str], in_flight: u64) -> PacketTotals {
    let by = |v: &[u64]| reasons.iter().zip(v).map(|(r, &x)| (r.to_string(), x)).collect();
    PacketTotals {
        sent: l.sent,
        sent_retx: l.sent_retx,
        sent_ctrl: l.sent_ctrl,
        delivered: l.pkts_delivered,
        dropped: by(&l.pkts_dropped),
        dropped_bytes: by(&l.dropped_bytes),
        trimmed: l.pkts_trimmed,
        trims: l.trims,
        bounces: l.bounces,
        in_flight,
        duplicate_bytes: l.duplicate_bytes,
    }
}

/// What an engine's queues hold at output time, counted by walking them (never from the
/// running counters): payload bytes queued at sources (not yet cut into cells) and in
/// relay queues, and the relayed cells held at, or on their way to, an intermediate.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held {
    pub bytes: u64,
    pub cells: u64,
}

impl Held {
    /// Walk source queues: their segments' bytes.
    pub fn voqs<'a>(voqs: impl IntoIterator<Item = &'a Voq>) -> u64 {
        voqs.into_iter().flat_map(|v| v.q.iter().flatten()).map(|s| s.bytes).sum()
    }
}

/// Build the common part of the output and check the invariants: the ledger's payload
/// and cell balances against what `held` found in the queues plus the cells arriving
/// after the end ([`Books::late`]).
pub fn finish_output(b: &Books, fl: &Flows, fab: &Fabric, now: Ps, held: Held, mut errors: Vec<String>) -> SlottedOutput {
    let m = fl.start.len();
    let mut finish = vec![u64::MAX; m];
    let mut completed = 0u64;
    let mut started = 0u64;
    let mut offered = 0u64;
    let mut flow_deliv_sum = 0u64;
    for &f in &fl.order[..fl.next] {
        let f = f as usize;
        started += 1;
        offered += fl.size[f];
        let st = &fl.st[f];
        flow_deliv_sum += st.delivered;
        if st.delivered == fl.size[f] {
            completed += 1;
            finish[f] = st.last_arr;
        }
    }
    let l = &b.ledger;
    let late_bytes: u64 = b.late.iter().map(|&(_, x)| x).sum();
    let in_flight = held.bytes + late_bytes;
    let cells_in_flight = held.cells + b.late.len() as u64;
    if offered != l.offered {
        errors.push(format!("offered bytes: per-flow sum {offered} != counter {}", l.offered));
    }
    errors.extend(l.check(in_flight, cells_in_flight));
    if flow_deliv_sum != l.delivered {
        errors.push(format!("delivered bytes: per-flow sum {flow_deliv_sum} != counter {}", l.delivered));
    }
    if held.bytes != b.queued {
        errors.push(format!("queued bytes: queues hold {} but the counter says {}", held.bytes, b.queued));
    }
    if fab.collisions > 0 {
        errors.push(format!("{} collisions on AWGR outputs", fab.collisions));
    }
    if fab.unreachable > 0 {
        errors.push(format!("{} transmissions on a wavelength that does not reach the destination", fab.unreachable));
    }
    if b.guard_violations > 0 {
        errors.push(format!("{} transmissions outside their slot's circuit-up window", b.guard_violations));
    }
    let n = b.n as usize;
    let mut ts_time = Vec::with_capacity(b.n_bins * n);
    let mut ts_node = Vec::with_capacity(b.n_bins * n);
    for k in 0..b.n_bins {
        let t = ((k as u64 + 1) * b.sample_ps).min(b.end_ps);
        if t > now {
            break;
        }
        for i in 0..n {
            ts_time.push(t);
            ts_node.push(i as u32);
        }
    }
    let rows = ts_time.len();
    SlottedOutput {
        totals: crate::metrics::RunTotals {
            now_ps: now,
            events: b.events,
            packet_hops: b.packet_hops,
            flows_started: started,
            flows_completed: completed,
            bytes_offered: l.offered,
            bytes_delivered: l.delivered,
            bytes_dropped: l.lost_total(),
            bytes_in_flight: in_flight,
            drops: b.reasons.iter().zip(&l.lost).map(|(r, v)| (r.to_string(), *v)).collect(),
            collisions: fab.collisions,
            guardband_violations: b.guard_violations,
            trace_hash: b.hash.value(),
            flow_finish_ps: finish,
            flow_delivered: fl.st.iter().map(|s| s.delivered).collect(),
            flow_hops: fl.st.iter().map(|s| s.hops).collect(),
            invariant_errors: errors,
        },
        packets: packet_totals(l, &b.reasons, cells_in_flight),
        ts_time_ps: ts_time,
        ts_node,
        ts_queued_bytes: b.ts_queued[..rows].to_vec(),
        ts_tx_bytes: b.ts_tx[..rows].to_vec(),
        ts_rx_bytes: b.ts_rx[..rows].to_vec(),
        metrics: Vec::new(),
        series: Vec::new(),
    }
}

/// Bytes that fit in a transmission window of `win_ps` at `rate`.
pub fn bytes_in(win_ps: Ps, rate: Rate) -> u64 {
    // largest b with rate.tx(b) <= win
    let mut b = (win_ps as u128 * rate.bps as u128 / (8 * crate::units::PS_PER_S as u128)) as u64;
    while b > 0 && rate.tx(b) > win_ps {
        b -= 1;
    }
    while rate.tx(b + 1) <= win_ps {
        b += 1;
    }
    b
}

/// Random ring start (pointer) positions.
pub fn random_pointers(seed: u64, name: &str, count: usize, modulo: u32) -> Vec<u32> {
    let mut s = crate::rng::Stream::new(seed, name);
    (0..count).map(|_| s.below(modulo.max(1))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pias_split_and_voq_levels() {
        let p = Pias { on: true, t1: 1000, t2: 10_000 };
        assert_eq!(p.split(500), [500, 0, 0]);
        assert_eq!(p.split(5000), [1000, 4000, 0]);
        assert_eq!(p.split(50_000), [1000, 9000, 40_000]);
        let mut v = Voq::default();
        v.push(1, p.split(50_000));
        v.push(2, p.split(300));
        assert_eq!(v.pop(1115), Some((1, 1000)));
        assert_eq!(v.pop(1115), Some((2, 300)));
        assert_eq!(v.pop(1115), Some((1, 1115)));
        assert_eq!(v.bytes, 50_000 - 1000 - 1115);
    }

    #[test]
    fn thin_clos_geometry_matches_its_definition_by_division() {
        // the tables and single subtractions give the same answers as the
        // docs/arch/negotiator.md#fabrics formulas, including N < S (W = 1) and round-robin steps beyond W
        for (n, s) in [(32, 4), (128, 8), (6, 8), (64, 64), (12, 3)] {
            let f = Fabric::new(n, s, Topology::ThinClos).unwrap();
            let (w, g) = (f.w, f.g);
            for i in 0..n {
                for d in 0..n {
                    assert_eq!(f.thin_rr_step(i, d), (d % w + w - i % w) % w);
                    assert_eq!(f.pair_port(i, d), (d / w + g - i / w) % g);
                    for p in 0..s {
                        assert_eq!(f.reaches(i, p, d), p < g && (i / w + p) % g == d / w);
                    }
                }
                for c in [0, 1, w - 1, w, 3 * w + 1] {
                    for p in 0..s {
                        let want = if p >= g { NONE } else { ((i / w + p) % g) * w + (i % w + c) % w };
                        let want = if want == i { NONE } else { want };
                        assert_eq!(f.thin_rr(c, i, p), want, "n {n} s {s} c {c} i {i} p {p}");
                    }
                }
            }
        }
    }

    #[test]
    fn thin_clos_round_robin_is_a_permutation_per_step() {
        let f = Fabric::new(32, 4, Topology::ThinClos).unwrap();
        for c in 0..f.w {
            let mut seen = std::collections::BTreeSet::new();
            for i in 0..32 {
                for p in 0..4 {
                    let d = f.thin_rr(c, i, p);
                    if d != NONE {
                        assert!(f.reaches(i, p, d));
                        assert_eq!(f.pair_port(i, d), p);
                        assert_eq!(f.thin_rr_step(i, d), c);
                        assert!(seen.insert((d, p)));
                    }
                }
            }
        }
        // every pair meets exactly once per W steps
        let mut cnt = vec![0u32; 32 * 32];
        for c in 0..f.w {
            for i in 0..32 {
                for p in 0..4 {
                    let d = f.thin_rr(c, i, p);
                    if d != NONE {
                        cnt[(i * 32 + d) as usize] += 1;
                    }
                }
            }
        }
        for i in 0..32 {
            for d in 0..32 {
                assert_eq!(cnt[i * 32 + d], if i == d { 0 } else { 1 });
            }
        }
    }

    #[test]
    fn collisions_are_detected() {
        let mut f = Fabric::new(8, 2, Topology::Parallel).unwrap();
        f.transmit(0, 1, 0, 3);
        f.transmit(0, 2, 1, 3);
        assert_eq!(f.collisions, 0);
        f.transmit(0, 4, 0, 3);
        assert_eq!(f.collisions, 1);
        f.transmit(1, 4, 0, 3);
        assert_eq!(f.collisions, 1);
    }

    #[test]
    fn window_bytes() {
        let r = Rate::new(100_000_000_000);
        assert_eq!(bytes_in(50_000, r), 625);
        assert_eq!(bytes_in(90_000, r), 1125);
        assert_eq!(bytes_in(2_400, r), 30);
    }
}
