//! Where packets end: the pool (allocation and the one release), drops with their reason
//! and ledger entry, delivery to an endpoint, and packets without a route.

use crate::sim::*;

/// Drop reasons, indexed into `SimOutput::drops`.
pub const DROP_REASONS: [&str; 12] = ["buffer_overflow", "no_route", "no_circuit", "reconfiguration", "oversize",
                                       "class_overflow", "header_overflow", "injected", "bulk_returned", "failed_link",
                                       "adm_fail", "loop"];

pub(in crate::sim) const DROP_BUFFER: usize = 0;

pub(in crate::sim) const DROP_NO_ROUTE: usize = 1;

pub(in crate::sim) const DROP_NO_CIRCUIT: usize = 2;

pub(in crate::sim) const DROP_RECONF: usize = 3;

pub(in crate::sim) const DROP_OVERSIZE: usize = 4;

/// A priority class of a served port is full (drop-tail per class).
pub(in crate::sim) const DROP_CLASS: usize = 5;

/// A trimmed header (or control packet) finds the header class full.
pub(in crate::sim) const DROP_HEADER: usize = 6;

/// A loss the spec asked for (`SimSpec::loss`): the first copy of a data segment.
pub(in crate::sim) const DROP_INJECTED: usize = 7;

/// A RotorLB packet whose circuit no longer led to its committed rack (or that found no
/// room): it goes back to its holder host, nothing is lost.
pub(in crate::sim) const DROP_RETURNED: usize = 8;

/// A packet queued on a link that failed, or with no way on but a failed link (listed
/// only in runs with failures).
pub(in crate::sim) const DROP_FAILED: usize = 9;

/// Admission control found no slice with room within a cycle (listed only in runs with
/// admission control).
pub(in crate::sim) const DROP_ADM: usize = 10;

/// A packet that has crossed `SimSpec::hop_limit` links without reaching its destination
/// node: a routing loop (listed only in runs with a hop limit).
pub(in crate::sim) const DROP_LOOP: usize = 11;

/// How a packet leaves the engine ([`Sim::exit`], the one place that frees packets and
/// books them in the ledger).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum Exit {
    /// Made but never sent (its source's admission refused it): nothing to book.
    Unsent,
    /// Data reached its receiver: `new` payload bytes not delivered before, `dup` bytes
    /// delivered before (or after the sender had finished).
    Delivered { new: u64, dup: u64 },
    /// A packet without payload reached its end (ACK, NACK, PULL, a control message), or a
    /// bulk packet reached its relay host, which now holds the payload.
    Control,
    /// A trimmed header reached its end.
    Header,
    /// Dropped for `reason`; `payload` bytes dropped, `lost` when no transport sends them
    /// again.
    Dropped { reason: usize, payload: u64, lost: bool },
}

impl Sim {
    #[inline]
    pub(in crate::sim) fn alloc(&mut self, p: Packet, x: PacketX) -> u32 {
        self.pool.alloc(p, x)
    }

    /// The one exit of a packet: it is booked in the ledger as `how` says and freed. A
    /// packet admitted into the network leaves it here (a drained reconfiguration waits
    /// for the last one).
    #[inline]
    pub(in crate::sim) fn exit(&mut self, id: u32, how: Exit) {
        match how {
            Exit::Unsent => {}
            Exit::Delivered { new, dup } => self.acct.ledger.deliver(new, dup),
            Exit::Control => self.acct.ledger.deliver(0, 0),
            Exit::Header => self.acct.ledger.trimmed_end(),
            Exit::Dropped { reason, payload, lost } => self.acct.ledger.drop(reason, payload, lost),
        }
        if self.pool.pkt[id as usize].innet {
            self.pool.pkt[id as usize].innet = false;
            self.rc.in_net -= 1;
            if self.rc.draining != NONE {
                self.check_drain();
            }
        }
        self.pool.free(id);
    }

    pub(in crate::sim) fn drop_pkt(&mut self, id: u32, reason: usize) {
        self.return_credit(id);
        let p = self.pool.pkt[id as usize];
        if self.droplog.on() {
            self.droplog.drop(droplog::DropRec { time: self.clock.now, node: p.at, src_node: p.src_node, dst_node: p.dst_node,
                                                 flow: p.flow, reason: reason as u8, hops: p.hops });
        }
        let px = self.pool.x[id as usize];
        if p.kind == K_BULK {
            // RotorLB keeps the payload at its holder host, which sends it again
            let meta = self.rlb.meta[id as usize];
            self.exit(id, Exit::Dropped { reason, payload: px.payload as u64, lost: false });
            if self.rlb.lb.as_mut().expect("bulk packets come from RotorLB").on_return(&meta) {
                self.schedule_rlb();
            }
            return;
        }
        if p.kind == K_MSG {
            self.msg.dropped += 1;
        }
        let payload = if p.kind == K_DATA && !p.trimmed { px.payload as u64 } else { 0 };
        // the payload of an unreliable flow is gone for good; a transport sends it again
        let lost = payload > 0 && !self.flows[p.flow as usize].tp.reliable();
        if lost {
            self.acct.drops[reason] += payload;
        }
        self.exit(id, Exit::Dropped { reason, payload, lost });
    }

    // ---------------------------------------------------------------- flows and endpoints

    pub(in crate::sim) fn deliver(&mut self, pid: u32) {
        self.return_credit(pid);
        let p = self.pool.pkt[pid as usize];
        if p.kind == K_BULK {
            self.bulk_arrive(pid);
            return;
        }
        if self.flows[p.flow as usize].tp.reliable() {
            self.transport_arrive(pid);
            return;
        }
        self.acct.latency.add(self.clock.now - self.pool.x[pid as usize].ts);
        let new = self.count_delivery(pid);
        let fl = &mut self.flows[p.flow as usize];
        if fl.delivered == fl.size {
            self.flow_finished(p.flow);
        }
        self.exit(pid, Exit::Delivered { new, dup: 0 });
    }

    // ---------------------------------------------------------------- holding

    /// Packet `pid` at `node` found no route (`why`: a failed link is dropped as
    /// `failed_link`). With holding on it waits in the node's hold
    /// (a relayed packet that finds the hold full is dropped as `buffer_overflow`, except
    /// in a lossless credit network, whose link credit already bounds what a node holds);
    /// otherwise it is dropped as `no_route`.
    #[cold]
    pub(in crate::sim) fn no_route(&mut self, node: u32, pid: u32, why: NoRoute) {
        if why == NoRoute::Failed {
            self.drop_pkt(pid, DROP_FAILED);
            return;
        }
        if !self.hold.on || self.pool.pkt[pid as usize].kind == K_BULK {
            self.drop_pkt(pid, DROP_NO_ROUTE);
            return;
        }
        let wire = self.pool.pkt[pid as usize].wire as u64;
        if !self.credit.on && self.hold.bytes[node as usize] + wire > self.hold.cap[node as usize] {
            self.hold.stats.overflow += 1;
            self.drop_pkt(pid, DROP_BUFFER);
            return;
        }
        self.hold.bytes[node as usize] += wire;
        self.hold_push(node, pid);
    }
}
