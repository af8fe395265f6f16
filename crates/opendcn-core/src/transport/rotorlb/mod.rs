//! RotorLB, the host-side bulk transport of Opera (Mellette et al., NSDI 2020), as a
//! sans-IO state machine.
//!
//! # Setting
//!
//! `tors` racks of `hosts_per_tor` hosts each (host `h` sits in rack `h / hosts_per_tor`);
//! every rack has `uplinks` rotor uplinks. The rotors take new matchings one after the
//! other: at the start of every superslice exactly one rotor starts a new matching, and
//! that matching is usable for `hold_ps` (Opera: `(U − 1)·D + ε`). Bulk data never waits
//! in the fabric: it stays in host memory until a circuit it can use is up, and crosses at
//! most two ToR-to-ToR hops, directly to the destination rack or through one intermediate
//! rack (Valiant load balancing, VLB).
//!
//! # Who does what
//!
//! The engine owns the network, the NICs and the clock. It calls
//! [`RotorLb::on_slice`] at the start of every superslice in which a step is due (the
//! module says when: see *scheduling* below), polls [`RotorLb::poll_send`] for a host's
//! next bulk packet whenever that host's NIC has nothing of higher priority, puts the
//! [`BulkPkt`] into uplink `rotor` of the holder's rack, and later reports either
//! [`RotorLb::on_arrive`] (the packet crossed and reached host `label`) or
//! [`RotorLb::on_return`] (when it reached the head of the uplink queue the circuit no
//! longer led to `want_tor`, so it goes back to its holder). The engine keeps the per-flow
//! delivered bytes and finish times itself from the [`Arrival::Delivered`] reports.
//!
//! # Offer/accept (one step per superslice)
//!
//! A step concerns the rotor `r` that has just taken a new matching. Racks are visited in
//! increasing order, but only racks where some host holds bulk. For a rack `a` whose new
//! circuit on `r` leads to rack `b`, every host of `a` gets a sending budget and every host
//! of `b` a receiving budget of `max_pkts` packets for this step, and the hosts of `a`
//! commit packets to hosts of `b`, in this order:
//!
//! 1. **Relayed data first.** Packets a host holds for someone else (it is their middle
//!    hop) and whose final host is in `b` are committed to that host, at most
//!    `max(max_pkts / H, 1)` per (holder, destination) pair.
//! 2. **Own direct data.** A host's own flows to hosts of `b` share the remaining budgets
//!    by progressive filling: one packet per (sender, receiver) pair per round, pairs in
//!    increasing (sender, receiver) order, until no pair can take another packet.
//! 3. **Offers.** A host's own data for other racks (neither `a` nor `b`) is offered to `b`
//!    for two-hop VLB, its remaining sending budget split evenly (one packet per round)
//!    over the final destinations, in increasing host order.
//!
//! Once every rack has done 1–3, each host `j` of each `b` (pairs in rack order, hosts in
//! increasing order) accepts the offers made to its rack, one packet per offer per round,
//! while its receiving budget and the offerer's sending budget last and while the
//! offer's *room* lasts: `2·max(max_pkts / H, 1)` minus the packets `j` already holds for
//! that final destination (relayed ones waiting plus its own unsent ones), counted once
//! per offer at the start of `j`'s turn (two hosts offering the same destination each get
//! that room, and packets accepted at earlier steps but not yet arrived do not count).
//! Accepted packets are committed by the offerer to
//! `j` and, on arrival, join `j`'s relay queue for their final host. A packet that
//! arrives at a relay is only ever committed directly to its final host (step 1), so it
//! never makes a third hop.
//!
//! Only flows between racks are carried: a flow whose source and destination share a rack
//! is never committed (no step sends to the own rack, none offers for it), so it stays
//! unsent and keeps the steps running. Such flows must go another way (e.g. through the
//! ToR with a low-latency transport); see [`RotorLb::add_flow`].
//!
//! # Pacing and expiry
//!
//! A commitment of `n` packets at time `t` on rotor `r` is spread over the hold: its
//! `k`-th packet may leave no earlier than `t + k·hold/n`, and two packets of one host on
//! one rotor leave at least `pace_ps` apart (`U` full-packet times: each rotor gets its
//! `1/U` share of the NIC). When a host's NIC asks, its rotors are tried round-robin,
//! starting after the one that sent last. Commitments of rotor `r` that have not left by
//! `t + hold` expire: they go back to the host's queues (own data to the flow's unsent
//! bytes, relayed packets to the front of their relay queue, order kept), either when the
//! NIC next asks or at the rotor's next step, whichever comes first. A packet the engine
//! returns goes back the same way (to the front), and its host is due a new step.
//!
//! # Scheduling
//!
//! Steps run only while some host holds bulk. [`RotorLb::add_flow`],
//! [`RotorLb::on_return`] and [`RotorLb::on_arrive`] return true when the engine must
//! schedule a step at the start of the next superslice (none is pending). After a step,
//! the engine first polls the NICs of the hosts [`RotorLb::on_slice`] returned (a packet
//! committed at the step's start may leave at once) and then calls
//! [`RotorLb::end_slice`], which says whether another step is needed.
//!
//! # Byte accounting
//!
//! Every byte offered is, at any time, in exactly one place: delivered to its final host,
//! unsent at its source, waiting at a relay, committed (queued for a rotor, not yet
//! handed to the NIC) or in the network (handed to the engine, not yet arrived or
//! returned). Own data is a byte count per flow, not numbered segments: a packet takes
//! `min(unsent, mss)` bytes, and a returned or expired packet's bytes rejoin the count.
//! Each term has its own counter, moved by the operation that moves the bytes;
//! [`RotorLb::check`] verifies that they add up and recounts them from the queues.

use std::collections::{BTreeMap, VecDeque};

use crate::units::{Ps, Rate, PS_PER_S};

/// RotorLB parameters (see [`RotorLbConfig::opera`] for the values Opera derives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotorLbConfig {
    pub tors: u32,
    pub uplinks: u32,
    pub hosts_per_tor: u32,
    /// Payload bytes per bulk packet.
    pub mss: u32,
    /// How long a rotor's matching is usable after the superslice that starts it.
    pub hold_ps: Ps,
    /// Packets one host may send (and receive) per step.
    pub max_pkts: u32,
    /// Minimum gap between two packets of one host on one rotor.
    pub pace_ps: Ps,
}

impl RotorLbConfig {
    /// Opera's derivation: hold `(U − 1)·D + ε`; `max_pkts` = the full packets one host
    /// can send on one rotor during the hold at its `1/U` share of the link rate, at least
    /// one; pacing `U` full-packet serialization times; payload = packet − header.
    #[allow(clippy::too_many_arguments)]
    pub fn opera(tors: u32, uplinks: u32, hosts_per_tor: u32, packet_bytes: u32, header_bytes: u32,
                 link_rate_bps: u64, superslice_ps: Ps, eps_ps: Ps) -> Self {
        let u = uplinks as u64;
        let hold = (u - 1) * superslice_ps + eps_ps;
        let max = (hold as u128 * link_rate_bps as u128) / (8 * PS_PER_S as u128 * packet_bytes as u128 * u as u128);
        RotorLbConfig {
            tors,
            uplinks,
            hosts_per_tor,
            mss: packet_bytes - header_bytes,
            hold_ps: hold,
            max_pkts: (max.min(u32::MAX as u128) as u32).max(1),
            pace_ps: u * Rate::new(link_rate_bps).tx(packet_bytes as u64),
        }
    }
}

/// One bulk packet handed to the engine.
///
/// The holder's NIC sends it into uplink `rotor` of its rack. When it reaches the head of
/// that uplink's queue it may cross only if the circuit then leads to rack `want_tor`;
/// otherwise the engine gives it back with [`RotorLb::on_return`]. Once across it goes to
/// host `label` (in rack `want_tor`) and is reported with [`RotorLb::on_arrive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkPkt {
    pub flow: u32,
    pub payload: u32,
    /// Final destination host. `label == fin`: direct or last hop; otherwise a relay.
    pub fin: u32,
    pub label: u32,
    pub holder: u32,
    pub rotor: u32,
    pub want_tor: u32,
    /// The packet already crossed one ToR-to-ToR hop (the holder is a relay).
    pub relayed: bool,
}

/// What a host's NIC gets from [`RotorLb::poll_send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// Send this packet now.
    Send(BulkPkt),
    /// Committed packets exist but none may leave yet: ask again at this time.
    Wait(Ps),
    /// Nothing committed.
    Idle,
}

/// What became of a packet reported with [`RotorLb::on_arrive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// It reached its final host: `payload` bytes of `flow` are delivered.
    Delivered { flow: u32, payload: u32 },
    /// It reached a relay, which now holds it for its final host.
    Relayed,
}

/// Counters of a RotorLB instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RotorLbStats {
    /// Offer/accept steps run.
    pub slices: u64,
    /// Packets committed (a packet committed again after a return or expiry counts again).
    pub committed_pkts: u64,
    /// Packets the engine returned to their holder.
    pub returns: u64,
    /// Packets that arrived at a relay.
    pub relayed_pkts: u64,
    pub offered_bytes: u64,
    pub delivered_bytes: u64,
    /// Committed packets pushed back by other traffic at their NIC ([`RotorLb::nic_push`]).
    pub nic_pushed: u64,
}

/// One committed packet.
#[derive(Debug, Clone, Copy)]
struct Item {
    flow: u32,
    payload: u32,
    fin: u32,
    label: u32,
    /// Earliest send time (a commitment of n packets is spread over the hold).
    at: Ps,
}

#[derive(Debug, Clone, Copy, Default)]
struct FlowSt {
    src: u32,
    dst: u32,
    /// 0: no such flow.
    size: u64,
    /// Own bytes at the source not committed, in flight or delivered.
    unsent: u64,
}

#[derive(Debug, Clone, Default)]
struct Host {
    /// Per rotor: committed packets in send order, earliest send time of the next one,
    /// end of the hold they were committed for.
    commits: Vec<VecDeque<Item>>,
    commit_next: Vec<Ps>,
    commit_end: Vec<Ps>,
    /// Rotor the NIC tries first.
    rr: u32,
    /// Own flows with unsent bytes, in the order they (re)gained some.
    local: Vec<u32>,
    /// Relayed packets (flow, payload) per final destination host.
    relay: BTreeMap<u32, VecDeque<(u32, u32)>>,
    relay_pkts: u32,
    /// Visited by offer/accept steps (holds bulk, or did at the last step's end).
    active: bool,
}

/// The RotorLB state of all hosts.
#[derive(Debug, Clone)]
pub struct RotorLb {
    cfg: RotorLbConfig,
    hosts: Vec<Host>,
    flows: Vec<FlowSt>,
    /// Active hosts per rack.
    tor_active: Vec<u32>,
    /// A step is scheduled (the engine owes an `on_slice`).
    pending: bool,
    /// Racks visited by the last step, swept by `end_slice`.
    swept: Vec<u32>,
    send_cap: Vec<u32>,
    recv_cap: Vec<u32>,
    /// Step number at which a host was last put on the kick list.
    kicked: Vec<u64>,
    stats: RotorLbStats,
    // byte accounting, one counter per term
    unsent_bytes: u64,
    relay_bytes: u64,
    commit_bytes: u64,
    net_bytes: u64,
    /// Packets that arrived at a host that is not their final one although they had
    /// already been relayed (a third hop: an engine error).
    third_hops: u64,
}

impl RotorLb {
    pub fn new(cfg: RotorLbConfig) -> Self {
        assert!(cfg.tors >= 1 && cfg.uplinks >= 1 && cfg.hosts_per_tor >= 1, "RotorLB: empty fabric");
        assert!(cfg.mss > 0 && cfg.max_pkts > 0, "RotorLB: mss and max_pkts must be positive");
        let n_hosts = (cfg.tors * cfg.hosts_per_tor) as usize;
        let u = cfg.uplinks as usize;
        let host = Host {
            commits: vec![VecDeque::new(); u],
            commit_next: vec![0; u],
            commit_end: vec![0; u],
            ..Default::default()
        };
        RotorLb {
            cfg,
            hosts: vec![host; n_hosts],
            flows: Vec::new(),
            tor_active: vec![0; cfg.tors as usize],
            pending: false,
            swept: Vec::new(),
            send_cap: vec![0; n_hosts],
            recv_cap: vec![0; n_hosts],
            kicked: vec![0; n_hosts],
            stats: RotorLbStats::default(),
            unsent_bytes: 0,
            relay_bytes: 0,
            commit_bytes: 0,
            net_bytes: 0,
            third_hops: 0,
        }
    }

    pub fn config(&self) -> &RotorLbConfig {
        &self.cfg
    }

    pub fn stats(&self) -> RotorLbStats {
        self.stats
    }

    /// A step is scheduled: the engine owes an [`on_slice`](Self::on_slice) call.
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Bytes held at hosts: (own data unsent, relayed data waiting, committed not yet sent).
    pub fn held_bytes(&self) -> (u64, u64, u64) {
        (self.unsent_bytes, self.relay_bytes, self.commit_bytes)
    }

    /// Bytes handed to the engine and neither arrived nor returned.
    pub fn net_bytes(&self) -> u64 {
        self.net_bytes
    }

    /// Host `h` has committed packets (its NIC should ask again when free).
    pub fn has_committed(&self, h: u32) -> bool {
        self.hosts[h as usize].commits.iter().any(|c| !c.is_empty())
    }

    #[inline]
    fn tor_of(&self, h: u32) -> u32 {
        h / self.cfg.hosts_per_tor
    }

    /// A bulk flow of `size` bytes (> 0) starts at host `src` for host `dst` (another
    /// host). True: the engine must schedule a step at the start of the next superslice.
    ///
    /// `dst` should be in another rack: a flow inside one rack is accepted but never
    /// committed (as in the engine this module was taken from), so it never completes and
    /// the steps never stop while it is held.
    pub fn add_flow(&mut self, flow: u32, src: u32, dst: u32, size: u64) -> bool {
        let n_hosts = self.hosts.len() as u32;
        assert!(src < n_hosts && dst < n_hosts && src != dst, "RotorLB: flow {flow} {src}->{dst}: bad hosts");
        assert!(size > 0, "RotorLB: flow {flow} has no bytes");
        if flow as usize >= self.flows.len() {
            self.flows.resize(flow as usize + 1, FlowSt::default());
        }
        assert!(self.flows[flow as usize].size == 0, "RotorLB: flow {flow} added twice");
        self.flows[flow as usize] = FlowSt { src, dst, size, unsent: size };
        self.stats.offered_bytes += size;
        self.unsent_bytes += size;
        self.hosts[src as usize].local.push(flow);
        self.activate(src)
    }

    /// Mark `h` as holding bulk; true if the engine must schedule a step.
    fn activate(&mut self, h: u32) -> bool {
        let tor = self.tor_of(h);
        let hs = &mut self.hosts[h as usize];
        if !hs.active {
            hs.active = true;
            self.tor_active[tor as usize] += 1;
        }
        if self.pending {
            return false;
        }
        self.pending = true;
        true
    }

    fn host_has_bulk(&self, h: u32) -> bool {
        let hs = &self.hosts[h as usize];
        !hs.local.is_empty() || hs.relay_pkts > 0 || hs.commits.iter().any(|c| !c.is_empty())
    }

    /// Return the unsent commitments of rotor `r` at host `h` to its queues (relayed
    /// packets keep their order at the front of their queue).
    fn expire_commits(&mut self, h: u32, r: u32) {
        while let Some(it) = self.hosts[h as usize].commits[r as usize].pop_back() {
            self.commit_bytes -= it.payload as u64;
            self.requeue(h, it, true);
        }
    }

    fn requeue(&mut self, h: u32, it: Item, front: bool) {
        let fl = &mut self.flows[it.flow as usize];
        if fl.src == h {
            if fl.unsent == 0 {
                self.hosts[h as usize].local.push(it.flow);
            }
            fl.unsent += it.payload as u64;
            self.unsent_bytes += it.payload as u64;
        } else {
            let hs = &mut self.hosts[h as usize];
            let q = hs.relay.entry(it.fin).or_default();
            if front {
                q.push_front((it.flow, it.payload));
            } else {
                q.push_back((it.flow, it.payload));
            }
            hs.relay_pkts += 1;
            self.relay_bytes += it.payload as u64;
        }
    }

    /// Own packets host `h` has for host `d`.
    fn local_pkts(&self, h: u32, d: u32) -> u32 {
        let mut n = 0u64;
        for &f in &self.hosts[h as usize].local {
            let fl = &self.flows[f as usize];
            if fl.dst == d {
                n += fl.unsent.div_ceil(self.cfg.mss as u64);
            }
        }
        n.min(u32::MAX as u64) as u32
    }

    /// Relayed packets host `h` holds for host `d`.
    fn relay_pkts_for(&self, h: u32, d: u32) -> u32 {
        self.hosts[h as usize].relay.get(&d).map_or(0, |q| q.len() as u32)
    }

    /// Move up to `n` own packets for `d` (relayed ones when `relay`) into host `h`'s
    /// commit queue of rotor `r`, labelled for host `label`; `h` joins `kicks`.
    #[allow(clippy::too_many_arguments)]
    fn commit(&mut self, now: Ps, h: u32, r: u32, label: u32, d: u32, relay: bool, mut n: u32, kicks: &mut Vec<u32>) {
        let mss = self.cfg.mss as u64;
        let mut items = Vec::new();
        if relay {
            let hs = &mut self.hosts[h as usize];
            if let Some(q) = hs.relay.get_mut(&d) {
                while n > 0 {
                    let Some((f, pl)) = q.pop_front() else { break };
                    items.push(Item { flow: f, payload: pl, fin: d, label, at: 0 });
                    hs.relay_pkts -= 1;
                    self.relay_bytes -= pl as u64;
                    n -= 1;
                }
                if q.is_empty() {
                    hs.relay.remove(&d);
                }
            }
        } else {
            let mut i = 0;
            while n > 0 && i < self.hosts[h as usize].local.len() {
                let f = self.hosts[h as usize].local[i];
                let fl = &mut self.flows[f as usize];
                if fl.dst != d {
                    i += 1;
                    continue;
                }
                while n > 0 && fl.unsent > 0 {
                    let pl = fl.unsent.min(mss) as u32;
                    fl.unsent -= pl as u64;
                    self.unsent_bytes -= pl as u64;
                    items.push(Item { flow: f, payload: pl, fin: d, label, at: 0 });
                    n -= 1;
                }
                if fl.unsent == 0 {
                    self.hosts[h as usize].local.remove(i);
                } else {
                    i += 1;
                }
            }
        }
        if items.is_empty() {
            return;
        }
        self.stats.committed_pkts += items.len() as u64;
        let n = items.len() as u64;
        let hold = self.cfg.hold_ps;
        let hs = &mut self.hosts[h as usize];
        for (k, mut it) in items.into_iter().enumerate() {
            it.at = now + k as u64 * hold / n;
            self.commit_bytes += it.payload as u64;
            hs.commits[r as usize].push_back(it);
        }
        // stable: among equal times, earlier commitments first
        hs.commits[r as usize].make_contiguous().sort_by_key(|it| it.at);
        if self.kicked[h as usize] != self.stats.slices {
            self.kicked[h as usize] = self.stats.slices;
            kicks.push(h);
        }
    }

    /// The offer/accept step at the start of a superslice: `rotor` has just taken a new
    /// matching, in which `peer(tor)` is the rack it connects rack `tor` to (`None`: no
    /// circuit). Returns the hosts that received commitments, in the order of their first
    /// one: the engine polls their NICs, then calls [`end_slice`](Self::end_slice).
    pub fn on_slice(&mut self, now: Ps, rotor: u32, peer: impl Fn(u32) -> Option<u32>) -> Vec<u32> {
        assert!(rotor < self.cfg.uplinks, "RotorLB: rotor {rotor} out of range");
        self.pending = false;
        self.stats.slices += 1;
        let r = rotor;
        let hpr = self.cfg.hosts_per_tor;
        let max_pkts = self.cfg.max_pkts;
        let mss = self.cfg.mss as u64;
        let active: Vec<u32> = (0..self.cfg.tors).filter(|&t| self.tor_active[t as usize] > 0).collect();
        let cap_dst = (max_pkts / hpr).max(1);
        let acc_cap = 2 * cap_dst;
        let mut kicks = Vec::new();
        let mut pairs = Vec::new();
        // phase 1: relayed traffic, then direct traffic; collect offers
        let mut offers: Vec<(u32, u32, u32)> = Vec::new(); // (src host, final dst, pkts)
        for &a in &active {
            let b = peer(a).filter(|&b| b != a);
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].active {
                    self.expire_commits(i, r);
                }
            }
            let Some(b) = b else { continue };
            assert!(b < self.cfg.tors, "RotorLB: peer rack {b} out of range");
            pairs.push((a, b));
            for i in a * hpr..(a + 1) * hpr {
                self.send_cap[i as usize] = max_pkts;
            }
            for j in b * hpr..(b + 1) * hpr {
                self.recv_cap[j as usize] = max_pkts;
            }
            let end = now + self.cfg.hold_ps;
            for i in a * hpr..(a + 1) * hpr {
                if !self.hosts[i as usize].active {
                    continue;
                }
                let hs = &mut self.hosts[i as usize];
                hs.commit_end[r as usize] = end;
                hs.commit_next[r as usize] = now;
                for j in b * hpr..(b + 1) * hpr {
                    let n = self.relay_pkts_for(i, j).min(cap_dst).min(self.send_cap[i as usize]).min(self.recv_cap[j as usize]);
                    if n > 0 {
                        self.send_cap[i as usize] -= n;
                        self.recv_cap[j as usize] -= n;
                        self.commit(now, i, r, j, j, true, n, &mut kicks);
                    }
                }
            }
            // direct: progressive filling, one packet per (i, j) per round
            let mut demand: Vec<(u32, u32, u32)> = Vec::new();
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].local.is_empty() {
                    continue;
                }
                for j in b * hpr..(b + 1) * hpr {
                    let d = self.local_pkts(i, j);
                    if d > 0 {
                        demand.push((i, j, d));
                    }
                }
            }
            let mut grant = vec![0u32; demand.len()];
            loop {
                let mut progress = false;
                for (k, &(i, j, d)) in demand.iter().enumerate() {
                    if grant[k] < d && self.send_cap[i as usize] > 0 && self.recv_cap[j as usize] > 0 {
                        grant[k] += 1;
                        self.send_cap[i as usize] -= 1;
                        self.recv_cap[j as usize] -= 1;
                        progress = true;
                    }
                }
                if !progress {
                    break;
                }
            }
            for (k, &(i, j, _)) in demand.iter().enumerate() {
                if grant[k] > 0 {
                    self.commit(now, i, r, j, j, false, grant[k], &mut kicks);
                }
            }
            // offers: the rest of each host's own traffic to other racks, fair share of its budget
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].local.is_empty() || self.send_cap[i as usize] == 0 {
                    continue;
                }
                let mut dsts: Vec<(u32, u32)> = Vec::new();
                for &f in &self.hosts[i as usize].local {
                    let fl = &self.flows[f as usize];
                    if fl.dst / hpr == b || fl.dst / hpr == a {
                        continue;
                    }
                    let pk = fl.unsent.div_ceil(mss) as u32;
                    match dsts.iter_mut().find(|x| x.0 == fl.dst) {
                        Some(x) => x.1 += pk,
                        None => dsts.push((fl.dst, pk)),
                    }
                }
                dsts.sort_unstable();
                let mut give = vec![0u32; dsts.len()];
                let mut cap = self.send_cap[i as usize];
                while cap > 0 {
                    let mut progress = false;
                    for (k, &(_, want)) in dsts.iter().enumerate() {
                        if cap > 0 && give[k] < want {
                            give[k] += 1;
                            cap -= 1;
                            progress = true;
                        }
                    }
                    if !progress {
                        break;
                    }
                }
                for (k, &(d, _)) in dsts.iter().enumerate() {
                    if give[k] > 0 {
                        offers.push((i, d, give[k]));
                    }
                }
            }
        }
        // phase 2: hosts of b accept offers while their backlog per final destination allows
        for &(a, b) in &pairs {
            let my: Vec<usize> = (0..offers.len()).filter(|&k| offers[k].0 / hpr == a).collect();
            if my.is_empty() {
                continue;
            }
            for j in b * hpr..(b + 1) * hpr {
                let mut acc: Vec<(usize, u32)> = Vec::new();
                let mut room: Vec<u32> = my
                    .iter()
                    .map(|&k| {
                        let d = offers[k].1;
                        acc_cap.saturating_sub(self.relay_pkts_for(j, d) + self.local_pkts(j, d))
                    })
                    .collect();
                loop {
                    let mut progress = false;
                    for (m, &k) in my.iter().enumerate() {
                        let (i, _, n) = offers[k];
                        if n > 0 && room[m] > 0 && self.recv_cap[j as usize] > 0 && self.send_cap[i as usize] > 0 {
                            offers[k].2 -= 1;
                            room[m] -= 1;
                            self.recv_cap[j as usize] -= 1;
                            self.send_cap[i as usize] -= 1;
                            match acc.iter_mut().find(|x| x.0 == k) {
                                Some(x) => x.1 += 1,
                                None => acc.push((k, 1)),
                            }
                            progress = true;
                        }
                    }
                    if !progress {
                        break;
                    }
                }
                for (k, n) in acc {
                    let (i, d, _) = offers[k];
                    self.commit(now, i, r, j, d, false, n, &mut kicks);
                }
            }
        }
        self.swept = active;
        kicks
    }

    /// Close the step: hosts visited by it that hold nothing any more stop being visited.
    /// Call it after polling the NICs of the hosts [`on_slice`](Self::on_slice) returned
    /// (a host whose last packet left at once needs no further step). True: the engine
    /// must schedule a step at the start of the next superslice.
    pub fn end_slice(&mut self) -> bool {
        let hpr = self.cfg.hosts_per_tor;
        let mut any = false;
        for a in std::mem::take(&mut self.swept) {
            for i in a * hpr..(a + 1) * hpr {
                if self.hosts[i as usize].active && !self.host_has_bulk(i) {
                    self.hosts[i as usize].active = false;
                    self.tor_active[a as usize] -= 1;
                }
            }
            any |= self.tor_active[a as usize] > 0;
        }
        if any && !self.pending {
            self.pending = true;
            return true;
        }
        false
    }

    /// The next bulk packet host `h` may send at `now` (it is then in the network), or
    /// when to ask again, or `Idle` when nothing is committed. Commitments whose hold has
    /// ended expire here.
    pub fn poll_send(&mut self, h: u32, now: Ps) -> Poll {
        let u = self.cfg.uplinks;
        let mut wake = Ps::MAX;
        for i in 0..u {
            let r = (self.hosts[h as usize].rr + i) % u;
            let hs = &self.hosts[h as usize];
            if hs.commits[r as usize].is_empty() {
                continue;
            }
            if now >= hs.commit_end[r as usize] {
                self.expire_commits(h, r);
                continue;
            }
            let ready = hs.commit_next[r as usize].max(hs.commits[r as usize][0].at);
            if now < ready {
                wake = wake.min(ready);
                continue;
            }
            let pace = self.cfg.pace_ps;
            let hs = &mut self.hosts[h as usize];
            let it = hs.commits[r as usize].pop_front().unwrap();
            hs.commit_next[r as usize] = now + pace;
            hs.rr = (r + 1) % u;
            self.commit_bytes -= it.payload as u64;
            self.net_bytes += it.payload as u64;
            let relayed = self.flows[it.flow as usize].src != h;
            return Poll::Send(BulkPkt {
                flow: it.flow,
                payload: it.payload,
                fin: it.fin,
                label: it.label,
                holder: h,
                rotor: r,
                want_tor: self.tor_of(it.label),
                relayed,
            });
        }
        if wake != Ps::MAX {
            Poll::Wait(wake)
        } else {
            Poll::Idle
        }
    }

    /// Host `h`'s NIC sent 1 500 bytes of other traffic in a slot a committed bulk packet
    /// would have used (opera-sim's `RlbModule::NICpush`): the last packet of the rotor
    /// whose turn is next goes back to the front of its queue. True: the engine must
    /// schedule a step at the next superslice.
    pub fn nic_push(&mut self, h: u32) -> bool {
        let u = self.cfg.uplinks;
        for i in 0..u {
            let r = (self.hosts[h as usize].rr + i) % u;
            if let Some(it) = self.hosts[h as usize].commits[r as usize].pop_back() {
                self.commit_bytes -= it.payload as u64;
                self.stats.nic_pushed += 1;
                self.requeue(h, it, true);
                return self.activate(h);
            }
        }
        false
    }

    /// The circuit of `pkt` did not lead to `want_tor`: it goes back to the front of its
    /// holder's queue. True: the engine must schedule a step at the next superslice.
    pub fn on_return(&mut self, pkt: &BulkPkt) -> bool {
        self.stats.returns += 1;
        // wrapping: a packet returned twice shows in `check`, not as a panic
        self.net_bytes = self.net_bytes.wrapping_sub(pkt.payload as u64);
        let it = Item { flow: pkt.flow, payload: pkt.payload, fin: pkt.fin, label: pkt.label, at: 0 };
        self.requeue(pkt.holder, it, true);
        self.activate(pkt.holder)
    }

    /// `pkt` reached host `h` (its `label`). Delivered if `h` is its final host; otherwise
    /// `h` relays it. The flag: the engine must schedule a step at the next superslice.
    pub fn on_arrive(&mut self, h: u32, pkt: &BulkPkt) -> (Arrival, bool) {
        debug_assert_eq!(h, pkt.label, "RotorLB: bulk packet at a host it was not committed to");
        self.net_bytes = self.net_bytes.wrapping_sub(pkt.payload as u64);
        if pkt.fin == h {
            self.stats.delivered_bytes += pkt.payload as u64;
            return (Arrival::Delivered { flow: pkt.flow, payload: pkt.payload }, false);
        }
        if pkt.relayed {
            self.third_hops += 1;
        }
        self.stats.relayed_pkts += 1;
        let it = Item { flow: pkt.flow, payload: pkt.payload, fin: pkt.fin, label: h, at: 0 };
        self.requeue(h, it, false);
        (Arrival::Relayed, self.activate(h))
    }

    /// Byte conservation: offered = delivered + unsent + relayed + committed + in network,
    /// each term from its own counter; then each held term recounted from the queues, no
    /// packet relayed twice, and every host holding bulk visited by the steps. Costs
    /// O(hosts + held packets).
    pub fn check(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        let sum = self.stats.delivered_bytes as u128
            + self.unsent_bytes as u128
            + self.relay_bytes as u128
            + self.commit_bytes as u128
            + self.net_bytes as u128;
        if sum != self.stats.offered_bytes as u128 {
            errs.push(format!(
                "bulk bytes not conserved: offered {} != delivered {} + unsent {} + relayed {} + committed {} + in network {}",
                self.stats.offered_bytes, self.stats.delivered_bytes, self.unsent_bytes, self.relay_bytes,
                self.commit_bytes, self.net_bytes
            ));
        }
        let unsent: u64 = self.flows.iter().map(|f| f.unsent).sum();
        let (mut relay, mut commit) = (0u64, 0u64);
        for (h, hs) in self.hosts.iter().enumerate() {
            let n: usize = hs.relay.values().map(|q| q.len()).sum();
            if n != hs.relay_pkts as usize {
                errs.push(format!("host {h}: relay packet count {} != queued {n}", hs.relay_pkts));
            }
            relay += hs.relay.values().flatten().map(|x| x.1 as u64).sum::<u64>();
            commit += hs.commits.iter().flatten().map(|it| it.payload as u64).sum::<u64>();
            if !hs.active && self.host_has_bulk(h as u32) {
                errs.push(format!("host {h} holds bulk but is not visited by the steps"));
            }
        }
        for (name, counter, recount) in
            [("unsent", self.unsent_bytes, unsent), ("relayed", self.relay_bytes, relay), ("committed", self.commit_bytes, commit)]
        {
            if counter != recount {
                errs.push(format!("{name} bytes: counter {counter} != {recount} in the queues"));
            }
        }
        if self.third_hops > 0 {
            errs.push(format!("{} bulk packets relayed a second time", self.third_hops));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

#[cfg(test)]
mod tests;
