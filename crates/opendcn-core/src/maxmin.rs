//! The flow-level mode's inner loops (`python/opendcn/flowsim.py`, docs/flowsim.md): max-min
//! fair rates by progressive filling, and the state graph behind the routing matrix.
//!
//! The same computation as the Python reference `flowsim._maxmin`, operation for
//! operation, so that both give bit-identical rates: all rising flows rise together; the
//! shares of the rising flows on each link are summed in entry order at the start, the
//! smallest increment that saturates a link is taken, the flows crossing a saturated
//! link freeze at the level reached, and their shares come off their links' sums (in
//! ascending flow order, each flow's entries in entry order; a link left without rising
//! flows gets exactly 0). What the Python version pays per round in numpy calls
//! (building, filtering and re-indexing the entries) is a loop here.
//!
//! The entries are never copied out: a flow's are its routing-matrix row read in place,
//! then its two NIC links. One pass in flow order sums the shares (the reference's entry
//! order), a second lists each link's rising flows; each round then runs over the live
//! links' remaining capacity and shares, kept side by side (the division and the
//! minimum vectorise), and drops the links that no rising flow crosses any more.

/// The rising entries of one flow-level rate computation: each active flow's fabric links
/// (its rack pair's row of the routing matrix), then its uplink and its downlink.
pub struct FlowLinks<'a> {
    /// Rack pair of each active flow (row of the routing matrix).
    pub pair: &'a [i64],
    /// Link index of each active flow's source uplink and destination downlink.
    pub up: &'a [i64],
    pub down: &'a [i64],
    /// Flows that get rate 0 (no route left).
    pub blocked: &'a [bool],
    /// The routing matrix in CSR form: share of a pair's traffic on each link.
    pub indptr: &'a [i64],
    pub indices: &'a [i32],
    pub data: &'a [f64],
}

/// Max-min fair rates (bit/s) of the flows of `fl` on links of capacity `cap`, and whether
/// some link ends above its capacity (beyond rounding: an invariant error for the caller).
/// Flows that are blocked, or that cross a link of capacity 0, get 0.
///
/// A flow's entries are read in place (its routing-matrix row, then its uplink and its
/// downlink, share 1): the per-link sums run over the flows in ascending order, each
/// flow's entries in order, which is the reference's entry order, so the rounding is the
/// same. Per link, only the rising flows that cross it are listed (for freezing).
pub fn flow_rates(fl: &FlowLinks, cap: &[f64]) -> Result<(Vec<f64>, bool), String> {
    let f_n = fl.pair.len();
    if fl.up.len() != f_n || fl.down.len() != f_n || fl.blocked.len() != f_n {
        return Err("pair, up, down and blocked must have one entry per flow".into());
    }
    let l_n = cap.len();
    let link = |l: i64| -> Result<usize, String> {
        if l < 0 || l as usize >= l_n {
            Err(format!("link {l} outside 0..{l_n}"))
        } else {
            Ok(l as usize)
        }
    };
    // each flow's row of the routing matrix, checked once
    let mut rows: Vec<(u32, u32)> = Vec::with_capacity(f_n);
    for &p in fl.pair {
        if p < 0 || p as usize + 1 >= fl.indptr.len() {
            return Err(format!("pair {p} outside the routing matrix"));
        }
        let (a, b) = (fl.indptr[p as usize], fl.indptr[p as usize + 1]);
        if a < 0 || a > b || b as usize > fl.indices.len() || b as usize > fl.data.len() || b > u32::MAX as i64 {
            return Err(format!("routing matrix row {p} out of range"));
        }
        rows.push((a as u32, b as u32));
    }
    let mut ends: Vec<(u32, u32)> = Vec::with_capacity(f_n);
    for f in 0..f_n {
        ends.push((link(fl.up[f])? as u32, link(fl.down[f])? as u32));
    }
    let any_dead = cap.iter().any(|&c| c <= 0.0);
    let mut rising: Vec<bool> = fl.blocked.iter().map(|&b| !b).collect();
    // per link, side by side (one line per touch): the summed shares of the rising flows
    // (in entry order from 0.0), their number, then where its list of rising flows fills
    #[derive(Clone, Copy, Default)]
    struct Acc {
        w: f64,
        cnt: u32,
        fill: u32,
    }
    let mut acc = vec![Acc::default(); l_n];
    for f in 0..f_n {
        let (a, b) = (rows[f].0 as usize, rows[f].1 as usize);
        let (idx, val) = (&fl.indices[a..b], &fl.data[a..b]);
        let (u, d) = (ends[f].0 as usize, ends[f].1 as usize);
        if !rising[f] || any_dead {
            for &c in idx {
                link(c as i64)?;
            }
        }
        if any_dead && rising[f] && (cap[u] <= 0.0 || cap[d] <= 0.0 || idx.iter().any(|&c| cap[c as usize] <= 0.0)) {
            rising[f] = false;
        }
        if rising[f] {
            for (&c, &v) in idx.iter().zip(val) {
                // (checked here when not above)
                let x = &mut acc[if any_dead { c as usize } else { link(c as i64)? }];
                x.w += v;
                x.cnt += 1;
            }
            for c in [u, d] {
                acc[c].w += 1.0;
                acc[c].cnt += 1;
            }
        }
    }
    // the rising flows of each link (flows ascending)
    let mut l_ptr = vec![0u32; l_n + 1];
    for l in 0..l_n {
        acc[l].fill = l_ptr[l];
        l_ptr[l + 1] = l_ptr[l] + acc[l].cnt;
    }
    let mut l_flow = vec![0u32; l_ptr[l_n] as usize];
    for f in 0..f_n {
        if !rising[f] {
            continue;
        }
        let (a, b) = (rows[f].0 as usize, rows[f].1 as usize);
        for &c in &fl.indices[a..b] {
            let x = &mut acc[c as usize];
            l_flow[x.fill as usize] = f as u32;
            x.fill += 1;
        }
        for c in [ends[f].0 as usize, ends[f].1 as usize] {
            let x = &mut acc[c];
            l_flow[x.fill as usize] = f as u32;
            x.fill += 1;
        }
    }
    let mut rate = vec![0.0f64; f_n];
    // the live links (rising shares > 0), ascending, with their remaining capacity and
    // rising shares side by side; per link its rising entries, its place among the live
    // ones (NONE: no longer live, and never again: shares only leave) and its load
    const NONE: u32 = u32::MAX;
    #[derive(Clone, Copy)]
    struct Link {
        cnt: u32,
        pos: u32,
        load: f64,
    }
    let mut lk: Vec<Link> = acc.iter().map(|x| Link { cnt: x.cnt, pos: NONE, load: 0.0 }).collect();
    let mut lid: Vec<u32> = Vec::new();
    let mut lrem: Vec<f64> = Vec::new();
    let mut lw: Vec<f64> = Vec::new();
    for l in 0..l_n {
        if acc[l].w > 0.0 {
            lk[l].pos = lid.len() as u32;
            lid.push(l as u32);
            lrem.push(cap[l]);
            lw.push(acc[l].w);
        }
    }
    drop(acc);
    let mut share: Vec<f64> = Vec::new();
    let mut sat: Vec<u32> = Vec::new();
    let mut newly: Vec<u32> = Vec::new();
    let mut level = 0.0f64;
    while !lid.is_empty() {
        share.clear();
        share.extend(lrem.iter().zip(&lw).map(|(&r, &x)| r / x));
        let lo = share.iter().fold(f64::INFINITY, |a, &b| a.min(b));
        let inc = lo.max(0.0);
        level += inc;
        let thr = inc * (1.0 + 1e-12) + 1e-300;
        sat.clear();
        for i in 0..lid.len() {
            let mut r = lrem[i] - inc * lw[i];
            if share[i] <= thr {
                r = 0.0;
                sat.push(lid[i]);
            }
            lrem[i] = if r < 0.0 { 0.0 } else { r };
        }
        newly.clear();
        for &l in &sat {
            let l = l as usize;
            for &f in &l_flow[l_ptr[l] as usize..l_ptr[l + 1] as usize] {
                let f = f as usize;
                if rising[f] {
                    rising[f] = false;
                    rate[f] = level;
                    newly.push(f as u32);
                }
            }
        }
        newly.sort_unstable();
        // a frozen flow's shares come off its links' sums; its load goes on them (the
        // caller's check that no link carries more than its capacity)
        let mut leave = |c: usize, v: f64| {
            let x = &mut lk[c];
            x.cnt -= 1;
            x.load += v * level;
            if x.pos != NONE {
                let y = &mut lw[x.pos as usize];
                *y = if x.cnt == 0 { 0.0 } else { *y - v };
            }
        };
        for &f in &newly {
            let f = f as usize;
            let (a, b) = (rows[f].0 as usize, rows[f].1 as usize);
            for (&c, &v) in fl.indices[a..b].iter().zip(&fl.data[a..b]) {
                leave(c as usize, v);
            }
            leave(ends[f].0 as usize, 1.0);
            leave(ends[f].1 as usize, 1.0);
        }
        let mut k = 0;
        for i in 0..lid.len() {
            let l = lid[i];
            if lw[i] > 0.0 {
                lid[k] = l;
                lrem[k] = lrem[i];
                lw[k] = lw[i];
                lk[l as usize].pos = k as u32;
                k += 1;
            } else {
                lk[l as usize].pos = NONE;
            }
        }
        lid.truncate(k);
        lrem.truncate(k);
        lw.truncate(k);
    }
    // every flow with a rate has frozen, so every link's load is in (blocked flows add 0)
    let over = (0..l_n).any(|c| lk[c].load > cap[c] * (1.0 + 1e-9) + 1e-3);
    Ok((rate, over))
}

#[cfg(test)]
mod tests {
    #[test]
    fn coo_to_csr_sorts_columns_and_sums_repeats_in_input_order() {
        // row 2 holds column 1 three times: summed left to right
        let rows = [2, 0, 2, 2, 0, 2];
        let cols = [1, 5, 0, 1, 3, 1];
        let vals = [0.1, 1.0, 2.0, 0.2, 3.0, 0.3];
        let (p, i, d) = coo_to_csr(&rows, &cols, &vals, 4).unwrap();
        assert_eq!(p, vec![0, 2, 2, 4, 4]);
        assert_eq!(i, vec![3, 5, 0, 1]);
        assert_eq!(d, vec![3.0, 1.0, 2.0, (0.1 + 0.2) + 0.3]);
        assert!(coo_to_csr(&[4], &[0], &[1.0], 4).is_err());
        assert!(coo_to_csr(&[0], &[-1], &[1.0], 4).is_err());
        assert!(coo_to_csr(&[0, 1], &[0], &[1.0], 4).is_err());
    }

    use super::*;

    fn run(pairs: &[Vec<(i32, f64)>], flows: &[(i64, i64, i64, bool)], cap: &[f64]) -> (Vec<f64>, bool) {
        let mut indptr = vec![0i64];
        let mut indices = Vec::new();
        let mut data = Vec::new();
        for row in pairs {
            for &(c, v) in row {
                indices.push(c);
                data.push(v);
            }
            indptr.push(indices.len() as i64);
        }
        let pair: Vec<i64> = flows.iter().map(|f| f.0).collect();
        let up: Vec<i64> = flows.iter().map(|f| f.1).collect();
        let down: Vec<i64> = flows.iter().map(|f| f.2).collect();
        let blocked: Vec<bool> = flows.iter().map(|f| f.3).collect();
        let fl = FlowLinks { pair: &pair, up: &up, down: &down, blocked: &blocked, indptr: &indptr, indices: &indices, data: &data };
        flow_rates(&fl, cap).unwrap()
    }

    /// The textbook example: two flows share link 0 (capacity 10), one of them also crosses
    /// link 1 (capacity 2): that one gets 2, the other the remaining 8.
    #[test]
    fn bottlenecks_then_the_rest() {
        // links: 0, 1 fabric; 2..4 uplinks, 4..6 downlinks (capacity 100)
        let cap = [10.0, 2.0, 100.0, 100.0, 100.0, 100.0];
        let pairs = vec![vec![(0, 1.0), (1, 1.0)], vec![(0, 1.0)]];
        let (r, over) = run(&pairs, &[(0, 2, 4, false), (1, 3, 5, false)], &cap);
        assert_eq!(r, vec![2.0, 8.0]);
        assert!(!over);
    }

    /// A flow split over two paths (half on each) and a blocked flow.
    #[test]
    fn split_and_blocked_flows() {
        let cap = [10.0, 10.0, 100.0, 100.0];
        let pairs = vec![vec![(0, 0.5), (1, 0.5)], vec![(0, 1.0)]];
        let (r, _) = run(&pairs, &[(0, 2, 3, false), (1, 2, 3, false), (1, 2, 3, true)], &cap);
        // flows 0 and 1 share the uplink (100) and link 0 (10: 0.5 r0 + r1): both at 20/3
        assert!((r[0] - 20.0 / 3.0).abs() < 1e-12 && (r[1] - 20.0 / 3.0).abs() < 1e-12, "{r:?}");
        assert_eq!(r[2], 0.0);
    }

    /// A link of capacity 0 stops the flows that cross it.
    #[test]
    fn dead_links_give_zero() {
        let cap = [0.0, 10.0, 100.0, 100.0];
        let pairs = vec![vec![(0, 1.0)], vec![(1, 1.0)]];
        let (r, over) = run(&pairs, &[(0, 2, 3, false), (1, 2, 3, false)], &cap);
        assert_eq!(r, vec![0.0, 10.0]);
        assert!(!over);
    }

    /// Three racks in a line 0 - 1 - 2 (ports: 0: 0->1, 1: 1->0, 2: 1->2, 3: 2->1), any-source
    /// entries towards each destination: pair (0, 2) goes 0 -> 1 -> 2, two edges.
    #[test]
    fn state_graph_follows_the_tables() {
        let n = 3i64;
        let k = |node: i64, dst: i64, src1: i64| (node * n + dst) * (n + 1) + src1;
        let mut rows = vec![(k(0, 1, 0), 0), (k(0, 2, 0), 0), (k(1, 0, 0), 1), (k(1, 2, 0), 2), (k(2, 0, 0), 3), (k(2, 1, 0), 3)];
        rows.sort();
        let key: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let gport: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let nxt = [1i64, 0, 2, 1];
        let up = [true; 4];
        let pid: Vec<i64> = (0..3).flat_map(|s| (0..3).filter(move |&d| d != s).map(move |d| s * n + d)).collect();
        let g = state_graph(&key, &gport, &up, &nxt, n, 3, &pid, 16).unwrap();
        assert!(!g.looped);
        // the hash-map index of large key spaces finds the same states and edges
        let h = state_graph_with(&key, &gport, &up, &nxt, n, 3, &pid, 16, 0).unwrap();
        assert_eq!((&h.st_pair, &h.st_node, &h.ef, &h.ep, &h.et), (&g.st_pair, &g.st_node, &g.ef, &g.ep, &g.et));
        // pair (0, 2) = id 1: state 1 -> (pair 2, node 1) -> (pair 2, node 2)
        let s1 = g.et[g.ef.iter().position(|&f| f == 1).unwrap()] as usize;
        assert_eq!((g.st_pair[s1], g.st_node[s1]), (2, 1));
        let s2 = g.et[g.ef.iter().position(|&f| f == s1 as i64).unwrap()] as usize;
        assert_eq!((g.st_pair[s2], g.st_node[s2]), (2, 2));
        assert_eq!(g.ef.len(), 6 + 2); // one hop per neighbour pair, two for the two far pairs
        // a table that sends 0 -> 1 -> 0 for destination 2: the states cycle (known states
        // are not revisited) and pair (0, 2) never reaches rack 2
        let mut bad = gport.clone();
        bad[key.iter().position(|&x| x == k(1, 2, 0)).unwrap()] = 1;
        let b = state_graph(&key, &bad, &up, &nxt, n, 3, &pid, 16).unwrap();
        assert!(!b.looped);
        assert!(!(0..b.st_pair.len()).any(|i| b.st_pair[i] == 2 && b.st_node[i] == 2));
        assert!(b.et.contains(&1)); // back to pair (0, 2)'s first state
        // unsorted keys are refused
        let rev: Vec<i64> = key.iter().rev().copied().collect();
        assert!(state_graph(&rev, &gport, &up, &nxt, n, 3, &pid, 16).is_err());
    }

    #[test]
    fn bad_indices_are_errors() {
        let fl = FlowLinks { pair: &[3], up: &[0], down: &[1], blocked: &[false], indptr: &[0, 0], indices: &[], data: &[] };
        assert!(flow_rates(&fl, &[1.0, 1.0]).is_err());
    }
}

/// The (rack pair, node) states a packet of each pair can be in under per-node forwarding
/// tables, and the edges between them, for the flow-level routing matrix
/// (`flowsim._table_matrix`, whose numpy version this reproduces array for array).
pub struct StateGraph {
    pub st_pair: Vec<i64>,
    pub st_node: Vec<i64>,
    /// Edges: from state, global port, to state; in discovery order.
    pub ef: Vec<i64>,
    pub ep: Vec<i64>,
    pub et: Vec<i64>,
    /// A packet still travels after `max_hops` hops.
    pub looped: bool,
}

/// Key spaces up to this many (pair, node) states are indexed by a flat array (4 bytes a
/// state), larger ones by a hash map.
const DENSE_STATES: u64 = 1 << 25;

enum Known {
    Dense(Vec<u32>),
    Sparse(crate::flatmap::FlatMap),
}

impl Known {
    #[inline]
    fn get(&self, k: u64) -> Option<u64> {
        match self {
            Known::Dense(v) => match v[k as usize] {
                u32::MAX => None,
                x if x == u32::MAX - 1 => Some(u64::MAX - 1),
                x => Some(x as u64),
            },
            Known::Sparse(m) => m.get(k),
        }
    }

    #[inline]
    fn insert(&mut self, k: u64, val: u64) {
        match self {
            Known::Dense(v) => v[k as usize] = if val == u64::MAX - 1 { u32::MAX - 1 } else { val as u32 },
            Known::Sparse(m) => {
                m.insert(k, val);
            }
        }
    }
}

/// Breadth-first over the states from each pair's source rack: `key` are the table entries'
/// sorted keys `(node·N + dst)·(N + 1) + (src + 1)` (src + 1 = 0: any source), `gport`
/// their global ports; a state follows every entry of its most specific match whose port
/// is `up`, to node `nxt[port]`. States are numbered as found: the pairs' sources first,
/// then per hop the new states in ascending `pair·T + node` order; the next frontier is
/// the new states not at their destination.
#[allow(clippy::too_many_arguments)]
pub fn state_graph(key: &[i64], gport: &[i64], up: &[bool], nxt: &[i64], n: i64, t: i64, pid: &[i64],
                   max_hops: usize) -> Result<StateGraph, String> {
    state_graph_with(key, gport, up, nxt, n, t, pid, max_hops, DENSE_STATES)
}

#[allow(clippy::too_many_arguments)]
fn state_graph_with(key: &[i64], gport: &[i64], up: &[bool], nxt: &[i64], n: i64, t: i64, pid: &[i64],
                    max_hops: usize, dense_limit: u64) -> Result<StateGraph, String> {
    use crate::flatmap::FlatMap;
    if key.len() != gport.len() || up.len() != nxt.len() {
        return Err("key / gport and up / nxt must have equal lengths".into());
    }
    let mut g = StateGraph { st_pair: pid.to_vec(), st_node: pid.iter().map(|&p| p / n).collect(), ef: vec![],
                             ep: vec![], et: vec![], looped: false };
    if pid.iter().any(|&p| p < 0 || p >= n * n) {
        return Err("pair ids must be in 0..N*N".into());
    }
    // state key pair·T + node -> id: a flat array when the key space is small enough
    let space = (n as u64).saturating_mul(n as u64).saturating_mul(t.max(1) as u64);
    let mut known = if space <= dense_limit { Known::Dense(vec![u32::MAX; space as usize]) }
                    else { Known::Sparse(FlatMap::with_capacity(pid.len() * 4)) };
    for (i, &p) in pid.iter().enumerate() {
        known.insert((p * t + p / n) as u64, i as u64);
    }
    // the entries of each (node, destination) group: key / (N + 1) = node·N + dst
    let groups = (t * n) as usize;
    if key.windows(2).any(|w| w[0] > w[1]) || key.first().is_some_and(|&k| k < 0)
        || key.last().is_some_and(|&k| k / (n + 1) >= t * n) {
        return Err("table keys must be sorted and within the (node, destination) range".into());
    }
    let mut g_lo = vec![0usize; groups + 1];
    for &k in key {
        g_lo[(k / (n + 1)) as usize + 1] += 1;
    }
    for i in 0..groups {
        g_lo[i + 1] += g_lo[i];
    }
    let range = |k: i64| -> (usize, usize) {
        let gi = (k / (n + 1)) as usize;
        let (a, b) = (g_lo[gi], g_lo[gi + 1]);
        let run = &key[a..b];
        let lo = run.partition_point(|&x| x < k);
        let hi = lo + run[lo..].partition_point(|&x| x <= k);
        (a + lo, a + hi)
    };
    let mut frontier: Vec<i64> = (0..pid.len() as i64).collect();
    let mut hop_ek: Vec<i64> = Vec::new();
    let mut uniq: Vec<i64> = Vec::new();
    for _ in 0..max_hops {
        if frontier.is_empty() {
            return Ok(g);
        }
        hop_ek.clear();
        for &st in &frontier {
            let (p, v) = (g.st_pair[st as usize], g.st_node[st as usize]);
            let (s, d) = (p / n, p % n);
            let (lo1, hi1) = range((v * n + d) * (n + 1) + (s + 1));
            let (lo, hi) = if hi1 > lo1 { (lo1, hi1) } else { range((v * n + d) * (n + 1)) };
            for &port in &gport[lo..hi] {
                if port < 0 || port as usize >= up.len() {
                    return Err(format!("table port {port} outside 0..{}", up.len()));
                }
                if !up[port as usize] {
                    continue;
                }
                let w = nxt[port as usize];
                if w < 0 || w >= t {
                    return Err(format!("port {port} leads to node {w} outside 0..{t}"));
                }
                g.ef.push(st);
                g.ep.push(port);
                hop_ek.push(p * t + w);
            }
        }
        // new states: numbered in ascending key order after the known ones
        const PENDING: u64 = u64::MAX - 1;
        uniq.clear();
        for &k in &hop_ek {
            if known.get(k as u64).is_none() {
                known.insert(k as u64, PENDING);
                uniq.push(k);
            }
        }
        uniq.sort_unstable();
        let mut fresh: Vec<i64> = Vec::with_capacity(uniq.len());
        for &k in &uniq {
            let id = g.st_pair.len() as i64;
            g.st_pair.push(k / t);
            g.st_node.push(k % t);
            known.insert(k as u64, id as u64);
            fresh.push(id);
        }
        g.et.extend(hop_ek.iter().map(|&k| known.get(k as u64).unwrap_or(0) as i64));
        debug_assert_eq!(g.et.len(), g.ef.len());
        frontier = fresh.into_iter().filter(|&id| g.st_node[id as usize] != g.st_pair[id as usize] % n).collect();
    }
    g.looped = !frontier.is_empty();
    Ok(g)
}

/// Where each group starts when items with these keys (each below `n`) are laid out by
/// key: the prefix sums of the keys' counts (`n + 1` entries, the last the item count).
fn group_starts(keys: impl Iterator<Item = usize>, n: usize) -> Vec<usize> {
    let mut start = vec![0usize; n + 1];
    for k in keys {
        start[k + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    start
}

/// A compressed-sparse-row matrix of `n_rows` rows from entries `(rows[i], cols[i],
/// vals[i])`: per row, the columns ascending, and the entries of one (row, column) summed
/// in their order in the input (left to right). Returns `(indptr, indices, data)`.
/// scipy's conversion gives the same arrays when no (row, column) occurs more than twice
/// (a sum of two terms does not depend on their order); beyond that its order of
/// summation is not specified, while this one is.
pub fn coo_to_csr(rows: &[i64], cols: &[i64], vals: &[f64], n_rows: usize)
                  -> Result<(Vec<i64>, Vec<i64>, Vec<f64>), String> {
    if cols.len() != rows.len() || vals.len() != rows.len() {
        return Err("rows, cols and vals must have the same length".into());
    }
    if let Some(&r) = rows.iter().find(|&&r| r < 0 || r as usize >= n_rows) {
        return Err(format!("row {r} outside 0..{n_rows}"));
    }
    if let Some(&c) = cols.iter().find(|&&c| c < 0) {
        return Err(format!("column {c} is negative"));
    }
    // a stable counting sort by row keeps each row's entries in input order
    let start = group_starts(rows.iter().map(|&r| r as usize), n_rows);
    let mut fill = start.clone();
    let mut by_row: Vec<(i64, f64)> = vec![(0, 0.0); rows.len()];
    for i in 0..rows.len() {
        let k = &mut fill[rows[i] as usize];
        by_row[*k] = (cols[i], vals[i]);
        *k += 1;
    }
    let mut indptr = Vec::with_capacity(n_rows + 1);
    let mut indices = Vec::with_capacity(rows.len());
    let mut data = Vec::with_capacity(rows.len());
    indptr.push(0i64);
    for r in 0..n_rows {
        let row = &mut by_row[start[r]..start[r + 1]];
        row.sort_by_key(|x| x.0); // stable: equal columns stay in input order
        let mut k = 0;
        while k < row.len() {
            let (c, mut v) = row[k];
            k += 1;
            while k < row.len() && row[k].0 == c {
                v += row[k].1;
                k += 1;
            }
            indices.push(c);
            data.push(v);
        }
        indptr.push(indices.len() as i64);
    }
    Ok((indptr, indices, data))
}

/// The routing matrix's entries from a [`StateGraph`] (`flowsim._table_matrix` steps 2 and
/// 3, whose numpy version this reproduces value for value and in the same order).
pub struct Shares {
    /// Per hop, per pushed edge: the pair, the port and the share of the pair's traffic.
    pub rows: Vec<i64>,
    pub cols: Vec<i64>,
    pub vals: Vec<f64>,
    /// Shares arriving at the destination after `h_cols` links.
    pub h_rows: Vec<i64>,
    pub h_cols: Vec<i64>,
    pub h_vals: Vec<f64>,
    /// Whether each of the first `n_pid` states (the pairs' sources) reaches its destination.
    pub reach: Vec<bool>,
}

/// Live states (at their destination, or with an edge to a live state: the same Jacobi
/// passes as the reference, at most `max_hops + 1`), the edges between live states, and
/// each pair's traffic pushed from its source state hop by hop, split evenly over a
/// state's live edges. `st_pair / st_node` are the states (the first `n_pid` the pairs'
/// sources), `ef / ep / et` the edges, `n` the racks.
#[allow(clippy::too_many_arguments)]
pub fn state_shares(st_pair: &[i64], st_node: &[i64], ef: &[i64], ep: &[i64], et: &[i64], n_pid: usize, n: i64,
                    max_hops: usize) -> Result<Shares, String> {
    let s_n = st_pair.len();
    if st_node.len() != s_n || ep.len() != ef.len() || et.len() != ef.len() || n_pid > s_n || n < 1 {
        return Err("states and edges must have matching lengths".into());
    }
    if ef.iter().chain(et).any(|&s| s < 0 || s as usize >= s_n) {
        return Err(format!("an edge joins a state outside 0..{s_n}"));
    }
    let at_dst: Vec<bool> = (0..s_n).map(|i| st_node[i] == st_pair[i] % n).collect();
    // 2. live states. The reference's Jacobi pass k adds the states with a path of k edges
    // to a destination, and it makes at most max_hops + 1 passes: live = distance to a
    // destination <= max_hops + 1, by one breadth-first search over the reversed edges.
    let rstart = group_starts(et.iter().map(|&t| t as usize), s_n);
    let mut rfill = rstart.clone();
    let mut rfrom = vec![0u32; ef.len()];
    for i in 0..ef.len() {
        let k = &mut rfill[et[i] as usize];
        rfrom[*k] = ef[i] as u32;
        *k += 1;
    }
    let mut live = at_dst.clone();
    let mut frontier: Vec<usize> = (0..s_n).filter(|&s| live[s]).collect();
    let mut next: Vec<usize> = Vec::new();
    for _ in 0..max_hops + 1 {
        if frontier.is_empty() {
            break;
        }
        next.clear();
        for &t in &frontier {
            for &f in &rfrom[rstart[t]..rstart[t + 1]] {
                if !live[f as usize] {
                    live[f as usize] = true;
                    next.push(f as usize);
                }
            }
        }
        std::mem::swap(&mut frontier, &mut next);
    }
    drop(rfrom);
    // live edges, grouped by their from-state in edge order (a stable counting sort)
    let start = group_starts((0..ef.len()).filter(|&i| live[et[i] as usize] && live[ef[i] as usize])
                                 .map(|i| ef[i] as usize), s_n);
    let kept = start[s_n];
    let outdeg: Vec<f64> = (0..s_n).map(|s| (start[s + 1] - start[s]) as f64).collect();
    let mut fill = start.clone();
    let mut e_port = vec![0i64; kept];
    let mut e_to = vec![0usize; kept];
    for i in 0..ef.len() {
        if live[et[i] as usize] && live[ef[i] as usize] {
            let k = &mut fill[ef[i] as usize];
            e_port[*k] = ep[i];
            e_to[*k] = et[i] as usize;
            *k += 1;
        }
    }
    // 3. shares, hop by hop
    let mut mass = vec![0.0f64; s_n];
    for (s, m) in mass.iter_mut().enumerate().take(n_pid) {
        *m = if live[s] { 1.0 } else { 0.0 };
    }
    let mut out = Shares { rows: Vec::with_capacity(kept), cols: Vec::with_capacity(kept), vals: Vec::with_capacity(kept),
                           h_rows: vec![], h_cols: vec![], h_vals: vec![], reach: live[..n_pid].to_vec() };
    let mut cur: Vec<usize> = (0..s_n).filter(|&s| mass[s] > 0.0).collect();
    let mut nm = vec![0.0f64; s_n];
    let mut touched: Vec<usize> = Vec::new();
    for hop in 1..max_hops + 2 {
        cur.retain(|&s| !at_dst[s] && outdeg[s] > 0.0);
        if cur.is_empty() {
            break;
        }
        touched.clear();
        for &s in &cur {
            let d = outdeg[s];
            for k in start[s]..start[s + 1] {
                let m = mass[s] / d;
                let to = e_to[k];
                out.rows.push(st_pair[s]);
                out.cols.push(e_port[k]);
                out.vals.push(m);
                if at_dst[to] {
                    out.h_rows.push(st_pair[to]);
                    out.h_cols.push(hop as i64);
                    out.h_vals.push(m);
                }
                if nm[to] == 0.0 {
                    touched.push(to);
                }
                nm[to] += m;
            }
        }
        for &s in &cur {
            mass[s] = 0.0;
        }
        // the touched states in ascending order: sorted when few, by a scan when many
        if touched.len() * 16 > s_n {
            touched.clear();
            touched.extend((0..s_n).filter(|&s| nm[s] != 0.0));
        } else {
            touched.sort_unstable();
        }
        cur.clear();
        for &s in &touched {
            mass[s] += nm[s];
            if nm[s] > 0.0 {
                cur.push(s);
            }
            nm[s] = 0.0;
        }
    }
    Ok(out)
}
