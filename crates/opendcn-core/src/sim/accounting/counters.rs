//! Counters, histograms, the trace hash and the packet ledger.

use crate::sim::*;

/// Counters, histograms, the trace hash and the packet ledger.
pub(in crate::sim) struct Counters {
    pub(in crate::sim) rerouted_at_tor: u64,
    pub(in crate::sim) events: u64,
    pub(in crate::sim) event_counts: [u64; EVENT_KINDS.len()],
    pub(in crate::sim) packet_hops: u64,
    pub(in crate::sim) flows_started: u64,
    pub(in crate::sim) flows_completed: u64,
    pub(in crate::sim) offered: u64,
    pub(in crate::sim) delivered: u64,
    pub(in crate::sim) drops: [u64; DROP_REASONS.len()],
    pub(in crate::sim) collisions: u64,
    pub(in crate::sim) gb_violations: u64,
    /// Expander routing: packets re-routed at a node because their circuit had gone.
    pub(in crate::sim) reroutes: u64,
    pub(in crate::sim) trace: crate::trace::TraceHash,
    pub(in crate::sim) ledger: Ledger,
    pub(in crate::sim) ecn_marks: u64,
    pub(in crate::sim) latency: LogHist,
    pub(in crate::sim) reorder: [u64; 6],
    pub(in crate::sim) delivered_by_hops: Vec<u64>,
    /// Data packets delivered to their final endpoint by hops: [other, RotorLB bulk].
    pub(in crate::sim) pkts_by_hops: [Vec<u64>; 2],
    pub(in crate::sim) delivered_by_class: [u64; 8],
    /// Delivered payload bytes by (hops, set of link classes crossed), same indices.
    pub(in crate::sim) delivered_by_hops_class: Vec<[u64; 8]>,
    pub(in crate::sim) class_tx: [u64; 4],
    pub(in crate::sim) adm_deferred: u64,
}

impl Counters {
    /// Counters of a run at t = 0.
    pub(in crate::sim) fn new() -> Self {
        Counters { rerouted_at_tor: 0, events: 0, event_counts: [0; EVENT_KINDS.len()], packet_hops: 0, flows_started: 0,
                   flows_completed: 0, offered: 0, delivered: 0, drops: [0; DROP_REASONS.len()], collisions: 0,
                   gb_violations: 0, reroutes: 0, trace: crate::trace::TraceHash::start(),
                   ledger: Ledger::new(DROP_REASONS.len()), ecn_marks: 0, latency: LogHist::new(), reorder: [0; 6],
                   delivered_by_hops: vec![0; 17], pkts_by_hops: [vec![0; 17], vec![0; 17]], delivered_by_class: [0; 8],
                   delivered_by_hops_class: vec![[0; 8]; 17], class_tx: [0; 4], adm_deferred: 0 }
    }

    /// `payload` bytes of a data packet delivered for the first time, after `hops` hops
    /// over the link classes `classes` (bits: electrical, static optical, reconfigurable
    /// optical); `bulk`: a RotorLB packet. Hops beyond the histograms' last bucket count
    /// there.
    #[inline]
    pub(in crate::sim) fn delivered(&mut self, payload: u64, hops: u16, classes: u8, bulk: bool) {
        self.delivered += payload;
        let h = (hops as usize).min(self.delivered_by_hops.len() - 1);
        self.delivered_by_hops[h] += payload;
        self.pkts_by_hops[bulk as usize][h] += 1;
        self.delivered_by_class[classes as usize & 7] += payload;
        self.delivered_by_hops_class[h][classes as usize & 7] += payload;
    }

    /// A data segment reached its receiver `d` segments after the one it expected.
    #[inline]
    pub(in crate::sim) fn reordered(&mut self, d: i64) {
        self.reorder[match d {
            i64::MIN..=-1 => 0,
            0 => 1,
            1..=10 => 2,
            11..=100 => 3,
            101..=1000 => 4,
            _ => 5,
        }] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliveries_are_counted_by_hops_and_link_classes() {
        let mut c = Counters::new();
        c.delivered(1000, 1, 0b001, false);
        c.delivered(500, 2, 0b101, false);
        c.delivered(200, 40, 0b100, true);
        assert_eq!(c.delivered, 1700);
        assert_eq!((c.delivered_by_hops[1], c.delivered_by_hops[2], c.delivered_by_hops[16]), (1000, 500, 200));
        assert_eq!(c.delivered_by_hops.iter().sum::<u64>(), 1700);
        assert_eq!((c.pkts_by_hops[0].iter().sum::<u64>(), c.pkts_by_hops[1][16]), (2, 1));
        assert_eq!((c.delivered_by_class[1], c.delivered_by_class[5], c.delivered_by_class[4]), (1000, 500, 200));
        assert_eq!(c.delivered_by_hops_class[2][5], 500);
        assert_eq!(c.delivered_by_hops_class.iter().flatten().sum::<u64>(), 1700);
    }

    #[test]
    fn reordering_falls_into_its_bucket() {
        let mut c = Counters::new();
        for d in [-5, 0, 0, 1, 10, 11, 100, 101, 1000, 1001, i64::MAX] {
            c.reordered(d);
        }
        assert_eq!(c.reorder, [1, 2, 2, 2, 2, 2]);
    }
}
