//! Endpoints: injecting packets round-robin over destinations at the host's rate, new
//! packets, and a packet crossing its host link to its ToR.

use crate::sim::*;

impl Sim {
    /// Let endpoint `e` send as soon as its link is free (used when a transport has
    /// something new to send; ideal flows keep their own wake-ups).
    pub(in crate::sim) fn kick(&mut self, e: u32) {
        let ep = &self.eps[e as usize];
        let t = ep.busy_until.max(self.clock.now);
        if !ep.scheduled {
            if t == self.clock.now {
                self.inject(e);
            } else {
                self.schedule_inject(e, t);
            }
        } else if ep.sched_at > t {
            // an earlier injection than the pending one; the later event finds nothing more
            self.eps[e as usize].sched_at = t;
            self.push(t, Ev::Inject(e));
        }
    }

    /// Endpoint `e` injects its next packet if its link is free: control packets first,
    /// then data, alternating between ideal flows (round robin over destinations) and
    /// transport flows (round robin over flows). A packet that the egress cannot take
    /// now (buffer full, or — for a source node on a slotted fabric — no room left in the
    /// first occurrence of its departure slice) is not injected, and the next candidate
    /// is tried. When none can go, the endpoint waits until room may have appeared.
    pub(in crate::sim) fn inject(&mut self, e: u32) {
        let ep = &self.eps[e as usize];
        if ep.busy_until > self.clock.now {
            let t = ep.busy_until;
            self.schedule_inject(e, t);
            return;
        }
        let now = self.clock.now;
        let ep = &mut self.eps[e as usize];
        while let Some(&std::cmp::Reverse((t, _, k))) = ep.sleeping.peek() {
            if t > now {
                break;
            }
            ep.sleeping.pop();
            ep.rr.push_back(k);
            // the tries that follow read these slots in this order
            crate::prefetch::at(&ep.voqs, k as usize);
        }
        while let Some(&std::cmp::Reverse((t, f))) = ep.tsleep.peek() {
            if t > now {
                break;
            }
            ep.tsleep.pop();
            ep.tready.push_back(f);
        }
        let mut ctrl_wait = None;
        let mut sent = false;
        if let Some(&pid) = self.eps[e as usize].ctrl.front() {
            self.pool.pkt[pid as usize].route = NONE;
            match self.admit(e, pid, None) {
                Ok(()) => {
                    self.eps[e as usize].ctrl.pop_front();
                    sent = true;
                }
                Err(t) => ctrl_wait = Some(t.max(now + 1)),
            }
        }
        while !sent {
            let ep = &mut self.eps[e as usize];
            let ideal = match (ep.rr.is_empty(), ep.tready.is_empty()) {
                (true, true) => break,
                (false, true) => true,
                (true, false) => false,
                (false, false) => {
                    ep.turn = !ep.turn;
                    ep.turn
                }
            };
            sent = if ideal { self.try_inject_one(e).is_ok() } else { self.try_inject_flow(e).is_ok() };
        }
        // RotorLB bulk data: lowest priority at the NIC, paced by its commitments
        let mut bulk_wait = None;
        if !sent && self.rlb.lb.is_some() {
            match self.rlb.lb.as_mut().expect("checked").poll_send(e, now) {
                Poll::Send(b) => {
                    self.inject_bulk(e, b);
                    sent = true;
                }
                Poll::Wait(t) => {
                    if self.tg.params.bulk_slots {
                        // opera-sim: the NIC spends a full-packet slot on a dummy bulk packet
                        let slot = self.eps[e as usize].rate.tx((self.net.mtu + self.net.header) as u64);
                        self.eps[e as usize].busy_until = now + slot;
                        sent = true;
                    } else {
                        bulk_wait = Some(t.max(now + 1));
                    }
                }
                Poll::Idle => {}
            }
        }
        let bulk_more = sent && self.rlb.lb.as_ref().is_some_and(|r| r.has_committed(e));
        let ep = &self.eps[e as usize];
        let next = if !ep.rr.is_empty() || !ep.tready.is_empty() || (!ep.ctrl.is_empty() && ctrl_wait.is_none()) || bulk_more {
            Some(ep.busy_until)
        } else {
            [ep.sleeping.peek().map(|r| r.0 .0), ep.tsleep.peek().map(|r| r.0 .0), ctrl_wait, bulk_wait]
                .into_iter().flatten().min().map(|t| t.max(ep.busy_until))
        };
        if let Some(t) = next {
            if t < HOLD_WAIT {
                self.schedule_inject(e, t.max(self.clock.now));
            }
        }
    }

    /// Try to inject the next packet of the destination at the head of the round robin;
    /// `Err(t)`: it cannot go now, retry at `t`.
    pub(in crate::sim) fn try_inject_one(&mut self, e: u32) -> Result<(), Ps> {
        let ep = &self.eps[e as usize];
        let slot = *ep.rr.front().expect("called with active destinations");
        let q = &ep.voqs[slot as usize];
        let (f, dst, dst_node) = (q.head, q.dst, q.dst_node);
        let q_injected = q.injected;
        let payload = (q.size - q_injected).min(self.net.mtu as u64) as u32;
        let seq = (q_injected / self.net.mtu as u64) as u32;
        let admitted = if self.mode.lean_src && self.fail.n_down == 0 && self.rc.draining == NONE {
            self.inject_calendar(e, f, dst, dst_node, payload, seq)
        } else {
            let pid = self.new_packet_to(e, f, dst, dst_node, K_DATA, payload, seq, false);
            let admitted = self.admit(e, pid, Some(q_injected));
            if admitted.is_err() {
                self.exit(pid, Exit::Unsent);
            }
            admitted
        };
        if let Err(wake) = admitted {
            self.ep_sleep(e, wake);
            return Err(wake);
        }
        // committed: the bytes leave the flow's queue
        self.acct.ledger.send(false, false);
        let ep = &mut self.eps[e as usize];
        ep.rr.pop_front();
        let q = &mut ep.voqs[slot as usize];
        q.injected += payload as u64;
        self.flows[f as usize].injected = q.injected;
        if q.injected == q.size {
            match q.rest.pop_front() {
                Some(g) => {
                    let fl = &self.flows[g as usize];
                    (q.head, q.size, q.injected) = (g, fl.size, fl.injected);
                }
                None => {
                    ep.voq.remove(&dst);
                    ep.voq_free.push(slot);
                    return Ok(());
                }
            }
        }
        ep.rr.push_back(slot);
        Ok(())
    }

    /// [`Sim::new_packet_to`] and [`Sim::admit`] for a data packet of an ideal flow on a
    /// network of calendar ports under VLB or direct routing (`lean_src`), with the same
    /// result: the route and the admission tests come first, and only an admitted packet
    /// is made. A refused one leaves what making and releasing it would have left (its
    /// slot's epoch moves on, the peak of live packets counts it). `Err(t)`: refused
    /// until `t`.
    pub(in crate::sim) fn inject_calendar(&mut self, e: u32, f: u32, dst: u32, dst_node: u32, payload: u32, seq: u32) -> Result<(), Ps> {
        let ep = &self.eps[e as usize];
        let (node, rate) = (ep.node, ep.rate);
        let wire = (payload + self.net.header) as u64;
        let ser = rate.tx(wire);
        let cur = self.clock.slice();
        let a = match &self.rt.router {
            Router::Vlb(ci) if self.rt.multipath != Multipath::Adaptive => {
                // what `pick` does with the spray when no link is down (`lean_src`)
                let (mp, seed, rng) = (self.rt.multipath, self.rt.seed, &mut self.rt.rng_route);
                ci.vlb_pick(node, dst_node, cur.idx, |n| choose_among(mp, rng, seed, n, f, node))
            }
            Router::Vlb(ci) => {
                let mut cands = std::mem::take(&mut self.rt.scratch);
                ci.vlb_spray(node, dst_node, cur.idx, &mut cands);
                let a = self.pick(&cands, f, node);
                self.rt.scratch = cands;
                a
            }
            Router::Direct(ci) => ci.first_direct(node, dst_node, cur.idx),
            _ => unreachable!("lean_src holds for VLB and direct routing only"),
        };
        let refused = match a {
            // no way on: what admit does then (hold or drop) needs the packet
            None => None,
            Some(Action { port, dep }) => {
                self.release_for(port, wire);
                let pt = &self.net.ports[port as usize];
                if pt.bytes + wire > pt.cap {
                    Some(pt_wake(pt, self.clock.now + ser))
                } else {
                    let first = self.sched.next_occurrence(cur, dep);
                    let base = self.cal_of(port) as usize;
                    let planned = self.find_slot(port, base, dep, self.net.ports[port as usize].rate.tx(wire), cur);
                    if matches!(planned, Some((_, abs, _, _)) if abs > first) {
                        // that occurrence of the departure slice is full
                        Some(self.sched.slice(first + 1).start)
                    } else {
                        // admitted: made, and sent on the plan just found
                        let pid = self.new_packet_to(e, f, dst, dst_node, K_DATA, payload, seq, false);
                        let now = self.clock.now;
                        self.eps[e as usize].busy_until = now + ser;
                        let p = &mut self.pool.pkt[pid as usize];
                        p.tag = cur.idx;
                        p.innet = true;
                        self.pool.x[pid as usize].ts = now;
                        self.rc.in_net += 1;
                        if self.smp.collect_tm {
                            *self.smp.tm.entry((node, dst_node)).or_default() += payload as u64;
                        }
                        self.net.ports[port as usize].bytes += wire;
                        match planned {
                            // what enqueue_reserved does with this plan when no option
                            // acts on the hop (lean_src): the hop of `relay_calendar`
                            Some(plan) => {
                                let pser = self.net.ports[port as usize].rate.tx(wire);
                                self.send_slot(port, pid, base, plan, pser, wire);
                            }
                            // no departure: the general path drops it and says why
                            None => {
                                self.enqueue_reserved(port, pid, dep, Some(planned));
                            }
                        }
                        return Ok(());
                    }
                }
            }
        };
        match refused {
            Some(wake) => {
                // what a packet made and released again leaves behind
                self.pool.peak = self.pool.peak.max(self.pool.live + 1);
                match self.pool.free.last() {
                    Some(&id) => {
                        let p = &mut self.pool.pkt[id as usize];
                        p.epoch = p.epoch.wrapping_add(1);
                    }
                    None => {
                        self.pool.pkt.push(Packet { dst_node, at: NONE, rx: NONE, from: NONE, route: NONE, cred_port: NONE,
                                                ..Packet::default() });
                        self.pool.x.push(PacketX { q_port: NONE, q_dep: WILD, ..PacketX::default() });
                        self.pool.free.push((self.pool.pkt.len() - 1) as u32);
                    }
                }
                Err(wake)
            }
            None => {
                // the general path, which routes again (an empty choice draws nothing)
                let pid = self.new_packet_to(e, f, dst, dst_node, K_DATA, payload, seq, false);
                let admitted = self.admit(e, pid, None);
                if admitted.is_err() {
                    self.exit(pid, Exit::Unsent);
                }
                admitted
            }
        }
    }

    /// A packet of flow `f` leaving endpoint `e` for endpoint `to`.
    pub(in crate::sim) fn new_packet(&mut self, e: u32, f: u32, to: u32, kind: u8, payload: u32, seq: u32) -> u32 {
        let dst_node = self.eps[to as usize].node;
        let ndp = kind == K_DATA && self.flows.get(f as usize).is_some_and(|fl| fl.tp == TransportKind::Ndp);
        self.new_packet_to(e, f, to, dst_node, kind, payload, seq, ndp)
    }

    /// [`Self::new_packet`] with the destination's node and whether it is NDP data known.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(in crate::sim) fn new_packet_to(&mut self, e: u32, f: u32, to: u32, dst_node: u32, kind: u8, payload: u32, seq: u32, ndp: bool) -> u32 {
        let prio = if kind == K_DATA && !self.tg.pias.is_empty() { self.pias_level(seq as u64 * self.net.mtu as u64) } else { 0 };
        let node = self.eps[e as usize].node;
        // a RotorLB bulk packet carries data: its payload is on the wire like a data
        // packet's (only control packets and headers are `ctrl_bytes`)
        let wire = if kind != K_DATA && kind != K_BULK {
            self.tg.params.ctrl_bytes
        } else if self.tg.params.pad_segments {
            // htsim / opera-sim: every packet of a flow is min(flow size, MSS) on the wire
            let size = self.flows.get(f as usize).map_or(payload as u64, |fl| fl.size);
            payload.max(size.min(self.net.mtu as u64) as u32) + self.net.header
        } else {
            payload + self.net.header
        };
        self.alloc(Packet {
            flow: f,
            src_node: node,
            dst_node,
            wire,
            tag: 0,
            at: node,
            rx: NONE,
            from: NONE,
            sent_abs: 0,
            route: NONE,
            pos: 0,
            cred_port: NONE,
            hops: 0,
            epoch: 0,
            rgen: 0,
            cred_vc: 0,
            kind,
            classes: 0,
            prio,
            to_host: false,
            doomed: false,
            trimmed: false,
            ce: false,
            innet: false,
            ndp,
        }, PacketX { dst_ep: to, payload, q_port: NONE, q_dep: WILD, seq, q_gen: 0, retx: false, ts: 0 })
    }

    /// Serve the transport flow at the head of endpoint `e`'s round robin: its parked
    /// packet, else the next segment its transport allows. `Err`: nothing went.
    pub(in crate::sim) fn try_inject_flow(&mut self, e: u32) -> Result<(), Ps> {
        let f = self.eps[e as usize].tready.pop_front().expect("called with ready flows");
        let fl = self.flows[f as usize];
        let pid = if fl.parked != NONE {
            fl.parked
        } else {
            let now = self.clock.now;
            let sd = match self.tg.conns.get_mut(fl.conn as usize).and_then(|c| c.as_mut()) {
                Some(c) => c.poll_send(now),
                None => None,
            };
            let Some(sd) = sd else {
                self.flows[f as usize].inq = false;
                return Err(now);
            };
            self.acct.ledger.send(sd.retx, false);
            if !sd.retx {
                self.flows[f as usize].injected += sd.len as u64;
            }
            let pid = self.new_packet(e, f, fl.dst, K_DATA, sd.len, sd.seq);
            self.pool.x[pid as usize].retx = sd.retx;
            pid
        };
        // a fresh routing decision on every attempt
        let p = &mut self.pool.pkt[pid as usize];
        p.route = NONE;
        p.pos = 0;
        let res = self.admit(e, pid, None);
        let ep = &mut self.eps[e as usize];
        match res {
            Ok(()) => {
                self.flows[f as usize].parked = NONE;
                let more = self.tg.conns.get(fl.conn as usize).and_then(|c| c.as_ref()).is_some_and(|c| c.can_send());
                if more {
                    ep.tready.push_back(f);
                } else {
                    self.flows[f as usize].inq = false;
                }
            }
            Err(t) => {
                self.flows[f as usize].parked = pid;
                ep.tsleep.push(std::cmp::Reverse((t.max(self.clock.now + 1), f)));
            }
        }
        self.sync_timer(f);
        res
    }

    /// The destination at the head of endpoint `e`'s round robin cannot go before `t`.
    pub(in crate::sim) fn ep_sleep(&mut self, e: u32, t: Ps) {
        let now = self.clock.now;
        let ep = &mut self.eps[e as usize];
        if let Some(k) = ep.rr.pop_front() {
            let d = ep.voqs[k as usize].dst;
            ep.sleeping.push(std::cmp::Reverse((t.max(now + 1), d, k)));
        }
    }

    pub(in crate::sim) fn on_host_arrive(&mut self, pid: u32) {
        let p = self.pool.pkt[pid as usize];
        let px = self.pool.x[pid as usize];
        if px.q_port == HOLD_PORT {
            self.pool.x[pid as usize].q_port = NONE;
            self.hold_arrive(p.at, pid);
            return;
        }
        if px.q_port == NONE {
            // intra-node traffic: hand to the host downlink of the destination
            let dp = self.eps[px.dst_ep as usize].down_port;
            self.enqueue(dp, pid, WILD);
        } else if self.fail.n_down > 0 && self.fail.down[px.q_port as usize] {
            // its ToR port failed while it crossed the host link
            if !self.net.ports[px.q_port as usize].served {
                self.net.ports[px.q_port as usize].bytes -= p.wire as u64;
            }
            self.drop_pkt(pid, DROP_FAILED);
        } else if self.rc.port_gen[px.q_port as usize] != px.q_gen && matches!(self.rt.router, Router::Table(_)) {
            // the port's circuit was reconfigured while the packet crossed its host link:
            // the ToR forwards it by the tables in force now, as any arrival (the space
            // reserved on the old choice is given back)
            if !self.net.ports[px.q_port as usize].served {
                self.net.ports[px.q_port as usize].bytes -= p.wire as u64;
            }
            self.pool.x[pid as usize].q_port = NONE;
            self.acct.rerouted_at_tor += 1;
            match self.route(p.at, pid) {
                Ok(a) => self.enqueue(a.port, pid, a.dep),
                Err(why) => self.no_route(p.at, pid, why),
            }
        } else if self.net.ports[px.q_port as usize].served {
            // a served port queues (and may trim or drop) what arrives from its hosts
            self.enqueue(px.q_port, pid, px.q_dep);
        } else if self.mode.adm && !self.adm_fits(Action { port: px.q_port, dep: px.q_dep }, pid) {
            // admission control at the ToR: the space reserved on the chosen port is given
            // back and a later slice's decision is taken (its buffer checked as any arrival)
            self.net.ports[px.q_port as usize].bytes -= p.wire as u64;
            self.adm_congested(Action { port: px.q_port, dep: px.q_dep }, pid);
            match self.adm_later(p.at, pid, None) {
                Some(b) => self.enqueue(b.port, pid, b.dep),
                None => self.drop_pkt(pid, DROP_ADM),
            }
        } else {
            self.enqueue_reserved(px.q_port, pid, px.q_dep, None);
        }
    }

    // ---------------------------------------------------------------- routing

    /// At most one injection event per endpoint is pending.
    #[inline]
    pub(in crate::sim) fn schedule_inject(&mut self, e: u32, t: Ps) {
        if !self.eps[e as usize].scheduled {
            self.eps[e as usize].scheduled = true;
            self.eps[e as usize].sched_at = t;
            self.push(t, Ev::Inject(e));
        }
    }

    /// An endpoint that waits without a wake-up time (`HOLD_WAIT`) tries again now.
    pub(in crate::sim) fn wake_endpoint(&mut self, e: u32) {
        let now = self.clock.now;
        let ep = &mut self.eps[e as usize];
        let fix = |t: Ps| if t >= HOLD_WAIT { now } else { t };
        if ep.sleeping.iter().any(|r| r.0 .0 >= HOLD_WAIT) {
            ep.sleeping = ep.sleeping.drain().map(|std::cmp::Reverse((t, d, k))| std::cmp::Reverse((fix(t), d, k))).collect();
        }
        if ep.tsleep.iter().any(|r| r.0 .0 >= HOLD_WAIT) {
            ep.tsleep = ep.tsleep.drain().map(|std::cmp::Reverse((t, f))| std::cmp::Reverse((fix(t), f))).collect();
        }
        self.kick(e);
    }

    // ---------------------------------------------------------------- served ports
}
