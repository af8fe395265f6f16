//! Calendar queues: planning a packet's departure on a slotted port (the first slice
//! from its arrival in which its serialization fits), committing it, the guardband check, and
//! releasing departed transmissions from a port's byte count (shared buffers included).

use crate::sim::*;


impl Sim {
    /// Forget planned transmissions that have started by now (their buffer space frees).
    #[inline]
    pub(in crate::sim) fn release_departed(&mut self, port: u32) {
        let now = self.clock.now;
        let single = self.net.ports[port as usize].kind != PortKind::Optical || self.sched.is_static();
        let pt = &mut self.net.ports[port as usize];
        if pt.next_dep > now {
            return;
        }
        let class_tx = &mut self.acct.class_tx[self.net.port_class[port as usize] as usize];
        if self.mode.flat_cal && !single {
            let dp = &mut pt.departs;
            let (mut freed, mut last) = (0u64, (0, 0, NONE));
            let next = dp.release(now, |(t, wire, pid)| {
                freed += wire as u64;
                if t >= last.0 {
                    last = (t, wire, pid);
                }
            });
            pt.bytes -= freed;
            pt.tx_bytes += freed;
            *class_tx += freed;
            // the last to depart (the one a circuit change could catch on the wire)
            if last.2 != NONE {
                pt.last_pkt = last.2;
                pt.last_end = last.0 + pt.rate.tx(last.1 as u64);
            }
            pt.next_dep = next.unwrap_or(Ps::MAX);
            return;
        }
        if single {
            // one calendar queue (a FIFO): no heap of queue heads, `next_dep` is its first
            // planned departure
            pt.next_dep = Self::drain_queue(pt, &mut self.net.cal[pt.cal as usize], class_tx, now).unwrap_or(Ps::MAX);
            return;
        }
        // a drained queue that has more planned is re-keyed in place (one sift instead of
        // a pop and a push); (time, queue) keys are distinct, so the order is the same
        let mut heads = std::mem::take(&mut pt.heads);
        while let Some(mut top) = heads.peek_mut() {
            let std::cmp::Reverse((t, idx)) = *top;
            if t > now {
                break;
            }
            match Self::drain_queue(pt, &mut self.net.cal[(pt.cal + idx) as usize], class_tx, now) {
                Some(next) => *top = std::cmp::Reverse((next, idx)),
                None => {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
        pt.next_dep = heads.peek().map_or(Ps::MAX, |r| r.0 .0);
        pt.heads = heads;
    }

    /// A shared switch buffer: set `port`'s caps from its node's pool (every port of the
    /// node released to the exact count first), so that the admission test that follows
    /// applies the dynamic threshold (`buffer`). Nothing for a node without a pool.
    #[inline(never)]
    pub(in crate::sim) fn shared_refresh(&mut self, port: u32) {
        let node = self.net.port_node[port as usize];
        if self.net.shared.pool(node) == 0 {
            return;
        }
        let (a, b) = (self.net.port_offset[node as usize], self.net.port_offset[node as usize + 1]);
        let mut used = self.hold.bytes[node as usize];
        for g in a..b {
            self.release_departed(g);
            used += self.net.ports[g as usize].bytes;
        }
        let pt = &mut self.net.ports[port as usize];
        let caps = self.net.shared.caps(node, port, used, pt.bytes, &pt.class_bytes);
        pt.cap = caps.port;
        for (c, v) in caps.classes.into_iter().enumerate() {
            if let Some(x) = pt.class_cap.get_mut(c) {
                *x = v;
            }
        }
    }

    /// Before `port` takes `wire` more bytes: release its departed transmissions when its
    /// count of bytes could refuse them (or ECN marking reads it). The count without the
    /// release is an upper bound of the exact one, so a test it passes the exact one passes
    /// too; releasing in batches (a calendar queue asks for it every [`LAZY_RELEASE`]
    /// plans) spares most hops the port's queue heads.
    #[inline]
    pub(in crate::sim) fn release_for(&mut self, port: u32, wire: u64) {
        if self.net.shared_on {
            self.shared_refresh(port);
        }
        let pt = &self.net.ports[port as usize];
        if pt.bytes + wire > pt.cap || pt.served || (self.mode.any_ecn && pt.ecn_k > 0) {
            self.release_departed(port);
        }
    }

    /// Release the transmissions of one of `pt`'s calendar queues that have started by
    /// `now`; the queue's next planned departure, if any.
    #[inline]
    pub(in crate::sim) fn drain_queue(pt: &mut Port, cq: &mut CalQ, class_tx: &mut u64, now: Ps) -> Option<Ps> {
        while let Some(&(t, wire, pid)) = cq.planned.front() {
            if t > now {
                return Some(t);
            }
            cq.planned.pop_front();
            pt.bytes -= wire as u64;
            cq.bytes -= wire as u64;
            pt.tx_bytes += wire as u64;
            *class_tx += wire as u64;
            pt.last_pkt = pid;
            pt.last_end = t + pt.rate.tx(wire as u64);
        }
        None
    }

    /// The first of `port`'s calendar queues in `cal`, made on first use.
    #[inline]
    pub(in crate::sim) fn cal_of(&mut self, port: u32) -> u32 {
        let base = self.net.ports[port as usize].cal;
        if base != NONE {
            return base;
        }
        let n = if self.net.ports[port as usize].kind == PortKind::Optical && !self.sched.is_static() {
            self.sched.slices() as usize
        } else {
            1
        };
        let base = self.net.cal.len() as u32;
        self.net.cal.resize_with(self.net.cal.len() + n, CalQ::default);
        self.net.ports[port as usize].cal = base;
        base
    }

    /// Plan the transmission of a packet whose buffer space is already counted: find its
    /// departure (tail of its calendar queue or link), check it against the schedule, and
    /// schedule its arrival at the far end. `planned`: the plan a source's admission has
    /// just made for this packet on this port (`Some(None)`: it found no departure), which
    /// is committed without searching again (nothing has moved since).
    pub(in crate::sim) fn enqueue_reserved(&mut self, port: u32, pid: u32, dep: u32, planned: Option<Option<SlotPlan>>) {
        let now = self.clock.now;
        let wire = self.pool.pkt[pid as usize].wire as u64;
        let gb = self.sched.guardband();
        let cyclic = !self.sched.is_static();
        // with a look-ahead the node is already in the slice it reads ahead: a departure
        // slice is its next occurrence from there (OpenOptics' Mininet ToRs)
        let cur = if self.mode.lookahead > 0 && cyclic {
            self.sched.slice_at(now + self.mode.lookahead)
        } else {
            self.clock.slice()
        };
        let pt = &self.net.ports[port as usize];
        let ser = pt.rate.tx(wire);
        let kind = pt.kind;
        let mut offload_refused = false;
        if self.offload.enabled() && kind == PortKind::Optical && cyclic && dep != WILD {
            if let Some((_, abs, _, _)) = self.plan_slotted(port, dep, ser, cur, false) {
                if abs >= cur.abs + self.offload.queues as u64 {
                    if self.offload_pkt(port, pid, dep, abs) {
                        return;
                    }
                    // no host below can take it now: it stays in the ToR
                    self.offload.refused += 1;
                    offload_refused = true;
                }
            }
        }
        let pt = &self.net.ports[port as usize];
        // (departure time, absolute slice, slice index, receiving port)
        let plan = if kind == PortKind::Optical && cyclic {
            match planned {
                Some(plan) => {
                    if let Some(pl) = plan {
                        self.commit_slot(self.net.ports[port as usize].cal as usize, pl, ser);
                    }
                    plan
                }
                None => self.plan_slotted(port, dep, ser, cur, true),
            }
        } else {
            let rx = if kind == PortKind::Optical { self.sched.peer(port, 0) } else { pt.peer };
            if rx == NONE {
                None
            } else {
                let d = now.max(pt.busy_until).max(pt.down_until);
                self.net.ports[port as usize].busy_until = d + ser;
                // a static fabric's "slice" is the configuration in force (one per reconfiguration)
                Some((d, self.rc.applied, cur.idx, rx))
            }
        };
        let Some((d, abs, idx, rx)) = plan else {
            let pt = &mut self.net.ports[port as usize];
            pt.bytes -= wire;
            let reason = if kind == PortKind::Optical && cyclic && ser + gb > self.sched.slice(cur.abs).end - cur.start {
                DROP_OVERSIZE
            } else {
                DROP_NO_CIRCUIT
            };
            self.drop_pkt(pid, reason);
            return;
        };
        if kind == PortKind::Optical {
            self.check_guard(port, d, ser, abs, idx, cyclic);
        }
        if self.offload.enabled() && !offload_refused && kind == PortKind::Optical && cyclic
            && dep != WILD && abs >= cur.abs + self.offload.queues as u64 {
            self.offload.window_violations += 1;
        }
        if self.eqo.enabled() && kind == PortKind::Optical && cyclic {
            let bpt = self.eqo_bytes_per_tick(port);
            self.eqo.read(&self.sched, port, idx, bpt, now);
            self.eqo.add(port, idx, wire);
        }
        let queued = self.net.ports[port as usize].bytes - wire;
        self.ecn_mark(port, pid, queued);
        let base = self.cal_of(port);
        let calendar = kind == PortKind::Optical && cyclic;
        let to_host = kind == PortKind::HostDown;
        let at = if to_host { rx } else { self.net.port_node[rx as usize] };
        // the arrival slice at the next hop is the slice the packet was sent in (read ahead
        // of its arrival there with a look-ahead)
        let tag = if self.mode.lookahead > 0 && cyclic {
            self.sched.slice_at(d + ser + self.net.ports[port as usize].prop + self.mode.lookahead).idx
        } else if kind == PortKind::Optical || !cyclic {
            idx
        } else {
            self.sched.slice_at(d).idx
        };
        let rx = if kind == PortKind::Optical { rx } else { NONE };
        // a port with one queue keeps no heap of queue heads (release_departed)
        let qi = if calendar { idx } else { 0 };
        self.launch(port, pid, base + qi, calendar, Launch { d, ser, wire, abs, tag, at, rx, to_host });
    }

    /// Departure of a packet on a slotted optical port: the first occurrence of its
    /// departure slice (or, for a wildcard, of any slice with a circuit) from now whose
    /// calendar queue tail leaves room for the whole serialization before the slice ends.
    /// With `commit` the queue's tail moves past it.
    pub(in crate::sim) fn plan_slotted(&mut self, port: u32, dep: u32, ser: Ps, cur: SliceRef, commit: bool) -> Option<SlotPlan> {
        let base = self.cal_of(port) as usize;
        let plan = self.find_slot(port, base, dep, ser, cur)?;
        if commit {
            self.commit_slot(base, plan, ser);
        }
        Some(plan)
    }

    /// Move the tail of the planned calendar queue (of the port whose queues start at
    /// `base`) past a transmission of `ser` planned there.
    #[inline]
    pub(in crate::sim) fn commit_slot(&mut self, base: usize, (t0, abs, idx, _): SlotPlan, ser: Ps) {
        self.net.cal[base + idx as usize].tail = (abs, t0 + ser);
    }

    /// Count a guardband violation if an optical port's transmission (start `d`, lasting
    /// `ser`, in slice `abs` of index `idx`) is not inside the circuit's up-time: after the
    /// slice's guardband (on a cyclic schedule), before its end, and after the port's
    /// reconfiguration delay.
    #[inline]
    pub(in crate::sim) fn check_guard(&mut self, port: u32, d: Ps, ser: Ps, abs: u64, idx: u32, cyclic: bool) {
        let (start, end) = self.sched.bounds(abs, idx);
        let up = start + if cyclic { self.sched.guard_of(port, idx) } else { 0 };
        if cyclic && (d < up || d + ser > end) || d < self.net.ports[port as usize].down_until {
            self.acct.gb_violations += 1;
        }
    }

    /// [`Sim::plan_slotted`] without the commit, for a port whose calendar queues start at
    /// `base`: (departure, absolute slice, slice index, receiving port).
    #[inline]
    pub(in crate::sim) fn find_slot(&self, port: u32, base: usize, dep: u32, ser: Ps, cur: SliceRef) -> Option<SlotPlan> {
        let n = self.sched.slices() as usize;
        plan(&self.sched, &self.net.cal[base..base + n], port, self.clock.now, self.net.ports[port as usize].down_until, dep, ser, cur)
    }
}

/// Calendar planning: when a packet whose serialization takes `ser` may leave `port`
/// (down until `down`) at time `now` in slice `cur`, given the tails of the port's
/// calendar queues (one per slice index of the cycle). `dep` is the departure slice index
/// the route asks for, or `WILD` for the first slice, within two cycles, with a circuit
/// and room. A queue is FIFO: a packet starts after its queue's tail, and only within the
/// up-time of its slice (after the guardband). Returns (start, absolute slice, slice index,
/// receiving port), or `None` (no circuit, or a packet that never fits: oversize).
#[inline]
#[allow(clippy::too_many_arguments)]
pub(in crate::sim) fn plan(sched: &Schedule, tails: &[CalQ], port: u32, now: Ps, down: Ps, dep: u32, ser: Ps, cur: SliceRef)
    -> Option<SlotPlan> {
    let n = sched.slices();
    // slice `abs` of index `idx`: the start of the packet's serialization, if it fits
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn fits(sched: &Schedule, tails: &[CalQ], port: u32, now: Ps, down: Ps, ser: Ps, abs: u64, idx: u32) -> Option<Ps> {
        let (start, end) = sched.bounds(abs, idx);
        let (ta, tt) = tails[idx as usize].tail;
        let t0 = now.max(start + sched.guard_of(port, idx)).max(if ta == abs { tt } else { 0 }).max(down);
        (t0 + ser <= end).then_some(t0)
    }
    let fits = |abs: u64, idx: u32| fits(sched, tails, port, now, down, ser, abs, idx);
    let (abs, t0, idx) = if dep == WILD {
        // first slice with a circuit and room, within two cycles
        let mut found = None;
        let from = if down > now { sched.slice_at(down).abs.max(cur.abs) } else { cur.abs };
        let mut idx = (from % n as u64) as u32;
        for k in 0..2 * n as u64 {
            let abs = from + k;
            let i = idx;
            idx = if idx + 1 == n { 0 } else { idx + 1 };
            if sched.peer(port, i) == NONE {
                continue;
            }
            let (ta, _) = tails[i as usize].tail;
            if ta > abs {
                continue; // this queue already spilled into a later occurrence
            }
            if let Some(t0) = fits(abs, i) {
                found = Some((abs, t0, i));
                break;
            }
        }
        found?
    } else {
        if sched.peer(port, dep) == NONE {
            return None;
        }
        let first = sched.next_occurrence(cur, dep);
        let mut abs = first.max(tails[dep as usize].tail.0);
        while down > now && sched.bounds(abs, dep).1 <= down {
            abs += n as u64; // the circuit is still being reconfigured
        }
        let mut tries = 0;
        loop {
            if let Some(t0) = fits(abs, dep) {
                break (abs, t0, dep);
            }
            tries += 1;
            if tries > 2 {
                return None; // never fits in an empty slice: oversize
            }
            // a fixed departure slice recurs every n slices
            abs += n as u64;
        }
    };
    Some((t0, abs, idx, sched.peer(port, idx)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Ps = 1_000_000;

    /// Two ports joined in slices 0 and 2 of a 3-slice cycle (10 us each, 1 us guardband),
    /// dark in slice 1: slice 2 changes circuit (its guardband applies), slice 0 does not
    /// (the same circuit as slice 2 before it).
    fn sched() -> Schedule {
        Schedule::cyclic(vec![10 * US; 3], US, 2, vec![1, 0, NONE, NONE, 1, 0]).unwrap()
    }

    fn tails(t: [(u64, Ps); 3]) -> Vec<CalQ> {
        t.iter().map(|&tail| CalQ { tail, ..CalQ::default() }).collect()
    }

    #[test]
    fn a_packet_takes_the_first_slice_with_a_circuit_and_room() {
        let s = sched();
        let cur = s.slice_at(0);
        let empty = tails([(0, 0); 3]);
        assert_eq!(plan(&s, &empty, 0, 0, 0, WILD, 2 * US, cur), Some((0, 0, 0, 1)));
        // slice 0 is full up to 9 us: 2 us no longer fit; slice 1 is dark; slice 2 starts
        // after its guardband
        let full0 = tails([(0, 9 * US), (0, 0), (0, 0)]);
        assert_eq!(plan(&s, &full0, 0, 0, 0, WILD, 2 * US, cur), Some((21 * US, 2, 2, 1)));
        // a fixed departure slice waits for its next occurrence
        assert_eq!(plan(&s, &full0, 0, 0, 0, 0, 2 * US, cur), Some((30 * US, 3, 0, 1)));
        // from inside slice 2, at 25 us, behind nothing
        let cur2 = s.slice_at(25 * US);
        assert_eq!(plan(&s, &empty, 1, 25 * US, 0, WILD, 2 * US, cur2), Some((25 * US, 2, 2, 0)));
    }

    #[test]
    fn a_queue_that_spilled_into_a_later_cycle_keeps_its_packets_behind() {
        let s = sched();
        // slice 0's queue already ends in its next occurrence (absolute slice 3, at 33 us)
        let spilled = tails([(3, 33 * US), (0, 0), (0, 0)]);
        let cur = s.slice_at(0);
        assert_eq!(plan(&s, &spilled, 0, 0, 0, 0, 2 * US, cur), Some((33 * US, 3, 0, 1)));
        // a wildcard skips it and takes slice 2
        assert_eq!(plan(&s, &spilled, 0, 0, 0, WILD, 2 * US, cur), Some((21 * US, 2, 2, 1)));
    }

    #[test]
    fn no_circuit_and_oversize_find_nothing_and_a_down_port_waits() {
        let s = sched();
        let cur = s.slice_at(0);
        let empty = tails([(0, 0); 3]);
        assert_eq!(plan(&s, &empty, 0, 0, 0, 1, US, cur), None, "slice 1 has no circuit");
        // slice 0 keeps slice 2's circuit, so it has no guardband: 10 us fit exactly
        assert_eq!(plan(&s, &empty, 0, 0, 0, WILD, 10 * US, cur), Some((0, 0, 0, 1)));
        assert_eq!(plan(&s, &empty, 0, 0, 0, WILD, 10 * US + 1, cur), None, "longer than any slice");
        assert_eq!(plan(&s, &empty, 0, 0, 0, 2, 9 * US + 1, cur), None, "longer than slice 2's up-time");
        // down until 25 us (a reconfiguration): the first slice after that
        assert_eq!(plan(&s, &empty, 0, 0, 25 * US, WILD, 2 * US, cur), Some((25 * US, 2, 2, 1)));
        assert_eq!(plan(&s, &empty, 0, 0, 25 * US, 0, 2 * US, cur), Some((30 * US, 3, 0, 1)));
    }
}
