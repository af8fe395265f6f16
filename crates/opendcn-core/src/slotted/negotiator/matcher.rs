//! The port-level matching of one epoch: GRANT at destinations and ACCEPT at sources,
//! each a pick in ring order from the pointers (randomly initialized once, stream
//! "neg.rings") that it then moves past the one picked.

use crate::slotted::common::{random_pointers, Topology};

/// Conflict-free port-level matching of one epoch: GRANT at destinations, ACCEPT at
/// sources (also used stand-alone by the property test).
pub struct Matcher {
    pub n: u32,
    pub s: u32,
    pub topo: Topology,
    pub w: u32,
    pub g: u32,
    /// Grant ring pointers: parallel one per ToR (index d), thin-clos one per port (d·S+p).
    pub gptr: Vec<u32>,
    /// Accept ring pointers, one per source port (i·S+p).
    pub aptr: Vec<u32>,
}

impl Matcher {
    pub fn new(n: u32, s: u32, topo: Topology, seed: u64) -> Self {
        let (w, g) = if topo == Topology::ThinClos {
            let w = if n < s { 1 } else { n / s };
            (w, n / w)
        } else {
            (n, 1)
        };
        let gptr = match topo {
            Topology::Parallel => random_pointers(seed, "neg.rings.grant", n as usize, n),
            Topology::ThinClos => random_pointers(seed, "neg.rings.grant", (n * s) as usize, w),
        };
        let aptr = match topo {
            Topology::Parallel => random_pointers(seed, "neg.rings.accept", (n * s) as usize, n),
            Topology::ThinClos => random_pointers(seed, "neg.rings.accept", (n * s) as usize, w),
        };
        Matcher { n, s, topo, w, g, gptr, aptr }
    }

    /// First entry of sorted `cands` (by key) at or after `ptr` cyclically in 0..modulo
    /// for which `ok` holds.
    fn ring_pick(cands: &[(u32, u64)], ptr: u32, mut ok: impl FnMut(u32) -> bool) -> Option<usize> {
        let len = cands.len();
        if len == 0 {
            return None;
        }
        let start = cands.partition_point(|c| c.0 < ptr);
        (0..len).map(|k| (start + k) % len).find(|&k| ok(cands[k].0))
    }

    /// GRANT at destination `d`: `reqs` = sorted (src, info) of the requests received.
    /// Pushes (src, port, amount) grants. `port_ok(p)` = own ingress usable;
    /// `take(src, p)` is called on the candidates of port p in ring-priority order and
    /// the first `Some(amount)` is granted (it may record state, e.g. a pending-bytes
    /// decrement). `by_info`: grant larger info first (informative variants).
    pub fn grant(&mut self, d: u32, reqs: &[(u32, u64)], by_info: bool, port_ok: impl Fn(u32) -> bool, mut take: impl FnMut(u32, u32) -> Option<u64>, out: &mut Vec<(u32, u32, u64)>) {
        match self.topo {
            Topology::Parallel => {
                if by_info {
                    // order: info desc, then ring distance from the pointer
                    let ptr = self.gptr[d as usize];
                    let n = self.n;
                    let mut ord: Vec<(u32, u64)> = reqs.to_vec();
                    ord.sort_by_key(|&(src, info)| (std::cmp::Reverse(info), (src + n - ptr) % n));
                    let mut k = 0usize;
                    for p in 0..self.s {
                        if !port_ok(p) {
                            continue;
                        }
                        let mut amt = 0;
                        if let Some(j) = (0..ord.len()).map(|x| (k + x) % ord.len()).find(|&j| take(ord[j].0, p).map(|a| amt = a).is_some()) {
                            let src = ord[j].0;
                            out.push((src, p, amt));
                            self.gptr[d as usize] = (src + 1) % n;
                            k = j + 1;
                        }
                    }
                    return;
                }
                for p in 0..self.s {
                    if !port_ok(p) {
                        continue;
                    }
                    let ptr = self.gptr[d as usize];
                    let mut amt = 0;
                    if let Some(k) = Self::ring_pick(reqs, ptr, |src| take(src, p).map(|a| amt = a).is_some()) {
                        let src = reqs[k].0;
                        out.push((src, p, amt));
                        self.gptr[d as usize] = (src + 1) % self.n;
                    }
                }
            }
            Topology::ThinClos => {
                let w = self.w;
                for p in 0..self.s.min(self.g) {
                    if !port_ok(p) {
                        continue;
                    }
                    let g = (d / w + self.g - p) % self.g; // source group reaching port p of d
                    let lo = reqs.partition_point(|c| c.0 < g * w);
                    let hi = reqs.partition_point(|c| c.0 < (g + 1) * w);
                    let group = &reqs[lo..hi];
                    let pi = (d * self.s + p) as usize;
                    let mut amt = 0;
                    let pick = if by_info {
                        let ptr = self.gptr[pi];
                        let mut ord: Vec<usize> = (0..group.len()).collect();
                        ord.sort_by_key(|&k| (std::cmp::Reverse(group[k].1), (group[k].0 % w + w - ptr) % w));
                        ord.into_iter().find(|&k| take(group[k].0, p).map(|a| amt = a).is_some())
                    } else {
                        Self::ring_pick(group, g * w + self.gptr[pi], |src| take(src, p).map(|a| amt = a).is_some())
                    };
                    if let Some(k) = pick {
                        let src = group[k].0;
                        out.push((src, p, amt));
                        self.gptr[pi] = (src % w + 1) % w;
                    }
                }
            }
        }
    }

    /// ACCEPT at source `i` for port `p`: `cands` = sorted (dst, 0) granting port p.
    pub fn accept(&mut self, i: u32, p: u32, cands: &[(u32, u64)], ok: impl Fn(u32) -> bool) -> Option<u32> {
        let pi = (i * self.s + p) as usize;
        let (ptr, w) = match self.topo {
            Topology::Parallel => (self.aptr[pi], self.n),
            Topology::ThinClos => {
                if p >= self.g {
                    return None;
                }
                let g = (i / self.w + p) % self.g;
                (g * self.w + self.aptr[pi], self.w)
            }
        };
        let k = Self::ring_pick(cands, ptr, ok)?;
        let d = cands[k].0;
        self.aptr[pi] = (d % w + 1) % w;
        Some(d)
    }
}
