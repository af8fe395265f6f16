//! Routing at a node: the time-flow tables, source routes, UCMP re-routing, expander
//! paths, and the choice among candidate actions (multipath).

use crate::sim::*;

/// Routing state: the router, multipath choice and its random streams.
pub(in crate::sim) struct Routing {
    pub(in crate::sim) router: Router,
    pub(in crate::sim) multipath: Multipath,
    pub(in crate::sim) rng_route: Stream,
    /// Expander router with k paths per pair: which path a packet takes.
    pub(in crate::sim) rng_paths: Stream,
    pub(in crate::sim) seed: u64,
    pub(in crate::sim) max_hop: u32,
    /// Bumped whenever a reconfiguration rebuilds a path-based router.
    pub(in crate::sim) route_gen: u16,
    pub(in crate::sim) expander: bool,
    pub(in crate::sim) scratch: Vec<Action>,
}

/// Which of `n` candidate actions a packet of `flow` at `node` takes: a draw of the
/// routing stream per packet, or a hash of (seed, flow, node) per flow; one candidate
/// draws nothing.
#[inline]
pub(in crate::sim) fn choose_among(multipath: Multipath, rng: &mut Stream, seed: u64, n: u32, flow: u32, node: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    match multipath {
        Multipath::Packet | Multipath::Adaptive => rng.below(n),
        Multipath::Flow => (mix64(seed ^ ((flow as u64) << 32 | node as u64)) % n as u64) as u32,
    }
}

pub(in crate::sim) fn routes_hop(router: &Router, id: u32, pos: u32) -> Option<Action> {
    match router {
        Router::Source(r) => r.hop(id, pos),
        _ => None,
    }
}

/// Why a packet has no next hop at a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum NoRoute {
    /// Nothing in the tables or the router matches it (yet).
    Unmatched,
    /// Its only way on is a failed link (dropped as `failed_link`).
    Failed,
}

impl NoRoute {
    /// The drop reason of a packet that cannot wait for a route.
    pub(in crate::sim) fn reason(self) -> usize {
        match self {
            NoRoute::Unmatched => DROP_NO_ROUTE,
            NoRoute::Failed => DROP_FAILED,
        }
    }
}

impl Sim {
    /// Expander routing: the global ports of slice `idx`'s path from node `a` to node `b`
    /// (None: another router, or an index out of range).
    pub fn expander_path(&self, a: u32, b: u32, idx: u32) -> Option<Vec<u32>> {
        self.expander_paths(a, b, idx).map(|mut v| v.swap_remove(0))
    }

    /// Expander routing: the global ports of every path slice `idx` keeps from node `a` to
    /// node `b` (path 0 first: the BFS path; at most the router's k).
    pub fn expander_paths(&self, a: u32, b: u32, idx: u32) -> Option<Vec<Vec<u32>>> {
        let Router::Expander(sp) = &self.rt.router else { return None };
        let n = self.net.port_offset.len() as u32 - 1;
        if a >= n || b >= n || idx >= self.sched.slices() {
            return None;
        }
        (0..sp.n_paths(idx, a, b)).map(|i| self.expander_walk(sp, a, b, idx, sp.code(idx, a, b, i))).collect()
    }

    pub(in crate::sim) fn expander_walk(&self, sp: &crate::expander::SlicePaths, a: u32, b: u32, idx: u32, code: u32) -> Option<Vec<u32>> {
        let n = self.net.port_offset.len() as u32 - 1;
        let mut out = Vec::new();
        let mut c = a;
        while c != b {
            let p = sp.next_on(idx, c, b, code);
            if p == NONE || out.len() > n as usize {
                return None;
            }
            out.push(p);
            c = self.net.port_node[self.sched.peer(p, idx) as usize];
        }
        Some(out)
    }

    /// Decide the next hop of packet `pid` at `node`, or why there is none.
    #[inline]
    pub(in crate::sim) fn route(&mut self, node: u32, pid: u32) -> Result<Action, NoRoute> {
        self.route_sent(node, pid, None)
    }

    /// [`Sim::route`] for a source's packet whose flow has injected `sent` bytes before it
    /// (what UCMP reads; `None`: read the flow record).
    pub(in crate::sim) fn route_sent(&mut self, node: u32, pid: u32, sent: Option<u64>) -> Result<Action, NoRoute> {
        let p = self.pool.pkt[pid as usize];
        let mut cands = std::mem::take(&mut self.rt.scratch);
        let res = match &self.rt.router {
            Router::Source(routes) => {
                let mut fresh = p.route == NONE;
                let mut out = None;
                if !fresh {
                    match routes.hop(p.route, p.pos) {
                        Some(a) if self.net.port_node[a.port as usize] == node => {
                            self.pool.pkt[pid as usize].pos += 1;
                            out = Some(a);
                        }
                        // the route does not pass here (a reconfiguration sent the packet
                        // elsewhere): a new source route from this node
                        Some(_) => fresh = true,
                        None => {}
                    }
                }
                if fresh {
                    let (a, b) = routes.candidate_range(node, p.dst_node, p.tag);
                    let pick = if a == b { None } else { Some(a + self.choose(b - a, p.flow, node)) };
                    out = pick.and_then(|r| {
                        let pk = &mut self.pool.pkt[pid as usize];
                        pk.route = r;
                        pk.pos = 1;
                        routes_hop(&self.rt.router, r, 0)
                    });
                }
                out
            }
            Router::Table(t) => {
                let nt = &t[node as usize];
                match nt.fast_actions(p.src_node, p.dst_node) {
                    // read in place (no copy): the choice `pick` makes when no link is
                    // down and the choice is not adaptive
                    Some(acts) if self.fail.n_down == 0 && self.rt.multipath != Multipath::Adaptive => match acts.len() {
                        0 => None,
                        n => Some(acts[choose_among(self.rt.multipath, &mut self.rt.rng_route, self.rt.seed, n as u32, p.flow,
                                                    node) as usize]),
                    },
                    _ => {
                        nt.lookup(p.src_node, p.dst_node, p.tag, &mut cands);
                        self.pick(&cands, p.flow, node)
                    }
                }
            }
            Router::Direct(ci) => {
                let (mp, seed, flow) = (self.rt.multipath, self.rt.seed, p.flow);
                let rng = &mut self.rt.rng_route;
                ci.direct_pick(node, p.dst_node, p.tag, |n| choose_among(mp, rng, seed, n, flow, node))
            }
            Router::Hoho(idx) | Router::Ucmp(idx, ..) => {
                // HOHO: the earliest paths within the hops the bound leaves. UCMP: the source
                // picks the class (hops) by the flow's age and every hop keeps to it (a class
                // chosen before the circuits changed is chosen again from here).
                let budget = if let Router::Ucmp(_, alpha, slice_ps, rate) = &self.rt.router {
                    if p.route == NONE || p.rgen != self.rt.route_gen {
                        let sent = if p.kind == K_MSG {
                            0
                        } else if let Some(s) = sent {
                            s
                        } else {
                            self.flows[p.flow as usize].injected
                        };
                        // (at a relay, a class chosen again, after a reconfiguration or for a
                        // deferral, keeps to the hops the bound leaves)
                        let left = idx.max_hop().saturating_sub(p.hops as usize).max(1);
                        match idx.ucmp_within(node, p.tag, p.dst_node, sent, *slice_ps, *rate, *alpha, left) {
                            Some(r) => {
                                let pk = &mut self.pool.pkt[pid as usize];
                                pk.route = r;
                                pk.pos = 0;
                                pk.rgen = self.rt.route_gen;
                                idx.class_hops(r)
                            }
                            None => 0,
                        }
                    } else {
                        idx.class_hops(p.route).saturating_sub(p.pos as usize).max(1)
                    }
                } else {
                    idx.max_hop().saturating_sub(p.hops as usize).max(1)
                };
                if budget == 0 {
                    None
                } else {
                    // every earliest path's first hop is as early: the choice spreads the load
                    // over all of them (UCMP's simulator draws among a class's equal paths)
                    let (mp, seed) = (self.rt.multipath, self.rt.seed);
                    let nh = idx.next_within(node, p.tag, p.dst_node, budget);
                    let mut hop = match nh.len() {
                        0 => None,
                        n => Some(nh[choose_among(mp, &mut self.rt.rng_route, seed, n as u32, p.flow, node) as usize]),
                    };
                    // a relayed packet that reached this node after the slice its hop here
                    // was planned for is routed again from the slice it can still leave in,
                    // within the hops the bound leaves (UCMP: its class chosen again there
                    // for the flow's age)
                    let left = idx.max_hop().saturating_sub(p.hops as usize);
                    if p.hops > 0 && left > 0 {
                        if let Some(late) = hop.and_then(|h| self.slice_missed(h, p.sent_abs as u64, p.wire as u64)) {
                            let mut again = left;
                            if let Router::Ucmp(_, alpha, slice_ps, rate) = &self.rt.router {
                                let sent = if p.kind == K_MSG { 0 } else { self.flows[p.flow as usize].injected };
                                again = 0;
                                if let Some(r) = idx.ucmp_within(node, late, p.dst_node, sent, *slice_ps, *rate, *alpha, left) {
                                    let pk = &mut self.pool.pkt[pid as usize];
                                    pk.route = r;
                                    pk.pos = 0;
                                    again = idx.class_hops(r);
                                }
                            }
                            let nh = if again > 0 { idx.next_within(node, late, p.dst_node, again) } else { &[] };
                            if !nh.is_empty() {
                                hop = Some(nh[choose_among(mp, &mut self.rt.rng_route, seed, nh.len() as u32, p.flow, node) as usize]);
                                // (UCMP reports them as its deferred packets; HOHO's counter is
                                // admission control's)
                                if matches!(self.rt.router, Router::Ucmp(..)) {
                                    self.acct.adm_deferred += 1;
                                }
                            }
                        }
                    }
                    self.pool.pkt[pid as usize].pos += 1;
                    hop
                }
            }
            Router::Vlb(ci) => {
                if p.src_node == node {
                    ci.vlb_spray(node, p.dst_node, p.tag, &mut cands);
                    self.pick(&cands, p.flow, node)
                } else {
                    ci.first_direct(node, p.dst_node, p.tag)
                }
            }
            Router::Expander(sp) => {
                // the source route is a path of the slice in which it is first routed; with
                // k paths per pair, the one drawn where it is first routed (opera-sim: per
                // packet, uniformly, at the source; a code in `pos`, 0 = the BFS path)
                let stale = p.route != NONE && sp.k() > 1 && p.rgen != self.rt.route_gen;
                let port = if p.route == NONE || stale {
                    let slice = if stale { self.route_slice(self.clock.now) } else { p.tag };
                    let n = sp.n_paths(slice, node, p.dst_node);
                    let i = choose_among(self.rt.multipath, &mut self.rt.rng_paths, self.rt.seed, n, p.flow, node);
                    let code = sp.code(slice, node, p.dst_node, i);
                    let pk = &mut self.pool.pkt[pid as usize];
                    pk.route = slice;
                    pk.pos = code;
                    pk.rgen = self.rt.route_gen;
                    sp.next_on(slice, node, p.dst_node, code)
                } else {
                    sp.next_on(p.route, node, p.dst_node, p.pos)
                };
                (port != NONE).then_some(Action { port, dep: WILD })
            }
        };
        self.rt.scratch = cands;
        match res {
            Some(a) if self.fail.n_down > 0 && self.action_down(a) => Err(NoRoute::Failed),
            Some(a) => Ok(a),
            None => Err(NoRoute::Unmatched),
        }
    }

    /// UCMP's slice-miss check (OpenOptics §6 Case III: packets "missing the planned time
    /// slice and being deferred to later slices"): hop `h` of a packet's source route was
    /// planned for the first occurrence of its departure slice at or after absolute slice
    /// `from_abs` (the slice the previous hop sent it in). When the packet can no longer be
    /// sent in that occurrence — it ends before the packet's serialization would, e.g. the
    /// slice ended while the packet crossed the previous link — returns the arrival slice to
    /// choose its route again for, from this node: the current slice if the planned one
    /// has passed, else the next (a per-hop lookup by arrival slice decides the same).
    /// `None`: the hop keeps its plan. A full calendar queue is not a miss here (without
    /// congestion detection a packet is enqueued in its planned slice's queue, §5.2).
    pub(in crate::sim) fn slice_missed(&self, h: Action, from_abs: u64, wire: u64) -> Option<u32> {
        if h.dep == WILD || self.sched.is_static() {
            return None;
        }
        let pt = &self.net.ports[h.port as usize];
        if pt.kind != PortKind::Optical || pt.served {
            return None;
        }
        let n = self.sched.slices();
        let intended = from_abs + ((h.dep + n - (from_abs % n as u64) as u32) % n) as u64;
        let (_, end) = self.sched.bounds(intended, h.dep);
        if self.clock.now + pt.rate.tx(wire) <= end {
            return None;
        }
        let cur = self.sched.slice_at(self.clock.now);
        Some(if cur.abs > intended { cur.idx } else { (cur.idx + 1) % n })
    }

    /// Does action `a` send into a failed link (its port, or on a cyclic fabric the port
    /// its departure slice connects it to)?
    pub(in crate::sim) fn action_down(&self, a: Action) -> bool {
        if self.fail.down[a.port as usize] {
            return true;
        }
        if a.dep != WILD && !self.sched.is_static() {
            let q = self.sched.peer(a.port, a.dep);
            return q != NONE && self.fail.down[q as usize];
        }
        false
    }

    pub(in crate::sim) fn pick(&mut self, cands: &[Action], flow: u32, node: u32) -> Option<Action> {
        if self.fail.n_down > 0 && cands.iter().any(|&a| self.action_down(a)) {
            let up: Vec<Action> = cands.iter().filter(|&&a| !self.action_down(a)).copied().collect();
            if up.is_empty() {
                // only failed links lead on: route() reports it
                return cands.first().copied();
            }
            return self.pick(&up, flow, node);
        }
        match cands.len() {
            0 => None,
            1 => Some(cands[0]),
            _ if self.rt.multipath == Multipath::Adaptive => {
                // calendar ports release their departed transmissions lazily: the exact
                // occupancy first
                for a in cands {
                    self.release_departed(a.port);
                }
                cands.iter().min_by_key(|a| self.net.ports[a.port as usize].bytes).copied()
            }
            n => Some(cands[self.choose(n as u32, flow, node) as usize]),
        }
    }

    #[inline]
    pub(in crate::sim) fn choose(&mut self, n: u32, flow: u32, node: u32) -> u32 {
        choose_among(self.rt.multipath, &mut self.rt.rng_route, self.rt.seed, n, flow, node)
    }

    /// The candidate actions at `node` for a packet (src node, dst node) that arrived in
    /// slice `arr` — what the router would choose among (for equivalence tests).
    pub fn candidates(&mut self, node: u32, src: u32, dst: u32, arr: u32) -> Vec<Action> {
        self.candidates_after(node, src, dst, arr, 0)
    }

    /// [`Sim::candidates`] for a packet that has crossed `hops` links (HOHO's budget).
    pub fn candidates_after(&mut self, node: u32, src: u32, dst: u32, arr: u32, hops: usize) -> Vec<Action> {
        let mut out = Vec::new();
        match &self.rt.router {
            Router::Table(t) => t[node as usize].lookup(src, dst, arr, &mut out),
            Router::Direct(ci) => out.extend(ci.first_direct(node, dst, arr)),
            Router::Hoho(idx) => out.extend_from_slice(idx.next_within(node, arr, dst, idx.max_hop().saturating_sub(hops))),
            Router::Ucmp(idx, ..) => {
                if src == node {
                    out.extend(idx.candidates(node, arr, dst).iter().map(|c| c.hops[0]));
                }
            }
            Router::Vlb(ci) => {
                if src == node {
                    ci.vlb_spray(node, dst, arr, &mut out);
                } else {
                    out.extend(ci.first_direct(node, dst, arr));
                }
            }
            Router::Source(r) => {
                let mut ids = Vec::new();
                r.candidates(node, dst, arr, &mut ids);
                out.extend(ids.iter().filter_map(|&i| r.hop(i, 0)));
            }
            Router::Expander(sp) => {
                // a wildcard arrival: the slice a packet routed now would follow
                let n = self.net.port_offset.len() as u32 - 1;
                if node >= n || dst >= n {
                    return out;
                }
                let arr = if arr == WILD { self.route_slice(self.clock.now) } else { arr % self.sched.slices() };
                // the first hops of the paths a packet first routed here may take
                for i in 0..sp.n_paths(arr, node, dst) {
                    let port = sp.next_on(arr, node, dst, sp.code(arr, node, dst, i));
                    if port != NONE && !out.iter().any(|a: &Action| a.port == port) {
                        out.push(Action { port, dep: WILD });
                    }
                }
            }
        }
        out
    }

    // ---------------------------------------------------------------- ports

    /// Expander routing: the slice whose paths a packet first routed at `t` follows. During
    /// the guardband at the start of slice j the circuits being set up are not up yet, so
    /// the paths are those of slice j − 1 (which avoid exactly those circuits).
    #[inline]
    pub(in crate::sim) fn route_slice(&self, t: Ps) -> u32 {
        let gb = self.sched.guardband();
        // before the first guardband ends, the previous slice is the last of the cycle
        let t = if t >= gb { t - gb } else { t + self.sched.cycle() - gb };
        self.sched.slice_at(t).idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_flow_choices_are_fixed_and_per_packet_choices_are_drawn() {
        let mut rng = Stream::new(1, "routing");
        let mut untouched = Stream::new(1, "routing");
        // one candidate: no draw
        assert_eq!(choose_among(Multipath::Packet, &mut rng, 1, 1, 7, 3), 0);
        // per flow: the same flow at the same node always takes the same candidate, and
        // the flows spread over all of them
        let pick = |f: u32, rng: &mut Stream| choose_among(Multipath::Flow, rng, 42, 4, f, 9);
        let first: Vec<u32> = (0..64).map(|f| pick(f, &mut rng)).collect();
        let again: Vec<u32> = (0..64).map(|f| pick(f, &mut rng)).collect();
        assert_eq!(first, again);
        assert!((0..4).all(|k| first.contains(&k)), "{first:?}");
        assert_eq!(rng.below(1_000_000), untouched.below(1_000_000), "neither drew from the stream");
        // per packet: draws of the routing stream, reproducible from the seed
        let mut a = Stream::new(1, "routing");
        let mut b = Stream::new(1, "routing");
        let da: Vec<u32> = (0..32).map(|_| choose_among(Multipath::Packet, &mut a, 1, 5, 7, 3)).collect();
        let db: Vec<u32> = (0..32).map(|_| choose_among(Multipath::Adaptive, &mut b, 1, 5, 7, 3)).collect();
        assert_eq!(da, db);
        assert!(da.iter().all(|&k| k < 5) && (0..5).all(|k| da.contains(&k)), "{da:?}");
    }
}
