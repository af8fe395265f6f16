//! Sirius-like traffic-oblivious baseline (NegotiaToR's TO baseline, ALGORITHMS §0.1 and
//! §1.12): a thin-clos of passive AWGRs with tunable lasers, a static cyclic round robin
//! (every ToR pair connected once every W = N/S slots on its one port), fixed-size
//! timeslots that start with a guardband, VLB relay through intermediate ToRs with
//! congestion control of the intermediate queues, PIAS priorities at sources only.
//!
//! Decisions (the seed papers do not give Sirius' parameters, ALGORITHMS §7.9):
//! * Timeslot 100 ns = 10 ns guardband + 90 ns = one 1125-B cell (10-B header + 1115-B
//!   payload) at 100 Gb/s, the same data packet as NegotiaToR's scheduled slot.
//! * At a source connected to ToR m in a slot, one cell leaves each port, chosen in this
//!   order: (1) relayed cells waiting at this ToR for m (second hop, FIFO); (2) own data,
//!   highest PIAS level first: at a level, data for m itself goes direct (one hop),
//!   otherwise a cell of another destination d is sent to m as intermediate (first hop),
//!   destinations taken round robin, at most 32 candidates inspected per port-slot.
//! * Congestion control: credit-based: intermediate m accepts at most `relay_cap` cells
//!   per final destination (cells queued at m plus cells on their way to m); a source
//!   never sends a relay cell without a credit, so intermediate queues never overflow
//!   and nothing is dropped. Credits are known to the sources without delay (an
//!   idealization of Sirius' request/credit exchange).
//! * Intermediates keep one FIFO per final destination and no priorities (PIAS at
//!   sources only, as in NEG §4.1).

use super::common::*;
use crate::error::SpecError;
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
    pub seed: u64,
    pub duration_ps: Ps,
    pub sample_ps: Ps,
    pub flow_start_ps: Vec<u64>,
    pub flow_src: Vec<u32>,
    pub flow_dst: Vec<u32>,
    pub flow_size: Vec<u64>,
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
        Ok(Sirius {
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
            let parts = self.pias.split(size);
            self.voq[(i * self.n + d) as usize].push(f, parts);
            for (l, &b) in parts.iter().enumerate() {
                if b > 0 {
                    self.list_add(i, d, l);
                }
            }
            self.src_bytes[i as usize] += size;
            self.b.offered += size;
            self.b.queued += size;
            self.b.flows_started += 1;
            self.b.events += 1;
            self.activate(i);
        }
    }

    /// Pop one packet of level l from VOQ(i, d) and keep the level lists in sync.
    fn take(&mut self, i: u32, d: u32, l: usize) -> (u32, u64) {
        let v = &mut self.voq[(i * self.n + d) as usize];
        let (f, b) = v.pop_level(l, self.payload);
        let empty = v.q[l].is_empty();
        if empty {
            self.list_remove(i, d, l);
        }
        self.src_bytes[i as usize] -= b;
        (f, b)
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
        let levels = if self.spec.pq { 3 } else { 1 };
        let prop = self.spec.prop_ps;
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
                let m = self.fab.thin_rr(c, i, p);
                if m == NONE {
                    continue;
                }
                // (1) relayed cells for m (second hop)
                let ri = (i * self.n + m) as usize;
                if let Some(cell) = self.relay[ri].front().copied() {
                    if cell.ready <= tx0 {
                        self.relay[ri].pop_front();
                        self.rcount[ri] -= 1;
                        self.relay_bytes[i as usize] -= cell.bytes;
                        let dur = self.rate.tx(self.spec.header_bytes + cell.bytes);
                        self.b.check_window(tx0, dur, tx0, ts + self.spec.slot_ps);
                        self.fab.transmit(k, i, p, m);
                        self.b.sent(&mut self.fl, cell.flow, i, tx0, tx0 + dur + prop, cell.bytes, 2, true);
                        self.m_second += cell.bytes;
                        continue;
                    }
                }
                if self.src_bytes[i as usize] == 0 {
                    continue;
                }
                // (2) own data, highest level first: direct, else relay via m
                let mut blocked = false;
                'lv: for l in 0..levels {
                    let dv = (i * self.n + m) as usize;
                    if !self.voq[dv].q[l].is_empty() {
                        let (f, bytes) = self.take(i, m, l);
                        let dur = self.rate.tx(self.spec.header_bytes + bytes);
                        self.b.check_window(tx0, dur, tx0, ts + self.spec.slot_ps);
                        self.fab.transmit(k, i, p, m);
                        self.b.sent(&mut self.fl, f, i, tx0, tx0 + dur + prop, bytes, 1, true);
                        self.m_direct += bytes;
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
                        if d == m {
                            continue;
                        }
                        let mi = (m * self.n + d) as usize;
                        if self.rcount[mi] >= self.spec.relay_cap {
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
                        self.relay[mi].push_back(Cell { flow: f, bytes, ready: arr });
                        self.rcount[mi] += 1;
                        self.m_max_relay = self.m_max_relay.max(self.rcount[mi]);
                        self.relay_bytes[m as usize] += bytes;
                        self.m_first += bytes;
                        self.activate(m);
                        blocked = false;
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
        let vq: u64 = self.voq.iter().map(|v| v.bytes).sum();
        let rq: u64 = self.relay.iter().flat_map(|q| q.iter()).map(|c| c.bytes).sum();
        let mut o = finish_output(&self.b, &self.fl, &self.fab, self.now(), vq + rq, Vec::new());
        let rc: u64 = self.relay.iter().map(|q| q.len() as u64).sum();
        let rcs: u64 = self.rcount.iter().map(|&x| x as u64).sum();
        if rc != rcs {
            o.invariant_errors.push(format!("relay credits {rcs} != relay cells {rc}"));
        }
        if self.rcount.iter().any(|&x| x > self.spec.relay_cap) {
            o.invariant_errors.push("an intermediate queue exceeded its credit cap".into());
        }
        let (awgrs, ports) = self.fab.awgrs();
        o.metrics = vec![
            ("direct_bytes".into(), self.m_direct as f64),
            ("relay_first_hop_bytes".into(), self.m_first as f64),
            ("relay_second_hop_bytes".into(), self.m_second as f64),
            ("relay_blocked_port_slots".into(), self.m_idle_relay_blocked as f64),
            ("max_relay_queue_cells".into(), self.m_max_relay as f64),
            ("relay_queued_bytes_end".into(), rq as f64),
            ("cell_payload_bytes".into(), self.payload as f64),
            ("slot_ps".into(), self.spec.slot_ps as f64),
            ("cycle_slots".into(), self.fab.w as f64),
            ("duty_cycle".into(), 1.0 - self.spec.guardband_ps as f64 / self.spec.slot_ps as f64),
            ("awgrs".into(), awgrs as f64),
            ("awgr_ports".into(), ports as f64),
        ];
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(n: u32, s: u32) -> SirSpec {
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
            seed: 1,
            duration_ps: 200_000_000,
            sample_ps: 0,
            flow_start_ps: vec![],
            flow_src: vec![],
            flow_dst: vec![],
            flow_size: vec![],
        }
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
}
