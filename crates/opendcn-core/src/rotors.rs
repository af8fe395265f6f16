//! Opera's rotor fabric: U rotor switches, each cycling through N/U matchings, staggered so
//! that exactly one rotor reconfigures per *superslice*; per superslice, the expander formed
//! by the other U − 1 rotors and its shortest paths.
//!
//! Timing (as in Opera's topology generator): a superslice lasts ε + δ + r. The rotor that
//! reconfigures in superslice s keeps its old matching during ε + δ and is down for the
//! last r; in superslice s + 1 it holds its next matching. Rotor `k` holds matching
//! ⌊((s − k) mod N) / U⌋ in superslice s and reconfigures at the end of s when
//! (s − k) mod N ≡ U − 1 (mod U). A rotor therefore holds one matching for (U − 1)
//! superslices + ε + δ.
//!
//! The packet engine runs these circuits as a cyclic [`Schedule`] of N slices of D with
//! guardband r: slice j holds superslice j's matchings and starts with the guardband of the
//! rotor that takes a new matching there (the engine's timeline is Opera's shifted by r).
//! [`Rotors::sched`] keeps that schedule with global port id `tor * U + rotor`; the
//! per-superslice shortest paths computed here give the longest path, which sets ε.

use crate::error::SpecError;
use crate::rng::Stream;
use crate::schedule::Schedule;
use crate::units::{Ps, NONE};

/// Marker for "no route" in next-hop tables.
pub const NO_HOP: u8 = u8::MAX;

/// Most ToRs the engine accepts (it keeps the shortest paths of every superslice).
pub const MAX_TORS: u32 = 256;

/// The rotor fabric and its per-superslice shortest paths.
pub struct Rotors {
    pub n: u32,
    pub u: u32,
    /// ε, δ, r and the superslice D = ε + δ + r.
    pub eps: Ps,
    pub delta: Ps,
    pub reconf: Ps,
    pub d: Ps,
    pub sched: Schedule,
    /// Per superslice index: the rotor that reconfigures at its end.
    pub changing: Vec<u32>,
    /// Per superslice index: next-hop rotor `nh[cur * n + dst]` and hop count.
    nh: Vec<Vec<u8>>,
    dist: Vec<Vec<u8>>,
    /// Longest shortest path over all superslices (ToR-to-ToR hops).
    pub max_hops: u32,
}

/// One 1-factorization of the complete graph on `n` nodes as `n` symmetric permutations
/// (circle method; a node paired with itself has no circuit), shuffled by the stream
/// `opera.matchings`, laid out as `n / u` rows of `n * u` entries (row k, entry
/// `tor * u + rotor` = the ToR that rotor's k-th matching connects `tor` to).
pub fn generate_matchings(n: u32, u: u32, seed: u64, attempt: u32) -> Vec<u32> {
    let mut all: Vec<Vec<u32>> = Vec::with_capacity(n as usize);
    if n.is_multiple_of(2) {
        let m = n - 1;
        for r in 0..m {
            let mut p = vec![0u32; n as usize];
            p[(n - 1) as usize] = r;
            p[r as usize] = n - 1;
            for i in 1..(n / 2) {
                let a = (r + i) % m;
                let b = (r + m - i) % m;
                p[a as usize] = b;
                p[b as usize] = a;
            }
            all.push(p);
        }
        all.push((0..n).collect()); // identity: no circuits
    } else {
        for r in 0..n {
            let mut p = vec![0u32; n as usize];
            p[r as usize] = r;
            for i in 1..=(n / 2) {
                let a = (r + i) % n;
                let b = (r + n - i) % n;
                p[a as usize] = b;
                p[b as usize] = a;
            }
            all.push(p);
        }
    }
    let mut rng = Stream::new(seed ^ ((attempt as u64) << 32), "opera.matchings");
    for i in (1..all.len()).rev() {
        let j = rng.below(i as u32 + 1) as usize;
        all.swap(i, j);
    }
    let per = (n / u) as usize;
    let mut out = vec![0u32; per * (n * u) as usize];
    for rotor in 0..u as usize {
        for k in 0..per {
            let m = &all[rotor * per + k];
            for t in 0..n as usize {
                out[k * (n * u) as usize + t * u as usize + rotor] = m[t];
            }
        }
    }
    out
}

impl Rotors {
    /// A fabric from generated matchings: random assignments of a 1-factorization to the
    /// rotors (stream `opera.matchings`), keeping, as Opera's generator does, the one with
    /// the shortest longest path among the first few whose every slice is connected.
    #[allow(clippy::too_many_arguments)]
    pub fn generated(n: u32, u: u32, seed: u64, eps: Ps, delta: Ps, reconf: Ps, prop: Ps, ser: Ps,
                     queue_pkts: u32) -> Result<(Self, Vec<u32>), SpecError> {
        let mut best: Option<(Rotors, Vec<u32>)> = None;
        let mut ok = 0;
        let mut last = None;
        for attempt in 0..200 {
            let m = generate_matchings(n, u, seed, attempt);
            match Rotors::new(n, u, &m, eps, delta, reconf, prop, ser, queue_pkts) {
                Ok(r) => {
                    ok += 1;
                    if best.as_ref().is_none_or(|b| r.max_hops < b.0.max_hops) {
                        best = Some((r, m));
                    }
                    if ok >= 4 {
                        break;
                    }
                }
                Err(e) => last = Some(e),
            }
        }
        best.ok_or_else(|| match last {
            Some(e) if e.field != "matchings" => e,
            _ => SpecError::new("uplinks", u, "no generated rotor schedule gives connected expander slices; use more uplinks"),
        })
    }

    /// Build the fabric. `eps`/`delta` of 0 mean "auto": ε = (h − 1)(p + q·s) + (q − 1)s and
    /// δ = p + s with h the longest shortest path, p the propagation, s the serialization
    /// of a full packet and q the data-queue length in packets (Opera's generator).
    #[allow(clippy::too_many_arguments)]
    pub fn new(n: u32, u: u32, matchings: &[u32], eps: Ps, delta: Ps, reconf: Ps,
               prop: Ps, ser: Ps, queue_pkts: u32) -> Result<Self, SpecError> {
        if !(2..=MAX_TORS).contains(&n) {
            return Err(SpecError::new("tors", n, format!("must be 2..{MAX_TORS}")));
        }
        if !(2..=32).contains(&u) || !n.is_multiple_of(u) {
            return Err(SpecError::new("uplinks", u, format!("must be 2..32 and divide the ToR count {n}")));
        }
        let per = (n / u) as usize;
        let row = (n * u) as usize;
        if matchings.len() != per * row {
            return Err(SpecError::new("matchings", matchings.len(),
                format!("expected {per} rows of {row} entries (tors / uplinks matchings per rotor)")));
        }
        // check every matching is a symmetric permutation, and every pair is covered once
        let mut seen = vec![0u8; (n * n) as usize];
        for k in 0..per {
            for r in 0..u as usize {
                for t in 0..n as usize {
                    let v = matchings[k * row + t * u as usize + r];
                    if v >= n || matchings[k * row + v as usize * u as usize + r] != t as u32 {
                        return Err(SpecError::new(format!("matchings[{k}][{}]", t * u as usize + r), v,
                            "every rotor matching must be a symmetric permutation of the ToRs"));
                    }
                    if v as usize != t {
                        seen[t * n as usize + v as usize] += 1;
                    }
                }
            }
        }
        if let Some(i) = seen.iter().enumerate().position(|(i, &c)| c != 1 && i / n as usize != i % n as usize) {
            return Err(SpecError::new("matchings", (i / n as usize, i % n as usize),
                "the matchings must connect every ToR pair exactly once per cycle"));
        }
        // schedule: N slices; slice j = superslice j's matchings
        let nports = (n * u) as usize;
        let mut peer = vec![NONE; n as usize * nports];
        for j in 0..n {
            for rotor in 0..u {
                let t = (j + n - rotor) % n;
                let k = (t / u) as usize;
                for tor in 0..n {
                    let v = matchings[k * row + (tor * u + rotor) as usize];
                    peer[(j as usize) * nports + (tor * u + rotor) as usize] = v * u + rotor;
                }
            }
        }
        let changing: Vec<u32> = (0..n).map(|j| (0..u).find(|&k| (j + n - k) % n % u == u - 1).unwrap()).collect();
        // routes: per superslice, BFS towards every destination over the rotors that stay up
        let mut r = Rotors { n, u, eps, delta, reconf, d: 0, sched: Schedule::fixed(0, vec![])?, changing,
                             nh: Vec::with_capacity(n as usize), dist: Vec::with_capacity(n as usize), max_hops: 0 };
        let mut adj = vec![NONE; nports];
        let mut queue = Vec::with_capacity(n as usize);
        for j in 0..n {
            for p in 0..nports {
                let q = peer[j as usize * nports + p];
                let rotor = p as u32 % u;
                adj[p] = if q / u == p as u32 / u || rotor == r.changing[j as usize] { NONE } else { q / u };
            }
            let mut nh = vec![NO_HOP; (n * n) as usize];
            let mut dist = vec![NO_HOP; (n * n) as usize];
            for dst in 0..n {
                // BFS from dst over symmetric edges; nh[c][dst] = rotor of the edge to the parent
                queue.clear();
                queue.push(dst);
                dist[(dst * n + dst) as usize] = 0;
                let mut head = 0;
                while head < queue.len() {
                    let c = queue[head];
                    head += 1;
                    let dc = dist[(c * n + dst) as usize];
                    for rotor in 0..u {
                        let v = adj[(c * u + rotor) as usize];
                        if v != NONE && dist[(v * n + dst) as usize] == NO_HOP {
                            dist[(v * n + dst) as usize] = dc + 1;
                            nh[(v * n + dst) as usize] = rotor as u8;
                            queue.push(v);
                        }
                    }
                }
                if queue.len() != n as usize {
                    return Err(SpecError::new("matchings", j,
                        "the expander of this superslice (rotors that stay up) is disconnected"));
                }
                let far = dist[(queue[queue.len() - 1] * n + dst) as usize] as u32;
                r.max_hops = r.max_hops.max(far);
            }
            r.nh.push(nh);
            r.dist.push(dist);
        }
        let q = queue_pkts.max(1) as u64;
        if r.eps == 0 {
            r.eps = (r.max_hops as u64 - 1) * (prop + q * ser) + (q - 1) * ser;
        }
        if r.delta == 0 {
            r.delta = prop + ser;
        }
        r.d = r.eps + r.delta + reconf;
        if r.eps == 0 && r.delta == 0 {
            return Err(SpecError::new("slice", 0, "superslice must be longer than the reconfiguration"));
        }
        r.sched = Schedule::cyclic(vec![r.d; n as usize], reconf, nports, peer)?;
        Ok(r)
    }

    /// Superslice index (in the cycle) of time `t`.
    #[inline]
    pub fn slice_idx(&self, t: Ps) -> u32 {
        ((t / self.d) % self.n as u64) as u32
    }

    /// Next-hop rotor from `cur` to `dst` on the shortest path of superslice `idx`.
    #[inline]
    pub fn next_hop(&self, idx: u32, cur: u32, dst: u32) -> u8 {
        self.nh[idx as usize][(cur * self.n + dst) as usize]
    }

    /// The rotors of the shortest path from `a` to `b` in superslice `idx` (empty if a == b).
    pub fn path(&self, idx: u32, a: u32, b: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut c = a;
        while c != b {
            let r = self.next_hop(idx, c, b) as u32;
            out.push(r);
            c = self.peer_in(idx, c, r);
        }
        out
    }

    /// Shortest-path hops from `cur` to `dst` in superslice `idx`.
    #[inline]
    pub fn hops(&self, idx: u32, cur: u32, dst: u32) -> u32 {
        self.dist[idx as usize][(cur * self.n + dst) as usize] as u32
    }

    /// The ToR `rotor` of `tor` reaches in superslice `idx` (NONE for a self-loop).
    #[inline]
    pub fn peer_in(&self, idx: u32, tor: u32, rotor: u32) -> u32 {
        let g = tor * self.u + rotor;
        let q = self.sched.peer(g, idx);
        if q == g { NONE } else { q / self.u }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_matchings_cover_every_pair_and_stagger_one_rotor() {
        for (n, u) in [(8u32, 4u32), (9, 3), (12, 4), (108, 6)] {
            let (r, _) = Rotors::generated(n, u, 7, 0, 0, 10_000_000, 500_000, 1_200_000, 8).unwrap();
            // exactly one rotor changes at every superslice boundary
            for j in 0..n {
                let changed: Vec<u32> = (0..u).filter(|&k| (0..n).any(|t| r.peer_in(j, t, k) != r.peer_in((j + 1) % n, t, k))).collect();
                assert!(changed.len() <= 1 && changed.iter().all(|&k| k == r.changing[j as usize]), "{n} {u} {j}");
            }
            assert!(r.max_hops >= 1);
        }
    }
}
