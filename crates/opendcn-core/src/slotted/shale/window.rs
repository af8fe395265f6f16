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

use super::schedule::Plan;
use super::{Cc, PEntry, Sample, ShaleOutput, ShaleSpec, Tok, DROP_REASONS};
use crate::error::SpecError;
use crate::ledger::Ledger;
use crate::packedmap::PackedMap;
use crate::prefetch::Spread;
use crate::rng::{mix64, Stream};
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

impl Srv<'_> {
    /// Nodes x0.. (`nodes`) through timeslots a..b, in node order.
    fn serve_range(&mut self, nodes: &mut [Node], x0: u32, a: u64, b: u64) {
        let kk = self.kk as usize;
        for i in 0..nodes.len() {
            let x = x0 + i as u32;
            let xu = x as usize;
            self.w.pf.clear();
            if let Some(next) = nodes.get(i + 1) {
                // the next node's arena, link records and queue lengths arrive while
                // this one is served
                next.queue_prefetch(&mut self.w.pf);
                let r = (xu + 1) * kk - self.ko..(xu + 2) * kk - self.ko;
                self.w.pf.add(&self.lk[r.clone()]);
                self.w.pf.add(&self.qcells[r]);
            }
            let nd = &mut nodes[i];
            let (s0, s1) = (self.starts_off[xu], self.starts_off[xu + 1]);
            if !(nd.idle() && self.inb_off[xu] == self.inb_off[xu + 1] && s0 == s1) {
                self.serve(nd, x, a, b);
            }
            self.w.pf.finish();
        }
    }

    #[inline]
    fn has_credit(&self, nd: &Node, xk: usize, k: u32, d: u32, rz: u8, sigma: u8) -> bool {
        cnt_get(&self.lk[xk - self.ko].cr, &nd.credit, ck(k, d, rz), bkey(d, rz)) < self.budget(sigma, rz)
    }

    /// Node x through timeslots a..b: new flows, the arrival, then its turn to send.
    fn serve(&mut self, nd: &mut Node, x: u32, a: u64, b: u64) {
        let mut sp = self.starts_off[x as usize] as usize;
        let se = self.starts_off[x as usize + 1] as usize;
        let xbase = x as usize * self.kk as usize;
        let mut xc = [[0u32; 4]; 2];
        for (sg, e) in self.plan.subs.iter().enumerate() {
            let h = e.h as usize;
            xc[sg][..h].copy_from_slice(&self.coords[sg][x as usize * h..(x as usize + 1) * h]);
        }
        // this node's arrivals in a..b, by timeslot
        self.w.amask.iter_mut().for_each(|w| *w = 0);
        let first = a - self.cur_w * self.d;
        let (i0, i1) = (self.inb_off[x as usize] as usize, self.inb_off[x as usize + 1] as usize);
        for e in i0..i1 {
            let In { at, fl } = self.inb[e];
            let at = at as u64;
            if at >= first && at < first + (b - a) {
                let i = (at - first) as usize;
                if fl.cell != 0 && fl.dst == x {
                    // delivered here during this serve: its flow's record
                    self.fr.prefetch(fl.flow as usize);
                }
                if self.w.slots[i].vacant() {
                    self.w.slots[i] = fl;
                    self.w.amask[i >> 6] |= 1 << (i & 63);
                } else {
                    self.w.collisions += 1;
                    self.w.extra.push((i, fl));
                }
            }
        }
        if self.plan.subs.len() == 1 && self.w.extra.is_empty() {
            self.serve_sparse(nd, x, &xc, a, b, sp, se);
            return;
        }
        for t in a..b {
            self.w.pf.step(PF_STEP);
            let i = (t - a) as usize;
            if self.w_sample[i] {
                self.w.win[i].lvl = self.w.win[i].lvl.max(nd.buf);
            }
            while sp < se && self.f_start[self.starts[sp] as usize] <= t {
                self.activate(nd, self.starts[sp] as usize, i);
                sp += 1;
            }
            let fl = self.w.slots[i];
            if !fl.vacant() {
                self.w.slots[i] = Fl::default();
                self.receive(nd, x, &xc, fl, t, i);
            }
            if !self.w.extra.is_empty() {
                self.receive_extra(nd, x, &xc, t, i);
            }
            let (sg, _, _, k) = self.w_slot[i];
            let l = self.lk[xbase + k as usize - self.ko];
            if l.ph != NONE || l.th != NONE || !nd.local[sg as usize].is_empty() {
                self.visit(nd, x, &xc, t, i);
            }
        }
    }

    /// [`Ctx::serve`] for one sub-schedule (neighbour index = timeslot mod epoch): jump
    /// from event to event — an arrival, a new flow, a timeslot whose neighbour has cells
    /// or tokens queued (the next set bit of the node's link bits), or every timeslot
    /// while the node has unsent flow data — instead of stepping through the window.
    #[allow(clippy::too_many_arguments)]
    fn serve_sparse(&mut self, nd: &mut Node, x: u32, xc: &[[u32; 4]; 2], a: u64, b: u64, mut sp: usize, se: usize) {
        let w = (b - a) as usize;
        let kk = self.kk as usize;
        let lb = x as usize * self.lw;
        let mut i = 0;
        let mut si = 0;
        while i < w {
            self.w.pf.step(PF_STEP);
            // with unsent data the node sends in every timeslot
            let inext = if !nd.local[0].is_empty() {
                i
            } else {
                let ia = next_bit(&self.w.amask, i, w);
                let k0 = self.w_slot[i].3 as usize;
                let iv = next_bit_circ(&self.lbits[lb - self.bo..lb - self.bo + self.lw], k0, kk).map_or(w, |dk| i + dk);
                let is = if sp < se { (self.f_start[self.starts[sp] as usize] - a) as usize } else { w };
                ia.min(iv).min(is)
            };
            // sample timeslots up to the next event: the node's level is unchanged
            while si < self.w_samples.len() && self.w_samples[si] <= inext.min(w - 1) {
                let s = self.w_samples[si];
                if s >= i {
                    self.w.win[s].lvl = self.w.win[s].lvl.max(nd.buf);
                }
                si += 1;
            }
            if inext >= w {
                break;
            }
            i = inext;
            let t = a + i as u64;
            while sp < se && self.f_start[self.starts[sp] as usize] <= t {
                self.activate(nd, self.starts[sp] as usize, i);
                sp += 1;
            }
            if self.w.amask[i >> 6] >> (i & 63) & 1 != 0 {
                self.w.amask[i >> 6] &= !(1 << (i & 63));
                let fl = self.w.slots[i];
                self.w.slots[i] = Fl::default();
                self.receive(nd, x, xc, fl, t, i);
            }
            let (sg, _, _, k) = self.w_slot[i];
            let l = self.lk[x as usize * kk + k as usize - self.ko];
            if l.ph != NONE || l.th != NONE || !nd.local[sg as usize].is_empty() {
                self.visit(nd, x, xc, t, i);
            }
            i += 1;
        }
    }

    #[inline]
    fn set_lbit(&mut self, x: u32, k: u32) {
        let b = x as usize * self.lw * 64 + k as usize;
        self.lbits[(b >> 6) - self.bo] |= 1 << (b & 63);
    }

    fn receive_extra(&mut self, nd: &mut Node, x: u32, xc: &[[u32; 4]; 2], t: u64, i: usize) {
        let mut j = 0;
        while j < self.w.extra.len() {
            if self.w.extra[j].0 == i {
                let fl = self.w.extra.remove(j).1;
                self.receive(nd, x, xc, fl, t, i);
            } else {
                j += 1;
            }
        }
    }

    fn activate(&mut self, nd: &mut Node, f: usize, i: usize) {
        let size = self.f_size[f];
        self.w.lg.offer(size);
        self.w.flows_started += 1;
        let sg = self.f_sigma[f] as usize;
        if nd.local[sg].is_empty() {
            self.w.win[i].d_backlog += 1;
        }
        nd.local[sg].push(LFlow { flow: f as u32, dst: self.f_dst[f], unsent: size });
        self.w.win[i].d_unsent += size as i64;
    }

    fn set_buf(&mut self, nd: &mut Node, v: u32, t: u64, i: usize) {
        let old = nd.buf as usize;
        let dt = t - nd.buf_last;
        if dt > 0 {
            if self.w.hist.len() <= old {
                self.w.hist.resize(old + 1, 0);
            }
            self.w.hist[old] += dt;
        }
        nd.buf_last = t;
        nd.buf = v;
        let a = &mut self.w.win[i];
        a.d_buf += v as i64 - old as i64;
        a.mx = a.mx.max(v);
        self.w.max_buf = self.w.max_buf.max(v);
    }

    /// Node x's turn in timeslot t: the first eligible queued cell for this timeslot's
    /// neighbour, else a new cell, and up to two tokens.
    fn visit(&mut self, nd: &mut Node, x: u32, xc: &[[u32; 4]; 2], t: u64, i: usize) {
        self.w.events += 1;
        let (sg, p, j, k) = self.w_slot[i];
        let ebs = &self.plan.subs[sg as usize];
        // the peer differs from x in coordinate p only: c → c + j (mod m)
        let (m, pw, c) = (ebs.m, self.pow[sg as usize][p as usize], xc[sg as usize][p as usize]);
        let nc = if c + j >= m { c + j - m } else { c + j };
        let y = x - c * pw + nc * pw;
        let xk = x as usize * self.kk as usize + k as usize;
        let mut cell = self.extract(nd, xk, k, y, sg, t, i);
        if cell.is_none() {
            cell = self.new_cell(nd, xk, sg, k, y, i);
        }
        let mut tok = [0u32; 2];
        let mut ntok = 0u8;
        while (ntok as usize) < 2 && self.lk[xk - self.ko].th != NONE {
            let ti = self.lk[xk - self.ko].th;
            let tk = nd.toks[ti as usize];
            self.lk[xk - self.ko].th = tk.next;
            if tk.next == NONE {
                self.lk[xk - self.ko].tt = NONE;
            }
            nd.free_toks.push(ti);
            nd.ntoks -= 1;
            tok[ntok as usize] = tk.d | (tk.r as u32) << 24;
            ntok += 1;
        }
        if cell.is_none() && ntok == 0 {
            return;
        }
        self.w.tokens_sent += ntok as u64;
        // fabric check: the receiver's schedule expects x (y's coordinate back by j)
        let back = if nc >= j { nc - j } else { nc + m - j };
        if y - nc * pw + back * pw != x {
            self.w.collisions += 1;
        }
        let mut fl = Fl { ntok, tok, ..Fl::default() };
        if let Some(c) = cell {
            self.w.sends_cells += 1;
            self.w.packet_hops += 1;
            self.w.win[i].hops += 1;
            if !self.guard_ok {
                self.w.guard_viol += 1;
            }
            if c.back_k != NONE && self.hbh() {
                let bx = x as usize * self.kk as usize + c.back_k as usize;
                cnt_decr(&mut self.lk[bx - self.ko].ho, &mut nd.hold, ck(c.back_k, c.dst, c.r_in), bkey(c.dst, c.r_in));
                self.push_token(nd, x, c.back_k, c.dst, c.r_in);
            }
            let rz = c.r.saturating_sub(1);
            if self.hbh() && y != c.dst {
                cnt_incr(&mut self.lk[xk - self.ko].cr, &mut nd.credit, ck(k, c.dst, rz), bkey(c.dst, rz));
            }
            fl = Fl { flow: c.flow, dst: c.dst, bytes: c.bytes, tok, r: rz, hops: c.hops, ntok, cell: 1 };
        } else {
            self.w.sends_token_only += 1;
            self.w.lg.send(false, true);
        }
        // arrives at t + D: as far into the next window as t is into this one
        self.w.out.push(Out { y, at: (t - self.cur_w * self.d) as u32, fl });
        let l = self.lk[xk - self.ko];
        if l.ph == NONE && l.th == NONE {
            let b = x as usize * self.lw * 64 + k as usize;
            self.lbits[(b >> 6) - self.bo] &= !(1 << (b & 63));
        }
    }

    fn push_token(&mut self, nd: &mut Node, x: u32, k: u32, d: u32, r: u8) {
        let xk = x as usize * self.kk as usize + k as usize;
        let tk = Tok { d, r, next: NONE, seq: 0 };
        let ti = alloc(&mut nd.toks, &mut nd.free_toks, tk);
        let l = &mut self.lk[xk - self.ko];
        if l.tt == NONE {
            l.th = ti;
        } else {
            nd.toks[l.tt as usize].next = ti;
        }
        l.tt = ti;
        nd.ntoks += 1;
        self.set_lbit(x, k);
    }

    /// Remove and return the first queued cell for neighbour index k whose bucket has a
    /// credit (round robin among buckets).
    #[allow(clippy::too_many_arguments)]
    fn extract(&mut self, nd: &mut Node, xk: usize, k: u32, y: u32, sg: u8, t: u64, i: usize) -> Option<QCell> {
        let hbh = self.hbh();
        let mut e = self.lk[xk - self.ko].ph;
        let mut pe = NONE;
        while e != NONE {
            let en = nd.entries[e as usize];
            if !hbh || en.d() == y || self.has_credit(nd, xk, k, en.d(), en.r().saturating_sub(1), sg) {
                let c = en.head;
                let cell = nd.cells[c as usize];
                self.unlink(nd, xk, e, pe, c, cell.next);
                nd.free_cells.push(c);
                let v = nd.buf - 1;
                self.set_buf(nd, v, t, i);
                return Some(cell);
            }
            pe = e;
            e = en.next;
        }
        None
    }

    /// Unlink head cell c of entry e (after pe in the PIEO of xk); a bucket that still
    /// holds cells moves to the tail.
    fn unlink(&mut self, nd: &mut Node, xk: usize, e: u32, pe: u32, c: u32, cnext: u32) {
        let en = &mut nd.entries[e as usize];
        en.head = cnext;
        if en.tail == c {
            en.tail = NONE;
        }
        self.qcells[xk - self.ko] -= 1;
        let en = *en;
        let empty = en.head == NONE;
        if empty || en.next != NONE {
            let l = &mut self.lk[xk - self.ko];
            if pe == NONE {
                l.ph = en.next;
            } else {
                nd.entries[pe as usize].next = en.next;
            }
            if l.pt == e {
                l.pt = pe;
            }
            if empty {
                nd.nbuckets -= 1;
                nd.free_entries.push(e);
            } else {
                nd.entries[e as usize].next = NONE;
                let l = &mut self.lk[xk - self.ko];
                if l.pt == NONE {
                    l.ph = e;
                } else {
                    nd.entries[l.pt as usize].next = e;
                }
                l.pt = e;
            }
        }
    }

    /// A new cell of the first local flow (of this sub-schedule) with a first-hop credit.
    fn new_cell(&mut self, nd: &mut Node, xk: usize, sg: u8, k: u32, y: u32, i: usize) -> Option<QCell> {
        let li = sg as usize;
        if nd.local[li].is_empty() {
            return None;
        }
        let h = self.plan.subs[li].h as u8;
        let hbh = self.hbh();
        let pick = nd.local[li].iter().position(|lf| !hbh || lf.dst == y || self.has_credit(nd, xk, k, lf.dst, h - 1, sg))?;
        let lf = &mut nd.local[li][pick];
        let bytes = lf.unsent.min(self.payload);
        lf.unsent -= bytes;
        let (flow, dst, left) = (lf.flow, lf.dst, lf.unsent);
        let a = &mut self.w.win[i];
        a.d_unsent -= bytes as i64;
        if left == 0 {
            nd.local[li].remove(pick);
            if nd.local[li].is_empty() {
                a.d_backlog -= 1;
            }
        }
        self.w.new_cells += 1;
        self.w.lg.send(false, false);
        a.new += 1;
        a.d_live += 1;
        Some(QCell { flow, dst, bytes: bytes as u32, back_k: NONE, next: NONE, r: h, r_in: h, sigma: sg, hops: 0 })
    }

    /// Flight fl reaches node y in timeslot t: tokens return credits; the cell is
    /// delivered or routed to its next queue.
    fn receive(&mut self, nd: &mut Node, y: u32, yc: &[[u32; 4]; 2], fl: Fl, t: u64, i: usize) {
        self.w.events += 1;
        let (sg, p, j, _) = self.w_src[i];
        let m = self.plan.subs[sg as usize].m;
        let k_back = self.plan.koff[sg as usize] + p * (m - 1) + (m - j - 1);
        let yb = y as usize * self.kk as usize + k_back as usize;
        if self.hbh() {
            for &tk in &fl.tok[..fl.ntok as usize] {
                let (d, r) = (tk & 0xff_ffff, (tk >> 24) as u8);
                cnt_decr(&mut self.lk[yb - self.ko].cr, &mut nd.credit, ck(k_back, d, r), bkey(d, r));
            }
        }
        if fl.cell == 0 {
            // a token-only cell reached its neighbour
            self.w.lg.deliver(0, 0);
            return;
        }
        let hops = fl.hops + 1;
        if fl.dst == y {
            self.w.lg.deliver(fl.bytes as u64, 0);
            let a = &mut self.w.win[i];
            a.deliv += fl.bytes as u64;
            a.d_live -= 1;
            // SAFETY: a flow's record is written only where the flow is delivered, by the
            // worker serving its destination, and read only after the window
            let f = unsafe { self.fr.get(fl.flow as usize) };
            f.deliv += fl.bytes as u64;
            f.hops = f.hops.max(hops as u32);
            if f.deliv == f.size {
                f.finish = (t - self.d) * self.tau + self.slot_ps + self.prop_ps;
                self.w.flows_completed += 1;
                self.w.hash.record(t, (fl.flow as u64) << 24);
            }
            return;
        }
        if self.hbh() {
            let held = cnt_incr(&mut self.lk[yb - self.ko].ho, &mut nd.hold, ck(k_back, fl.dst, fl.r), bkey(fl.dst, fl.r));
            if held > self.budget(sg, fl.r) {
                self.w.hbh_viol += 1;
            }
        }
        let c = QCell { flow: fl.flow, dst: fl.dst, bytes: fl.bytes, back_k: k_back, next: NONE, r: fl.r, r_in: fl.r, sigma: sg, hops };
        // next hop: a spraying hop in the phase after p, or the direct semi-path
        let ebs = &self.plan.subs[sg as usize];
        let (h, koff) = (ebs.h, self.plan.koff[sg as usize]);
        let kz = if c.r > 0 {
            let q = if p + 1 == h { 0 } else { p + 1 };
            let kbase = koff + q * (m - 1);
            let z = mix64(self.spray_seed ^ ((y as u64) << 40 | nd.draws));
            nd.draws += 1;
            let start = (((z >> 32) * (m - 1) as u64) >> 32) as u32;
            let mut jj = start;
            if self.spray_short {
                let row = y as usize * self.kk as usize + kbase as usize;
                let mut best = u32::MAX;
                for s in 0..m - 1 {
                    let o = if start + s >= m - 1 { start + s - (m - 1) } else { start + s };
                    let qc = self.qcells[row + o as usize - self.ko];
                    if qc < best {
                        best = qc;
                        jj = o;
                        if qc == 0 {
                            break;
                        }
                    }
                }
            }
            kbase + jj
        } else {
            let mut q = p;
            loop {
                q = if q + 1 == h { 0 } else { q + 1 };
                let (cy, cd) = (yc[sg as usize][q as usize], self.coord(sg as usize, c.dst, q));
                if cy != cd {
                    break koff + q * (m - 1) + if cd > cy { cd - cy } else { cd + m - cy } - 1;
                }
            }
        };
        self.enqueue(nd, y, kz, c, t, i);
    }

    /// The distinct buckets (destination, remaining sprays) queued at node y.
    fn distinct_buckets(&mut self, nd: &Node, y: u32) -> u32 {
        let mut seen = std::mem::take(&mut self.w.scratch);
        seen.clear();
        let kk = self.kk as usize;
        for l in &self.lk[y as usize * kk - self.ko..(y as usize + 1) * kk - self.ko] {
            let mut e = l.ph;
            while e != NONE {
                let en = &nd.entries[e as usize];
                seen.push(en.dr);
                e = en.next;
            }
        }
        seen.sort_unstable();
        seen.dedup();
        let n = seen.len() as u32;
        self.w.scratch = seen;
        n
    }

    fn enqueue(&mut self, nd: &mut Node, y: u32, k: u32, c: QCell, t: u64, i: usize) {
        let yk = y as usize * self.kk as usize + k as usize;
        let ci = alloc(&mut nd.cells, &mut nd.free_cells, c);
        let dr = PEntry::new(c.dst, c.r, NONE, NONE, NONE).dr;
        let mut e = self.lk[yk - self.ko].ph;
        let mut len = 0;
        while e != NONE {
            let en = nd.entries[e as usize];
            if en.dr == dr {
                break;
            }
            e = en.next;
            len += 1;
        }
        if e == NONE {
            let ne = PEntry::new(c.dst, c.r, ci, ci, NONE);
            e = alloc(&mut nd.entries, &mut nd.free_entries, ne);
            let l = &mut self.lk[yk - self.ko];
            if l.pt == NONE {
                l.ph = e;
            } else {
                nd.entries[l.pt as usize].next = e;
            }
            l.pt = e;
            self.w.max_pieo = self.w.max_pieo.max(len + 1);
            nd.nbuckets += 1;
            self.w.max_buckets = self.w.max_buckets.max(nd.nbuckets);
            // distinct buckets ≤ bucket queues: only a node with more queues than the
            // largest distinct count so far can raise it, so only then are its counted
            if nd.nbuckets > self.w.max_distinct {
                let n = self.distinct_buckets(nd, y);
                self.w.max_distinct = self.w.max_distinct.max(n);
            }
        } else {
            let tl = nd.entries[e as usize].tail;
            nd.cells[tl as usize].next = ci;
            nd.entries[e as usize].tail = ci;
        }
        self.qcells[yk - self.ko] += 1;
        self.set_lbit(y, k);
        let v = nd.buf + 1;
        self.set_buf(nd, v, t, i);
    }

}
impl WindowSim {
    /// Counters, per-flow columns, metrics and invariant checks (as [`ShaleSim::output`]).
    /// The workers' counters added up (largest values: the largest), and their
    /// buffer histograms.
    fn totals(&self) -> Work {
        let mut t = Work { hash: crate::trace::TraceHash::start(), lg: Ledger::new(DROP_REASONS.len()), ..Work::default() };
        for k in &self.works {
            t.lg.merge(&k.lg);
            t.events += k.events;
            t.packet_hops += k.packet_hops;
            t.collisions += k.collisions;
            t.guard_viol += k.guard_viol;
            t.hbh_viol += k.hbh_viol;
            t.flows_started += k.flows_started;
            t.flows_completed += k.flows_completed;
            t.hash.merge(k.hash);
            t.sends_cells += k.sends_cells;
            t.sends_token_only += k.sends_token_only;
            t.tokens_sent += k.tokens_sent;
            t.new_cells += k.new_cells;
            t.max_pieo = t.max_pieo.max(k.max_pieo);
            t.max_buckets = t.max_buckets.max(k.max_buckets);
            t.max_distinct = t.max_distinct.max(k.max_distinct);
            t.max_buf = t.max_buf.max(k.max_buf);
            if t.hist.len() < k.hist.len() {
                t.hist.resize(k.hist.len(), 0);
            }
            for (a, b) in t.hist.iter_mut().zip(&k.hist) {
                *a += b;
            }
        }
        t
    }

    pub fn output(&self) -> ShaleOutput {
        let cx = &self.cx;
        let tot = self.totals();
        let t_now = cx.t;
        let mut in_flight: u64 = 0;
        let mut cells_in_flight: u64 = 0;
        let mut credit_keys = 0usize;
        let mut hold_keys = 0usize;
        let mut both = 0usize;
        let mut hist = tot.hist.clone();
        for (y, nd) in self.nodes.iter().enumerate() {
            let mut live = vec![true; nd.cells.len()];
            for &c in &nd.free_cells {
                live[c as usize] = false;
            }
            in_flight += nd.cells.iter().zip(&live).filter(|(_, &l)| l).map(|(c, _)| c.bytes as u64).sum::<u64>();
            cells_in_flight += live.iter().filter(|&&l| l).count() as u64;
            in_flight += nd.local.iter().flatten().map(|lf| lf.unsent).sum::<u64>();
            // link buckets with credits at the sender or holds at the receiver (one
            // counter of the timeslot engine each)
            let kk = cx.kk as usize;
            let mut holds: Vec<(u32, u32)> = nd.hold.keys().into_iter().map(|hk| ((hk >> 23) as u32, ((hk >> 3) as u32 & 0xf_ffff) | ((hk & 7) as u32) << 20)).collect();
            for k in 0..kk {
                let l = &self.lk[y * kk + k];
                credit_keys += l.cr.iter().filter(|&&v| v >> 23 != 0).count();
                holds.extend(l.ho.iter().filter(|&&v| v >> 23 != 0).map(|&v| (k as u32, v & BMASK)));
            }
            credit_keys += nd.credit.len();
            hold_keys += holds.len();
            for (kb, b) in holds {
                let (sg, p, j) = cx.plan.index_entry(kb);
                let x = cx.plan.subs[sg].tx_peer(y as u32, p, j) as usize;
                let kx = cx.rev_k[kb as usize];
                let (d, r) = (b & 0xf_ffff, (b >> 20) as u8);
                if cnt_get(&self.lk[x * kk + kx as usize].cr, &self.nodes[x].credit, ck(kx, d, r), b) > 0 {
                    both += 1;
                }
            }
            let v = nd.buf as usize;
            if hist.len() <= v {
                hist.resize(v + 1, 0);
            }
            hist[v] += t_now - nd.buf_last;
        }
        // flights not yet received: those sent in this window, and those arriving in it
        // from its current timeslot on
        let done = if cx.cur_w == u64::MAX { 0 } else { t_now - cx.cur_w * cx.d };
        let unread = cx.inb[..cx.inb_len].iter().filter(|e| e.at as u64 >= done).map(|e| &e.fl);
        let flights = self.works.iter().flat_map(|k| &k.out).map(|o| &o.fl).chain(unread);
        in_flight += flights.clone().filter(|f| f.cell != 0).map(|f| f.bytes as u64).sum::<u64>();
        // cells: live in the arenas, and flights (a cell or tokens alone) on their way
        cells_in_flight += flights.filter(|f| !f.vacant()).count() as u64;
        let delivered = tot.lg.delivered;
        let counts = super::output::Counts {
            tau: cx.tau,
            d: cx.d,
            t: t_now,
            live_slots: cx.n as u64 * t_now,
            ledger: tot.lg.clone(),
            in_flight,
            cells_in_flight,
            per_flow_delivered: self.fr.iter().map(|f| f.deliv).sum(),
            collisions: tot.collisions,
            guard_viol: tot.guard_viol,
            hbh_viol: tot.hbh_viol,
            sends_cells: tot.sends_cells,
            new_cells: tot.new_cells,
            sends_token_only: tot.sends_token_only,
            tokens_sent: tot.tokens_sent,
            max_pieo: tot.max_pieo,
            max_distinct: tot.max_distinct,
            max_buckets: tot.max_buckets,
            max_buf: tot.max_buf,
            outstanding: (credit_keys + hold_keys - both) as u64,
            cell_pool: cx.cell_pool as u64,
            live_sum: cx.live_sum,
            cutoff: cx.cutoff,
            // failures, invalidation and the end-to-end transports: timeslot engine only
            ..Default::default()
        };
        let errors = counts.errors(Vec::new());
        let metrics = counts.metrics(&cx.svc);
        let mut series = cx.series.clone();
        if cx.sample_ticks > 0 && series.last().is_none_or(|s| s.time_ps < t_now * cx.tau) && t_now > 0 {
            let s = cx.level(t_now);
            let p = cx.series_cum();
            series.push(Sample {
                delivered_bytes: s.delivered_bytes - p.0,
                cell_hops: s.cell_hops - p.1,
                dropped_bytes: 0,
                new_cells: s.new_cells - p.2,
                ..s
            });
        }
        ShaleOutput {
            series,
            packets: counts.packets(),
            totals: crate::metrics::RunTotals {
                now_ps: t_now * cx.tau,
                events: tot.events,
                packet_hops: tot.packet_hops,
                flows_started: tot.flows_started,
                flows_completed: tot.flows_completed,
                bytes_offered: tot.lg.offered,
                bytes_delivered: delivered,
                bytes_dropped: 0,
                bytes_in_flight: in_flight,
                drops: DROP_REASONS.iter().map(|k| (k.to_string(), 0)).collect(),
                collisions: tot.collisions,
                guardband_violations: tot.guard_viol,
                trace_hash: tot.hash.value(),
                flow_finish_ps: self.fr.iter().map(|f| f.finish).collect(),
                flow_delivered: self.fr.iter().map(|f| f.deliv).collect(),
                flow_hops: self.fr.iter().map(|f| f.hops).collect(),
                invariant_errors: errors,
            },
            timeslots: t_now,
            buffer_hist: hist,
            metrics,
        }
    }
}

/// Add worker b's ledger to a.
#[cfg(test)]
mod tests {
    use super::super::tests::{has, spec, uniform};
    use super::*;

    /// The window engine's balances, mid-window (flights in the log of the window being
    /// served and in the one being received): each catches a bookkeeping slip.
    #[test]
    fn ledger_balances_catch_bookkeeping_slips() {
        let mut s = spec(64, 2, 8, 500_000, Cc::HbhSpray);
        s.duration_ps = 20_000_000;
        s.token_budget = 2;
        s.first_hop_budget = 2;
        s.threads = 2;
        uniform(&mut s, 1500, 5000, 20_000_000, 3);
        let mut sim = WindowSim::new(s.clone()).unwrap();
        let stop = 10_000_000 + 3 * sim.cx.tau;
        sim.run_until(stop);
        assert_ne!(sim.cx.t % sim.cx.d, 0, "mid-window");
        let o = sim.output();
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
        let p = &o.packets;
        assert!(p.sent_ctrl > 0 && p.delivered > 0 && p.in_flight > 0, "{p:?}");
        assert_eq!(p.sent, p.delivered + p.in_flight);
        // the same books as the timeslot engine's at the same instant
        let mut ts = super::super::ShaleSim::new(s).unwrap();
        ts.run_until(stop);
        assert_eq!(format!("{:?}", ts.output().packets), format!("{p:?}"));
        // counters
        sim.works[1].lg.sent += 1;
        let o = sim.output();
        assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
        sim.works[1].lg.sent -= 1;
        sim.works[0].lg.delivered += 5;
        let o = sim.output();
        assert!(has(&o, "payload balance") && !has(&o, "packet balance"), "{:?}", o.invariant_errors);
        sim.works[0].lg.delivered -= 5;
        // a flight of this window lost without a trace: a token-only one (cells only),
        // one with a cell (both)
        let (wi, i) = (0..2).find_map(|w| sim.works[w].out.iter().position(|o| o.fl.cell == 0).map(|i| (w, i))).expect("a token-only flight");
        let fl = sim.works[wi].out.remove(i);
        let o = sim.output();
        assert!(has(&o, "packet balance") && !has(&o, "payload balance"), "{:?}", o.invariant_errors);
        sim.works[wi].out.insert(i, fl);
        let (wi, i) = (0..2).find_map(|w| sim.works[w].out.iter().position(|o| o.fl.cell != 0).map(|i| (w, i))).expect("a flight with a cell");
        let fl = sim.works[wi].out.remove(i);
        let o = sim.output();
        assert!(has(&o, "payload balance") && has(&o, "packet balance"), "{:?}", o.invariant_errors);
        sim.works[wi].out.insert(i, fl);
        assert!(sim.output().invariant_errors.is_empty());
        sim.run_until(u64::MAX);
        assert!(sim.output().invariant_errors.is_empty());
    }
}

