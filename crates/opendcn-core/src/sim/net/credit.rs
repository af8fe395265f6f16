//! Credit-based (lossless) flow control: credit returned to the upstream port, ports
//! blocked waiting for it, and the deadlock watchdog.

use crate::sim::*;

/// Credit-based flow control: blocked ports and the deadlock watchdog.
pub(in crate::sim) struct Credit {
    /// Credit networks: ports waiting for credit, the pending watchdog time, and the
    /// cycle of ports of a detected deadlock (the run stops there).
    /// (`blocked` lists every port waiting for credit, and may still list ports that have
    /// sent since: the watchdog drops those; `blocked_listed` says which ports it lists.)
    pub(in crate::sim) blocked: Vec<u32>,
    pub(in crate::sim) blocked_listed: Vec<bool>,
    pub(in crate::sim) watchdog_at: Ps,
    pub(in crate::sim) deadlock: Option<Vec<u32>>,
    pub(in crate::sim) on: bool,
    /// Credit networks with a routing-chosen virtual-channel rule: each port's VC class
    /// (empty: channels by hop count; see `TransportParams::credit_vc_step`).
    pub(in crate::sim) port_vc: Vec<u8>,
}

impl Sim {
    /// Give the credit a packet holds back to its upstream port (after the propagation).
    pub(in crate::sim) fn return_credit(&mut self, pid: u32) {
        let p = &mut self.pool.pkt[pid as usize];
        if p.cred_port == NONE {
            return;
        }
        let (up, vc, wire) = (p.cred_port, p.cred_vc, p.wire);
        p.cred_port = NONE;
        let pt = &mut self.net.ports[up as usize];
        let t = self.clock.now + pt.prop;
        pt.cred_ret.push_back((t, vc, wire));
        if pt.blocked_since != Ps::MAX && pt.cred_wake == Ps::MAX {
            pt.cred_wake = t;
            self.push(t, Ev::Credit(up));
        }
    }

    /// A port waiting for credit wakes when a return reaches it.
    pub(in crate::sim) fn on_credit(&mut self, port: u32) {
        let now = self.clock.now;
        let pt = &mut self.net.ports[port as usize];
        pt.cred_wake = Ps::MAX;
        if !pt.free_pending && pt.busy_until <= now && pt.bytes > 0 {
            self.start_tx(port);
        }
    }

    /// A credit port with packets queued cannot send: remember since when, and make sure
    /// the watchdog will look.
    pub(in crate::sim) fn block(&mut self, port: u32) {
        let now = self.clock.now;
        let pt = &mut self.net.ports[port as usize];
        if pt.cred_wake == Ps::MAX {
            if let Some(&(t, _, _)) = pt.cred_ret.front() {
                pt.cred_wake = t;
                self.push(t, Ev::Credit(port));
            }
        }
        let pt = &mut self.net.ports[port as usize];
        if pt.blocked_since == Ps::MAX {
            pt.blocked_since = now;
            if !self.credit.blocked_listed[port as usize] {
                self.credit.blocked_listed[port as usize] = true;
                self.credit.blocked.push(port);
            }
        }
        if self.credit.watchdog_at == Ps::MAX {
            self.credit.watchdog_at = now + self.tg.params.deadlock_timeout_ps;
            let t = self.credit.watchdog_at;
            self.push(t, Ev::Watchdog);
        }
    }

    /// Look for a cycle of ports each waiting for credit that only packets queued at the
    /// next port of the cycle can give back: a deadlock, after which nothing moves.
    pub(in crate::sim) fn on_watchdog(&mut self) {
        self.credit.watchdog_at = Ps::MAX;
        let now = self.clock.now;
        let timeout = self.tg.params.deadlock_timeout_ps;
        // the ports still waiting, in port order
        let (ports, listed) = (&self.net.ports, &mut self.credit.blocked_listed);
        self.credit.blocked.retain(|&p| {
            let waiting = ports[p as usize].blocked_since != Ps::MAX;
            listed[p as usize] = waiting;
            waiting
        });
        self.credit.blocked.sort_unstable();
        let stuck: Vec<u32> = self.credit.blocked.iter().copied()
            .filter(|&p| self.net.ports[p as usize].blocked_since.saturating_add(timeout) <= now).collect();
        let stuck_set: std::collections::BTreeSet<u32> = stuck.iter().copied().collect();
        // edges: port P waits for credit held by packets queued at ports R of P's next node
        let mut edges: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &p in &stuck {
            let pt = &self.net.ports[p as usize];
            let rx = if pt.kind == PortKind::Optical { self.sched.peer(p, 0) } else { pt.peer };
            if rx == NONE || pt.kind == PortKind::HostDown {
                continue;
            }
            let node = self.net.port_node[rx as usize] as usize;
            for r in self.net.port_offset[node]..self.net.port_offset[node + 1] {
                if !stuck_set.contains(&r) {
                    continue;
                }
                let holds = self.net.ports[r as usize].classes.iter().flatten().any(|&q| self.pool.pkt[q as usize].cred_port == p);
                if holds {
                    edges.entry(p).or_default().push(r);
                }
            }
        }
        let found = wait_cycle(&stuck, &edges);
        if found.is_some() {
            self.credit.deadlock = found;
            return;
        }
        // Look again when the next blocked port has waited the timeout, and at least every
        // timeout while ports stay stuck without a cycle (a long congestion, not a deadlock:
        // checking it again at every picosecond would stall the run); never sooner than half
        // the timeout, so that ports crossing one by one are checked in batches (a deadlock
        // is reported at most 1.5 timeouts after its last port blocked).
        if !self.credit.blocked.is_empty() {
            let next_cross = self.credit.blocked.iter().map(|&p| self.net.ports[p as usize].blocked_since.saturating_add(timeout))
                .filter(|&t| t > now).min().unwrap_or(Ps::MAX);
            self.credit.watchdog_at = next_cross.min(now + timeout).max(now + (timeout / 2).max(1));
            let t = self.credit.watchdog_at;
            self.push(t, Ev::Watchdog);
        }
    }
}

/// A cycle in the wait-for graph of blocked ports (`edges[p]`: the ports whose queued
/// packets hold the credit `p` waits for), searched depth first from the ports of `stuck`
/// in their order: the first cycle found, as the ports along it, or `None`.
pub(in crate::sim) fn wait_cycle(stuck: &[u32], edges: &BTreeMap<u32, Vec<u32>>) -> Option<Vec<u32>> {
    let mut state: BTreeMap<u32, u8> = BTreeMap::new();
    let mut found = None;
    for &start in stuck {
        if found.is_some() || state.contains_key(&start) {
            continue;
        }
        let mut stack: Vec<(u32, usize)> = vec![(start, 0)];
        let mut path: Vec<u32> = vec![start];
        state.insert(start, 1);
        while let Some(&mut (u, ref mut i)) = stack.last_mut() {
            let next = edges.get(&u).and_then(|v| v.get(*i)).copied();
            *i += 1;
            match next {
                Some(w) => match state.get(&w) {
                    Some(1) => {
                        let at = path.iter().position(|&x| x == w).expect("on the path");
                        found = Some(path[at..].to_vec());
                        break;
                    }
                    Some(_) => {}
                    None => {
                        state.insert(w, 1);
                        stack.push((w, 0));
                        path.push(w);
                    }
                },
                None => {
                    state.insert(u, 2);
                    stack.pop();
                    path.pop();
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(e: &[(u32, u32)]) -> BTreeMap<u32, Vec<u32>> {
        let mut g: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &(a, b) in e {
            g.entry(a).or_default().push(b);
        }
        g
    }

    #[test]
    fn a_cycle_of_ports_waiting_on_each_other_is_a_deadlock() {
        // 1 -> 2 -> 3 -> 1, with 0 waiting on the cycle from outside
        let g = graph(&[(0, 1), (1, 2), (2, 3), (3, 1)]);
        assert_eq!(wait_cycle(&[0, 1, 2, 3], &g), Some(vec![1, 2, 3]));
        assert_eq!(wait_cycle(&[5], &graph(&[(5, 5)])), Some(vec![5]), "a port waiting on itself");
    }

    #[test]
    fn chains_and_trees_of_waiting_ports_are_not() {
        let g = graph(&[(0, 1), (1, 2), (0, 2), (3, 2)]);
        assert_eq!(wait_cycle(&[0, 1, 2, 3], &g), None);
        assert_eq!(wait_cycle(&[], &g), None);
    }
}
