//! One packet-hop: a packet arrives at a node, is routed, and is queued and planned at its
//! egress port (the general path, and the one-pass path of a relayed packet onto a calendar
//! port), then launched towards the next node.

use crate::sim::*;

impl Sim {
    /// Enqueue a packet arriving from a link; drops it if the port's buffer is full.
    pub(in crate::sim) fn enqueue(&mut self, port: u32, pid: u32, dep: u32) {
        if self.fail.n_down > 0 && self.fail.down[port as usize] {
            // a way that bypasses the router (RotorLB's rotor) leads into a failed link
            self.drop_pkt(pid, DROP_FAILED);
            return;
        }
        if self.net.ports[port as usize].served {
            self.served_enqueue(port, pid);
            return;
        }
        let wire = self.pool.pkt[pid as usize].wire as u64;
        self.release_for(port, wire);
        let pt = &mut self.net.ports[port as usize];
        if pt.bytes + wire > pt.cap {
            if self.services.pushback && pt.kind == PortKind::Optical && dep != WILD && !self.sched.is_static() {
                // OpenOptics §5.2: a packet that its calendar queue rejects triggers a
                // push-back (the queue is full beyond its slice: its port's buffer is)
                let cur = self.clock.slice();
                let first = self.sched.next_occurrence(cur, dep);
                self.pb.congestion_events += 1;
                self.send_pushback(port, pid, dep, first);
            }
            self.drop_pkt(pid, DROP_BUFFER);
            self.droplog.at_port(port, dep);
            return;
        }
        pt.bytes += wire;
        if self.services.congestion_detection && pt.kind == PortKind::Optical && dep != WILD && !self.sched.is_static() {
            // congestion: the calendar queue of `dep` has no room left in its first
            // occurrence (bandwidth x remaining time of the slice)
            let cur = self.clock.slice();
            let first = self.sched.next_occurrence(cur, dep);
            let ser = self.net.ports[port as usize].rate.tx(wire);
            let full = if self.eqo.enabled() {
                self.eqo_full(port, dep, wire, cur)
            } else {
                matches!(self.plan_slotted(port, dep, ser, cur, false), Some((_, abs, _, _)) if abs > first)
            };
            if full {
                self.pb.congestion_events += 1;
                if self.services.pushback {
                    self.send_pushback(port, pid, dep, first);
                }
            }
        }
        self.enqueue_reserved(port, pid, dep, None);
    }

    /// Queue a planned transmission in calendar queue `q` (an index into `cal`) of `port`
    /// and send its packet on: the queue's bytes and plan grow (a queue that was empty
    /// enters the port's heap of queue heads when `heads`), the packet leaves for its next
    /// node and its arrival is scheduled; every [`LAZY_RELEASE`] plans of the queue, the
    /// port releases what has departed.
    #[inline(always)]
    pub(in crate::sim) fn launch(&mut self, port: u32, pid: u32, q: u32, heads: bool, l: Launch) {
        let pt = &mut self.net.ports[port as usize];
        let batch = if heads && self.mode.flat_cal {
            pt.next_dep = pt.next_dep.min(l.d);
            pt.departs.push((l.d, l.wire as u32, pid))
        } else {
            let cq = &mut self.net.cal[q as usize];
            cq.bytes += l.wire;
            if cq.planned.is_empty() {
                if heads {
                    pt.heads.push(std::cmp::Reverse((l.d, q - pt.cal)));
                }
                pt.next_dep = pt.next_dep.min(l.d);
            }
            cq.planned.push_back((l.d, l.wire as u32, pid));
            cq.lazy += 1;
            let batch = cq.lazy >= LAZY_RELEASE;
            if batch {
                cq.lazy = 0;
            }
            batch
        };
        let arrive = l.d + l.ser + pt.prop;
        let cls = self.net.port_class[port as usize];
        let p = &mut self.pool.pkt[pid as usize];
        p.tag = l.tag;
        p.at = l.at;
        p.rx = l.rx;
        p.from = port;
        p.sent_abs = l.abs as u32;
        p.to_host = l.to_host;
        p.hops += 1;
        if cls < 3 {
            p.classes |= 1 << cls;
        }
        let epoch = p.epoch;
        self.acct.packet_hops += 1;
        self.push(arrive, Ev::Arrive(pid, epoch));
        if batch {
            self.release_departed(port);
        }
    }

    pub(in crate::sim) fn on_arrive(&mut self, pid: u32, epoch: u16) {
        let p = self.pool.pkt[pid as usize];
        if p.epoch != epoch {
            return; // a cancelled plan (re-planned after a reconfiguration)
        }
        if p.doomed {
            self.drop_pkt(pid, DROP_RECONF);
            return;
        }
        if !self.tg.loss.is_empty() && p.kind == K_DATA && self.tg.loss.remove(&(p.flow, self.pool.x[pid as usize].seq)) {
            self.drop_pkt(pid, DROP_INJECTED);
            return;
        }
        if p.rx != NONE {
            // two different senders into one receiving port in one slice is a collision
            let r = &mut self.net.rx_last[p.rx as usize];
            if r.0 == p.sent_abs && r.1 != p.from && r.1 != NONE {
                self.acct.collisions += 1;
            }
            *r = (p.sent_abs, p.from);
        }
        if p.to_host {
            if self.offload.enabled() && self.offload.held.contains_key(&pid) {
                self.on_offload_at_host(pid);
            } else {
                self.deliver(pid);
            }
            return;
        }
        if p.kind == K_MSG {
            self.msg_arrive(pid);
            return;
        }
        if p.at == p.dst_node {
            if self.msg.rx_min != NONE && p.wire > self.msg.rx_min && p.kind == K_DATA {
                self.count_rx(pid);
            }
            if self.mode.hosts {
                let dp = self.eps[self.pool.x[pid as usize].dst_ep as usize].down_port;
                self.enqueue(dp, pid, WILD);
            } else {
                self.deliver(pid);
            }
            return;
        }
        if self.mode.hop_limit > 0 && p.hops as u32 >= self.mode.hop_limit {
            // a relay that would send it on past the limit: a routing loop
            self.drop_pkt(pid, DROP_LOOP);
            return;
        }
        if self.mode.lean && self.relay_calendar(pid, p.at, p.src_node, p.dst_node, p.tag, p.wire as u64) {
            return;
        }
        match self.route(p.at, pid) {
            Ok(a) if self.mode.adm && !self.adm_fits(a, pid) => {
                self.adm_congested(a, pid);
                match self.adm_later(p.at, pid, None) {
                    Some(b) => self.enqueue(b.port, pid, b.dep),
                    None => self.drop_pkt(pid, DROP_ADM),
                }
            }
            Ok(a) => self.enqueue(a.port, pid, a.dep),
            Err(why) => self.no_route(p.at, pid, why),
        }
    }

    /// The hop of a packet relayed at `node` under VLB or direct routing onto a calendar
    /// port (a slotted optical port without ECN), when no option acts on it (`lean`) and no
    /// link is down: what [`Sim::route`], [`Sim::enqueue`] and [`Sim::enqueue_reserved`]
    /// do, in one pass, with the same result. False: another case, and nothing changed
    /// (the general path takes it).
    #[inline]
    pub(in crate::sim) fn relay_calendar(&mut self, pid: u32, node: u32, src: u32, dst: u32, tag: u32, wire: u64) -> bool {
        if self.fail.n_down > 0 {
            return false;
        }
        let a = match &self.rt.router {
            Router::Direct(ci) => ci.first_direct(node, dst, tag),
            Router::Vlb(ci) if src != node => ci.first_direct(node, dst, tag),
            _ => return false,
        };
        let Some(Action { port, dep }) = a else { return false };
        let pt = &self.net.ports[port as usize];
        if pt.served || pt.kind != PortKind::Optical || dep == WILD || pt.cal == NONE || (self.mode.any_ecn && pt.ecn_k > 0) {
            return false;
        }
        if pt.bytes + wire > pt.cap {
            self.release_departed(port);
            if self.net.ports[port as usize].bytes + wire > self.net.ports[port as usize].cap {
                self.drop_pkt(pid, DROP_BUFFER);
                self.droplog.at_port(port, dep);
                return true;
            }
        }
        let pt = &self.net.ports[port as usize];
        let (ser, base) = (pt.rate.tx(wire), pt.cal as usize);
        let cur = self.clock.slice();
        // no departure: the general path drops it and says why
        let Some(plan) = self.find_slot(port, base, dep, ser, cur) else { return false };
        self.net.ports[port as usize].bytes += wire;
        self.send_slot(port, pid, base, plan, ser, wire);
        true
    }

    /// Send packet `pid` (its `wire` bytes already counted at `port`) on slot plan `plan`
    /// of the calendar port whose queues start at `base`, serialized in `ser`: the
    /// guardband check, the queue's new tail, and [`Sim::launch`].
    #[inline(always)]
    pub(in crate::sim) fn send_slot(&mut self, port: u32, pid: u32, base: usize, plan: SlotPlan, ser: Ps, wire: u64) {
        let (d, abs, idx, rx) = plan;
        self.check_guard(port, d, ser, abs, idx, true);
        self.commit_slot(base, plan, ser);
        let at = self.net.port_node[rx as usize];
        self.launch(port, pid, (base + idx as usize) as u32, true, Launch { d, ser, wire, abs, tag: idx, at, rx, to_host: false });
    }

    /// Can `port` take packet `pid` now? `Err(t)`: not before `t`.
    pub(in crate::sim) fn room(&mut self, port: u32, pid: u32) -> Result<(), Ps> {
        let wire = self.pool.pkt[pid as usize].wire as u64;
        let now = self.clock.now;
        if self.net.ports[port as usize].served {
            if self.credit.on {
                return Ok(()); // lossless: the packet already holds its place (link credit)
            }
            if self.net.shared_on {
                self.shared_refresh(port);
            }
            let k = self.net.ports[port as usize].classes.len();
            let c = self.class_of(pid, port, k);
            let pt = &self.net.ports[port as usize];
            if pt.bytes + wire <= pt.cap && pt.class_bytes[c] + wire <= pt.class_cap[c] {
                return Ok(());
            }
            return Err(if pt.busy_until > now { pt.busy_until } else { now + pt.rate.tx(wire) });
        }
        self.release_for(port, wire);
        let pt = &self.net.ports[port as usize];
        if pt.bytes + wire <= pt.cap { Ok(()) } else { Err(pt_wake(pt, now + pt.rate.tx(wire))) }
    }
}
