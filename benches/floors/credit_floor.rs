//! The floor under the credit (HPC) benchmarks with the mechanisms those scenarios need:
//! what a lean engine written for this one case would cost per packet-hop on this machine.
//!
//! This kernel runs the `fattree-128x16-credit-permutation-50%` scenario's own flows (read
//! from a file) with the packet engine's model, each part in its leanest form and nothing
//! else:
//!
//! - the non-blocking three-level fat tree of radix 32 over 128 racks of 16 hosts (8 pods
//!   of 16 edge and 16 aggregation switches, 256 core switches), 100 Gb/s links, 30 ns
//!   between switches and 10 ns on host links, per-packet ECMP (a uniform draw among the
//!   16 uplinks of an edge or aggregation switch when the destination is not below it);
//! - every switch egress port a FIFO (one virtual channel) of at most 20 KB, served one
//!   packet at a time: a port that finishes a packet with more queued has a port-free
//!   event; a fabric port sends only against credit for the next switch's buffer (20 KB
//!   per link), given back one propagation delay after the packet leaves that buffer,
//!   queued at the port and taken in when it next picks a packet; a port that waits for
//!   credit with packets queued is woken by its first return, and a watchdog looks at the
//!   waiting ports every 100 µs;
//! - per source and destination a FIFO of flows; a source serves its destinations with
//!   data in round robin at its link rate, one 1500-byte packet per injection event; a try
//!   draws the ECMP uplink at its edge switch and is refused when that port's buffer is
//!   full (the destination then sleeps until the port's current packet ends, or one packet
//!   time); an admitted packet crosses the host link and joins the port's queue;
//! - per event a trace hash; per delivery: flow bytes, completion time, the one-way
//!   latency histogram and bytes by hop count; the byte and packet balances at the end.
//!
//! `cargo run --release -p opendcn-floors --bin credit_floor -- FLOWS_FILE SIM_US [port-free|plan]`
//! where FLOWS_FILE holds little-endian records (start ps u64, source host u32,
//! destination host u32, size u64): `benches/floors/credit_floor_flows.py` writes the
//! scenario's own. Prints packet-hops, events, ns per packet-hop and the balances. It is a
//! measuring kernel, not a second engine: its ECMP draws and tie orders are its own, so
//! its counts come near the engine's without being the same trace (1 ms: 48 155 734
//! packet-hops and 88 571 726 events against the engine's 48 140 575 and 88 581 881;
//! 121 306 flows completed against 121 281).
//!
//! `plan` tries the other way to serve a port: each packet's departure is planned when it
//! joins the queue, if the credit the port has by then (the returns known so far, which
//! is all that can arrive by then) covers it, so no port-free event is needed; only a
//! packet the known credit does not cover waits for one. Returns then become known out
//! of time order (a packet's downstream departure may be planned far ahead), so they are
//! kept sorted. It has 20 % fewer events and is slower (232 against 205 ns per
//! packet-hop in one sitting): an arrival planned far ahead finds its packet and its
//! event bucket out of cache, where the port-free event follows the departure within a
//! packet time.
use opendcn_core::event::EventList;
use opendcn_core::prefetch;
use opendcn_core::rng::mix64;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

const NONE: u32 = u32::MAX;
const RACKS: u32 = 128;
const HOSTS: u32 = 16; // per rack
const HALF: u32 = 16; // k / 2
const PODS: u32 = RACKS / HALF;
const PROP: u64 = 30_000;
const HOST_PROP: u64 = 10_000;
const MTU: u64 = 1500;
const CAP: u64 = 20_000;
const CREDIT: u64 = 20_000;
const PS_PER_BYTE: u64 = 80; // 100 Gb/s
const WATCHDOG: u64 = 100_000_000;
const LOOKAHEAD: usize = 8;

// node numbering: edges 0..128, aggregation 128 + pod * 16 + j, cores 256 + j * 16 + c
const AGG0: u32 = RACKS;
const CORE0: u32 = RACKS + PODS * HALF;
// port numbering: 32 per edge (16 host downlinks, then 16 uplinks), 32 per aggregation
// switch (16 down to the pod's edges, then 16 up to cores), 8 per core (one per pod)
const PA0: u32 = RACKS * 2 * HALF;
const PC0: u32 = PA0 + PODS * HALF * 2 * HALF;
const NPORTS: u32 = PC0 + HALF * HALF * PODS;

#[derive(Clone, Copy)]
enum Ev {
    Inject(u32),
    /// a source's packet reaches its edge switch's port over the host link
    HostArrive(u32, u32),
    Arrive(u32),
    PortFree(u32),
    Credit(u32),
    NextFlows,
    Watchdog,
}

#[derive(Clone, Copy, Default)]
struct Pkt {
    ts: u64,
    flow: u32,
    dst: u32,
    /// the node it travels to (a host: `to_host`)
    at: u32,
    /// the port whose link credit it holds (NONE: none)
    cred_port: u32,
    serial: u32,
    wire: u32,
    hops: u32,
    /// the packet behind it in its port's queue
    next: u32,
    to_host: bool,
}

/// Returns on their way back at most (20 KB of credit in packets of at least 1 000 bytes
/// has at most 20 in flight; 13 seen).
const RETS: usize = 32;

#[repr(align(64))]
struct Port {
    /// its queue: a list through the packets
    head: u32,
    tail: u32,
    bytes: u64,
    busy_until: u64,
    free_pending: bool,
    /// credit for the next switch's buffer (u64::MAX: a host downlink, none)
    credit: u64,
    cred_wake: u64,
    blocked_since: u64,
    /// the node (or host) at the far end, and the link's propagation delay
    peer: u32,
    to_host: bool,
    prop: u64,
    /// the returns on their way back, in time order: a ring of (time << 16 | bytes)
    ret_head: u8,
    ret_len: u8,
    ret: [u64; RETS],
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
    dst: u32,
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
    voqs: Vec<Voq>,
}

/// An edge uplink's planned departures not yet started (plan mode): a ring of
/// (start << 16 | bytes), and the end of the last one started.
#[repr(align(64))]
#[derive(Clone)]
struct Planned {
    head: u8,
    len: u8,
    cur_end: u64,
    ring: [u64; RETS],
}

struct Floor {
    /// plan mode: a port plans each packet's departure when it can (when the credit it has
    /// by then covers it) instead of waiting for a port-free event
    plan_mode: bool,
    planned: Vec<Planned>,
    ev: EventList<Ev>,
    pool: Vec<Pkt>,
    free: Vec<u32>,
    ports: Vec<Port>,
    eps: Vec<Ep>,
    flows: Vec<Flow>,
    next_flow: usize,
    serial: u32,
    blocked: Vec<u32>,
    watchdog_at: u64,
    stuck: u64,
    now: u64,
    hash: u64,
    hops: u64,
    // ledger and metrics
    offered: u64,
    delivered: u64,
    pk_sent: u64,
    pk_delivered: u64,
    completed: u64,
    credit_waits: u64,
    lat_hist: [u64; 64],
    by_hops: [u64; 8],
}

/// The egress port of a packet at switch `node` bound for host `dst`, its ECMP draw made
/// from the packet's serial number and hop count (so it can be known ahead).
#[inline(always)]
fn route(node: u32, dst: u32, serial: u32, hops: u32) -> u32 {
    let rack = dst / HOSTS;
    let pod = rack / HALF;
    let draw = || (mix64((serial as u64) << 8 | hops as u64) % HALF as u64) as u32;
    if node < AGG0 {
        if rack == node {
            node * 2 * HALF + dst % HOSTS
        } else {
            node * 2 * HALF + HALF + draw()
        }
    } else if node < CORE0 {
        let a = node - AGG0;
        if a / HALF == pod {
            PA0 + a * 2 * HALF + rack % HALF
        } else {
            PA0 + a * 2 * HALF + HALF + draw()
        }
    } else {
        PC0 + (node - CORE0) * PODS + pod
    }
}

impl Floor {
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
            let ep = &mut self.eps[src as usize];
            let slot = match ep.voqs.iter().position(|q| q.dst == dst) {
                Some(s) => s,
                None => {
                    ep.voqs.push(Voq { dst, head: NONE, ..Voq::default() });
                    ep.voqs.len() - 1
                }
            };
            let q = &mut ep.voqs[slot];
            if q.head == NONE {
                (q.head, q.size, q.injected) = (fi, size, 0);
                ep.rr.push_back(slot as u32);
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

    fn inject(&mut self, e: u32) {
        let now = self.now;
        let ep = &mut self.eps[e as usize];
        while let Some(&Reverse((t, k))) = ep.sleeping.peek() {
            if t > now {
                break;
            }
            ep.sleeping.pop();
            ep.rr.push_back(k);
        }
        let node = e / HOSTS;
        while let Some(&slot) = self.eps[e as usize].rr.front() {
            let q = &self.eps[e as usize].voqs[slot as usize];
            let (dst, f) = (q.dst, q.head);
            let wire = (q.size - q.injected).min(MTU);
            self.serial = self.serial.wrapping_add(1);
            let serial = self.serial;
            let port = route(node, dst, serial, 0);
            let pt = &self.ports[port as usize];
            let room = if self.plan_mode {
                self.adm_room(port, wire)
            } else if pt.bytes + wire > CAP {
                // room appears when the port starts its next packet
                Err(if pt.busy_until > now { pt.busy_until } else { now + wire * PS_PER_BYTE })
            } else {
                Ok(())
            };
            if let Err(wake) = room {
                let ep = &mut self.eps[e as usize];
                ep.rr.pop_front();
                ep.sleeping.push(Reverse((wake.max(now + 1), slot)));
                continue;
            }
            let ep = &mut self.eps[e as usize];
            ep.rr.pop_front();
            let q = &mut ep.voqs[slot as usize];
            q.injected += wire;
            self.flows[f as usize].injected = q.injected;
            if q.injected == q.size {
                match q.rest.pop_front() {
                    Some(g) => {
                        (q.head, q.size, q.injected) = (g, self.flows[g as usize].size, 0);
                        ep.rr.push_back(slot);
                    }
                    None => q.head = NONE,
                }
            } else {
                ep.rr.push_back(slot);
            }
            let ser = wire * PS_PER_BYTE;
            ep.busy_until = now + ser;
            let pk = Pkt { ts: now, flow: f, dst, at: node, cred_port: NONE, serial, wire: wire as u32, hops: 1, next: NONE, to_host: false };
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
            self.hops += 1;
            self.ev.push(now + ser + HOST_PROP, Ev::HostArrive(pid, port));
            // one packet per injection event
            let t = now + ser;
            self.kick_after(e, t);
            return;
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

    /// Queue packet `pid` at `port` (lossless: the upstream credit or the source's test
    /// kept its place) and start the port if it is idle.
    fn push(&mut self, port: u32, pid: u32) {
        let p = &mut self.pool[pid as usize];
        p.next = NONE;
        let wire = p.wire as u64;
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        if pt.tail == NONE {
            pt.head = pid;
        } else {
            let t = pt.tail;
            self.pool[t as usize].next = pid;
        }
        let pt = &mut self.ports[port as usize];
        pt.tail = pid;
        pt.bytes += wire;
        if pt.free_pending {
            return;
        }
        if self.plan_mode {
            self.plan(port);
            return;
        }
        if pt.busy_until <= now {
            self.start_tx(port);
        } else {
            pt.free_pending = true;
            let t = pt.busy_until;
            self.ev.push(t, Ev::PortFree(port));
        }
    }

    /// Take the head `pid` off `port`'s queue; returns the packet behind it.
    #[inline(always)]
    fn pop_head(&mut self, port: u32, pid: u32) -> u32 {
        let nx = self.pool[pid as usize].next;
        let pt = &mut self.ports[port as usize];
        pt.head = nx;
        if nx == NONE {
            pt.tail = NONE;
        }
        nx
    }

    fn start_tx(&mut self, port: u32) {
        let now = self.now;
        let pt = &mut self.ports[port as usize];
        let pid = pt.head;
        if pid == NONE {
            return;
        }
        let wire = self.pool[pid as usize].wire as u64;
        if pt.credit != u64::MAX {
            pt.take_in(now);
            if wire > pt.credit {
                self.block(port);
                return;
            }
            pt.credit -= wire;
            pt.blocked_since = u64::MAX;
        }
        let nx = self.pop_head(port, pid);
        let pt = &mut self.ports[port as usize];
        pt.bytes -= wire;
        let ser = wire * PS_PER_BYTE;
        pt.busy_until = now + ser;
        let more = nx != NONE;
        pt.free_pending = more;
        let (peer, to_host, prop, has_credit) = (pt.peer, pt.to_host, pt.prop, pt.credit != u64::MAX);
        // the packet leaves this switch's buffer: the link it came in on gets its credit
        // back, and it holds the credit of the link it now takes
        let p = &mut self.pool[pid as usize];
        let up = p.cred_port;
        p.cred_port = if has_credit { port } else { NONE };
        p.at = peer;
        p.to_host = to_host;
        p.hops += 1;
        let w = p.wire;
        self.hops += 1;
        self.ev.push(now + ser + prop, Ev::Arrive(pid));
        if more {
            self.ev.push(now + ser, Ev::PortFree(port));
        }
        if up != NONE {
            let u = &mut self.ports[up as usize];
            let t = now + u.prop;
            assert!((u.ret_len as usize) < RETS, "more returns on their way than the ring holds");
            u.ret[(u.ret_head as usize + u.ret_len as usize) % RETS] = t << 16 | w as u64;
            u.ret_len += 1;
            if u.blocked_since != u64::MAX && u.cred_wake == u64::MAX {
                u.cred_wake = t;
                self.ev.push(t, Ev::Credit(up));
            }
        }
    }

    /// Plan mode: send the port's queued packets, each at the end of the one before (or
    /// now), while the credit it has by then (its returns known so far) covers it; returns
    /// not yet known come later, so such a packet goes exactly when the port-free model
    /// sends it. A packet that the known credit does not cover waits for a port-free event
    /// at its time, or (its time now) for credit.
    fn plan(&mut self, port: u32) {
        let now = self.now;
        loop {
            let pt = &mut self.ports[port as usize];
            let pid = pt.head;
            if pid == NONE {
                return;
            }
            let wire = self.pool[pid as usize].wire as u64;
            let td = now.max(pt.busy_until);
            if pt.credit != u64::MAX {
                pt.take_in(td);
                if wire > pt.credit {
                    if td > now {
                        pt.free_pending = true;
                        self.ev.push(td, Ev::PortFree(port));
                    } else {
                        self.block(port);
                    }
                    return;
                }
                pt.credit -= wire;
                pt.blocked_since = u64::MAX;
            }
            self.pop_head(port, pid);
            let pt = &mut self.ports[port as usize];
            let ser = wire * PS_PER_BYTE;
            pt.busy_until = td + ser;
            let (peer, to_host, prop, has_credit) = (pt.peer, pt.to_host, pt.prop, pt.credit != u64::MAX);
            if let Some(k) = adm_index(port) {
                // its bytes stay in the buffer until it starts
                let a = &mut self.planned[k];
                assert!((a.len as usize) < RETS, "more planned departures than the ring holds");
                a.ring[(a.head as usize + a.len as usize) % RETS] = td << 16 | wire;
                a.len += 1;
            } else {
                pt.bytes -= wire;
            }
            let p = &mut self.pool[pid as usize];
            let up = p.cred_port;
            p.cred_port = if has_credit { port } else { NONE };
            p.at = peer;
            p.to_host = to_host;
            p.hops += 1;
            let w = p.wire;
            self.hops += 1;
            self.ev.push(td + ser + prop, Ev::Arrive(pid));
            if up != NONE {
                // the return is known now, at its time: in time order among the others
                let u = &mut self.ports[up as usize];
                let t = td + u.prop;
                assert!((u.ret_len as usize) < RETS, "more returns on their way than the ring holds");
                let mut i = u.ret_len as usize;
                while i > 0 && u.ret[(u.ret_head as usize + i - 1) % RETS] >> 16 > t {
                    u.ret[(u.ret_head as usize + i) % RETS] = u.ret[(u.ret_head as usize + i - 1) % RETS];
                    i -= 1;
                }
                u.ret[(u.ret_head as usize + i) % RETS] = t << 16 | w as u64;
                u.ret_len += 1;
                if u.blocked_since != u64::MAX && t < u.cred_wake {
                    u.cred_wake = t;
                    self.ev.push(t, Ev::Credit(up));
                }
            }
        }
    }

    /// Plan mode: the bytes an edge uplink holds now (its planned departures started by
    /// now leave), and when room may appear there.
    fn adm_room(&mut self, port: u32, wire: u64) -> Result<(), u64> {
        let now = self.now;
        let k = adm_index(port).expect("an edge uplink");
        let a = &mut self.planned[k];
        let pt = &mut self.ports[port as usize];
        while a.len > 0 {
            let r = a.ring[a.head as usize];
            if r >> 16 > now {
                break;
            }
            pt.bytes -= r & 0xffff;
            a.cur_end = (r >> 16) + (r & 0xffff) * PS_PER_BYTE;
            a.head = (a.head + 1) % RETS as u8;
            a.len -= 1;
        }
        if pt.bytes + wire <= CAP {
            Ok(())
        } else {
            Err(if a.cur_end > now { a.cur_end } else { now + wire * PS_PER_BYTE })
        }
    }

    fn block(&mut self, port: u32) {
        let now = self.now;
        self.credit_waits += 1;
        let pt = &mut self.ports[port as usize];
        if pt.cred_wake == u64::MAX && pt.ret_len > 0 {
            let t = pt.ret[pt.ret_head as usize] >> 16;
            pt.cred_wake = t;
            self.ev.push(t, Ev::Credit(port));
        }
        let pt = &mut self.ports[port as usize];
        if pt.blocked_since == u64::MAX {
            pt.blocked_since = now;
            self.blocked.push(port);
        }
        if self.watchdog_at == u64::MAX {
            self.watchdog_at = now + WATCHDOG;
            self.ev.push(self.watchdog_at, Ev::Watchdog);
        }
    }

    /// Ports that waited for credit longer than the watchdog's period (a deadlock would
    /// leave them so; none can in a fat tree with one channel).
    fn watchdog(&mut self) {
        self.watchdog_at = u64::MAX;
        let now = self.now;
        let ports = &self.ports;
        self.blocked.retain(|&p| ports[p as usize].blocked_since != u64::MAX);
        self.stuck += self.blocked.iter().filter(|&&p| ports[p as usize].blocked_since + WATCHDOG <= now).count() as u64;
        if !self.blocked.is_empty() {
            self.watchdog_at = now + WATCHDOG;
            self.ev.push(self.watchdog_at, Ev::Watchdog);
        }
    }

    fn arrive(&mut self, pid: u32) {
        let p = self.pool[pid as usize];
        if p.to_host {
            let f = &mut self.flows[p.flow as usize];
            f.delivered += p.wire as u64;
            if f.delivered == f.size {
                f.finish = self.now;
                self.completed += 1;
            }
            self.delivered += p.wire as u64;
            self.pk_delivered += 1;
            let lat = self.now - p.ts;
            self.lat_hist[(64 - lat.leading_zeros()) as usize % 64] += 1;
            self.by_hops[(p.hops as usize).min(7)] += p.wire as u64;
            self.free.push(pid);
            return;
        }
        let port = route(p.at, p.dst, p.serial, p.hops);
        self.push(port, pid);
    }
}

impl Port {
    /// Take in the credit of the returns that have arrived by `t`.
    #[inline(always)]
    fn take_in(&mut self, t: u64) {
        while self.ret_len > 0 {
            let r = self.ret[self.ret_head as usize];
            if r >> 16 > t {
                break;
            }
            self.credit += r & 0xffff;
            self.ret_head = (self.ret_head + 1) % RETS as u8;
            self.ret_len -= 1;
        }
    }
}

/// Index of an edge switch's uplink among all of them (the ports the hosts inject into).
#[inline(always)]
fn adm_index(port: u32) -> Option<usize> {
    (port < PA0 && port % (2 * HALF) >= HALF).then(|| ((port / (2 * HALF)) * HALF + port % (2 * HALF) - HALF) as usize)
}

fn ports() -> Vec<Port> {
    let mut v = Vec::with_capacity(NPORTS as usize);
    let mut add = |peer: u32, to_host: bool| {
        v.push(Port { head: NONE, tail: NONE, bytes: 0, busy_until: 0, free_pending: false,
                      credit: if to_host { u64::MAX } else { CREDIT }, cred_wake: u64::MAX,
                      blocked_since: u64::MAX, peer, to_host, prop: if to_host { HOST_PROP } else { PROP },
                      ret_head: 0, ret_len: 0, ret: [0; RETS] });
    };
    for e in 0..RACKS {
        for i in 0..HOSTS {
            add(e * HOSTS + i, true);
        }
        for j in 0..HALF {
            add(AGG0 + (e / HALF) * HALF + j, false);
        }
    }
    for a in 0..PODS * HALF {
        let (pod, j) = (a / HALF, a % HALF);
        for i in 0..HALF {
            add(pod * HALF + i, false);
        }
        for c in 0..HALF {
            add(CORE0 + j * HALF + c, false);
        }
    }
    for core in 0..HALF * HALF {
        let j = core / HALF;
        for pod in 0..PODS {
            add(AGG0 + pod * HALF + j, false);
        }
    }
    assert_eq!(v.len(), NPORTS as usize);
    v
}

fn main() {
    const USAGE: &str = "usage: credit_floor FLOWS_FILE SIM_US [port-free|plan]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, t, plan_mode) = match &args[..] {
        [p, t] => (p, t, false),
        [p, t, m] if m == "port-free" || m == "plan" => (p, t, m == "plan"),
        _ => panic!("{USAGE}"),
    };
    let sim_us = t.parse::<u64>().expect(USAGE);
    let raw = std::fs::read(path).expect("flows file");
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
    let mut s = Floor {
        plan_mode,
        planned: vec![Planned { head: 0, len: 0, cur_end: 0, ring: [0; RETS] }; (RACKS * HALF) as usize],
        ev: EventList::with_lookahead(LOOKAHEAD),
        pool: Vec::new(),
        free: Vec::new(),
        ports: ports(),
        eps: (0..RACKS * HOSTS).map(|_| Ep::default()).collect(),
        flows,
        next_flow: 0,
        serial: 0,
        blocked: Vec::new(),
        watchdog_at: u64::MAX,
        stuck: 0,
        now: 0,
        hash: 0,
        hops: 0,
        offered: 0,
        delivered: 0,
        pk_sent: 0,
        pk_delivered: 0,
        completed: 0,
        credit_waits: 0,
        lat_hist: [0; 64],
        by_hops: [0; 8],
    };
    let end = sim_us * 1_000_000;
    s.ev.push(0, Ev::NextFlows);
    let mut events = 0u64;
    let t0 = Instant::now();
    loop {
        // a few events ahead: the packet, then the port its hop takes
        match s.ev.ahead(LOOKAHEAD - 1) {
            Some(&(_, Ev::Arrive(p))) | Some(&(_, Ev::HostArrive(p, _))) => prefetch::at(&s.pool, p as usize),
            Some(&(_, Ev::PortFree(q))) | Some(&(_, Ev::Credit(q))) => prefetch::at(&s.ports, q as usize),
            Some(&(_, Ev::Inject(e))) => prefetch::at(&s.eps, e as usize),
            _ => {}
        }
        match s.ev.ahead(2) {
            Some(&(_, Ev::Arrive(p))) => {
                let pk = s.pool[p as usize];
                if pk.to_host {
                    prefetch::at(&s.flows, pk.flow as usize);
                } else {
                    prefetch::at(&s.ports, route(pk.at, pk.dst, pk.serial, pk.hops) as usize);
                }
            }
            Some(&(_, Ev::HostArrive(_, q))) => prefetch::at(&s.ports, q as usize),
            Some(&(_, Ev::Inject(e))) => {
                let ep = &s.eps[e as usize];
                if let Some(&k) = ep.rr.front() {
                    prefetch::at(&ep.voqs, k as usize);
                }
            }
            Some(&(_, Ev::PortFree(q))) => {
                prefetch::at(&s.pool, s.ports[q as usize].head as usize);
            }
            _ => {}
        }
        let Some((now, e)) = s.ev.pop() else { break };
        if now > end {
            break;
        }
        s.now = now;
        events += 1;
        let code = match e {
            Ev::Inject(x) => (1u64 << 32) | x as u64,
            Ev::HostArrive(x, _) => (2u64 << 32) | x as u64,
            Ev::Arrive(x) => (3u64 << 32) | x as u64,
            Ev::PortFree(x) => (4u64 << 32) | x as u64,
            Ev::Credit(x) => (5u64 << 32) | x as u64,
            Ev::NextFlows => 6u64 << 32,
            Ev::Watchdog => 7u64 << 32,
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
            Ev::HostArrive(p, q) => s.push(q, p),
            Ev::Arrive(p) => s.arrive(p),
            Ev::PortFree(q) => {
                s.ports[q as usize].free_pending = false;
                if s.plan_mode {
                    s.plan(q);
                } else {
                    s.start_tx(q);
                }
            }
            Ev::Credit(q) => {
                let pt = &mut s.ports[q as usize];
                if s.plan_mode {
                    // a return known later may have asked for an earlier wake-up
                    if pt.cred_wake == now {
                        pt.cred_wake = u64::MAX;
                        if !pt.free_pending && pt.busy_until <= now {
                            s.plan(q);
                        }
                    }
                } else {
                    pt.cred_wake = u64::MAX;
                    if !pt.free_pending && pt.busy_until <= now && pt.bytes > 0 {
                        s.start_tx(q);
                    }
                }
            }
            Ev::NextFlows => s.start_flows(),
            Ev::Watchdog => s.watchdog(),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let live = (s.pool.len() - s.free.len()) as u64;
    let unsent: u64 = s.flows[..s.next_flow].iter().map(|f| f.size - f.injected).sum();
    // bytes in the network: the packets not on the free list
    let mut is_free = vec![false; s.pool.len()];
    for &i in &s.free {
        is_free[i as usize] = true;
    }
    let in_net: u64 = s.pool.iter().zip(&is_free).filter(|(_, &f)| !f).map(|(p, _)| p.wire as u64).sum();
    let queued: u64 = s.ports.iter().map(|p| p.bytes).sum();
    let peak = s.pool.len();
    println!("fat tree {RACKS} racks x {HOSTS} hosts, {sim_us} us: {} flows started, {} completed; {} packet-hops, {events} events in {wall:.3} s = {:.1} ns per packet-hop ({:.2} M/s)",
             s.next_flow, s.completed, s.hops, wall * 1e9 / s.hops as f64, s.hops as f64 / wall / 1e6);
    println!("bytes: offered {} = delivered {} + unsent {} + in network {}: {}; queued at ports {queued}",
             s.offered, s.delivered, unsent, in_net, s.offered == s.delivered + unsent + in_net);
    println!("packets: sent {} = delivered {} + live {}: {}; peak packets {peak}; credit waits {}; ports stuck past the watchdog {}; trace {:016x}",
             s.pk_sent, s.pk_delivered, live, s.pk_sent == s.pk_delivered + live, s.credit_waits, s.stuck, s.hash);
    let last = s.flows.iter().map(|f| f.finish).max().unwrap_or(0);
    let lat_packets: u64 = s.lat_hist.iter().sum();
    println!("last completion at {:.1} us; {} latencies recorded; delivered bytes by hops {:?}",
             last as f64 / 1e6, lat_packets, &s.by_hops[..8]);
}
