//! Building a simulation from its spec: validation, ports and calendar queues, endpoints,
//! flows and their dependencies, services, and the run's modes (decided here, once).

use crate::sim::*;

/// The run's modes, decided once when it is built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::sim) struct Modes {
    pub(in crate::sim) hosts: bool,
    /// Admission control is on (the spec asked, on a cyclic fabric with hop-by-hop
    /// routing), whether the spec asked, and packets sent by a later slice's decision.
    pub(in crate::sim) adm: bool,
    /// No option that acts on a relayed packet's hop is on (hosts, offloading, EQO,
    /// congestion detection, admission control) and the schedule cycles: relayed hops on
    /// calendar ports may take [`Sim::relay_calendar`].
    pub(in crate::sim) lean: bool,
    /// `lean`, with only calendar ports (slotted optical, no served queues, no ECN) and VLB
    /// or direct routing, and no service that acts on a source's packet: an ideal flow's
    /// packet may take [`Sim::inject_calendar`].
    pub(in crate::sim) lean_src: bool,
    /// The calendar ports (slotted, cyclic) keep only their queues' tails, and their
    /// planned transmissions as one [`Departures`] each (`Port::departs`): plans are written
    /// near each other instead of at the tails of a slice's worth of FIFOs per port. Set
    /// when no reader needs a queue's own bytes (ECN marking, queue estimation) and
    /// adaptive multipath does not read every candidate's exact count at every packet.
    pub(in crate::sim) flat_cal: bool,
    /// Some port marks ECN (else no hop reads a port's marking threshold).
    pub(in crate::sim) any_ecn: bool,
    pub(in crate::sim) adm_listed: bool,
    /// Links a packet may cross before a relay drops it as a loop (0: no limit).
    pub(in crate::sim) hop_limit: u32,
    /// Arrival slices read this far ahead of the arrival (`SimSpec::lookahead_ps`).
    pub(in crate::sim) lookahead: Ps,
}

impl Modes {
    /// The modes of a run, from its spec, schedule, router and ports (whether a switch
    /// buffer is shared, whether RotorLB runs): the one place they are decided.
    pub(in crate::sim) fn decide(spec: &SimSpec, sched: &Schedule, router: &Router, ports: &[Port], shared: bool, rotorlb: bool)
        -> Modes {
        let s = &spec.services;
        let eqo = s.eqo_interval_ps > 0;
        let offload = s.offload_queues > 0;
        let hosts = spec.hosts_mode;
        let adm = spec.admission_control && !sched.is_static()
            && matches!(router, Router::Table(_) | Router::Direct(_) | Router::Vlb(_) | Router::Hoho(_) | Router::Ucmp(..));
        let any_ecn = ports.iter().any(|p| p.ecn_k > 0);
        let lean = !shared && !hosts && !offload && !eqo && !s.congestion_detection && !adm && !sched.is_static()
            && spec.lookahead_ps == 0;
        let expander = spec.router == RouterKind::Expander;
        Modes {
            hosts,
            adm,
            lean,
            lean_src: lean && matches!(router, Router::Vlb(_) | Router::Direct(_)) && !s.pushback && !s.flow_pausing
                && spec.pias_thresholds.is_empty() && !rotorlb && !expander
                && ports.iter().all(|p| p.kind == PortKind::Optical && !p.served && p.ecn_k == 0),
            flat_cal: !any_ecn && !eqo && spec.multipath != Multipath::Adaptive,
            any_ecn,
            adm_listed: spec.admission_control,
            hop_limit: spec.hop_limit,
            lookahead: spec.lookahead_ps,
        }
    }
}

impl Sim {
    /// Validate a spec and build the simulation at t = 0.
    pub fn new(spec: SimSpec) -> Result<Self, SpecError> {
        spec.validate()?;
        let n_ports = spec.n_ports();
        let nodes = spec.nodes as usize;
        let mut port_node = vec![0u32; n_ports];
        for n in 0..nodes {
            for gp in spec.port_offset[n]..spec.port_offset[n + 1] {
                port_node[gp as usize] = n as u32;
            }
        }
        let optical: Vec<bool> = spec.port_kind.iter().map(|&k| k == PortKind::Optical).collect();
        let has_optical = optical.iter().any(|&o| o);
        let mut peer = spec.sched_peer.clone();
        if peer.is_empty() {
            peer = vec![NONE; n_ports * spec.slice_ps.len().max(1)];
        }
        // only optical ports take their peer from the schedule
        let rows = peer.len() / n_ports.max(1);
        for r in 0..rows {
            for gp in 0..n_ports {
                if !optical[gp] {
                    peer[r * n_ports + gp] = NONE;
                }
            }
        }
        let sched = if spec.slice_ps.is_empty() {
            Schedule::fixed(n_ports, peer)?
        } else {
            Schedule::cyclic(spec.slice_ps.clone(), spec.guardband_ps, n_ports, peer)?
        };
        for gp in 0..n_ports {
            if optical[gp] {
                for idx in 0..sched.slices() {
                    let q = sched.peer(gp as u32, idx);
                    if q != NONE && !optical[q as usize] {
                        return Err(SpecError::new(format!("schedule.peer[{idx}][{gp}]"), q, "optical circuits must join two optical ports"));
                    }
                }
            }
        }
        let router = match spec.router {
            RouterKind::Table => Router::Table(build_tables(nodes, &spec.port_offset, &spec.entries)?),
            RouterKind::Source => {
                let mut rs: Vec<_> = spec.routes.clone();
                rs.sort();
                let mut routes = Routes::default();
                for (src, dst, ts, hops) in rs {
                    routes.routes.push((src, dst, ts, routes.hops.len() as u32, hops.len() as u32));
                    routes.hops.extend(hops.iter().map(|&(port, dep)| Action { port, dep }));
                }
                routes.index(nodes);
                Router::Source(routes)
            }
            RouterKind::Vlb | RouterKind::Direct => {
                if !has_optical {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router), "built-in VLB/direct routing needs optical ports"));
                }
                let ci = ConnIndex::new(&sched, &port_node, &spec.port_offset, &optical);
                if spec.router == RouterKind::Vlb { Router::Vlb(ci) } else { Router::Direct(ci) }
            }
            RouterKind::Hoho | RouterKind::Ucmp => {
                if !has_optical || sched.is_static() {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router), "HOHO/UCMP need a cyclic optical schedule"));
                }
                if spec.max_hop == 0 || spec.max_hop > 16 {
                    return Err(SpecError::new("max_hop", spec.max_hop, "expected 1..=16"));
                }
                let cells = nodes as u64 * nodes as u64 * sched.slices() as u64 * spec.max_hop as u64;
                if cells > 200_000_000 {
                    return Err(SpecError::new("routing", format!("{:?}", spec.router),
                        format!("earliest-path index too large ({nodes} nodes x {} slices); use vlb or direct", sched.slices())));
                }
                // the next-hop sets (a span and about as many actions as ports per cell) and
                // the Pareto paths, refused before they are built when they cannot fit
                let ports_per_node = (n_ports / nodes.max(1)) as u64;
                crate::error::check_memory("max_hop", spec.max_hop, cells * (16 + 8 * ports_per_node.max(1)),
                    &format!("the earliest-path index ({nodes} nodes x {} slices x {} hops)", sched.slices(), spec.max_hop))?;
                let idx = crate::earliest::EarliestIndex::new(&sched, &port_node, &spec.port_offset, &optical, spec.max_hop);
                if spec.router == RouterKind::Hoho {
                    Router::Hoho(idx)
                } else {
                    if !(spec.ucmp_alpha >= 0.0 && spec.ucmp_alpha.is_finite()) {
                        return Err(SpecError::new("ucmp_alpha", spec.ucmp_alpha, "must be a non-negative number"));
                    }
                    let rate = (0..n_ports).filter(|&g| optical[g]).map(|g| spec.port_rate_bps[g]).min().unwrap_or(1);
                    Router::Ucmp(idx, spec.ucmp_alpha, spec.slice_ps[0], rate)
                }
            }
            RouterKind::Expander => {
                if !has_optical {
                    return Err(SpecError::new("routing", "expander", "needs optical ports"));
                }
                Router::Expander(crate::expander::SlicePaths::with_paths(&sched, &port_node, &spec.port_offset, &optical,
                                                                         spec.expander_paths)?)
            }
        };
        let no_disc = Discipline::default();
        let ports = (0..n_ports).map(|gp| {
            let d = spec.port_disc.get(gp).unwrap_or(&no_disc);
            let vcs = spec.transport.credit_vcs.max(1) as usize;
            let classes = if d.credit { vcs } else { d.class_cap.len().max(1) };
            Port {
                ecn_k: d.ecn_k,
                served: d.served(),
                trim: d.trim,
                classes: if d.served() { smallvec![VecDeque::new(); classes] } else { SmallVec::new() },
                class_bytes: smallvec![0; if d.served() { classes } else { 0 }],
                class_cap: if d.credit { smallvec![u64::MAX; vcs] } else if d.class_cap.is_empty() { smallvec![spec.port_buffer_bytes[gp]] } else { SmallVec::from_slice(&d.class_cap) },
                credit: if d.credit && spec.port_kind[gp] != PortKind::HostDown { smallvec![spec.transport.credit_bytes; vcs] } else { SmallVec::new() },
                quantum: d.weights.iter().map(|&w| w as u64 * (spec.mtu_bytes + spec.header_bytes) as u64).collect(),
                deficit: vec![0; d.weights.len()],
                ..Port::new(spec.port_kind[gp], Rate::new(spec.port_rate_bps[gp]), spec.port_prop_ps[gp], spec.port_buffer_bytes[gp],
                            spec.port_peer[gp])
            }
        }).collect();
        let port_class: Vec<u8> = (0..n_ports).map(|gp| match spec.port_kind[gp] {
            PortKind::Electrical | PortKind::Unused => 0,
            PortKind::Optical if spec.slice_ps.is_empty() => 1,
            PortKind::Optical => 2,
            PortKind::HostDown => 3,
        }).enumerate().map(|(gp, c)| match spec.port_link_class.get(gp) {
            Some(&o) if o != NONE => o as u8,
            _ => c,
        }).collect();
        let eps = (0..spec.ep_node.len()).map(|i| Endpoint {
            node: spec.ep_node[i],
            rate: Rate::new(spec.ep_rate_bps[i]),
            prop: spec.ep_prop_ps[i],
            down_port: spec.ep_down_port[i],
            busy_until: 0,
            nic_bytes: 0,
            scheduled: false,
            voq: BTreeMap::new(),
            voqs: Vec::new(),
            voq_free: Vec::new(),
            rr: VecDeque::new(),
            sleeping: std::collections::BinaryHeap::new(),
            sched_at: 0,
            ctrl: VecDeque::new(),
            tready: VecDeque::new(),
            tsleep: std::collections::BinaryHeap::new(),
            turn: false,
        }).collect();
        let flows = (0..spec.flow_src.len()).map(|i| Flow {
            start: spec.flow_start_ps[i],
            src: spec.flow_src[i],
            dst: spec.flow_dst[i],
            size: spec.flow_size[i],
            injected: 0,
            delivered: 0,
            finish: Ps::MAX,
            max_hops: 0,
            tp: spec.flow_transport.get(i).copied().unwrap_or_default(),
            conn: NONE,
            parked: NONE,
            inq: false,
            timer_at: Ps::MAX,
            retx: 0,
            timeouts: 0,
            acked_at: Ps::MAX,
            started: false,
        }).collect();
        // flows without dependencies start at their time, in order; the others when the
        // last of their dependencies finishes
        let nf = spec.flow_src.len();
        // (a flow of co-flow c >= 1 waits for one barrier: the end of co-flow c - 1)
        let barrier = |i: usize| spec.flow_coflow.get(i).is_some_and(|&c| c != NONE && c > 0);
        let mut timed: Vec<u32> = (0..nf as u32).filter(|&i| spec.deps_of(i as usize).is_empty() && !barrier(i as usize)).collect();
        timed.sort_by_key(|&i| spec.flow_start_ps[i as usize]);
        let dep_wait: Vec<u32> = (0..nf).map(|i| spec.deps_of(i).len() as u32 + barrier(i) as u32).collect();
        // co-flows: unfinished flows per co-flow, and each co-flow's flows
        let ncf = spec.coflows();
        let mut coflow_left = vec![0u32; ncf];
        let mut coflow_ptr = vec![0u32; if ncf > 0 { ncf + 1 } else { 0 }];
        let mut coflow_flows = Vec::new();
        if ncf > 0 {
            for &c in &spec.flow_coflow {
                if c != NONE {
                    coflow_left[c as usize] += 1;
                    coflow_ptr[c as usize + 1] += 1;
                }
            }
            for c in 0..ncf {
                coflow_ptr[c + 1] += coflow_ptr[c];
            }
            coflow_flows = vec![0u32; coflow_ptr[ncf] as usize];
            let mut at = coflow_ptr.clone();
            for (i, &c) in spec.flow_coflow.iter().enumerate() {
                if c != NONE {
                    coflow_flows[at[c as usize] as usize] = i as u32;
                    at[c as usize] += 1;
                }
            }
        }
        let mut dependents_ptr = vec![0u32; if spec.flow_dep_ptr.is_empty() { 0 } else { nf + 1 }];
        let mut dependents = vec![0u32; spec.flow_dep_ids.len()];
        if !dependents_ptr.is_empty() {
            for &d in &spec.flow_dep_ids {
                dependents_ptr[d as usize + 1] += 1;
            }
            for i in 0..nf {
                dependents_ptr[i + 1] += dependents_ptr[i];
            }
            let mut at = dependents_ptr.clone();
            for i in 0..nf {
                for &d in spec.deps_of(i) {
                    dependents[at[d as usize] as usize] = i as u32;
                    at[d as usize] += 1;
                }
            }
        }
        let dep_gap = if spec.flow_gap_ps.is_empty() { vec![0; if dependents_ptr.is_empty() && ncf == 0 { 0 } else { nf }] } else { spec.flow_gap_ps.clone() };
        let clock = Clock::start(&sched);
        let mut sim = Sim {
            clock,
            heap: EventList::with_lookahead(LOOKAHEAD),
            sched,
            eps,
            flows,
            services: spec.services,
            eqo: crate::services::Eqo::new(spec.services.eqo_interval_ps, n_ports),
            offload: crate::services::Offload::new(spec.services.offload_queues, {
                let mut nh = vec![Vec::new(); nodes];
                if spec.hosts_mode {
                    for (i, &n) in spec.ep_node.iter().enumerate() {
                        nh[n as usize].push(i as u32);
                    }
                }
                nh
            }, spec.seed),
            stop_when: spec.stop_when,
            ll_total: spec.flow_transport.iter().filter(|&&t| t != TransportKind::RotorLb).count() as u64
                + (spec.flow_src.len() - spec.flow_transport.len().min(spec.flow_src.len())) as u64,
            ll_done: 0,
            stopped: false,
            msg: messages::Messages::default(),
            droplog: droplog::DropLog::new(spec.log_drops),
            pool: Pool {
                pkt: Vec::new(),
                x: Vec::new(),
                free: Vec::new(),
                live: 0,
                peak: 0,
            },
            acct: Counters::new(),
            smp: Sampling {
                interval: spec.sample_interval_ps,
                watch: spec.watch_ports.clone(),
                out_ts: Default::default(),
                collect_tm: spec.collect_tm,
                tm: BTreeMap::new(),
                net_series: spec.net_series,
                out_net: Vec::new(),
                net_last: NetSample::default(),
            },
            pb: PushBack::new(),
            hold: Hold {
                on: spec.hold_unrouted,
                queues: vec![BTreeMap::new(); nodes],
                bytes: vec![0; nodes],
                cap: (0..nodes).map(|n| (spec.port_offset[n]..spec.port_offset[n + 1])
                    .filter(|&g| spec.port_kind[g as usize] != PortKind::HostDown)
                    .map(|g| spec.port_buffer_bytes[g as usize]).sum()).collect(),
                waiters: vec![Vec::new(); nodes],
                release_at: Ps::MAX,
                stats: HoldStats::default(),
                peak_node: vec![0; nodes],
            },
            rc: Reconfigs::new(n_ports),
            fail: Failures {
                events: Vec::new(),
                down: Vec::new(),
                n_down: 0,
                log: Vec::new(),
            },
            credit: Credit {
                blocked: Vec::new(),
                blocked_listed: vec![false; n_ports],
                watchdog_at: Ps::MAX,
                deadlock: None,
                on: spec.flow_transport.contains(&TransportKind::Credit),
                port_vc: if spec.transport.credit_vc_step.is_some() {
                    (0..n_ports).map(|gp| spec.port_disc.get(gp).map_or(0, |d| d.vc_class)).collect()
                } else {
                    Vec::new()
                },
            },
            tg: TransportGlue {
                params: spec.transport,
                conns: Vec::new(),
                conn_free: Vec::new(),
                loss: spec.loss.iter().copied().collect(),
                pias: spec.pias_thresholds.clone(),
                pacers: Vec::new(),
                pacer_at: Vec::new(),
                app_rate: spec.flow_app_rate_bps.clone(),
            },
            rlb: RlbGlue {
                lb: None,
                ports: Vec::new(),
                meta: Vec::new(),
                event: false,
            },
            deps: Deps {
                next_flow: 0,
                timed,
                dep_wait,
                dep_gap,
                dependents_ptr,
                dependents,
                flow_coflow: spec.flow_coflow.clone(),
                coflow_left,
                coflow_ptr,
                coflow_flows,
            },
            net: Net {
                port_node,
                port_offset: spec.port_offset.clone(),
                optical,
                ports,
                cal: Vec::new(),
                rx_last: vec![(u32::MAX, NONE); n_ports],
                mtu: spec.mtu_bytes,
                header: spec.header_bytes,
                port_class,
                shared: buffer::SharedBuffers::default(),
                shared_on: false,
            },
            rt: Routing {
                router,
                multipath: spec.multipath,
                rng_route: Stream::new(spec.seed, "routing"),
                rng_paths: Stream::new(spec.seed, "routing.expander_paths"),
                seed: spec.seed,
                max_hop: spec.max_hop,
                route_gen: 0,
                expander: spec.router == RouterKind::Expander,
                scratch: Vec::new(),
            },
            mode: Modes::default(),
        };
        sim.net.shared = buffer::SharedBuffers::new(spec.shared_buffer_bytes.clone(), spec.buffer_alpha.clone(),
            spec.port_buffer_bytes.clone(),
            sim.net.ports.iter().map(|p| p.class_cap.iter().copied().collect()).collect())?;
        sim.net.shared_on = sim.net.shared.on();
        for n in 0..nodes {
            let b = sim.net.shared.pool(n as u32);
            if b > 0 {
                sim.hold.cap[n] = b;
            }
        }
        if spec.flow_transport.contains(&TransportKind::RotorLb) {
            sim.setup_rotorlb(&spec)?;
        }
        sim.mode = Modes::decide(&spec, &sim.sched, &sim.rt.router, &sim.net.ports, sim.net.shared_on, sim.rlb.lb.is_some());
        if let Some(&f) = sim.deps.timed.first() {
            let t = sim.flows[f as usize].start;
            sim.push(t, Ev::NextFlows);
        }
        if sim.smp.interval > 0 && (!sim.smp.watch.is_empty() || sim.smp.net_series) {
            sim.push(sim.smp.interval, Ev::Sample);
        }
        Ok(sim)
    }
}
