//! State of two OpenOptics infrastructure services (docs/engine.md#openoptics-services) that the packet
//! engine ([`crate::sim`]) switches on per run.
//!
//! * [`Eqo`] — queue-occupancy estimation as a switch data plane does it: one register
//!   per calendar queue, `+ wire bytes` on enqueue, and every update interval (50 ns by
//!   default) the *active* queue's register loses `bandwidth × interval` (floor 0), as if
//!   it dequeued at line rate. Ticks fall on multiples of the interval; the register of a
//!   queue is brought up to date lazily, when it is next read, by counting the ticks that
//!   fell inside occurrences of its slice since the last read — exact for the register,
//!   cost proportional to the occurrences needed to drain it, nothing per tick. The
//!   engine compares every estimate with the exact occupancy it knows and reports the
//!   estimation error.
//! * [`Offload`] — buffer offloading (RotorNet/Opera, OpenOptics §5.2): a ToR keeps only
//!   `queues` calendar queues per optical egress port (the current slice and the next
//!   `queues − 1`); a packet whose departure lies further ahead travels down to a random
//!   host below the ToR, which keeps it and sends it back up so that it reaches the ToR
//!   when its departure slice enters the window (the circuit notification that guides
//!   the host is the schedule itself, known to every node of a traffic-oblivious fabric).
//!   The trips use the real host links (serialization, propagation, contention with the
//!   host's own traffic); the ToR buffer holds only the window.
//!
//! * [`SlotServices`] — congestion detection, push-back and flow pausing on the slotted
//!   cell engines (Sirius, Shale): counters, messages in flight, paused sources.
//!
//! Decisions (OpenOptics leaves them open): the EQO tick grid is global (t = k·interval)
//! and ticks in guard bands count as dequeues, like the hardware generator; the
//! admissible bytes of the active queue are bandwidth × remaining time of the slice, of
//! any other queue bandwidth × the slice's duration. The offload window counts slices
//! (N = `queues`); the host is drawn uniformly from the hosts below the ToR (named random
//! stream `offload`); a returning packet that finds its window slice full again goes back
//! down (counted again).

use crate::rng::Stream;
use crate::schedule::Schedule;
use crate::units::Ps;
use std::collections::HashMap;

/// Queue-occupancy estimation registers and their error statistics.
#[derive(Debug, Clone, Default)]
pub struct Eqo {
    interval: Ps,
    /// Per port (allocated on first use): per calendar queue (register bytes, last tick applied).
    regs: Vec<Vec<(u64, u64)>>,
    pub samples: u64,
    pub abs_err_sum: u64,
    pub max_abs_err: u64,
    /// Sum of (estimate − exact), to report the bias.
    pub signed_err_sum: i128,
}

impl Eqo {
    pub fn new(interval: Ps, n_ports: usize) -> Self {
        Eqo { interval, regs: if interval > 0 { vec![Vec::new(); n_ports] } else { Vec::new() }, ..Default::default() }
    }

    pub fn enabled(&self) -> bool {
        self.interval > 0
    }

    /// The register of calendar queue `q` of `port` at time `now` (drained by the ticks
    /// that fell in `q`'s occurrences since it was last read); `bytes_per_tick` =
    /// bandwidth × interval.
    pub fn read(&mut self, sched: &Schedule, port: u32, q: u32, bytes_per_tick: u64, now: Ps) -> u64 {
        let iv = self.interval;
        let n = sched.slices();
        let regs = &mut self.regs[port as usize];
        if regs.is_empty() {
            *regs = vec![(0, 0); n as usize];
        }
        let (mut est, last) = regs[q as usize];
        let b = now / iv;
        if est > 0 && b > last {
            let lo_t = (last + 1) * iv;
            let s = sched.slice_at(lo_t);
            let mut abs = sched.next_occurrence(s, q);
            loop {
                let o = sched.slice(abs);
                if o.start > b * iv {
                    break;
                }
                // ticks k with k·iv in [max(start, lo_t), min(end − 1, b·iv)]
                let lo = o.start.max(lo_t);
                let hi = (o.end - 1).min(b * iv);
                if hi >= lo {
                    let ticks = hi / iv - lo.div_ceil(iv) + 1;
                    est = est.saturating_sub(ticks.saturating_mul(bytes_per_tick));
                    if est == 0 {
                        break;
                    }
                }
                abs += n as u64;
            }
        }
        regs[q as usize] = (est, b.max(last));
        est
    }

    /// Add a packet's bytes to the register (after [`Eqo::read`] at the same time).
    pub fn add(&mut self, port: u32, q: u32, wire: u64) {
        self.regs[port as usize][q as usize].0 += wire;
    }

    /// Record the difference between an estimate and the exact occupancy.
    pub fn record(&mut self, est: u64, exact: u64) {
        let d = est.abs_diff(exact);
        self.samples += 1;
        self.abs_err_sum += d;
        self.max_abs_err = self.max_abs_err.max(d);
        self.signed_err_sum += est as i128 - exact as i128;
    }

    /// Forget the registers of a port whose calendar queues were rebuilt.
    pub fn reset_port(&mut self, port: u32) {
        if let Some(r) = self.regs.get_mut(port as usize) {
            r.clear();
        }
    }
}

/// A packet waiting on a host: the ToR egress port and departure slice it returns to,
/// the absolute slice it was planned for, and its hop count before the trip.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    pub port: u32,
    pub dep: u32,
    pub abs: u64,
    pub hops: u16,
}

/// Buffer-offloading state and counters.
pub struct Offload {
    /// Calendar queues kept at the ToR per optical port (0 = offloading off).
    pub queues: u32,
    /// Host endpoints below each node.
    pub node_hosts: Vec<Vec<u32>>,
    pub rng: Stream,
    /// Packets away from their ToR (on the way down, held, or on the way back up).
    pub held: HashMap<u32, Held>,
    pub packets: u64,
    pub bytes: u64,
    pub held_bytes: u64,
    pub peak_held_bytes: u64,
    /// Packets beyond the window kept in the ToR because the chosen host's downlink was
    /// full.
    pub refused: u64,
    /// Departures committed outside the window although the packet was not refused (a
    /// consistency check between the offload decision and the plan; must stay 0).
    pub window_violations: u64,
}

impl Offload {
    pub fn new(queues: u32, node_hosts: Vec<Vec<u32>>, seed: u64) -> Self {
        Offload {
            queues,
            node_hosts,
            rng: Stream::new(seed, "offload"),
            held: HashMap::new(),
            packets: 0,
            bytes: 0,
            held_bytes: 0,
            peak_held_bytes: 0,
            refused: 0,
            window_violations: 0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.queues > 0
    }

    /// A random host below `node`, if it has any.
    pub fn pick_host(&mut self, node: u32) -> Option<u32> {
        let hs = &self.node_hosts[node as usize];
        if hs.is_empty() {
            return None;
        }
        Some(hs[self.rng.below(hs.len() as u32) as usize])
    }

    pub fn hold(&mut self, pid: u32, h: Held, wire: u64) {
        self.held.insert(pid, h);
        self.packets += 1;
        self.bytes += wire;
        self.held_bytes += wire;
        self.peak_held_bytes = self.peak_held_bytes.max(self.held_bytes);
    }

    pub fn back(&mut self, pid: u32, wire: u64) -> Option<Held> {
        let h = self.held.remove(&pid)?;
        self.held_bytes -= wire;
        Some(h)
    }
}

/// A push-back message in flight: (arrival slot, sequence, source, destination, pause end).
type PushBack = (u64, u64, u32, u32, u64);

/// The services on a slotted cell engine (Sirius, Shale), in the engine's time unit
/// (slots / timeslots): congestion counters, push-back messages in flight and the
/// sources they paused. Queue-occupancy estimation and buffer offloading have no
/// slotted counterpart and are rejected by [`SlotServices::new`].
#[derive(Debug, Clone, Default)]
pub struct SlotServices {
    pub cfg: crate::spec::Services,
    pub congestion_events: u64,
    pub pushback_msgs: u64,
    pub paused_attempts: u64,
    /// Push-back messages in flight: (arrival slot, sequence, source, destination, pause
    /// end slot, exclusive), earliest first.
    inflight: std::collections::BinaryHeap<std::cmp::Reverse<PushBack>>,
    /// (source << 32 | destination) → slot until which the source starts no new cell
    /// towards the destination (exclusive). Only looked up, never iterated.
    paused: HashMap<u64, u64>,
}

impl SlotServices {
    /// `engine` names the engine in the errors.
    pub fn new(cfg: crate::spec::Services, engine: &str) -> Result<Self, crate::error::SpecError> {
        use crate::error::SpecError;
        if cfg.eqo_interval_ps > 0 {
            return Err(SpecError::new(
                "queue_estimation",
                "eqo",
                format!("{engine} counts the cells of every slot queue exactly; EQO estimates calendar-queue bytes of a packet switch and has no slotted counterpart"),
            ));
        }
        if cfg.offload_queues > 0 {
            return Err(SpecError::new(
                "buffer_offload",
                cfg.offload_queues,
                format!("{engine}'s endpoints are ToRs with no hosts below them to hold offloaded cells"),
            ));
        }
        let mut cfg = cfg;
        cfg.congestion_detection |= cfg.pushback;
        Ok(SlotServices { cfg, ..Default::default() })
    }

    /// A cell joins a slot queue holding `occupancy` cells, of which the next occurrence
    /// of its slot carries `capacity`: count a congestion event when the queue is full,
    /// and with push-back send the message that reaches `src` in slot `arrive` and pauses
    /// it towards `dst` for `pause` slots from then — the time the congested slot takes,
    /// from the detection, to come round and carry the cell. (A slot is much shorter than
    /// the message's trip, so a pause ending at a fixed time after the detection would
    /// mostly have expired when the source hears of it.) Returns whether it was congested.
    pub fn joined(&mut self, occupancy: u64, capacity: u64, src: u32, dst: u32, arrive: u64, pause: u64) -> bool {
        if !self.cfg.congestion_detection || occupancy < capacity {
            return false;
        }
        self.congestion_events += 1;
        if self.cfg.pushback {
            let seq = self.pushback_msgs;
            self.pushback_msgs += 1;
            self.inflight.push(std::cmp::Reverse((arrive, seq, src, dst, arrive + pause)));
        }
        true
    }

    /// Deliver the push-back messages that have arrived by slot `now`.
    pub fn deliver(&mut self, now: u64) {
        while let Some(&std::cmp::Reverse((a, _, src, dst, until))) = self.inflight.peek() {
            if a > now {
                break;
            }
            self.inflight.pop();
            let e = self.paused.entry(((src as u64) << 32) | dst as u64).or_insert(0);
            *e = (*e).max(until);
        }
    }

    /// Is `src` pushed back from starting a cell towards `dst` in slot `now`? (Counts a
    /// paused attempt when it is.)
    #[inline]
    pub fn pushed_back(&mut self, src: u32, dst: u32, now: u64) -> bool {
        if !self.cfg.pushback || self.paused.is_empty() {
            return false;
        }
        let k = ((src as u64) << 32) | dst as u64;
        match self.paused.get(&k) {
            Some(&u) if u > now => {
                self.paused_attempts += 1;
                true
            }
            Some(_) => {
                self.paused.remove(&k);
                false
            }
            None => false,
        }
    }

    /// Is a flow that has started `sent` bytes an elephant held from indirect paths?
    /// (Counts a paused attempt when it is.)
    #[inline]
    pub fn elephant(&mut self, sent: u64) -> bool {
        if self.cfg.flow_pausing && sent >= self.cfg.elephant_bytes {
            self.paused_attempts += 1;
            true
        } else {
            false
        }
    }

    /// The counters as engine metrics (`svc_*`; Python moves them to `summary["services"]`).
    pub fn metrics(&self) -> Vec<(String, f64)> {
        vec![
            ("svc_congestion_events".into(), self.congestion_events as f64),
            ("svc_pushback_msgs".into(), self.pushback_msgs as f64),
            ("svc_paused_attempts".into(), self.paused_attempts as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched() -> Schedule {
        // 2 ports, 3 slices of 1 µs, no guard band; port 0 <-> port 1 in every slice
        Schedule::cyclic(vec![1_000_000; 3], 0, 2, vec![1, 0, 1, 0, 1, 0]).unwrap()
    }

    #[test]
    fn register_drains_only_while_its_queue_is_active() {
        let s = sched();
        let mut e = Eqo::new(50_000, 2); // 50 ns ticks
        assert_eq!(e.read(&s, 0, 1, 100, 0), 0);
        e.add(0, 1, 10_000);
        // slice 1 is [1 µs, 2 µs): 20 ticks at k·50 ns = 1.00, 1.05, … 1.95 µs
        assert_eq!(e.read(&s, 0, 1, 100, 999_999), 10_000); // nothing yet
        assert_eq!(e.read(&s, 0, 1, 100, 1_000_000), 9_900); // tick at 1.00 µs
        assert_eq!(e.read(&s, 0, 1, 100, 1_500_000), 8_900); // 10 more
        assert_eq!(e.read(&s, 0, 1, 100, 2_999_999), 8_000); // the rest of the slice: 9 more
        // occurrences [4 µs, 5 µs) and [7 µs, 8 µs): 20 ticks each, then the tick at 10 µs
        assert_eq!(e.read(&s, 0, 1, 100, 10_000_000), 8_000 - 41 * 100);
        // an idle queue never goes below zero
        assert_eq!(e.read(&s, 0, 1, 10_000, 20_000_000), 0);
    }

    #[test]
    fn slot_services_pause_from_the_message_arrival() {
        let cfg = crate::spec::Services { pushback: true, ..Default::default() };
        let mut s = SlotServices::new(cfg, "test").unwrap();
        assert!(s.cfg.congestion_detection);
        // an empty-enough queue is no congestion
        assert!(!s.joined(0, 1, 3, 7, 10, 5));
        // congestion at slot 4: the message reaches source 3 at slot 10, pause 5 slots
        assert!(s.joined(2, 1, 3, 7, 10, 5));
        assert_eq!((s.congestion_events, s.pushback_msgs), (1, 1));
        s.deliver(9);
        assert!(!s.pushed_back(3, 7, 9));
        s.deliver(10);
        assert!(s.pushed_back(3, 7, 10) && s.pushed_back(3, 7, 14));
        assert!(!s.pushed_back(3, 7, 15) && !s.pushed_back(3, 8, 12) && !s.pushed_back(4, 7, 12));
        assert_eq!(s.paused_attempts, 2);
        // detection only: counted, never paused
        let mut d = SlotServices::new(crate::spec::Services { congestion_detection: true, ..Default::default() }, "t").unwrap();
        assert!(d.joined(1, 1, 0, 1, 0, 100));
        d.deliver(50);
        assert!(!d.pushed_back(0, 1, 50));
        assert_eq!((d.congestion_events, d.pushback_msgs), (1, 0));
    }

    #[test]
    fn slot_services_reject_eqo_and_offload() {
        let e = SlotServices::new(crate::spec::Services { eqo_interval_ps: 50_000, ..Default::default() }, "sirius");
        assert_eq!(e.unwrap_err().field, "queue_estimation");
        let o = SlotServices::new(crate::spec::Services { offload_queues: 2, ..Default::default() }, "shale");
        assert_eq!(o.unwrap_err().field, "buffer_offload");
    }

    #[test]
    fn error_statistics() {
        let mut e = Eqo::new(50_000, 1);
        e.record(100, 40);
        e.record(0, 30);
        assert_eq!((e.samples, e.abs_err_sum, e.max_abs_err, e.signed_err_sum), (2, 90, 60, 30));
    }
}
