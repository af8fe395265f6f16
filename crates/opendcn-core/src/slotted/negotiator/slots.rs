//! The data plane, slot by slot: flows admitted into the VOQs, the predefined slots
//! (scheduling messages and one piggybacked packet per connection), the scheduled slots
//! (each accepted port sends from its queues) and the relay buffers of two-hop paths.

use super::{Negotiator, RCell};
use crate::units::{Ps, NONE};

impl Negotiator {
    pub(super) fn admit(&mut self, t: Ps) {
        while let Some(f) = self.fl.pop_until(t) {
            let fi = f as usize;
            let (i, d, size) = (self.fl.src[fi], self.fl.dst[fi], self.fl.size[fi]);
            self.voq[(i * self.n + d) as usize].push(f, self.pias.split(size));
            self.src_bytes[i as usize] += size;
            if !self.unrep.is_empty() {
                self.unrep[(i * self.n + d) as usize] += size;
            }
            self.b.offer(size);
            self.b.events += 1;
            if !self.in_active[i as usize] {
                self.in_active[i as usize] = true;
                self.active.push(i);
            }
        }
    }

    /// Predefined slot k of the current epoch: requests and piggybacked packets.
    pub(super) fn pre_slot(&mut self, k: u32) {
        let e = self.epoch;
        let ts = self.slot_time(e, k);
        let tx0 = ts + self.spec.guardband_ps;
        self.admit(tx0);
        self.sample(ts);
        let first_round = k < self.lay.rr_slots;
        let mut pb_sent = 0u64;
        let mut a = 0;
        while a < self.active.len() {
            let i = self.active[a];
            if self.src_bytes[i as usize] == 0 && self.relay_bytes[i as usize] == 0 {
                self.in_active[i as usize] = false;
                self.active.swap_remove(a);
                continue;
            }
            a += 1;
            for p in 0..self.s {
                let d = self.pre_conn(e, k, i, p);
                if d == NONE {
                    continue;
                }
                let qb = self.queued_for(i, d);
                let up = self.link_up(i, p, d);
                if first_round && (qb > self.req_thr || self.relay_on || !self.unrep.is_empty()) {
                    self.send_control(e, i, d, qb, tx0, up);
                }
                if qb == 0 || self.lay.pb_payload == 0 || !self.usable(i, p, d) {
                    continue;
                }
                if let Some((f, bytes, hop, via)) = self.pop_for(i, d, self.lay.pb_payload, tx0) {
                    let dur = self.rate.tx(self.spec.ctrl_bytes + bytes);
                    self.b.check_window(tx0, dur, tx0, ts + self.lay.pre_slot_ps);
                    self.fab.transmit(self.slot_id, i, p, d);
                    pb_sent += 1;
                    if up {
                        let arr = tx0 + dur + self.spec.prop_ps;
                        self.forward(i, d, f, bytes, hop, via, tx0, arr, false);
                        self.m_pb_pkts += 1;
                        self.m_pb_bytes += bytes;
                        if !self.pend.is_empty() {
                            // the destination sees the piggybacked bytes arrive
                            let mb = self.mailbox_of(arr);
                            self.pend_box[mb].push((d * self.n + i, -(bytes as i64)));
                        }
                    } else {
                        self.b.packet_hops += 1;
                        self.b.drop(&mut self.fl, f, bytes, "link_failure");
                    }
                }
            }
        }
        // the remaining connections carry control-only (or dummy) messages
        self.b.packet_hops += self.conn_count[k as usize] - pb_sent;
        self.b.events += 1;
    }

    /// Bytes ToR i has to send to d over their direct link: its own queue for d (unless
    /// detoured), data it relays for d, and data of pairs it detours through d.
    #[inline(always)]
    fn queued_for(&self, i: u32, d: u32) -> u64 {
        let vi = (i * self.n + d) as usize;
        let own = if self.fault_relay_on && self.detour_of[vi] != NONE { 0 } else { self.voq[vi].bytes };
        let mut q = own + if self.rbuf { self.rq_bytes[vi] } else { 0 };
        if !self.detour.is_empty() {
            let lo = self.detour.partition_point(|x| (x.0, x.1) < (i, d));
            q += self.detour[lo..].iter().take_while(|x| x.0 == i && x.1 == d).map(|x| self.voq[(i * self.n + x.2) as usize].bytes).sum::<u64>();
        }
        q
    }

    /// Take one packet of at most `max` payload bytes that ToR i sends to d at time t:
    /// (flow, bytes, hop, via). Relay buffers: i's own highest-priority data first, then
    /// data it relays for d (second hop, once arrived), then its own lowest priority,
    /// then data of pairs i detours through d around a failed link (first hop, `via` =
    /// the final destination).
    #[inline(always)]
    fn pop_for(&mut self, i: u32, d: u32, max: u64, t: Ps) -> Option<(u32, u64, u32, u32)> {
        let vi = (i * self.n + d) as usize;
        let detoured = self.fault_relay_on && self.detour_of[vi] != NONE;
        if self.rbuf {
            let v = &self.voq[vi];
            let mice = !detoured && v.top_level().is_some_and(|l| l < 2);
            if !mice && self.rq[vi].front().is_some_and(|c| c.ready <= t) {
                let c = self.rq[vi].front_mut().unwrap();
                let b = c.bytes.min(max);
                let f = c.flow;
                c.bytes -= b;
                if c.bytes == 0 {
                    self.rq[vi].pop_front();
                } else {
                    // the part that fits leaves as a new cell; the rest stays queued
                    self.b.cell_sent();
                }
                self.rq_bytes[vi] -= b;
                self.relay_bytes[i as usize] -= b;
                return Some((f, b, 2, NONE));
            }
        }
        if !detoured {
            if let Some((f, b)) = self.voq[vi].pop(max) {
                self.src_bytes[i as usize] -= b;
                self.b.cell_sent();
                return Some((f, b, 1, NONE));
            }
        }
        if !self.detour.is_empty() {
            let lo = self.detour.partition_point(|x| (x.0, x.1) < (i, d));
            let via = self.detour[lo..].iter().take_while(|x| x.0 == i && x.1 == d).map(|x| x.2).find(|&x| self.voq[(i * self.n + x) as usize].bytes > 0)?;
            let (f, b) = self.voq[(i * self.n + via) as usize].pop(max)?;
            self.src_bytes[i as usize] -= b;
            self.b.cell_sent();
            return Some((f, b, 1, via));
        }
        None
    }

    /// Payload of flow f that i sent to d at tx0 arrives at `arr`: delivered (final hop)
    /// or queued at the intermediate d for `via` (first hop of relayed data; `reserved`:
    /// it uses relay buffer d granted).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn forward(&mut self, i: u32, d: u32, f: u32, bytes: u64, hop: u32, via: u32, tx0: Ps, arr: Ps, reserved: bool) {
        if via == NONE {
            self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, hop, true);
            if hop == 2 {
                self.m_relay_second += bytes;
            }
            return;
        }
        self.b.sent(&mut self.fl, f, i, tx0, arr, bytes, 1, false);
        let k = (d * self.n + via) as usize;
        self.rq[k].push_back(RCell { flow: f, bytes, ready: arr });
        self.rq_bytes[k] += bytes;
        if reserved {
            self.reserved[k] -= bytes;
            self.m_relay_first += bytes;
        } else {
            self.m_fault_relay_bytes += bytes;
        }
        self.relay_bytes[d as usize] += bytes;
        self.m_relay_max = self.m_relay_max.max(self.rq_bytes[k]);
        if !self.in_active[d as usize] {
            self.in_active[d as usize] = true;
            self.active.push(d);
        }
    }

    /// Scheduled slot j of the current epoch: accepted ports send from their queues
    /// (relay variant: then the granted relay volume, first hop).
    pub(super) fn sched_slot(&mut self, j: u32) {
        let e = self.epoch;
        let (off, len, lo, payload) = self.lay.sched[j as usize];
        let ts = self.epoch_start(e) + off;
        let tx0 = ts + lo;
        self.admit(tx0);
        self.sample(ts);
        let mut a = 0;
        while a < self.sched_src.len() {
            let i = self.sched_src[a];
            let mut busy = false;
            for p in 0..self.s {
                let pi = (i * self.s + p) as usize;
                let d = self.acc[pi];
                if d == NONE {
                    continue;
                }
                let vi = (i * self.n + d) as usize;
                let mut pkt = self.pop_for(i, d, payload, tx0).map(|(f, b, h, via)| (f, b, h, via, false));
                if pkt.is_none() && self.relay_on {
                    let (via, rem) = self.racc[pi];
                    if via != NONE && rem > 0 {
                        let v = &mut self.voq[(i * self.n + via) as usize];
                        if !v.q[2].is_empty() {
                            let (f, b) = v.pop_level(2, payload.min(rem));
                            self.src_bytes[i as usize] -= b;
                            self.b.cell_sent();
                            self.racc[pi].1 -= b;
                            pkt = Some((f, b, 1, via, true));
                        }
                    }
                }
                let Some((f, bytes, hop, via, reserved)) = pkt else {
                    self.m_sched_idle += 1;
                    if self.rbuf && (self.rq_bytes[vi] > 0 || (self.relay_on && self.racc[pi].0 != NONE && self.racc[pi].1 > 0 && self.voq[(i * self.n + self.racc[pi].0) as usize].level_bytes[2] > 0)) {
                        busy = true; // relayed data still on its way to i
                    }
                    continue;
                };
                busy = true;
                let dur = self.rate.tx(self.spec.header_bytes + bytes);
                self.b.check_window(tx0, dur, ts + lo, ts + len);
                self.fab.transmit(self.slot_id, i, p, d);
                let arr = tx0 + dur + self.spec.prop_ps;
                if !self.link_up(i, p, d) {
                    self.b.packet_hops += 1;
                    self.b.drop(&mut self.fl, f, bytes, "link_failure");
                } else {
                    self.forward(i, d, f, bytes, hop, via, tx0, arr, reserved);
                    if !self.ssent.is_empty() {
                        self.ssent[pi] += bytes;
                    }
                    if via == NONE {
                        self.m_sched_pkts += 1;
                        self.m_sched_bytes += bytes;
                    }
                }
            }
            if busy {
                a += 1;
            } else {
                self.sched_src.swap_remove(a);
            }
        }
        self.b.events += 1;
    }
}
