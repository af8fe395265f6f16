//! The plain-data input of a NegotiaToR run with its variants, and the epoch layout
//! derived from it: predefined and scheduled slots, their offsets and payloads.

use crate::error::SpecError;
use crate::slotted::common::{bytes_in, Topology};
use crate::units::{Ps, Rate};

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
    pub(super) fn iters(&self) -> u32 {
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
