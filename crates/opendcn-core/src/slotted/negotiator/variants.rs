//! The ProjecToR-like and two-hop relay variants (docs/arch/negotiator.md#variants): the
//! sources' plans at each epoch start (per-port bundle requests, relay requests) and the
//! grants the destinations and intermediates make for them.

use super::{Grant, Negotiator, Req, Variant};
use crate::slotted::common::Topology;
use crate::units::{Ps, NONE};

impl Negotiator {
    /// ProjecToR-like GRANT at `d`: each ingress port grants the oldest bundle among the
    /// per-port requests for it (ties: lowest source after a pointer rotating by epoch).
    pub(super) fn projector_grant(&mut self, e: u64, d: u32, list: &[(u32, u64)], masks: &[u64], out: &mut Vec<(u32, u32, u64)>) {
        let (n, s) = (self.n, self.s);
        let rot = (e % n as u64) as u32;
        for p in 0..s {
            let k = (d * s + p) as usize;
            if self.fail.local_in[k] || self.fail.known_in[k] {
                continue;
            }
            let best = (0..list.len())
                .filter(|&x| masks[x] >> p & 1 == 1 && !self.fail.known_eg[(list[x].0 * s + p) as usize])
                .min_by_key(|&x| (std::cmp::Reverse(list[x].1), (list[x].0 + n - rot) % n));
            if let Some(x) = best {
                out.push((list[x].0, p, 0));
            }
        }
    }

    /// Epoch-start plans of the sources: the ProjecToR-like per-port requests (oldest
    /// bundles first) and the relay requests of the two-hop variant.
    pub(super) fn source_plans(&mut self, e: u64, t: Ps) {
        let (n, s) = (self.n, self.s);
        self.relay_reqs.clear();
        let act = self.active.clone();
        for &i in &act {
            for p in 0..s {
                self.proj_req[(i * s + p) as usize] = NONE;
            }
            if self.spec.variant == Variant::Projector {
                self.projector_plan(i, t);
            }
            if self.relay_on {
                self.relay_plan(e, i);
            }
        }
        self.relay_reqs.sort_unstable_by_key(|r| (r.src, r.dst));
        let _ = n;
    }

    /// Arrival time of the byte at offset `off` of VOQ `vi` in arrival order (flows
    /// arrive whole; the PIAS levels are merged back by flow arrival).
    fn arrival_at(&self, vi: usize, off: u64) -> Option<Ps> {
        let v = &self.voq[vi];
        let mut idx = [0usize; 3];
        let mut cum = 0u64;
        loop {
            let mut best: Option<(usize, (Ps, u32))> = None;
            for l in 0..3 {
                if let Some(sg) = v.q[l].get(idx[l]) {
                    let key = (self.fl.start[sg.flow as usize], sg.flow);
                    if best.is_none_or(|b| key < b.1) {
                        best = Some((l, key));
                    }
                }
            }
            let (l, key) = best?;
            cum += v.q[l][idx[l]].bytes;
            if cum > off {
                return Some(key.0);
            }
            idx[l] += 1;
        }
    }

    /// ProjecToR-like: each source port requests one bundle (the data one port sends in
    /// one scheduled phase), the oldest first (waiting delay of the bundle's first byte).
    fn projector_plan(&mut self, i: u32, t: Ps) {
        let (n, s) = (self.n, self.s);
        let bsz = self.sched_cap.max(1);
        let ports: Vec<u32> = (0..s).filter(|&p| {
            let pi = (i * s + p) as usize;
            !self.fail.local_eg[pi] && !self.fail.known_eg[pi]
        }).collect();
        let cands: Vec<u32> = (0..n).filter(|&d| d != i && self.voq[(i * n + d) as usize].bytes > self.req_thr).collect();
        match self.spec.topology {
            Topology::Parallel => {
                let mut heap = std::collections::BinaryHeap::new();
                for &d in &cands {
                    if let Some(a) = self.arrival_at((i * n + d) as usize, 0) {
                        heap.push((t.saturating_sub(a), std::cmp::Reverse(d), 0u64));
                    }
                }
                for &p in &ports {
                    let Some((age, std::cmp::Reverse(d), k)) = heap.pop() else { break };
                    let pi = (i * s + p) as usize;
                    self.proj_req[pi] = d;
                    self.proj_age[pi] = age;
                    let vi = (i * n + d) as usize;
                    if let Some(a) = self.arrival_at(vi, (k + 1) * bsz) {
                        heap.push((t.saturating_sub(a), std::cmp::Reverse(d), k + 1));
                    }
                }
            }
            Topology::ThinClos => {
                for &p in &ports {
                    let best = cands
                        .iter()
                        .filter(|&&d| self.fab.reaches(i, p, d))
                        .filter_map(|&d| self.arrival_at((i * n + d) as usize, 0).map(|a| (t.saturating_sub(a), std::cmp::Reverse(d))))
                        .max();
                    if let Some((age, std::cmp::Reverse(d))) = best {
                        let pi = (i * s + p) as usize;
                        self.proj_req[pi] = d;
                        self.proj_age[pi] = age;
                    }
                }
            }
        }
    }

    /// Bytes ToR i has queued (own and relayed) for the ToRs its port p reaches.
    fn port_load(&self, i: u32, p: u32) -> u64 {
        let (n, w) = (self.n, self.fab.w);
        let grp = (i / w + p) % self.fab.g;
        (grp * w..(grp + 1) * w)
            .filter(|&d| d != i)
            .map(|d| {
                let vi = (i * n + d) as usize;
                self.voq[vi].bytes + if self.rbuf { self.rq_bytes[vi] } else { 0 }
            })
            .sum()
    }

    /// Two-hop relay, step 1 (source i): lowest-priority backlogs above the relay
    /// threshold are offered to one intermediate behind each port that carries no
    /// high-volume direct traffic of i (at most one scheduled phase queued).
    fn relay_plan(&mut self, e: u64, i: u32) {
        let (n, s, w, g) = (self.n, self.s, self.fab.w, self.fab.g);
        let mut eleph: Vec<(u64, u32)> = (0..n)
            .filter(|&d| d != i)
            .filter_map(|d| {
                let l2 = self.voq[(i * n + d) as usize].level_bytes[2];
                (l2 > self.relay_thr).then(|| (l2 - self.relay_thr, d))
            })
            .collect();
        if eleph.is_empty() {
            return;
        }
        eleph.sort_unstable_by_key(|&(x, d)| (std::cmp::Reverse(x), d));
        let mut x = 0usize;
        for p in 0..s.min(g) {
            let pi = (i * s + p) as usize;
            if self.fail.local_eg[pi] || self.fail.known_eg[pi] || self.port_load(i, p) > self.sched_cap {
                continue;
            }
            // next elephant whose direct port is not p
            let Some(k) = (0..eleph.len()).map(|y| (x + y) % eleph.len()).find(|&k| eleph[k].0 > 0 && self.fab.pair_port(i, eleph[k].1) != p) else { continue };
            x = k + 1;
            let d = eleph[k].1;
            let grp = (i / w + p) % g;
            let mut idx = ((e + i as u64 + d as u64) % w as u64) as u32;
            let mut m = grp * w + idx;
            if m == i || m == d {
                idx = (idx + 1) % w;
                m = grp * w + idx;
            }
            if m == i || m == d {
                continue;
            }
            let vol = eleph[k].0.min(self.sched_cap);
            eleph[k].0 -= vol;
            self.relay_reqs.push(Req { dst: m, proc_: 0, src: i, via: d, info: vol, mask: 1 << p });
        }
    }

    /// Two-hop relay, step 2 (intermediate m): relay volume granted only while m's relay
    /// buffer for the final destination has room and m's own link towards it carries no
    /// high-volume direct traffic; on a port already granted directly to the same source
    /// the volume rides on that grant, free ingress ports are granted for relay only.
    pub(super) fn relay_grant(&mut self, m: u32, relays: &[Req], grants: &mut Vec<Grant>) {
        let (n, s, w) = (self.n, self.s, self.fab.w);
        let volume = |me: &mut Self, r: &Req| -> u64 {
            let k = (m * n + r.via) as usize;
            let used = me.rq_bytes[k] + me.reserved[k];
            if used >= me.relay_cap || me.port_load(m, me.fab.pair_port(m, r.via)) > me.sched_cap {
                return 0;
            }
            let v = r.info.min(me.relay_cap - used);
            me.reserved[k] += v;
            me.m_relay_grants += 1;
            v
        };
        let mut taken = vec![false; s as usize];
        for g in grants.iter_mut() {
            taken[g.port as usize] = true;
            if let Some(r) = relays.iter().find(|r| r.src == g.src && r.mask >> g.port & 1 == 1) {
                let v = volume(self, r);
                if v > 0 {
                    g.via = r.via;
                    g.vol = v;
                }
            }
        }
        for p in 0..s {
            let k = (m * s + p) as usize;
            if taken[p as usize] || self.fail.local_in[k] || self.fail.known_in[k] {
                continue;
            }
            let ptr = self.matcher.gptr[k];
            let mut order: Vec<&Req> = relays.iter().filter(|r| r.mask >> p & 1 == 1 && !self.fail.known_eg[(r.src * s + p) as usize]).collect();
            order.sort_by_key(|r| ((r.src % w + w - ptr) % w, r.src));
            for r in order {
                let v = volume(self, r);
                if v > 0 {
                    grants.push(Grant { src: r.src, proc_: 0, port: p, relay: true, dst: m, via: r.via, vol: v });
                    self.matcher.gptr[k] = (r.src % w + 1) % w;
                    break;
                }
            }
        }
    }
}
