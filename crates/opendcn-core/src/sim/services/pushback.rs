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

impl Sim {
    /// Push-back from calendar queue `dep` of `port` (its first occurrence: absolute slice
    /// `first`), full for packet `pid`: a message travels back to the packet's source node,
    /// which stops sending to the packet's destination node until that slice has come
    /// round once more.
    pub(in crate::sim) fn send_pushback(&mut self, port: u32, pid: u32, dep: u32, first: u64) {
        let p = self.pool.pkt[pid as usize];
        let back = self.net.ports[port as usize].prop;
        let until = self.sched.slice(first).end + self.sched.cycle();
        self.droplog.pushback(self.clock.now, self.clock.now + back, p.src_node, p.dst_node, until, port, dep);
        self.pb.pending.push((p.src_node, p.dst_node, until));
        self.pb.msgs += 1;
        let i = (self.pb.pending.len() - 1) as u32;
        self.push(self.clock.now + back, Ev::PushBack(i));
    }

    /// A push-back message arrives: its source stops sending to the destination until
    /// the congested slice has come round once more.
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
        if slice != self.pb.slice {
            self.pb.sent.clear();
            self.pb.slice = slice;
        }
        if !self.pb.sent.insert((port, p.src_node, p.dst_node)) {
            return;
        }
        let hops = match &self.rt.router {
            Router::Expander(sp) => sp.hops(self.route_slice(self.clock.now), node, p.src_node).min(16) as u64,
            _ => 1,
        };
        let pt = &self.net.ports[port as usize];
        let delay = if node == p.src_node { 0 } else { hops * (pt.prop + pt.rate.tx(self.tg.params.ctrl_bytes as u64)) };
        self.droplog.pushback(self.clock.now, self.clock.now + delay, p.src_node, p.dst_node, until, port, WILD);
        self.pb.pending.push((p.src_node, p.dst_node, until));
        self.pb.msgs += 1;
        let i = (self.pb.pending.len() - 1) as u32;
        self.push(self.clock.now + delay, Ev::PushBack(i));
    }

    pub(in crate::sim) fn on_pushback(&mut self, i: u32) {
        let (src, dst, until) = self.pb.pending[i as usize];
        self.pb.paused.update((src as u64) << 32 | dst as u64, |old| old.max(until));
    }
}
