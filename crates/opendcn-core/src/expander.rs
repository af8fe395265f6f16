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

use crate::error::SpecError;
use crate::schedule::Schedule;
use crate::units::NONE;

/// Most (slices × nodes × nodes) next-hop entries kept.
pub const MAX_CELLS: u64 = 40_000_000;

/// Per slice, next-hop global port and hop count for every (node, destination node).
#[derive(Debug, Clone)]
pub struct SlicePaths {
    nodes: usize,
    /// `nh[(slice * nodes + cur) * nodes + dst]`: global port, or NONE (cur == dst).
    nh: Vec<u32>,
    dist: Vec<u8>,
    /// Longest shortest path over all slices (hops).
    pub max_hops: u32,
}

impl SlicePaths {
    /// Build from a cyclic schedule. Fails (field `routing`) when some slice's expander
    /// does not connect every pair of nodes that own optical ports, or when it is too big.
    pub fn new(sched: &Schedule, port_node: &[u32], port_offset: &[u32], optical: &[bool]) -> Result<Self, SpecError> {
        if sched.is_static() {
            return Err(SpecError::new("routing", "expander", "needs a cyclic optical schedule"));
        }
        let nodes = port_offset.len() - 1;
        let s = sched.slices() as usize;
        let cells = s as u64 * nodes as u64 * nodes as u64;
        if cells > MAX_CELLS {
            return Err(SpecError::new("routing", "expander",
                format!("path table too large ({nodes} nodes x {s} slices); at most {MAX_CELLS} entries")));
        }
        let members: Vec<bool> = (0..nodes).map(|n| (port_offset[n]..port_offset[n + 1]).any(|g| optical[g as usize])).collect();
        let n_ports = optical.len();
        let mut nh = vec![NONE; cells as usize];
        let mut dist = vec![u8::MAX; cells as usize];
        let mut sender_into = vec![NONE; n_ports];
        let mut queue = Vec::with_capacity(nodes);
        let mut max_hops = 0;
        for j in 0..s {
            let next = ((j + 1) % s) as u32;
            sender_into.iter_mut().for_each(|x| *x = NONE);
            for (p, &opt) in optical.iter().enumerate() {
                if !opt {
                    continue;
                }
                let q = sched.peer(p as u32, j as u32);
                // usable: a circuit to another node that is not reconfigured at the next boundary
                if q != NONE && port_node[q as usize] != port_node[p] && sched.peer(p as u32, next) == q {
                    sender_into[q as usize] = p as u32;
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
                let want = members.iter().filter(|&&m| m).count();
                if reached != want {
                    return Err(SpecError::new("routing", "expander",
                        format!("slice {j}: the circuits that stay up do not connect every node to node {dst}")));
                }
                let far = dist[base + queue[reached - 1] as usize * nodes + dst] as u32;
                max_hops = max_hops.max(far);
            }
        }
        Ok(SlicePaths { nodes, nh, dist, max_hops })
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
}
