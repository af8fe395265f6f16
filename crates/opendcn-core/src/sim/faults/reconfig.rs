//! Runtime reconfiguration: new circuits or tables taking effect (at once, or drained:
//! after the network empties), packets queued on changed circuits planned again or dropped.

use crate::sim::*;

/// Runtime reconfigurations and drains.
pub(in crate::sim) struct Reconfigs {
    /// Pending reconfigurations: new peer table, delay, drop what is queued on changed ports.
    pub(in crate::sim) pending: Vec<(Vec<u32>, Ps, bool, Ps)>,
    pub(in crate::sim) applied: u64,
    /// Per global port: how many reconfigurations changed its circuit (wrapping).
    pub(in crate::sim) port_gen: Vec<u16>,
    /// Drained reconfigurations (`reconfigure(.., drain)`): per reconfiguration whether it
    /// drains, the tables that take effect at its switch, and its state (0 requested, 1
    /// draining, 2 switched); the one draining (NONE: none) and those waiting for it; a
    /// switch event pending; packets admitted into the network and not yet gone;
    /// endpoints refused during a drain; injections refused; per applied drained
    /// reconfiguration (requested, switched, circuits up) times.
    pub(in crate::sim) drain: Vec<bool>,
    pub(in crate::sim) tables: Vec<Option<Vec<crate::timeflow::NodeTable>>>,
    pub(in crate::sim) state: Vec<u8>,
    pub(in crate::sim) draining: u32,
    pub(in crate::sim) drain_queue: VecDeque<u32>,
    pub(in crate::sim) switch_pending: bool,
    pub(in crate::sim) in_net: u64,
    pub(in crate::sim) drain_waiters: Vec<u32>,
    pub(in crate::sim) drain_refused: u64,
    pub(in crate::sim) switch_log: Vec<(Ps, Ps, Ps)>,
}

impl Reconfigs {
    pub(in crate::sim) fn new(n_ports: usize) -> Self {
        Reconfigs { pending: Vec::new(), applied: 0, port_gen: vec![0; n_ports], drain: Vec::new(), tables: Vec::new(),
                    state: Vec::new(), draining: NONE, drain_queue: VecDeque::new(), switch_pending: false, in_net: 0,
                    drain_waiters: Vec::new(), drain_refused: 0, switch_log: Vec::new() }
    }

    /// Drained reconfiguration `i` is due: it starts draining now (true), or waits for the
    /// one draining (false), in the order they fell due.
    pub(in crate::sim) fn due(&mut self, i: u32) -> bool {
        if self.draining != NONE {
            self.drain_queue.push_back(i);
            return false;
        }
        self.begin(i);
        true
    }

    pub(in crate::sim) fn begin(&mut self, i: u32) {
        self.draining = i;
        self.state[i as usize] = 1;
    }

    /// The network holds nothing but the `held` packets waiting for a route: the one
    /// draining may switch now (once: `Some(it)` until it has switched).
    pub(in crate::sim) fn ready(&mut self, held: u64) -> Option<u32> {
        if self.draining != NONE && !self.switch_pending && self.in_net == held {
            self.switch_pending = true;
            return Some(self.draining);
        }
        None
    }

    /// Reconfiguration `i` switched: none is draining until the next waiting one begins.
    pub(in crate::sim) fn switched(&mut self, i: u32) {
        self.switch_pending = false;
        self.draining = NONE;
        self.state[i as usize] = 2;
    }
}

impl Sim {
    /// Reconfigure a static schedule at time `at` (≥ now): the new peer table, with the
    /// changed circuits down for `delay` ps.
    ///
    /// Packets queued (not yet on the wire) on a changed port are routed again at their
    /// node (`drop_queued` false: routes are installed before circuits change), or dropped
    /// with reason `reconfiguration` (`drop_queued` true, as Duo's fabric does; transports
    /// recover them).
    ///
    /// `drain` (static schedules only): drain → switch → undrain. From `at` no packet
    /// enters the network (sources wait); packets already in it finish their trip under
    /// the old tables and circuits (with `drop_queued`, those queued on a changed port at
    /// `at` are dropped instead). Once none is left (packets held without a route
    /// excepted), the circuits change and the tables given by `set_tables` since the
    /// request take effect at the same instant; the changed circuits are down for `delay`,
    /// then the sources resume. Every packet is routed by one configuration's tables, and
    /// no packet is on a changed circuit when it switches.
    pub fn reconfigure_with(&mut self, at: Ps, peer: Vec<u32>, delay: Ps, drop_queued: bool, drain: bool) -> Result<(), SpecError> {
        if drain && !self.sched.is_static() {
            return Err(SpecError::new("reconfigure.drain", drain, "a drained reconfiguration needs a static schedule"));
        }
        let rows = self.sched.slices() as usize;
        if peer.len() != self.net.ports.len() * rows {
            return Err(SpecError::new("reconfigure.peer", peer.len(),
                format!("expected {rows} slices x {} ports entries (the cycle keeps its slices)", self.net.ports.len())));
        }
        let mut peer = peer;
        for (i, q) in peer.iter_mut().enumerate() {
            let gp = i % self.net.ports.len();
            if !self.net.optical[gp] {
                // as at construction: only optical ports take their peer from the schedule
                // (electrical links are static; the caller keeps them as they are)
                *q = NONE;
            } else if *q != NONE && !self.net.optical.get(*q as usize).copied().unwrap_or(false) {
                return Err(SpecError::new(format!("reconfigure.peer[{}][{gp}]", i / self.net.ports.len()), *q,
                    "circuits must join two optical ports"));
            }
        }
        // check the pairing now so a bad table fails at the call, not mid-run
        let mut probe = self.sched.clone();
        probe.reconnect(peer.clone())?;
        if let Router::Expander(sp) = &self.rt.router {
            crate::expander::SlicePaths::with_paths(&probe, &self.net.port_node, &self.net.port_offset, &self.net.optical, sp.k())?;
        }
        let mut at = at.max(self.clock.now);
        if !self.sched.is_static() {
            // a cyclic schedule changes at a slice boundary
            let s = self.sched.slice_at(at);
            if at > s.start {
                at = s.end;
            }
        }
        self.rc.pending.push((peer, delay, drop_queued, at));
        self.rc.drain.push(drain);
        self.rc.tables.push(None);
        self.rc.state.push(0);
        let i = (self.rc.pending.len() - 1) as u32;
        self.push(at, Ev::Reconfig(i));
        Ok(())
    }

    pub(in crate::sim) fn on_reconfig(&mut self, i: u32) {
        if i & SWITCH != 0 {
            self.switch(i & !SWITCH);
            return;
        }
        if i & FAIL != 0 {
            self.on_failure(i & !FAIL);
            return;
        }
        if self.rc.drain[i as usize] {
            if self.rc.due(i) {
                self.drain_started(i);
            }
            return;
        }
        self.rc.state[i as usize] = 2;
        let (peer, delay, drop_queued, _) = std::mem::take(&mut self.rc.pending[i as usize]);
        let changed = self.sched.reconnect(peer).expect("validated in reconfigure()");
        self.rc.applied += 1;
        self.rebuild_router();
        let now = self.clock.now;
        for gp in changed {
            self.rc.port_gen[gp as usize] = self.rc.port_gen[gp as usize].wrapping_add(1);
            self.release_departed(gp);
            let pt = &mut self.net.ports[gp as usize];
            pt.down_until = now + delay;
            if pt.last_end > now && pt.last_pkt != NONE {
                // being serialized while its circuit goes away
                self.pool.pkt[pt.last_pkt as usize].doomed = true;
            }
            // planned but not started: cancel and plan again on the new circuit
            let mut again: Vec<Planned> = Vec::new();
            if pt.cal != NONE {
                let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
                for cq in &mut self.net.cal[pt.cal as usize..(pt.cal + n) as usize] {
                    cq.tail = (0, 0);
                    cq.bytes = 0;
                    again.extend(cq.planned.drain(..));
                }
                again.extend(pt.departs.take_all());
            }
            pt.heads.clear();
            pt.next_dep = Ps::MAX;
            self.eqo.reset_port(gp);
            again.sort_unstable();
            pt.busy_until = 0;
            for &(_, _, pid) in &again {
                let p = &mut self.pool.pkt[pid as usize];
                p.epoch = p.epoch.wrapping_add(1);
                p.hops -= 1;
                self.acct.packet_hops -= 1;
            }
            // a served port's queued packets join them, in class order
            let pt = &mut self.net.ports[gp as usize];
            for c in 0..pt.classes.len() {
                for pid in std::mem::take(&mut pt.classes[c]) {
                    again.push((0, self.pool.pkt[pid as usize].wire, pid));
                }
                pt.class_bytes[c] = 0;
            }
            // routes are installed before circuits change (OpenOptics' TA workflow): the
            // packets that had not left are routed again at their node, or dropped
            let node = self.net.port_node[gp as usize];
            for (_, wire, pid) in again {
                self.net.ports[gp as usize].bytes -= wire as u64;
                if drop_queued {
                    self.drop_pkt(pid, DROP_RECONF);
                    continue;
                }
                if matches!(self.rt.router, Router::Source(_)) || self.msg_on_path(pid) {
                    // a source route is fixed at the source: the packet still leaves through
                    // the port its route names (queued as any packet arriving there); a node
                    // it then reaches off its route gives it a new route from there
                    self.enqueue(gp, pid, WILD);
                    continue;
                }
                self.pool.pkt[pid as usize].tag = self.arrival_slice_now();
                match self.route(node, pid) {
                    Ok(a) => self.enqueue(a.port, pid, a.dep),
                    Err(why) => self.no_route(node, pid, why),
                }
            }
        }
        // held packets may have a route now (after those re-queued from changed ports)
        self.release_held();
    }

    /// A drained reconfiguration has started: sources stop, the network empties.
    pub(in crate::sim) fn drain_started(&mut self, i: u32) {
        if self.rc.pending[i as usize].2 {
            // queued = drop: what waits on a changed port is dropped now
            let new = &self.rc.pending[i as usize].0;
            let changed: Vec<u32> = (0..self.net.ports.len() as u32)
                .filter(|&gp| self.net.optical[gp as usize] && self.sched.peer(gp, 0) != new[gp as usize]).collect();
            for gp in changed {
                self.drop_queued_on(gp);
            }
        }
        self.check_drain();
    }

    /// Drop the packets queued (planned, not started) on `gp` (reason `reconfiguration`).
    pub(in crate::sim) fn drop_queued_on(&mut self, gp: u32) {
        self.drop_queued_as(gp, DROP_RECONF);
    }

    /// Drop the packets queued (planned, not started) on `gp`, for `reason`.
    pub(in crate::sim) fn drop_queued_as(&mut self, gp: u32, reason: usize) {
        self.release_departed(gp);
        let now = self.clock.now;
        let pt = &mut self.net.ports[gp as usize];
        let mut gone: Vec<(u32, u32)> = Vec::new();
        if pt.cal != NONE {
            // every calendar queue of the port (one per slice of a cyclic schedule)
            let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
            let mut planned: Vec<Planned> = Vec::new();
            for cq in &mut self.net.cal[pt.cal as usize..(pt.cal + n) as usize] {
                cq.tail = (0, 0);
                cq.bytes = 0;
                planned.extend(cq.planned.drain(..));
            }
            planned.extend(pt.departs.take_all());
            // in the order they were to depart (the order of their drop records)
            planned.sort_unstable();
            gone.extend(planned.into_iter().map(|(_, w, pid)| (w, pid)));
            pt.heads.clear();
            pt.next_dep = Ps::MAX;
            pt.busy_until = pt.last_end.max(now);
            for &(_, pid) in &gone {
                let p = &mut self.pool.pkt[pid as usize];
                p.epoch = p.epoch.wrapping_add(1);
                p.hops -= 1;
                self.acct.packet_hops -= 1;
            }
        }
        for c in 0..pt.classes.len() {
            for pid in std::mem::take(&mut pt.classes[c]) {
                gone.push((self.pool.pkt[pid as usize].wire, pid));
            }
            pt.class_bytes[c] = 0;
        }
        for (wire, pid) in gone {
            self.net.ports[gp as usize].bytes -= wire as u64;
            self.drop_pkt(pid, reason);
        }
    }

    /// The switch of the draining reconfiguration is due once the network holds nothing
    /// but packets held without a route.
    #[cold]
    pub(in crate::sim) fn check_drain(&mut self) {
        if let Some(i) = self.rc.ready(self.hold.stats.packets) {
            self.push(self.clock.now, Ev::Reconfig(i | SWITCH));
        }
    }

    /// Switch a drained reconfiguration: new circuits and tables at once, the changed
    /// circuits down for the delay, then the sources resume (and held packets are routed
    /// with the new tables, after the delay on a changed port).
    pub(in crate::sim) fn switch(&mut self, i: u32) {
        if self.rc.in_net != self.hold.stats.packets {
            // a packet entered meanwhile (cannot happen: sources are stopped); wait again
            self.rc.switch_pending = false;
            self.check_drain();
            return;
        }
        self.rc.switched(i);
        let (peer, delay, _, at) = std::mem::take(&mut self.rc.pending[i as usize]);
        let changed = self.sched.reconnect(peer).expect("validated in reconfigure()");
        self.rc.applied += 1;
        self.rebuild_router();
        if let Some(t) = self.rc.tables[i as usize].take() {
            self.rt.router = Router::Table(t);
        }
        let now = self.clock.now;
        for gp in changed {
            self.rc.port_gen[gp as usize] = self.rc.port_gen[gp as usize].wrapping_add(1);
            self.release_departed(gp);
            let pt = &mut self.net.ports[gp as usize];
            pt.down_until = now + delay;
            pt.busy_until = pt.busy_until.max(now);
        }
        self.rc.switch_log.push((at, now, now + delay));
        self.release_held();
        for e in std::mem::take(&mut self.rc.drain_waiters) {
            self.wake_endpoint(e);
        }
        if let Some(j) = self.rc.drain_queue.pop_front() {
            self.rc.begin(j);
            self.drain_started(j);
        }
    }

    /// Rebuild a schedule-derived router after the circuits changed.
    pub(in crate::sim) fn rebuild_router(&mut self) {
        match &self.rt.router {
            Router::Vlb(_) | Router::Direct(_) => {
                let ci = ConnIndex::new(&self.sched, &self.net.port_node, &self.net.port_offset, &self.net.optical);
                self.rt.router = match self.rt.router { Router::Vlb(_) => Router::Vlb(ci), _ => Router::Direct(ci) };
            }
            Router::Hoho(_) | Router::Ucmp(..) => {
                self.rt.route_gen = self.rt.route_gen.wrapping_add(1);
                let idx = crate::earliest::EarliestIndex::new(&self.sched, &self.net.port_node, &self.net.port_offset, &self.net.optical, self.rt.max_hop);
                self.rt.router = match self.rt.router {
                    Router::Ucmp(_, a, s, r) => Router::Ucmp(idx, a, s, r),
                    _ => Router::Hoho(idx),
                };
            }
            Router::Expander(old) => {
                let k = old.k();
                let sp = crate::expander::SlicePaths::with_paths(&self.sched, &self.net.port_node, &self.net.port_offset,
                                                                 &self.net.optical, k)
                    .expect("checked in reconfigure()");
                if k > 1 {
                    // path codes name paths of the old table: routed again where they are
                    self.rt.route_gen = self.rt.route_gen.wrapping_add(1);
                }
                self.rt.router = Router::Expander(sp);
            }
            _ => {}
        }
    }

    /// Replace the table router's entries (a traffic-aware control loop installing routes).
    pub fn set_tables(&mut self, items: &[(u32, Entry)]) -> Result<(), SpecError> {
        let t = build_tables(self.net.port_offset.len() - 1, &self.net.port_offset, items)?;
        if let Some(i) = (0..self.rc.drain.len()).rev().find(|&i| self.rc.drain[i] && self.rc.state[i] < 2) {
            // a drained reconfiguration is pending: its tables take effect at its switch
            self.rc.tables[i] = Some(t);
            return Ok(());
        }
        self.rt.router = Router::Table(t);
        if self.hold.stats.packets > 0 {
            // held packets are tried with the new tables, after what is due now has run
            // (and after a reconfiguration due now, which tries them itself)
            self.schedule_release(self.clock.now);
        }
        Ok(())
    }

    // ---------------------------------------------------------------- results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drained_reconfigurations_switch_one_at_a_time_when_the_network_is_empty() {
        let mut rc = Reconfigs::new(4);
        rc.state = vec![0; 2];
        assert!(rc.due(0), "nothing draining: it starts");
        assert!(!rc.due(1), "one draining: it waits");
        assert_eq!((rc.draining, rc.state.clone(), rc.drain_queue.len()), (0, vec![1, 0], 1));
        rc.in_net = 3;
        assert_eq!(rc.ready(1), None, "two packets still in the network besides the held one");
        rc.in_net = 1;
        assert_eq!(rc.ready(1), Some(0), "only held packets left");
        assert_eq!(rc.ready(1), None, "its switch is already on its way");
        rc.switched(0);
        assert_eq!((rc.draining, rc.state[0], rc.switch_pending), (NONE, 2, false));
        let next = rc.drain_queue.pop_front().unwrap();
        rc.begin(next);
        assert_eq!((rc.draining, rc.state[1]), (1, 1));
        assert_eq!(rc.ready(1), Some(1));
    }
}
