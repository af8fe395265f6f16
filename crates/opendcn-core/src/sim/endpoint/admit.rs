//! A source's admission of its packet: the egress port and departure it may take now, or
//! when to try again.

use crate::sim::*;

impl Sim {
    /// Route packet `pid` from endpoint `e` and put it into the network now if its egress
    /// can take it (the endpoint is then busy for its serialization). `Err(t)`: it cannot
    /// go before `t`; the caller keeps (or releases) the packet. `sent`: the bytes its
    /// flow injected before it, when the caller knows (see [`Sim::route_sent`]).
    pub(in crate::sim) fn admit(&mut self, e: u32, pid: u32, sent: Option<u64>) -> Result<(), Ps> {
        let ep = &self.eps[e as usize];
        let (node, rate, prop) = (ep.node, ep.rate, ep.prop);
        let p = self.pool.pkt[pid as usize];
        let dst_node = p.dst_node;
        let wire = p.wire as u64;
        let ser = rate.tx(wire);
        let t_arr = if self.mode.hosts { self.clock.now + ser + prop } else { self.clock.now };
        let cur = self.clock.slice();
        let tag = if self.rt.expander {
            self.route_slice(t_arr)
        } else if self.mode.lookahead > 0 {
            self.sched.slice_at(t_arr + self.mode.lookahead).idx
        } else if t_arr == self.clock.now {
            cur.idx
        } else {
            self.sched.slice_at(t_arr).idx
        };
        self.pool.pkt[pid as usize].tag = tag;
        let is_data = p.kind == K_DATA;
        let ep_busy = self.clock.now + ser;
        let same_node = self.mode.hosts && dst_node == node;
        if self.rc.draining != NONE {
            // a drained reconfiguration: nothing enters the network until its switch
            if !self.rc.drain_waiters.contains(&e) {
                self.rc.drain_waiters.push(e);
            }
            self.rc.drain_refused += 1;
            return Err(HOLD_WAIT);
        }
        if self.services.pushback && is_data && !self.pool.x[pid as usize].retx {
            if let Some(until) = self.pb.paused_until(node, dst_node, self.clock.now) {
                self.pb.paused_attempts += 1;
                return Err(until);
            }
        }
        let act = if same_node {
            Err(NoRoute::Unmatched)
        } else if p.kind == K_BULK {
            // RotorLB names the rotor: the holder's rack sends it on that uplink. A served
            // port checks the circuit when the packet reaches its head; a calendar port
            // plans it in the first slice whose circuit leads to the committed rack
            let b = self.rlb.meta[pid as usize];
            let port = self.rlb.ports[(node * self.rlb_uplinks() + b.rotor) as usize];
            if self.net.ports[port as usize].served {
                Ok(Action { port, dep: WILD })
            } else {
                let n = self.sched.slices();
                (0..n).map(|k| (cur.idx + k) % n)
                    .find(|&i| { let q = self.sched.peer(port, i); q != NONE && self.net.port_node[q as usize] == b.want_tor })
                    .map(|dep| Action { port, dep })
                    .ok_or(NoRoute::Unmatched)
            }
        } else {
            match self.route_sent(node, pid, sent) {
                // admission control at a source node: a later slice's decision if the chosen
                // slice has no room (none: the source waits, sources never drop)
                Ok(a) if self.mode.adm && !self.mode.hosts && !self.adm_fits(a, pid) => Ok(self.adm_later(node, pid, sent).unwrap_or(a)),
                other => other,
            }
        };
        // the departure planned while testing the port (calendar ports), committed below
        let mut preplan = None;
        let hold_src = act == Err(NoRoute::Unmatched) && !same_node && self.hold.on && p.kind != K_BULK;
        if hold_src && self.hold.bytes[node as usize] + wire > self.hold.cap[node as usize] {
            // no route yet and the node's hold is full: the source waits until it drains
            self.hold.stats.refused += 1;
            if !self.hold.waiters[node as usize].contains(&e) {
                self.hold.waiters[node as usize].push(e);
            }
            return Err(HOLD_WAIT);
        }
        if !same_node {
            if let Ok(a) = act {
                // admission: buffer room, and no spill past the first occurrence of the slice
                self.release_for(a.port, wire);
                let pt = &self.net.ports[a.port as usize];
                if pt.served && (!self.mode.hosts || self.credit.on) {
                    let c = self.class_of(pid, a.port, pt.classes.len());
                    if pt.bytes + wire > pt.cap || pt.class_bytes[c] + wire > pt.class_cap[c] {
                        // room appears when the port starts its next transmission; a port
                        // waiting for credit is polled once per packet time
                        let now = self.clock.now;
                        return Err(if pt.busy_until > now { pt.busy_until } else { now + pt.rate.tx(wire) });
                    }
                } else if !pt.served && pt.bytes + wire > pt.cap {
                    return Err(pt_wake(pt, self.clock.now + ser));
                }
                let cyclic_optical = pt.kind == PortKind::Optical && !self.sched.is_static() && a.dep != WILD;
                if self.services.flow_pausing && is_data && cyclic_optical && a.dep != cur.idx
                    && self.flows[p.flow as usize].injected >= self.services.elephant_bytes {
                    // an elephant (aged past the PIAS threshold) waits for its circuit
                    let wake = self.sched.slice(self.sched.next_occurrence(cur, a.dep)).start;
                    self.pb.paused_attempts += 1;
                    return Err(wake);
                }
                if !self.mode.hosts && cyclic_optical {
                    let first = self.sched.next_occurrence(cur, a.dep);
                    let planned = self.plan_slotted(a.port, a.dep, self.net.ports[a.port as usize].rate.tx(wire), cur, false);
                    if matches!(planned, Some((_, abs, _, _)) if abs > first) {
                        // that occurrence of the departure slice is full: no chance before it
                        // has ended
                        return Err(self.sched.slice(first + 1).start);
                    }
                    // enqueue_reserved commits this plan (nothing changes the queue before)
                    preplan = Some(planned);
                }
            }
        }
        self.eps[e as usize].busy_until = ep_busy;
        if self.tg.params.nic_push && p.kind != K_BULK && self.rlb.lb.is_some() {
            // opera-sim: every 1 500 bytes of other traffic push a committed bulk packet back
            let ep = &mut self.eps[e as usize];
            let pushes = (ep.nic_bytes + wire) / 1500 - ep.nic_bytes / 1500;
            ep.nic_bytes += wire;
            let lb = self.rlb.lb.as_mut().expect("checked");
            let mut step = false;
            for _ in 0..pushes {
                step |= lb.nic_push(e);
            }
            if step {
                self.schedule_rlb();
            }
        }
        self.pool.pkt[pid as usize].innet = true;
        self.rc.in_net += 1;
        if is_data {
            let px = &mut self.pool.x[pid as usize];
            px.ts = self.clock.now;
            if self.smp.collect_tm {
                *self.smp.tm.entry((node, dst_node)).or_default() += px.payload as u64;
            }
        }
        if same_node {
            // intra-node traffic (hosts mode): straight to the destination's host downlink
            self.acct.packet_hops += 1;
            self.push(t_arr, Ev::HostArrive(pid));
            return Ok(());
        }
        match act {
            Err(_) if hold_src => {
                // no route yet: held at the node (a host's packet crosses its link first)
                self.hold.bytes[node as usize] += wire;
                if self.mode.hosts {
                    self.acct.packet_hops += 1;
                    self.pool.x[pid as usize].q_port = HOLD_PORT;
                    self.push(t_arr, Ev::HostArrive(pid));
                } else {
                    self.hold_push(node, pid);
                }
            }
            Err(why) => self.drop_pkt(pid, why.reason()),
            Ok(a) if self.fail.n_down > 0 && self.fail.down[a.port as usize] => self.drop_pkt(pid, DROP_FAILED),
            Ok(a) => {
                let served = self.net.ports[a.port as usize].served;
                if self.mode.hosts {
                    if !served {
                        self.net.ports[a.port as usize].bytes += wire;
                    }
                    self.acct.packet_hops += 1;
                    let g = self.rc.port_gen[a.port as usize];
                    let px = &mut self.pool.x[pid as usize];
                    px.q_port = a.port;
                    px.q_dep = a.dep;
                    px.q_gen = g;
                    self.push(t_arr, Ev::HostArrive(pid));
                } else if served {
                    self.served_push(a.port, pid);
                } else {
                    self.net.ports[a.port as usize].bytes += wire;
                    self.enqueue_reserved(a.port, pid, a.dep, preplan);
                }
            }
        }
        Ok(())
    }
}
