//! Time-flow tables (OpenOptics §3) and the routers that answer them.
//!
//! An [`Entry`] at a node matches {arrival slice, source node, destination node} and acts
//! {egress port, departure slice}; [`WILD`] is a wildcard. The arrival slice of a packet at
//! a node is the slice in which the previous hop sent it (at its source: the slice in which
//! it reached the node). Lookup keeps the most specific matching class — exact source
//! before wildcard source, then exact arrival slice before wildcard — and returns its
//! entries ordered by (departure slice, port); several are multipath alternatives.
//!
//! Built-in routers ([`Router::Vlb`], [`Router::Direct`]) compute the same candidates
//! algorithmically from the schedule, without materializing per-node tables; a test in the
//! Python suite compiles small networks both ways and checks identical decisions.

use crate::error::SpecError;
use crate::schedule::Schedule;
use crate::units::NONE;

/// Wildcard value of a slice or source field.
pub const WILD: u32 = NONE;

/// One time-flow table entry (ports are global port ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub dst: u32,
    pub src: u32,
    pub arr: u32,
    pub dep: u32,
    pub port: u32,
}

/// One routing decision: leave through `port` in slice `dep` (`WILD` = as soon as possible).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    pub port: u32,
    pub dep: u32,
}

/// The time-flow table of one node: entries sorted by (dst, src, arr, dep, port).
#[derive(Debug, Clone, Default)]
pub struct NodeTable {
    entries: Vec<Entry>,
    /// (dst, first entry, one past last entry), sorted by dst.
    index: Vec<(u32, u32, u32)>,
    /// Per `index` entry: every entry of the range has a wildcard source and arrival
    /// slice (the lookup is then the whole range, already in (dep, port) order).
    wild: Vec<bool>,
    /// Destination → its position in `index` (NONE: no entry), when destinations are
    /// below `DENSE_DST`; empty otherwise (binary search).
    by_dst: Vec<u32>,
    /// With `by_dst`: per destination, its answer when one load finds it, as `(first
    /// action in acts, one past the last, source set, words of the set)`; `a = NONE`
    /// otherwise. Two kinds: every entry wildcard in source and arrival slice (the set is
    /// `NONE`: every source gets the actions); or every entry with a wildcard arrival
    /// slice, and every exact source with the same actions (shortest paths compiled hop
    /// by hop: a spine holds one entry per source, all alike; routes that treat a group
    /// of sources apart from the rest, as a pod's own racks): the set is an offset in
    /// `fast_bits`; a listed source gets the actions, any other those of
    /// `fast_default` (the wildcard-source entries, or none).
    fast: Vec<(u32, u32, u32, u32)>,
    /// The actions `fast` answers, in (dep, port) order.
    acts: Vec<Action>,
    /// The source sets of `fast`, one bit per source node.
    fast_bits: Vec<u64>,
    /// Per destination with a source set in `fast`: the actions of a source outside the
    /// set (the destination's wildcard-source entries; an empty range when it has none),
    /// as `(first action in acts, one past the last)`.
    fast_default: Vec<(u32, u32)>,
}

/// Destinations up to which a node table keeps a dense index.
const DENSE_DST: u32 = 4096;

impl NodeTable {
    pub fn new(mut entries: Vec<Entry>) -> Self {
        entries.sort_unstable();
        entries.dedup();
        let mut index = Vec::new();
        let mut i = 0;
        while i < entries.len() {
            let d = entries[i].dst;
            let mut j = i;
            while j < entries.len() && entries[j].dst == d {
                j += 1;
            }
            index.push((d, i as u32, j as u32));
            i = j;
        }
        let wild: Vec<bool> = index.iter().map(|&(_, a, b)| entries[a as usize..b as usize].iter()
            .all(|e| e.src == WILD && e.arr == WILD)).collect();
        let mut by_dst = Vec::new();
        let mut fast = Vec::new();
        let mut acts = Vec::new();
        let mut fast_bits = Vec::new();
        let mut fast_default = Vec::new();
        if let Some(&(max, _, _)) = index.last() {
            if max < DENSE_DST {
                by_dst = vec![NONE; max as usize + 1];
                fast = vec![(NONE, NONE, NONE, 0); max as usize + 1];
                fast_default = vec![(0, 0); max as usize + 1];
                // source sets cost at most one word per entry of the table, plus 64
                let mut budget = entries.len() + 64;
                for (k, &(d, a, b)) in index.iter().enumerate() {
                    by_dst[d as usize] = k as u32;
                    let range = &entries[a as usize..b as usize];
                    if wild[k] {
                        let start = acts.len() as u32;
                        acts.extend(range.iter().map(|e| Action { port: e.port, dep: e.dep }));
                        fast[d as usize] = (start, acts.len() as u32, NONE, 0);
                    } else if range.iter().all(|e| e.arr == WILD) {
                        // exact sources first, the wildcard source (the largest value) last
                        let (exact, default) = range.split_at(range.partition_point(|e| e.src != WILD));
                        if let Some((common, sources)) = Self::source_uniform(exact) {
                            let words = (sources.last().copied().unwrap_or(0) as usize >> 6) + 1;
                            if words <= budget {
                                budget -= words;
                                let off = fast_bits.len();
                                fast_bits.resize(off + words, 0u64);
                                for s in sources {
                                    fast_bits[off + (s as usize >> 6)] |= 1u64 << (s & 63);
                                }
                                let start = acts.len() as u32;
                                acts.extend(exact[..common].iter().map(|e| Action { port: e.port, dep: e.dep }));
                                fast[d as usize] = (start, acts.len() as u32, off as u32, words as u32);
                                let dstart = acts.len() as u32;
                                acts.extend(default.iter().map(|e| Action { port: e.port, dep: e.dep }));
                                fast_default[d as usize] = (dstart, acts.len() as u32);
                            }
                        }
                    }
                }
            }
        }
        NodeTable { entries, index, wild, by_dst, fast, acts, fast_bits, fast_default }
    }

    /// For one destination's entries (sorted by (src, arr, dep, port)): when every entry
    /// has an exact source and a wildcard arrival slice and every source's entries carry
    /// the same (dep, port) list, the length of that list and the sources, ascending.
    fn source_uniform(range: &[Entry]) -> Option<(usize, Vec<u32>)> {
        if range.is_empty() || range.iter().any(|e| e.src == WILD || e.arr != WILD) {
            return None;
        }
        let first = range[0].src;
        let common = range.iter().take_while(|e| e.src == first).count();
        if range.len() % common != 0 {
            return None;
        }
        let mut sources = Vec::with_capacity(range.len() / common);
        for group in range.chunks(common) {
            let src = group[0].src;
            if group.iter().zip(&range[..common]).any(|(e, f)| e.src != src || (e.dep, e.port) != (f.dep, f.port)) {
                return None;
            }
            sources.push(src);
        }
        Some((common, sources))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The candidates of a destination whose entries do not depend on the arrival slice
    /// (the fast index), in place: `None` when `dst` is not in the fast index (call
    /// [`Self::lookup`]). Exactly what [`Self::lookup`] gives for those destinations.
    #[inline]
    pub fn fast_actions(&self, src: u32, dst: u32) -> Option<&[Action]> {
        let &(a, b, set, words) = self.fast.get(dst as usize)?;
        if a == NONE {
            return None;
        }
        let w = src >> 6;
        Some(if set == NONE || w < words && self.fast_bits[(set + w) as usize] >> (src & 63) & 1 == 1 {
            &self.acts[a as usize..b as usize]
        } else {
            let (da, db) = self.fast_default[dst as usize];
            &self.acts[da as usize..db as usize]
        })
    }

    /// Hint the cache about the one-load entry of destination `dst` (first stage of a
    /// coming [`NodeTable::fast_actions`]).
    #[inline]
    pub fn prefetch_fast(&self, dst: u32) {
        crate::prefetch::at(&self.fast, dst as usize);
    }

    /// Second stage: with the entry of `dst` in cache, hint the source bit word and the
    /// candidates `fast_actions(src, dst)` will read.
    #[inline]
    pub fn prefetch_fast_actions(&self, src: u32, dst: u32) {
        let Some(&(a, _, set, words)) = self.fast.get(dst as usize) else { return };
        if a == NONE {
            return;
        }
        crate::prefetch::at(&self.acts, a as usize);
        let w = src >> 6;
        if set != NONE && w < words {
            crate::prefetch::at(&self.fast_bits, (set + w) as usize);
            if let Some(&(da, _)) = self.fast_default.get(dst as usize) {
                crate::prefetch::at(&self.acts, da as usize);
            }
        }
    }

    /// Candidates for a packet (src, dst) that arrived in slice `arr`, into `out`.
    pub fn lookup(&self, src: u32, dst: u32, arr: u32, out: &mut Vec<Action>) {
        out.clear();
        if let Some(acts) = self.fast_actions(src, dst) {
            out.extend_from_slice(acts);
            return;
        }
        let k = if self.by_dst.is_empty() {
            let Ok(k) = self.index.binary_search_by_key(&dst, |x| x.0) else { return };
            k
        } else {
            match self.by_dst.get(dst as usize) {
                Some(&k) if k != NONE => k as usize,
                _ => return,
            }
        };
        let (_, a, b) = self.index[k];
        let range = &self.entries[a as usize..b as usize];
        if self.wild[k] {
            // one class: every entry, sorted by (dst, src, arr, dep, port) = (dep, port) here
            out.extend(range.iter().map(|e| Action { port: e.port, dep: e.dep }));
            return;
        }
        // classes, most specific first: (src, arr) exact, (src, WILD), (WILD, arr), (WILD,
        // WILD). The range is sorted by (src, arr, dep, port), so each class is one
        // contiguous run, found by binary search, already in (dep, port) order (WILD is
        // the largest value, so a wildcard sorts after every exact value).
        for (s, a) in [(src, arr), (src, WILD), (WILD, arr), (WILD, WILD)] {
            let lo = range.partition_point(|e| (e.src, e.arr) < (s, a));
            let hi = lo + range[lo..].partition_point(|e| (e.src, e.arr) == (s, a));
            if hi > lo {
                out.extend(range[lo..hi].iter().map(|e| Action { port: e.port, dep: e.dep }));
                return;
            }
        }
    }
}

/// Source routes: whole paths chosen at the source and carried in the packet.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// (src node, dst node, ts, first hop, hop count), sorted.
    pub routes: Vec<(u32, u32, u32, u32, u32)>,
    pub hops: Vec<Action>,
    /// Per (src, dst) pair of a network of `nodes` nodes: where its routes start in
    /// `routes` (one more entry closes the last range); empty (binary search) until
    /// [`Routes::index`] or for networks above `DENSE_ROUTE_NODES` nodes.
    start: Vec<u32>,
    nodes: usize,
}

/// Largest network for which `Routes` keeps a dense (src, dst) index (4 bytes per pair).
const DENSE_ROUTE_NODES: usize = 1024;

impl Routes {
    /// Index the (sorted) routes by (src, dst) for a network of `nodes` nodes.
    pub fn index(&mut self, nodes: usize) {
        self.start.clear();
        self.nodes = nodes;
        if nodes > DENSE_ROUTE_NODES || self.routes.iter().any(|r| r.0 as usize >= nodes || r.1 as usize >= nodes) {
            return;
        }
        self.start = Vec::with_capacity(nodes * nodes + 1);
        let mut k = 0;
        for pair in 0..nodes * nodes {
            while k < self.routes.len() && (self.routes[k].0 as usize * nodes + self.routes[k].1 as usize) < pair {
                k += 1;
            }
            self.start.push(k as u32);
        }
        self.start.push(self.routes.len() as u32);
    }

    /// The route ids for a packet from `src` to `dst` entering in slice `arr`: those of
    /// slice `arr` when there are any, else those of every slice (wildcard); one
    /// contiguous range, as the routes are sorted by (src, dst, ts) and the wildcard is
    /// the largest ts.
    #[inline]
    pub fn candidate_range(&self, src: u32, dst: u32, arr: u32) -> (u32, u32) {
        let (lo, hi) = if !self.start.is_empty() && (src as usize) < self.nodes && (dst as usize) < self.nodes {
            let i = src as usize * self.nodes + dst as usize;
            (self.start[i] as usize, self.start[i + 1] as usize)
        } else {
            let lo = self.routes.partition_point(|r| (r.0, r.1) < (src, dst));
            (lo, lo + self.routes[lo..].iter().take_while(|r| (r.0, r.1) == (src, dst)).count())
        };
        let g = &self.routes[lo..hi];
        if arr != WILD {
            let a = g.partition_point(|r| r.2 < arr);
            let b = a + g[a..].partition_point(|r| r.2 == arr);
            if b > a {
                return ((lo + a) as u32, (lo + b) as u32);
            }
        }
        ((lo + g.partition_point(|r| r.2 < WILD)) as u32, hi as u32)
    }

    /// Route ids for a packet from `src` to `dst` entering in slice `arr` (exact ts first).
    pub fn candidates(&self, src: u32, dst: u32, arr: u32, out: &mut Vec<u32>) {
        let (a, b) = self.candidate_range(src, dst, arr);
        out.clear();
        out.extend(a..b);
    }

    /// Hop `pos` of route `id`, if the route has that many hops.
    pub fn hop(&self, id: u32, pos: u32) -> Option<Action> {
        let r = self.routes[id as usize];
        (pos < r.4).then(|| self.hops[(r.3 + pos) as usize])
    }
}

/// How the engine decides a packet's next hop.
#[derive(Debug, Clone)]
pub enum Router {
    /// Compiled per-node time-flow tables.
    Table(Vec<NodeTable>),
    /// Source routes chosen at the first hop.
    Source(Routes),
    /// Built-in VLB for cyclic schedules: spray to a current neighbour that is not the
    /// destination, then wait at the intermediate for the direct circuit.
    Vlb(ConnIndex),
    /// Built-in direct-circuit routing: wait at the source for the direct circuit.
    Direct(ConnIndex),
    /// HOHO over earliest paths.
    Hoho(crate::earliest::EarliestIndex),
    /// UCMP over earliest paths (weight of extra hops, slice duration, link rate).
    Ucmp(crate::earliest::EarliestIndex, f64, u64, u64),
    /// Shortest paths of each slice's expander, pinned to the slice of first routing.
    Expander(crate::expander::SlicePaths),
}

/// Per node, every (peer node, slice, port) connection of the schedule, sorted; the
/// inverse of the peer table that built-in routers use.
#[derive(Debug, Clone)]
pub struct ConnIndex {
    conns: Vec<Vec<(u32, u32, u32)>>,
    slices: u32,
    /// Per (node, slice index): the node's connected optical ports and their peer nodes.
    slot_start: Vec<u32>,
    slot_ports: Vec<(u32, u32)>,
    /// Bit `a * nodes + b` set when node a has a circuit to node b in some slice.
    reach: Vec<u64>,
    /// Every node has a circuit to every other node in some slice (`reach` is all set).
    reach_all: bool,
    nodes: usize,
    /// Per (node, destination): where the destination's connections start in the node's
    /// sorted `conns` (one more entry per node closes the last range); empty for networks
    /// above `DENSE_NODES` nodes, which search instead.
    start: Vec<u32>,
}

/// Largest network for which `ConnIndex` keeps a dense (node, destination) index
/// (4 bytes per pair).
const DENSE_NODES: usize = 2048;

impl ConnIndex {
    pub fn new(sched: &Schedule, port_node: &[u32], port_offset: &[u32], optical: &[bool]) -> Self {
        let nodes = port_offset.len() - 1;
        let mut conns = vec![Vec::new(); nodes];
        for idx in 0..sched.slices() {
            for (gp, &opt) in optical.iter().enumerate() {
                if !opt {
                    continue;
                }
                let q = sched.peer(gp as u32, idx);
                if q != NONE {
                    let n = port_node[gp] as usize;
                    conns[n].push((port_node[q as usize], idx, gp as u32));
                }
            }
        }
        for c in &mut conns {
            c.sort_unstable();
        }
        let s = sched.slices() as usize;
        let mut slot_start = Vec::with_capacity(nodes * s + 1);
        let mut slot_ports = Vec::new();
        for n in 0..nodes {
            for idx in 0..s {
                slot_start.push(slot_ports.len() as u32);
                for gp in port_offset[n]..port_offset[n + 1] {
                    if optical[gp as usize] {
                        let q = sched.peer(gp, idx as u32);
                        if q != NONE {
                            slot_ports.push((gp, port_node[q as usize]));
                        }
                    }
                }
            }
        }
        slot_start.push(slot_ports.len() as u32);
        let mut reach = vec![0u64; (nodes * nodes).div_ceil(64)];
        for (a, c) in conns.iter().enumerate() {
            for &(b, _, _) in c {
                let bit = a * nodes + b as usize;
                reach[bit / 64] |= 1 << (bit % 64);
            }
        }
        // every pair a ≠ b set: count the bits a word at a time (a node may reach itself)
        let ones: usize = reach.iter().map(|w| w.count_ones() as usize).sum();
        let own = (0..nodes).filter(|&a| reach[(a * nodes + a) / 64] >> ((a * nodes + a) % 64) & 1 == 1).count();
        let reach_all = ones - own == nodes * (nodes - 1);
        let mut start = Vec::new();
        if nodes <= DENSE_NODES {
            start.reserve(nodes * (nodes + 1));
            for c in &conns {
                for d in 0..=nodes as u32 {
                    start.push(c.partition_point(|x| x.0 < d) as u32);
                }
            }
        }
        ConnIndex { conns, slices: sched.slices(), slot_start, slot_ports, reach, reach_all, nodes, start }
    }

    #[inline]
    fn reaches(&self, a: u32, b: u32) -> bool {
        let bit = a as usize * self.nodes + b as usize;
        self.reach[bit / 64] >> (bit % 64) & 1 == 1
    }

    /// `node`'s connections (dst, slice, port) to `dst`, in the index's order.
    #[inline]
    fn conns_to(&self, node: u32, dst: u32) -> &[(u32, u32, u32)] {
        let c = &self.conns[node as usize];
        if self.start.is_empty() {
            let lo = c.partition_point(|x| x.0 < dst);
            &c[lo..lo + c[lo..].iter().take_while(|x| x.0 == dst).count()]
        } else {
            if dst as usize >= self.nodes {
                return &[];
            }
            let i = node as usize * (self.nodes + 1) + dst as usize;
            &c[self.start[i] as usize..self.start[i + 1] as usize]
        }
    }

    /// The first connection from `node` to `dst` at or after slice `arr` (cyclically):
    /// smallest rank `(slice - arr) mod S`, then lowest port.
    pub fn first_direct(&self, node: u32, dst: u32, arr: u32) -> Option<Action> {
        let s = self.slices;
        let arr = if arr == WILD { 0 } else { arr };
        match self.conns_to(node, dst) {
            [] => None,
            [x] => Some(Action { port: x.2, dep: x.1 }),
            range => range.iter().min_by_key(|x| ((x.1 + s - arr % s) % s, x.2)).map(|x| Action { port: x.2, dep: x.1 }),
        }
    }

    /// Direct routing where several ports have a circuit to `dst` in the earliest slice
    /// (parallel OCSes carrying one schedule, e.g. Mordia on several ports): the packet
    /// takes one of them, `choose(n)` (called only for n >= 2, ports in order) picking as
    /// the network's multipath rule does; one circuit in that slice is taken as
    /// [`ConnIndex::first_direct`] takes it.
    pub fn direct_pick(&self, node: u32, dst: u32, arr: u32, choose: impl FnOnce(u32) -> u32) -> Option<Action> {
        let s = self.slices;
        let arr = if arr == WILD { 0 } else { arr };
        let range = match self.conns_to(node, dst) {
            [] => return None,
            [x] => return Some(Action { port: x.2, dep: x.1 }),
            range => range,
        };
        let rank = |x: &(u32, u32, u32)| (x.1 + s - arr % s) % s;
        let best = range.iter().map(rank).min()?;
        let n = range.iter().filter(|x| rank(x) == best).count() as u32;
        let mut ports = range.iter().filter(|x| rank(x) == best).map(|x| (x.2, x.1));
        if n < 2 {
            return ports.next().map(|(port, dep)| Action { port, dep });
        }
        let mut ports: Vec<(u32, u32)> = ports.collect();
        ports.sort_unstable();
        let (port, dep) = ports[choose(n) as usize];
        Some(Action { port, dep })
    }

    /// [`ConnIndex::vlb_spray`] and a choice among its candidates in one pass, without
    /// building the list: `choose(n)` is called once with the number of candidates
    /// (n ≥ 2) and returns an index below n; one candidate is taken without a call.
    #[inline]
    pub fn vlb_pick(&self, node: u32, dst: u32, arr: u32, choose: impl FnOnce(u32) -> u32) -> Option<Action> {
        let s = self.slices;
        // a slice index is below s already: no division on the hot path
        let mut idx = if arr == WILD { 0 } else if arr < s { arr } else { arr % s };
        for _ in 0..s {
            let slot = node as usize * s as usize + idx as usize;
            let ports = &self.slot_ports[self.slot_start[slot] as usize..self.slot_start[slot + 1] as usize];
            let ok = |m: u32| m != dst && (self.reach_all || self.reaches(m, dst));
            let (mut n, mut other) = (0u32, false);
            for &(_, m) in ports {
                other |= m != dst;
                n += ok(m) as u32;
            }
            if other {
                let r = match n {
                    0 => return None,
                    1 => 0,
                    _ => choose(n),
                };
                // the r-th candidate in port order
                let (gp, _) = *ports.iter().filter(|&&(_, m)| ok(m)).nth(r as usize).expect("r < n");
                return Some(Action { port: gp, dep: idx });
            }
            idx = if idx + 1 == s { 0 } else { idx + 1 };
        }
        None
    }

    /// VLB first-hop candidates at `node` for `dst`, arriving in slice `arr`: the ports
    /// of the first slice (from `arr`, cyclically) in which `node` has a neighbour other
    /// than `dst`, restricted to neighbours that have a circuit to `dst`; ordered by port.
    pub fn vlb_spray(&self, node: u32, dst: u32, arr: u32, out: &mut Vec<Action>) {
        out.clear();
        let s = self.slices;
        let arr = if arr == WILD { 0 } else { arr };
        // (arr + k) mod s for k = 0, 1, …: one remainder, then a wrapping count
        let mut next = arr % s;
        for _ in 0..s {
            let idx = next;
            next = if next + 1 == s { 0 } else { next + 1 };
            let slot = node as usize * s as usize + idx as usize;
            let ports = &self.slot_ports[self.slot_start[slot] as usize..self.slot_start[slot + 1] as usize];
            let mut other = false;
            for &(gp, m) in ports {
                if m != dst {
                    other = true;
                    if self.reaches(m, dst) {
                        out.push(Action { port: gp, dep: idx });
                    }
                }
            }
            if other {
                return; // the first slice with a neighbour other than dst decides
            }
        }
    }
}

/// Build per-node tables from (node, entry) pairs; validates ports against `port_offset`.
pub fn build_tables(nodes: usize, port_offset: &[u32], items: &[(u32, Entry)]) -> Result<Vec<NodeTable>, SpecError> {
    let mut per: Vec<Vec<Entry>> = vec![Vec::new(); nodes];
    for (i, &(n, e)) in items.iter().enumerate() {
        if n as usize >= nodes {
            return Err(SpecError::new(format!("tables[{i}].node"), n, format!("node out of range 0..{nodes}")));
        }
        if e.dst as usize >= nodes {
            return Err(SpecError::new(format!("tables[{i}].dst"), e.dst, format!("node out of range 0..{nodes}")));
        }
        if e.src != WILD && e.src as usize >= nodes {
            return Err(SpecError::new(format!("tables[{i}].src"), e.src, format!("node out of range 0..{nodes}")));
        }
        let (a, b) = (port_offset[n as usize], port_offset[n as usize + 1]);
        if e.port < a || e.port >= b {
            return Err(SpecError::new(format!("tables[{i}].port"), e.port.wrapping_sub(a),
                format!("node {n} has ports 0..{}", b - a)));
        }
        per[n as usize].push(e);
    }
    Ok(per.into_iter().map(NodeTable::new).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(arr: u32, src: u32, dst: u32, dep: u32, port: u32) -> Entry {
        Entry { dst, src, arr, dep, port }
    }

    /// The class rule by its definition: scan every entry of the destination, keep the
    /// most specific matching class, order it by (departure, port).
    fn reference(entries: &[Entry], src: u32, dst: u32, arr: u32) -> Vec<Action> {
        let mut best = 4u8;
        let mut out = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for e in entries.iter().filter(|e| e.dst == dst) {
            let c = match (e.src == src, e.src == WILD, e.arr == arr, e.arr == WILD) {
                (true, _, true, _) => 0,
                (true, _, _, true) => 1,
                (false, true, true, _) => 2,
                (false, true, _, true) => 3,
                _ => continue,
            };
            if c < best {
                best = c;
                out.clear();
                seen.clear();
            }
            if c == best && seen.insert(*e) {
                out.push(Action { port: e.port, dep: e.dep });
            }
        }
        out.sort_unstable_by_key(|x| (x.dep, x.port));
        out
    }

    proptest::proptest! {
        /// The binary-searched lookup returns exactly the class rule's answer, with dense
        /// and sparse destination indexes, for exact and wildcard queries.
        #[test]
        fn lookup_matches_the_class_rule(raw in proptest::collection::vec((0u32..5, 0u32..5, 0u32..4, 0u32..4, 0u32..6), 0..80),
                                         sparse in proptest::bool::ANY) {
            let w = |x: u32, m: u32| if x >= m { WILD } else { x };
            let dst_of = |d: u32| if sparse { d * 5000 } else { d };
            let entries: Vec<Entry> = raw.iter().map(|&(a, s, d, dep, port)| e(w(a, 4), w(s, 4), dst_of(d), w(dep, 3), port)).collect();
            let t = NodeTable::new(entries.clone());
            let mut out = Vec::new();
            for d in 0..5 {
                for s in [0, 1, 2, 3, WILD] {
                    for a in [0, 1, 2, 3, WILD] {
                        t.lookup(s, dst_of(d), a, &mut out);
                        proptest::prop_assert_eq!(&out, &reference(&entries, s, dst_of(d), a));
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// Destinations whose sources all share one action list (the spine of a compiled
        /// ECMP table), with or without wildcard-source entries for the others, answer
        /// from the source set: the same as the class rule for listed, unlisted and
        /// wildcard sources, also when one entry breaks the pattern.
        #[test]
        fn source_uniform_destinations_match_the_class_rule(srcs in proptest::collection::btree_set(0u32..200, 1..40),
                                                            acts in proptest::collection::btree_set((0u32..3, 0u32..8), 1..4),
                                                            wild_dep in proptest::bool::ANY, odd in 0u32..5) {
            let dep = |d: u32| if wild_dep { WILD } else { d };
            let mut entries: Vec<Entry> = srcs.iter().flat_map(|&s| acts.iter().map(move |&(d, p)| (s, d, p)))
                .map(|(s, d, p)| e(WILD, s, 7, dep(d), p)).collect();
            // 0: as built; 1: one source with another port; 2: an exact arrival slice; 3: a
            // wildcard source (the answer for unlisted sources); 4: two wildcard-source
            // entries, one with an exact arrival slice
            match odd {
                1 => entries[0].port += 100,
                2 => entries[0].arr = 1,
                3 => entries.push(e(WILD, WILD, 7, WILD, 50)),
                4 => entries.extend([e(WILD, WILD, 7, 2, 51), e(1, WILD, 7, WILD, 52)]),
                _ => {}
            }
            let t = NodeTable::new(entries.clone());
            // (one source with another port is still uniform)
            proptest::prop_assert_eq!(t.fast[7].0 != NONE, odd == 0 || odd == 3 || (odd == 1 && srcs.len() == 1));
            let mut out = Vec::new();
            for s in (0..260).chain([WILD]) {
                for a in [0, 1, WILD] {
                    t.lookup(s, 7, a, &mut out);
                    proptest::prop_assert_eq!(&out, &reference(&entries, s, 7, a));
                }
            }
        }
    }

    proptest::proptest! {
        /// Source-route candidates (dense index or binary search) are the routes of the
        /// packet's slice when there are any, else the wildcard ones, in id order.
        #[test]
        fn route_candidates_match_their_definition(raw in proptest::collection::vec((0u32..4, 0u32..4, 0u32..4), 0..60),
                                                   dense in proptest::bool::ANY) {
            let mut rs: Vec<(u32, u32, u32)> = raw.iter().map(|&(s, d, t)| (s, d, if t == 3 { WILD } else { t })).collect();
            rs.sort();
            let mut r = Routes::default();
            for (i, &(s, d, t)) in rs.iter().enumerate() {
                r.routes.push((s, d, t, i as u32, 1));
            }
            if dense {
                r.index(4);
            }
            let mut out = Vec::new();
            for s in 0..5 {
                for d in 0..5 {
                    for a in [0, 1, 2, WILD] {
                        let exact: Vec<u32> = (0..rs.len() as u32).filter(|&i| { let x = rs[i as usize]; (x.0, x.1, x.2) == (s, d, a) }).collect();
                        let want = if exact.is_empty() {
                            (0..rs.len() as u32).filter(|&i| { let x = rs[i as usize]; (x.0, x.1, x.2) == (s, d, WILD) }).collect()
                        } else {
                            exact
                        };
                        r.candidates(s, d, a, &mut out);
                        proptest::prop_assert_eq!(&out, &want);
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// The one-pass VLB choice is the spray's candidate at the chosen index, asks for
        /// a choice exactly when there are two candidates or more (with their number),
        /// on random rotor schedules with idle ports and nodes that reach only some others.
        #[test]
        fn vlb_pick_is_the_sprays_choice(nodes in 3u32..8, u in 1u32..4, slices in 1usize..5, seed in proptest::num::u64::ANY,
                                          r in 0u32..64) {
            let n_ports = (nodes * u) as usize;
            let port_node: Vec<u32> = (0..n_ports as u32).map(|gp| gp / u).collect();
            let port_offset: Vec<u32> = (0..=nodes).map(|a| a * u).collect();
            let mut peer = vec![NONE; slices * n_ports];
            for sl in 0..slices {
                // a random order of the ports, paired two by two across nodes
                let mut order: Vec<u32> = (0..n_ports as u32).collect();
                order.sort_by_key(|&gp| crate::rng::mix64(seed ^ (sl as u64) << 32 ^ gp as u64));
                for pair in order.chunks(2) {
                    if let [a, b] = *pair {
                        if port_node[a as usize] != port_node[b as usize] {
                            peer[sl * n_ports + a as usize] = b;
                            peer[sl * n_ports + b as usize] = a;
                        }
                    }
                }
            }
            let sched = Schedule::cyclic(vec![1000; slices], 10, n_ports, peer).unwrap();
            let ci = ConnIndex::new(&sched, &port_node, &port_offset, &vec![true; n_ports]);
            let mut cands = Vec::new();
            for node in 0..nodes {
                for dst in 0..nodes {
                    for arr in (0..slices as u32).chain([WILD, slices as u32 + 1]) {
                        ci.vlb_spray(node, dst, arr, &mut cands);
                        let mut asked = None;
                        let got = ci.vlb_pick(node, dst, arr, |n| { asked = Some(n); r % n });
                        let want = match cands.len() {
                            0 => None,
                            1 => Some(cands[0]),
                            k => Some(cands[(r % k as u32) as usize]),
                        };
                        proptest::prop_assert_eq!(got, want);
                        proptest::prop_assert_eq!(asked, if cands.len() >= 2 { Some(cands.len() as u32) } else { None });
                    }
                }
            }
        }
    }

    /// Direct routing over parallel circuits (node 0's ports 0-2 all reach node 1 in slice
    /// 1, port 1 alone in slice 0): the earliest slice decides, and among its ports the
    /// multipath choice picks (ports in order); one port is taken without asking.
    #[test]
    fn direct_pick_chooses_among_the_earliest_slices_parallel_circuits() {
        let (nodes, u, slices) = (2u32, 3u32, 2usize);
        let n_ports = (nodes * u) as usize;
        let port_node: Vec<u32> = (0..n_ports as u32).map(|gp| gp / u).collect();
        let port_offset: Vec<u32> = (0..=nodes).map(|a| a * u).collect();
        let mut peer = vec![NONE; slices * n_ports];
        let mut link = |sl: usize, a: u32, b: u32| {
            peer[sl * n_ports + a as usize] = b;
            peer[sl * n_ports + b as usize] = a;
        };
        link(0, 1, 4);
        for p in 0..3 {
            link(1, p, 3 + p);
        }
        let sched = Schedule::cyclic(vec![1000; slices], 10, n_ports, peer).unwrap();
        let ci = ConnIndex::new(&sched, &port_node, &port_offset, &vec![true; n_ports]);
        let mut asked = None;
        assert_eq!(ci.direct_pick(0, 1, 0, |n| { asked = Some(n); 0 }), Some(Action { port: 1, dep: 0 }));
        assert_eq!(asked, None);
        assert_eq!(ci.first_direct(0, 1, 1), Some(Action { port: 0, dep: 1 }));
        for k in 0..3 {
            let got = ci.direct_pick(0, 1, 1, |n| { asked = Some(n); k });
            assert_eq!((got, asked), (Some(Action { port: k, dep: 1 }), Some(3)));
        }
        assert_eq!(ci.direct_pick(0, 0, 1, |_| unreachable!()), ci.first_direct(0, 0, 1));
    }

    #[test]
    fn most_specific_class_wins() {
        let t = NodeTable::new(vec![
            e(WILD, WILD, 3, WILD, 9),
            e(0, WILD, 3, 2, 7),
            e(WILD, 1, 3, 1, 5),
            e(0, 1, 3, 2, 4),
            e(0, 1, 3, 0, 6),
        ]);
        let mut out = Vec::new();
        t.lookup(1, 3, 0, &mut out);
        assert_eq!(out, vec![Action { port: 6, dep: 0 }, Action { port: 4, dep: 2 }]);
        t.lookup(1, 3, 1, &mut out);
        assert_eq!(out, vec![Action { port: 5, dep: 1 }]);
        t.lookup(2, 3, 0, &mut out);
        assert_eq!(out, vec![Action { port: 7, dep: 2 }]);
        t.lookup(2, 3, 1, &mut out);
        assert_eq!(out, vec![Action { port: 9, dep: WILD }]);
        t.lookup(2, 4, 1, &mut out);
        assert!(out.is_empty());
    }
}
