//! Where packets end: the pool (allocation and the one release), drops with their reason
//! and ledger entry, delivery to an endpoint, and packets without a route.

use crate::sim::*;

/// Drop reasons, indexed into `SimOutput::drops`.
pub const DROP_REASONS: [&str; 11] = ["buffer_overflow", "no_route", "no_circuit", "reconfiguration", "oversize",
                                       "class_overflow", "header_overflow", "injected", "bulk_returned", "failed_link",
                                       "adm_fail"];

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

impl Sim {
    pub(in crate::sim) fn alloc(&mut self, mut p: Packet, x: PacketX) -> u32 {
        self.live += 1;
        self.peak_live = self.peak_live.max(self.live);
        if let Some(id) = self.free.pop() {
            // a reused slot gets a new epoch, so no stale event of its last packet matches
            p.epoch = self.pool[id as usize].epoch.wrapping_add(1);
            self.pool[id as usize] = p;
            self.pool_x[id as usize] = x;
            // the slot the next packet will take, unless one is released first
            if let Some(&next) = self.free.last() {
                crate::prefetch::read(&self.pool[next as usize]);
                crate::prefetch::read(&self.pool_x[next as usize]);
            }
            id
        } else {
            self.pool.push(p);
            self.pool_x.push(x);
            (self.pool.len() - 1) as u32
        }
    }

    #[inline]
    pub(in crate::sim) fn release(&mut self, id: u32) {
        if self.pool[id as usize].innet {
            self.pool[id as usize].innet = false;
            self.in_net -= 1;
            if self.draining != NONE {
                self.check_drain();
            }
        }
        self.live -= 1;
        self.pool_x[id as usize].payload = 0;
        self.pool[id as usize].wire = 0;
        self.free.push(id);
    }

    pub(in crate::sim) fn drop_pkt(&mut self, id: u32, reason: usize) {
        self.return_credit(id);
        let p = self.pool[id as usize];
        if self.droplog.on() {
            self.droplog.drop(droplog::DropRec { time: self.now, node: p.at, src_node: p.src_node, dst_node: p.dst_node,
                                                 flow: p.flow, reason: reason as u8, hops: p.hops });
        }
        let px = self.pool_x[id as usize];
        if p.kind == K_BULK {
            // RotorLB keeps the payload at its holder host, which sends it again
            self.ledger.drop(reason, px.payload as u64, false);
            let meta = self.bulk_meta[id as usize];
            self.release(id);
            if self.rlb.as_mut().expect("bulk packets come from RotorLB").on_return(&meta) {
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
        self.ledger.drop(reason, payload, lost);
        if lost {
            self.drops[reason] += payload;
        }
        self.release(id);
    }

    // ---------------------------------------------------------------- flows and endpoints

    pub(in crate::sim) fn deliver(&mut self, pid: u32) {
        self.return_credit(pid);
        let p = self.pool[pid as usize];
        if p.kind == K_BULK {
            self.bulk_arrive(pid);
            return;
        }
        if self.flows[p.flow as usize].tp.reliable() {
            self.transport_arrive(pid);
            return;
        }
        self.latency.add(self.now - self.pool_x[pid as usize].ts);
        self.count_delivery(pid);
        let fl = &mut self.flows[p.flow as usize];
        if fl.delivered == fl.size {
            self.flow_finished(p.flow);
        }
        self.release(pid);
    }

    // ---------------------------------------------------------------- holding

    /// Packet `pid` at `node` found no route. With holding on it waits in the node's hold
    /// (a relayed packet that finds the hold full is dropped as `buffer_overflow`, except
    /// in a lossless credit network, whose link credit already bounds what a node holds);
    /// otherwise it is dropped as `no_route`.
    #[cold]
    pub(in crate::sim) fn no_route(&mut self, node: u32, pid: u32) {
        if std::mem::take(&mut self.failed_route) {
            self.drop_pkt(pid, DROP_FAILED);
            return;
        }
        if !self.hold_on || self.pool[pid as usize].kind == K_BULK {
            self.drop_pkt(pid, DROP_NO_ROUTE);
            return;
        }
        let wire = self.pool[pid as usize].wire as u64;
        if !self.credit_net && self.hold_bytes[node as usize] + wire > self.hold_cap[node as usize] {
            self.hold.overflow += 1;
            self.drop_pkt(pid, DROP_BUFFER);
            return;
        }
        self.hold_bytes[node as usize] += wire;
        self.hold_push(node, pid);
    }
}
