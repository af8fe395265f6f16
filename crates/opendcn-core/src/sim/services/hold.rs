//! Holding packets that have no route yet (`SimSpec::hold_unrouted`): per-node holds,
//! their release when tables or circuits change, and endpoints waiting for room in a hold.

use crate::sim::*;

/// Packets held without a route.
pub(in crate::sim) struct Hold {
    /// Holding packets that have no route yet (`SimSpec::hold_unrouted`): per node, per
    /// destination node, the held packets in arrival order; per node the wire bytes held
    /// (or reserved by a packet on its host link towards the hold) and the hold's
    /// capacity; endpoints refused by a full hold (woken when it drains); the pending
    /// release time (`Ps::MAX`: none) and the counters.
    pub(in crate::sim) on: bool,
    pub(in crate::sim) queues: Vec<BTreeMap<u32, VecDeque<u32>>>,
    pub(in crate::sim) bytes: Vec<u64>,
    pub(in crate::sim) cap: Vec<u64>,
    pub(in crate::sim) waiters: Vec<Vec<u32>>,
    pub(in crate::sim) release_at: Ps,
    pub(in crate::sim) stats: HoldStats,
    pub(in crate::sim) peak_node: Vec<u64>,
}

impl Sim {
    /// Append `pid` to its destination's hold at `node` (its bytes are already counted in
    /// `hold_bytes`). A packet keeps the link credit it holds: it occupies this node's
    /// buffer.
    pub(in crate::sim) fn hold_push(&mut self, node: u32, pid: u32) {
        let p = &mut self.pool.pkt[pid as usize];
        p.at = node;
        p.to_host = false;
        let (dst, wire) = (p.dst_node, p.wire as u64);
        self.hold.queues[node as usize].entry(dst).or_default().push_back(pid);
        let h = &mut self.hold.stats;
        h.packets += 1;
        h.bytes += wire;
        h.total += 1;
        h.peak_packets = h.peak_packets.max(h.packets);
        h.peak_bytes = h.peak_bytes.max(h.bytes);
        let pk = &mut self.hold.peak_node[node as usize];
        *pk = (*pk).max(self.hold.bytes[node as usize]);
        if self.rc.draining != NONE {
            self.check_drain();
        }
    }

    /// The arrival slice of a packet that arrives now (read ahead by the look-ahead).
    #[inline]
    pub(in crate::sim) fn arrival_slice_now(&self) -> u32 {
        if self.mode.lookahead > 0 {
            self.sched.slice_at(self.clock.now + self.mode.lookahead).idx
        } else {
            self.clock.slice().idx
        }
    }

    /// A source's packet bound for the hold reached its ToR over the host link: routed on
    /// if the tables gave it a route meanwhile (and its port has room), else held.
    pub(in crate::sim) fn hold_arrive(&mut self, node: u32, pid: u32) {
        let wire = self.pool.pkt[pid as usize].wire as u64;
        self.pool.pkt[pid as usize].tag = self.arrival_slice_now();
        if let Ok(a) = self.route(node, pid) {
            match self.room(a.port, pid) {
                Ok(()) => {
                    self.hold.bytes[node as usize] -= wire;
                    self.wake_hold_waiters(node);
                    self.enqueue(a.port, pid, a.dep);
                    return;
                }
                Err(t) => self.schedule_release(t),
            }
        }
        self.hold_push(node, pid);
    }

    /// Try the held packets again at the next event time `t` (one pending release).
    pub(in crate::sim) fn schedule_release(&mut self, t: Ps) {
        let t = t.max(self.clock.now);
        if t < self.hold.release_at {
            self.hold.release_at = t;
            self.push(t, Ev::Release);
        }
    }

    pub(in crate::sim) fn on_release(&mut self) {
        if self.hold.release_at != self.clock.now {
            return; // superseded by an earlier release
        }
        self.hold.release_at = Ps::MAX;
        let now = self.clock.now;
        if self.rc.pending.iter().any(|r| r.3 == now && !r.0.is_empty()) {
            return; // a reconfiguration due now tries them once its circuits are set
        }
        self.release_held();
    }

    /// Route every held packet again, node by node and destination by destination, in
    /// arrival order. A packet with a route leaves the hold for its port; one whose port
    /// has no room stays, with the packets behind it for the same destination (first in,
    /// first out), and is tried again when the port may have room; one without a route
    /// stays.
    pub(in crate::sim) fn release_held(&mut self) {
        if self.hold.stats.packets == 0 {
            return;
        }
        let tag = self.clock.slice().idx;
        let mut wake = Ps::MAX;
        for node in 0..self.hold.queues.len() as u32 {
            if self.hold.queues[node as usize].is_empty() {
                continue;
            }
            let held = std::mem::take(&mut self.hold.queues[node as usize]);
            let mut keep: BTreeMap<u32, VecDeque<u32>> = BTreeMap::new();
            let mut freed = false;
            for (dst, q) in held {
                let mut rest = VecDeque::new();
                let mut blocked = false;
                for pid in q {
                    if blocked {
                        rest.push_back(pid);
                        continue;
                    }
                    self.pool.pkt[pid as usize].tag = tag;
                    let Ok(a) = self.route(node, pid) else {
                        rest.push_back(pid);
                        continue;
                    };
                    if let Err(t) = self.room(a.port, pid) {
                        wake = wake.min(t);
                        blocked = true;
                        rest.push_back(pid);
                        continue;
                    }
                    let wire = self.pool.pkt[pid as usize].wire as u64;
                    self.hold.bytes[node as usize] -= wire;
                    self.hold.stats.packets -= 1;
                    self.hold.stats.bytes -= wire;
                    self.hold.stats.released += 1;
                    freed = true;
                    self.enqueue(a.port, pid, a.dep);
                }
                if !rest.is_empty() {
                    keep.insert(dst, rest);
                }
            }
            // packets held at this node meanwhile (a bounce) queue behind the older ones
            let newer = std::mem::replace(&mut self.hold.queues[node as usize], keep);
            for (d, q) in newer {
                self.hold.queues[node as usize].entry(d).or_default().extend(q);
            }
            if freed {
                self.wake_hold_waiters(node);
            }
        }
        if wake != Ps::MAX && self.hold.stats.packets > 0 {
            self.schedule_release(wake);
        }
    }

    /// The hold of `node` has room again: endpoints it refused try again now.
    pub(in crate::sim) fn wake_hold_waiters(&mut self, node: u32) {
        if self.hold.waiters[node as usize].is_empty() {
            return;
        }
        for e in std::mem::take(&mut self.hold.waiters[node as usize]) {
            self.wake_endpoint(e);
        }
    }
}
