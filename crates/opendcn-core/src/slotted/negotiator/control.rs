//! The in-band control plane, epoch by epoch: the REQUESTs sent in the first-round
//! predefined slots, GRANT and ACCEPT at each epoch start from the messages that have
//! arrived, and the pipeline mailboxes (by epoch) that carry them, with the iterative and
//! stateful variants' bookkeeping.

use super::{Grant, Negotiator, Proc, Req, Variant};
use crate::units::{Ps, NONE};

impl Negotiator {
    /// Arrival time of the scheduling message of pair (i → d) sent in epoch e.
    fn ctrl_arrival(&self, e: u64, i: u32, d: u32) -> (Ps, u32) {
        let (k, p) = self.pair_slot(e, i, d);
        let t = self.epoch_start(e) + k as u64 * self.lay.pre_slot_ps + self.spec.guardband_ps + self.rate.tx(self.spec.ctrl_bytes);
        (t + self.spec.prop_ps, p)
    }

    pub(super) fn mailbox_of(&self, arr: Ps) -> usize {
        (arr.div_ceil(self.lay.epoch_ps) % self.mbox as u64) as usize
    }

    fn request_info(&self, i: u32, d: u32, now: Ps) -> u64 {
        let v = &self.voq[(i * self.n + d) as usize];
        match self.spec.variant {
            Variant::DataSize => v.bytes,
            Variant::HolDelay { alpha } => {
                let hol = |l: usize| v.head_flow(l).map(|f| now.saturating_sub(self.fl.start[f as usize]) as f64).unwrap_or(0.0);
                ((1.0 - alpha) * (hol(0) + hol(1)) + alpha * hol(2)).round() as u64
            }
            _ => 0,
        }
    }

    /// Start of epoch e: failure bookkeeping, ACCEPT (grants that arrived), GRANT
    /// (requests that arrived).
    pub(super) fn begin_epoch(&mut self) {
        let e = self.epoch;
        let t0 = self.epoch_start(e);
        self.update_failures(e, t0);
        if self.fault_relay_on {
            self.update_detours();
        }
        let slot = (e % self.mbox as u64) as usize;
        // stateful: size reports, piggyback receipts and reverted grants that arrived
        let deltas = std::mem::take(&mut self.pend_box[slot]);
        for &(k, dl) in &deltas {
            self.pend[k as usize] += dl;
        }
        self.pend_box[slot] = deltas;
        self.pend_box[slot].clear();
        // relay: allocations of the last scheduled phase not used (or not accepted)
        if self.relay_on {
            for pi in 0..self.racc.len() {
                let (via, rem) = self.racc[pi];
                if via != NONE && rem > 0 {
                    let m = self.acc[pi];
                    self.rel_release.push((m * self.n + via, rem));
                }
                self.racc[pi] = (NONE, 0);
            }
            for (k, v) in std::mem::take(&mut self.rel_release) {
                self.reserved[k as usize] -= v;
            }
        }
        self.accept_step(e, slot);
        self.grant_step(e, slot);
        if self.spec.variant == Variant::Projector || self.relay_on {
            self.admit(t0 + self.spec.guardband_ps);
            self.source_plans(e, t0 + self.spec.guardband_ps);
        }
    }

    /// ACCEPT at sources from the grants that arrived; fills `acc` (and `racc`) for this
    /// epoch's scheduled phase.
    fn accept_step(&mut self, e: u64, slot: usize) {
        if !self.svol.is_empty() {
            // stateful: settle the last scheduled phase's grants with their destinations
            for pi in 0..self.acc.len() {
                let d = self.acc[pi];
                if d != NONE {
                    let i = pi as u32 / self.s;
                    let delta = self.svol[pi] as i64 - self.ssent[pi] as i64;
                    if delta != 0 {
                        let (arr, _) = self.ctrl_arrival(e, i, d);
                        let mb = self.mailbox_of(arr);
                        self.pend_box[mb].push((d * self.n + i, delta));
                    }
                }
                self.svol[pi] = 0;
                self.ssent[pi] = 0;
            }
        }
        for x in self.acc.iter_mut() {
            *x = NONE;
        }
        self.sched_src.clear();
        self.due_now = std::mem::take(&mut self.due_next);
        let iterative = self.iters > 1;
        if iterative {
            self.procs.insert(e, Proc { it: 0, sacc: vec![NONE; (self.n * self.s) as usize], dtaken: vec![false; (self.n * self.s) as usize] });
        }
        let mut grants = std::mem::take(&mut self.grant_box[slot]);
        grants.sort_unstable_by_key(|g| (g.src, g.proc_, g.port, g.relay, g.dst));
        let mut pair_g = 0u64;
        let mut pair_a = 0u64;
        let mut cands: Vec<(u32, u64)> = Vec::new();
        let mut accepted_pairs: Vec<(u32, u32)> = Vec::new();
        let mut granted_pairs: Vec<(u32, u32)> = Vec::new();
        let s = self.s;
        let n = self.n;
        let mut j = 0;
        while j < grants.len() {
            let (i, pr) = (grants[j].src, grants[j].proc_ as u64);
            let mut h = j;
            while h < grants.len() && grants[h].src == i && grants[h].proc_ as u64 == pr {
                h += 1;
            }
            granted_pairs.clear();
            accepted_pairs.clear();
            let mut q = j;
            while q < h {
                let p = grants[q].port;
                let mut r = q;
                while r < h && grants[r].port == p {
                    granted_pairs.push((i, grants[r].dst));
                    r += 1;
                }
                let grp = &grants[q..r];
                self.m_grants += grp.len() as u64;
                let pi = (i * s + p) as usize;
                let own_ok = !self.fail.local_eg[pi] && !self.fail.known_eg[pi];
                let mut chosen: Option<usize> = None;
                if own_ok {
                    // direct grants first (relay-only grants when no direct one is usable)
                    for relay in [false, true] {
                        cands.clear();
                        cands.extend(grp.iter().filter(|g| g.relay == relay).map(|g| (g.dst, 0)));
                        if cands.is_empty() {
                            continue;
                        }
                        let known_in = &self.fail.known_in;
                        if let Some(d) = self.matcher.accept(i, p, &cands, |d| !known_in[(d * s + p) as usize]) {
                            chosen = grp.iter().position(|g| g.relay == relay && g.dst == d);
                            break;
                        }
                    }
                }
                for (x, g) in grp.iter().enumerate() {
                    if Some(x) == chosen {
                        continue;
                    }
                    // rejected: revert the destination's pending-bytes decrement, free the relay buffer
                    if !self.pend.is_empty() && g.vol > 0 {
                        let (arr, _) = self.ctrl_arrival(e, i, g.dst);
                        let mb = self.mailbox_of(arr);
                        self.pend_box[mb].push((g.dst * n + i, g.vol as i64));
                    }
                    if self.relay_on && g.via != NONE && g.vol > 0 {
                        self.rel_release.push((g.dst * n + g.via, g.vol));
                    }
                }
                if let Some(x) = chosen {
                    let g = grp[x];
                    let d = g.dst;
                    accepted_pairs.push((i, d));
                    self.m_accepts += 1;
                    if iterative {
                        let pc = self.procs.get_mut(&pr).expect("grant of a finished process");
                        pc.sacc[pi] = d;
                        pc.dtaken[(d * s + p) as usize] = true;
                    } else {
                        self.acc[pi] = d;
                        if !self.svol.is_empty() {
                            self.svol[pi] = g.vol;
                        }
                        if self.relay_on && g.via != NONE {
                            self.racc[pi] = (g.via, g.vol);
                        }
                    }
                }
                q = r;
            }
            granted_pairs.sort_unstable();
            granted_pairs.dedup();
            accepted_pairs.sort_unstable();
            accepted_pairs.dedup();
            pair_g += granted_pairs.len() as u64;
            pair_a += accepted_pairs.len() as u64;
            j = h;
        }
        self.b.events += grants.len() as u64;
        if pair_g > 0 {
            self.m_ratio_sum += pair_a as f64 / pair_g as f64;
            self.m_ratio_epochs += 1;
            self.m_pair_grants += pair_g;
            self.m_pair_accepts += pair_a;
        }
        grants.clear();
        self.grant_box[slot] = grants;
        // iterative: processes whose iteration's ACCEPT is due now advance or finish
        if iterative {
            let per = self.acc_lag + 1;
            let mut finished = None;
            for (&pstart, pc) in self.procs.iter_mut() {
                if e == pstart + pc.it as u64 * per + self.acc_lag {
                    if pc.it + 1 == self.iters {
                        finished = Some(pstart);
                    } else {
                        pc.it += 1;
                        self.due_next.push(pstart);
                    }
                }
            }
            if let Some(pstart) = finished {
                let pc = self.procs.remove(&pstart).unwrap();
                self.acc.copy_from_slice(&pc.sacc);
                // matches of early iterations over a link excluded since then are not used
                if self.fail.on {
                    for pi in 0..self.acc.len() {
                        let d = self.acc[pi];
                        if d != NONE && !self.usable(pi as u32 / s, pi as u32 % s, d) {
                            self.acc[pi] = NONE;
                        }
                    }
                }
            }
        }
        // sources with a matched port this epoch
        let mut matched = 0u64;
        for i in 0..n {
            let mut any = false;
            for p in 0..s {
                let d = self.acc[(i * s + p) as usize];
                if d != NONE {
                    any = true;
                    matched += 1;
                    let pr = (i * n + d) as usize;
                    if self.first_data_epoch[pr] == u64::MAX {
                        self.first_data_epoch[pr] = e;
                    }
                }
            }
            if any {
                self.sched_src.push(i);
            }
        }
        if matched > 0 {
            self.m_matched_ports += matched;
            self.m_matched_epochs += 1;
        }
    }

    /// GRANT at destinations from the requests that arrived; grants travel back in this
    /// epoch's predefined phase.
    fn grant_step(&mut self, e: u64, slot: usize) {
        let mut reqs = std::mem::take(&mut self.req_box[slot]);
        reqs.sort_unstable_by_key(|r| (r.dst, r.proc_, r.src, r.via, r.mask));
        self.b.events += reqs.len() as u64;
        let by_info = matches!(self.spec.variant, Variant::DataSize | Variant::HolDelay { .. });
        let (n, s) = (self.n, self.s);
        let mut list: Vec<(u32, u64)> = Vec::new();
        let mut masks: Vec<u64> = Vec::new();
        let mut relays: Vec<Req> = Vec::new();
        let mut out = std::mem::take(&mut self.tmp_grants);
        let mut j = 0;
        while j < reqs.len() {
            let (d, pr) = (reqs[j].dst, reqs[j].proc_ as u64);
            list.clear();
            masks.clear();
            relays.clear();
            while j < reqs.len() && reqs[j].dst == d && reqs[j].proc_ as u64 == pr {
                let r = reqs[j];
                if r.via != NONE {
                    relays.push(r);
                } else {
                    list.push((r.src, r.info));
                    masks.push(r.mask);
                }
                j += 1;
            }
            out.clear();
            if self.spec.variant == Variant::Projector {
                self.projector_grant(e, d, &list, &masks, &mut out);
            } else {
                let f = &self.fail;
                let taken = self.procs.get(&pr).map(|pc| &pc.dtaken);
                let port_ok = |p: u32| {
                    let k = (d * s + p) as usize;
                    !(f.local_in[k] || f.known_in[k] || taken.is_some_and(|t| t[k]))
                };
                let stateful = !self.pend.is_empty();
                let pend = &mut self.pend;
                let cap = self.sched_cap;
                let blocked = &mut self.m_stateful_blocked;
                let take = |src: u32, p: u32| -> Option<u64> {
                    let x = list.partition_point(|c| c.0 < src);
                    if masks[x] >> p & 1 == 0 || f.known_eg[(src * s + p) as usize] {
                        return None;
                    }
                    if stateful {
                        // grant only while the matrix shows pending bytes; decrement now
                        let k = (d * n + src) as usize;
                        if pend[k] <= 0 {
                            *blocked += 1;
                            return None;
                        }
                        let amt = (pend[k] as u64).min(cap);
                        pend[k] -= amt as i64;
                        return Some(amt);
                    }
                    Some(0)
                };
                self.matcher.grant(d, &list, by_info, port_ok, take, &mut out);
            }
            let mut grants: Vec<Grant> = out.iter().map(|&(src, p, vol)| Grant { src, proc_: pr as u32, port: p, relay: false, dst: d, via: NONE, vol }).collect();
            if self.relay_on && !relays.is_empty() {
                self.relay_grant(d, &relays, &mut grants);
            }
            grants.sort_unstable_by_key(|g| (g.src, g.port));
            // one grant message per (d → src), sent in this epoch's predefined phase. The
            // grants of one GRANT round are conflict-free only among themselves: all of
            // them are for one scheduled phase, e + req_lag, by whose start the message of
            // the latest first-round slot has arrived. (Reading each where it arrives would
            // split the round over two epochs when the arrivals straddle an epoch start, and
            // mix it there with the neighbouring rounds' grants of the same ingress ports.)
            let mut k = 0;
            while k < grants.len() {
                let src = grants[k].src;
                let (arr, p) = self.ctrl_arrival(e, d, src);
                let ok = self.link_up(d, p, src);
                let mb = if self.iters > 1 {
                    let pc = &self.procs[&pr];
                    ((pr + pc.it as u64 * (self.acc_lag + 1) + self.acc_lag) % self.mbox as u64) as usize
                } else {
                    debug_assert!(arr <= self.epoch_start(e + self.req_lag), "grant arrives after its scheduled phase");
                    ((e + self.req_lag) % self.mbox as u64) as usize
                };
                while k < grants.len() && grants[k].src == src {
                    if ok {
                        self.grant_box[mb].push(grants[k]);
                    } else {
                        self.m_lost_ctrl += 1;
                        let g = grants[k];
                        if self.relay_on && g.via != NONE && g.vol > 0 {
                            self.rel_release.push((d * n + g.via, g.vol));
                        }
                        if !self.pend.is_empty() && g.vol > 0 {
                            // no ACCEPT will come back: the destination reverts the decrement
                            // when the ACCEPT phase has passed
                            let mb = ((e + self.acc_lag) % self.mbox as u64) as usize;
                            self.pend_box[mb].push((d * n + g.src, g.vol as i64));
                        }
                    }
                    k += 1;
                }
            }
        }
        self.tmp_grants = out;
        reqs.clear();
        self.req_box[slot] = reqs;
    }

    /// The scheduling-message fields source i sends to d in this epoch's round robin:
    /// REQUEST(s) (and the stateful size report, the relay requests addressed to d).
    pub(super) fn send_control(&mut self, e: u64, i: u32, d: u32, qb: u64, tx0: Ps, up: bool) {
        let vi = (i * self.n + d) as usize;
        let arr = tx0 + self.rate.tx(self.spec.ctrl_bytes) + self.spec.prop_ps;
        if !self.unrep.is_empty() && self.unrep[vi] > 0 && up {
            let mb = self.mailbox_of(arr);
            self.pend_box[mb].push((d * self.n + i, self.unrep[vi] as i64));
            self.unrep[vi] = 0;
        }
        let s = self.s;
        let full = if s >= 64 { u64::MAX } else { (1u64 << s) - 1 };
        let mut reqs = std::mem::take(&mut self.tmp_reqs);
        reqs.clear();
        if qb > self.req_thr {
            match self.spec.variant {
                Variant::Projector => {
                    for p in 0..s {
                        let pi = (i * s + p) as usize;
                        if self.proj_req[pi] == d {
                            if self.first_req_epoch[vi] == u64::MAX && up {
                                self.first_req_epoch[vi] = e;
                            }
                            reqs.push((Req { dst: d, proc_: 0, src: i, via: NONE, info: self.proj_age[pi], mask: 1 << p }, self.mailbox_of(arr)));
                        }
                    }
                }
                _ => {
                    let iterative = self.iters > 1;
                    let mb = if iterative { ((e + self.req_lag) % self.mbox as u64) as usize } else { self.mailbox_of(arr) };
                    let info = self.request_info(i, d, tx0);
                    reqs.push((Req { dst: d, proc_: if iterative { e as u32 } else { 0 }, src: i, via: NONE, info, mask: full }, mb));
                    if self.first_req_epoch[vi] == u64::MAX && up {
                        self.first_req_epoch[vi] = e;
                    }
                    // later iterations: the indices of the ports still unmatched
                    for x in 0..self.due_now.len() {
                        let pr = self.due_now[x];
                        let pc = &self.procs[&pr];
                        let mut mask = 0u64;
                        for p in 0..s {
                            let pi = (i * s + p) as usize;
                            if pc.sacc[pi] == NONE && !self.fail.local_eg[pi] && !self.fail.known_eg[pi] && self.fab.reaches(i, p, d) {
                                mask |= 1 << p;
                            }
                        }
                        if mask != 0 {
                            let at = pr + pc.it as u64 * (self.acc_lag + 1) + self.req_lag;
                            reqs.push((Req { dst: d, proc_: pr as u32, src: i, via: NONE, info, mask }, (at % self.mbox as u64) as usize));
                        }
                    }
                }
            }
        }
        if self.relay_on {
            let lo = self.relay_reqs.partition_point(|r| (r.src, r.dst) < (i, d));
            let mut x = lo;
            while x < self.relay_reqs.len() && self.relay_reqs[x].src == i && self.relay_reqs[x].dst == d {
                reqs.push((self.relay_reqs[x], self.mailbox_of(arr)));
                self.m_relay_req += 1;
                x += 1;
            }
        }
        for &(r, mb) in &reqs {
            if r.via == NONE {
                self.m_requests += 1;
            }
            if up {
                self.req_box[mb].push(r);
            } else {
                self.m_lost_ctrl += 1;
            }
        }
        self.tmp_reqs = reqs;
    }
}
