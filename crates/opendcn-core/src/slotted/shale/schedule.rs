//! Shale's schedules (docs/arch/shale.md#schedule): the EBS round robin of dimension h over
//! N = m^h nodes, and the interleaving of two of them by slot.
//!
//! Node x has coordinates c_0..c_{h-1}, its base-m digits (c_i = x / m^i mod m). An epoch
//! has h phases of m−1 entries; entry e is phase p = e / (m−1), offset j = e mod (m−1) + 1,
//! and in it every node sends to the node whose coordinate p is (c_p + j) mod m and
//! receives from (c_p − j) mod m (a permutation per entry). h = 1 is SRRD, the single
//! round robin of N − 1 entries.

use crate::error::SpecError;

/// One EBS sub-schedule.
#[derive(Debug, Clone)]
pub struct Ebs {
    pub n: u32,
    pub h: u32,
    pub m: u32,
    pow: Vec<u32>,
}

/// The integer r with r^h == n, if any.
pub fn exact_root(n: u32, h: u32) -> Option<u32> {
    if h == 0 {
        return None;
    }
    let guess = (n as f64).powf(1.0 / h as f64).round() as u64;
    for r in guess.saturating_sub(1)..=guess + 1 {
        if r.checked_pow(h) == Some(n as u64) {
            return Some(r as u32);
        }
    }
    None
}

impl Ebs {
    pub fn new(n: u32, h: u32) -> Result<Self, SpecError> {
        if !(1..=4).contains(&h) {
            return Err(SpecError::new("h", h, "the schedule dimension must be 1..4 (2-bit remaining-sprays header field)"));
        }
        let m = exact_root(n, h).ok_or_else(|| SpecError::new("nodes", n, format!("must be a perfect {h}-th power for h = {h}")))?;
        if m < 2 {
            return Err(SpecError::new("nodes", n, "need at least 2 nodes per coordinate"));
        }
        let pow = (0..h).map(|i| m.pow(i)).collect();
        Ok(Ebs { n, h, m, pow })
    }

    /// Entries per epoch: h (m − 1).
    #[inline]
    pub fn epoch(&self) -> u32 {
        self.h * (self.m - 1)
    }

    /// (phase, offset j in 1..m) of epoch entry e.
    #[inline]
    pub fn entry(&self, e: u32) -> (u32, u32) {
        (e / (self.m - 1), e % (self.m - 1) + 1)
    }

    /// Neighbour index of (phase, offset): p (m − 1) + j − 1.
    #[inline]
    pub fn index(&self, p: u32, j: u32) -> u32 {
        p * (self.m - 1) + j - 1
    }

    #[inline]
    pub fn coord(&self, x: u32, p: u32) -> u32 {
        x / self.pow[p as usize] % self.m
    }

    /// The node x sends to at (phase p, offset j).
    #[inline]
    pub fn tx_peer(&self, x: u32, p: u32, j: u32) -> u32 {
        let c = self.coord(x, p);
        let nc = (c + j) % self.m;
        x - c * self.pow[p as usize] + nc * self.pow[p as usize]
    }

    /// The node x receives from at (phase p, offset j).
    #[inline]
    pub fn rx_peer(&self, x: u32, p: u32, j: u32) -> u32 {
        let c = self.coord(x, p);
        let nc = (c + self.m - j) % self.m;
        x - c * self.pow[p as usize] + nc * self.pow[p as usize]
    }
}

/// The schedule every lane runs: one EBS sub-schedule, or two interleaved by slot.
/// Timeslot t (a new one every slot/lanes) belongs to sub-schedule 1 iff
/// ⌊(t+1)·num/den⌋ > ⌊t·num/den⌋ (evenly spread, fraction num/den), else to sub-schedule 0;
/// each sub-schedule advances its own entry counter only on its own slots.
#[derive(Debug, Clone)]
pub struct Plan {
    pub subs: Vec<Ebs>,
    pub num: u64,
    pub den: u64,
    /// First neighbour index of each sub-schedule (indices of both are concatenated).
    pub koff: Vec<u32>,
}

impl Plan {
    pub fn new(subs: Vec<Ebs>, num: u64, den: u64) -> Result<Self, SpecError> {
        if subs.len() == 2 && !(num > 0 && num < den) {
            return Err(SpecError::new("interleave", format!("{num}/{den}"), "fraction of slots must be in (0, 1)"));
        }
        let mut koff = Vec::new();
        let mut k = 0;
        for s in &subs {
            koff.push(k);
            k += s.epoch();
        }
        Ok(Plan { subs, num, den, koff })
    }

    /// Total neighbour indices over the sub-schedules.
    pub fn k_total(&self) -> u32 {
        self.subs.iter().map(|s| s.epoch()).sum()
    }

    /// (sub-schedule, its epoch entry) of timeslot t.
    #[inline]
    pub fn at(&self, t: u64) -> (usize, u32) {
        if self.subs.len() == 1 {
            return (0, (t % self.subs[0].epoch() as u64) as u32);
        }
        let before = t * self.num / self.den;
        if (t + 1) * self.num / self.den > before {
            (1, (before % self.subs[1].epoch() as u64) as u32)
        } else {
            (0, ((t - before) % self.subs[0].epoch() as u64) as u32)
        }
    }

    /// (sub-schedule, phase, offset) of global neighbour index k.
    #[inline]
    pub fn index_entry(&self, k: u32) -> (usize, u32, u32) {
        let mut sg = 0;
        while sg + 1 < self.subs.len() && k >= self.koff[sg + 1] {
            sg += 1;
        }
        let (p, j) = self.subs[sg].entry(k - self.koff[sg]);
        (sg, p, j)
    }

    /// The timeslot of the (n+1)-th occurrence of global neighbour index k at or after
    /// timeslot t (n = 0: the next one).
    pub fn next_occurrence(&self, k: u32, t: u64, n: u64) -> u64 {
        let (sg, _, _) = self.index_entry(k);
        let e = (k - self.koff[sg]) as u64;
        let ep = self.subs[sg].epoch() as u64;
        if self.subs.len() == 1 {
            return t + (e + ep - t % ep) % ep + n * ep;
        }
        let (num, den) = (self.num as u128, self.den as u128);
        // slots of sub-schedule sg before timeslot x
        let before1 = |x: u64| (x as u128 * num / den) as u64;
        let cnt = |x: u64| if sg == 1 { before1(x) } else { x - before1(x) };
        let c0 = cnt(t);
        let c = c0 + (e + ep - c0 % ep) % ep + n * ep;
        // the timeslot of sub-schedule sg's slot number c
        let mut x = if sg == 1 {
            (((c as u128 + 1) * den).div_ceil(num) - 1) as u64
        } else {
            let mut x = c;
            loop {
                let nx = c + before1(x);
                if nx == x {
                    break x;
                }
                x = nx;
            }
        };
        while self.at(x).0 != sg {
            x += 1;
        }
        debug_assert_eq!(self.slot(x).3, k);
        x
    }

    /// Global neighbour index k and (phase, offset) of timeslot t.
    #[inline]
    pub fn slot(&self, t: u64) -> (usize, u32, u32, u32) {
        let (s, e) = self.at(t);
        let (p, j) = self.subs[s].entry(e);
        (s, p, j, self.koff[s] + e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_occurrence_matches_a_scan() {
        let plans = [
            Plan::new(vec![Ebs::new(16, 2).unwrap()], 0, 1).unwrap(),
            Plan::new(vec![Ebs::new(16, 2).unwrap(), Ebs::new(16, 4).unwrap()], 2, 5).unwrap(),
        ];
        for plan in &plans {
            for k in 0..plan.k_total() {
                for t in [0u64, 1, 7, 33, 100] {
                    let mut seen = Vec::new();
                    let mut x = t;
                    while seen.len() < 3 {
                        if plan.slot(x).3 == k {
                            seen.push(x);
                        }
                        x += 1;
                    }
                    for (n, &want) in seen.iter().enumerate() {
                        assert_eq!(plan.next_occurrence(k, t, n as u64), want, "k {k} t {t} n {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_entry_is_a_permutation_and_covers_all_neighbours() {
        for (n, h) in [(16u32, 2u32), (64, 3), (16, 1), (81, 4), (576, 1)] {
            let s = Ebs::new(n, h).unwrap();
            let mut seen = vec![0u32; (n * n) as usize];
            for e in 0..s.epoch() {
                let (p, j) = s.entry(e);
                let mut hit = vec![false; n as usize];
                for x in 0..n {
                    let y = s.tx_peer(x, p, j);
                    assert_ne!(x, y);
                    assert!(!hit[y as usize], "two senders reach {y}");
                    hit[y as usize] = true;
                    assert_eq!(s.rx_peer(y, p, j), x);
                    seen[(x * n + y) as usize] += 1;
                }
            }
            // each node meets exactly the nodes differing in one coordinate, once per epoch
            for x in 0..n {
                for y in 0..n {
                    let diff = (0..h).filter(|&p| s.coord(x, p) != s.coord(y, p)).count();
                    assert_eq!(seen[(x * n + y) as usize], (diff == 1) as u32);
                }
            }
        }
    }

    #[test]
    fn roots_and_interleaving() {
        assert_eq!(exact_root(10_000, 2), Some(100));
        assert_eq!(exact_root(50_625, 4), Some(15));
        assert_eq!(exact_root(4_096, 4), Some(8));
        assert!(Ebs::new(10, 2).is_err());
        let p = Plan::new(vec![Ebs::new(16, 2).unwrap(), Ebs::new(16, 4).unwrap()], 2, 5).unwrap();
        let ones = (0..1000u64).filter(|&t| p.at(t).0 == 1).count();
        assert_eq!(ones, 400);
    }
}
