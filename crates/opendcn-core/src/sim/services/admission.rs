//! Admission control: a packet whose chosen arrival slice has no room takes the routing
//! decision of a later slice.

use crate::sim::*;

impl Sim {
    /// Admission control: does the calendar queue of action `a` have room for packet
    /// `pid` in the next occurrence of its departure slice (bandwidth × the up-time left
    /// in it, after what is queued there)? Only calendar queues are checked: a wildcard
    /// departure, a static or electrical port always admits.
    /// Admission control found the calendar queue of `pid`'s decision `a` full: the
    /// congestion OpenOptics detects ("packets are deferred to later time slices when the
    /// primary queue is full", App. B). Counted with congestion detection on; with push-back
    /// on, the packet's source is told, as for a packet that fills its queue (§5.2).
    pub(in crate::sim) fn adm_congested(&mut self, a: Action, pid: u32) {
        if !self.services.congestion_detection {
            return;
        }
        self.pb.congestion_events += 1;
        if self.services.pushback {
            let cur = self.clock.slice();
            let first = self.sched.next_occurrence(cur, a.dep);
            self.send_pushback(a.port, pid, a.dep, first);
        }
    }

    pub(in crate::sim) fn adm_fits(&mut self, a: Action, pid: u32) -> bool {
        let pt = &self.net.ports[a.port as usize];
        if a.dep == WILD || pt.kind != PortKind::Optical || pt.served || self.sched.is_static() {
            return true;
        }
        let ser = pt.rate.tx(self.pool.pkt[pid as usize].wire as u64);
        let cur = self.clock.slice();
        let first = self.sched.next_occurrence(cur, a.dep);
        matches!(self.plan_slotted(a.port, a.dep, ser, cur, false), Some((_, abs, _, _)) if abs == first)
    }

    /// Admission control at `node` for packet `pid` whose routing decision for its arrival
    /// slice has no room: the decisions for the following arrival slices, in order (at
    /// most a cycle), until one's calendar queue admits it; None when none does.
    pub(in crate::sim) fn adm_later(&mut self, node: u32, pid: u32, sent: Option<u64>) -> Option<Action> {
        let n = self.sched.slices();
        let tag = self.pool.pkt[pid as usize].tag;
        // UCMP: a deferred packet's class is chosen again for each later slice, within the
        // hops the bound leaves (as for a packet late for its slice), so a relay can defer it
        // onto a longer path as HOHO does
        let before = matches!(self.rt.router, Router::Ucmp(..)).then_some((NONE, 0));
        let mut out = None;
        for k in 1..n {
            self.pool.pkt[pid as usize].tag = (tag % n + k) % n;
            if let Some((r, pos)) = before {
                let p = &mut self.pool.pkt[pid as usize];
                p.route = r;
                p.pos = pos;
            }
            if let Ok(a) = self.route_sent(node, pid, sent) {
                if self.adm_fits(a, pid) {
                    out = Some(a);
                    break;
                }
            }
        }
        self.pool.pkt[pid as usize].tag = tag;
        if out.is_some() {
            self.acct.adm_deferred += 1;
        }
        out
    }
}
