//! OpenOptics services on calendar queues: queue-occupancy estimation (EQO) and buffer
//! offloading of packets to the hosts below a ToR.

use crate::sim::*;

impl Sim {
    /// Bandwidth × EQO interval of `port`, in bytes.
    pub(in crate::sim) fn eqo_bytes_per_tick(&self, port: u32) -> u64 {
        (self.net.ports[port as usize].rate.bps as u128 * self.services.eqo_interval_ps as u128 / 8_000_000_000_000) as u64
    }

    /// EQO congestion test: is calendar queue `dep` of `port` full for a packet of `wire`
    /// bytes? Full = estimate + wire > admissible bytes (bandwidth × remaining up-time of
    /// the active slice, or × the up-time of the next occurrence for another queue). The
    /// estimate is compared with the exact occupancy for the error statistics.
    pub(in crate::sim) fn eqo_full(&mut self, port: u32, dep: u32, wire: u64, cur: SliceRef) -> bool {
        let bpt = self.eqo_bytes_per_tick(port);
        let est = self.eqo.read(&self.sched, port, dep, bpt, self.clock.now);
        self.release_departed(port);
        let base = self.net.ports[port as usize].cal;
        let exact = if base == NONE { 0 } else { self.net.cal.get((base + dep) as usize).map_or(0, |q| q.bytes) };
        self.eqo.record(est, exact);
        let s = self.sched.slice(self.sched.next_occurrence(cur, dep));
        let up_from = (s.start + self.sched.guard_of(port, s.idx)).max(self.clock.now);
        let window = s.end.saturating_sub(up_from);
        let admissible = (self.net.ports[port as usize].rate.bps as u128 * window as u128 / 8_000_000_000_000) as u64;
        est + wire > admissible
    }

    /// Send a packet planned for absolute slice `abs` (beyond the window) down to a host
    /// below its ToR; false if no host can take it (it then stays in the ToR).
    pub(in crate::sim) fn offload_pkt(&mut self, port: u32, pid: u32, dep: u32, abs: u64) -> bool {
        let node = self.net.port_node[port as usize];
        let Some(h) = self.offload.pick_host(node) else { return false };
        let dp = self.eps[h as usize].down_port;
        let wire = self.pool.pkt[pid as usize].wire as u64;
        self.release_departed(dp);
        if self.net.shared_on {
            self.shared_refresh(dp);
        }
        if self.net.ports[dp as usize].bytes + wire > self.net.ports[dp as usize].cap {
            return false;
        }
        self.net.ports[port as usize].bytes -= wire;
        let hops = self.pool.pkt[pid as usize].hops;
        self.offload.hold(pid, crate::services::Held { port, dep, abs, hops }, wire);
        self.net.ports[dp as usize].bytes += wire;
        self.enqueue_reserved(dp, pid, WILD, None);
        true
    }

    /// An offloaded packet reached its host: it goes back up so that it reaches the ToR
    /// when its departure slice enters the window.
    pub(in crate::sim) fn on_offload_at_host(&mut self, pid: u32) {
        let h = self.pool.pkt[pid as usize].at;
        let held = self.offload.held[&pid];
        let ep = &self.eps[h as usize];
        let wire = self.pool.pkt[pid as usize].wire as u64;
        let up = ep.rate.tx(wire) + ep.prop;
        let back_at = self.sched.slice(held.abs + 1 - self.offload.queues as u64).start;
        let t = back_at.saturating_sub(up).max(self.clock.now);
        self.push(t, Ev::OffloadSend(pid));
    }

    /// The host sends an offloaded packet up (its uplink is shared with its own traffic).
    pub(in crate::sim) fn on_offload_send(&mut self, pid: u32) {
        let h = self.pool.pkt[pid as usize].at;
        let wire = self.pool.pkt[pid as usize].wire as u64;
        let ep = &mut self.eps[h as usize];
        let t = self.clock.now.max(ep.busy_until);
        let ser = ep.rate.tx(wire);
        ep.busy_until = t + ser;
        let arrive = t + ser + ep.prop;
        self.acct.packet_hops += 1;
        let epoch = self.pool.pkt[pid as usize].epoch;
        self.push(arrive, Ev::OffloadReturn(pid, epoch));
    }

    /// An offloaded packet is back at its ToR: it joins its calendar queue (or goes down
    /// again if that occurrence filled up meanwhile).
    pub(in crate::sim) fn on_offload_return(&mut self, pid: u32) {
        let wire = self.pool.pkt[pid as usize].wire as u64;
        let held = self.offload.back(pid, wire).expect("offloaded packet is tracked");
        let p = &mut self.pool.pkt[pid as usize];
        p.hops = held.hops;
        p.to_host = false;
        p.at = self.net.port_node[held.port as usize];
        self.enqueue(held.port, pid, held.dep);
    }
}
