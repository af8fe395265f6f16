//! Congestion detection and push-back: a congested port tells the source node to pause a
//! (source, destination) pair, and sources read the paused table before sending.

use crate::sim::*;

/// Congestion detection and push-back.
pub(in crate::sim) struct PushBack {
    /// Push-back: (source node << 32 | destination node) → until when that pair's new
    /// data waits (one flat table: a source's try reads one slot).
    pub(in crate::sim) paused: crate::flatmap::FlatMap,
    pub(in crate::sim) pending: Vec<(u32, u32, Ps)>,
    pub(in crate::sim) congestion_events: u64,
    pub(in crate::sim) msgs: u64,
    pub(in crate::sim) paused_attempts: u64,
    /// Push-back from served ports: (port, source node, destination node) already sent in
    /// routing slice `pb_slice`.
    pub(in crate::sim) sent: std::collections::BTreeSet<(u32, u32, u32)>,
    pub(in crate::sim) slice: u64,
}

impl PushBack {
    pub(in crate::sim) fn new() -> Self {
        PushBack { paused: crate::flatmap::FlatMap::with_capacity(16), pending: Vec::new(), congestion_events: 0, msgs: 0,
                   paused_attempts: 0, sent: std::collections::BTreeSet::new(), slice: u64::MAX }
    }

    /// A message on its way to source node `src`: pause its data to `dst` until `until`.
    /// Returns the message's index (its `Ev::PushBack`).
    pub(in crate::sim) fn post(&mut self, src: u32, dst: u32, until: Ps) -> u32 {
        self.pending.push((src, dst, until));
        self.msgs += 1;
        (self.pending.len() - 1) as u32
    }

    /// Message `i` reaches its source node: the pair waits until the latest pause asked.
    pub(in crate::sim) fn arrive(&mut self, i: u32) {
        let (src, dst, until) = self.pending[i as usize];
        self.paused.update((src as u64) << 32 | dst as u64, |old| old.max(until));
    }

    /// Until when source node `src`'s new data to `dst` waits at time `now` (`None`: it
    /// may go).
    #[inline]
    pub(in crate::sim) fn paused_until(&self, src: u32, dst: u32, now: Ps) -> Option<Ps> {
        self.paused.get((src as u64) << 32 | dst as u64).filter(|&until| until > now)
    }

    /// Whether `port` has not yet pushed back (`src`, `dst`) in routing slice `slice` (and
    /// now has): one message per port, pair and slice.
    pub(in crate::sim) fn first_in_slice(&mut self, slice: u64, port: u32, src: u32, dst: u32) -> bool {
        if slice != self.slice {
            self.sent.clear();
            self.slice = slice;
        }
        self.sent.insert((port, src, dst))
    }
}

impl Sim {
    /// Push-back from calendar queue `dep` of `port` (its first occurrence: absolute slice
    /// `first`), full for packet `pid`: a message travels back to the packet's source node,
    /// which stops sending to the packet's destination node until that slice has ended
    /// (OpenOptics §5.2: the message contains "the time slice of the queue", "preventing
    /// them from sending traffic to the destination switch during that time slice").
    pub(in crate::sim) fn send_pushback(&mut self, port: u32, pid: u32, dep: u32, first: u64) {
        let p = self.pool.pkt[pid as usize];
        let back = self.net.ports[port as usize].prop;
        let until = self.sched.slice(first).end;
        self.droplog.pushback(self.clock.now, self.clock.now + back, p.src_node, p.dst_node, until, port, dep);
        let i = self.pb.post(p.src_node, p.dst_node, until);
        self.push(self.clock.now + back, Ev::PushBack(i));
    }

    /// Push-back from a served port that trimmed a packet: one message per (port, source
    /// node, destination node) and routing slice to the source node, which holds data for
    /// that destination until the slice ends. The message is a control-plane signal that
    /// takes one propagation and header time per hop of the current path back.
    pub(in crate::sim) fn trim_pushback(&mut self, port: u32, pid: u32) {
        let p = self.pool.pkt[pid as usize];
        let node = self.net.port_node[port as usize];
        let gb = self.sched.guardband();
        let (slice, until) = if self.sched.is_static() {
            (0, Ps::MAX)
        } else {
            let s = self.sched.slice_at(self.clock.now.saturating_sub(gb));
            (s.abs, s.end + gb)
        };
        if !self.pb.first_in_slice(slice, port, p.src_node, p.dst_node) {
            return;
        }
        let hops = match &self.rt.router {
            Router::Expander(sp) => sp.hops(self.route_slice(self.clock.now), node, p.src_node).min(16) as u64,
            _ => 1,
        };
        let pt = &self.net.ports[port as usize];
        let delay = if node == p.src_node { 0 } else { hops * (pt.prop + pt.rate.tx(self.tg.params.ctrl_bytes as u64)) };
        self.droplog.pushback(self.clock.now, self.clock.now + delay, p.src_node, p.dst_node, until, port, WILD);
        let i = self.pb.post(p.src_node, p.dst_node, until);
        self.push(self.clock.now + delay, Ev::PushBack(i));
    }

    /// A push-back message arrives: its source stops sending to the destination until
    /// the time it names.
    pub(in crate::sim) fn on_pushback(&mut self, i: u32) {
        self.pb.arrive(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_waits_until_the_latest_pause_it_received() {
        let mut pb = PushBack::new();
        let a = pb.post(3, 7, 500);
        let b = pb.post(3, 7, 300);
        assert_eq!((pb.msgs, pb.paused_until(3, 7, 0)), (2, None), "nothing waits before a message arrives");
        pb.arrive(a);
        pb.arrive(b);
        assert_eq!(pb.paused_until(3, 7, 0), Some(500), "a later, shorter pause does not shorten it");
        assert_eq!(pb.paused_until(3, 7, 499), Some(500));
        assert_eq!(pb.paused_until(3, 7, 500), None, "it may send again at the time named");
        assert_eq!(pb.paused_until(7, 3, 0), None, "the reverse pair is not paused");
        assert_eq!(pb.paused_until(3, 8, 0), None, "nor another destination");
    }

    #[test]
    fn one_message_per_port_pair_and_slice() {
        let mut pb = PushBack::new();
        assert!(pb.first_in_slice(4, 10, 1, 2));
        assert!(!pb.first_in_slice(4, 10, 1, 2));
        assert!(pb.first_in_slice(4, 11, 1, 2), "another port");
        assert!(pb.first_in_slice(4, 10, 2, 1), "another pair");
        assert!(pb.first_in_slice(5, 10, 1, 2), "the next slice");
        assert!(!pb.first_in_slice(5, 10, 1, 2));
    }
}
