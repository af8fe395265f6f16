//! Served ports: packets queued per priority class and sent one at a time when the link
//! frees (strict priority or DRR, PIAS, ECN marking, NDP trimming and bouncing, credit-based
//! flow control, and the gate of a served optical port on a cyclic schedule).

use crate::sim::*;

impl Sim {
    /// Priority class of a packet at `port` with `k` classes: control packets and
    /// trimmed headers 0, NDP data 1, other data 2 (Duo's HIGH / MEDIUM / LOW), capped
    /// at the port's lowest class. In a credit network: its virtual channel.
    #[inline]
    pub(in crate::sim) fn class_of(&self, pid: u32, port: u32, k: usize) -> usize {
        if k <= 1 {
            return 0;
        }
        let p = &self.pool.pkt[pid as usize];
        if self.credit.on {
            if self.credit.port_vc.is_empty() {
                // virtual channel by hop count: a packet's n-th link uses channel n (the
                // last channel for longer paths), so channel dependencies only go up when
                // the channels cover the longest path
                return (p.hops as usize).min(k - 1);
            }
            // the routing's rule: channel 0 on the first link, then the channel of the
            // previous link (`cred_vc`), one up on the class transitions the rule names
            if p.hops == 0 || p.from == NONE {
                return 0;
            }
            let step = self.tg.params.credit_vc_step.unwrap_or(0);
            let bit = 8 * self.credit.port_vc[p.from as usize] as u32 + self.credit.port_vc[port as usize] as u32;
            return (p.cred_vc as usize + ((step >> bit) & 1) as usize).min(k - 1);
        }
        let c = if p.kind == K_BULK {
            k - 1
        } else if p.kind != K_DATA || p.trimmed {
            0
        } else if !self.tg.pias.is_empty() {
            1 + p.prio as usize
        } else if p.ndp {
            1
        } else {
            2
        };
        c.min(k - 1)
    }

    /// PIAS: the priority level of a data packet from the bytes its flow sent before it
    /// (level i while fewer than `pias[i]` bytes were sent; the last level beyond).
    #[inline]
    pub(in crate::sim) fn pias_level(&self, sent: u64) -> u8 {
        self.tg.pias.iter().position(|&t| sent < t).unwrap_or(self.tg.pias.len()) as u8
    }

    /// ECN: mark a data packet that finds more than K bytes queued at `port`.
    #[inline]
    pub(in crate::sim) fn ecn_mark(&mut self, port: u32, pid: u32, queued: u64) {
        let k = self.net.ports[port as usize].ecn_k;
        if k > 0 && queued > k {
            let p = &mut self.pool.pkt[pid as usize];
            if p.kind == K_DATA && !p.ce {
                p.ce = true;
                self.acct.ecn_marks += 1;
            }
        }
    }

    /// A packet arrives at a served port: queue it in its class, trim an NDP data packet
    /// whose class is full to its header (class 0), return a header that finds class 0
    /// full to its sender (NDP's return-to-sender) or drop it, drop anything else that
    /// does not fit.
    pub(in crate::sim) fn served_enqueue(&mut self, port: u32, pid: u32) {
        if self.credit.on {
            // lossless: the upstream link's credit guaranteed this packet a place
            self.served_push(port, pid);
            return;
        }
        let k = self.net.ports[port as usize].classes.len();
        let queued = self.net.ports[port as usize].bytes;
        self.ecn_mark(port, pid, queued);
        if self.net.shared_on {
            self.shared_refresh(port);
        }
        let fits = |pt: &Port, c: usize, wire: u64| pt.bytes + wire <= pt.cap && pt.class_bytes[c] + wire <= pt.class_cap[c];
        let c = self.class_of(pid, port, k);
        let wire = self.pool.pkt[pid as usize].wire as u64;
        if fits(&self.net.ports[port as usize], c, wire) {
            self.served_push(port, pid);
            return;
        }
        let p = self.pool.pkt[pid as usize];
        let ndp = p.kind == K_DATA && p.ndp;
        if self.net.ports[port as usize].trim && ndp && !p.trimmed {
            let hdr = self.tg.params.ctrl_bytes;
            if self.services.congestion_detection {
                // congestion on a served port: an NDP data packet finds its class full;
                // trimming is the response, push-back the optional next one
                self.pb.congestion_events += 1;
                if self.services.pushback {
                    self.trim_pushback(port, pid);
                }
            }
            let pk = &mut self.pool.pkt[pid as usize];
            pk.trimmed = true;
            pk.wire = hdr;
            self.acct.ledger.trims += 1;
            if fits(&self.net.ports[port as usize], 0, hdr as u64) {
                self.served_push(port, pid);
            } else if self.tg.params.ndp_return_to_sender {
                self.bounce(port, pid);
            } else {
                self.drop_pkt(pid, DROP_HEADER);
            }
            return;
        }
        let reason = if c == 0 && (p.kind != K_DATA || p.trimmed) && k > 1 {
            DROP_HEADER
        } else if k > 1 && self.net.ports[port as usize].bytes + wire <= self.net.ports[port as usize].cap {
            DROP_CLASS
        } else {
            DROP_BUFFER
        };
        self.drop_pkt(pid, reason);
        self.droplog.at_port(port, WILD);
    }

    /// Return-to-sender: a trimmed header that found no room goes back to its sender as
    /// a NACK from the node of `port`.
    pub(in crate::sim) fn bounce(&mut self, port: u32, pid: u32) {
        let node = self.net.port_node[port as usize];
        let f = self.pool.pkt[pid as usize].flow;
        let src = self.flows[f as usize].src;
        let back = self.eps[src as usize].node;
        let cur = if self.rt.expander { self.route_slice(self.clock.now) } else { self.clock.slice().idx };
        let p = &mut self.pool.pkt[pid as usize];
        p.kind = K_NACK;
        p.src_node = node;
        p.dst_node = back;
        self.pool.x[pid as usize].dst_ep = src;
        let p = &mut self.pool.pkt[pid as usize];
        p.route = NONE;
        p.pos = 0;
        p.tag = cur;
        self.acct.ledger.bounces += 1;
        if back == node {
            if self.mode.hosts {
                let dp = self.eps[src as usize].down_port;
                self.enqueue(dp, pid, WILD);
            } else {
                self.deliver(pid);
            }
            return;
        }
        match self.route(node, pid) {
            Ok(a) => self.enqueue(a.port, pid, a.dep),
            Err(why) => self.no_route(node, pid, why),
        }
    }

    /// Queue a packet that fits in its class, and start the port if it is idle.
    pub(in crate::sim) fn served_push(&mut self, port: u32, pid: u32) {
        let k = self.net.ports[port as usize].classes.len();
        let c = self.class_of(pid, port, k);
        let wire = self.pool.pkt[pid as usize].wire as u64;
        let now = self.clock.now;
        let pt = &mut self.net.ports[port as usize];
        pt.classes[c].push_back(pid);
        pt.class_bytes[c] += wire;
        pt.bytes += wire;
        if pt.free_pending {
            return;
        }
        if pt.busy_until <= now {
            self.start_tx(port);
        } else {
            pt.free_pending = true;
            let t = pt.busy_until;
            self.push(t, Ev::PortFree(port));
        }
    }

    /// An idle served port sends the head of its highest non-empty class.
    pub(in crate::sim) fn start_tx(&mut self, port: u32) {
        let now = self.clock.now;
        let cur = self.clock.slice();
        let cyclic = !self.sched.is_static();
        loop {
            let pool = &self.pool.pkt;
            let pt = &mut self.net.ports[port as usize];
            let c = match pick_class(pt, now, |h| pool[h as usize].wire as u64) {
                Pick::Class(c) => c,
                Pick::Empty => return,
                Pick::NoCredit => {
                    self.block(port);
                    return;
                }
            };
            let pt = &mut self.net.ports[port as usize];
            let pid = pt.classes[c].pop_front().expect("non-empty class");
            let wire = self.pool.pkt[pid as usize].wire as u64;
            if !pt.credit.is_empty() {
                pt.credit[c] -= wire;
                pt.rr_vc = c + 1;
                pt.blocked_since = Ps::MAX;
            }
            let pt = &mut self.net.ports[port as usize];
            pt.class_bytes[c] -= wire;
            pt.bytes -= wire;
            let kind = pt.kind;
            let ser = pt.rate.tx(wire);
            let d = now.max(pt.down_until);
            let rx = if kind == PortKind::Optical && cyclic {
                match self.gate(port, pid, d, ser) {
                    Gate::Send(rx) => rx,
                    Gate::Moved => continue,
                    Gate::Wait(t) => {
                        // the circuit is down: the head waits for it, and so does the port
                        let pt = &mut self.net.ports[port as usize];
                        pt.classes[c].push_front(pid);
                        pt.class_bytes[c] += wire;
                        pt.bytes += wire;
                        pt.free_pending = true;
                        self.push(t, Ev::PortFree(port));
                        return;
                    }
                }
            } else if kind == PortKind::Optical {
                self.sched.peer(port, 0)
            } else {
                pt.peer
            };
            if rx == NONE {
                self.drop_pkt(pid, DROP_NO_CIRCUIT);
                continue;
            }
            if kind == PortKind::Optical && cyclic && !self.sched.window_ok(port, rx, d, ser) {
                self.acct.gb_violations += 1;
            }
            let pt = &mut self.net.ports[port as usize];
            pt.busy_until = d + ser;
            pt.tx_bytes += wire;
            pt.last_pkt = pid;
            pt.last_end = d + ser;
            let prop = pt.prop;
            let more = pt.classes.iter().any(|q| !q.is_empty());
            if more {
                pt.free_pending = true;
            }
            let to_host = kind == PortKind::HostDown;
            let at = if to_host { rx } else { self.net.port_node[rx as usize] };
            let tag = if self.mode.lookahead > 0 && cyclic {
                self.sched.slice_at(d + ser + prop + self.mode.lookahead).idx
            } else if cyclic {
                self.sched.slice_at(d).idx
            } else {
                cur.idx
            };
            let cls = self.net.port_class[port as usize];
            self.acct.class_tx[cls as usize] += wire;
            // the packet leaves this node's buffer: the link it came in on gets its credit
            // back, and it holds the credit of the link it now takes
            self.return_credit(pid);
            if !self.net.ports[port as usize].credit.is_empty() {
                let p = &mut self.pool.pkt[pid as usize];
                p.cred_port = port;
                p.cred_vc = c as u8;
            }
            let p = &mut self.pool.pkt[pid as usize];
            p.tag = tag;
            p.at = at;
            p.rx = if kind == PortKind::Optical { rx } else { NONE };
            p.from = port;
            p.sent_abs = if cyclic && kind == PortKind::Optical { self.sched.slice_at(d).abs as u32 } else { self.rc.applied as u32 };
            p.to_host = to_host;
            p.hops += 1;
            if cls < 3 {
                p.classes |= 1 << cls;
            }
            let epoch = p.epoch;
            self.acct.packet_hops += 1;
            self.push(d + ser + prop, Ev::Arrive(pid, epoch));
            if more {
                self.push(d + ser, Ev::PortFree(port));
            }
            return;
        }
    }

    /// May the packet at the head of served optical `port` (cyclic schedule) start at `d`
    /// for `ser`? Only if its circuit is up and stays up (same peer) until its last bit,
    /// and — for a packet on an expander source route — still leads where that route
    /// expects. Otherwise an expander-routed packet is re-routed here over the current
    /// slice's path (never sent into a circuit that is going or gone), and any other packet
    /// waits for the port's next up period.
    pub(in crate::sim) fn gate(&mut self, port: u32, pid: u32, d: Ps, ser: Ps) -> Gate {
        let p = self.pool.pkt[pid as usize];
        if p.kind == K_BULK {
            // RotorLB: across only if the circuit leads to the committed rack until the
            // last bit; otherwise back to the holder host
            let want = self.rlb.meta[pid as usize].want_tor;
            if let Some((q, until)) = self.sched.circuit_at(port, d) {
                if d + ser <= until && self.net.port_node[q as usize] == want {
                    return Gate::Send(q);
                }
            }
            self.drop_pkt(pid, DROP_RETURNED);
            return Gate::Moved;
        }
        let expander = matches!(self.rt.router, Router::Expander(_));
        let want = if expander && p.route != NONE { self.sched.peer(port, p.route) } else { NONE };
        if let Some((q, until)) = self.sched.circuit_at(port, d) {
            if d + ser <= until && (want == NONE || q == want) {
                return Gate::Send(q);
            }
        }
        if expander {
            self.acct.reroutes += 1;
            let node = self.net.port_node[port as usize];
            let cur = self.route_slice(self.clock.now);
            let pk = &mut self.pool.pkt[pid as usize];
            pk.route = NONE;
            pk.tag = cur;
            match self.route(node, pid) {
                Ok(a) if a.port != port => {
                    self.served_enqueue(a.port, pid);
                    Gate::Moved
                }
                Ok(_) => match self.sched.circuit_at(port, d) {
                    Some((q, until)) if d + ser <= until && q == self.sched.peer(port, cur) => Gate::Send(q),
                    _ => {
                        // cannot happen with consistent slice paths; never send into a down circuit
                        self.drop_pkt(pid, DROP_NO_CIRCUIT);
                        Gate::Moved
                    }
                },
                Err(_) => {
                    self.drop_pkt(pid, DROP_NO_ROUTE);
                    Gate::Moved
                }
            }
        } else {
            // the first up period from `d` long enough for the whole packet
            let n = self.sched.slices() as u64;
            let from = self.sched.slice_at(d).abs;
            for k in 0..=2 * n {
                let s = self.sched.slice(from + k);
                let t0 = d.max(s.start + self.sched.guard_of(port, s.idx));
                if t0 >= s.end {
                    continue;
                }
                if let Some((_, until)) = self.sched.circuit_at(port, t0) {
                    if t0 + ser <= until {
                        return Gate::Wait(t0);
                    }
                }
            }
            self.drop_pkt(pid, DROP_OVERSIZE);
            Gate::Moved
        }
    }

    // ---------------------------------------------------------------- RotorLB

    pub(in crate::sim) fn on_port_free(&mut self, port: u32) {
        self.net.ports[port as usize].free_pending = false;
        self.start_tx(port);
    }

    // ---------------------------------------------------------------- transports
}

/// What a served port sends next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum Pick {
    /// The head packet of this class (or virtual channel).
    Class(usize),
    /// Nothing is queued.
    Empty,
    /// Packets are queued, but none has the credit to go.
    NoCredit,
}

/// The class a served port serves next (`wire`: a queued packet's wire bytes): deficit
/// round robin over the non-empty classes when the port has weights (the class picked
/// pays for its packet), else strict priority (the first non-empty class), and on a credit
/// port the virtual channels in round robin from `rr_vc`, each only against its credit
/// (the returns that have arrived by `now` taken in first).
#[inline]
pub(in crate::sim) fn pick_class(pt: &mut Port, now: Ps, wire: impl Fn(u32) -> u64) -> Pick {
    if !pt.quantum.is_empty() {
        if pt.bytes == 0 {
            return Pick::Empty;
        }
        let k = pt.classes.len();
        loop {
            let c = pt.drr;
            match pt.classes[c].front() {
                Some(&h) if wire(h) <= pt.deficit[c] => {
                    pt.deficit[c] -= wire(h);
                    return Pick::Class(c);
                }
                Some(_) => {}
                None => pt.deficit[c] = 0,
            }
            pt.drr = (c + 1) % k;
            let nc = pt.drr;
            if !pt.classes[nc].is_empty() {
                pt.deficit[nc] += pt.quantum[nc];
            }
        }
    } else if pt.credit.is_empty() {
        match pt.classes.iter().position(|q| !q.is_empty()) {
            Some(c) => Pick::Class(c),
            None => Pick::Empty,
        }
    } else {
        while let Some(&(t, vc, bytes)) = pt.cred_ret.front() {
            if t > now {
                break;
            }
            pt.credit[vc as usize] += bytes as u64;
            pt.cred_ret.pop_front();
        }
        let k = pt.classes.len();
        let mut any = false;
        for i in 0..k {
            let v = (pt.rr_vc + i) % k;
            if let Some(&h) = pt.classes[v].front() {
                any = true;
                if wire(h) <= pt.credit[v] {
                    return Pick::Class(v);
                }
            }
        }
        if any { Pick::NoCredit } else { Pick::Empty }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A served port with `k` classes holding the given packet ids (packet `i` is
    /// `wire[i]` bytes).
    fn port(queues: &[&[u32]], wire: &[u64]) -> Port {
        let mut pt = Port::new(PortKind::Electrical, Rate::new(100_000_000_000), 0, 1_000_000, NONE);
        pt.served = true;
        pt.classes = queues.iter().map(|q| q.iter().copied().collect()).collect();
        pt.class_bytes = queues.iter().map(|q| q.iter().map(|&i| wire[i as usize]).sum()).collect();
        pt.bytes = pt.class_bytes.iter().sum();
        pt
    }

    fn serve(pt: &mut Port, wire: &[u64], n: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for _ in 0..n {
            match pick_class(pt, 0, |h| wire[h as usize]) {
                Pick::Class(c) => {
                    let h = pt.classes[c].pop_front().unwrap();
                    pt.class_bytes[c] -= wire[h as usize];
                    pt.bytes -= wire[h as usize];
                    out.push(c);
                }
                _ => break,
            }
        }
        out
    }

    #[test]
    fn strict_priority_serves_the_first_non_empty_class() {
        let wire = [1500; 6];
        let mut pt = port(&[&[], &[0, 1], &[2, 3]], &wire);
        assert_eq!(serve(&mut pt, &wire, 10), vec![1, 1, 2, 2]);
        assert_eq!(pick_class(&mut pt, 0, |h| wire[h as usize]), Pick::Empty);
    }

    #[test]
    fn deficit_round_robin_shares_by_weight() {
        let wire = [1500; 12];
        let mut pt = port(&[&[0, 1, 2, 3, 4, 5], &[6, 7, 8, 9, 10, 11]], &wire);
        pt.quantum = vec![3000, 1500];
        pt.deficit = vec![0, 0];
        pt.deficit[0] = 3000; // the round starts with class 0's quantum
        let order = serve(&mut pt, &wire, 9);
        assert_eq!(order, vec![0, 0, 1, 0, 0, 1, 0, 0, 1], "two packets of class 0 per packet of class 1");
        // the rest drains, then nothing
        assert_eq!(serve(&mut pt, &wire, 10).len(), 3);
        assert_eq!(pick_class(&mut pt, 0, |h| wire[h as usize]), Pick::Empty);
    }

    #[test]
    fn credit_channels_take_turns_and_wait_for_their_credit() {
        let wire = [1000; 4];
        let mut pt = port(&[&[0, 1], &[2, 3]], &wire);
        pt.credit = smallvec![1000, 0];
        // only channel 0 has credit for one packet
        assert_eq!(pick_class(&mut pt, 0, |h| wire[h as usize]), Pick::Class(0));
        pt.classes[0].pop_front();
        pt.credit[0] -= 1000;
        pt.rr_vc = 1;
        assert_eq!(pick_class(&mut pt, 0, |h| wire[h as usize]), Pick::NoCredit);
        // a return for channel 1 arrives at 50 ps: not yet at 49, taken in at 50
        pt.cred_ret.push_back((50, 1, 1000));
        assert_eq!(pick_class(&mut pt, 49, |h| wire[h as usize]), Pick::NoCredit);
        assert_eq!(pick_class(&mut pt, 50, |h| wire[h as usize]), Pick::Class(1));
        assert!(pt.cred_ret.is_empty());
        pt.classes.iter_mut().for_each(|q| q.clear());
        assert_eq!(pick_class(&mut pt, 50, |h| wire[h as usize]), Pick::Empty);
    }
}
