//! One ledger for every engine: what was offered, sent, delivered, dropped (with a reason)
//! and trimmed, as counters bumped at the moment each thing happens.
//!
//! Two balances are checked at the end of a run, each against an in-flight figure the
//! engine counts **independently** by scanning its own state (live packets in its pool,
//! bytes its receivers still miss), never by subtracting the other terms:
//!
//! - flow payload: `offered == delivered + lost + in_flight`, where `lost` is payload that
//!   will never be delivered (a dropped packet of an unreliable transport; 0 for reliable
//!   transports, which send it again);
//! - packets: `sent == delivered + dropped + trimmed + in_flight`, where every packet an
//!   endpoint puts into the network counts as sent (retransmissions and control packets
//!   too), `dropped` is by reason, and `trimmed` counts packets that reached their end as a
//!   trimmed header.

/// Counters of one run.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Payload bytes of the flows that started.
    pub offered: u64,
    /// Payload bytes delivered to receivers for the first time.
    pub delivered: u64,
    /// Payload bytes that will never be delivered, by reason index.
    pub lost: Vec<u64>,
    /// Packets put into the network by endpoints.
    pub sent: u64,
    /// Of those, retransmissions (data sent again) and control packets.
    pub sent_retx: u64,
    pub sent_ctrl: u64,
    /// Packets that reached their endpoint intact.
    pub pkts_delivered: u64,
    /// Packets dropped, by reason index.
    pub pkts_dropped: Vec<u64>,
    /// Payload bytes of dropped packets by reason (including what a transport recovers).
    pub dropped_bytes: Vec<u64>,
    /// Packets that ended as a trimmed header at an endpoint.
    pub pkts_trimmed: u64,
    /// Trim events (a data packet cut to its header at a port).
    pub trims: u64,
    /// Trimmed headers returned to their sender (NDP's return-to-sender).
    pub bounces: u64,
    /// Data arriving at a receiver that had it already (bytes).
    pub duplicate_bytes: u64,
}

impl Ledger {
    /// A ledger with `reasons` drop reasons.
    pub fn new(reasons: usize) -> Self {
        Ledger { lost: vec![0; reasons], pkts_dropped: vec![0; reasons], dropped_bytes: vec![0; reasons], ..Default::default() }
    }

    #[inline]
    pub fn offer(&mut self, bytes: u64) {
        self.offered += bytes;
    }

    /// A packet enters the network.
    #[inline]
    pub fn send(&mut self, retx: bool, ctrl: bool) {
        self.sent += 1;
        self.sent_retx += retx as u64;
        self.sent_ctrl += ctrl as u64;
    }

    /// A packet reached its endpoint intact; `new_payload` bytes are delivered for the first time.
    #[inline]
    pub fn deliver(&mut self, new_payload: u64, duplicate_payload: u64) {
        self.pkts_delivered += 1;
        self.delivered += new_payload;
        self.duplicate_bytes += duplicate_payload;
    }

    /// A packet carrying `payload` bytes was dropped; `lost` when no transport recovers it.
    #[inline]
    pub fn drop(&mut self, reason: usize, payload: u64, lost: bool) {
        self.pkts_dropped[reason] += 1;
        self.dropped_bytes[reason] += payload;
        if lost {
            self.lost[reason] += payload;
        }
    }

    /// A trimmed header reached its end (receiver, or its sender after a bounce).
    #[inline]
    pub fn trimmed_end(&mut self) {
        self.pkts_trimmed += 1;
    }

    /// Payload that will never be delivered and was never in a packet (e.g. the unsent
    /// bytes of a source that failed).
    #[inline]
    pub fn lose(&mut self, reason: usize, payload: u64) {
        self.lost[reason] += payload;
    }

    /// Add another ledger's counts (parallel workers of one run).
    pub fn merge(&mut self, o: &Ledger) {
        // destructured so that a new field cannot be forgotten here
        let Ledger { offered, delivered, lost, sent, sent_retx, sent_ctrl, pkts_delivered, pkts_dropped,
                     dropped_bytes, pkts_trimmed, trims, bounces, duplicate_bytes } = o;
        self.offered += offered;
        self.delivered += delivered;
        self.sent += sent;
        self.sent_retx += sent_retx;
        self.sent_ctrl += sent_ctrl;
        self.pkts_delivered += pkts_delivered;
        self.pkts_trimmed += pkts_trimmed;
        self.trims += trims;
        self.bounces += bounces;
        self.duplicate_bytes += duplicate_bytes;
        for (x, y) in [(&mut self.lost, lost), (&mut self.pkts_dropped, pkts_dropped), (&mut self.dropped_bytes, dropped_bytes)] {
            if x.len() < y.len() {
                x.resize(y.len(), 0);
            }
            x.iter_mut().zip(y).for_each(|(x, y)| *x += y);
        }
    }

    pub fn lost_total(&self) -> u64 {
        self.lost.iter().sum()
    }

    pub fn dropped_total(&self) -> u64 {
        self.pkts_dropped.iter().sum()
    }

    /// The violated balances, given the in-flight figures counted from the engine's state.
    pub fn check(&self, payload_in_flight: u64, packets_in_flight: u64) -> Vec<String> {
        let mut errors = Vec::new();
        let lost = self.lost_total();
        if self.offered != self.delivered + lost + payload_in_flight {
            errors.push(format!(
                "payload balance: offered {} != delivered {} + lost {} + in flight {}",
                self.offered, self.delivered, lost, payload_in_flight
            ));
        }
        let dropped = self.dropped_total();
        if self.sent != self.pkts_delivered + dropped + self.pkts_trimmed + packets_in_flight {
            errors.push(format!(
                "packet balance: sent {} != delivered {} + dropped {} + trimmed {} + in flight {}",
                self.sent, self.pkts_delivered, dropped, self.pkts_trimmed, packets_in_flight
            ));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balances_hold_and_break() {
        let mut l = Ledger::new(2);
        l.offer(3000);
        for _ in 0..3 {
            l.send(false, false);
        }
        l.deliver(1000, 0);
        l.drop(0, 1000, true);
        // one packet of 1000 B still in flight
        assert!(l.check(1000, 1).is_empty());
        assert_eq!(l.check(999, 1).len(), 1);
        assert_eq!(l.check(1000, 0).len(), 1);
        // a recovered drop is not lost: the payload stays in flight until it arrives
        let mut r = Ledger::new(1);
        r.offer(1000);
        r.send(false, false);
        r.drop(0, 1000, false);
        r.send(true, false);
        assert!(r.check(1000, 1).is_empty());
        r.deliver(1000, 0);
        assert!(r.check(0, 0).is_empty());
        assert_eq!(r.sent_retx, 1);
    }
}
