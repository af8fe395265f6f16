//! The port record and its calendar queues (the state one packet-hop reads and writes),
//! and the plans a port makes for a packet.

use crate::sim::*;

/// What a served optical port may do with its head packet on a cyclic schedule.
pub(in crate::sim) enum Gate {
    /// Send it now to this receiving port.
    Send(u32),
    /// It left the port (re-routed to another port, or dropped).
    Moved,
    /// Its circuit is down: wait until this time.
    Wait(Ps),
}

/// Where and when a planned packet goes ([`Sim::launch`]): its departure, serialization
/// and wire bytes, the absolute slice it is sent in and the arrival slice it carries, the
/// node (or host) it reaches and the port receiving it (NONE: not an optical circuit).
pub(in crate::sim) struct Launch {
    pub(in crate::sim) d: Ps,
    pub(in crate::sim) ser: Ps,
    pub(in crate::sim) wire: u64,
    pub(in crate::sim) abs: u64,
    pub(in crate::sim) tag: u32,
    pub(in crate::sim) at: u32,
    pub(in crate::sim) rx: u32,
    pub(in crate::sim) to_host: bool,
}

/// A departure on a slotted port: (start of the serialization, absolute slice, slice
/// index, receiving port).
pub(in crate::sim) type SlotPlan = (Ps, u64, u32, u32);

/// One calendar queue of a port (a slice index of a slotted port's cycle; the only queue
/// of any other port): the state one packet-hop reads and writes, in one cache line.
#[derive(Debug, Clone, Default)]
#[repr(align(64))]
pub(in crate::sim) struct CalQ {
    /// (absolute slice, time) at which the queue's tail ends (slotted ports).
    pub(in crate::sim) tail: (u64, Ps),
    /// Bytes planned but not started.
    pub(in crate::sim) bytes: u64,
    /// Planned transmissions not yet departed (departures grow along the FIFO).
    pub(in crate::sim) planned: VecDeque<Planned>,
    /// Transmissions planned here since this queue last had its port release the
    /// departed ones (at [`LAZY_RELEASE`] it does).
    pub(in crate::sim) lazy: u32,
}

const _: () = assert!(std::mem::size_of::<CalQ>() == 64);

/// A port. The fields a packet-hop touches come first, in two cache lines (`repr(C)`
/// keeps this order; the assertion below keeps them within 128 bytes).
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub(in crate::sim) struct Port {
    // first line: admission and planning
    /// The least of the calendar queues' first departures (`Ps::MAX`: nothing planned),
    /// read first so that a port with nothing due costs no more.
    pub(in crate::sim) next_dep: Ps,
    /// Bytes planned but not yet departed (the buffer occupancy).
    pub(in crate::sim) bytes: u64,
    pub(in crate::sim) cap: u64,
    pub(in crate::sim) rate: Rate,
    pub(in crate::sim) prop: Ps,
    pub(in crate::sim) down_until: Ps,
    /// First of its calendar queues in `Sim::cal` (NONE: not yet used): one per slice
    /// index of a slotted port, one for any other port.
    pub(in crate::sim) cal: u32,
    pub(in crate::sim) kind: PortKind,
    /// Served model (priority classes / trimming): per class its FIFO of packets and
    /// bytes, the byte caps, trimming, and whether a `PortFree` event is pending.
    pub(in crate::sim) served: bool,
    pub(in crate::sim) trim: bool,
    pub(in crate::sim) free_pending: bool,
    // second line: departures
    /// A small heap of the calendar queues' first departures (slotted ports whose plans
    /// are not in `departs`; a port with one queue finds its next departure in that queue).
    pub(in crate::sim) heads: std::collections::BinaryHeap<std::cmp::Reverse<(Ps, u32)>>,
    /// Tail of the FIFO of an electrical / host / static optical port.
    pub(in crate::sim) busy_until: Ps,
    pub(in crate::sim) tx_bytes: u64,
    /// Last packet released (departed) and the end of its serialization.
    pub(in crate::sim) last_end: Ps,
    /// ECN marking threshold in bytes (0: off).
    pub(in crate::sim) ecn_k: u64,
    pub(in crate::sim) last_pkt: u32,
    pub(in crate::sim) peer: u32,
    // third line: a calendar port's planned transmissions (when `Sim::flat_cal`)
    pub(in crate::sim) departs: Departures,
    // the rest
    pub(in crate::sim) tx_bytes_sampled: u64,
    pub(in crate::sim) classes: SmallVec<[VecDeque<u32>; INLINE_CLASSES]>,
    pub(in crate::sim) class_bytes: SmallVec<[u64; INLINE_CLASSES]>,
    pub(in crate::sim) class_cap: SmallVec<[u64; INLINE_CLASSES]>,
    /// Credit-based flow control: bytes of credit per virtual channel (empty: none), the
    /// returns on their way back (arrival time, virtual channel, bytes; in time order, as
    /// every return of a port crosses the same link), the next channel to serve, since when
    /// the port has waited for credit with packets queued (`Ps::MAX`: not), and the time of
    /// its pending credit wake-up (`Ps::MAX`: none). Returns are taken in lazily, when the
    /// port next picks a packet; only a port that waits for credit gets an event for one.
    pub(in crate::sim) credit: SmallVec<[u64; INLINE_CLASSES]>,
    pub(in crate::sim) cred_ret: VecDeque<(Ps, u8, u32)>,
    pub(in crate::sim) rr_vc: usize,
    pub(in crate::sim) blocked_since: Ps,
    pub(in crate::sim) cred_wake: Ps,
    /// Weighted service (deficit round robin): bytes per round of each class (empty:
    /// strict priority), the deficits and the class being served.
    pub(in crate::sim) quantum: Vec<u64>,
    pub(in crate::sim) deficit: Vec<u64>,
    pub(in crate::sim) drr: usize,
}

/// A calendar queue has its port release the departed transmissions at least every this
/// many transmissions planned in it (`Sim::release_for` releases when a test needs it).
pub(in crate::sim) const LAZY_RELEASE: u32 = 128;

/// Port queues, their byte counts, caps and credits are kept in the port up to this many
/// classes (virtual channels), so serving a port reads no further allocation.
pub(in crate::sim) const INLINE_CLASSES: usize = 4;

const _: () = assert!(std::mem::offset_of!(Port, free_pending) < 64 && std::mem::offset_of!(Port, peer) + 4 <= 128
    && std::mem::offset_of!(Port, departs) == 128);

/// When a full port may have room again: its next planned departure, else `fallback`.
pub(in crate::sim) fn pt_wake(pt: &Port, fallback: Ps) -> Ps {
    if pt.next_dep == Ps::MAX { fallback } else { pt.next_dep }
}

impl Port {
    /// A port of `kind` at `rate`, with propagation `prop`, `cap` bytes of buffer and the
    /// peer port it is wired to (NONE: none, or set by the schedule): a FIFO, with no
    /// classes, credit, weights or ECN (the builder sets those its discipline asks for).
    pub(in crate::sim) fn new(kind: PortKind, rate: Rate, prop: Ps, cap: u64, peer: u32) -> Port {
        Port {
            kind,
            rate,
            prop,
            cap,
            bytes: 0,
            peer,
            busy_until: 0,
            cal: NONE,
            heads: std::collections::BinaryHeap::new(),
            departs: Departures::default(),
            next_dep: Ps::MAX,
            down_until: 0,
            last_pkt: NONE,
            last_end: 0,
            tx_bytes: 0,
            tx_bytes_sampled: 0,
            ecn_k: 0,
            served: false,
            trim: false,
            classes: SmallVec::new(),
            class_bytes: SmallVec::new(),
            class_cap: SmallVec::new(),
            free_pending: false,
            credit: SmallVec::new(),
            cred_ret: VecDeque::new(),
            rr_vc: 0,
            blocked_since: Ps::MAX,
            cred_wake: Ps::MAX,
            quantum: Vec::new(),
            deficit: Vec::new(),
            drr: 0,
        }
    }
}
