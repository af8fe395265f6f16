//! The optical schedule: the only owner of slice arithmetic.
//!
//! A cyclic schedule is a sequence of `S` slices with (possibly non-uniform) durations; the
//! cycle repeats forever from t = 0. Slice `abs` (an absolute count since t = 0) has index
//! `abs % S` in the cycle. Each slice starts with a guardband during which circuits are
//! being reconfigured and no bit may be sent: a circuit is *up* in
//! `[start + guardband, end)`. The peer table maps (slice index, global port) to the
//! global port at the other end of the circuit, or [`NONE`].
//!
//! A *static* schedule (traffic-aware or electrical fabrics) has one slice of unbounded
//! length and no guardband; its circuits change only by runtime reconfiguration, which the
//! engine applies with a reconfiguration delay (see `sim`).

use crate::error::SpecError;
use crate::units::{Ps, NONE};

/// Where a time falls in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceRef {
    /// Absolute slice number since t = 0.
    pub abs: u64,
    /// Index in the cycle (`abs % S`).
    pub idx: u32,
    /// Start of the slice (the guardband starts here).
    pub start: Ps,
    /// End of the slice (exclusive); `Ps::MAX` for a static schedule.
    pub end: Ps,
}

/// A cyclic optical schedule with its peer table.
#[derive(Debug, Clone)]
pub struct Schedule {
    durations: Vec<Ps>,
    /// Offset of each slice from the start of the cycle.
    offsets: Vec<Ps>,
    cycle: Ps,
    uniform: Option<Ps>,
    guardband: Ps,
    n_ports: usize,
    peer: Vec<u32>,
    /// Per (slice, port): the circuit differs from the previous slice's, so the port is
    /// down for the guardband at the start of this slice.
    changes: Vec<bool>,
    is_static: bool,
}

impl Schedule {
    /// A cyclic schedule. `peer` has `durations.len() * n_ports` entries.
    pub fn cyclic(durations: Vec<Ps>, guardband: Ps, n_ports: usize, peer: Vec<u32>) -> Result<Self, SpecError> {
        if durations.is_empty() {
            return Err(SpecError::new("schedule.slices", 0, "a cyclic schedule needs at least one slice"));
        }
        for (i, &d) in durations.iter().enumerate() {
            if d <= guardband {
                return Err(SpecError::new(format!("schedule.slices[{i}]"), d,
                    format!("slice must be longer than the guardband ({guardband} ps)")));
            }
        }
        if peer.len() != durations.len() * n_ports {
            return Err(SpecError::new("schedule.peer", peer.len(),
                format!("expected {} slices x {} ports entries", durations.len(), n_ports)));
        }
        let mut offsets = Vec::with_capacity(durations.len());
        let mut acc: Ps = 0;
        for &d in &durations {
            offsets.push(acc);
            acc = acc.checked_add(d).ok_or_else(|| SpecError::new("schedule.slices", acc, "cycle overflows"))?;
        }
        let uniform = if durations.iter().all(|&d| d == durations[0]) { Some(durations[0]) } else { None };
        let changes = changes_of(&peer, durations.len(), n_ports);
        let s = Schedule { durations, offsets, cycle: acc, uniform, guardband, n_ports, peer, changes, is_static: false };
        s.check_symmetric()?;
        Ok(s)
    }

    /// A static schedule: one unbounded slice, no guardband.
    pub fn fixed(n_ports: usize, peer: Vec<u32>) -> Result<Self, SpecError> {
        if peer.len() != n_ports {
            return Err(SpecError::new("schedule.peer", peer.len(), format!("expected {n_ports} entries")));
        }
        let changes = vec![false; n_ports];
        let s = Schedule { durations: vec![Ps::MAX], offsets: vec![0], cycle: Ps::MAX, uniform: None,
                           guardband: 0, n_ports, peer, changes, is_static: true };
        s.check_symmetric()?;
        Ok(s)
    }

    /// Each port sends to at most one other port per slice and each port receives from at
    /// most one (two-way circuits pair both directions; directed circuits one).
    fn check_symmetric(&self) -> Result<(), SpecError> {
        let mut receiver = vec![u32::MAX; self.n_ports];
        for s in 0..self.durations.len() {
            let row = &self.peer[s * self.n_ports..(s + 1) * self.n_ports];
            for (p, &q) in row.iter().enumerate() {
                if q == NONE {
                    continue;
                }
                if q as usize >= self.n_ports || receiver[q as usize] == s as u32 {
                    return Err(SpecError::new(format!("schedule.peer[{s}][{p}]"), q,
                        "circuits must join two ports, each receiving from at most one port per slice (port used twice or out of range)"));
                }
                receiver[q as usize] = s as u32;
            }
        }
        Ok(())
    }

    /// Number of slices in the cycle.
    #[inline]
    pub fn slices(&self) -> u32 {
        self.durations.len() as u32
    }

    /// True for a static (single unbounded slice) schedule.
    #[inline]
    pub fn is_static(&self) -> bool {
        self.is_static
    }

    #[inline]
    pub fn guardband(&self) -> Ps {
        self.guardband
    }

    /// The guardband `port` observes at the start of slice index `idx`: the full
    /// guardband when its circuit changes there, none when it keeps the same peer.
    #[inline]
    pub fn guard_of(&self, port: u32, idx: u32) -> Ps {
        if self.changes[idx as usize * self.n_ports + port as usize] { self.guardband } else { 0 }
    }

    /// Duration of the whole cycle.
    pub fn cycle(&self) -> Ps {
        self.cycle
    }

    /// The slice in which time `t` falls.
    #[inline]
    pub fn slice_at(&self, t: Ps) -> SliceRef {
        if self.is_static {
            return SliceRef { abs: 0, idx: 0, start: 0, end: Ps::MAX };
        }
        let n = self.durations.len() as u64;
        let k = t / self.cycle;
        let r = t % self.cycle;
        let idx = match self.uniform {
            Some(d) => (r / d) as usize,
            None => self.offsets.partition_point(|&o| o <= r) - 1,
        };
        let start = k * self.cycle + self.offsets[idx];
        SliceRef { abs: k * n + idx as u64, idx: idx as u32, start, end: start + self.durations[idx] }
    }

    /// The slice with absolute number `abs`.
    #[inline]
    pub fn slice(&self, abs: u64) -> SliceRef {
        if self.is_static {
            return SliceRef { abs: 0, idx: 0, start: 0, end: Ps::MAX };
        }
        let n = self.durations.len() as u64;
        let idx = (abs % n) as usize;
        let start = (abs / n) * self.cycle + self.offsets[idx];
        SliceRef { abs, idx: idx as u32, start, end: start + self.durations[idx] }
    }

    /// Start and end of slice `abs`, whose index in the cycle is `idx` (`abs % S`): on a
    /// uniform schedule a product, without the division [`Schedule::slice`] needs.
    #[inline]
    pub fn bounds(&self, abs: u64, idx: u32) -> (Ps, Ps) {
        if let Some(d) = self.uniform {
            let start = abs * d;
            return (start, start + d);
        }
        if self.is_static {
            return (0, Ps::MAX);
        }
        let n = self.durations.len() as u64;
        let start = (abs / n) * self.cycle + self.offsets[idx as usize];
        (start, start + self.durations[idx as usize])
    }

    /// The absolute number of the first occurrence of slice index `idx` at or after the
    /// slice `from` (`from` itself when it has that index): "the next time slice `idx`
    /// comes round". The one place this arithmetic is written.
    #[inline]
    pub fn next_occurrence(&self, from: SliceRef, idx: u32) -> u64 {
        let n = self.durations.len() as u32;
        if idx >= n {
            return from.abs + ((idx + n - from.idx) % n) as u64;
        }
        // both indices below n: one subtraction instead of a remainder
        let k = idx + n - from.idx;
        from.abs + if k >= n { k - n } else { k } as u64
    }

    /// Start of the slice after the one containing `t`.
    #[inline]
    pub fn next_boundary(&self, t: Ps) -> Ps {
        self.slice_at(t).end
    }

    /// True while circuits are being reconfigured (`t` in the guardband of its slice).
    #[inline]
    pub fn in_guardband(&self, t: Ps) -> bool {
        let s = self.slice_at(t);
        t < s.start + self.guardband
    }

    /// `port`'s circuit at time `t`, if it is up: its peer port and the time it next goes
    /// down (the start of the first later slice with another peer; `Ps::MAX`: never).
    pub fn circuit_at(&self, port: u32, t: Ps) -> Option<(u32, Ps)> {
        let s = self.slice_at(t);
        let q = self.peer(port, s.idx);
        if q == NONE || t < s.start + self.guard_of(port, s.idx) {
            return None;
        }
        if self.is_static {
            return Some((q, Ps::MAX));
        }
        let n = self.durations.len() as u64;
        let mut k = s.abs + 1;
        while self.peer(port, (k % n) as u32) == q {
            k += 1;
            if k > s.abs + n {
                return Some((q, Ps::MAX));
            }
        }
        Some((q, self.slice(k).start))
    }

    /// Independent check that `[t, t + dur)` lies in one up period of `port`'s circuit to
    /// `peer`: every slice it touches has that peer, `t` is past the first slice's
    /// guardband and no later slice it touches starts with one.
    pub fn window_ok(&self, port: u32, peer: u32, t: Ps, dur: Ps) -> bool {
        let a = self.slice_at(t);
        if t < a.start + self.guard_of(port, a.idx) || self.peer(port, a.idx) != peer {
            return false;
        }
        let b = self.slice_at(t + dur.max(1) - 1);
        (a.abs + 1..=b.abs).all(|k| {
            let idx = (k % self.durations.len() as u64) as u32;
            self.guard_of(port, idx) == 0 && self.peer(port, idx) == peer
        })
    }

    /// The port at the other end of `port`'s circuit in slice index `idx`, or [`NONE`].
    #[inline]
    pub fn peer(&self, port: u32, idx: u32) -> u32 {
        self.peer[idx as usize * self.n_ports + port as usize]
    }

    /// Replace the circuits (same number of slices, same durations); returns the ports
    /// whose peer changed in any slice.
    pub fn reconnect(&mut self, peer: Vec<u32>) -> Result<Vec<u32>, SpecError> {
        let new = if self.is_static {
            Schedule::fixed(self.n_ports, peer)?
        } else {
            Schedule::cyclic(self.durations.clone(), self.guardband, self.n_ports, peer)?
        };
        let s = self.durations.len();
        let p = self.n_ports;
        let changed = (0..p)
            .filter(|&g| (0..s).any(|k| self.peer[k * p + g] != new.peer[k * p + g]))
            .map(|g| g as u32)
            .collect();
        self.peer = new.peer;
        self.changes = new.changes;
        Ok(changed)
    }
}

/// Per (slice, port): does the port's peer differ from the previous slice's (cyclically)?
fn changes_of(peer: &[u32], slices: usize, n_ports: usize) -> Vec<bool> {
    let mut out = vec![false; slices * n_ports];
    for k in 0..slices {
        let prev = (k + slices - 1) % slices;
        for p in 0..n_ports {
            out[k * n_ports + p] = peer[k * n_ports + p] != peer[prev * n_ports + p];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ring(n_ports: usize, slices: usize) -> Vec<u32> {
        // slice s pairs port p with port p ^ (s + 1) when in range (a simple valid pairing)
        let mut v = vec![NONE; n_ports * slices];
        for s in 0..slices {
            for p in 0..n_ports {
                let q = p ^ (s + 1);
                if q < n_ports {
                    v[s * n_ports + p] = q as u32;
                }
            }
        }
        v
    }

    #[test]
    fn uniform_slices_at_boundaries() {
        let s = Schedule::cyclic(vec![10_000_000; 3], 200_000, 4, ring(4, 3)).unwrap();
        assert_eq!(s.slice_at(0), SliceRef { abs: 0, idx: 0, start: 0, end: 10_000_000 });
        assert_eq!(s.slice_at(9_999_999).idx, 0);
        assert_eq!(s.slice_at(10_000_000), SliceRef { abs: 1, idx: 1, start: 10_000_000, end: 20_000_000 });
        assert_eq!(s.slice_at(30_000_000), SliceRef { abs: 3, idx: 0, start: 30_000_000, end: 40_000_000 });
        assert!(s.in_guardband(30_000_000));
        assert!(s.in_guardband(30_199_999));
        assert!(!s.in_guardband(30_200_000));
        assert_eq!(s.next_boundary(15_000_000), 20_000_000);
        assert_eq!(s.peer(0, 0), 1);
        assert_eq!(s.peer(0, 2), 3);
        // every port changes peer at every boundary here
        assert!((0..3).all(|k| (0..4).all(|p| s.guard_of(p, k) == 200_000)));
    }

    #[test]
    fn unchanged_circuits_keep_no_guardband() {
        // port 0-1 connected in both slices, ports 2-3 only in slice 1
        let n = NONE;
        let peer = vec![1, 0, n, n, 1, 0, 3, 2];
        let s = Schedule::cyclic(vec![1000, 1000], 100, 4, peer).unwrap();
        assert_eq!((s.guard_of(0, 0), s.guard_of(0, 1)), (0, 0));
        assert_eq!((s.guard_of(2, 0), s.guard_of(2, 1)), (100, 100));
    }

    #[test]
    fn rejects_bad_pairings() {
        let mut p = ring(4, 1);
        p[0] = 2; // port 0 -> 2 but 2 -> 3
        assert!(Schedule::cyclic(vec![100], 10, 4, p).is_err());
        assert!(Schedule::cyclic(vec![10], 10, 4, ring(4, 1)).is_err());
        assert!(Schedule::cyclic(vec![], 0, 4, vec![]).is_err());
        // directed circuits: a one-way ring is a valid schedule, two senders into one port are not
        assert!(Schedule::fixed(4, vec![1, 2, 3, 0]).is_ok());
        assert!(Schedule::fixed(4, vec![1, 2, 1, NONE]).is_err());

    }

    #[test]
    fn circuit_windows_span_slices_with_the_same_peer() {
        // port 0-1 in slices 0 and 1, none in slice 2; ports 2-3 only in slice 1
        let n = NONE;
        let peer = vec![1, 0, n, n, 1, 0, 3, 2, n, n, n, n];
        let s = Schedule::cyclic(vec![1000, 1000, 1000], 100, 4, peer).unwrap();
        // port 0 changes at slice 0 (from none in slice 2): down for the guardband, then up
        // until slice 2 starts
        assert_eq!(s.circuit_at(0, 50), None);
        assert_eq!(s.circuit_at(0, 100), Some((1, 2000)));
        assert_eq!(s.circuit_at(0, 1000), Some((1, 2000)));  // no guardband: same peer
        assert_eq!(s.circuit_at(0, 2500), None);
        assert_eq!(s.circuit_at(2, 1050), None);
        assert_eq!(s.circuit_at(2, 1100), Some((3, 2000)));
        // the independent check agrees
        assert!(s.window_ok(0, 1, 900, 200));     // across the boundary into slice 1
        assert!(!s.window_ok(0, 1, 1900, 200));   // into slice 2: no circuit
        assert!(!s.window_ok(0, 1, 50, 10));      // in the guardband
        assert!(!s.window_ok(2, 3, 1050, 100));
        assert!(s.window_ok(2, 3, 1100, 900));
        let f = Schedule::fixed(2, vec![1, 0]).unwrap();
        assert_eq!(f.circuit_at(0, 12345), Some((1, Ps::MAX)));
    }

    #[test]
    fn next_occurrence_comes_round() {
        let s = Schedule::cyclic(vec![100, 200, 300], 10, 2, ring(2, 3)).unwrap();
        let at = s.slice_at(650); // cycle 1, slice 0 (600..700)
        assert_eq!((at.abs, at.idx), (3, 0));
        assert_eq!(s.next_occurrence(at, 0), 3);
        assert_eq!(s.next_occurrence(at, 2), 5);
        let mid = s.slice(4);
        assert_eq!(s.next_occurrence(mid, 0), 6);
        assert_eq!(s.next_occurrence(mid, 1), 4);
    }

    proptest! {
        #[test]
        fn slice_at_is_consistent(durs in proptest::collection::vec(2u64..1000, 1..8), t in 0u64..1_000_000) {
            let n = durs.len();
            let s = Schedule::cyclic(durs.clone(), 1, 2, ring(2, n)).unwrap();
            let r = s.slice_at(t);
            prop_assert!(r.start <= t && t < r.end);
            prop_assert_eq!(r.end - r.start, durs[r.idx as usize]);
            prop_assert_eq!(s.slice(r.abs), r);
            prop_assert_eq!(s.slice_at(r.end).abs, r.abs + 1);
            prop_assert_eq!(r.idx as u64, r.abs % n as u64);
        }

        #[test]
        fn bounds_agree_with_slice(durs in proptest::collection::vec(2u64..1000, 1..8), same in proptest::bool::ANY,
                                   abs in 0u64..100_000) {
            // uniform schedules take the product, the others the cycle arithmetic
            let durs = if same { vec![durs[0]; durs.len()] } else { durs };
            let s = Schedule::cyclic(durs.clone(), 1, 2, ring(2, durs.len())).unwrap();
            let r = s.slice(abs);
            prop_assert_eq!(s.bounds(abs, r.idx), (r.start, r.end));
        }
    }
}
