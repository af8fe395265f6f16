//! End-to-end transports as sans-IO state machines.
//!
//! A transport is a per-flow sender and receiver that react to packet arrivals and timers
//! and tell the engine which segment to put on the wire next. Nothing here knows about
//! ports, events or the packet pool: the packet engine (`sim.rs`) drives them, and each
//! module is unit-tested on its own by feeding it arrivals and times (the style of
//! quinn-proto).
//!
//! [`rotorlb`] is the exception to "per flow": Opera's bulk transport keeps the state of
//! all hosts (commitments per rotor, relay queues) and is driven once per superslice and
//! per NIC poll, with the same sans-IO discipline.
//!
//! Conventions shared by every transport:
//! - A flow of `size` payload bytes is cut into segments of `mss` payload bytes; segment
//!   `i` carries bytes `[i·mss, min((i+1)·mss, size))` (the last one may be shorter).
//!   Sequence numbers count segments from 0.
//! - Times are integer picoseconds (`crate::units::Ps`).
//! - A sender exposes `poll_send(now)` (the next segment the window allows, marked sent),
//!   `timer()` (its one deadline, or `None` when idle: the engine keeps at most one pending
//!   timer event per flow and re-arms it lazily) and `on_timer(now)`.

pub mod ndp;
pub mod rotorlb;
pub mod tcp;

/// Number of segments of a flow of `size` bytes (`size > 0`).
#[inline]
pub fn segments(size: u64, mss: u32) -> u32 {
    size.div_ceil(mss as u64) as u32
}

/// Payload bytes of segment `seq` of a flow of `size` bytes.
#[inline]
pub fn seg_len(size: u64, mss: u32, seq: u32) -> u32 {
    let start = seq as u64 * mss as u64;
    (size - start).min(mss as u64) as u32
}

/// A segment the sender puts on the wire now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Send {
    pub seq: u32,
    /// Payload bytes (see [`seg_len`]).
    pub len: u32,
    /// True when this sequence number was sent before.
    pub retx: bool,
}

/// Counters every sender keeps (reported per flow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Segments sent again (fast retransmits, timeouts, NACKs, bounces).
    pub retransmits: u32,
    /// Retransmission timeouts that fired.
    pub timeouts: u32,
    /// Fast retransmits (TCP: after the duplicate-ACK threshold).
    pub fast_retransmits: u32,
}

/// A set of received sequence numbers (one bit each) with an in-order cursor.
#[derive(Debug, Clone, Default)]
pub struct SeqSet {
    bits: Vec<u64>,
    /// Every sequence number below it is in the set.
    pub cum: u32,
    pub count: u32,
}

impl SeqSet {
    pub fn new(n: u32) -> Self {
        SeqSet { bits: vec![0; (n as usize).div_ceil(64)], cum: 0, count: 0 }
    }

    #[inline]
    pub fn contains(&self, s: u32) -> bool {
        self.bits[(s / 64) as usize] >> (s % 64) & 1 == 1
    }

    /// Insert `s`; false if it was already there.
    pub fn insert(&mut self, s: u32) -> bool {
        let w = &mut self.bits[(s / 64) as usize];
        let m = 1u64 << (s % 64);
        if *w & m != 0 {
            return false;
        }
        *w |= m;
        self.count += 1;
        let n = self.bits.len() as u32 * 64;
        while self.cum < n && self.contains(self.cum) {
            self.cum += 1;
        }
        true
    }

    /// Sequence numbers in `0..n` not in the set (counted from the bits, not from `count`).
    pub fn missing(&self, n: u32) -> u32 {
        let have: u32 = (0..n).filter(|&s| self.contains(s)).count() as u32;
        n - have
    }
}

