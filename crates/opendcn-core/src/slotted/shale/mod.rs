//! Shale (docs/arch/shale.md): a cell-level, slot-by-slot engine over the active set.
//!
//! Time advances in *timeslots* of τ = slot / lanes (45.056 ns / 8 = 5.632 ns): timeslot t
//! starts on lane t mod lanes, runs one entry of the schedule ([`schedule::Plan`], one EBS
//! round robin or two interleaved) and lasts a full lane slot (guard band, then one cell
//! of `cell_bytes` at the lane rate). A cell sent in timeslot t is fully received
//! `slot + propagation` later and may be forwarded from timeslot t + D,
//! D = ⌈(slot + propagation) / τ⌉; flights wait in a ring of buckets keyed by arrival slot.
//!
//! Per timeslot only nodes with work are visited: every neighbour index k (sub-schedule,
//! phase, offset) has a list of nodes with a cell or a token queued for that neighbour,
//! and every sub-schedule a list of nodes with local flow data. Idle nodes send dummy
//! cells, which are counted, not simulated (`dummy_cells` = live nodes × timeslots − real
//! transmissions). Per-node state is O(neighbours) plus flat counter tables
//! ([`crate::flatmap::FlatMap`]) keyed by active (node, neighbour, bucket) only.
//!
//! Two engines run this model with identical output ([`ShaleRun`]): this one, timeslot
//! by timeslot over the active set, covers every option below; [`window::WindowSim`]
//! serves the network node by node through windows of one hop delay D (inside which
//! nodes cannot interact) and covers the options whose interactions all travel as
//! cells: no failures, services, `priority` or end-to-end transports. Both draw spraying
//! choices from a hash of (seed, node, draw count) and sum network-wide quantities in
//! an order-free way, so the order in which nodes are served changes nothing.
//!
//! Speed: the timeslot engine is bound by memory latency (each cell-hop touches a handful of
//! randomly placed cache lines: the cell, the link records at both ends, a PIEO entry,
//! the credit counter). The per-link queue heads share one 16-byte record, a link
//! bucket's sender credits and receiver-side holds share one counter slot, and the
//! arrival and visit loops prefetch those lines a few iterations ahead. None of this
//! changes a result: the engine's output is identical with and without it.
//!
//! Routing (§5.2): a new cell's first hop is the current timeslot's peer (first
//! available); each further spraying hop goes, in the phase after the previous hop's
//! phase, to a random neighbour (`spray`: the neighbour with the fewest queued cells,
//! ties broken from a random start); after h sprays the direct semi-path fixes, phase
//! by phase after the last hop's phase, each coordinate that differs from the
//! destination. A cell reaching its destination on any hop is delivered. Forwarded cells
//! go before new cells; a node with nothing to send sends a dummy.
//!
//! Congestion control (§5.4): `hbh` — buckets ⟨destination, remaining sprays⟩; a cell may
//! cross link x→y only while fewer than T (first hops: T_F) cells of its bucket at y are
//! outstanding on that link; y queues a token when it forwards (or drops) the cell and
//! returns it, two per header, the next time it is connected to x on the same
//! sub-schedule. Per-neighbour PIEO: the first bucket with a credit is extracted; a bucket
//! that still holds cells re-enters at the tail (round robin among buckets). The engine
//! checks the invariant at every receipt: cells held at y per (upstream link, bucket)
//! never exceed the budget (`hbh_violations`, must be 0). `priority` — the eligible cell
//! with the lowest p = t + ℓ·E goes first (t = flow arrival timeslot, ℓ = flow size in
//! cells, E = epoch in timeslots).
//!
//! Failures (§5.5): the listed nodes and links fail at `fail_at`. A failed
//! node's queued cells and unsent flow data are dropped, cells reaching it are dropped. A
//! failed link (a node pair) loses every cell and token sent over it in either direction.
//! A live node y notices a failed neighbour / link to f at the first timeslot a cell from
//! f should have arrived (first f→y timeslot at or after the failure, plus D) and from
//! then on never sends to f (symmetric detection): cells queued to f are re-sprayed to
//! another usable neighbour of the same phase (spraying hops), dropped (f failed and is
//! their destination) or reset to their first spraying hop (direct hops via f, or over
//! the failed link to a live destination); a spraying hop whose phase has no usable
//! neighbour is skipped. Python picks failed nodes at random but at most ⌈f·m⌉ per line
//! (Shale's exchange of failed coordinates) and failed links uniformly among neighbour
//! pairs. Upstream nodes learn through invalidation tokens (see [`invalidation`],
//! `invalidation: false` turns them off). With `recover_at`, every failed node and link
//! comes back at that time (empty queues): each neighbour notices at the first cell it
//! receives again, sends again and re-validates; hop-by-hop credits lost with the cells
//! and tokens of failed elements are reset at the recovery.
//!
//! End-to-end baselines `isd`, `rd`, `ndp`: see [`transport`].
//!
//! OpenOptics infrastructure services (docs/engine.md#openoptics-services, `services`,
//! [`crate::services::SlotServices`]) mapped onto Shale's cells:
//! * Congestion detection: the slot queues are the per-neighbour queues (node y,
//!   neighbour index k), served one cell per occurrence of k (once an epoch of the
//!   sub-schedule). A forwarded cell that joins a queue already holding ≥ 1 cell (on
//!   receipt, or when a failure or an invalidation re-queues it) is a congestion event (exact cell count; EQO rejected). New cells are cut from flow data
//!   at send time and never wait in these queues. Under NDP a cell that is trimmed is
//!   not enqueued and not counted.
//! * Push-back: the message reaches the cell's source one propagation delay later
//!   (⌈propagation / τ⌉ timeslots; an idealized control path — Shale's in-band paths
//!   take up to h hops through the schedule) and the source cuts no new cell for that
//!   destination for as long as the occurrence of k that carries the cell was away from
//!   the detection ([`schedule::Plan::next_occurrence`] with the queue ahead; counted
//!   from the message's arrival, since an epoch of 6 timeslots is far shorter than the
//!   trip). Shale never drops by design (failures aside): the defining effect is bounded
//!   node queues where they otherwise grow with the run (`cc none`), and fewer NDP trims.
//! * Flow pausing (DECIDE): Shale's VLB is its spraying semi-path, so an elephant (a flow
//!   that has cut ≥ `elephant_bytes` into cells, PIAS aging) takes none: its cells leave
//!   only in a timeslot whose peer is the destination or holds the destination's
//!   coordinate of that phase (the first hop of the direct semi-path), and then follow
//!   the direct semi-path (≤ h hops, remaining sprays 0, hop-by-hop bucket ⟨d, 0⟩).
//! * Buffer offload: nodes are the endpoints, no hosts below them; rejected.
//!
//! Ledger ([`crate::ledger::Ledger`], cells are the packets; both engines count alike):
//! * sent: a new cell cut from flow data (a retransmission when it resends the payload
//!   of a NACKed cell, one per NACK), and a token-only cell (`control`: a flight that
//!   occupies its timeslot to carry tokens, hop-by-hop or invalidation, and no cell).
//!   Tokens riding a data cell's header, dummy cells (counted, not simulated) and the
//!   end-to-end transports' PULLs, trimmed headers and NACKs (reserved header space, no
//!   queueing, see [`transport`]) are not cells of their own.
//! * delivered: a data cell reaching its destination, a token-only cell reaching its
//!   neighbour; dropped: a cell (or token-only cell) lost on a failed link or at a failed
//!   node, or routed nowhere (`DROP_REASONS`), and a NACKed cell whose source failed;
//!   trimmed: an NDP-trimmed cell, when its NACK returns its payload to the source
//!   (until then its payload stays in the cell, in flight). Unsent flow data of a failed
//!   source is lost payload, no cell.
//! * in flight at the end, counted from the engine's state: live cells (queued, on a
//!   link or trimmed awaiting their NACK) and token-only flights not yet received;
//!   payload: live cells' bytes and flows' unsent bytes.
//!
//! Metrics: `max_active_buckets` = the most distinct buckets ⟨destination, remaining
//! sprays⟩ queued at one node (exact, reference-counted over its per-neighbour PIEOs);
//! `max_bucket_queues` = the most ⟨neighbour, bucket⟩ queues (PIEO entries) at one node.
//! The time series samples network-wide levels (queued cells, largest node queue,
//! unsent bytes) and interval counters (delivered and dropped bytes, cell-hops).
//!
//! DECIDE points taken (docs/arch/shale.md#decisions): schedule order (c_i ± j) mod m per phase;
//! lane ℓ serves entries ≡ ℓ mod lanes (one global entry per timeslot); spraying cells are
//! bound to a neighbour at enqueue; the phase of a hop is derived from the arrival slot;
//! tokens return over the same sub-schedule; T = T_F defaults come from Python
//! ("auto": T = T_F = ⌈2D/E⌉ + 1, enough for one bucket to use a link every epoch); a
//! dropped cell still returns its token; priority units in timeslots and cells;
//! interleaving spreads the higher-h slots evenly (Bresenham); buffer occupancy is cells
//! queued at a node (not unsent source data), time-weighted over node-timeslots; RD/NDP
//! PULL per flow, window, control path and NDP queue cap per neighbour queue: see
//! [`transport`].

mod failures;
mod invalidation;
mod output;
mod queues;
mod routing;
pub mod schedule;
mod timeslot;
mod transport;
pub mod window;

use crate::error::SpecError;
use crate::ledger::Ledger;
use crate::rng::{mix64, Stream};
use crate::units::{tx_time_ps, Ps, NONE};
use schedule::{Ebs, Plan};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Outcome of a spraying-hop choice.
enum Spray {
    To(u32),
    /// Some neighbours of the phase are alive but all invalidated the bucket.
    AllInvalid,
    /// Every neighbour of the phase failed.
    AllDead,
}

/// Congestion control variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    None,
    Priority,
    Hbh,
    Spray,
    HbhSpray,
    /// Idealized sender-driven fair share per receiver.
    Isd,
    /// Receiver-driven PULLs.
    Rd,
    /// PULLs and trimming.
    Ndp,
}

/// The token budget of a bucket with r sprays left on sub-schedule sigma: T_F for the
/// buckets of first hops (r = h − 1 at the receiver), T for the others.
#[inline]
fn token_budget(plan: &Plan, t: u32, tf: u32, sigma: u8, r: u8) -> u32 {
    if r as u32 + 1 == plan.subs[sigma as usize].h {
        tf
    } else {
        t
    }
}

impl Cc {
    pub fn parse(s: &str) -> Option<Cc> {
        Some(match s {
            "none" => Cc::None,
            "priority" => Cc::Priority,
            "hbh" => Cc::Hbh,
            "spray" => Cc::Spray,
            "hbh+spray" => Cc::HbhSpray,
            "isd" => Cc::Isd,
            "rd" => Cc::Rd,
            "ndp" => Cc::Ndp,
            _ => return None,
        })
    }
    /// The name [`Cc::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Cc::None => "none",
            Cc::Priority => "priority",
            Cc::Hbh => "hbh",
            Cc::Spray => "spray",
            Cc::HbhSpray => "hbh+spray",
            Cc::Isd => "isd",
            Cc::Rd => "rd",
            Cc::Ndp => "ndp",
        }
    }
    fn hbh(self) -> bool {
        matches!(self, Cc::Hbh | Cc::HbhSpray)
    }
    fn spray_short(self) -> bool {
        matches!(self, Cc::Spray | Cc::HbhSpray)
    }
}

/// Everything a Shale run needs (plain data; validated by [`ShaleSim::new`]).
#[derive(Debug, Clone)]
pub struct ShaleSpec {
    pub nodes: u32,
    pub h: u32,
    /// Higher-h sub-schedule for short flows (0 = no interleaving).
    pub h_hi: u32,
    /// Fraction num/den of timeslots given to the higher-h sub-schedule.
    pub inter_num: u64,
    pub inter_den: u64,
    /// Flows of at most this many bytes use the higher-h sub-schedule.
    pub cutoff_bytes: u64,
    pub lanes: u32,
    pub slot_ps: Ps,
    pub guard_ps: Ps,
    pub lane_rate_bps: u64,
    pub cell_bytes: u32,
    pub header_bytes: u32,
    pub prop_ps: Ps,
    pub cc: Cc,
    pub token_budget: u32,
    pub first_hop_budget: u32,
    /// ISD: per-receiver cap, cells per timeslot = num / den.
    pub isd_cap_num: u64,
    pub isd_cap_den: u64,
    /// RD / NDP: initial window (cells), cells per PULL, NDP queue cap (cells per queue).
    pub init_window: u32,
    pub pull_every: u32,
    pub ndp_queue: u32,
    pub fail_nodes: Vec<u32>,
    /// Failed links as node pairs [a0, b0, a1, b1, ...] (both directions fail).
    pub fail_links: Vec<u32>,
    /// Send invalidation tokens after failures (docs/arch/shale.md#failures-and-invalidation).
    pub invalidation: bool,
    /// A header's two token fields while invalidations are queued: false = the link's two
    /// oldest tokens, invalidations and hop-by-hop alike; true = one of each kind when
    /// both wait (the paper does not say; docs/arch/shale.md).
    pub token_one_each: bool,
    /// All failed nodes and links recover at this time (u64::MAX = never).
    pub recover_at_ps: Ps,
    pub fail_at_ps: Ps,
    pub flow_start_ps: Vec<Ps>,
    pub flow_src: Vec<u32>,
    pub flow_dst: Vec<u32>,
    pub flow_size: Vec<u64>,
    pub seed: u64,
    pub duration_ps: Ps,
    /// Sample the network-wide time series every this many ps (0 = never).
    pub sample_ps: Ps,
    /// OpenOptics infrastructure services (see the module doc).
    pub services: crate::spec::Services,
    /// Threads of the window engine (0 or 1: one). Results do not depend on it.
    pub threads: u32,
}

/// Deterministic hasher for u64 keys (never iterated).
#[derive(Default)]
struct MixHasher(u64);
impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ b as u64 ^ (self.0 >> 56);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 ^= i;
    }
}
type Map = crate::flatmap::FlatMap;
/// The two halves of an `outstanding` value.
const LO: u64 = 0xffff_ffff;
const HI: u64 = 1 << 32;

#[inline]
fn key(x: u32, k: u32, d: u32, r: u8) -> u64 {
    ((x as u64) << 44) | ((k as u64) << 23) | ((d as u64) << 3) | r as u64
}

/// A cell in the pool: 28 bytes padded to 32, so that no cell straddles two cache lines
/// (its priority is its flow's, looked up in `f_prio`).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Cell {
    flow: u32,
    dst: u32,
    /// Node it came from (NONE at its source) and that node's neighbour index here.
    prev: u32,
    back_k: u32,
    next: u32,
    bytes: u32,
    /// Remaining sprays now, and the bucket index it arrived in.
    r: u8,
    r_in: u8,
    sigma: u8,
    hops: u8,
}

const _: () = assert!(std::mem::size_of::<Cell>() == 32);

/// A bucket ⟨d, r⟩ in a per-link PIEO: its FIFO of cells and the next bucket. 16 bytes,
/// aligned, so an entry never straddles two cache lines (destination in the low 24 bits,
/// remaining sprays in the high 8).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct PEntry {
    dr: u32,
    head: u32,
    tail: u32,
    next: u32,
}

impl PEntry {
    #[inline]
    fn new(d: u32, r: u8, head: u32, tail: u32, next: u32) -> PEntry {
        PEntry { dr: d | (r as u32) << 24, head, tail, next }
    }
    #[inline]
    fn d(&self) -> u32 {
        self.dr & 0xff_ffff
    }
    #[inline]
    fn r(&self) -> u8 {
        (self.dr >> 24) as u8
    }
}

const _: () = assert!(std::mem::size_of::<PEntry>() == 16);

/// Per (node, neighbour index) queue heads, in one aligned 16-byte record so that a
/// visit or an enqueue touches one cache line: the PIEO of buckets (head, tail) and the
/// token queue (head, tail). Whether the node is on the active list of that index is a
/// bit apart (`listed`), small enough to stay cached.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Link {
    ph: u32,
    pt: u32,
    th: u32,
    tt: u32,
}

impl Default for Link {
    fn default() -> Self {
        Link { ph: NONE, pt: NONE, th: NONE, tt: NONE }
    }
}

const _: () = assert!(std::mem::size_of::<Link>() == 16);

#[derive(Clone, Copy)]
struct Tok {
    d: u32,
    r: u8,
    next: u32,
    /// Position in its node's token order (only kept when invalidation broadcasts exist).
    seq: u32,
}

#[derive(Clone, Copy)]
struct Flight {
    cell: u32,
    to: u32,
    from: u32,
    /// Receiver's neighbour index for the sender.
    k_back: u32,
    phase: u8,
    sigma: u8,
    ntok: u8,
    tok: [(u32, u8); 2],
}

pub const DROP_REASONS: [&str; 3] = ["failed_node", "no_route", "failed_link"];

/// What a run returns.
#[derive(Debug, Clone, Default)]
pub struct ShaleOutput {
    /// The counters every engine reports.
    pub totals: crate::metrics::RunTotals,
    /// The cell ledger, as the packet engine reports its packets (see the module doc).
    pub packets: crate::sim::PacketTotals,
    pub timeslots: u64,
    /// Time-weighted histogram of per-node buffered cells: hist[v] = node-timeslots at v.
    pub buffer_hist: Vec<u64>,
    pub metrics: Vec<(String, f64)>,
    /// Network-wide samples, one per `sample_ps` (and one at the end).
    pub series: Vec<Sample>,
}

/// One network-wide sample of the time series: levels at `time_ps`, counters since the
/// previous sample.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub time_ps: Ps,
    /// Cells queued at nodes (all nodes) and the largest per-node queue in the interval.
    pub buffered_cells: u64,
    pub max_node_cells: u32,
    /// Flow bytes not yet cut into cells at their sources.
    pub unsent_bytes: u64,
    /// Payload bytes delivered, cells sent (cell-hops) and bytes dropped in the interval.
    pub delivered_bytes: u64,
    pub cell_hops: u64,
    pub dropped_bytes: u64,
    /// Cells cut from flows at their sources in the interval; sources with unsent data.
    pub new_cells: u64,
    pub backlogged_sources: u64,
}

crate::with_totals!(ShaleOutput);

/// The Shale engine.
pub struct ShaleSim {
    plan: Plan,
    svc: crate::services::SlotServices,
    /// Push-back delay (timeslots): one propagation delay.
    pb_delay: u64,
    n: u32,
    kk: u32,
    tau: Ps,
    d: u64,
    slot_ps: Ps,
    prop_ps: Ps,
    payload: u64,
    guard_ok: bool,
    cc: Cc,
    t_budget: u32,
    tf_budget: u32,
    cutoff: u64,
    end_tick: u64,
    t: u64,
    ring: Vec<Vec<Flight>>,
    /// Seed of the spraying draws and the draws made so far at each node: a draw is a
    /// hash of (seed, node, count), so it does not depend on the order nodes are served.
    spray_seed: u64,
    spray_ctr: Vec<u64>,
    ctrl_rng: Stream,
    tp: transport::Transport,
    // flows
    f_start: Vec<u64>,
    f_src: Vec<u32>,
    f_dst: Vec<u32>,
    f_size: Vec<u64>,
    f_unsent: Vec<u64>,
    f_deliv: Vec<u64>,
    f_finish: Vec<u64>,
    f_hops: Vec<u32>,
    f_sigma: Vec<u8>,
    f_prio: Vec<u64>,
    next_flow: usize,
    local: Vec<Vec<u32>>,
    src_list: Vec<Vec<u32>>,
    src_listed: Vec<u8>,
    /// (source, sub-schedule) pairs with unsent flow data.
    backlogged: u64,
    // per (node, neighbour index)
    lk: Vec<Link>,
    /// One bit per (node, neighbour index): on the active list of that index.
    listed: Vec<u64>,
    qcells: Vec<u32>,
    active: Vec<Vec<u32>>,
    scratch: Vec<u32>,
    // pools
    cells: Vec<Cell>,
    free_cells: Vec<u32>,
    entries: Vec<PEntry>,
    free_entries: Vec<u32>,
    toks: Vec<Tok>,
    free_toks: Vec<u32>,
    // hop-by-hop state
    /// Hop-by-hop credits per link bucket, keyed by the sender's side (x, k, d, r): low
    /// 32 bits cells sent and not yet acknowledged by a token, high 32 bits those of
    /// them held at the receiver (the receiver-side check of the budget).
    outstanding: Map,
    /// Neighbour index at the peer of every neighbour index (the link's other end).
    rev_k: Vec<u32>,
    nbuckets: Vec<u32>,
    /// PIEO entries per (node, bucket) and distinct buckets per node.
    bucket_ref: Map,
    ndistinct: Vec<u32>,
    max_distinct: u32,
    // per node
    buf: Vec<u32>,
    buf_last: Vec<u64>,
    hist: Vec<u64>,
    visited: Vec<u64>,
    rx_stamp: Vec<u64>,
    // failures
    failed: Vec<bool>,
    any_failed: bool,
    fail_tick: u64,
    rec_tick: u64,
    revive: HashMap<u64, u64, BuildHasherDefault<MixHasher>>,
    redet_events: Vec<(u64, u32, u32)>,
    redet_next: usize,
    /// Destinations each node sent invalidations about (since it last re-validated them).
    sent_dsts: HashMap<u32, Vec<u32>, BuildHasherDefault<MixHasher>>,
    revalidation_tokens: u64,
    fail_list: Vec<u32>,
    detect: HashMap<u64, u64, BuildHasherDefault<MixHasher>>,
    down_links: HashMap<u64, u64, BuildHasherDefault<MixHasher>>,
    // invalidation tokens: received {j, n} per (node, k, j, n); tokens sent; detection
    // events (tick, node, peer)
    /// Invalidations received and sent, per (node, destination, n).
    inval: invalidation::NbrSets,
    /// Largest h of the sub-schedules (n < hmax).
    hmax: u8,
    bc: invalidation::Bcasts,
    det_events: Vec<(u64, u32, u32)>,
    det_next: usize,
    invalidation: bool,
    token_one_each: bool,
    inval_tokens: u64,
    inval_requeued: u64,
    link_list: Vec<(u32, u32)>,
    // counters
    events: u64,
    packet_hops: u64,
    collisions: u64,
    guard_viol: u64,
    hbh_viol: u64,
    /// Offered, delivered and lost payload; cells sent, delivered, dropped and trimmed
    /// (reasons: `DROP_REASONS`).
    ledger: Ledger,
    flows_started: u64,
    flows_completed: u64,
    hash: crate::trace::TraceHash,
    sends_cells: u64,
    sends_token_only: u64,
    tokens_sent: u64,
    new_cells: u64,
    skipped_sprays: u64,
    max_pieo: u32,
    max_buckets: u32,
    max_buf: u32,
    max_outstanding_entries: usize,
    /// Sum over timeslots of the cells in flight (for their time average).
    live_sum: u64,
    // time series
    sample_ticks: u64,
    series: Vec<Sample>,
    total_buf: u64,
    unsent_total: u64,
    interval_max_buf: u32,
    last_sample: Sample,
}

/// A Shale run on one of the two engines: [`ShaleSim`] serves the network timeslot by
/// timeslot and covers every option; [`window::WindowSim`] serves it node by node in
/// windows of D timeslots, is several times faster at scale, and covers the options
/// whose interactions all travel as flights. Their outputs are identical where both apply.
pub enum ShaleRun {
    Timeslot(Box<ShaleSim>),
    Window(Box<window::WindowSim>),
}

impl ShaleRun {
    /// `engine`: "auto" (the window engine when the spec allows it), "window" or
    /// "timeslot".
    pub fn new(s: ShaleSpec, engine: &str) -> Result<Self, SpecError> {
        let win = match engine {
            "auto" => window::eligible(&s).is_none(),
            "window" => {
                if let Some((field, why)) = window::eligible(&s) {
                    return Err(SpecError::new("engine", "window", format!("{why} ({field})")));
                }
                true
            }
            "timeslot" => false,
            other => return Err(SpecError::new("engine", other, "expected auto, window or timeslot")),
        };
        Ok(if win {
            ShaleRun::Window(Box::new(window::WindowSim::new(s)?))
        } else {
            ShaleRun::Timeslot(Box::new(ShaleSim::new(s)?))
        })
    }

    pub fn engine(&self) -> &'static str {
        match self {
            ShaleRun::Timeslot(_) => "timeslot",
            ShaleRun::Window(_) => "window",
        }
    }
    pub fn run_until(&mut self, until_ps: Ps) {
        match self {
            ShaleRun::Timeslot(s) => s.run_until(until_ps),
            ShaleRun::Window(s) => s.run_until(until_ps),
        }
    }
    pub fn output(&self) -> ShaleOutput {
        match self {
            ShaleRun::Timeslot(s) => s.output(),
            ShaleRun::Window(s) => s.output(),
        }
    }
    pub fn now(&self) -> Ps {
        match self {
            ShaleRun::Timeslot(s) => s.now(),
            ShaleRun::Window(s) => s.now(),
        }
    }
    /// Running totals, cheap to read between steps: (timeslots run, cell-hops, sum over
    /// the timeslots run of the cells alive at each).
    pub fn progress(&self) -> (u64, u64, u64) {
        match self {
            ShaleRun::Timeslot(s) => (s.t, s.packet_hops, s.live_sum),
            ShaleRun::Window(s) => s.progress(),
        }
    }
    pub fn tau_ps(&self) -> Ps {
        match self {
            ShaleRun::Timeslot(s) => s.tau_ps(),
            ShaleRun::Window(s) => s.tau_ps(),
        }
    }
    pub fn hop_delay(&self) -> u64 {
        match self {
            ShaleRun::Timeslot(s) => s.hop_delay(),
            ShaleRun::Window(s) => s.hop_delay(),
        }
    }
    pub fn peer(&self, x: u32, t: u64) -> u32 {
        match self {
            ShaleRun::Timeslot(s) => s.peer(x, t),
            ShaleRun::Window(s) => s.peer(x, t),
        }
    }
}

/// Check a spec's schedule, timing, budgets and flow columns; its schedule plan.
pub(crate) fn plan_of(s: &ShaleSpec) -> Result<Plan, SpecError> {
    let n = s.nodes;
    if n > (1 << 20) {
        return Err(SpecError::new("nodes", n, "at most 2^20 nodes"));
    }
    let mut subs = vec![Ebs::new(n, s.h)?];
    if s.h_hi != 0 {
        if s.h_hi == s.h {
            return Err(SpecError::new("interleave", s.h_hi, "the interleaved sub-schedule needs a different h"));
        }
        subs.push(Ebs::new(n, s.h_hi).map_err(|e| SpecError::new("interleave", s.h_hi, format!("{}", e)))?);
    }
    let plan = Plan::new(subs, s.inter_num, s.inter_den.max(1))?;
    if s.lanes == 0 || s.slot_ps == 0 || !s.slot_ps.is_multiple_of(s.lanes as u64) {
        return Err(SpecError::new("lanes", s.lanes, "the slot must be a whole number of picoseconds per lane"));
    }
    if s.guard_ps >= s.slot_ps {
        return Err(SpecError::new("guardband", s.guard_ps, "must be shorter than the slot"));
    }
    if s.cell_bytes <= s.header_bytes {
        return Err(SpecError::new("cell", s.cell_bytes, "must be larger than the header"));
    }
    if s.lane_rate_bps == 0 {
        return Err(SpecError::new("lane_rate", 0, "must be positive"));
    }
    if s.token_budget == 0 || s.first_hop_budget == 0 {
        return Err(SpecError::new("token_budget", s.token_budget.min(s.first_hop_budget), "budgets must be >= 1"));
    }
    let nf = s.flow_src.len();
    if s.flow_dst.len() != nf || s.flow_size.len() != nf || s.flow_start_ps.len() != nf {
        return Err(SpecError::new("flows", nf, "flow columns differ in length"));
    }
    for i in 0..nf {
        if s.flow_src[i] >= n || s.flow_dst[i] >= n || s.flow_src[i] == s.flow_dst[i] {
            return Err(SpecError::new("flows", i, "src/dst out of range or equal"));
        }
        if i > 0 && s.flow_start_ps[i] < s.flow_start_ps[i - 1] {
            return Err(SpecError::new("flows", i, "flows must be sorted by start"));
        }
    }
    Ok(plan)
}

impl ShaleSim {
    pub fn new(s: ShaleSpec) -> Result<Self, SpecError> {
        let plan = plan_of(&s)?;
        let n = s.nodes;
        let kk = plan.k_total();
        let nf = s.flow_src.len();
        let tau = s.slot_ps / s.lanes as u64;
        let d = (s.slot_ps + s.prop_ps).div_ceil(tau);
        let payload = (s.cell_bytes - s.header_bytes) as u64;
        let guard_ok = tx_time_ps(s.cell_bytes as u64, s.lane_rate_bps) + s.guard_ps <= s.slot_ps;
        let nsub = plan.subs.len();
        let f_sigma: Vec<u8> = s.flow_size.iter().map(|&z| (nsub == 2 && z <= s.cutoff_bytes) as u8).collect();
        let f_prio = (0..nf)
            .map(|i| {
                let e = plan.subs[f_sigma[i] as usize].epoch() as u64;
                s.flow_start_ps[i].div_ceil(tau) + s.flow_size[i].div_ceil(payload) * e
            })
            .collect();
        let mut failed = vec![false; n as usize];
        for &f in &s.fail_nodes {
            if f >= n {
                return Err(SpecError::new("fail_nodes", f, "node out of range"));
            }
            failed[f as usize] = true;
        }
        if !s.fail_links.len().is_multiple_of(2) {
            return Err(SpecError::new("fail_links", s.fail_links.len(), "expected node pairs"));
        }
        let mut link_list = Vec::new();
        for pr in s.fail_links.chunks(2) {
            let (a, b) = (pr[0].min(pr[1]), pr[0].max(pr[1]));
            if b >= n || a == b {
                return Err(SpecError::new("fail_links", format!("{a}-{b}"), "not a pair of distinct nodes"));
            }
            link_list.push((a, b));
        }
        link_list.sort_unstable();
        link_list.dedup();
        let mut fail_list: Vec<u32> = s.fail_nodes.clone();
        fail_list.sort_unstable();
        fail_list.dedup();
        let fail_tick = s.fail_at_ps.div_ceil(tau);
        let nk = n as usize * kk as usize;
        let mut sim = ShaleSim {
            svc: crate::services::SlotServices::new(s.services, "shale")?,
            pb_delay: s.prop_ps.div_ceil(tau),
            n,
            kk,
            tau,
            d,
            slot_ps: s.slot_ps,
            prop_ps: s.prop_ps,
            payload,
            guard_ok,
            cc: s.cc,
            t_budget: s.token_budget,
            tf_budget: s.first_hop_budget,
            cutoff: s.cutoff_bytes,
            end_tick: s.duration_ps.div_ceil(tau),
            t: 0,
            ring: (0..=d).map(|_| Vec::new()).collect(),
            spray_seed: Stream::new(s.seed, "shale.spray").next_u64(),
            spray_ctr: vec![0; n as usize],
            ctrl_rng: Stream::new(s.seed, "shale.control"),
            tp: transport::Transport::default(),
            f_start: s.flow_start_ps.iter().map(|&p| p.div_ceil(tau)).collect(),
            f_unsent: vec![0; nf],
            f_deliv: vec![0; nf],
            f_finish: vec![u64::MAX; nf],
            f_hops: vec![0; nf],
            f_sigma,
            f_prio,
            f_src: s.flow_src,
            f_dst: s.flow_dst,
            f_size: s.flow_size,
            next_flow: 0,
            local: (0..n as usize * nsub).map(|_| Vec::new()).collect(),
            src_list: (0..nsub).map(|_| Vec::new()).collect(),
            src_listed: vec![0; n as usize],
            backlogged: 0,
            lk: vec![Link::default(); nk],
            listed: vec![0; nk.div_ceil(64)],
            qcells: vec![0; nk],
            active: (0..kk).map(|_| Vec::new()).collect(),
            scratch: Vec::new(),
            cells: Vec::new(),
            free_cells: Vec::new(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            toks: Vec::new(),
            free_toks: Vec::new(),
            outstanding: Map::default(),
            rev_k: Vec::new(),
            nbuckets: vec![0; n as usize],
            bucket_ref: Map::default(),
            ndistinct: vec![0; n as usize],
            max_distinct: 0,
            buf: vec![0; n as usize],
            buf_last: vec![0; n as usize],
            hist: vec![0; 1],
            visited: vec![u64::MAX; n as usize],
            rx_stamp: vec![u64::MAX; n as usize],
            any_failed: !fail_list.is_empty() || !link_list.is_empty(),
            failed,
            fail_tick,
            rec_tick: if s.recover_at_ps == u64::MAX { u64::MAX } else { s.recover_at_ps.div_ceil(tau) },
            revive: Default::default(),
            redet_events: Vec::new(),
            redet_next: 0,
            sent_dsts: Default::default(),
            revalidation_tokens: 0,
            fail_list,
            detect: Default::default(),
            down_links: Default::default(),
            inval: invalidation::NbrSets::new(kk),
            hmax: 1,
            bc: Default::default(),
            det_events: Vec::new(),
            det_next: 0,
            invalidation: s.invalidation,
            token_one_each: s.token_one_each,
            inval_tokens: 0,
            inval_requeued: 0,
            link_list: Vec::new(),
            events: 0,
            packet_hops: 0,
            collisions: 0,
            guard_viol: 0,
            hbh_viol: 0,
            ledger: Ledger::new(DROP_REASONS.len()),
            flows_started: 0,
            flows_completed: 0,
            hash: crate::trace::TraceHash::start(),
            sends_cells: 0,
            sends_token_only: 0,
            tokens_sent: 0,
            new_cells: 0,
            skipped_sprays: 0,
            max_pieo: 0,
            max_buckets: 0,
            max_buf: 0,
            max_outstanding_entries: 0,
            live_sum: 0,
            sample_ticks: if s.sample_ps == 0 { 0 } else { s.sample_ps.div_ceil(tau).max(1) },
            series: Vec::new(),
            total_buf: 0,
            unsent_total: 0,
            interval_max_buf: 0,
            last_sample: Sample::default(),
            plan,
        };
        sim.rev_k = (0..kk)
            .map(|k| {
                let (sg, p, j) = sim.plan.index_entry(k);
                let m = sim.plan.subs[sg].m;
                sim.plan.koff[sg] + p * (m - 1) + (m - j) - 1
            })
            .collect();
        sim.link_list = link_list;
        for &(a, b) in &sim.link_list {
            sim.down_links.insert(((a as u64) << 32) | b as u64, 0);
        }
        sim.precompute_detection();
        if !s.invalidation {
            sim.det_events.clear();
            sim.redet_events.clear();
        } else if sim.any_failed {
            sim.bc = invalidation::Bcasts::new(&sim.plan, n);
        }
        sim.hmax = sim.plan.subs.iter().map(|s| s.h).max().unwrap_or(1) as u8;
        if sim.e2e() {
            if s.pull_every == 0 || s.init_window == 0 || s.ndp_queue == 0 {
                return Err(SpecError::new("pull_every", s.pull_every, "window, cells per PULL and NDP queue must be >= 1"));
            }
            if s.isd_cap_num == 0 || s.isd_cap_den == 0 || s.isd_cap_num > 8 * s.isd_cap_den {
                return Err(SpecError::new("isd_cap", format!("{}/{}", s.isd_cap_num, s.isd_cap_den),
                                          "the ISD cap must be in (0, 8] cells per timeslot"));
            }
            let tp = &mut sim.tp;
            tp.isd_a = vec![0; n as usize];
            tp.isd_last = vec![0; n as usize];
            tp.isd_n = vec![0; n as usize];
            tp.isd_cap = ((s.isd_cap_num as u128 * transport::ONE as u128) / s.isd_cap_den as u128) as u64;
            tp.f_base = vec![0; nf];
            tp.f_cells = vec![0; nf];
            tp.f_granted = vec![0; nf];
            tp.f_credit = vec![0; nf];
            tp.f_rcv = vec![0; nf];
            tp.f_resend = vec![0; nf];
            tp.window = s.init_window;
            tp.pull_every = s.pull_every;
            tp.ndp_queue = s.ndp_queue;
        }
        Ok(sim)
    }

    /// Timeslot duration τ (ps) and per-hop delay D (timeslots).
    pub fn tau_ps(&self) -> Ps {
        self.tau
    }

    pub fn hop_delay(&self) -> u64 {
        self.d
    }

    pub fn now(&self) -> Ps {
        self.t * self.tau
    }

    /// The node x sends to in timeslot t.
    pub fn peer(&self, x: u32, t: u64) -> u32 {
        let (s, p, j, _) = self.plan.slot(t);
        self.plan.subs[s].tx_peer(x, p, j)
    }

    /// Index of (node, neighbour index) in the per-link arrays, laid out by k then node
    /// so that one timeslot's visits stay within one contiguous row.
    #[inline]
    fn ix(&self, x: u32, k: u32) -> usize {
        k as usize * self.n as usize + x as usize
    }

    /// Index into `qcells`, laid out by node then k (spray-short scans a phase's row).
    #[inline]
    fn qx(&self, x: u32, k: u32) -> usize {
        x as usize * self.kk as usize + k as usize
    }

    #[inline]
    fn is_dead(&self, x: u32, t: u64) -> bool {
        self.any_failed && self.failed[x as usize] && t >= self.fail_tick && t < self.rec_tick
    }

    /// Has live node x noticed that neighbour z failed, by timeslot t?
    #[inline]
    fn knows_dead(&self, x: u32, z: u32, t: u64) -> bool {
        if !self.any_failed || t < self.fail_tick || (!self.failed[z as usize] && self.link_list.is_empty()) {
            return false;
        }
        let kx = ((x as u64) << 32) | z as u64;
        match self.detect.get(&kx) {
            Some(&dt) => t >= dt && (t < self.rec_tick || self.revive.get(&kx).is_none_or(|&rt| t < rt)),
            None => false,
        }
    }

    #[inline]
    fn budget(&self, sigma: u8, r: u8) -> u32 {
        token_budget(&self.plan, self.t_budget, self.tf_budget, sigma, r)
    }

    #[inline]
    fn has_credit(&self, x: u32, k: u32, d: u32, rz: u8, sigma: u8) -> bool {
        let used = (self.outstanding.get(key(x, k, d, rz)).unwrap_or(0) & LO) as u32;
        used < self.budget(sigma, rz)
    }

    /// Run every timeslot that starts before `until_ps` (and before the end of the run).
    pub fn run_until(&mut self, until_ps: Ps) {
        let stop = until_ps.div_ceil(self.tau).min(self.end_tick);
        while self.t < stop {
            let t = self.t;
            self.step(t);
            self.t += 1;
        }
    }
}

#[cfg(test)]
mod tests;
