//! NDP, the receiver-driven transport of Handley et al. (SIGCOMM 2017), as sans-IO state
//! machines.
//!
//! # The protocol, and who does what
//!
//! The network (not this module) trims a data packet to its header when a switch's data
//! queue is full, and carries headers and control packets in a higher-priority queue. A
//! header that finds even that queue full is returned to its sender ("bounce").
//!
//! * [`NdpSender`] starts with a credit of `init_window` segments, sent back to back at
//!   line rate, and afterwards earns one credit per PULL. Each credit sends one segment:
//!   a segment queued for retransmission (NACKed, bounced or timed out) if there is one,
//!   else the next segment never sent. An ACK marks a segment delivered.
//! * [`NdpReceiver`] records arrivals. The engine answers every data packet with an ACK
//!   and every trimmed header with a NACK, and for every arrival of either kind owes the
//!   sender one PULL, which it hands to the receiving endpoint's [`PullPacer`].
//! * [`PullPacer`] (one per receiving endpoint, shared by all of its flows) releases owed
//!   pulls in FIFO order, at most one per `interval` (one full packet time at the
//!   receiver's line rate), so the senders together never send faster than the receiver
//!   can take. When the pacer releases a pull for a flow, the engine stamps it with
//!   [`NdpReceiver::next_pull`].
//!
//! # Pull numbers
//!
//! PULLs carry a cumulative count (1, 2, 3, ... per flow) so that a lost or reordered pull
//! costs nothing as long as a later one arrives: the sender credits the difference between
//! the highest number it has seen and the new one, and ignores numbers that are not higher.
//!
//! # Credit
//!
//! Credit is banked: a pull that arrives while the sender has nothing to send (everything
//! sent, nothing queued for retransmission) is kept and spent on the next segment that
//! becomes sendable, e.g. after a NACK. Over the life of a flow the number of sends is
//! therefore at most `init_window` + pulls received (+ one per timeout, below).
//!
//! A bounced packet never reached the receiver, so no pull is owed for it. As in NDP's
//! return-to-sender, the sender resends it at once (possibly on another path) instead of
//! waiting for a timeout: a bounce queues the segment for retransmission and gives back
//! the one credit that packet had used, so the flow keeps the same number of packets in
//! flight.
//!
//! # Retransmission timer
//!
//! One fixed timeout per flow (no back-off). *Progress* is any ACK, NACK, PULL or bounce
//! for the flow, or a send. The deadline is `last progress + rto`, and it exists only while
//! some segment that has been sent is unacknowledged (segments queued for retransmission
//! count: they are sent and unacknowledged). When it fires, every sent, unacknowledged
//! segment not already queued is queued for retransmission, the credit is raised to at
//! least one so that the flow restarts (the pulls of the resent packets keep it going),
//! and the firing counts as progress, so the next deadline is `now + rto`. It recovers
//! what NACKs cannot: lost ACKs, NACKs and last pulls, and a flow whose whole window
//! bounced.

use super::{seg_len, segments, Send, SenderStats, SeqSet};
use crate::units::Ps;
use std::collections::VecDeque;

/// Sender parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NdpConfig {
    /// Payload bytes per segment.
    pub mss: u32,
    /// Segments the sender may send before its first pull.
    pub init_window: u32,
    /// Retransmission timeout (fixed).
    pub rto: Ps,
}

impl Default for NdpConfig {
    /// MSS 1436 B (a 1500 B packet), an initial window of 20 packets, RTO 1 ms.
    fn default() -> Self {
        NdpConfig { mss: 1436, init_window: 20, rto: 1_000_000_000 }
    }
}

/// A fixed-size bit set with removal (private helper for the retransmission queue).
#[derive(Debug, Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u32) -> Self {
        Bits(vec![0; (n as usize).div_ceil(64)])
    }

    #[inline]
    fn get(&self, s: u32) -> bool {
        self.0[(s / 64) as usize] >> (s % 64) & 1 == 1
    }

    #[inline]
    fn set(&mut self, s: u32, v: bool) {
        let m = 1u64 << (s % 64);
        let w = &mut self.0[(s / 64) as usize];
        if v {
            *w |= m;
        } else {
            *w &= !m;
        }
    }
}

/// The sending side of one NDP flow.
#[derive(Debug, Clone)]
pub struct NdpSender {
    cfg: NdpConfig,
    size: u64,
    /// Number of segments of the flow.
    n: u32,
    /// Lowest sequence number never sent: every segment below it has been sent.
    next_new: u32,
    acked: SeqSet,
    /// Segments waiting for retransmission, oldest first. An entry whose segment was
    /// acknowledged after it was queued is stale: its `queued` bit is clear and it is
    /// skipped when it reaches the front.
    rtx: VecDeque<u32>,
    /// Which segments are live entries of `rtx`.
    queued: Bits,
    /// Number of live entries of `rtx`.
    n_queued: u32,
    /// Segments that may be sent now.
    credit: u32,
    /// Highest cumulative pull number seen.
    max_pull: u32,
    last_progress: Ps,
    stats: SenderStats,
    nacks: u32,
    bounces: u32,
}

impl NdpSender {
    /// A sender for a flow of `size` bytes (a flow of 0 bytes is done at once).
    pub fn new(cfg: NdpConfig, size: u64) -> Self {
        assert!(cfg.mss > 0, "NDP: mss must be positive");
        let n = segments(size, cfg.mss);
        NdpSender {
            cfg,
            size,
            n,
            next_new: 0,
            acked: SeqSet::new(n),
            rtx: VecDeque::new(),
            queued: Bits::new(n),
            n_queued: 0,
            credit: cfg.init_window,
            max_pull: 0,
            last_progress: 0,
            stats: SenderStats::default(),
            nacks: 0,
            bounces: 0,
        }
    }

    /// The next segment allowed now, retransmissions first, or `None` (no credit, or
    /// nothing to send). The segment is marked sent, one credit is spent and the timer is
    /// (re)armed from `now`.
    pub fn poll_send(&mut self, now: Ps) -> Option<Send> {
        if self.credit == 0 {
            return None;
        }
        // Everything in the retransmission queue has been on the wire before.
        let (seq, retx) = match self.pop_queued() {
            Some(seq) => (seq, true),
            None if self.next_new < self.n => {
                self.next_new += 1;
                (self.next_new - 1, false)
            }
            None => return None,
        };
        self.credit -= 1;
        self.last_progress = now;
        if retx {
            self.stats.retransmits += 1;
        }
        Some(Send { seq, len: seg_len(self.size, self.cfg.mss, seq), retx })
    }

    /// Whether [`poll_send`](Self::poll_send) would return a segment now.
    pub fn can_send(&self) -> bool {
        self.credit > 0 && (self.n_queued > 0 || self.next_new < self.n)
    }

    /// Segment `seq` arrived intact.
    pub fn on_ack(&mut self, now: Ps, seq: u32) {
        self.last_progress = now;
        if seq >= self.next_new {
            return; // never sent: not a real acknowledgement
        }
        if self.acked.insert(seq) && self.queued.get(seq) {
            // Leave the entry in `rtx`; it is skipped when it reaches the front.
            self.queued.set(seq, false);
            self.n_queued -= 1;
        }
    }

    /// Segment `seq` was trimmed on the way: queue it for retransmission, unless it is
    /// acknowledged already, already queued, or was never sent.
    pub fn on_nack(&mut self, now: Ps, seq: u32) {
        self.last_progress = now;
        self.nacks += 1;
        self.enqueue(seq);
    }

    /// The header of segment `seq` came back to the sender (return-to-sender): handled as
    /// a NACK.
    pub fn on_bounce(&mut self, now: Ps, seq: u32) {
        self.last_progress = now;
        self.bounces += 1;
        if seq < self.next_new && !self.acked.contains(seq) && !self.queued.get(seq) {
            self.push_queued(seq);
            self.credit = self.credit.saturating_add(1);
        }
    }

    /// A PULL carrying cumulative number `pull_no` arrived: the credit grows by however
    /// much `pull_no` exceeds the highest number seen so far (nothing if it does not).
    pub fn on_pull(&mut self, now: Ps, pull_no: u32) {
        self.last_progress = now;
        if pull_no > self.max_pull {
            self.credit = self.credit.saturating_add(pull_no - self.max_pull);
            self.max_pull = pull_no;
        }
    }

    /// The retransmission deadline, or `None` when no sent segment is unacknowledged.
    pub fn timer(&self) -> Option<Ps> {
        (self.acked.count < self.next_new).then(|| self.last_progress + self.cfg.rto)
    }

    /// Fire the retransmission timer if `now` has reached the deadline (otherwise nothing
    /// happens): queue every sent, unacknowledged segment not already queued, raise the
    /// credit to at least one, count a timeout and restart the deadline from `now`.
    pub fn on_timer(&mut self, now: Ps) {
        match self.timer() {
            Some(deadline) if now >= deadline => {}
            _ => return,
        }
        for seq in self.acked.cum..self.next_new {
            if !self.acked.contains(seq) && !self.queued.get(seq) {
                self.push_queued(seq);
            }
        }
        self.credit = self.credit.max(1);
        self.stats.timeouts += 1;
        self.last_progress = now;
    }

    /// Every segment is acknowledged.
    pub fn done(&self) -> bool {
        self.acked.count == self.n
    }

    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Segments that may be sent now (banked pulls included).
    pub fn credit(&self) -> u32 {
        self.credit
    }

    /// The segments acknowledged so far.
    pub fn acked(&self) -> &SeqSet {
        &self.acked
    }

    /// Number of segments of the flow.
    pub fn segments(&self) -> u32 {
        self.n
    }

    /// Segments waiting for retransmission.
    pub fn retx_queued(&self) -> u32 {
        self.n_queued
    }

    /// NACKs received (duplicates and ignored ones included).
    pub fn nacks(&self) -> u32 {
        self.nacks
    }

    /// Bounced headers received.
    pub fn bounces(&self) -> u32 {
        self.bounces
    }

    fn enqueue(&mut self, seq: u32) {
        if seq < self.next_new && !self.acked.contains(seq) && !self.queued.get(seq) {
            self.push_queued(seq);
        }
    }

    fn push_queued(&mut self, seq: u32) {
        self.queued.set(seq, true);
        self.n_queued += 1;
        self.rtx.push_back(seq);
    }

    /// The oldest live entry of the retransmission queue, removed.
    fn pop_queued(&mut self) -> Option<u32> {
        while let Some(seq) = self.rtx.pop_front() {
            if self.queued.get(seq) {
                self.queued.set(seq, false);
                self.n_queued -= 1;
                return Some(seq);
            }
        }
        None
    }
}

/// The receiving side of one NDP flow.
#[derive(Debug, Clone)]
pub struct NdpReceiver {
    n: u32,
    received: SeqSet,
    pulls: u32,
    headers: u32,
    duplicates: u32,
}

impl NdpReceiver {
    /// A receiver for a flow of `size` bytes cut into segments of `mss` bytes.
    pub fn new(size: u64, mss: u32) -> Self {
        let n = segments(size, mss);
        NdpReceiver { n, received: SeqSet::new(n), pulls: 0, headers: 0, duplicates: 0 }
    }

    /// Data segment `seq` arrived; true if it is new, false for a duplicate.
    pub fn on_data(&mut self, seq: u32) -> bool {
        debug_assert!(seq < self.n, "NDP: segment {seq} beyond the flow's {} segments", self.n);
        let new = self.received.insert(seq);
        if !new {
            self.duplicates += 1;
        }
        new
    }

    /// The trimmed header of segment `seq` arrived (the engine answers with a NACK).
    pub fn on_header(&mut self, seq: u32) {
        debug_assert!(seq < self.n, "NDP: segment {seq} beyond the flow's {} segments", self.n);
        self.headers += 1;
    }

    /// The cumulative number for the next PULL of this flow: 1, 2, 3, ... Call it when the
    /// pacer releases the pull, so that numbers go out in increasing order.
    pub fn next_pull(&mut self) -> u32 {
        self.pulls += 1;
        self.pulls
    }

    /// Every segment has arrived.
    pub fn complete(&self) -> bool {
        self.received.count == self.n
    }

    /// The segments received so far.
    pub fn received(&self) -> &SeqSet {
        &self.received
    }

    /// Trimmed headers received.
    pub fn headers(&self) -> u32 {
        self.headers
    }

    /// Data segments received again after their first arrival.
    pub fn duplicates(&self) -> u32 {
        self.duplicates
    }

    /// Pulls numbered so far.
    pub fn pulls(&self) -> u32 {
        self.pulls
    }
}

/// One per receiving endpoint: releases the pulls owed to that endpoint's flows in FIFO
/// order, at most one per `interval`.
///
/// The pacer is free again `interval` after its last release; before the first release
/// it is free from time 0, and after idling for at least `interval` the next pull goes at
/// once.
#[derive(Debug, Clone)]
pub struct PullPacer {
    interval: Ps,
    owed: VecDeque<u32>,
    free_at: Ps,
}

impl PullPacer {
    pub fn new(interval: Ps) -> Self {
        PullPacer { interval, owed: VecDeque::new(), free_at: 0 }
    }

    /// One more pull owed to `flow`.
    pub fn request(&mut self, flow: u32) {
        self.owed.push_back(flow);
    }

    /// The flow whose pull goes now, if a pull is owed and the pacer is free; the pacer is
    /// then busy until `now + interval`.
    pub fn poll(&mut self, now: Ps) -> Option<u32> {
        if now < self.free_at {
            return None;
        }
        let flow = self.owed.pop_front()?;
        self.free_at = now + self.interval;
        Some(flow)
    }

    /// The earliest time at which [`poll`](Self::poll) returns a flow, or `None` when no
    /// pull is owed. It may lie in the past (the pacer is idle): poll at once then.
    pub fn next_time(&self) -> Option<Ps> {
        (!self.owed.is_empty()).then_some(self.free_at)
    }

    /// Drop every pull owed to `flow` (e.g. once it is complete).
    pub fn forget(&mut self, flow: u32) {
        self.owed.retain(|&f| f != flow);
    }

    /// Pulls owed, over all flows.
    pub fn pending(&self) -> usize {
        self.owed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mss: u32, init_window: u32, rto: Ps) -> NdpConfig {
        NdpConfig { mss, init_window, rto }
    }

    /// Sends everything the credit allows at `now`, returning the sequence numbers.
    fn drain(s: &mut NdpSender, now: Ps) -> Vec<(u32, bool)> {
        let mut out = Vec::new();
        while let Some(x) = s.poll_send(now) {
            out.push((x.seq, x.retx));
        }
        out
    }

    #[test]
    fn default_config() {
        let c = NdpConfig::default();
        assert_eq!((c.mss, c.init_window, c.rto), (1436, 20, 1_000_000_000));
    }

    #[test]
    fn initial_window_then_one_segment_per_pull() {
        let mut s = NdpSender::new(cfg(1000, 20, 1_000_000), 50 * 1000 - 10);
        assert_eq!(s.segments(), 50);
        assert!(s.can_send());
        let mut sent = Vec::new();
        while let Some(x) = s.poll_send(0) {
            assert_eq!(x.len, 1000);
            sent.push((x.seq, x.retx));
        }
        assert_eq!(sent, (0..20).map(|q| (q, false)).collect::<Vec<_>>());
        assert_eq!(s.credit(), 0);
        assert!(!s.can_send());
        assert_eq!(s.poll_send(10), None);

        s.on_pull(100, 1);
        assert_eq!(s.credit(), 1);
        assert_eq!(drain(&mut s, 100), vec![(20, false)]);
        // A pull number not above the highest seen adds nothing.
        s.on_pull(110, 1);
        s.on_pull(111, 0);
        assert_eq!(s.credit(), 0);
        assert_eq!(s.poll_send(112), None);
        // Pull 5 after pull 1 credits four segments; a late pull 3 then adds nothing.
        s.on_pull(120, 5);
        assert_eq!(s.credit(), 4);
        s.on_pull(121, 3);
        assert_eq!(s.credit(), 4);
        assert_eq!(drain(&mut s, 130), (21..25).map(|q| (q, false)).collect::<Vec<_>>());
        assert_eq!(s.stats(), SenderStats::default());

        // The last segment is short.
        s.on_pull(200, 30);
        let all = drain(&mut s, 200);
        assert_eq!(all.len(), 25);
        assert_eq!(all.last(), Some(&(49, false)));
        assert_eq!(seg_len(50 * 1000 - 10, 1000, 49), 990);
        assert_eq!(s.credit(), 0, "25 credits, 25 segments left");
        // Credit is banked when there is nothing to send.
        s.on_pull(300, 32);
        assert_eq!(s.credit(), 2);
        assert!(!s.can_send());
        assert_eq!(s.poll_send(300), None);
        assert_eq!(s.credit(), 2);
    }

    #[test]
    fn nack_is_resent_first_once() {
        let mut s = NdpSender::new(cfg(100, 4, 1_000_000), 1000);
        assert_eq!(drain(&mut s, 0), vec![(0, false), (1, false), (2, false), (3, false)]);
        s.on_ack(10, 0);
        s.on_nack(11, 2);
        s.on_nack(12, 2); // twice before the resend: queued once
        s.on_nack(13, 0); // already acknowledged: ignored
        s.on_nack(14, 7); // never sent: ignored
        assert_eq!(s.retx_queued(), 1);
        assert_eq!(s.nacks(), 4);
        assert!(!s.can_send(), "no credit yet");
        s.on_pull(20, 1);
        assert!(s.can_send());
        assert_eq!(s.poll_send(20), Some(Send { seq: 2, len: 100, retx: true }));
        assert_eq!(s.poll_send(20), None);
        s.on_pull(30, 3);
        assert_eq!(drain(&mut s, 30), vec![(4, false), (5, false)]);
        // NACKed again after the resend: queued again, and resent before new data.
        s.on_nack(40, 2);
        s.on_nack(41, 5);
        s.on_pull(50, 6);
        assert_eq!(drain(&mut s, 50), vec![(2, true), (5, true), (6, false)]);
        assert_eq!(s.stats().retransmits, 3);
        assert_eq!(s.stats().timeouts, 0);
        assert_eq!(s.stats().fast_retransmits, 0);
    }

    #[test]
    fn nack_then_ack_before_resend_is_not_resent() {
        let mut s = NdpSender::new(cfg(100, 3, 1_000_000), 300);
        drain(&mut s, 0);
        s.on_nack(1, 1);
        s.on_ack(2, 1); // the original arrived after all (e.g. a late duplicate path)
        assert_eq!(s.retx_queued(), 0);
        s.on_pull(3, 1);
        assert!(!s.can_send());
        assert_eq!(s.poll_send(3), None);
        assert_eq!(s.credit(), 1);
    }

    #[test]
    fn bounce_is_resent_at_once() {
        let mut s = NdpSender::new(cfg(100, 4, 1_000_000), 1000);
        drain(&mut s, 0);
        s.on_ack(10, 0);
        s.on_bounce(11, 2);
        s.on_bounce(12, 2);
        s.on_bounce(13, 0);
        s.on_nack(14, 2); // a NACK of a segment queued by a bounce is also a no-op
        assert_eq!(s.retx_queued(), 1);
        assert_eq!(s.bounces(), 3);
        assert_eq!(s.credit(), 1, "a bounce gives back the credit of the bounced packet, once");
        assert_eq!(drain(&mut s, 20), vec![(2, true)]);
        s.on_pull(30, 1);
        assert_eq!(drain(&mut s, 30), vec![(4, false)]);
        assert_eq!(s.stats().retransmits, 1);
    }

    #[test]
    fn timeout_requeues_everything_unacked() {
        let rto = 1000;
        let mut s = NdpSender::new(cfg(100, 4, rto), 600);
        assert_eq!(s.timer(), None, "nothing sent yet");
        s.on_timer(5000);
        assert_eq!(s.stats().timeouts, 0);
        assert_eq!(drain(&mut s, 100).len(), 4);
        assert_eq!(s.timer(), Some(1100));
        s.on_ack(200, 1); // progress
        assert_eq!(s.timer(), Some(1200));
        // Everything else is lost: no progress until the deadline.
        s.on_timer(1199);
        assert_eq!((s.stats().timeouts, s.retx_queued(), s.credit()), (0, 0, 0));
        s.on_timer(1200);
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!(s.retx_queued(), 3);
        assert_eq!(s.credit(), 1);
        assert_eq!(s.timer(), Some(2200), "the firing restarts the deadline");
        s.on_timer(1200); // already handled
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!(drain(&mut s, 1200), vec![(0, true)]);
        assert_eq!(s.timer(), Some(2200));
        // Still nothing comes back: the next firing queues only what is not queued yet.
        s.on_timer(2200);
        assert_eq!(s.stats().timeouts, 2);
        assert_eq!(s.retx_queued(), 3);
        assert_eq!(drain(&mut s, 2200), vec![(2, true)]);
        // Acknowledgements arrive; stale queue entries are dropped.
        for q in [0, 2, 3] {
            s.on_ack(2300, q);
        }
        assert_eq!(s.retx_queued(), 0);
        assert_eq!(s.timer(), None, "every sent segment is acknowledged");
        s.on_timer(10_000);
        assert_eq!(s.stats().timeouts, 2);
        s.on_pull(2400, 2);
        assert_eq!(drain(&mut s, 2400), vec![(4, false), (5, false)]);
        assert_eq!(s.timer(), Some(3400));
        s.on_ack(2500, 4);
        s.on_ack(2500, 5);
        assert!(s.done());
        assert_eq!(s.timer(), None);
        assert_eq!(s.stats(), SenderStats { retransmits: 2, timeouts: 2, fast_retransmits: 0 });
    }

    #[test]
    fn timer_restarts_a_flow_without_credit() {
        // All queued (NACKed) but the pulls were lost: the timer gives the one credit.
        let mut s = NdpSender::new(cfg(100, 2, 500), 200);
        drain(&mut s, 0);
        s.on_nack(10, 0);
        s.on_nack(10, 1);
        assert_eq!(s.timer(), Some(510));
        s.on_timer(510);
        assert_eq!((s.retx_queued(), s.credit(), s.stats().timeouts), (2, 1, 1));
        assert_eq!(drain(&mut s, 510), vec![(0, true)]);
    }

    #[test]
    fn pacer_fifo_at_most_one_per_interval() {
        let (a, b) = (7, 3);
        let mut p = PullPacer::new(1000);
        assert_eq!(p.next_time(), None);
        assert_eq!(p.poll(0), None);
        p.request(a);
        p.request(b);
        p.request(a);
        assert_eq!(p.pending(), 3);
        assert_eq!(p.next_time(), Some(0));
        assert_eq!(p.poll(0), Some(a));
        assert_eq!(p.next_time(), Some(1000));
        assert_eq!(p.poll(500), None);
        assert_eq!(p.poll(999), None);
        assert_eq!(p.poll(1000), Some(b));
        assert_eq!(p.next_time(), Some(2000));
        assert_eq!(p.poll(2000), Some(a));
        assert_eq!(p.next_time(), None);
        assert_eq!(p.poll(3000), None);
        assert_eq!(p.pending(), 0);

        // forget drops every pull owed to a flow, keeping the others in order.
        p.request(a);
        p.request(b);
        p.request(a);
        p.request(9);
        p.forget(a);
        assert_eq!(p.pending(), 2);
        // Idle since 3000 ≥ interval: the next pull goes at once.
        assert_eq!(p.next_time(), Some(3000));
        assert_eq!(p.poll(10_000), Some(b));
        assert_eq!(p.poll(10_500), None);
        assert_eq!(p.next_time(), Some(11_000));
        assert_eq!(p.poll(11_000), Some(9));
        assert_eq!(p.next_time(), None);
        p.request(b);
        assert_eq!(p.next_time(), Some(12_000), "busy since the pull at 11 000");
        assert_eq!(p.poll(11_999), None);
        assert_eq!(p.poll(12_000), Some(b));
    }

    #[test]
    fn receiver_counts_duplicates_and_pulls() {
        let mut r = NdpReceiver::new(3 * 1436, 1436);
        assert!(!r.complete());
        assert!(r.on_data(1));
        assert!(!r.on_data(1));
        r.on_header(0);
        assert!(r.on_data(0));
        assert_eq!(r.received().cum, 2);
        assert!(r.on_data(2));
        assert!(!r.on_data(0));
        assert!(r.complete());
        assert_eq!(r.received().count, 3);
        assert_eq!((r.duplicates(), r.headers()), (2, 1));
        assert_eq!((r.next_pull(), r.next_pull(), r.next_pull()), (1, 2, 3));
        assert_eq!(r.pulls(), 3);
    }

    #[test]
    fn empty_flow_is_done() {
        let mut s = NdpSender::new(NdpConfig::default(), 0);
        assert!(s.done());
        assert!(!s.can_send());
        assert_eq!(s.poll_send(0), None);
        assert_eq!(s.timer(), None);
        assert!(NdpReceiver::new(0, 1436).complete());
    }

    // ---------------------------------------------------------------------------------
    // Closed loop: several senders → one bottleneck port (trimming data queue, priority
    // header queue) → one receiver, with control packets returning on an uncongested path.

    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    const MSS: u32 = 1000;
    /// A full packet's serialization time, at every line rate here (1 µs).
    const PKT: Ps = 1_000_000;
    /// A header's serialization time.
    const HDR: Ps = 64_000;
    /// Propagation delay of each link (sender → switch, switch → receiver, and the
    /// return path takes 2·PROP).
    const PROP: Ps = 500_000;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Ctrl {
        Ack(u32),
        Nack(u32),
        Pull(u32),
        Bounce(u32),
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Ev {
        SenderTry(u32),
        Timer(u32),
        AtSwitch { flow: u32, seq: u32 },
        PortFree,
        AtReceiver { flow: u32, seq: u32, trimmed: bool },
        PacerWake,
        AtSender { flow: u32, ctrl: Ctrl },
    }

    struct Setup {
        flows: u32,
        segs: u32,
        init_window: u32,
        rto: Ps,
        /// Data queue capacity at the bottleneck, in packets.
        data_cap: usize,
        /// Header queue capacity (beyond it headers bounce).
        hdr_cap: usize,
        /// Drop every k-th ACK / PULL the receiver sends (0: none).
        drop_ack_every: u32,
        drop_pull_every: u32,
    }

    #[derive(Debug, Default)]
    struct Outcome {
        /// When the last sender learnt that its flow is done.
        end: Ps,
        trims: u32,
        bounces: u32,
        new_data: Vec<u32>,
        duplicates: u32,
        dropped_acks: u32,
        dropped_pulls: u32,
        stats: Vec<SenderStats>,
    }

    struct Net {
        su: Setup,
        now: Ps,
        heap: BinaryHeap<Reverse<(Ps, u64, Ev)>>,
        tie: u64,
        tx: Vec<NdpSender>,
        rx: Vec<NdpReceiver>,
        nic_free: Vec<Ps>,
        try_pending: Vec<bool>,
        timer_pending: Vec<bool>,
        data_q: VecDeque<(u32, u32)>,
        hdr_q: VecDeque<(u32, u32)>,
        port_busy: bool,
        pacer: PullPacer,
        pacer_pending: bool,
        acks_sent: u32,
        pulls_sent: u32,
        out: Outcome,
    }

    impl Net {
        fn new(su: Setup) -> Self {
            let c = cfg(MSS, su.init_window, su.rto);
            let size = su.segs as u64 * MSS as u64;
            let f = su.flows as usize;
            Net {
                now: 0,
                heap: BinaryHeap::new(),
                tie: 0,
                tx: (0..f).map(|_| NdpSender::new(c, size)).collect(),
                rx: (0..f).map(|_| NdpReceiver::new(size, MSS)).collect(),
                nic_free: vec![0; f],
                try_pending: vec![false; f],
                timer_pending: vec![false; f],
                data_q: VecDeque::new(),
                hdr_q: VecDeque::new(),
                port_busy: false,
                pacer: PullPacer::new(PKT),
                pacer_pending: false,
                acks_sent: 0,
                pulls_sent: 0,
                out: Outcome { new_data: vec![0; f], ..Outcome::default() },
                su,
            }
        }

        fn at(&mut self, t: Ps, ev: Ev) {
            debug_assert!(t >= self.now);
            self.tie += 1;
            self.heap.push(Reverse((t, self.tie, ev)));
        }

        fn run(mut self) -> Outcome {
            for f in 0..self.su.flows {
                self.try_pending[f as usize] = true;
                self.at(0, Ev::SenderTry(f));
            }
            let mut steps = 0u64;
            while let Some(Reverse((t, _, ev))) = self.heap.pop() {
                steps += 1;
                assert!(steps < 10_000_000, "runaway simulation");
                self.now = t;
                self.handle(ev);
            }
            for f in 0..self.su.flows as usize {
                assert!(self.tx[f].done(), "flow {f} not done");
                assert!(self.rx[f].complete(), "flow {f} not complete");
                assert_eq!(self.tx[f].timer(), None);
                self.out.stats.push(self.tx[f].stats());
            }
            self.out.duplicates = self.rx.iter().map(|r| r.duplicates()).sum();
            assert_eq!(self.pacer.pending(), 0);
            self.out
        }

        fn handle(&mut self, ev: Ev) {
            let now = self.now;
            match ev {
                Ev::SenderTry(f) => {
                    self.try_pending[f as usize] = false;
                    self.try_send(f);
                }
                Ev::Timer(f) => {
                    self.timer_pending[f as usize] = false;
                    if self.tx[f as usize].timer().is_some_and(|d| now >= d) {
                        self.tx[f as usize].on_timer(now);
                        self.try_send(f);
                    }
                    self.arm_timer(f);
                }
                Ev::AtSwitch { flow, seq } => {
                    if self.data_q.len() < self.su.data_cap {
                        self.data_q.push_back((flow, seq));
                    } else {
                        self.out.trims += 1;
                        if self.hdr_q.len() < self.su.hdr_cap {
                            self.hdr_q.push_back((flow, seq));
                        } else {
                            self.out.bounces += 1;
                            self.at(now + PROP, Ev::AtSender { flow, ctrl: Ctrl::Bounce(seq) });
                        }
                    }
                    self.kick_port();
                }
                Ev::PortFree => {
                    self.port_busy = false;
                    self.kick_port();
                }
                Ev::AtReceiver { flow, seq, trimmed } => {
                    let r = &mut self.rx[flow as usize];
                    if trimmed {
                        r.on_header(seq);
                        self.at(now + 2 * PROP, Ev::AtSender { flow, ctrl: Ctrl::Nack(seq) });
                    } else {
                        let was_complete = r.complete();
                        if r.on_data(seq) {
                            self.out.new_data[flow as usize] += 1;
                        }
                        let completed = !was_complete && r.complete();
                        self.acks_sent += 1;
                        let k = self.su.drop_ack_every;
                        if k > 0 && self.acks_sent.is_multiple_of(k) {
                            self.out.dropped_acks += 1;
                        } else {
                            self.at(now + 2 * PROP, Ev::AtSender { flow, ctrl: Ctrl::Ack(seq) });
                        }
                        if completed {
                            // Nothing left to pull for: drop what is owed (this arrival's
                            // own pull is not requested).
                            self.pacer.forget(flow);
                            return;
                        }
                    }
                    self.pacer.request(flow);
                    self.wake_pacer();
                }
                Ev::PacerWake => {
                    self.pacer_pending = false;
                    if let Some(flow) = self.pacer.poll(now) {
                        let n = self.rx[flow as usize].next_pull();
                        self.pulls_sent += 1;
                        let k = self.su.drop_pull_every;
                        if k > 0 && self.pulls_sent.is_multiple_of(k) {
                            self.out.dropped_pulls += 1;
                        } else {
                            self.at(now + 2 * PROP, Ev::AtSender { flow, ctrl: Ctrl::Pull(n) });
                        }
                    }
                    self.wake_pacer();
                }
                Ev::AtSender { flow, ctrl } => {
                    let s = &mut self.tx[flow as usize];
                    match ctrl {
                        Ctrl::Ack(q) => s.on_ack(now, q),
                        Ctrl::Nack(q) => s.on_nack(now, q),
                        Ctrl::Pull(n) => s.on_pull(now, n),
                        Ctrl::Bounce(q) => s.on_bounce(now, q),
                    }
                    if s.done() {
                        self.out.end = self.out.end.max(now);
                    }
                    self.try_send(flow);
                    self.arm_timer(flow);
                }
            }
        }

        /// Send one segment if the sender's NIC is free and the sender may; come back when
        /// the NIC frees up if there is more.
        fn try_send(&mut self, f: u32) {
            let fi = f as usize;
            let now = self.now;
            if self.nic_free[fi] <= now {
                if let Some(x) = self.tx[fi].poll_send(now) {
                    assert_eq!(x.len, MSS);
                    self.nic_free[fi] = now + PKT;
                    self.at(now + PKT + PROP, Ev::AtSwitch { flow: f, seq: x.seq });
                }
            }
            if self.tx[fi].can_send() && !self.try_pending[fi] {
                self.try_pending[fi] = true;
                let t = self.nic_free[fi].max(now);
                self.at(t, Ev::SenderTry(f));
            }
            self.arm_timer(f);
        }

        /// At most one pending timer event per flow, re-armed lazily when it fires early.
        fn arm_timer(&mut self, f: u32) {
            if !self.timer_pending[f as usize] {
                if let Some(d) = self.tx[f as usize].timer() {
                    self.timer_pending[f as usize] = true;
                    self.at(d.max(self.now), Ev::Timer(f));
                }
            }
        }

        fn kick_port(&mut self) {
            if self.port_busy {
                return;
            }
            let now = self.now;
            let (pkt, ser, trimmed) = if let Some(p) = self.hdr_q.pop_front() {
                (p, HDR, true)
            } else if let Some(p) = self.data_q.pop_front() {
                (p, PKT, false)
            } else {
                return;
            };
            self.port_busy = true;
            self.at(now + ser, Ev::PortFree);
            self.at(now + ser + PROP, Ev::AtReceiver { flow: pkt.0, seq: pkt.1, trimmed });
        }

        fn wake_pacer(&mut self) {
            if !self.pacer_pending {
                if let Some(t) = self.pacer.next_time() {
                    self.pacer_pending = true;
                    self.at(t.max(self.now), Ev::PacerWake);
                }
            }
        }
    }

    fn setup(flows: u32, segs: u32) -> Setup {
        Setup {
            flows,
            segs,
            init_window: 20,
            rto: 1_000_000_000,
            data_cap: 8,
            hdr_cap: usize::MAX,
            drop_ack_every: 0,
            drop_pull_every: 0,
        }
    }

    #[test]
    fn closed_loop_incast_completes_without_timeouts() {
        let (flows, segs) = (8, 100);
        let o = Net::new(setup(flows, segs)).run();
        assert_eq!(o.new_data, vec![segs; flows as usize], "each segment new exactly once");
        assert_eq!(o.duplicates, 0, "only trimmed segments are resent");
        assert!(o.trims > 0);
        assert_eq!(o.bounces, 0);
        assert!(o.stats.iter().all(|s| s.timeouts == 0), "{:?}", o.stats);
        let retx: u32 = o.stats.iter().map(|s| s.retransmits).sum();
        assert_eq!(retx, o.trims, "one retransmission per trimmed packet");
        // The bottleneck is the limit: 800 packets at one per PKT, plus a few round trips.
        let floor = (flows * segs) as Ps * PKT;
        assert!(o.end >= floor && o.end < floor + 20 * PKT, "end {} floor {}", o.end, floor);
    }

    #[test]
    fn closed_loop_recovers_lost_acks_and_pulls_by_timeout() {
        let mut su = setup(8, 100);
        su.rto = 50 * PKT;
        su.drop_ack_every = 13;
        su.drop_pull_every = 7;
        let o = Net::new(su).run();
        assert_eq!(o.new_data, vec![100; 8]);
        assert!(o.dropped_acks > 0 && o.dropped_pulls > 0);
        assert!(o.trims > 0);
        let timeouts: u32 = o.stats.iter().map(|s| s.timeouts).sum();
        assert!(timeouts > 0, "lost ACKs of the last segments need the timer");
        // The sender learns of a segment only through its ACK, so every lost ACK costs at
        // least one more copy of its segment.
        assert!(o.duplicates >= o.dropped_acks, "{} duplicates, {} ACKs lost", o.duplicates, o.dropped_acks);
    }

    #[test]
    fn closed_loop_with_bounces_completes() {
        let mut su = setup(32, 40);
        su.rto = 100 * PKT;
        su.data_cap = 4;
        su.hdr_cap = 4;
        let o = Net::new(su).run();
        assert_eq!(o.new_data, vec![40; 32]);
        assert!(o.bounces > 0, "header queue overflowed");
        assert!(o.trims > o.bounces);
        // Every trimmed packet, NACKed or bounced, never arrived and had to be sent again.
        let retx: u32 = o.stats.iter().map(|s| s.retransmits).sum();
        assert!(retx >= o.trims);
        // Bounces shrink a flow's pipeline (no pull is owed for them); the timer restarts
        // flows whose whole window bounced.
        assert!(o.stats.iter().any(|s| s.timeouts > 0));
    }
}
