//! Shortest paths of every slice's expander (Opera's routing), over the circuits that stay
//! up into the next slice.
//!
//! In slice `j` a node may forward over an optical port whose circuit joins it to another
//! node and does not change at the start of slice `j + 1` (the circuits about to be
//! reconfigured are left out, so a path chosen in slice `j` stays valid while a packet
//! crosses it near the end of the slice). Per slice and destination, one breadth-first
//! search from the destination over the reversed circuits gives every node's next hop:
//! nodes are visited in queue order and, at each node, its receiving ports in port order;
//! the first port found leading to a visited node is the next hop. The packet engine pins a
//! packet's source route to the slice in which it is first routed and follows that slice's
//! next hops at every node (so the route is the path of one expander), re-routing it over
//! the current slice only when a circuit it expects has gone (see `sim`).
//!
//! # k paths per pair (`with_paths`, Opera's `--paths`)
//!
//! What opera-sim (github.com/TritonNetworking/opera-sim, the simulator of the Opera paper)
//! does, read from its sources:
//!
//! - The path file is built in Matlab (`topologies/opera_dynexp_topo_gen/`): `MAIN.m` with
//!   `topotype == 2` calls `path_calc_kshortest.m`, which for every superslice takes the
//!   adjacency of the rotors that stay up (the rotor reconfiguring at the end of the
//!   superslice is left out, `v(rotor, slice) = NaN`) and runs Yen's k-shortest-path
//!   algorithm (`kShortestPath.m`, Yen 1971 over `dijkstra_vector.m`) from every source ToR
//!   to every destination ToR, keeping only the paths *as short as the shortest one* ("k
//!   shortest paths that are no longer than the shortest path"). `defineTopology_simple_
//!   kshortestpaths.m` writes them as per-hop uplink lists, the same paths for the three
//!   slices (epsilon, delta, r) of a superslice. The published Figure 8/9/10 runs used
//!   `dynexp_N=108_k=12_5paths.txt` (too big for the repository, linked from its README):
//!   up to 5 such paths per (superslice, source ToR, destination ToR).
//! - The choice is made per packet, at the source only, uniformly at random:
//!   `PriorityQueue::completeService` (`src/opera/queue.cpp`) stamps every packet leaving a
//!   host NIC (data, header, ACK, NACK, PULL) with the current slice and `random() % npaths`
//!   over that slice's paths for (source ToR, destination ToR); RotorLB packets always take
//!   path 0 (the direct circuit). Every ToR then reads the next uplink from the label
//!   (`Pipe::doNextEvent`, `src/opera/pipe.cpp`: `get_port(src_ToR, dst_ToR, slice_sent,
//!   path_index, hop)`), so the whole path is the one chosen at the source.
//! - A packet returned to its sender from a full header queue (`CompositeQueue::
//!   receivePacket`, `src/opera/compositequeue.cpp`) picks a new random path of the current
//!   slice from the ToR that returns it. A packet whose rotor is down when it reaches the
//!   end of a link is dropped ("clipped", `pipe.cpp`); the slice timing (epsilon covers the
//!   longest path at full queues) is what keeps that from happening.
//!
//! Here: for each (slice, node, destination) up to `k` shortest paths are kept, found by
//! Yen's algorithm restricted to the shortest-path DAG toward the destination (a spur
//! path of the same length exists exactly when the spur node has a DAG successor whose
//! first edge is not removed, so each spur is that successor followed by the BFS next
//! hops). Path 0 is the BFS path above (so `k = 1` routes exactly as before); candidates
//! are taken in the order Yen's algorithm finds them (first found first among equal
//! lengths, as `kShortestPath.m`). Which equal-length paths Matlab's Dijkstra returns
//! first is not reproducible here; the paths are the same kind (shortest, distinct,
//! found by deviating from earlier ones) and their number per pair is the same. A path is
//! carried by the packet as a code (`Packet::pos`): 4 bits of its length and, per hop, 4
//! bits naming the optical port of that hop's node (rank among the node's optical ports),
//! so `k > 1` needs at most 16 optical ports per node; pairs farther than 7 hops keep
//! their one BFS path. Code 0 is the BFS path.

use crate::error::SpecError;
use crate::schedule::Schedule;
use crate::units::NONE;

/// Most (slices × nodes × nodes × paths) entries kept.
pub const MAX_CELLS: u64 = 40_000_000;

/// Most hops of a path other than the BFS one (its code holds 4 bits per hop).
pub const CODE_HOPS: usize = 7;

/// Most optical ports of a node when `k > 1` (a hop's code names one in 4 bits).
pub const CODE_PORTS: usize = 16;

/// Per slice, next-hop global port and hop count for every (node, destination node), and
/// up to `k - 1` more shortest paths per (slice, node, destination).
#[derive(Debug, Clone)]
pub struct SlicePaths {
    nodes: usize,
    /// `nh[(slice * nodes + cur) * nodes + dst]`: global port, or NONE (cur == dst).
    nh: Vec<u32>,
    dist: Vec<u8>,
    /// Longest shortest path over all slices (hops).
    pub max_hops: u32,
    /// Most paths per (slice, node, destination).
    k: u32,
    /// `alt[cell * (k - 1) + i]`: the code of path `i + 1` of the cell, 0 = none (path 0,
    /// the BFS path, has code 0 and is not stored). Empty when `k == 1`.
    alt: Vec<u32>,
    /// Optical ports of node `n`: `opt_ports[opt_off[n]..opt_off[n + 1]]` in port order.
    opt_off: Vec<u32>,
    opt_ports: Vec<u32>,
}

/// Path code: length in the top 4 bits, then per hop h the rank of its port among the
/// optical ports of its node in bits `4h..4h + 4`.
#[inline]
fn encode(ranks: &[u8]) -> u32 {
    ranks.iter().enumerate().fold((ranks.len() as u32) << 28, |c, (h, &r)| c | (r as u32) << (4 * h))
}

impl SlicePaths {
    /// One path per (slice, node, destination): the BFS shortest path.
    pub fn new(sched: &Schedule, port_node: &[u32], port_offset: &[u32], optical: &[bool]) -> Result<Self, SpecError> {
        Self::with_paths(sched, port_node, port_offset, optical, 1)
    }

    /// Build from a cyclic schedule, with up to `k` shortest paths per (slice, node,
    /// destination) (see the module doc). Fails (field `routing`) when some slice's
    /// expander does not connect every pair of nodes that own optical ports, or when it is
    /// too big; (field `paths`) when `k` is 0 or above 16, or a node has more than 16
    /// optical ports with `k > 1`.
    pub fn with_paths(sched: &Schedule, port_node: &[u32], port_offset: &[u32], optical: &[bool], k: u32)
        -> Result<Self, SpecError> {
        if sched.is_static() {
            return Err(SpecError::new("routing", "expander", "needs a cyclic optical schedule"));
        }
        if !(1..=16).contains(&k) {
            return Err(SpecError::new("paths", k, "expected 1..=16 paths per pair"));
        }
        let nodes = port_offset.len() - 1;
        let s = sched.slices() as usize;
        let cells = s as u64 * nodes as u64 * nodes as u64;
        if cells * k as u64 > MAX_CELLS {
            return Err(SpecError::new("routing", "expander",
                format!("path table too large ({nodes} nodes x {s} slices x {k} paths); at most {MAX_CELLS} entries")));
        }
        let mut opt_off = Vec::with_capacity(nodes + 1);
        let mut opt_ports = Vec::new();
        opt_off.push(0u32);
        for n in 0..nodes {
            opt_ports.extend((port_offset[n]..port_offset[n + 1]).filter(|&g| optical[g as usize]));
            opt_off.push(opt_ports.len() as u32);
            if k > 1 && (opt_off[n + 1] - opt_off[n]) as usize > CODE_PORTS {
                return Err(SpecError::new("paths", k,
                    format!("node {n} has more than {CODE_PORTS} optical ports; only --paths 1 supports it")));
            }
        }
        let mut opt_rank = vec![u8::MAX; optical.len()];
        for n in 0..nodes {
            for (r, &g) in opt_ports[opt_off[n] as usize..opt_off[n + 1] as usize].iter().enumerate() {
                opt_rank[g as usize] = r as u8;
            }
        }
        let members: Vec<bool> = (0..nodes).map(|n| opt_off[n + 1] > opt_off[n]).collect();
        let want = members.iter().filter(|&&m| m).count();
        let n_ports = optical.len();
        let mut nh = vec![NONE; cells as usize];
        let mut dist = vec![u8::MAX; cells as usize];
        let extra = k as usize - 1;
        let mut alt = vec![0u32; cells as usize * extra];
        let mut sender_into = vec![NONE; n_ports];
        // the usable circuit of each sending port in the slice (its peer's port), or NONE
        let mut fwd = vec![NONE; n_ports];
        let mut queue = Vec::with_capacity(nodes);
        let mut yen = Yen::default();
        let mut max_hops = 0;
        for j in 0..s {
            let next = ((j + 1) % s) as u32;
            sender_into.iter_mut().for_each(|x| *x = NONE);
            fwd.iter_mut().for_each(|x| *x = NONE);
            for (p, &opt) in optical.iter().enumerate() {
                if !opt {
                    continue;
                }
                let q = sched.peer(p as u32, j as u32);
                // usable: a circuit to another node that is not reconfigured at the next boundary
                if q != NONE && port_node[q as usize] != port_node[p] && sched.peer(p as u32, next) == q {
                    sender_into[q as usize] = p as u32;
                    fwd[p] = q;
                }
            }
            let base = j * nodes * nodes;
            for dst in 0..nodes {
                if !members[dst] {
                    continue;
                }
                queue.clear();
                queue.push(dst as u32);
                dist[base + dst * nodes + dst] = 0;
                let mut head = 0;
                while head < queue.len() {
                    let c = queue[head] as usize;
                    head += 1;
                    let dc = dist[base + c * nodes + dst];
                    for q in port_offset[c]..port_offset[c + 1] {
                        let p = sender_into[q as usize];
                        if p == NONE {
                            continue;
                        }
                        let v = port_node[p as usize] as usize;
                        let cell = base + v * nodes + dst;
                        if dist[cell] == u8::MAX {
                            dist[cell] = dc.saturating_add(1);
                            nh[cell] = p;
                            queue.push(v as u32);
                        }
                    }
                }
                let reached = queue.len();
                if reached != want {
                    return Err(SpecError::new("routing", "expander",
                        format!("slice {j}: the circuits that stay up do not connect every node to node {dst}")));
                }
                let far = dist[base + queue[reached - 1] as usize * nodes + dst] as u32;
                max_hops = max_hops.max(far);
                if extra == 0 {
                    continue;
                }
                let g = Graph { nodes, dst, base, nh: &nh, dist: &dist, fwd: &fwd, port_node, opt_off: &opt_off,
                                opt_ports: &opt_ports };
                for src in 0..nodes {
                    let d = dist[base + src * nodes + dst] as usize;
                    if src == dst || d == u8::MAX as usize || d > CODE_HOPS {
                        continue;
                    }
                    yen.run(&g, src as u32, d, k as usize);
                    let cell = base + src * nodes + dst;
                    for (i, path) in yen.found.iter().skip(1).enumerate() {
                        let ranks: Vec<u8> = path[..d].iter().map(|&p| opt_rank[p as usize]).collect();
                        alt[cell * extra + i] = encode(&ranks);
                    }
                }
            }
        }
        Ok(SlicePaths { nodes, nh, dist, max_hops, k, alt, opt_off, opt_ports })
    }

    /// Most paths per (slice, node, destination) this table was built with.
    #[inline]
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Next-hop global port from `cur` to `dst` on slice `idx`'s shortest path (NONE: none).
    #[inline]
    pub fn next(&self, idx: u32, cur: u32, dst: u32) -> u32 {
        self.nh[(idx as usize * self.nodes + cur as usize) * self.nodes + dst as usize]
    }

    /// Hops of slice `idx`'s shortest path from `cur` to `dst` (u8::MAX: unreachable).
    #[inline]
    pub fn hops(&self, idx: u32, cur: u32, dst: u32) -> u32 {
        self.dist[(idx as usize * self.nodes + cur as usize) * self.nodes + dst as usize] as u32
    }

    /// How many paths slice `idx` keeps from `src` to `dst` (1..=k; 1 when src == dst).
    #[inline]
    pub fn n_paths(&self, idx: u32, src: u32, dst: u32) -> u32 {
        let extra = self.k as usize - 1;
        if extra == 0 {
            return 1;
        }
        let cell = (idx as usize * self.nodes + src as usize) * self.nodes + dst as usize;
        1 + self.alt[cell * extra..(cell + 1) * extra].iter().take_while(|&&c| c != 0).count() as u32
    }

    /// The code of path `i` (< `n_paths`) of slice `idx` from `src` to `dst` (0: the BFS path).
    #[inline]
    pub fn code(&self, idx: u32, src: u32, dst: u32, i: u32) -> u32 {
        if i == 0 {
            return 0;
        }
        let extra = self.k as usize - 1;
        let cell = (idx as usize * self.nodes + src as usize) * self.nodes + dst as usize;
        self.alt[cell * extra + i as usize - 1]
    }

    /// Next-hop global port at `cur` of the path with `code` of slice `idx` toward `dst`
    /// (the hop is told by `cur`'s distance: every path is a shortest path). NONE: none.
    #[inline]
    pub fn next_on(&self, idx: u32, cur: u32, dst: u32, code: u32) -> u32 {
        if code == 0 {
            return self.next(idx, cur, dst);
        }
        let len = code >> 28;
        let d = self.hops(idx, cur, dst);
        if d == 0 || d > len {
            // not on the path (cannot happen for a packet that follows it): the BFS path
            return self.next(idx, cur, dst);
        }
        let rank = (code >> (4 * (len - d))) & 15;
        self.opt_ports[(self.opt_off[cur as usize] + rank) as usize]
    }
}

/// One slice's shortest-path DAG toward `dst`.
struct Graph<'a> {
    nodes: usize,
    dst: usize,
    base: usize,
    nh: &'a [u32],
    dist: &'a [u8],
    fwd: &'a [u32],
    port_node: &'a [u32],
    opt_off: &'a [u32],
    opt_ports: &'a [u32],
}

impl Graph<'_> {
    #[inline]
    fn dist(&self, v: u32) -> u8 {
        self.dist[self.base + v as usize * self.nodes + self.dst]
    }

    #[inline]
    fn nh(&self, v: u32) -> u32 {
        self.nh[self.base + v as usize * self.nodes + self.dst]
    }

    #[inline]
    fn head(&self, p: u32) -> u32 {
        self.port_node[self.fwd[p as usize] as usize]
    }

    /// The BFS path's ports from `v`, written from `out[0]`.
    fn bfs_from(&self, mut v: u32, out: &mut [u32]) {
        for slot in out.iter_mut() {
            let p = self.nh(v);
            *slot = p;
            v = self.head(p);
        }
        debug_assert_eq!(v as usize, self.dst);
    }

    /// The shortest-path successors' ports of `v` in Yen's order of preference: the BFS
    /// next hop, then the others in port order.
    fn succ(&self, v: u32, out: &mut Vec<u32>) {
        out.clear();
        let first = self.nh(v);
        out.push(first);
        let dv = self.dist(v);
        for &p in &self.opt_ports[self.opt_off[v as usize] as usize..self.opt_off[v as usize + 1] as usize] {
            if p != first && self.fwd[p as usize] != NONE && self.dist(self.head(p)) as u16 + 1 == dv as u16 {
                out.push(p);
            }
        }
    }
}

/// Yen's k-shortest-path algorithm restricted to paths as short as the shortest one;
/// buffers reused between pairs.
#[derive(Default)]
struct Yen {
    /// Paths found (A), as ports per hop.
    found: Vec<[u32; CODE_HOPS]>,
    /// Deviation index of each found path.
    dev: Vec<usize>,
    /// Candidates (B) in the order found, with their deviation index.
    cand: Vec<([u32; CODE_HOPS], usize)>,
    succ: Vec<u32>,
}

impl Yen {
    fn run(&mut self, g: &Graph, src: u32, d: usize, k: usize) {
        self.found.clear();
        self.dev.clear();
        self.cand.clear();
        let mut p0 = [NONE; CODE_HOPS];
        g.bfs_from(src, &mut p0[..d]);
        self.found.push(p0);
        self.dev.push(0);
        while self.found.len() < k {
            let last = self.found.len() - 1;
            let (path, w) = (self.found[last], self.dev[last]);
            let mut v = src;
            for i in 0..d {
                if i >= w {
                    // spur at node v (hop i): leave out the first edges of the found paths
                    // that share this root
                    g.succ(v, &mut self.succ);
                    let taken = |q: u32| self.found.iter().any(|f| f[..i] == path[..i] && f[i] == q);
                    if let Some(&q) = self.succ.iter().find(|&&q| !taken(q)) {
                        let mut c = path;
                        c[i] = q;
                        g.bfs_from(g.head(q), &mut c[i + 1..d]);
                        if !self.cand.iter().any(|(x, _)| x[..d] == c[..d]) {
                            self.cand.push((c, i));
                        }
                    }
                }
                v = g.head(path[i]);
            }
            if self.cand.is_empty() {
                break;
            }
            let (c, i) = self.cand.remove(0);
            self.found.push(c);
            self.dev.push(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four nodes, two ports each; slice 0: port 0 ring (0-1, 2-3), port 1 (0-2, 1-3);
    /// slice 1: port 0 (0-3, 1-2), port 1 unchanged.
    fn fabric() -> (Schedule, Vec<u32>, Vec<u32>, Vec<bool>) {
        let g = |n: u32, k: u32| n * 2 + k;
        let mut peer = vec![NONE; 2 * 8];
        for (a, b) in [(0, 1), (2, 3)] {
            peer[g(a, 0) as usize] = g(b, 0);
            peer[g(b, 0) as usize] = g(a, 0);
        }
        for (a, b) in [(0, 3), (1, 2)] {
            peer[8 + g(a, 0) as usize] = g(b, 0);
            peer[8 + g(b, 0) as usize] = g(a, 0);
        }
        for row in 0..2 {
            for (a, b) in [(0, 2), (1, 3)] {
                peer[row * 8 + g(a, 1) as usize] = g(b, 1);
                peer[row * 8 + g(b, 1) as usize] = g(a, 1);
            }
        }
        let sched = Schedule::cyclic(vec![1000, 1000], 100, 8, peer).unwrap();
        let port_node = (0..8).map(|p| p / 2).collect();
        (sched, port_node, vec![0, 2, 4, 6, 8], vec![true; 8])
    }

    #[test]
    fn paths_avoid_circuits_that_change_next() {
        let (s, pn, po, opt) = fabric();
        // port 0 changes at both boundaries: only port 1 (0-2, 1-3) is usable, which
        // leaves {0, 2} and {1, 3} disconnected
        let e = SlicePaths::new(&s, &pn, &po, &opt).unwrap_err();
        assert_eq!(e.field, "routing");
    }

    #[test]
    fn shortest_paths_on_a_stable_expander() {
        let (s, pn, po, opt) = fabric();
        // keep slice 1's port-0 circuits in slice 0 too: nothing changes, every slice is a
        // 4-cycle 0-3-1-2-0 plus 0-2/1-3 ... (port 1) — a connected graph
        let mut peer = vec![NONE; 16];
        for row in 0..2 {
            for p in 0..8u32 {
                peer[row * 8 + p as usize] = s.peer(p, 1);
            }
        }
        let st = Schedule::cyclic(vec![1000, 1000], 100, 8, peer).unwrap();
        let e = SlicePaths::new(&st, &pn, &po, &opt).unwrap();
        // 0-3 direct via port 0 of node 0 (global 0); 0-1: 0-2-1 or 0-3-1, two hops
        assert_eq!(e.next(0, 0, 3), 0);
        assert_eq!(e.hops(0, 0, 3), 1);
        assert_eq!(e.hops(0, 0, 1), 2);
        assert_eq!(e.next(0, 2, 2), NONE);
        assert_eq!(e.max_hops, 2);
        // following next hops reaches the destination in `hops` steps
        for a in 0..4 {
            for b in 0..4 {
                let mut c = a;
                let mut k = 0;
                while c != b {
                    let p = e.next(1, c, b);
                    c = pn[st.peer(p, 1) as usize];
                    k += 1;
                }
                assert_eq!(k, e.hops(1, a, b));
            }
        }
    }

    /// A generated Opera rotor fabric (ports `tor * u + rotor`, all optical).
    fn rotors(n: u32, u: u32) -> (Schedule, Vec<u32>, Vec<u32>, Vec<bool>) {
        let (r, _) = crate::rotors::Rotors::generated(n, u, 1, 0, 0, 10_000_000, 500_000, 1_200_000, 8).unwrap();
        let ports = (n * u) as usize;
        (r.sched, (0..ports as u32).map(|p| p / u).collect(), (0..=n).map(|t| t * u).collect(), vec![true; ports])
    }

    /// The ports of path `i` of slice `j` from `a` to `b`, checked hop by hop: every port
    /// belongs to the node it leaves, its circuit is up in slice j and stays up into j + 1,
    /// and the path reaches `b` in exactly the shortest distance.
    fn walk(e: &SlicePaths, s: &Schedule, pn: &[u32], j: u32, a: u32, b: u32, i: u32) -> Vec<u32> {
        let code = e.code(j, a, b, i);
        let next = (j + 1) % s.slices();
        let mut out = vec![];
        let mut c = a;
        while c != b {
            let p = e.next_on(j, c, b, code);
            assert_ne!(p, NONE, "slice {j} {a}->{b} path {i}: no hop at {c}");
            assert_eq!(pn[p as usize], c, "slice {j} {a}->{b} path {i}: port {p} is not on node {c}");
            let q = s.peer(p, j);
            assert!(q != NONE && s.peer(p, next) == q, "slice {j} {a}->{b} path {i}: port {p} is not up into {next}");
            out.push(p);
            c = pn[q as usize];
            assert!(out.len() <= e.hops(j, a, b) as usize);
        }
        assert_eq!(out.len() as u32, e.hops(j, a, b), "slice {j} {a}->{b} path {i}: not a shortest path");
        out
    }

    #[test]
    fn k_paths_are_distinct_shortest_paths_over_circuits_that_stay_up() {
        // 24 ToRs x 4 rotors: slices with paths of up to 12 hops, past a path code
        let (s, pn, po, opt) = rotors(24, 4);
        let k = 5;
        let e = SlicePaths::with_paths(&s, &pn, &po, &opt, k).unwrap();
        let mut multi = 0;
        let mut first_hops_differ = 0;
        let mut far = 0;
        for j in 0..s.slices() {
            for a in 0..24 {
                for b in 0..24 {
                    let n = e.n_paths(j, a, b);
                    assert!((1..=k).contains(&n));
                    if a == b {
                        continue;
                    }
                    let paths: Vec<Vec<u32>> = (0..n).map(|i| walk(&e, &s, &pn, j, a, b, i)).collect();
                    for x in 0..paths.len() {
                        for y in x + 1..paths.len() {
                            assert_ne!(paths[x], paths[y], "slice {j} {a}->{b}: paths {x} and {y} are the same");
                        }
                    }
                    if n > 1 {
                        multi += 1;
                        if paths[1][0] != paths[0][0] {
                            first_hops_differ += 1;
                        }
                    }
                    // a pair keeps fewer than k paths only when it has no more shortest ones
                    // (or is too far for a path code: then only its BFS path)
                    if e.hops(j, a, b) as usize > CODE_HOPS {
                        assert_eq!(n, 1);
                        far += 1;
                    } else if n < k {
                        assert_eq!(n as usize, count_shortest(&e, &s, &pn, j, a, b).min(k as usize));
                    }
                }
            }
        }
        assert!(multi > 0 && first_hops_differ > 0, "{multi} pairs with several paths, {first_hops_differ} from the source");
        assert!(far > 0, "the fabric should have pairs beyond {CODE_HOPS} hops");
    }

    /// Every shortest path over the circuits that stay up, counted by brute force.
    fn count_shortest(e: &SlicePaths, s: &Schedule, pn: &[u32], j: u32, a: u32, b: u32) -> usize {
        let next = (j + 1) % s.slices();
        let d = e.hops(j, a, b);
        if a == b {
            return 1;
        }
        (0..pn.len() as u32)
            .filter(|&p| pn[p as usize] == a)
            .filter_map(|p| {
                let q = s.peer(p, j);
                (q != NONE && s.peer(p, next) == q && e.hops(j, pn[q as usize], b) + 1 == d).then(|| pn[q as usize])
            })
            .map(|v| count_shortest(e, s, pn, j, v, b))
            .sum()
    }

    #[test]
    fn one_path_is_the_bfs_path_and_path_zero_stays_it() {
        let (s, pn, po, opt) = rotors(24, 4);
        let one = SlicePaths::new(&s, &pn, &po, &opt).unwrap();
        let same = SlicePaths::with_paths(&s, &pn, &po, &opt, 1).unwrap();
        let five = SlicePaths::with_paths(&s, &pn, &po, &opt, 5).unwrap();
        assert_eq!((one.nh.clone(), one.dist.clone(), one.max_hops), (same.nh, same.dist, same.max_hops));
        assert_eq!((&one.nh, &one.dist, one.max_hops), (&five.nh, &five.dist, five.max_hops));
        assert!(same.alt.is_empty());
        for j in 0..s.slices() {
            for a in 0..24 {
                for b in 0..24 {
                    assert_eq!(one.n_paths(j, a, b), 1);
                    assert_eq!(one.code(j, a, b, 0), 0);
                    if a != b {
                        assert_eq!(walk(&one, &s, &pn, j, a, b, 0), walk(&five, &s, &pn, j, a, b, 0));
                    }
                }
            }
        }
    }

    #[test]
    fn path_count_and_table_size_are_checked() {
        let (s, pn, po, opt) = rotors(24, 4);
        assert_eq!(SlicePaths::with_paths(&s, &pn, &po, &opt, 0).unwrap_err().field, "paths");
        assert_eq!(SlicePaths::with_paths(&s, &pn, &po, &opt, 17).unwrap_err().field, "paths");
        // 24 slices x 24 x 24 cells x k entries against MAX_CELLS
        let k_max = (MAX_CELLS / (24 * 24 * 24)).min(16) as u32;
        assert!(SlicePaths::with_paths(&s, &pn, &po, &opt, k_max).is_ok());
    }
}
