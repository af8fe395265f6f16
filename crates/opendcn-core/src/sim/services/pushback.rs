//! Congestion detection and push-back: a congested port tells the source node to pause a
//! (source, destination) pair, and sources read the paused table before sending.

use crate::sim::*;

impl Sim {
    /// Push-back from calendar queue `dep` of `port` (its first occurrence: absolute slice
    /// `first`), full for packet `pid`: a message travels back to the packet's source node,
    /// which stops sending to the packet's destination node until that slice has come
    /// round once more.
    pub(in crate::sim) fn send_pushback(&mut self, port: u32, pid: u32, dep: u32, first: u64) {
        let p = self.pool[pid as usize];
        let back = self.ports[port as usize].prop;
        let until = self.sched.slice(first).end + self.sched.cycle();
        self.droplog.pushback(self.now, self.now + back, p.src_node, p.dst_node, until, port, dep);
        self.pushbacks.push((p.src_node, p.dst_node, until));
        self.pushback_msgs += 1;
        let i = (self.pushbacks.len() - 1) as u32;
        self.push(self.now + back, Ev::PushBack(i));
    }

    /// A push-back message arrives: its source stops sending to the destination until
    /// the congested slice has come round once more.
    /// Push-back from a served port that trimmed a packet: one message per (port, source
    /// node, destination node) and routing slice to the source node, which holds data for
    /// that destination until the slice ends. The message is a control-plane signal that
    /// takes one propagation and header time per hop of the current path back.
    pub(in crate::sim) fn trim_pushback(&mut self, port: u32, pid: u32) {
        let p = self.pool[pid as usize];
        let node = self.port_node[port as usize];
        let gb = self.sched.guardband();
        let (slice, until) = if self.sched.is_static() {
            (0, Ps::MAX)
        } else {
            let s = self.sched.slice_at(self.now.saturating_sub(gb));
            (s.abs, s.end + gb)
        };
        if slice != self.pb_slice {
            self.pb_sent.clear();
            self.pb_slice = slice;
        }
        if !self.pb_sent.insert((port, p.src_node, p.dst_node)) {
            return;
        }
        let hops = match &self.router {
            Router::Expander(sp) => sp.hops(self.route_slice(self.now), node, p.src_node).min(16) as u64,
            _ => 1,
        };
        let pt = &self.ports[port as usize];
        let delay = if node == p.src_node { 0 } else { hops * (pt.prop + pt.rate.tx(self.tparams.ctrl_bytes as u64)) };
        self.droplog.pushback(self.now, self.now + delay, p.src_node, p.dst_node, until, port, WILD);
        self.pushbacks.push((p.src_node, p.dst_node, until));
        self.pushback_msgs += 1;
        let i = (self.pushbacks.len() - 1) as u32;
        self.push(self.now + delay, Ev::PushBack(i));
    }

    pub(in crate::sim) fn on_pushback(&mut self, i: u32) {
        let (src, dst, until) = self.pushbacks[i as usize];
        self.paused.update((src as u64) << 32 | dst as u64, |old| old.max(until));
    }
}
