//! Shale's window engine: the model of [`ShaleSim`], served node by node.
//!
//! A cell sent in timeslot t is received in timeslot t + D (D, the hop delay, is at least
//! one timeslot), so within any window of at most D timeslots the nodes do not interact:
//! what a node does in the window depends only on its own state and on flights sent
//! before the window. This engine therefore runs one node through the whole window
//! before it turns to the next. A node's queues, cells, tokens, credits and holds live
//! in its own small arena and its link records sit side by side, so serving it touches a
//! few kilobytes that stay in cache, where the timeslot-major engine touches randomly
//! placed lines of network-wide pools for every cell-hop. Windows are aligned to
//! multiples of D, so every flight sent in window w arrives in window w + 1: flights are
//! appended to one log as they are sent, grouped by receiver (a counting sort) when the
//! next window starts, and each receiver lays its own out by timeslot (the schedule
//! gives a node one sender per timeslot). No cell-hop writes to a random place.
//!
//! It covers the configurations whose interactions all travel as flights: congestion
//! control `none`, `hbh`, `spray` and `hbh+spray`, interleaving, time series. Failures,
//! the infrastructure services, `priority` and the end-to-end transports run on
//! [`ShaleSim`] ([`eligible`] says why not). Both engines make the same decisions in the
//! same per-node order (spraying draws are keyed by node and draw count, network-wide
//! sums do not depend on the order nodes are served), so their outputs are identical:
//! the tests compare them field by field on a grid of configurations.
//!
//! With one sub-schedule a node jumps from event to event (an arrival, a new flow, a
//! timeslot whose neighbour has cells or tokens queued, every timeslot while it has
//! unsent data), so an idle stretch costs nothing. While a node is served, the next
//! node's arena and link row are prefetched into L2, a few lines per event (all at once,
//! a few hundred hints stall the core on its miss buffers: at 50 625 nodes, h = 2, that
//! cost a fifth of the run). The engine is then bound by instructions, not memory: about
//! a thousand per cell sent, spread over PIEO walks, credit checks, tokens, routing and
//! the metrics.
//!
//! Because nodes do not interact within a window, the nodes can also be served in
//! parallel (`threads` in the spec): worker i serves a contiguous range of nodes with its
//! own flight log, per-timeslot deltas and counters, and owns its nodes' arenas, link
//! records and link bits. The logs are read in node order and the sums and maxima
//! merged, so a run's results do not depend on the number of threads.
//!
//! Network-wide levels of the time series (queued cells, unsent bytes, backlogged
//! sources, the cells in flight behind `mean_cells_in_flight`) are kept as per-timeslot
//! deltas during a window and summed in timeslot order after it.

mod output;
mod serve;

use super::schedule::Plan;
use super::{Cc, PEntry, Sample, ShaleSpec, Tok, DROP_REASONS};
use crate::error::SpecError;
use crate::ledger::Ledger;
use crate::packedmap::PackedMap;
use crate::prefetch::Spread;
use crate::rng::Stream;
use crate::units::{tx_time_ps, Ps, NONE};

/// Why a spec cannot run on the window engine (None: it can).
pub fn eligible(s: &ShaleSpec) -> Option<(&'static str, String)> {
    if !s.fail_nodes.is_empty() || !s.fail_links.is_empty() {
        return Some(("fail_nodes", "failures need the timeslot engine".into()));
    }
    if !matches!(s.cc, Cc::None | Cc::Hbh | Cc::Spray | Cc::HbhSpray) {
        return Some(("cc", format!("--cc {} needs the timeslot engine", s.cc.name())));
    }
    let v = &s.services;
    if v.congestion_detection || v.pushback || v.flow_pausing {
        return Some(("services", "the infrastructure services need the timeslot engine".into()));
    }
    if s.token_budget.max(s.first_hop_budget) > INLINE_MAX {
        return Some(("token_budget", format!("budgets above {INLINE_MAX} cells need the timeslot engine")));
    }
    None
}

/// Per (node, neighbour index): the PIEO of buckets and the token queue (heads and
/// tails), and inline up to two credit counters (this link's buckets with cells sent and
/// not yet acknowledged) and two hold counters (cells received from this neighbour and
/// held here, by bucket); more spill into the node's tables. The visit and the receipt
/// that use a link's counters touch its record anyway, so most counter updates cost no
/// extra memory access. A counter slot: bucket d | r << 20 in the low 23 bits, count in
/// the high 9 (0 = free).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct WLink {
    ph: u32,
    pt: u32,
    th: u32,
    tt: u32,
    cr: [u32; 2],
    ho: [u32; 2],
}

impl Default for WLink {
    fn default() -> Self {
        WLink { ph: NONE, pt: NONE, th: NONE, tt: NONE, cr: [0; 2], ho: [0; 2] }
    }
}

const _: () = assert!(std::mem::size_of::<WLink>() == 32);

const BMASK: u32 = (1 << 23) - 1;
/// Lines of the next node's memory prefetched per event of the served node.
const PF_STEP: usize = 4;
/// Largest count an inline slot holds (budgets above it run on the timeslot engine).
const INLINE_MAX: u32 = 511;

#[inline]
fn bkey(d: u32, r: u8) -> u32 {
    d | (r as u32) << 20
}

/// Count of bucket b: inline slots s, else the spill table under key sk.
#[inline]
fn cnt_get(s: &[u32; 2], spill: &PackedMap, sk: u64, b: u32) -> u32 {
    for &v in s {
        if v >> 23 != 0 && v & BMASK == b {
            return v >> 23;
        }
    }
    if spill.is_empty() {
        0
    } else {
        spill.get(sk)
    }
}

/// Add one to bucket b's count; the new count.
#[inline]
fn cnt_incr(s: &mut [u32; 2], spill: &mut PackedMap, sk: u64, b: u32) -> u32 {
    for v in s.iter_mut() {
        if *v >> 23 != 0 && *v & BMASK == b {
            let c = ((*v >> 23) + 1).min(INLINE_MAX);
            *v = b | c << 23;
            return c;
        }
    }
    if !spill.is_empty() && spill.contains_key(sk) {
        return spill.incr(sk);
    }
    for v in s.iter_mut() {
        if *v >> 23 == 0 {
            *v = b | 1 << 23;
            return 1;
        }
    }
    spill.incr(sk)
}

/// Subtract one from bucket b's count if it is positive.
#[inline]
fn cnt_decr(s: &mut [u32; 2], spill: &mut PackedMap, sk: u64, b: u32) {
    for v in s.iter_mut() {
        if *v >> 23 != 0 && *v & BMASK == b {
            let c = (*v >> 23) - 1;
            *v = if c == 0 { 0 } else { b | c << 23 };
            return;
        }
    }
    if !spill.is_empty() {
        spill.decr_sat(sk);
    }
}

/// A cell queued at a node: 24 bytes.
#[derive(Clone, Copy)]
#[repr(C)]
struct QCell {
    flow: u32,
    dst: u32,
    bytes: u32,
    /// This node's neighbour index for the node it came from (NONE at its source).
    back_k: u32,
    next: u32,
    r: u8,
    r_in: u8,
    sigma: u8,
    hops: u8,
}

/// A flight: a cell (`cell` = 1) and up to two tokens (d | r << 24).
/// Its sender, the sender's link and the phase follow from the arrival timeslot.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Fl {
    flow: u32,
    dst: u32,
    bytes: u32,
    tok: [u32; 2],
    r: u8,
    hops: u8,
    ntok: u8,
    cell: u8,
}

impl Fl {
    #[inline]
    fn vacant(&self) -> bool {
        self.cell == 0 && self.ntok == 0
    }
}

/// A flow with data not yet cut into cells, at its source.
#[derive(Clone, Copy)]
struct LFlow {
    flow: u32,
    dst: u32,
    unsent: u64,
}

/// Per-flow results, side by side (one cache line touched per delivery).
#[derive(Clone, Copy)]
struct FlowRec {
    size: u64,
    deliv: u64,
    finish: u64,
    hops: u32,
}

/// One node's arena.
struct Node {
    cells: Vec<QCell>,
    free_cells: Vec<u32>,
    entries: Vec<PEntry>,
    free_entries: Vec<u32>,
    toks: Vec<Tok>,
    free_toks: Vec<u32>,
    /// Counters that did not fit in their link record: credits used per own link
    /// bucket (k, d, r) and cells held per upstream link bucket (k_back, d, r).
    credit: PackedMap,
    hold: PackedMap,
    local: [Vec<LFlow>; 2],
    buf: u32,
    buf_last: u64,
    nbuckets: u32,
    ntoks: u32,
    draws: u64,
}

impl Node {
    fn new() -> Node {
        Node {
            cells: Vec::new(),
            free_cells: Vec::new(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            toks: Vec::new(),
            free_toks: Vec::new(),
            credit: PackedMap::new(),
            hold: PackedMap::new(),
            local: [Vec::new(), Vec::new()],
            buf: 0,
            buf_last: 0,
            nbuckets: 0,
            ntoks: 0,
            draws: 0,
        }
    }

    /// Queue this node's pools and tables for prefetching: it is served next.
    fn queue_prefetch(&self, pf: &mut Spread) {
        pf.add(&self.cells);
        pf.add(&self.entries);
        pf.add(&self.toks);
        pf.add(&self.local[0]);
        // the ends of the free lists (the next pops)
        for f in [&self.free_cells, &self.free_entries, &self.free_toks] {
            pf.add(&f[f.len().saturating_sub(8)..]);
        }
        pf.add(self.credit.slots());
        pf.add(self.hold.slots());
    }

    fn idle(&self) -> bool {
        self.buf == 0 && self.ntoks == 0 && self.local[0].is_empty() && self.local[1].is_empty()
    }
}

/// Network-wide changes during one timeslot of the window.
#[derive(Clone, Copy, Default)]
struct Acc {
    d_live: i64,
    d_buf: i64,
    d_unsent: i64,
    d_backlog: i64,
    deliv: u64,
    hops: u64,
    new: u64,
    /// Largest node queue set in the timeslot; largest node queue at its start (sample
    /// timeslots only).
    mx: u32,
    lvl: u32,
}

/// A flight sent in this window, to node `y`, arriving `at` timeslots into the next.
#[derive(Clone, Copy)]
struct Out {
    y: u32,
    at: u32,
    fl: Fl,
}

/// A flight of this window, grouped by receiver.
#[derive(Clone, Copy, Default)]
struct In {
    at: u32,
    fl: Fl,
}

/// Store x in pool v, in a freed slot if there is one; its index.
#[inline]
fn alloc<T>(v: &mut Vec<T>, free: &mut Vec<u32>, x: T) -> u32 {
    match free.pop() {
        Some(i) => {
            v[i as usize] = x;
            i
        }
        None => {
            v.push(x);
            (v.len() - 1) as u32
        }
    }
}

/// The first set bit at or after i (below w), else w.
#[inline]
fn next_bit(bits: &[u64], i: usize, w: usize) -> usize {
    let mut wi = i >> 6;
    let mut word = bits[wi] & (!0u64 << (i & 63));
    loop {
        if word != 0 {
            return (wi * 64 + word.trailing_zeros() as usize).min(w);
        }
        wi += 1;
        if wi * 64 >= w {
            return w;
        }
        word = bits[wi];
    }
}

/// The distance from k0 to the first set bit at or after it, going round kk bits.
#[inline]
fn next_bit_circ(bits: &[u64], k0: usize, kk: usize) -> Option<usize> {
    let j = next_bit(bits, k0, kk);
    if j < kk {
        return Some(j - k0);
    }
    let j = next_bit(bits, 0, k0.max(1));
    (j < k0).then(|| kk - k0 + j)
}

/// Key of link bucket (neighbour index k, destination d, remaining sprays r): 44 bits.
#[inline]
fn ck(k: u32, d: u32, r: u8) -> u64 {
    ((k as u64) << 23) | ((d as u64) << 3) | r as u64
}

/// Everything but the node arenas (so that a node and the rest borrow apart).
struct Ctx {
    plan: Plan,
    n: u32,
    kk: u32,
    tau: Ps,
    d: u64,
    slot_ps: Ps,
    prop_ps: Ps,
    payload: u64,
    guard_ok: bool,
    /// The congestion control has hop-by-hop tokens; spraying goes to the shortest queue.
    hbh: bool,
    spray_short: bool,
    t_budget: u32,
    tf_budget: u32,
    cutoff: u64,
    end_tick: u64,
    t: u64,
    spray_seed: u64,
    svc: crate::services::SlotServices,
    sample_ticks: u64,
    rev_k: Vec<u32>,
    /// Per sub-schedule: every node's coordinates (node · h + phase), m^phase, and
    /// reciprocals of m^phase and m for exact division by multiplication, so that the
    /// hot path divides nothing.
    coords: Vec<Vec<u32>>,
    pow: Vec<[u32; 4]>,
    inv_pow: Vec<[u64; 4]>,
    inv_m: Vec<u64>,
    // flows
    f_start: Vec<u64>,
    f_src: Vec<u32>,
    f_dst: Vec<u32>,
    f_sigma: Vec<u8>,
    f_size: Vec<u64>,
    next_flow: usize,
    // the current window
    w_slot: Vec<(u8, u32, u32, u32)>,
    w_src: Vec<(u8, u32, u32, u32)>,
    w_sample: Vec<bool>,
    /// Window indices of the sample timeslots.
    w_samples: Vec<usize>,
    lw: usize,
    starts_off: Vec<u32>,
    starts: Vec<u32>,
    /// Flights arriving in the current window, grouped by receiver (node y's at
    /// inb[inb_off[y]..inb_off[y + 1]]); the window they arrive in.
    inb: Vec<In>,
    /// Entries of `inb` that belong to the current window (the rest are stale).
    inb_len: usize,
    inb_off: Vec<u32>,
    cur_w: u64,
    // levels, summed after each window
    live: i64,
    live_sum: u64,
    cell_pool: i64,
    total_buf: i64,
    unsent_total: i64,
    backlogged: i64,
    imax: u32,
    series: Vec<Sample>,
    last_sample: Sample,
}

/// What one worker changes while it serves its range of nodes through a window: the
/// flights it sends, per-timeslot deltas, counters and scratch. Workers are merged in
/// node order, so the results do not depend on how many there are.
#[derive(Default)]
struct Work {
    /// The next node's memory, prefetched a few lines per event while a node is served.
    pf: Spread,
    /// One bit per timeslot of the window: the served node has an arrival.
    amask: Vec<u64>,
    win: Vec<Acc>,
    /// Flights sent in the current window, in the order of their senders.
    out: Vec<Out>,
    /// One node's arrivals laid out by timeslot of the window, and any second flight
    /// for the same timeslot (a collision; never by construction).
    slots: Vec<Fl>,
    extra: Vec<(usize, Fl)>,
    hist: Vec<u64>,
    // counters
    events: u64,
    packet_hops: u64,
    collisions: u64,
    guard_viol: u64,
    hbh_viol: u64,
    /// Offered and delivered payload; cells sent and delivered (as [`ShaleSim`]'s; the
    /// window engine drops nothing).
    lg: Ledger,
    flows_started: u64,
    flows_completed: u64,
    hash: crate::trace::TraceHash,
    sends_cells: u64,
    sends_token_only: u64,
    tokens_sent: u64,
    new_cells: u64,
    max_pieo: u32,
    max_buckets: u32,
    max_distinct: u32,
    /// Scratch for [`Srv::distinct_buckets`].
    scratch: Vec<u32>,
    max_buf: u32,
}

impl Work {
    fn new(d: usize) -> Work {
        Work {
            amask: vec![0; d.div_ceil(64)],
            slots: vec![Fl::default(); d],
            hist: vec![0; 1],
            lg: Ledger::new(DROP_REASONS.len()),
            ..Work::default()
        }
    }
}

/// The per-flow records, written during a window by the workers that deliver the flows'
/// cells (a flow has one destination, so one worker) and read after it.
#[derive(Clone, Copy)]
struct FrPtr(*mut FlowRec, usize);

// SAFETY: see [`FrPtr`]: no record is reached by two workers in one window.
unsafe impl Send for FrPtr {}
unsafe impl Sync for FrPtr {}

impl FrPtr {
    /// SAFETY: only the worker serving flow f's destination may call this in a window.
    #[inline]
    unsafe fn get<'a>(self, f: usize) -> &'a mut FlowRec {
        assert!(f < self.1);
        &mut *self.0.add(f)
    }
    #[inline]
    fn prefetch(self, f: usize) {
        if f < self.1 {
            // SAFETY: in bounds; a prefetch hint reads nothing
            crate::prefetch::read(unsafe { &*self.0.add(f) });
        }
    }
}

/// One worker serving nodes x0.. of its range: the shared context, its own [`Work`],
/// and the link records (`ko` = x0 · kk first) and link bits (`bo` = x0 · lw words
/// first) of its nodes.
struct Srv<'a> {
    cx: &'a Ctx,
    w: &'a mut Work,
    lk: &'a mut [WLink],
    qcells: &'a mut [u32],
    lbits: &'a mut [u64],
    ko: usize,
    bo: usize,
    fr: FrPtr,
}

impl std::ops::Deref for Srv<'_> {
    type Target = Ctx;
    #[inline]
    fn deref(&self) -> &Ctx {
        self.cx
    }
}

/// The window engine (see the module doc).
pub struct WindowSim {
    nodes: Vec<Node>,
    /// Links, node-major: (x, k) at x · kk + k; queued cells per link; one bit per
    /// (node, neighbour index): cells or tokens queued (`lw` words a node).
    lk: Vec<WLink>,
    qcells: Vec<u32>,
    lbits: Vec<u64>,
    fr: Vec<FlowRec>,
    /// One per thread; worker i serves nodes bounds[i]..bounds[i + 1].
    works: Vec<Work>,
    bounds: Vec<u32>,
    cx: Ctx,
}

impl WindowSim {
    pub fn new(s: ShaleSpec) -> Result<Self, SpecError> {
        let plan = super::plan_of(&s)?;
        if let Some((field, why)) = eligible(&s) {
            return Err(SpecError::new(field, "window engine", &why));
        }
        let svc = crate::services::SlotServices::new(s.services, "shale")?;
        let n = s.nodes;
        let kk = plan.k_total();
        let tau = s.slot_ps / s.lanes as u64;
        let d = (s.slot_ps + s.prop_ps).div_ceil(tau);
        let payload = (s.cell_bytes - s.header_bytes) as u64;
        let nsub = plan.subs.len();
        let f_sigma: Vec<u8> = s.flow_size.iter().map(|&z| (nsub == 2 && z <= s.cutoff_bytes) as u8).collect();
        let rev_k = (0..kk)
            .map(|k| {
                let (sg, p, j) = plan.index_entry(k);
                let m = plan.subs[sg].m;
                plan.koff[sg] + p * (m - 1) + (m - j) - 1
            })
            .collect();
        let nk = n as usize * kk as usize;
        // the per-node and per-link state, refused before it is allocated when it cannot fit
        let lw0 = (kk as usize).div_ceil(64);
        let need = n as u64 * (std::mem::size_of::<Node>() as u64 + 8 * lw0 as u64 + 64)
            + nk as u64 * (std::mem::size_of::<WLink>() as u64 + 8);
        crate::error::check_memory("nodes", n, need, &format!("Shale's state for {n} nodes x {kk} links"))?;
        let coords = plan.subs.iter().map(|e| (0..n).flat_map(|x| (0..e.h).map(move |p| e.coord(x, p))).collect()).collect();
        let pow: Vec<[u32; 4]> = plan.subs.iter().map(|e| {
            let mut a = [0u32; 4];
            for p in 0..e.h as usize {
                a[p] = e.m.pow(p as u32);
            }
            a
        }).collect();
        // ⌈2^40 / p⌉: x · inv >> 40 = ⌊x / p⌋ exactly for x, p < 2^20 (checked below)
        let inv = |p: u32| (1u64 << 40).div_ceil(p as u64);
        let inv_pow: Vec<[u64; 4]> = pow.iter().map(|a: &[u32; 4]| a.map(|p| if p == 0 { 0 } else { inv(p) })).collect();
        let inv_m: Vec<u64> = plan.subs.iter().map(|e| inv(e.m)).collect();
        let cx = Ctx {
            coords,
            pow,
            inv_pow,
            inv_m,
            n,
            kk,
            tau,
            d,
            slot_ps: s.slot_ps,
            prop_ps: s.prop_ps,
            payload,
            guard_ok: tx_time_ps(s.cell_bytes as u64, s.lane_rate_bps) + s.guard_ps <= s.slot_ps,
            hbh: s.cc.hbh(),
            spray_short: s.cc.spray_short(),
            t_budget: s.token_budget,
            tf_budget: s.first_hop_budget,
            cutoff: s.cutoff_bytes,
            end_tick: s.duration_ps.div_ceil(tau),
            t: 0,
            spray_seed: Stream::new(s.seed, "shale.spray").next_u64(),
            svc,
            sample_ticks: if s.sample_ps == 0 { 0 } else { s.sample_ps.div_ceil(tau).max(1) },
            rev_k,
            f_start: s.flow_start_ps.iter().map(|&p| p.div_ceil(tau)).collect(),
            f_src: s.flow_src,
            f_dst: s.flow_dst,
            f_sigma,
            f_size: s.flow_size.clone(),
            next_flow: 0,
            w_slot: Vec::new(),
            w_src: Vec::new(),
            w_sample: Vec::new(),
            w_samples: Vec::new(),
            lw: (kk as usize).div_ceil(64),
            starts_off: vec![0; n as usize + 1],
            starts: Vec::new(),
            inb: Vec::new(),
            inb_len: 0,
            inb_off: vec![0; n as usize + 1],
            cur_w: u64::MAX,
            live: 0,
            live_sum: 0,
            cell_pool: 0,
            total_buf: 0,
            unsent_total: 0,
            backlogged: 0,
            imax: 0,
            series: Vec::new(),
            last_sample: Sample::default(),
            plan,
        };
        // the reciprocals must reproduce every coordinate
        for (sg, e) in cx.plan.subs.iter().enumerate() {
            for x in 0..n {
                for p in 0..e.h {
                    if cx.coord(sg, x, p) != e.coord(x, p) {
                        return Err(SpecError::new("nodes", n, "coordinate arithmetic check failed"));
                    }
                }
            }
        }
        let threads = s.threads.clamp(1, n.max(1));
        let lw = (kk as usize).div_ceil(64);
        Ok(WindowSim {
            nodes: (0..n).map(|_| Node::new()).collect(),
            lk: vec![WLink::default(); nk],
            qcells: vec![0; nk],
            lbits: vec![0; n as usize * lw],
            fr: s.flow_size.iter().map(|&size| FlowRec { deliv: 0, finish: u64::MAX, hops: 0, size }).collect(),
            works: (0..threads).map(|_| Work::new(d as usize)).collect(),
            bounds: (0..=threads).map(|i| (n as u64 * i as u64 / threads as u64) as u32).collect(),
            cx,
        })
    }

    pub fn tau_ps(&self) -> Ps {
        self.cx.tau
    }
    pub fn hop_delay(&self) -> u64 {
        self.cx.d
    }
    pub fn now(&self) -> Ps {
        self.cx.t * self.cx.tau
    }
    /// (timeslots run, cell-hops, sum over the timeslots run of the cells alive at each).
    pub fn progress(&self) -> (u64, u64, u64) {
        (self.cx.t, self.works.iter().map(|k| k.packet_hops).sum(), self.cx.live_sum)
    }
    pub fn peer(&self, x: u32, t: u64) -> u32 {
        let (s, p, j, _) = self.cx.plan.slot(t);
        self.cx.plan.subs[s].tx_peer(x, p, j)
    }

    /// Run every timeslot that starts before `until_ps` (and before the end of the run),
    /// in windows of at most D timeslots.
    pub fn run_until(&mut self, until_ps: Ps) {
        let stop = until_ps.div_ceil(self.cx.tau).min(self.cx.end_tick);
        while self.cx.t < stop {
            let a = self.cx.t;
            let w = a / self.cx.d;
            let b = ((w + 1) * self.cx.d).min(stop);
            if w != self.cx.cur_w {
                self.cx.deliver_window(w, &mut self.works);
            }
            self.cx.prepare(a, b, &mut self.works);
            self.serve_all(a, b);
            self.cx.sweep(a, b, &self.works);
            self.cx.t = b;
        }
    }

    /// Every node through timeslots a..b: each worker its range of nodes, in parallel
    /// when there are several (nodes do not interact within a window).
    fn serve_all(&mut self, a: u64, b: u64) {
        let cx = &self.cx;
        let (kk, lw) = (cx.kk as usize, cx.lw);
        let fr = FrPtr(self.fr.as_mut_ptr(), self.fr.len());
        let mut jobs = Vec::with_capacity(self.works.len());
        let (mut nodes, mut lk, mut qc, mut lb) =
            (&mut self.nodes[..], &mut self.lk[..], &mut self.qcells[..], &mut self.lbits[..]);
        for (i, w) in self.works.iter_mut().enumerate() {
            let (x0, x1) = (self.bounds[i] as usize, self.bounds[i + 1] as usize);
            let c = x1 - x0;
            let (n0, n1) = std::mem::take(&mut nodes).split_at_mut(c);
            let (l0, l1) = std::mem::take(&mut lk).split_at_mut(c * kk);
            let (q0, q1) = std::mem::take(&mut qc).split_at_mut(c * kk);
            let (b0, b1) = std::mem::take(&mut lb).split_at_mut(c * lw);
            (nodes, lk, qc, lb) = (n1, l1, q1, b1);
            jobs.push((Srv { cx, w, lk: l0, qcells: q0, lbits: b0, ko: x0 * kk, bo: x0 * lw, fr }, n0, x0 as u32));
        }
        // the first range on this thread, the others on threads of their own
        let rest = jobs.split_off(1);
        let (mut srv, nodes, x0) = jobs.pop().expect("one worker at least");
        if rest.is_empty() {
            srv.serve_range(nodes, x0, a, b);
        } else {
            std::thread::scope(|sc| {
                for (mut srv, nodes, x0) in rest {
                    sc.spawn(move || srv.serve_range(nodes, x0, a, b));
                }
                srv.serve_range(nodes, x0, a, b);
            });
        }
    }
}

impl Ctx {
    /// Coordinate p of node x in sub-schedule sg: ⌊x / m^p⌋ mod m, by multiplications.
    #[inline]
    fn coord(&self, sg: usize, x: u32, p: u32) -> u32 {
        let q = (x as u64 * self.inv_pow[sg][p as usize]) >> 40;
        let m = self.plan.subs[sg].m as u64;
        (q - ((q * self.inv_m[sg]) >> 40) * m) as u32
    }

    #[inline]
    fn hbh(&self) -> bool {
        self.hbh
    }

    #[inline]
    fn budget(&self, sigma: u8, r: u8) -> u32 {
        super::token_budget(&self.plan, self.t_budget, self.tf_budget, sigma, r)
    }

    #[inline]
    fn sample_tick(&self, t: u64) -> bool {
        self.sample_ticks > 0 && t > 0 && t.is_multiple_of(self.sample_ticks)
    }

    /// Window w starts: the flights sent in window w − 1, grouped by receiver.
    fn deliver_window(&mut self, w: u64, works: &mut [Work]) {
        let off = &mut self.inb_off;
        off.iter_mut().for_each(|v| *v = 0);
        for o in works.iter().flat_map(|k| &k.out) {
            off[o.y as usize + 1] += 1;
        }
        for i in 1..off.len() {
            off[i] += off[i - 1];
        }
        // every entry below the total is written next, so the log is only ever grown
        let total = works.iter().map(|k| k.out.len()).sum();
        if self.inb.len() < total {
            self.inb.resize(total, In::default());
        }
        self.inb_len = total;
        let mut fill = off.clone();
        // the workers' logs in node order: the order one worker would have logged them
        for o in works.iter().flat_map(|k| &k.out) {
            let f = &mut fill[o.y as usize];
            self.inb[*f as usize] = In { at: o.at, fl: o.fl };
            *f += 1;
        }
        works.iter_mut().for_each(|k| k.out.clear());
        self.cur_w = w;
    }

    /// Schedule entries of the window's timeslots and of the timeslots their arrivals
    /// were sent in; the window's new flows grouped by source (in start order).
    fn prepare(&mut self, a: u64, b: u64, works: &mut [Work]) {
        let w = (b - a) as usize;
        self.w_slot.clear();
        self.w_src.clear();
        self.w_sample.clear();
        self.w_samples.clear();
        for t in a..b {
            if self.sample_tick(t) {
                self.w_samples.push((t - a) as usize);
            }
            self.w_sample.push(self.sample_tick(t));
            let (s, p, j, k) = self.plan.slot(t);
            self.w_slot.push((s as u8, p, j, k));
            let (s, p, j, k) = if t >= self.d { self.plan.slot(t - self.d) } else { (0, 0, 1, 0) };
            self.w_src.push((s as u8, p, j, k));
        }
        for k in works.iter_mut() {
            k.win.clear();
            k.win.resize(w, Acc::default());
        }
        let fa = self.next_flow;
        let mut fb = fa;
        while fb < self.f_start.len() && self.f_start[fb] < b {
            fb += 1;
        }
        self.next_flow = fb;
        // counting sort by source, stable
        let off = &mut self.starts_off;
        off.iter_mut().for_each(|v| *v = 0);
        for f in fa..fb {
            off[self.f_src[f] as usize + 1] += 1;
        }
        for i in 1..off.len() {
            off[i] += off[i - 1];
        }
        self.starts.clear();
        self.starts.resize(fb - fa, 0);
        let mut fill = off.clone();
        for f in fa..fb {
            let s = self.f_src[f] as usize;
            self.starts[fill[s] as usize] = f as u32;
            fill[s] += 1;
        }
    }

    /// Network-wide levels and samples, timeslot by timeslot through the window.
    fn sweep(&mut self, a: u64, b: u64, works: &[Work]) {
        for t in a..b {
            let i = (t - a) as usize;
            // the workers' changes in this timeslot, summed (levels: the largest)
            let w = works.iter().map(|k| k.win[i]).fold(Acc::default(), |s, v| Acc {
                d_live: s.d_live + v.d_live,
                d_buf: s.d_buf + v.d_buf,
                d_unsent: s.d_unsent + v.d_unsent,
                d_backlog: s.d_backlog + v.d_backlog,
                deliv: s.deliv + v.deliv,
                hops: s.hops + v.hops,
                new: s.new + v.new,
                mx: s.mx.max(v.mx),
                lvl: s.lvl.max(v.lvl),
            });
            self.live_sum += self.live as u64;
            if self.sample_tick(t) {
                let s = self.level(t);
                self.push_sample(s);
                self.imax = w.lvl;
            }
            self.live += w.d_live;
            self.cell_pool = self.cell_pool.max(self.live);
            self.total_buf += w.d_buf;
            self.unsent_total += w.d_unsent;
            self.backlogged += w.d_backlog;
            self.imax = self.imax.max(w.mx);
            self.last_sample.delivered_bytes += w.deliv;
            self.last_sample.cell_hops += w.hops;
            self.last_sample.new_cells += w.new;
        }
    }

    /// The levels at the start of timeslot t; interval counters still cumulative.
    fn level(&self, t: u64) -> Sample {
        Sample {
            time_ps: t * self.tau,
            buffered_cells: self.total_buf as u64,
            max_node_cells: self.imax,
            unsent_bytes: self.unsent_total as u64,
            backlogged_sources: self.backlogged as u64,
            ..self.last_sample
        }
    }

    /// Append sample s; `last_sample` keeps the cumulative counters, `prev` those at the
    /// previous sample.
    fn push_sample(&mut self, s: Sample) {
        let p = self.series_cum();
        self.series.push(Sample {
            delivered_bytes: s.delivered_bytes - p.0,
            cell_hops: s.cell_hops - p.1,
            dropped_bytes: 0,
            new_cells: s.new_cells - p.2,
            ..s
        });
    }

    /// Cumulative (delivered, cell-hops, new cells) at the last sample.
    fn series_cum(&self) -> (u64, u64, u64) {
        self.series.iter().fold((0, 0, 0), |a, s| (a.0 + s.delivered_bytes, a.1 + s.cell_hops, a.2 + s.new_cells))
    }
}

/// Add worker b's ledger to a.
#[cfg(test)]
mod tests;
