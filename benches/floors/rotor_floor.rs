//! The floor under the RotorNet benchmark with the mechanisms that scenario needs: what a
//! lean engine written for this one case would cost per packet-hop on this machine.
//!
//! [`packet_floor`](packet_floor.rs) moves bare packets (8 bytes each, sources paced, no
//! flows, no buffers). This kernel runs the `rotornet-108x6-vlb-websearch-40%` scenario's
//! own flows (read from a file) with the packet engine's model, each part in its leanest
//! form and nothing else:
//!
//! - a round-robin rotor schedule (`UPLINKS` matchings per slice, 2 µs slices, 200 ns
//!   guardband, 100 Gb/s, 500 ns propagation; idle ports in the cycle's last slice);
//! - per source and destination a FIFO of flows; the source serves its destinations with
//!   data in round robin at its host rate (`UPLINKS` × 100 Gb/s), one 1500-byte packet
//!   per injection event; a try is sprayed (VLB) on a random uplink of the current slice
//!   that does not lead to the destination, and refused when that port's buffer (1 MB)
//!   is full or the current slice has no room left on it: the destination then sleeps
//!   until the port's next departure or the next slice;
//! - an intermediate sends the packet in the first slice whose circuit leads to its
//!   destination with room (drop when the buffer is full);
//! - per port and slice index a calendar queue (its tail); per port its planned departures
//!   in the order they were planned, released lazily (a compaction at twice the length
//!   left by the last one) so that the buffer's byte count is exact when a test needs it;
//! - per packet-hop: the guardband check, the collision check at the receiving port, a
//!   trace hash of every event; per delivery: flow bytes, completion time, the one-way
//!   latency histogram and bytes by hop count; the byte and packet balances at the end.
//!
//! `cargo run --release -p opendcn-floors --bin rotor_floor -- FLOWS_FILE SIM_US [UPLINKS]`
//! where FLOWS_FILE holds little-endian records (start ps u64, source u32, destination u32,
//! size u64) for 108 nodes: `benches/floors/rotor_floor_flows.py` writes the scenario's own.
//! Prints packet-hops, ns per packet-hop and the balances. It is a measuring kernel, not a
//! second engine: its VLB draws and tie orders are its own, so its counts come near the
//! engine's (the 1-ms run: 1 272 223 packets sent against the engine's 1 268 349) without
//! being the same trace.
use opendcn_core::event::EventList;
use opendcn_core::rng::mix64;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

const NONE: u32 = u32::MAX;
const SLICE: u64 = 2_000_000;
const GUARD: u64 = 200_000;
const PROP: u64 = 500_000;
const MTU: u64 = 1500;
const CAP: u64 = 1_000_000;
const LOOKAHEAD: usize = 8;

#[derive(Clone, Copy)]
enum Ev {
    Inject(u32),
    Arrive(u32),
    NextFlows,
}

#[derive(Clone, Copy, Default)]
struct Pkt {
    ts: u64,
    flow: u32,
    dst: u32,
    at: u32,
    payload: u32,
    /// slice index it was sent in (its arrival slice at the next node)
    tag: u32,
    /// receiving port and the absolute slice it was sent in (collision check)
    rx: u32,
    sent_abs: u32,
    from: u32,
    hops: u32,
}

#[derive(Clone, Default)]
struct CalQ {
    tail: (u64, u64),
}

/// A port's planned transmissions in the order they were planned (not departure order):
/// its byte count includes departed ones until a compaction releases them.
#[derive(Clone)]
struct Port {
    bytes: u64,
    next_dep: u64,
    planned: Vec<(u64, u32)>,
    compact_at: usize,
}

struct Flow {
    start: u64,
    src: u32,
    dst: u32,
    size: u64,
    injected: u64,
    delivered: u64,
    finish: u64,
}

#[derive(Default, Clone)]
struct Voq {
    head: u32,
    injected: u64,
    size: u64,
    rest: VecDeque<u32>,
}

#[derive(Default)]
struct Ep {
    busy_until: u64,
    sched_at: u64,
    scheduled: bool,
    rr: VecDeque<u32>,
    sleeping: BinaryHeap<Reverse<(u64, u32)>>,
}

struct Floor {
    n: u32,
    u: u32,
    slices: u64,
    ser_port: u64,
    ev: EventList<Ev>,
    pool: Vec<Pkt>,
    free: Vec<u32>,
    ports: Vec<Port>,
    cal: Vec<CalQ>,
    rx_last: Vec<(u32, u32)>,
    eps: Vec<Ep>,
    /// per (source, destination): its flows
    voqs: Vec<Voq>,
    flows: Vec<Flow>,
    next_flow: usize,
    draws: u64,
    now: u64,
    hash: u64,
    hops: u64,
    // ledger and metrics
    offered: u64,
    delivered: u64,
    dropped: u64,
    pk_sent: u64,
    pk_delivered: u64,
    pk_dropped: u64,
    completed: u64,
    gb_violations: u64,
    collisions: u64,
    lat_hist: [u64; 64],
    by_hops: [u64; 8],
}

impl Floor {
    fn peer(&self, node: u32, k: u32, idx: u64) -> u32 {
        let m = idx * self.u as u64 + k as u64;
        if m >= self.n as u64 - 1 {
            return NONE; // idle in the cycle's last slice
        }
        (node + 1 + m as u32) % self.n
    }

    fn start_flows(&mut self) {
        while let Some(f) = self.flows.get(self.next_flow) {
            if f.start > self.now {
                let t = f.start;
                self.ev.push(t, Ev::NextFlows);
                return;
            }
            let (fi, src, dst, size) = (self.next_flow as u32, f.src, f.dst, f.size);
            self.next_flow += 1;
            self.offered += size;
            let q = &mut self.voqs[(src * self.n + dst) as usize];
            if q.head == NONE {
                (q.head, q.size, q.injected) = (fi, size, 0);
                self.eps[src as usize].rr.push_back(dst);
                self.kick(src, self.now);
            } else {
                q.rest.push_back(fi);
            }
        }
    }

    fn kick(&mut self, e: u32, t: u64) {
        let ep = &mut self.eps[e as usize];
        let t = t.max(ep.busy_until);
        if !ep.scheduled || ep.sched_at > t {
            ep.scheduled = true;
            ep.sched_at = t;
            self.ev.push(t, Ev::Inject(e));
        }
    }

    fn release(&mut self, port: u32) {
        let now = self.now;
        let mut next = u64::MAX;
        let mut freed = 0;
        let p = &mut self.ports[port as usize];
        p.planned.retain(|&(t, w)| {
            if t > now {
                next = next.min(t);
                true
            } else {
                freed += w as u64;
                false
            }
        });
        p.bytes -= freed;
        p.next_dep = next;
        p.compact_at = (2 * p.planned.len()).max(64);
    }

    /// first occurrence of slice index `idx` at or after the current slice with room for
    /// one packet on `port`: (start of serialization, absolute slice)
    fn find_slot(&self, port: u32, idx: u64, ser: u64) -> Option<(u64, u64)> {
        let cur = self.now / SLICE;
        let first = cur + (idx + self.slices - cur % self.slices) % self.slices;
        let q = &self.cal[(port as u64 * self.slices + idx) as usize];
        let mut abs = first.max(q.tail.0);
        for _ in 0..3 {
            let start = abs * SLICE;
            let t0 = self.now.max(start + GUARD).max(if q.tail.0 == abs { q.tail.1 } else { 0 });
            if t0 + ser <= start + SLICE {
                return Some((t0, abs));
            }
            abs += self.slices;
        }
        None
    }

    /// plan packet `pid` (its bytes counted) on `port` in slice `abs` of index `idx`
    fn send(&mut self, pid: u32, port: u32, idx: u64, (t0, abs): (u64, u64), wire: u64) {
        let ser = wire * 80; // ps at 100 Gb/s
        let start = abs * SLICE;
        if t0 < start + GUARD || t0 + ser > start + SLICE {
            self.gb_violations += 1;
        }
        let qi = (port as u64 * self.slices + idx) as usize;
        self.cal[qi].tail = (abs, t0 + ser);
        let pt = &mut self.ports[port as usize];
        pt.planned.push((t0, wire as u32));
        let lazy = pt.planned.len() >= pt.compact_at;
        pt.next_dep = pt.next_dep.min(t0);
        let node = port / self.u;
        let at = self.peer(node, port % self.u, idx);
        let p = &mut self.pool[pid as usize];
        p.at = at;
        p.tag = idx as u32;
        p.rx = at * self.u + port % self.u;
        p.sent_abs = abs as u32;
        p.from = port;
        p.hops += 1;
        self.hops += 1;
        self.ev.push(t0 + ser + PROP, Ev::Arrive(pid));
        if lazy {
            self.release(port);
        }
    }

    fn inject(&mut self, e: u32) {
        let now = self.now;
        let ep = &mut self.eps[e as usize];
        while let Some(&Reverse((t, d))) = ep.sleeping.peek() {
            if t > now {
                break;
            }
            ep.sleeping.pop();
            ep.rr.push_back(d);
        }
        let cur = now / SLICE;
        let idx = cur % self.slices;
        while let Some(&dst) = self.eps[e as usize].rr.front() {
            // VLB: a random uplink of the current slice not leading to the destination
            let mut cands = [0u32; 16];
            let mut nc = 0;
            for k in 0..self.u {
                let p = self.peer(e, k, idx);
                if p != NONE && p != dst {
                    cands[nc] = k;
                    nc += 1;
                }
            }
            let wake = if nc == 0 {
                Some((cur + 1) * SLICE)
            } else {
                let k = if nc == 1 {
                    cands[0]
                } else {
                    self.draws += 1;
                    cands[(mix64(self.draws ^ (e as u64) << 40) % nc as u64) as usize]
                };
                let port = e * self.u + k;
                let q = &self.voqs[(e * self.n + dst) as usize];
                let wire = (q.size - q.injected).min(MTU);
                if self.ports[port as usize].bytes + wire > CAP {
                    self.release(port);
                }
                let pt = &self.ports[port as usize];
                if pt.bytes + wire > CAP {
                    Some(if pt.next_dep == u64::MAX { now + self.ser_port } else { pt.next_dep })
                } else {
                    match self.find_slot(port, idx, wire * 80) {
                        Some(plan) if plan.1 == cur => {
                            // admitted
                            let q = &mut self.voqs[(e * self.n + dst) as usize];
                            let payload = wire;
                            q.injected += payload;
                            let f = q.head;
                            self.flows[f as usize].injected = q.injected;
                            let ep = &mut self.eps[e as usize];
                            ep.rr.pop_front();
                            if q.injected == q.size {
                                match q.rest.pop_front() {
                                    Some(g) => {
                                        (q.head, q.size, q.injected) = (g, self.flows[g as usize].size, 0);
                                        ep.rr.push_back(dst);
                                    }
                                    None => q.head = NONE,
                                }
                            } else {
                                ep.rr.push_back(dst);
                            }
                            ep.busy_until = now + wire * 80 / self.u as u64;
                            let pk = Pkt { ts: now, flow: f, dst, at: e, payload: payload as u32, ..Pkt::default() };
                            let pid = match self.free.pop() {
                                Some(i) => {
                                    self.pool[i as usize] = pk;
                                    i
                                }
                                None => {
                                    self.pool.push(pk);
                                    (self.pool.len() - 1) as u32
                                }
                            };
                            self.pk_sent += 1;
                            self.ports[port as usize].bytes += wire;
                            self.send(pid, port, idx, plan, wire);
                            None
                        }
                        _ => Some((cur + 1) * SLICE),
                    }
                }
            };
            match wake {
                None => {
                    // one packet per injection event
                    let t = self.eps[e as usize].busy_until;
                    self.kick_after(e, t);
                    return;
                }
                Some(t) => {
                    let ep = &mut self.eps[e as usize];
                    ep.rr.pop_front();
                    ep.sleeping.push(Reverse((t, dst)));
                }
            }
        }
        if let Some(&Reverse((t, _))) = self.eps[e as usize].sleeping.peek() {
            self.kick_after(e, t);
        }
    }

    fn kick_after(&mut self, e: u32, t: u64) {
        let ep = &mut self.eps[e as usize];
        if ep.rr.is_empty() && ep.sleeping.is_empty() {
            return;
        }
        let t = if ep.rr.is_empty() { t.max(ep.sleeping.peek().map_or(t, |r| r.0 .0)) } else { t };
        self.kick(e, t);
    }

    fn arrive(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        let r = &mut self.rx_last[p.rx as usize];
        if r.0 == p.sent_abs && r.1 != p.from && r.1 != NONE {
            self.collisions += 1;
        }
        *r = (p.sent_abs, p.from);
        if p.at == p.dst {
            let f = &mut self.flows[p.flow as usize];
            f.delivered += p.payload as u64;
            if f.delivered == f.size {
                f.finish = self.now;
                self.completed += 1;
            }
            self.delivered += p.payload as u64;
            self.pk_delivered += 1;
            let lat = self.now - p.ts;
            self.lat_hist[(64 - lat.leading_zeros()) as usize % 64] += 1;
            self.by_hops[(p.hops as usize).min(7)] += p.payload as u64;
            self.free.push(pid);
            return;
        }
        // direct: the slice whose circuit leads to the destination
        let d = (p.dst + self.n - p.at - 1) % self.n;
        let (idx, k) = ((d / self.u) as u64, d % self.u);
        let port = p.at * self.u + k;
        let wire = p.payload as u64;
        if self.ports[port as usize].bytes + wire > CAP {
            self.release(port);
            if self.ports[port as usize].bytes + wire > CAP {
                self.dropped += p.payload as u64;
                self.pk_dropped += 1;
                self.free.push(pid);
                return;
            }
        }
        let plan = self.find_slot(port, idx, wire * 80).expect("an empty slice holds a packet");
        self.ports[port as usize].bytes += wire;
        self.send(pid, port, idx, plan, wire);
    }
}

fn main() {
    const USAGE: &str = "usage: rotor_floor FLOWS_FILE SIM_US [UPLINKS]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, sim_us, u) = match &args[..] {
        [p, t] => (p.clone(), t.parse::<u64>().expect(USAGE), 6u32),
        [p, t, u] => (p.clone(), t.parse::<u64>().expect(USAGE), u.parse::<u32>().expect(USAGE)),
        _ => panic!("{USAGE}"),
    };
    let n = 108u32;
    let raw = std::fs::read(&path).expect("flows file");
    let rd = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let flows: Vec<Flow> = raw
        .chunks_exact(24)
        .map(|c| Flow {
            start: rd(&c[0..8]),
            src: u32::from_le_bytes(c[8..12].try_into().expect("4")),
            dst: u32::from_le_bytes(c[12..16].try_into().expect("4")),
            size: rd(&c[16..24]),
            injected: 0,
            delivered: 0,
            finish: 0,
        })
        .collect();
    let slices = (n - 1).div_ceil(u) as u64;
    let nports = (n * u) as usize;
    let mut s = Floor {
        n,
        u,
        slices,
        ser_port: MTU * 80, // ps at 100 Gb/s
        ev: EventList::with_lookahead(1),
        pool: Vec::new(),
        free: Vec::new(),
        ports: vec![Port { bytes: 0, next_dep: u64::MAX, planned: Vec::new(), compact_at: 64 }; nports],
        cal: vec![CalQ::default(); nports * slices as usize],
        rx_last: vec![(u32::MAX, NONE); nports],
        eps: (0..n).map(|_| Ep::default()).collect(),
        voqs: vec![Voq { head: NONE, ..Voq::default() }; (n * n) as usize],
        flows,
        next_flow: 0,
        draws: 0,
        now: 0,
        hash: 0,
        hops: 0,
        offered: 0,
        delivered: 0,
        dropped: 0,
        pk_sent: 0,
        pk_delivered: 0,
        pk_dropped: 0,
        completed: 0,
        gb_violations: 0,
        collisions: 0,
        lat_hist: [0; 64],
        by_hops: [0; 8],
    };
    let end = sim_us * 1_000_000;
    s.ev = EventList::with_lookahead(LOOKAHEAD);
    s.ev.push(0, Ev::NextFlows);
    let t0 = Instant::now();
    loop {
        // the packet of an arrival a few events ahead, and then the lines its hop reads
        if let Some(&(_, Ev::Arrive(p))) = s.ev.ahead(LOOKAHEAD - 1) {
            opendcn_core::prefetch::at(&s.pool, p as usize);
        }
        if let Some(&(_, Ev::Arrive(p))) = s.ev.ahead(2) {
            let pk = s.pool[p as usize];
            if pk.at != pk.dst {
                let d = (pk.dst + s.n - pk.at - 1) % s.n;
                let port = pk.at * s.u + d % s.u;
                opendcn_core::prefetch::at(&s.ports, port as usize);
                opendcn_core::prefetch::at(&s.cal, (port as u64 * s.slices + (d / s.u) as u64) as usize);
            } else {
                opendcn_core::prefetch::at(&s.flows, pk.flow as usize);
            }
        }
        let Some((now, e)) = s.ev.pop() else { break };
        if now > end {
            break;
        }
        s.now = now;
        let code = match e {
            Ev::Inject(x) => (1u64 << 32) | x as u64,
            Ev::Arrive(x) => (2u64 << 32) | x as u64,
            Ev::NextFlows => 3u64 << 32,
        };
        s.hash = mix64(s.hash ^ now ^ code.rotate_left(17));
        match e {
            Ev::Inject(x) => {
                let ep = &mut s.eps[x as usize];
                if ep.scheduled && ep.sched_at == now {
                    ep.scheduled = false;
                    s.inject(x);
                }
            }
            Ev::Arrive(p) => s.arrive(p),
            Ev::NextFlows => s.start_flows(),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let live = (s.pool.len() - s.free.len()) as u64;
    let unsent: u64 = s.flows[..s.next_flow].iter().map(|f| f.size - f.injected).sum();
    let in_net: u64 = s.flows[..s.next_flow].iter().map(|f| f.injected - f.delivered).sum::<u64>() - s.dropped;
    println!("{n} nodes x {u} uplinks, {sim_us} us: {} flows started, {} completed; {} packet-hops in {wall:.3} s = {:.1} ns per packet-hop ({:.2} M/s)",
             s.next_flow, s.completed, s.hops, wall * 1e9 / s.hops as f64, s.hops as f64 / wall / 1e6);
    println!("bytes: offered {} = delivered {} + dropped {} + unsent {} + in network {}: {}",
             s.offered, s.delivered, s.dropped, unsent, in_net, s.offered == s.delivered + s.dropped + unsent + in_net);
    println!("packets: sent {} = delivered {} + dropped {} + live {}: {}; collisions {}, guardband violations {}, trace {:016x}",
             s.pk_sent, s.pk_delivered, s.pk_dropped, live, s.pk_sent == s.pk_delivered + s.pk_dropped + live,
             s.collisions, s.gb_violations, s.hash);
    let last = s.flows.iter().map(|f| f.finish).max().unwrap_or(0);
    let lat_packets: u64 = s.lat_hist.iter().sum();
    println!("last completion at {:.1} us; {} latencies recorded; delivered bytes by hops {:?}",
             last as f64 / 1e6, lat_packets, &s.by_hops[..4]);
}
