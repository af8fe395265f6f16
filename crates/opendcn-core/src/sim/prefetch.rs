//! Cache hints: the memory the coming events will touch (their packets, ports and table
//! entries), read ahead from the event list.

use crate::sim::*;

impl Sim {
    /// Hint the cache about the memory a coming event will touch first (the packet of an
    /// arrival): the loop is bound by memory latency, and the event list shows the next
    /// events [`LOOKAHEAD`] ahead.
    #[inline]
    pub(in crate::sim) fn prefetch(&self, ev: Ev) {
        match ev {
            Ev::Arrive(p, _) => {
                if let Some(pk) = self.pool.pkt.get(p as usize) {
                    crate::prefetch::read(pk);
                }
            }
            Ev::HostArrive(p) => {
                // crossing a host link reads the rest of the packet too (its reserved port)
                if let (Some(pk), Some(px)) = (self.pool.pkt.get(p as usize), self.pool.x.get(p as usize)) {
                    crate::prefetch::read(pk);
                    crate::prefetch::read(px);
                }
            }
            Ev::PortFree(port) | Ev::Credit(port) => {
                if let Some(pt) = self.net.ports.get(port as usize) {
                    // the lines start_tx reads: the head of the port, its queues, credits
                    // and pending credit returns
                    // addresses only: reading the port here (its queues' length) would wait
                    // for the very line being asked for
                    crate::prefetch::read(pt);
                    crate::prefetch::read(&pt.busy_until);
                    crate::prefetch::read(&pt.classes);
                    crate::prefetch::read(&pt.class_bytes);
                    crate::prefetch::read(&pt.credit);
                    crate::prefetch::read(&pt.cred_ret);
                }
            }
            Ev::Inject(e) => {
                if let Some(ep) = self.eps.get(e as usize) {
                    crate::prefetch::read(ep);
                }
            }
            _ => {}
        }
    }

    /// The later stages of [`Sim::prefetch`] for events that reach their data through
    /// pointers (a served port's queues, an endpoint's round robin): each stage reads what
    /// the one before brought into cache and hints the next link of the chain, so that by
    /// the time the event runs its queue heads and their packets are in cache.
    #[inline]
    pub(in crate::sim) fn prefetch_deref(&self, ev: Ev, stage: u8) {
        match ev {
            Ev::PortFree(port) | Ev::Credit(port) => {
                let Some(pt) = self.net.ports.get(port as usize) else { return };
                // the queues are inside the port (read at the first stage): their heads,
                // then the head packets, then the ports that gave those packets credit
                // (the sent one returns it)
                match stage {
                    1 => {
                        for q in &pt.classes {
                            if let Some(h) = q.front() {
                                crate::prefetch::read(h);
                            }
                        }
                        if let Some(r) = pt.cred_ret.front() {
                            crate::prefetch::read(r);
                        }
                    }
                    2 => {
                        for q in &pt.classes {
                            if let Some(&h) = q.front() {
                                crate::prefetch::at(&self.pool.pkt, h as usize);
                            }
                        }
                    }
                    _ => {
                        for q in &pt.classes {
                            if let Some(up) = q.front().and_then(|&h| self.pool.pkt.get(h as usize))
                                .and_then(|p| self.net.ports.get(p.cred_port as usize)) {
                                crate::prefetch::read(&up.cred_ret);
                                crate::prefetch::read(&up.blocked_since);
                            }
                        }
                    }
                }
            }
            Ev::Inject(e) => {
                let Some(ep) = self.eps.get(e as usize) else { return };
                match stage {
                    1 => {
                        if let Some(s) = ep.rr.front() {
                            crate::prefetch::read(s);
                        }
                    }
                    2 => {
                        if let Some(&s) = ep.rr.front() {
                            crate::prefetch::at(&ep.voqs, s as usize);
                        }
                        if self.mode.lean_src {
                            // the uplinks a try may take (VLB picks one at random)
                            for pt in self.src_ports(ep.node) {
                                crate::prefetch::read(pt);
                            }
                        }
                    }
                    _ => {
                        if let Some(q) = ep.rr.front().and_then(|&s| ep.voqs.get(s as usize)) {
                            crate::prefetch::at(&self.flows, q.head as usize);
                        }
                        if self.mode.lean_src {
                            // and their calendar queues of the current slice
                            let idx = self.clock.cur.idx as usize;
                            for pt in self.src_ports(ep.node) {
                                if pt.cal != NONE {
                                    crate::prefetch::at(&self.net.cal, pt.cal as usize + idx);
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The first few ports of `node` (those an injection prefetches).
    #[inline]
    pub(in crate::sim) fn src_ports(&self, node: u32) -> &[Port] {
        let (a, b) = (self.net.port_offset[node as usize] as usize, self.net.port_offset[node as usize + 1] as usize);
        &self.net.ports[a..b.min(a + 8)]
    }

    /// Hint the cache about where a coming arrival (whose packet was prefetched earlier)
    /// goes next, under VLB or direct routing (which answer cheaply): its flow when it is
    /// delivered, else its next port and calendar queue.
    #[inline]
    pub(in crate::sim) fn prefetch_next_hop(&self, pid: u32) {
        if let Router::Table(t) = &self.rt.router {
            // a table router: the entry of the packet's destination at its next node (read
            // one stage later, in `run_until`, for its source bits and candidates; kept
            // inline there: as an arm of `prefetch_deref` the fat-tree credit run took 5 %
            // longer)
            let Some(p) = self.pool.pkt.get(pid as usize) else { return };
            if p.to_host || p.at == p.dst_node {
                // delivered: its flow and the rest of the packet (payload, send time)
                if let Some(f) = self.flows.get(p.flow as usize) {
                    crate::prefetch::read(f);
                }
                crate::prefetch::at(&self.pool.x, pid as usize);
            } else if let Some(nt) = t.get(p.at as usize) {
                nt.prefetch_fast(p.dst_node);
            }
            return;
        }
        let (Router::Vlb(ci) | Router::Direct(ci)) = &self.rt.router else { return };
        let Some(p) = self.pool.pkt.get(pid as usize) else { return };
        if p.to_host || p.at == p.dst_node {
            if let Some(f) = self.flows.get(p.flow as usize) {
                crate::prefetch::read(f);
            }
            crate::prefetch::at(&self.pool.x, pid as usize);
            return;
        }
        if matches!(self.rt.router, Router::Vlb(_)) && p.src_node == p.at {
            return;
        }
        if let Some(a) = ci.first_direct(p.at, p.dst_node, p.tag) {
            if let Some(pt) = self.net.ports.get(a.port as usize) {
                crate::prefetch::read(pt);
                if self.mode.flat_cal {
                    crate::prefetch::read(&pt.departs);
                } else {
                    crate::prefetch::read(&pt.heads);
                }
                if pt.cal != NONE && a.dep != WILD {
                    if let Some(cq) = self.net.cal.get((pt.cal + a.dep) as usize) {
                        crate::prefetch::read(cq);
                    }
                }
            }
        }
    }
}
