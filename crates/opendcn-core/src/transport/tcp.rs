//! TCP NewReno with optional DCTCP window reduction, as a sans-IO sender/receiver pair.
//!
//! The sender follows RFC 5681 (slow start, congestion avoidance, fast retransmit and
//! fast recovery), RFC 6582 (NewReno partial acknowledgements and the `recover` guard) and
//! RFC 6298 (retransmission timer). With [`TcpConfig::dctcp`] it also keeps the DCTCP
//! estimate `alpha` of the fraction of marked segments and cuts its window by `alpha/2`
//! once per window of data that saw an ECN echo (Alizadeh et al., SIGCOMM 2010; RFC 8257).
//!
//! Model simplifications (see the module conventions in [`super`]):
//! - Sequence numbers, windows and flight sizes count segments, not bytes. The window is a
//!   fractional number of segments; a new segment may go when the flight is below its
//!   integer part.
//! - The receiver acknowledges every data segment at once (no delayed ACKs) and echoes
//!   that segment's CE mark and send time, so ECN feedback is exact and every ACK yields an
//!   RTT sample (the timestamp option), including ACKs of retransmissions.
//! - No SACK, no limited transmit, no receive-window limit, no Nagle: a flow's bytes are
//!   all available at time zero.
//!
//! The engine drives a [`TcpSender`] by calling [`TcpSender::poll_send`] until it returns
//! `None` after every event that may open the window (start, [`TcpSender::on_ack`],
//! [`TcpSender::on_timer`]), and keeps one timer event at [`TcpSender::timer`].

use super::{seg_len, segments, Send, SenderStats, SeqSet};
use crate::units::Ps;

/// Picoseconds per millisecond.
const PS_PER_MS: Ps = 1_000_000_000;

/// Parameters of a TCP sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per segment.
    pub mss: u32,
    /// Initial congestion window, segments.
    pub init_cwnd: u32,
    /// Initial slow-start threshold, segments (`u32::MAX`: unlimited, slow start until
    /// the first loss). Slow start ends once the window reaches it.
    pub init_ssthresh: u32,
    /// Duplicate-ACK threshold for fast retransmit.
    pub dupack: u32,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Ps,
    /// Retransmission timeout before the first RTT sample.
    pub init_rto: Ps,
    /// Upper bound of the retransmission timeout (also caps exponential back-off).
    pub max_rto: Ps,
    /// DCTCP window reduction on ECN echoes (otherwise ECN echoes are ignored).
    pub dctcp: bool,
    /// DCTCP EWMA gain `g` of the marked fraction.
    pub dctcp_g: f64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            init_cwnd: 10,
            init_ssthresh: u32::MAX,
            dupack: 3,
            min_rto: PS_PER_MS,
            init_rto: PS_PER_MS,
            max_rto: 1000 * PS_PER_MS,
            dctcp: false,
            dctcp_g: 1.0 / 16.0,
        }
    }
}

/// What an ACK tells the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpAck {
    /// The next segment the receiver expects: every segment below it has been received.
    pub cum: u32,
    /// The data segment that triggered this ACK carried a CE mark.
    pub ece: bool,
    /// Send time of the data segment that triggered this ACK (timestamp echo).
    pub ts_echo: Ps,
}

/// Sending half of a TCP flow: congestion window, loss recovery and retransmission timer.
#[derive(Debug, Clone)]
pub struct TcpSender {
    cfg: TcpConfig,
    size: u64,
    /// Segments in the flow.
    n: u32,
    /// Oldest unacknowledged segment.
    snd_una: u32,
    /// Next segment to send as new data (rewound to `snd_una` by a timeout).
    snd_nxt: u32,
    /// One past the highest segment ever sent: a send below it is a retransmission.
    high: u32,
    /// Congestion window, segments.
    cwnd: f64,
    /// Slow-start threshold, segments.
    ssthresh: f64,
    /// Duplicate ACKs in a row.
    dupacks: u32,
    /// In NewReno fast recovery.
    in_recovery: bool,
    /// One past the highest segment sent when the last fast recovery or timeout began
    /// (RFC 6582 `recover` + 1): recovery ends, and a new fast retransmit is allowed, once
    /// `snd_una` reaches it.
    recover: u32,
    /// A retransmission to send ahead of new data and regardless of the window.
    retx_pending: Option<u32>,
    srtt: Option<Ps>,
    rttvar: Ps,
    rto: Ps,
    /// Retransmission deadline, armed while data is outstanding.
    deadline: Option<Ps>,
    /// DCTCP estimate of the marked fraction.
    alpha: f64,
    /// End of the current DCTCP observation window: it closes when `snd_una` reaches this.
    /// `None` until the first ACK after the pipe was empty; then it is `snd_nxt`.
    win_end: Option<u32>,
    /// Segments acknowledged in the current observation window, and those with ECE.
    win_acked: u32,
    win_marked: u32,
    stats: SenderStats,
    /// An application that writes its bytes at a constant rate (None: all of them are
    /// there from the start).
    app: Option<AppRate>,
}

/// An application writing a flow's bytes at `rate_bps` from `start`: segment `i` can go
/// once its last byte has been written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AppRate {
    start: Ps,
    rate_bps: u64,
    /// Segments written so far (new data may go below it).
    written: u32,
}

impl TcpSender {
    /// A sender for a flow of `size` payload bytes (`size > 0`).
    pub fn new(cfg: TcpConfig, size: u64) -> Self {
        assert!(size > 0, "a TCP flow needs at least one byte");
        assert!(cfg.mss > 0, "mss must be positive");
        assert!(cfg.dupack > 0, "the duplicate-ACK threshold must be positive");
        assert!(cfg.init_ssthresh > 0, "the initial slow-start threshold must be positive");
        assert!(cfg.min_rto <= cfg.max_rto, "min_rto must not exceed max_rto");
        assert!((0.0..=1.0).contains(&cfg.dctcp_g), "the DCTCP gain must be in [0, 1]");
        TcpSender {
            cfg,
            size,
            n: segments(size, cfg.mss),
            snd_una: 0,
            snd_nxt: 0,
            high: 0,
            cwnd: cfg.init_cwnd.max(1) as f64,
            ssthresh: cfg.init_ssthresh as f64,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            retx_pending: None,
            srtt: None,
            rttvar: 0,
            rto: cfg.init_rto,
            deadline: None,
            alpha: 1.0,
            win_end: None,
            win_acked: 0,
            win_marked: 0,
            stats: SenderStats::default(),
            app: None,
        }
    }

    /// The flow's bytes come from an application that writes them at `rate_bps` from
    /// `start` (an iperf-like on-off source): a new segment goes only once its last byte
    /// has been written, whatever the window; [`timer`](Self::timer) then also names the
    /// time the next one is written.
    pub fn with_app_rate(mut self, start: Ps, rate_bps: u64) -> Self {
        assert!(rate_bps > 0, "an application rate must be positive");
        self.app = Some(AppRate { start, rate_bps, written: 0 });
        self.app_write(start);
        self
    }

    /// Bytes the application has written by `now` (at most the flow's size).
    fn app_bytes(&self, a: AppRate, now: Ps) -> u64 {
        let dt = now.saturating_sub(a.start) as u128;
        ((dt * a.rate_bps as u128 / 8 / crate::units::PS_PER_S as u128) as u64).min(self.size)
    }

    /// Segments written by `now`: every whole one, and the last (short) one once the
    /// flow's last byte is.
    fn app_write(&mut self, now: Ps) {
        if let Some(a) = self.app {
            let b = self.app_bytes(a, now);
            let w = if b >= self.size { self.n } else { (b / self.cfg.mss as u64) as u32 };
            self.app = Some(AppRate { written: w.max(a.written), ..a });
        }
    }

    /// When the application has written the next segment (None: no application rate,
    /// or every segment is written).
    fn app_next(&self) -> Option<Ps> {
        let a = self.app?;
        if a.written >= self.n {
            return None;
        }
        let end = ((a.written as u64 + 1) * self.cfg.mss as u64).min(self.size) as u128;
        let dt = (end * 8 * crate::units::PS_PER_S as u128).div_ceil(a.rate_bps as u128);
        Some(a.start.saturating_add(dt.min(Ps::MAX as u128) as Ps))
    }

    /// Segments sent and not yet acknowledged (counting from `snd_nxt`).
    #[inline]
    fn flight(&self) -> u32 {
        self.snd_nxt - self.snd_una
    }

    /// The pending retransmission, if it still refers to an outstanding segment.
    #[inline]
    fn pending(&self) -> Option<u32> {
        self.retx_pending.filter(|&s| s >= self.snd_una && s < self.snd_nxt)
    }

    /// Whether the window lets a new segment go.
    #[inline]
    fn window_open(&self) -> bool {
        // `cwnd >= 1` always, so the integer part is a valid window of at least one.
        self.snd_nxt < self.n && self.flight() < self.cwnd as u32
            && self.app.is_none_or(|a| self.snd_nxt < a.written)
    }

    /// The next segment to put on the wire, marked as sent: a pending retransmission
    /// first (regardless of the window), else the next segment the window allows. Arms
    /// the retransmission timer at `now + rto` if it is not armed.
    pub fn poll_send(&mut self, now: Ps) -> Option<Send> {
        self.app_write(now);
        let seq = if let Some(s) = self.pending() {
            self.retx_pending = None;
            s
        } else if self.window_open() {
            self.retx_pending = None; // stale (already acknowledged or rewound past)
            self.snd_nxt += 1;
            self.snd_nxt - 1
        } else {
            return None;
        };
        let retx = seq < self.high;
        if retx {
            self.stats.retransmits += 1;
        } else {
            self.high = seq + 1;
        }
        if self.deadline.is_none() {
            self.deadline = Some(now.saturating_add(self.rto));
        }
        Some(Send { seq, len: seg_len(self.size, self.cfg.mss, seq), retx })
    }

    /// Whether [`poll_send`](Self::poll_send) would return a segment now.
    pub fn can_send(&self) -> bool {
        self.pending().is_some() || self.window_open()
    }

    /// An ACK arrived at `now`.
    pub fn on_ack(&mut self, now: Ps, ack: TcpAck) {
        self.app_write(now);
        let cum = ack.cum;
        // Old ACKs, and ACKs for data never sent, carry nothing usable.
        if cum < self.snd_una || cum > self.high {
            return;
        }
        if cum == self.snd_una {
            if self.snd_nxt > self.snd_una {
                self.on_dupack();
            }
            return;
        }
        let acked = cum - self.snd_una;
        self.rtt_sample(now.saturating_sub(ack.ts_echo));
        self.snd_una = cum;
        // After a go-back-N rewind the receiver may already hold segments beyond `snd_nxt`.
        self.snd_nxt = self.snd_nxt.max(cum);
        if self.in_recovery {
            if cum >= self.recover {
                // Full ACK: everything outstanding at the loss is acknowledged.
                self.in_recovery = false;
                self.dupacks = 0;
                self.cwnd = self.ssthresh.min(self.flight() as f64 + 1.0).max(1.0);
            } else {
                // Partial ACK: the next hole is lost too. Retransmit it, deflate the
                // window by what left the network and add back the retransmission.
                self.retx_pending = Some(cum);
                self.cwnd = (self.cwnd - acked as f64 + 1.0).max(1.0);
            }
        } else {
            self.dupacks = 0;
            self.grow(acked);
        }
        if self.cfg.dctcp {
            self.dctcp_ack(acked, ack.ece);
        }
        self.deadline =
            if self.snd_nxt > self.snd_una { Some(now.saturating_add(self.rto)) } else { None };
    }

    /// An ACK that repeats `snd_una` while data is outstanding.
    fn on_dupack(&mut self) {
        self.dupacks = self.dupacks.saturating_add(1);
        if self.in_recovery {
            // Each duplicate means a segment left the network: inflate.
            self.cwnd += 1.0;
        } else if self.dupacks == self.cfg.dupack && self.snd_una >= self.recover {
            self.ssthresh = (self.flight() / 2).max(2) as f64;
            self.cwnd = self.ssthresh + self.cfg.dupack as f64;
            self.recover = self.high;
            self.in_recovery = true;
            self.retx_pending = Some(self.snd_una);
            self.stats.fast_retransmits += 1;
        }
    }

    /// Window growth for `acked` newly acknowledged segments outside recovery: one segment
    /// per segment in slow start (not beyond `ssthresh`), `1/cwnd` per segment above it.
    fn grow(&mut self, acked: u32) {
        for _ in 0..acked {
            if self.cwnd < self.ssthresh {
                self.cwnd = (self.cwnd + 1.0).min(self.ssthresh);
            } else {
                self.cwnd += 1.0 / self.cwnd;
            }
        }
    }

    /// RFC 6298 estimator update with a new round-trip sample `r`; also ends back-off.
    fn rtt_sample(&mut self, r: Ps) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // Integer picoseconds, truncated; rttvar uses the previous srtt.
                let var = (3 * self.rttvar as u128 + srtt.abs_diff(r) as u128) / 4;
                let avg = (7 * srtt as u128 + r as u128) / 8;
                self.rttvar = var as Ps;
                self.srtt = Some(avg as Ps);
            }
        }
        let srtt = self.srtt.unwrap_or(0);
        let rto = srtt.saturating_add(self.rttvar.saturating_mul(4).max(1));
        self.rto = rto.clamp(self.cfg.min_rto, self.cfg.max_rto);
    }

    /// DCTCP accounting of an ACK that acknowledged `acked` new segments.
    fn dctcp_ack(&mut self, acked: u32, ece: bool) {
        let end = *self.win_end.get_or_insert(self.snd_nxt);
        self.win_acked += acked;
        if ece {
            self.win_marked += acked;
        }
        if self.snd_una < end {
            return;
        }
        let g = self.cfg.dctcp_g;
        let f = self.win_marked as f64 / self.win_acked as f64;
        self.alpha = (1.0 - g) * self.alpha + g * f;
        // Fast recovery has already cut the window for this round trip.
        if self.win_marked > 0 && !self.in_recovery {
            self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(1.0);
            self.ssthresh = self.cwnd;
        }
        self.win_acked = 0;
        self.win_marked = 0;
        self.win_end = if self.snd_nxt > self.snd_una { Some(self.snd_nxt) } else { None };
    }

    /// Retransmission deadline; `None` when nothing is outstanding. With an application
    /// rate, also the time the application writes its next segment when the sender waits
    /// for it (the earlier of the two).
    pub fn timer(&self) -> Option<Ps> {
        let waits = self.app.is_some_and(|a| self.snd_nxt >= a.written);
        match (self.deadline, if waits { self.app_next() } else { None }) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (d, w) => d.or(w),
        }
    }

    /// The timer fired at `now`: the application's newly written segments become
    /// sendable; then a no-op unless a retransmission deadline exists and `now` has
    /// reached it. Otherwise collapses the window to one segment, backs the timeout off
    /// and rewinds `snd_nxt` to `snd_una` (go-back-N); the timer is re-armed by the resend.
    pub fn on_timer(&mut self, now: Ps) {
        self.app_write(now);
        match self.deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        self.stats.timeouts += 1;
        self.ssthresh = (self.flight() / 2).max(2) as f64;
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.recover = self.high;
        self.dupacks = 0;
        self.rto = self.rto.saturating_mul(2).min(self.cfg.max_rto);
        self.snd_nxt = self.snd_una;
        self.retx_pending = None;
        self.deadline = None;
    }

    /// Every segment has been acknowledged.
    pub fn done(&self) -> bool {
        self.snd_una == self.n
    }

    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// Congestion window, segments.
    pub fn cwnd_segments(&self) -> f64 {
        self.cwnd
    }

    /// Slow-start threshold, segments (the initial one, `u32::MAX` by default, until the
    /// first reduction).
    pub fn ssthresh_segments(&self) -> f64 {
        self.ssthresh
    }

    /// Current retransmission timeout (including back-off).
    pub fn rto(&self) -> Ps {
        self.rto
    }

    /// Smoothed RTT; `None` before the first sample.
    pub fn srtt(&self) -> Option<Ps> {
        self.srtt
    }

    /// RTT variation; `None` before the first sample.
    pub fn rttvar(&self) -> Option<Ps> {
        self.srtt.map(|_| self.rttvar)
    }

    /// DCTCP marked-fraction estimate (1.0 initially).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn snd_una(&self) -> u32 {
        self.snd_una
    }

    pub fn snd_nxt(&self) -> u32 {
        self.snd_nxt
    }

    /// Segments in the flow.
    pub fn segments(&self) -> u32 {
        self.n
    }

    /// In NewReno fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
}

/// Receiving half of a TCP flow: records segments and acknowledges each one at once.
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    n: u32,
    rcvd: SeqSet,
}

impl TcpReceiver {
    /// A receiver for a flow of `size` payload bytes cut into `mss`-byte segments.
    pub fn new(size: u64, mss: u32) -> Self {
        let n = segments(size, mss);
        TcpReceiver { n, rcvd: SeqSet::new(n) }
    }

    /// A data segment arrived (`ce`: it carries a CE mark; `ts`: its send time): the ACK
    /// to send back at once, and whether the segment was new (not a duplicate).
    pub fn on_data(&mut self, seq: u32, ce: bool, ts: Ps) -> (TcpAck, bool) {
        debug_assert!(seq < self.n, "segment {seq} beyond the flow's {} segments", self.n);
        let new = self.rcvd.insert(seq);
        (TcpAck { cum: self.rcvd.cum, ece: ce, ts_echo: ts }, new)
    }

    /// Every segment has been received.
    pub fn complete(&self) -> bool {
        self.rcvd.cum >= self.n
    }

    pub fn received(&self) -> &SeqSet {
        &self.rcvd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Ps = 1_000_000;
    const MS: Ps = PS_PER_MS;

    fn cfg() -> TcpConfig {
        TcpConfig::default()
    }

    fn size_of(cfg: &TcpConfig, n: u32) -> u64 {
        n as u64 * cfg.mss as u64
    }

    /// Everything `poll_send` allows at `now`.
    fn drain(s: &mut TcpSender, now: Ps) -> Vec<Send> {
        std::iter::from_fn(|| s.poll_send(now)).collect()
    }

    fn ack(cum: u32, ts_echo: Ps) -> TcpAck {
        TcpAck { cum, ece: false, ts_echo }
    }

    // ---- a tiny closed loop over an ideal pipe ----

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Ev {
        Send(Send),
        Ack(TcpAck),
        Timeout,
    }

    #[derive(Clone, Copy)]
    enum Pkt {
        Data { seq: u32, ts: Ps },
        Ack(TcpAck),
    }

    struct Run {
        snd: TcpSender,
        rcv: TcpReceiver,
        /// Everything the sender saw or did, in order.
        log: Vec<(Ps, Ev)>,
    }

    /// One flow over a pipe: data leaves a link of `tx` ps per packet (infinite buffer),
    /// both directions add `delay`. `drop_data(i, send)` drops the `i`-th data packet sent,
    /// `drop_ack(i, t)` the `i`-th ACK (sent at `t`). Events are processed in time order
    /// (ties: send order); an ACK at the same instant as the deadline goes first.
    fn run(
        cfg: TcpConfig,
        n: u32,
        delay: Ps,
        tx: Ps,
        mut drop_data: impl FnMut(u64, Send) -> bool,
        mut drop_ack: impl FnMut(u64, Ps) -> bool,
    ) -> Run {
        let mut snd = TcpSender::new(cfg, size_of(&cfg, n));
        let mut rcv = TcpReceiver::new(size_of(&cfg, n), cfg.mss);
        let mut wire: Vec<(Ps, u64, Pkt)> = Vec::new();
        let mut log = Vec::new();
        let (mut now, mut link_free, mut order, mut nd, mut na) = (0, 0, 0u64, 0u64, 0u64);
        loop {
            while let Some(s) = snd.poll_send(now) {
                log.push((now, Ev::Send(s)));
                link_free = now.max(link_free) + tx;
                if !drop_data(nd, s) {
                    wire.push((link_free + delay, order, Pkt::Data { seq: s.seq, ts: now }));
                    order += 1;
                }
                nd += 1;
            }
            if snd.done() {
                break;
            }
            assert!(now < 10_000 * MS, "flow did not finish");
            let next = (0..wire.len())
                .min_by_key(|&i| (wire[i].0, wire[i].1))
                .filter(|&i| snd.timer().is_none_or(|d| wire[i].0 <= d));
            match (next, snd.timer()) {
                (Some(i), _) => {
                    let (t, _, p) = wire.swap_remove(i);
                    now = t;
                    match p {
                        Pkt::Data { seq, ts } => {
                            let (a, _) = rcv.on_data(seq, false, ts);
                            if !drop_ack(na, now) {
                                wire.push((now + delay, order, Pkt::Ack(a)));
                                order += 1;
                            }
                            na += 1;
                        }
                        Pkt::Ack(a) => {
                            log.push((now, Ev::Ack(a)));
                            snd.on_ack(now, a);
                        }
                    }
                }
                (_, Some(d)) => {
                    now = d;
                    let before = snd.stats().timeouts;
                    snd.on_timer(now);
                    assert_eq!(snd.stats().timeouts, before + 1);
                    log.push((now, Ev::Timeout));
                }
                (None, None) => panic!("stalled: nothing in flight and no timer"),
            }
        }
        Run { snd, rcv, log }
    }

    fn retransmitted(log: &[(Ps, Ev)]) -> Vec<u32> {
        log.iter()
            .filter_map(|(_, e)| match e {
                Ev::Send(s) if s.retx => Some(s.seq),
                _ => None,
            })
            .collect()
    }

    /// Checks a finished run: everything delivered, sender done, retransmit flags coherent.
    fn check_complete(r: &Run, n: u32) {
        assert!(r.snd.done());
        assert!(r.rcv.complete());
        assert_eq!(r.rcv.received().count, n);
        assert_eq!(r.rcv.received().missing(n), 0);
        assert_eq!(r.snd.timer(), None);
        let mut seen = vec![false; n as usize];
        for (_, e) in &r.log {
            if let Ev::Send(s) = e {
                assert_eq!(s.retx, seen[s.seq as usize], "retx flag of {}", s.seq);
                seen[s.seq as usize] = true;
            }
        }
        assert_eq!(retransmitted(&r.log).len() as u32, r.snd.stats().retransmits);
    }

    /// Position in the log of the (only) retransmission of `seq`.
    fn retx_pos(log: &[(Ps, Ev)], seq: u32) -> usize {
        let pos: Vec<usize> = (0..log.len())
            .filter(|&i| matches!(log[i].1, Ev::Send(s) if s.retx && s.seq == seq))
            .collect();
        assert_eq!(pos.len(), 1, "retransmissions of {seq}: {pos:?}");
        pos[0]
    }

    /// Duplicate ACKs for `cum` seen before log position `pos`, and whether the event right
    /// before the send burst containing `pos` is such a duplicate.
    fn dupacks_before(log: &[(Ps, Ev)], pos: usize, cum: u32) -> (usize, bool) {
        let n = log[..pos].iter().filter(|(_, e)| matches!(e, Ev::Ack(a) if a.cum == cum)).count();
        let trigger = log[..pos].iter().rev().find(|(_, e)| !matches!(e, Ev::Send(_)));
        // The first ACK carrying `cum` advanced snd_una; the rest are duplicates.
        (n - 1, matches!(trigger, Some((_, Ev::Ack(a))) if a.cum == cum))
    }

    // ---- 1. slow start ----

    #[test]
    fn slow_start_doubles_per_window() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 1000));
        let first = drain(&mut s, 0);
        assert_eq!(first.len(), 10);
        assert!(first.iter().enumerate().all(|(i, x)| x.seq == i as u32 && !x.retx));
        assert_eq!(first[0].len, 1460);
        assert!(!s.can_send());
        let mut r = TcpReceiver::new(size_of(&c, 1000), c.mss);
        for x in &first {
            let (a, new) = r.on_data(x.seq, false, 0);
            assert!(new);
            s.on_ack(10 * US, a);
        }
        assert_eq!(s.cwnd_segments(), 20.0);
        assert_eq!(s.snd_una(), 10);
        let second = drain(&mut s, 10 * US);
        assert_eq!(second.len(), 20);
        assert_eq!(second[0].seq, 10);
        assert_eq!(s.snd_nxt(), 30);
    }

    /// Window after each of `acks` in-order ACKs of one segment each (sending whatever
    /// the window allows before every ACK).
    fn cwnd_trace(c: TcpConfig, acks: u32) -> Vec<f64> {
        let n = 1000;
        let mut s = TcpSender::new(c, size_of(&c, n));
        let mut r = TcpReceiver::new(size_of(&c, n), c.mss);
        let mut out = Vec::new();
        let mut next = 0;
        for k in 0..acks {
            let now = (k as Ps + 1) * US;
            drain(&mut s, now);
            let (a, new) = r.on_data(next, false, 0);
            assert!(new);
            next += 1;
            s.on_ack(now, a);
            out.push(s.cwnd_segments());
        }
        out
    }

    #[test]
    fn initial_ssthresh_ends_slow_start_at_that_window() {
        // window 2, ssthresh 10: slow start adds one segment per ACK and stops at exactly
        // 10 (eight ACKs); congestion avoidance then adds 1/cwnd per ACK
        let c = TcpConfig { init_cwnd: 2, init_ssthresh: 10, ..cfg() };
        assert_eq!(TcpSender::new(c, 1).ssthresh_segments(), 10.0);
        let got = cwnd_trace(c, 12);
        let mut want = vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let mut w: f64 = 10.0;
        for _ in 0..4 {
            w += 1.0 / w;
            want.push(w);
        }
        assert_eq!(got, want);
        assert!(got[8] > 10.0 && got[8] < 10.1 + 1e-12);
        // the default (unlimited) stays in slow start: one segment per ACK
        let free = cwnd_trace(TcpConfig { init_cwnd: 2, ..cfg() }, 12);
        assert_eq!(free, (3..=14).map(|x| x as f64).collect::<Vec<_>>());
        assert_eq!(TcpSender::new(cfg(), 1).ssthresh_segments(), u32::MAX as f64);
    }

    #[test]
    fn initial_ssthresh_below_the_initial_window_starts_in_congestion_avoidance() {
        // the Duo setting (window and ssthresh 10) and a threshold below the window: no
        // slow-start step at all, the window is not cut either
        for th in [10, 4] {
            let c = TcpConfig { init_cwnd: 10, init_ssthresh: th, ..cfg() };
            let got = cwnd_trace(c, 3);
            let w1 = 10.0 + 1.0 / 10.0;
            let w2 = w1 + 1.0 / w1;
            assert_eq!(got, vec![w1, w2, w2 + 1.0 / w2], "ssthresh {th}");
        }
    }

    #[test]
    fn last_segment_is_short_and_flow_ends() {
        let c = cfg();
        let mut s = TcpSender::new(c, 2 * 1460 + 7);
        let sends = drain(&mut s, 0);
        assert_eq!(sends.iter().map(|x| x.len).collect::<Vec<_>>(), vec![1460, 1460, 7]);
        assert!(s.timer().is_some());
        s.on_ack(5 * US, ack(3, 0));
        assert!(s.done());
        assert_eq!(s.timer(), None);
        assert!(!s.can_send());
    }

    // ---- 2. exactly one fast retransmit ----

    fn one_loss(dupack: u32) {
        let c = TcpConfig { dupack, ..cfg() };
        let n = 40;
        let r = run(c, n, 5 * US, 120_000, |_, s| s.seq == 5 && !s.retx, |_, _| false);
        check_complete(&r, n);
        let st = r.snd.stats();
        assert_eq!(st, SenderStats { retransmits: 1, timeouts: 0, fast_retransmits: 1 });
        let pos = retx_pos(&r.log, 5);
        let (dups, triggered) = dupacks_before(&r.log, pos, 5);
        assert_eq!(dups, dupack as usize);
        assert!(triggered, "the retransmission follows the threshold duplicate at once");
    }

    #[test]
    fn one_fast_retransmit_at_third_dupack() {
        one_loss(3);
    }

    #[test]
    fn one_fast_retransmit_at_fifth_dupack() {
        one_loss(5);
    }

    #[test]
    fn dupacks_below_threshold_do_nothing() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 100));
        drain(&mut s, 0);
        s.on_ack(10 * US, ack(2, 0));
        drain(&mut s, 10 * US);
        let cwnd = s.cwnd_segments();
        for k in 1..=3 {
            s.on_ack(11 * US, ack(2, 0));
            let out = drain(&mut s, 11 * US);
            if k < 3 {
                assert!(out.is_empty(), "nothing after dupack {k}");
                assert!(!s.in_recovery());
            } else {
                assert_eq!(out, vec![Send { seq: 2, len: 1460, retx: true }]);
            }
        }
        // flight 14 - 2 = 12 → ssthresh 6, cwnd 6 + 3.
        assert_eq!(s.ssthresh_segments(), 6.0);
        assert_eq!(s.cwnd_segments(), 9.0);
        assert!(cwnd > 9.0);
        // A 4th and later duplicate inflates but never retransmits again.
        s.on_ack(12 * US, ack(2, 0));
        assert_eq!(s.cwnd_segments(), 10.0);
        assert!(drain(&mut s, 12 * US).is_empty());
        assert_eq!(s.stats().fast_retransmits, 1);
        // ECE on duplicates changes nothing either.
        s.on_ack(12 * US, TcpAck { cum: 2, ece: true, ts_echo: 0 });
        assert_eq!(s.stats().retransmits, 1);
    }

    // ---- 3. whole window lost ----

    #[test]
    fn whole_window_lost_times_out() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 100));
        let t0 = 3 * US;
        assert_eq!(drain(&mut s, t0).len(), 10);
        let d = s.timer().unwrap();
        assert!(d >= t0 + c.min_rto);
        assert_eq!(d, t0 + c.init_rto);
        s.on_timer(d - 1);
        assert_eq!(s.stats().timeouts, 0);
        assert_eq!(s.timer(), Some(d));
        assert_eq!(s.cwnd_segments(), 10.0);

        s.on_timer(d);
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!(s.cwnd_segments(), 1.0);
        assert_eq!(s.ssthresh_segments(), 5.0);
        assert_eq!(s.rto(), 2 * c.init_rto);
        assert_eq!(s.timer(), None);
        assert_eq!(s.poll_send(d), Some(Send { seq: 0, len: 1460, retx: true }));
        assert_eq!(s.poll_send(d), None);
        assert_eq!(s.stats().retransmits, 1);
        let d2 = s.timer().unwrap();
        assert_eq!(d2, d + 2 * c.init_rto);

        s.on_timer(d2);
        assert_eq!(s.stats().timeouts, 2);
        assert_eq!(s.rto(), 4 * c.init_rto);
        assert_eq!(s.ssthresh_segments(), 2.0);
        assert_eq!(s.poll_send(d2), Some(Send { seq: 0, len: 1460, retx: true }));
        assert_eq!(s.timer(), Some(d2 + 4 * c.init_rto));

        // The ACK of the resend ends back-off (fresh sample of 10 µs → min_rto) and opens
        // go-back-N: segment 1 again, then 2 as cwnd grows in slow start.
        s.on_ack(d2 + 10 * US, ack(1, d2));
        assert_eq!(s.rto(), c.min_rto);
        assert_eq!(s.cwnd_segments(), 2.0);
        let out = drain(&mut s, d2 + 10 * US);
        assert_eq!(out.iter().map(|x| (x.seq, x.retx)).collect::<Vec<_>>(), [(1, true), (2, true)]);
    }

    #[test]
    fn backoff_is_capped() {
        let c = TcpConfig { max_rto: 3 * MS, ..cfg() };
        let mut s = TcpSender::new(c, size_of(&c, 4));
        let mut now = 0;
        let mut rtos = vec![];
        for _ in 0..4 {
            drain(&mut s, now);
            now = s.timer().unwrap();
            s.on_timer(now);
            rtos.push(s.rto());
        }
        assert_eq!(rtos, vec![2 * MS, 3 * MS, 3 * MS, 3 * MS]);
    }

    #[test]
    fn timer_restarts_on_progress_and_clears_when_idle() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 3));
        drain(&mut s, 0);
        assert_eq!(s.timer(), Some(MS));
        s.on_ack(100 * US, ack(1, 0));
        assert_eq!(s.timer(), Some(100 * US + s.rto()));
        s.on_ack(150 * US, ack(1, 0)); // duplicate: no restart
        assert_eq!(s.timer(), Some(100 * US + s.rto()));
        s.on_ack(200 * US, ack(3, 0));
        assert_eq!(s.timer(), None);
        s.on_timer(u64::MAX); // no deadline: nothing happens
        assert_eq!(s.stats().timeouts, 0);
    }

    // ---- 4. RTT estimator ----

    #[test]
    fn rtt_estimator_matches_rfc6298() {
        let c = TcpConfig { min_rto: 1, ..cfg() };
        let mut s = TcpSender::new(c, size_of(&c, 100));
        assert_eq!(s.rto(), c.init_rto);
        assert_eq!(s.srtt(), None);
        drain(&mut s, 0);
        // R = 100 µs: srtt 100, rttvar 50, rto 100 + 4·50 = 300 µs.
        s.on_ack(100 * US, ack(1, 0));
        assert_eq!((s.srtt(), s.rttvar(), s.rto()), (Some(100 * US), Some(50 * US), 300 * US));
        // R = 200 µs: rttvar = 3/4·50 + 1/4·100 = 62.5; srtt = 7/8·100 + 1/8·200 = 112.5.
        s.on_ack(200 * US, ack(2, 0));
        assert_eq!(s.srtt(), Some(112_500_000));
        assert_eq!(s.rttvar(), Some(62_500_000));
        assert_eq!(s.rto(), 362_500_000);
        // R = 50 µs: rttvar = 3/4·62.5 + 1/4·62.5 = 62.5; srtt = 7/8·112.5 + 1/8·50.
        s.on_ack(250 * US, ack(3, 200 * US));
        assert_eq!(s.srtt(), Some(104_687_500));
        assert_eq!(s.rttvar(), Some(62_500_000));
        assert_eq!(s.rto(), 354_687_500);
        // Duplicates and old ACKs take no sample.
        s.on_ack(300 * US, ack(3, 0));
        s.on_ack(300 * US, ack(2, 0));
        assert_eq!(s.srtt(), Some(104_687_500));

        // Clamping: the same samples under the default 1 ms floor, and a huge one at 1 s.
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 100));
        drain(&mut s, 0);
        s.on_ack(100 * US, ack(1, 0));
        assert_eq!(s.srtt(), Some(100 * US));
        assert_eq!(s.rto(), MS);
        s.on_ack(5_000 * MS, ack(2, 0));
        assert_eq!(s.rto(), c.max_rto);
    }

    #[test]
    fn zero_variance_uses_granularity() {
        let c = TcpConfig { min_rto: 0, ..cfg() };
        let mut s = TcpSender::new(c, size_of(&c, 100));
        drain(&mut s, 0);
        s.on_ack(0, ack(1, 0)); // R = 0
        assert_eq!(s.rto(), 1);
    }

    // ---- 5. DCTCP ----

    /// One round: send what the window allows, then deliver and ACK all of it in order at
    /// `now + 10 µs`, marking the `i`-th segment of the round when `mark(i)`. Returns the
    /// cwnd just before the round's last ACK.
    fn round(
        s: &mut TcpSender,
        r: &mut TcpReceiver,
        now: &mut Ps,
        mark: impl Fn(usize) -> bool,
    ) -> f64 {
        let out = drain(s, *now);
        assert!(!out.is_empty());
        let ts = *now;
        *now += 10 * US;
        let mut before_last = 0.0;
        for (i, x) in out.iter().enumerate() {
            let (a, _) = r.on_data(x.seq, mark(i), ts);
            if i + 1 == out.len() {
                before_last = s.cwnd_segments();
            }
            s.on_ack(*now, a);
        }
        before_last
    }

    fn dctcp_pair(n: u32) -> (TcpSender, TcpReceiver) {
        let c = TcpConfig { dctcp: true, ..cfg() };
        (TcpSender::new(c, size_of(&c, n)), TcpReceiver::new(size_of(&c, n), c.mss))
    }

    #[test]
    fn dctcp_alpha_decays_without_marks() {
        let (mut s, mut r) = dctcp_pair(100_000);
        assert_eq!(s.alpha(), 1.0);
        let mut now = 0;
        for k in 1..=8 {
            round(&mut s, &mut r, &mut now, |_| false);
            assert!((s.alpha() - (15.0f64 / 16.0).powi(k)).abs() < 1e-12, "round {k}");
            assert_eq!(s.cwnd_segments(), 10.0 * 2f64.powi(k)); // no cut, slow start
        }
    }

    #[test]
    fn dctcp_all_marked_keeps_alpha_and_halves() {
        let (mut s, mut r) = dctcp_pair(100_000);
        let mut now = 0;
        // Round 1: cwnd grows 10 → 20 during the round, then one cut by alpha/2 = 1/2.
        let before = round(&mut s, &mut r, &mut now, |_| true);
        assert_eq!(before, 19.0);
        assert_eq!(s.alpha(), 1.0);
        assert_eq!(s.cwnd_segments(), 10.0);
        assert_eq!(s.ssthresh_segments(), 10.0);
        for _ in 0..5 {
            let start = s.cwnd_segments();
            let before = round(&mut s, &mut r, &mut now, |_| true);
            assert_eq!(s.alpha(), 1.0);
            assert!(before >= start); // no cut inside the window
            assert!(s.cwnd_segments() < start);
        }
        assert_eq!(s.stats(), SenderStats::default()); // ECE is not loss
    }

    #[test]
    fn dctcp_fraction_cuts_once_by_alpha_half() {
        let (mut s, mut r) = dctcp_pair(100_000);
        let mut now = 0;
        round(&mut s, &mut r, &mut now, |_| false);
        assert_eq!(s.cwnd_segments(), 20.0);
        // 20 segments, the first 5 marked: F = 1/4.
        let before = round(&mut s, &mut r, &mut now, |i| i < 5);
        assert_eq!(before, 39.0, "no cut before the window ends");
        let g = 1.0 / 16.0;
        let alpha = (1.0 - g) * (1.0 - g) + g * 0.25;
        assert!((s.alpha() - alpha).abs() < 1e-12);
        let cwnd = 40.0 * (1.0 - alpha / 2.0);
        assert!((s.cwnd_segments() - cwnd).abs() < 1e-9);
        assert_eq!(s.ssthresh_segments(), s.cwnd_segments());
        // Next round unmarked: alpha decays, no cut, congestion avoidance from here.
        let start = s.cwnd_segments();
        round(&mut s, &mut r, &mut now, |_| false);
        assert!((s.alpha() - (1.0 - g) * alpha).abs() < 1e-12);
        assert!(s.cwnd_segments() > start && s.cwnd_segments() < start + 1.0);
    }

    #[test]
    fn ece_ignored_without_dctcp() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 1000));
        let mut r = TcpReceiver::new(size_of(&c, 1000), c.mss);
        let mut now = 0;
        round(&mut s, &mut r, &mut now, |_| true);
        assert_eq!(s.cwnd_segments(), 20.0);
        assert_eq!(s.alpha(), 1.0);
    }

    #[test]
    fn dctcp_closed_loop_completes() {
        let c = TcpConfig { dctcp: true, ..cfg() };
        let n = 500;
        let mut s = TcpSender::new(c, size_of(&c, n));
        let mut r = TcpReceiver::new(size_of(&c, n), c.mss);
        let mut now = 0;
        // Mark whenever the window exceeds 16 segments (a crude step-marking queue).
        while !s.done() {
            let over = s.cwnd_segments() > 16.0;
            round(&mut s, &mut r, &mut now, |_| over);
        }
        assert!(r.complete());
        assert!(s.alpha() < 1.0 && s.alpha() > 0.0);
        assert!(s.cwnd_segments() < 40.0);
    }

    // ---- 6. closed loop over an ideal pipe ----

    const N: u32 = 1000;
    const DELAY: Ps = 5 * US;
    const TX: Ps = 120_000; // 1500 B at 100 Gb/s

    #[test]
    fn closed_loop_no_loss() {
        let r = run(cfg(), N, DELAY, TX, |_, _| false, |_, _| false);
        check_complete(&r, N);
        assert_eq!(r.snd.stats(), SenderStats::default());
        assert!(r.snd.srtt().unwrap() >= 2 * DELAY);
    }

    #[test]
    fn closed_loop_every_seventh_first_transmission_lost() {
        let r = run(cfg(), N, DELAY, TX, |i, s| i % 7 == 6 && !s.retx, |_, _| false);
        check_complete(&r, N);
        let st = r.snd.stats();
        assert!(st.retransmits > 0);
        assert!(st.fast_retransmits > 0);
    }

    #[test]
    fn closed_loop_every_seventh_packet_lost() {
        let r = run(cfg(), N, DELAY, TX, |i, _| i % 7 == 6, |_, _| false);
        check_complete(&r, N);
        assert!(r.snd.stats().retransmits > 0);
    }

    #[test]
    fn closed_loop_burst_lost() {
        let r = run(cfg(), N, DELAY, TX, |i, _| (200..260).contains(&i), |_, _| false);
        check_complete(&r, N);
        assert!(r.snd.stats().retransmits >= 60);
    }

    #[test]
    fn closed_loop_tail_lost_needs_timeout() {
        // The last three segments are lost once: too few duplicates, so the RTO recovers.
        let r = run(cfg(), 50, DELAY, TX, |_, s| s.seq >= 47 && !s.retx, |_, _| false);
        check_complete(&r, 50);
        let st = r.snd.stats();
        assert_eq!((st.timeouts, st.fast_retransmits, st.retransmits), (1, 0, 3));
    }

    #[test]
    fn closed_loop_ack_loss() {
        // Every third ACK lost: cumulative ACKs cover the gaps, nothing is resent.
        let r = run(cfg(), N, DELAY, TX, |_, _| false, |i, _| i % 3 == 2);
        check_complete(&r, N);
        assert_eq!(r.snd.stats(), SenderStats::default());
        // A blackout of ACKs stalls the sender until the RTO; go-back-N then jumps ahead
        // on the receiver's cumulative ACK.
        let r = run(cfg(), N, DELAY, TX, |_, _| false, |_, t| (30 * US..500 * US).contains(&t));
        check_complete(&r, N);
        let st = r.snd.stats();
        assert_eq!(st.timeouts, 1);
        assert_eq!(st.fast_retransmits, 0);
        assert_eq!(st.retransmits, 1);
    }

    // ---- 7. partial ACK ----

    #[test]
    fn partial_ack_retransmits_next_hole() {
        let n = 40;
        let lost = |_, s: Send| (s.seq == 5 || s.seq == 8) && !s.retx;
        let r = run(cfg(), n, DELAY, TX, lost, |_, _| false);
        check_complete(&r, n);
        assert_eq!(r.snd.stats(), SenderStats { retransmits: 2, timeouts: 0, fast_retransmits: 1 });
        assert_eq!(retransmitted(&r.log), vec![5, 8]);
        // 5 goes at the third duplicate of 5; 8 right after the partial ACK (cum 8).
        let (dups, trig) = dupacks_before(&r.log, retx_pos(&r.log, 5), 5);
        assert_eq!((dups, trig), (3, true));
        let p8 = retx_pos(&r.log, 8);
        let trigger = r.log[..p8].iter().rev().find(|(_, e)| !matches!(e, Ev::Send(_)));
        assert!(matches!(trigger, Some((_, Ev::Ack(a))) if a.cum == 8));
    }

    #[test]
    fn partial_ack_window_arithmetic() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 100));
        drain(&mut s, 0); // 0..10
        for _ in 0..3 {
            s.on_ack(10 * US, ack(0, 0));
        }
        // flight 10 → ssthresh 5, cwnd 8, recover = 10.
        assert_eq!(drain(&mut s, 10 * US), vec![Send { seq: 0, len: 1460, retx: true }]);
        assert_eq!(s.cwnd_segments(), 8.0);
        s.on_ack(20 * US, ack(4, 10 * US)); // partial: 4 acked → 8 − 4 + 1
        assert!(s.in_recovery());
        assert_eq!(s.cwnd_segments(), 5.0);
        assert_eq!(s.timer(), Some(20 * US + s.rto()));
        // flight 6 ≥ cwnd 5: only the hole goes.
        assert_eq!(drain(&mut s, 20 * US), vec![Send { seq: 4, len: 1460, retx: true }]);
        s.on_ack(30 * US, ack(10, 20 * US)); // full ACK: cwnd = min(ssthresh 5, 0 + 1)
        assert!(!s.in_recovery());
        assert_eq!(s.cwnd_segments(), 1.0);
        assert_eq!(s.timer(), None);
        assert_eq!(s.stats(), SenderStats { retransmits: 2, timeouts: 0, fast_retransmits: 1 });
    }

    #[test]
    fn no_second_fast_retransmit_before_recover() {
        let c = cfg();
        let mut s = TcpSender::new(c, size_of(&c, 100));
        drain(&mut s, 0); // 0..10
        let d = s.timer().unwrap();
        s.on_timer(d); // recover = 10
        assert_eq!(drain(&mut s, d).len(), 1);
        s.on_ack(d + 10 * US, ack(2, d)); // 1 was received before; cwnd 1 → 2
        assert_eq!(drain(&mut s, d + 10 * US).len(), 3); // cwnd 1 + 2 acked: 2, 3, 4 resent
        for _ in 0..5 {
            s.on_ack(d + 11 * US, ack(2, 0));
        }
        assert_eq!(s.stats().fast_retransmits, 0, "snd_una 2 has not passed recover 10");
    }

    #[test]
    fn receiver_acks_duplicates() {
        let mut r = TcpReceiver::new(3000, 1460);
        assert_eq!(r.on_data(1, true, 7), (TcpAck { cum: 0, ece: true, ts_echo: 7 }, true));
        assert_eq!(r.on_data(0, false, 8), (TcpAck { cum: 2, ece: false, ts_echo: 8 }, true));
        assert_eq!(r.on_data(0, false, 9), (TcpAck { cum: 2, ece: false, ts_echo: 9 }, false));
        assert!(!r.complete());
        assert_eq!(r.on_data(2, false, 10).0.cum, 3);
        assert!(r.complete());
        assert_eq!(r.received().count, 3);
    }

    #[test]
    fn an_application_rate_paces_new_segments_and_wakes_the_sender() {
        // 10 segments of 1 000 B written at 8 Mb/s: one segment per 1 ms, the window is no limit
        let cfg = TcpConfig { mss: 1000, init_cwnd: 100, ..TcpConfig::default() };
        let ms = PS_PER_MS;
        let mut s = TcpSender::new(cfg, 9_500).with_app_rate(5 * ms, 8_000_000);
        assert!(!s.can_send(), "nothing written yet");
        assert_eq!(s.timer(), Some(6 * ms), "the first segment is written 1 ms after the start");
        assert_eq!(s.poll_send(6 * ms - 1), None);
        s.on_timer(6 * ms);
        assert!(s.can_send());
        assert_eq!(s.poll_send(6 * ms).map(|x| x.seq), Some(0));
        assert_eq!(s.poll_send(6 * ms), None, "the second is not written yet");
        // the earlier of the retransmission deadline and the next write
        assert_eq!(s.timer(), Some(7 * ms));
        // by 9.7 ms three more are written: they go at once, whatever came before
        assert_eq!((0..4).filter_map(|_| s.poll_send(9 * ms + 700_000_000)).count(), 3);
        // the short last segment once the last byte is written (9 500 B at 9.5 ms after the start)
        let mut s2 = TcpSender::new(cfg, 9_500).with_app_rate(0, 8_000_000);
        assert_eq!((0..20).filter_map(|_| s2.poll_send(9_499_999_999)).count(), 9, "9 whole segments by 9.5 ms - 1 ps");
        assert_eq!(s2.poll_send(9_500 * ms / 1000).map(|x| (x.seq, x.len)), Some((9, 500)));
        assert_eq!(s2.timer(), s2.deadline, "every segment written: only the retransmission timer");
    }

    #[test]
    fn without_an_application_rate_the_sender_is_unchanged() {
        let cfg = TcpConfig { mss: 1000, init_cwnd: 4, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, 9_500);
        assert_eq!((0..10).filter_map(|_| s.poll_send(0)).count(), 4);
        assert_eq!(s.timer(), Some(cfg.init_rto));
    }

}
