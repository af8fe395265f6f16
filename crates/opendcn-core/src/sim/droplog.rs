//! What a researcher needs to explain a run's losses: one record per dropped packet (where,
//! when, which slice, whose traffic) and one per push-back message (who was told to stop
//! sending what, when it was sent, when it arrived, until when it holds). Off unless the
//! spec asks for it (`SimSpec::log_drops`, the most drop records kept); the counters of
//! the ledger are exact either way.

use crate::units::{Ps, NONE};

/// The drop and push-back records of a run (columns).
#[derive(Debug, Clone, Default)]
pub struct DropLog {
    /// Most drop records kept (0: off); drops beyond are counted in `unlogged`.
    limit: usize,
    pub time: Vec<Ps>,
    pub node: Vec<u32>,
    /// Global port whose buffer refused the packet (NONE: not a port's buffer).
    pub port: Vec<u32>,
    /// Departure slice (index in the cycle) the packet was to leave in (NONE: any).
    pub dep: Vec<u32>,
    pub src_node: Vec<u32>,
    pub dst_node: Vec<u32>,
    pub flow: Vec<u32>,
    pub reason: Vec<u8>,
    pub hops: Vec<u16>,
    pub unlogged: u64,
    /// Whether the last drop was recorded (what `at_port` completes).
    last: bool,
    /// Push-back messages: sent at, arrives at the source, the source node and the
    /// destination node it stops, until when, and the congested port and slice.
    pub pb_sent: Vec<Ps>,
    pub pb_arrive: Vec<Ps>,
    pub pb_src: Vec<u32>,
    pub pb_dst: Vec<u32>,
    pub pb_until: Vec<Ps>,
    pub pb_port: Vec<u32>,
    pub pb_dep: Vec<u32>,
}

/// One dropped packet, as [`DropLog::drop`] records it.
#[derive(Debug, Clone, Copy)]
pub struct DropRec {
    pub time: Ps,
    pub node: u32,
    pub src_node: u32,
    pub dst_node: u32,
    pub flow: u32,
    pub reason: u8,
    pub hops: u16,
}

impl DropLog {
    pub fn new(limit: u64) -> Self {
        DropLog { limit: limit as usize, ..Default::default() }
    }

    #[inline]
    pub fn on(&self) -> bool {
        self.limit > 0
    }

    /// Record a dropped packet (port and slice unknown until [`DropLog::at_port`]).
    pub fn drop(&mut self, r: DropRec) {
        self.last = self.time.len() < self.limit;
        if !self.last {
            self.unlogged += 1;
            return;
        }
        self.time.push(r.time);
        self.node.push(r.node);
        self.port.push(NONE);
        self.dep.push(NONE);
        self.src_node.push(r.src_node);
        self.dst_node.push(r.dst_node);
        self.flow.push(r.flow);
        self.reason.push(r.reason);
        self.hops.push(r.hops);
    }

    /// The last recorded drop happened at `port`'s buffer, for departure slice `dep`.
    pub fn at_port(&mut self, port: u32, dep: u32) {
        if !self.last {
            return;
        }
        if let (Some(p), Some(d)) = (self.port.last_mut(), self.dep.last_mut()) {
            *p = port;
            *d = dep;
        }
    }

    /// Record a push-back message (always, when on: there are few).
    #[allow(clippy::too_many_arguments)]
    pub fn pushback(&mut self, sent: Ps, arrive: Ps, src: u32, dst: u32, until: Ps, port: u32, dep: u32) {
        if !self.on() {
            return;
        }
        self.pb_sent.push(sent);
        self.pb_arrive.push(arrive);
        self.pb_src.push(src);
        self.pb_dst.push(dst);
        self.pb_until.push(until);
        self.pb_port.push(port);
        self.pb_dep.push(dep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_its_limit_and_counts_the_rest() {
        let mut l = DropLog::new(2);
        let r = DropRec { time: 5, node: 1, src_node: 0, dst_node: 2, flow: 7, reason: 0, hops: 1 };
        l.drop(r);
        l.at_port(3, 4);
        l.drop(DropRec { time: 6, ..r });
        l.drop(DropRec { time: 7, ..r });
        l.at_port(9, 9); // not recorded: completes nothing
        assert_eq!((l.time.clone(), l.port.clone(), l.dep.clone(), l.unlogged), (vec![5, 6], vec![3, NONE], vec![4, NONE], 1));
        let mut off = DropLog::new(0);
        off.pushback(1, 2, 0, 1, 9, 3, 0);
        assert!(off.pb_sent.is_empty() && !off.on());
    }
}
