//! End-to-end congestion-control baselines (docs/arch/shale.md#end-to-end-baselines):
//! `isd` (idealized sender-driven fair share), `rd` (receiver-driven PULLs) and `ndp`
//! (PULLs + trimming). The network itself runs as with `none`: forwarded cells first,
//! random spraying, no tokens.
//!
//! * ISD: every destination d knows, instantly, the number n_d of flows to it that still
//!   have data to cut into cells; each such flow may send at cap / n_d cells per timeslot,
//!   cap = 1.25/(2h) of the line rate (one cell per timeslot). The allowance of a flow is
//!   the integral of cap / n_d since its arrival (fixed point, 2^32 per cell) plus one
//!   cell; exact, no per-slot work (advanced lazily per destination).
//! * RD: a flow may send its initial window W of cells, then one more cell per credit;
//!   its receiver sends a PULL worth `pull_every` credits for every `pull_every` cells it
//!   receives of that flow. PULLs (and NDP's trimmed headers and NACKs) travel in the
//!   reserved control space of the cell headers: they follow Shale's routing (first
//!   available neighbour, random sprays, direct semi-path) through the schedule with no
//!   queueing, each hop taking the hop delay D.
//! * NDP: RD, and a forwarded cell that would join a per-neighbour queue already holding
//!   `ndp_queue` cells is trimmed: its payload is cut, its header goes on to the
//!   destination, which returns a NACK; the NACK gives the sender its bytes back (resent
//!   as a new cell) and one credit. A trimmed cell's bytes stay in flight until then.

use super::{Cc, ShaleSim};
use crate::units::NONE;
use std::cmp::Reverse;

/// Fixed-point scale of ISD allowances (one cell).
pub(super) const ONE: u64 = 1 << 32;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ctrl {
    /// `pull_every` credits for a flow, arriving at its source.
    Pull(u32),
    /// A trimmed cell's NACK, arriving at its flow's source.
    Nack(u32),
}

/// End-to-end transport state (empty unless cc is isd, rd or ndp).
#[derive(Default)]
pub(super) struct Transport {
    // ISD, per destination: allowance per flow (fixed point), last update, active flows
    pub isd_a: Vec<u64>,
    pub isd_last: Vec<u64>,
    pub isd_n: Vec<u32>,
    pub isd_cap: u64,
    // per flow: ISD allowance at arrival / RD credits; cells cut; cells granted
    pub f_base: Vec<u64>,
    pub f_cells: Vec<u64>,
    pub f_granted: Vec<u64>,
    pub f_credit: Vec<u64>,
    pub f_rcv: Vec<u32>,
    /// NDP, per flow: NACKed cells whose payload is still to be sent again (the next
    /// cells cut from the flow count as retransmissions, one per NACK).
    pub f_resend: Vec<u32>,
    pub window: u32,
    pub pull_every: u32,
    pub ndp_queue: u32,
    /// Control messages in flight: (arrival timeslot, sequence, message).
    pub ctrl: std::collections::BinaryHeap<Reverse<(u64, u64, Ctrl)>>,
    pub seq: u64,
    // counters
    pub pulls: u64,
    pub trims: u64,
    pub resent_bytes: u64,
    pub ctrl_hops: u64,
}

impl ShaleSim {
    pub(super) fn e2e(&self) -> bool {
        matches!(self.cc, Cc::Isd | Cc::Rd | Cc::Ndp)
    }

    fn isd_advance(&mut self, d: u32, t: u64) {
        let tr = &mut self.tp;
        let di = d as usize;
        if tr.isd_n[di] > 0 && t > tr.isd_last[di] {
            tr.isd_a[di] += (t - tr.isd_last[di]) * tr.isd_cap / tr.isd_n[di] as u64;
        }
        tr.isd_last[di] = t;
    }

    /// Flow f arrived at its (live) source at timeslot t.
    pub(super) fn tp_flow_start(&mut self, f: usize, t: u64) {
        match self.cc {
            Cc::Isd => {
                let d = self.f_dst[f];
                self.isd_advance(d, t);
                self.tp.isd_n[d as usize] += 1;
                self.tp.f_base[f] = self.tp.isd_a[d as usize];
            }
            Cc::Rd | Cc::Ndp => {
                self.tp.f_credit[f] = self.tp.window as u64;
                self.tp.f_granted[f] = self.tp.window as u64;
            }
            _ => {}
        }
    }

    /// May flow f cut a new cell at timeslot t?
    pub(super) fn tp_may_send(&mut self, f: usize, t: u64) -> bool {
        match self.cc {
            Cc::Isd => {
                let d = self.f_dst[f];
                self.isd_advance(d, t);
                self.tp.isd_a[d as usize] - self.tp.f_base[f] + ONE > self.tp.f_cells[f] * ONE
            }
            Cc::Rd | Cc::Ndp => self.tp.f_credit[f] > 0,
            _ => true,
        }
    }

    /// Flow f cut a new cell at t (`done`: it has no unsent data left). Whether the cell
    /// resends the payload of a NACKed cell.
    pub(super) fn tp_sent(&mut self, f: usize, t: u64, done: bool) -> bool {
        self.tp.f_cells[f] += 1;
        match self.cc {
            Cc::Isd if done => self.tp_flow_gone(f, t),
            Cc::Rd | Cc::Ndp => self.tp.f_credit[f] -= 1,
            _ => {}
        }
        match self.tp.f_resend.get_mut(f) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// Flow f no longer has data to send (all cut, or its source failed).
    pub(super) fn tp_flow_gone(&mut self, f: usize, t: u64) {
        if self.cc == Cc::Isd {
            let d = self.f_dst[f];
            self.isd_advance(d, t);
            self.tp.isd_n[d as usize] -= 1;
        }
    }

    /// A cell of flow f reached its destination at t: count it for PULLs.
    pub(super) fn tp_delivered(&mut self, f: usize, t: u64) {
        if !matches!(self.cc, Cc::Rd | Cc::Ndp) {
            return;
        }
        self.tp.f_rcv[f] += 1;
        if self.tp.f_rcv[f] >= self.tp.pull_every {
            self.tp.f_rcv[f] = 0;
            if self.f_deliv[f] < self.f_size[f] {
                let (d, s, sg) = (self.f_dst[f], self.f_src[f], self.f_sigma[f] as usize);
                let h = self.plan.subs[sg].h as u8;
                let at = self.ctrl_route(d, s, sg, h, None, t);
                self.tp.pulls += 1;
                self.push_ctrl(at, Ctrl::Pull(f as u32));
            }
        }
    }

    fn push_ctrl(&mut self, at: u64, m: Ctrl) {
        self.tp.seq += 1;
        let s = self.tp.seq;
        self.tp.ctrl.push(Reverse((at, s, m)));
    }

    /// NDP: should a forwarded cell joining queue (y, k) be trimmed?
    #[inline]
    pub(super) fn tp_trim(&self, y: u32, k: u32) -> bool {
        self.cc == Cc::Ndp && self.qcells[self.qx(y, k)] >= self.tp.ndp_queue
    }

    /// NDP: trim cell c at node y (its last hop in phase p_prev): its header goes on to
    /// the destination, the NACK back to the source.
    pub(super) fn tp_do_trim(&mut self, y: u32, c: u32, sg: usize, p_prev: u32, t: u64) {
        self.tp.trims += 1;
        self.ledger.trims += 1;
        let cl = self.cells[c as usize];
        let at_dst = self.ctrl_route(y, cl.dst, sg, cl.r, Some(p_prev), t);
        let f = cl.flow as usize;
        let h = self.plan.subs[sg].h as u8;
        let at_src = self.ctrl_route(cl.dst, self.f_src[f], sg, h, None, at_dst);
        self.push_ctrl(at_src, Ctrl::Nack(c));
    }

    /// Deliver the control messages due at timeslot t.
    pub(super) fn tp_ctrl_due(&mut self, t: u64) {
        while let Some(Reverse((at, _, m))) = self.tp.ctrl.peek().copied() {
            if at > t {
                break;
            }
            self.tp.ctrl.pop();
            match m {
                Ctrl::Pull(f) => {
                    let f = f as usize;
                    if !self.is_dead(self.f_src[f], t) {
                        let g = self.tp.pull_every as u64;
                        self.tp.f_credit[f] += g;
                        self.tp.f_granted[f] += g;
                    }
                }
                Ctrl::Nack(c) => {
                    let f = self.cells[c as usize].flow as usize;
                    let b = self.cells[c as usize].bytes as u64;
                    self.free_cell(c);
                    if self.is_dead(self.f_src[f], t) {
                        // the trimmed cell's end is a failed source: its payload is lost
                        self.ledger.drop(0, b, true);
                        continue;
                    }
                    // the trimmed cell ends at its source, which sends its payload again
                    self.ledger.trimmed_end();
                    self.tp.f_resend[f] += 1;
                    self.tp.resent_bytes += b;
                    self.tp.f_credit[f] += 1;
                    self.tp.f_granted[f] += 1;
                    let was = self.f_unsent[f];
                    self.f_unsent[f] += b;
                    self.unsent_total += b;
                    if was == 0 {
                        self.activate_local(f);
                    }
                }
            }
        }
    }

    /// The first timeslot ≥ t that runs global neighbour index k.
    fn next_slot(&self, k: u32, t: u64) -> u64 {
        if self.plan.subs.len() == 1 {
            let e = self.plan.subs[0].epoch() as u64;
            return t + (k as u64 + e - t % e) % e;
        }
        let mut u = t;
        while self.plan.slot(u).3 != k {
            u += 1;
        }
        u
    }

    /// Arrival timeslot at `dst` of a control message leaving x at t with r sprays left
    /// (last hop in phase `p_prev`; None = not yet sent: first available neighbour), on
    /// sub-schedule sg, through the reserved header space (no queueing).
    pub(super) fn ctrl_route(&mut self, x: u32, dst: u32, sg: usize, r: u8, p_prev: Option<u32>, t: u64) -> u64 {
        let (h, m) = (self.plan.subs[sg].h, self.plan.subs[sg].m);
        let koff = self.plan.koff[sg];
        let (mut x, mut r, mut t) = (x, r, t);
        let mut p_prev = match p_prev {
            Some(p) => p,
            None => {
                let mut u = t;
                while self.plan.slot(u).0 != sg {
                    u += 1;
                }
                let (_, p, j, _) = self.plan.slot(u);
                x = self.plan.subs[sg].tx_peer(x, p, j);
                r = r.saturating_sub(1);
                t = u + self.d;
                self.tp.ctrl_hops += 1;
                p
            }
        };
        while x != dst {
            let ebs = &self.plan.subs[sg];
            let (q, j) = if r > 0 {
                r -= 1;
                let q = (p_prev + 1) % h;
                (q, 1 + self.ctrl_rng.below(m - 1))
            } else {
                let mut q = p_prev;
                loop {
                    q = (q + 1) % h;
                    if ebs.coord(x, q) != ebs.coord(dst, q) {
                        break;
                    }
                }
                (q, (ebs.coord(dst, q) + m - ebs.coord(x, q)) % m)
            };
            let k = koff + q * (m - 1) + j - 1;
            let u = self.next_slot(k, t);
            x = self.plan.subs[sg].tx_peer(x, q, j);
            t = u + self.d;
            p_prev = q;
            self.tp.ctrl_hops += 1;
        }
        t
    }

    /// Invariant: no flow cut more cells than it was granted (RD/NDP).
    pub(super) fn tp_check(&self, errors: &mut Vec<String>) {
        if !matches!(self.cc, Cc::Rd | Cc::Ndp) {
            return;
        }
        let bad = (0..self.f_size.len()).filter(|&f| self.tp.f_cells[f] > self.tp.f_granted[f]).count();
        if bad > 0 {
            errors.push(format!("receiver-driven: {bad} flows sent more cells than granted"));
        }
        let _ = NONE;
    }
}
