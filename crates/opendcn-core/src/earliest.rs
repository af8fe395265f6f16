//! Earliest paths across time slices (OpenOptics' `earliest_path`) for cyclic schedules,
//! and the two routings built on them: HOHO and UCMP.
//!
//! For every source node, arrival slice `a` and destination, the index keeps the
//! Pareto-best paths over (arrival offset, hops) with at most `max_hop` hops: for each hop
//! bound h = 1..=max_hop, the path that reaches the destination in the earliest slice
//! offset (from `a`) using ≤ h hops, if it is strictly earlier than the
//! best path with fewer hops. A packet may wait at any node for a later slice (up to one
//! cycle per hop, so offsets can exceed a cycle) and may take several hops inside one
//! slice (as in Opera). Ties: earliest offset, then the
//! lowest-numbered previous node, then the lowest port.
//!
//! - **HOHO** (hop-on hop-off): at every node, a first hop of the earliest paths from there
//!   (per-hop lookup; no rate control — the design most prone to congestion) within the
//!   hops the bound leaves (`max_hop` less the hops taken), so a path keeps to `max_hop` end
//!   to end. Every (port, departure) that starts such a path is a candidate and the run's
//!   multipath rule picks one (per packet by default), as UCMP's simulator draws among the
//!   equal paths of a class (ht-gong/UCMP, `src/optiroute`: `OPTIROUTE_ECMP`, with `HOHO` the
//!   lowest-latency class); keeping only the lowest-numbered one piles the relayed traffic on
//!   a few ports.
//! - **UCMP** (uniform-cost multipath): the source picks a class among the Pareto
//!   candidates, the one minimizing `offset_time + alpha · (hops − 1) · τ(flow age)`, where
//!   τ is the time to serialize the bytes the flow has already sent, rounded down to its
//!   aging bucket (0, 10 KB, 100 KB, 1 MB): young flows take the lowest-latency path,
//!   aged (large) flows the one with the fewest hops. This is opendcn's reading of UCMP's
//!   "uniform cost" with aging-based bucketing (the seed papers only name it). Each hop then
//!   takes one of the class's equal paths as HOHO does, with the class's hops as its bound.
//!
//! Memory is O(nodes² × slices × max_hop) — meant for rotor networks up to a few hundred
//! nodes; larger fabrics use the algorithmic VLB/direct routers.

use crate::schedule::Schedule;
use crate::timeflow::Action;
use crate::units::NONE;

/// One candidate path: arrival offset (slices after the arrival slice), hop list.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub offset: u32,
    pub hops: Vec<Action>,
}

/// Pareto-best earliest paths for every (source, arrival slice, destination).
#[derive(Debug, Clone)]
pub struct EarliestIndex {
    nodes: usize,
    slices: usize,
    /// (first candidate, count) per (src, slice, dst), into `cands`.
    spans: Vec<(u32, u8)>,
    cands: Vec<Candidate>,
    /// Most hops of a path.
    max_hop: usize,
    /// HOHO's next hops: (first, count) into `nh` per (hop budget r − 1, node, arrival
    /// slice, destination): every first hop of an earliest path with at most r hops
    /// (earliest arrival, then fewest hops), so the choice among them spreads the load
    /// over all of them.
    nh_spans: Vec<(u32, u16)>,
    nh: Vec<Action>,
}

impl EarliestIndex {
    /// Build the index over the optical ports of a cyclic schedule.
    pub fn new(sched: &Schedule, port_node: &[u32], port_offset: &[u32], optical: &[bool], max_hop: u32) -> Self {
        let nodes = port_offset.len() - 1;
        let s = sched.slices() as usize;
        let h_max = max_hop.max(1) as usize;
        let mut spans = vec![(0u32, 0u8); nodes * s * nodes];
        let mut cands = Vec::new();
        // per node, its optical ports
        let ports: Vec<Vec<u32>> = (0..nodes)
            .map(|n| (port_offset[n]..port_offset[n + 1]).filter(|&g| optical[g as usize]).collect())
            .collect();
        const INF: u32 = u32::MAX;
        // label per (hop count, node): arrival offset and parent (prev node, port, dep offset)
        let mut off = vec![INF; (h_max + 1) * nodes];
        let mut parent = vec![(NONE, NONE, NONE); (h_max + 1) * nodes];
        for src in 0..nodes {
            for a in 0..s {
                off.iter_mut().for_each(|x| *x = INF);
                off[src] = 0;
                for h in 1..=h_max {
                    let (prev, cur) = off.split_at_mut(h * nodes);
                    let prev = &prev[(h - 1) * nodes..];
                    let cur = &mut cur[..nodes];
                    for u in 0..nodes {
                        let ku = prev[u];
                        if ku == INF {
                            continue;
                        }
                        for &gp in &ports[u] {
                            // wait up to one full cycle at every node
                            for k in ku as usize..ku as usize + s {
                                let idx = ((a + k) % s) as u32;
                                let q = sched.peer(gp, idx);
                                if q == NONE {
                                    continue;
                                }
                                let v = port_node[q as usize] as usize;
                                if (k as u32) < cur[v] {
                                    cur[v] = k as u32;
                                    parent[h * nodes + v] = (u as u32, gp, k as u32);
                                }
                            }
                        }
                    }
                }
                for dst in 0..nodes {
                    if dst == src {
                        continue;
                    }
                    let first = cands.len() as u32;
                    let mut best = INF;
                    for h in 1..=h_max {
                        let k = off[h * nodes + dst];
                        if k < best {
                            best = k;
                            // walk parents back to the source
                            let mut hops = Vec::with_capacity(h);
                            let (mut v, mut hh) = (dst, h);
                            while hh > 0 {
                                let (u, gp, kk) = parent[hh * nodes + v];
                                hops.push(Action { port: gp, dep: ((a as u32 + kk) % s as u32) });
                                v = u as usize;
                                hh -= 1;
                            }
                            hops.reverse();
                            cands.push(Candidate { offset: k, hops });
                        }
                    }
                    let count = cands.len() as u32 - first;
                    spans[(src * s + a) * nodes + dst] = (first, count as u8);
                }
            }
        }
        let (nh_spans, nh) = Self::next_hops(sched, port_node, &ports, nodes, s, h_max);
        EarliestIndex { nodes, slices: s, spans, cands, max_hop: h_max, nh_spans, nh }
    }

    /// Every node's next hops on the earliest paths of each hop budget, by dynamic
    /// programming over budgets: the best (arrival offset, hops) from node v entering slice
    /// a with at most r hops is the lexicographic minimum, over v's ports and departures k
    /// slices later to peer w, of (k, 1) when w is the destination and (k + off, 1 + hops)
    /// of w's best within r − 1 hops entering slice a + k. All (port, departure) reaching
    /// the minimum are kept.
    fn next_hops(sched: &Schedule, port_node: &[u32], ports: &[Vec<u32>], nodes: usize, s: usize, h_max: usize)
        -> (Vec<(u32, u16)>, Vec<Action>) {
        const INF: (u32, u32) = (u32::MAX, u32::MAX);
        let cell = |v: usize, a: usize, d: usize| (v * s + a) * nodes + d;
        let per = nodes * s * nodes;
        let mut best_prev = vec![INF; per];
        let mut best = vec![INF; per];
        let mut spans = vec![(0u32, 0u16); h_max * per];
        let mut nh = Vec::new();
        let mut set: Vec<Action> = Vec::new();
        for r in 1..=h_max {
            for v in 0..nodes {
                for a in 0..s {
                    for d in 0..nodes {
                        if d == v {
                            continue;
                        }
                        let mut m = INF;
                        set.clear();
                        for &gp in &ports[v] {
                            for k in 0..s {
                                let idx = (a + k) % s;
                                let q = sched.peer(gp, idx as u32);
                                if q == NONE {
                                    continue;
                                }
                                let w = port_node[q as usize] as usize;
                                let c = if w == d {
                                    (k as u32, 1)
                                } else if r > 1 && w != v {
                                    let (o, h) = best_prev[cell(w, idx, d)];
                                    if o == u32::MAX {
                                        continue;
                                    }
                                    (k as u32 + o, h + 1)
                                } else {
                                    continue;
                                };
                                if c < m {
                                    m = c;
                                    set.clear();
                                }
                                if c == m {
                                    set.push(Action { port: gp, dep: idx as u32 });
                                }
                            }
                        }
                        best[cell(v, a, d)] = m;
                        spans[(r - 1) * per + cell(v, a, d)] = (nh.len() as u32, set.len() as u16);
                        nh.extend_from_slice(&set);
                    }
                }
            }
            std::mem::swap(&mut best_prev, &mut best);
        }
        (spans, nh)
    }

    /// The next hops at `node` (entered in slice `arr`) toward `dst` of every earliest path
    /// with at most `budget` hops (earliest arrival, then fewest hops). HOHO gives a packet
    /// that has taken h hops the budget `max_hop − h`, UCMP the hops of the class its source
    /// chose less those taken, so a path stays within its bound end to end: a per-hop lookup
    /// with a fresh `max_hop` at every node would break the bounded search's optimal
    /// substructure (the intermediate's own plan is not the tail of the source's) and let a
    /// packet wander for more hops than the bound.
    pub fn next_within(&self, node: u32, arr: u32, dst: u32, budget: usize) -> &[Action] {
        let arr = if arr as usize >= self.slices { 0 } else { arr as usize };
        let r = budget.clamp(1, self.max_hop);
        let per = self.nodes * self.slices * self.nodes;
        let (f, c) = self.nh_spans[(r - 1) * per + (node as usize * self.slices + arr) * self.nodes + dst as usize];
        &self.nh[f as usize..f as usize + c as usize]
    }

    /// Hops of UCMP's class `id` (a global candidate index from [`Self::ucmp`]).
    pub fn class_hops(&self, id: u32) -> usize {
        self.cands[id as usize].hops.len()
    }

    /// Pareto candidates (earliest first; each later one has fewer hops... more hops allowed
    /// but strictly earlier) from `src` entering in slice `arr` to `dst`.
    pub fn candidates(&self, src: u32, arr: u32, dst: u32) -> &[Candidate] {
        let arr = if arr as usize >= self.slices { 0 } else { arr as usize };
        let (f, c) = self.spans[(src as usize * self.slices + arr) * self.nodes + dst as usize];
        &self.cands[f as usize..f as usize + c as usize]
    }

    /// HOHO's decision: the first hop of the earliest path (the last Pareto candidate).
    pub fn hoho(&self, node: u32, arr: u32, dst: u32) -> Option<Action> {
        self.candidates(node, arr, dst).last().map(|c| c.hops[0])
    }

    /// UCMP's choice for a flow that has already sent `sent` bytes: index of the candidate
    /// minimizing `offset·slice + alpha·(hops−1)·τ(bucket(sent))`.
    pub fn ucmp(&self, src: u32, arr: u32, dst: u32, sent: u64, slice_ps: u64, rate_bps: u64, alpha: f64) -> Option<u32> {
        self.ucmp_within(src, arr, dst, sent, slice_ps, rate_bps, alpha, usize::MAX)
    }

    /// Most hops of a path.
    pub fn max_hop(&self) -> usize {
        self.max_hop
    }

    /// [`Self::ucmp`] among the candidates of at most `max_len` hops (None: none).
    #[allow(clippy::too_many_arguments)]
    pub fn ucmp_within(&self, src: u32, arr: u32, dst: u32, sent: u64, slice_ps: u64, rate_bps: u64, alpha: f64,
                       max_len: usize) -> Option<u32> {
        let bucket = match sent {
            0..=9_999 => 0,
            10_000..=99_999 => 10_000,
            100_000..=999_999 => 100_000,
            _ => 1_000_000,
        };
        let tau = bucket as f64 * 8.0 * 1e12 / rate_bps as f64;
        let arr = if arr as usize >= self.slices { 0 } else { arr as usize };
        let (f, _) = self.spans[(src as usize * self.slices + arr) * self.nodes + dst as usize];
        self.candidates(src, arr as u32, dst).iter().enumerate().filter(|(_, x)| x.hops.len() <= max_len)
            .min_by(|(_, x), (_, y)| {
            let cx = x.offset as f64 * slice_ps as f64 + alpha * (x.hops.len() as f64 - 1.0) * tau;
            let cy = y.offset as f64 * slice_ps as f64 + alpha * (y.hops.len() as f64 - 1.0) * tau;
            cx.partial_cmp(&cy).expect("finite costs").then(x.hops.len().cmp(&y.hops.len()))
        }).map(|(i, _)| f + i as u32)
    }

    /// Hop `pos` of candidate `id` (a global candidate index from [`Self::ucmp`]).
    pub fn hop(&self, id: u32, pos: u32) -> Option<Action> {
        self.cands.get(id as usize)?.hops.get(pos as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenOptics Fig. 2: 4 nodes, 1 port, slice 0 = {0-1, 2-3}, 1 = {0-2, 1-3}, 2 = {0-3, 1-2}.
    fn fig2() -> (Schedule, Vec<u32>, Vec<u32>, Vec<bool>) {
        let pairs = [[(0, 1), (2, 3)], [(0, 2), (1, 3)], [(0, 3), (1, 2)]];
        let mut peer = vec![NONE; 3 * 4];
        for (s, ps) in pairs.iter().enumerate() {
            for &(x, y) in ps {
                peer[s * 4 + x] = y as u32;
                peer[s * 4 + y] = x as u32;
            }
        }
        let sched = Schedule::cyclic(vec![10_000_000; 3], 200_000, 4, peer).unwrap();
        (sched, vec![0, 1, 2, 3], vec![0, 1, 2, 3, 4], vec![true; 4])
    }

    #[test]
    fn two_hops_beat_waiting_for_the_direct_circuit() {
        let (s, pn, po, op) = fig2();
        let idx = EarliestIndex::new(&s, &pn, &po, &op, 2);
        let c = idx.candidates(0, 0, 3);
        // direct 0->3 departs in slice 2 (offset 2); via 1: 0->1 in slice 0, 1->3 in slice 1
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].offset, c[0].hops.len()), (2, 1));
        assert_eq!((c[1].offset, c[1].hops.len()), (1, 2));
        assert_eq!(c[1].hops, vec![Action { port: 0, dep: 0 }, Action { port: 1, dep: 1 }]);
        assert_eq!(idx.hoho(0, 0, 3), Some(Action { port: 0, dep: 0 }));
        // a young flow takes the 2-hop path, an aged one the direct circuit
        let young = idx.ucmp(0, 0, 3, 0, 10_000_000, 100_000_000_000, 1.0).unwrap();
        let aged = idx.ucmp(0, 0, 3, 5_000_000, 10_000_000, 100_000_000_000, 1.0).unwrap();
        assert_eq!((idx.hop(young, 0), idx.hop(young, 1), idx.hop(young, 2)),
                   (Some(Action { port: 0, dep: 0 }), Some(Action { port: 1, dep: 1 }), None));
        assert_eq!((idx.hop(aged, 0), idx.hop(aged, 1)), (Some(Action { port: 0, dep: 2 }), None));
        // with one hop allowed only the direct circuit remains
        let one = EarliestIndex::new(&s, &pn, &po, &op, 1);
        assert_eq!(one.candidates(0, 0, 3).len(), 1);
        assert_eq!(one.hoho(0, 0, 3), Some(Action { port: 0, dep: 2 }));
        // HOHO's next hops: the earliest path's first hop; after one hop of a two-hop
        // bound only the direct circuit is left
        assert_eq!(idx.next_within(0, 0, 3, 2), &[Action { port: 0, dep: 0 }]);
        assert_eq!(idx.next_within(0, 0, 3, 1), &[Action { port: 0, dep: 2 }]);
    }
}
