//! The packet record (one cache line) and its cold part, and the packet kinds.

use crate::sim::*;

/// The packets: their records by id (the hot part and the cold part, same index), the
/// ids free for reuse, and how many are live now and at most.
#[derive(Debug, Default)]
pub(in crate::sim) struct Pool {
    pub(in crate::sim) pkt: Vec<Packet>,
    pub(in crate::sim) x: Vec<PacketX>,
    pub(in crate::sim) free: Vec<u32>,
    pub(in crate::sim) live: u64,
    pub(in crate::sim) peak: u64,
}

impl Pool {
    /// Store a new packet and return its id (a freed id first). A reused id gets a new
    /// epoch, so that no stale event of its last packet matches it.
    pub(in crate::sim) fn alloc(&mut self, mut p: Packet, x: PacketX) -> u32 {
        self.live += 1;
        self.peak = self.peak.max(self.live);
        if let Some(id) = self.free.pop() {
            p.epoch = self.pkt[id as usize].epoch.wrapping_add(1);
            self.pkt[id as usize] = p;
            self.x[id as usize] = x;
            // the slot the next packet will take, unless one is freed first
            if let Some(&next) = self.free.last() {
                crate::prefetch::read(&self.pkt[next as usize]);
                crate::prefetch::read(&self.x[next as usize]);
            }
            id
        } else {
            self.pkt.push(p);
            self.x.push(x);
            (self.pkt.len() - 1) as u32
        }
    }

    /// Free packet `id` (only [`Sim::exit`] calls this): its bytes no longer count.
    #[inline]
    pub(in crate::sim) fn free(&mut self, id: u32) {
        self.live -= 1;
        self.x[id as usize].payload = 0;
        self.pkt[id as usize].wire = 0;
        self.free.push(id);
    }
}

/// Packet kinds.
pub(in crate::sim) const K_DATA: u8 = 0;

pub(in crate::sim) const K_ACK: u8 = 1;

pub(in crate::sim) const K_NACK: u8 = 2;

pub(in crate::sim) const K_PULL: u8 = 3;

/// A RotorLB bulk packet (its route and hosts are in `Sim::bulk_meta`).
pub(in crate::sim) const K_BULK: u8 = 4;

/// A control message between nodes (`Sim::send_message`; `flow` is its message id).
pub(in crate::sim) const K_MSG: u8 = 5;

/// A packet: what its hops read, in one cache line (the rest, read where it enters and
/// leaves the network, is its [`PacketX`] in `Sim::pool_x`).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(in crate::sim) struct Packet {
    pub(in crate::sim) flow: u32,
    pub(in crate::sim) src_node: u32,
    pub(in crate::sim) dst_node: u32,
    pub(in crate::sim) wire: u32,
    /// Arrival slice at the node that holds it (the slice the previous hop sent it in).
    pub(in crate::sim) tag: u32,
    /// Node (or host endpoint, when `to_host`) the packet is travelling to.
    pub(in crate::sim) at: u32,
    /// Receiving port of its current link (collision check), or NONE.
    pub(in crate::sim) rx: u32,
    /// Sending port of its current link and the absolute slice it was sent in.
    pub(in crate::sim) from: u32,
    pub(in crate::sim) sent_abs: u32,
    pub(in crate::sim) route: u32,
    pub(in crate::sim) pos: u32,
    /// Credit networks: the port whose link credit this packet holds (NONE: none), and
    /// the virtual channel it used there (kept after the credit goes back: the channel
    /// of its previous fabric link, which a routing-chosen channel rule starts from).
    pub(in crate::sim) cred_port: u32,
    pub(in crate::sim) hops: u16,
    /// Bumped when a planned transmission is cancelled (reconfiguration).
    pub(in crate::sim) epoch: u16,
    /// Routing generation its source route belongs to (routes die with a reconfiguration).
    pub(in crate::sim) rgen: u16,
    pub(in crate::sim) cred_vc: u8,
    /// `K_DATA`, `K_ACK`, `K_NACK` or `K_PULL`.
    pub(in crate::sim) kind: u8,
    /// Link classes crossed (bit 0 electrical, 1 static optical, 2 reconfigurable optical).
    pub(in crate::sim) classes: u8,
    /// PIAS priority level (0 highest), set when the packet leaves its source.
    pub(in crate::sim) prio: u8,
    pub(in crate::sim) to_host: bool,
    pub(in crate::sim) doomed: bool,
    /// Cut to its header by a trimming port (its payload no longer travels).
    pub(in crate::sim) trimmed: bool,
    /// Data: carries an ECN congestion mark. ACK: echoes one (ECE).
    pub(in crate::sim) ce: bool,
    /// Admitted into the network by its source and not yet gone (counted in `in_net`).
    pub(in crate::sim) innet: bool,
    /// Data of an NDP flow (its port class, read at every hop without the flow record).
    pub(in crate::sim) ndp: bool,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// The rest of a packet (`Sim::pool_x`, same index): read where it enters the network,
/// crosses a host link, or is delivered.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::sim) struct PacketX {
    pub(in crate::sim) dst_ep: u32,
    pub(in crate::sim) payload: u32,
    /// Egress port and departure slice reserved at injection (hosts mode).
    pub(in crate::sim) q_port: u32,
    pub(in crate::sim) q_dep: u32,
    /// Data: segment number. ACK: next expected segment (TCP) or the segment acknowledged
    /// (NDP). NACK: the trimmed segment. PULL: the cumulative pull number.
    pub(in crate::sim) seq: u32,
    /// Hosts mode: the reconfiguration count of `q_port` when the port was chosen (a
    /// different count at the ToR: the port's circuit changed while the packet crossed
    /// its host link).
    pub(in crate::sim) q_gen: u16,
    /// Data sent again by its transport (push-back holds only new data).
    pub(in crate::sim) retx: bool,
    /// Data: the time it entered the network. ACK: the echoed send time of the data.
    pub(in crate::sim) ts: Ps,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_reused_with_a_new_epoch_and_live_counts_hold() {
        let mut pool = Pool::default();
        let a = pool.alloc(Packet { flow: 7, wire: 1500, ..Packet::default() }, PacketX { payload: 1460, ..PacketX::default() });
        let b = pool.alloc(Packet { flow: 8, ..Packet::default() }, PacketX::default());
        assert_eq!((a, b, pool.live, pool.peak), (0, 1, 2, 2));
        pool.free(a);
        assert_eq!((pool.live, pool.pkt[0].wire, pool.x[0].payload), (1, 0, 0));
        let c = pool.alloc(Packet { flow: 9, ..Packet::default() }, PacketX::default());
        assert_eq!(c, a, "a freed id is taken first");
        assert_eq!((pool.pkt[c as usize].flow, pool.pkt[c as usize].epoch), (9, 1));
        assert_eq!((pool.live, pool.peak), (2, 2));
        pool.free(b);
        pool.free(c);
        assert_eq!((pool.live, pool.peak, pool.free.len()), (0, 2, 2));
    }
}
