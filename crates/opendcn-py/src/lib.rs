//! PyO3 bindings of the opendcn engine: convert a spec dict of numpy arrays, run the
//! engine with the GIL released, return numpy columns, map errors. Nothing else.

/// Put the counters and per-flow columns every engine reports (same field names in every
/// engine's output struct) into the dict `$d`; consumes the flow columns of `$o`.
macro_rules! common_output {
    ($py:expr, $d:expr, $o:expr) => {{
        let (py, d) = ($py, &$d);
        d.set_item("now_ps", $o.now_ps)?;
        d.set_item("events", $o.events)?;
        d.set_item("packet_hops", $o.packet_hops)?;
        d.set_item("flows_started", $o.flows_started)?;
        d.set_item("flows_completed", $o.flows_completed)?;
        d.set_item("bytes_offered", $o.bytes_offered)?;
        d.set_item("bytes_delivered", $o.bytes_delivered)?;
        d.set_item("bytes_dropped", $o.bytes_dropped)?;
        d.set_item("bytes_in_flight", $o.bytes_in_flight)?;
        let drops = pyo3::types::PyDict::new(py);
        for (k, v) in &$o.drops {
            drops.set_item(k, v)?;
        }
        d.set_item("drops", drops)?;
        d.set_item("collisions", $o.collisions)?;
        d.set_item("guardband_violations", $o.guardband_violations)?;
        d.set_item("trace_hash", $o.trace_hash)?;
        let fin: Vec<i64> = $o.flow_finish_ps.iter().map(|&f| if f == u64::MAX { -1 } else { f as i64 }).collect();
        d.set_item("flow_finish_ps", numpy::PyArray1::from_vec(py, fin))?;
        let delivered: Vec<i64> = $o.flow_delivered.iter().map(|&x| x as i64).collect();
        d.set_item("flow_delivered", numpy::PyArray1::from_vec(py, delivered))?;
        let hops: Vec<i64> = $o.flow_hops.iter().map(|&h| h as i64).collect();
        d.set_item("flow_hops", numpy::PyArray1::from_vec(py, hops))?;
        d.set_item("invariant_errors", pyo3::types::PyList::new(py, &$o.invariant_errors)?)?;
    }};
}

mod shale;
mod slotted;
mod spec_io;

use numpy::{PyArray1, PyReadonlyArray1};
use opendcn_core::spec::{Discipline, Multipath, PortKind, RouterKind, StopWhen, TransportKind, TransportParams};
use opendcn_core::timeflow::{Entry, WILD};
use opendcn_core::units::NONE;
use opendcn_core::{Sim, SimSpec};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use spec_io::{bad, col, opt_col, opt_scalar, scalar, spec_err, u32_col, u32s, u64_col, u64s};

create_exception!(_core, EngineSpecError, PyValueError, "A simulation spec the engine cannot run.");
create_exception!(_core, EngineInternalError, pyo3::exceptions::PyRuntimeError, "An engine bug stopped the simulation.");

/// Run engine code with the GIL released; a panic (an engine bug) becomes a named
/// Python error instead of reaching the user as a crash.
fn run_guarded<F: FnOnce() + Send>(py: Python<'_>, f: F) -> PyResult<()> {
    py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))).map_err(|e| {
        let msg = e.downcast_ref::<String>().cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown".into());
        EngineInternalError::new_err(format!("engine bug (please report, with the spec and seed): {msg}"))
    })
}

fn parse_spec(d: &Bound<'_, PyDict>) -> PyResult<SimSpec> {
    let port_offset = u32_col(d, "port_offset")?;
    let kinds = col(d, "port_kind")?
        .into_iter()
        .map(|k| PortKind::from_code(k as u8).filter(|_| (0..4).contains(&k)).ok_or_else(|| bad("port_kind", k, "expected 0..3")))
        .collect::<PyResult<Vec<_>>>()?;
    let router = match scalar::<String>(d, "router")?.as_str() {
        "table" => RouterKind::Table,
        "source" => RouterKind::Source,
        "vlb" => RouterKind::Vlb,
        "direct" => RouterKind::Direct,
        "hoho" => RouterKind::Hoho,
        "ucmp" => RouterKind::Ucmp,
        "expander" => RouterKind::Expander,
        other => return Err(bad("router", other, "expected table, source, vlb, direct, hoho, ucmp or expander")),
    };
    let multipath = match scalar::<String>(d, "multipath")?.as_str() {
        "packet" => Multipath::Packet,
        "flow" => Multipath::Flow,
        "adaptive" => Multipath::Adaptive,
        other => return Err(bad("multipath", other, "expected packet, flow or adaptive")),
    };
    let tf = ["tf_node", "tf_arr", "tf_src", "tf_dst", "tf_dep", "tf_port"]
        .iter()
        .map(|k| opt_col(d, k).and_then(|v| u32s(v, k)))
        .collect::<PyResult<Vec<_>>>()?;
    let n_entries = tf[0].len();
    if tf.iter().any(|c| c.len() != n_entries) {
        return Err(bad("tables", n_entries, "entry columns differ in length"));
    }
    let entries = (0..n_entries)
        .map(|i| (tf[0][i], Entry { arr: tf[1][i], src: tf[2][i], dst: tf[3][i], dep: tf[4][i], port: tf[5][i] }))
        .collect();
    // source routes: rt_src, rt_dst, rt_ts, rt_len (hops per route), hop_port, hop_dep
    let rt = ["rt_src", "rt_dst", "rt_ts", "rt_len", "hop_port", "hop_dep"]
        .iter()
        .map(|k| opt_col(d, k).and_then(|v| u32s(v, k)))
        .collect::<PyResult<Vec<_>>>()?;
    let mut routes = Vec::new();
    let mut h = 0usize;
    for i in 0..rt[0].len() {
        let len = rt[3][i] as usize;
        if h + len > rt[4].len() || rt[5].len() != rt[4].len() {
            return Err(bad("routes", i, "hop arrays shorter than route lengths"));
        }
        let hops = (h..h + len).map(|j| (rt[4][j], rt[5][j])).collect();
        routes.push((rt[0][i], rt[1][i], rt[2][i], hops));
        h += len;
    }
    let n_ports = *port_offset.last().unwrap_or(&0) as usize;
    let flow_transport = opt_col(d, "flow_transport")?
        .into_iter()
        .map(|c| TransportKind::from_code(c).ok_or_else(|| bad("flow_transport", c, "expected 0 (ideal), 1 (tcp), 2 (dctcp), 3 (ndp), 4 (credit) or 5 (rotorlb)")))
        .collect::<PyResult<Vec<_>>>()?;
    let dt = TransportParams::default();
    let transport = TransportParams {
        ctrl_bytes: opt_scalar(d, "ctrl_bytes", dt.ctrl_bytes)?,
        tcp_init_cwnd: opt_scalar(d, "tcp_init_cwnd", dt.tcp_init_cwnd)?,
        tcp_init_ssthresh: opt_scalar(d, "tcp_init_ssthresh", dt.tcp_init_ssthresh)?,
        tcp_dupack: opt_scalar(d, "tcp_dupack", dt.tcp_dupack)?,
        tcp_min_rto_ps: opt_scalar(d, "tcp_min_rto_ps", dt.tcp_min_rto_ps)?,
        tcp_init_rto_ps: opt_scalar(d, "tcp_init_rto_ps", dt.tcp_init_rto_ps)?,
        tcp_max_rto_ps: opt_scalar(d, "tcp_max_rto_ps", dt.tcp_max_rto_ps)?,
        dctcp_g: opt_scalar(d, "dctcp_g", dt.dctcp_g)?,
        ndp_init_window: opt_scalar(d, "ndp_init_window", dt.ndp_init_window)?,
        ndp_rto_ps: opt_scalar(d, "ndp_rto_ps", dt.ndp_rto_ps)?,
        ndp_return_to_sender: opt_scalar(d, "ndp_return_to_sender", dt.ndp_return_to_sender)?,
        credit_bytes: opt_scalar(d, "credit_bytes", dt.credit_bytes)?,
        credit_vcs: opt_scalar(d, "credit_vcs", dt.credit_vcs)?,
        deadlock_timeout_ps: opt_scalar(d, "deadlock_timeout_ps", dt.deadlock_timeout_ps)?,
        ndp_pull_rate: opt_scalar(d, "ndp_pull_rate", dt.ndp_pull_rate)?,
        ndp_pacer_per_flow: opt_scalar(d, "ndp_pacer_per_flow", dt.ndp_pacer_per_flow)?,
        pad_segments: opt_scalar(d, "pad_segments", dt.pad_segments)?,
        bulk_slots: opt_scalar(d, "bulk_slots", dt.bulk_slots)?,
        nic_push: opt_scalar(d, "nic_push", dt.nic_push)?,
        credit_vc_step: if d.contains("credit_vc_step")? { Some(scalar(d, "credit_vc_step")?) } else { None },
    };
    // port disciplines: ECN threshold, trimming and the number of priority classes per
    // port, and the class caps of ports with more than one class, flattened in port order
    let ecn_k = u64s(opt_col(d, "port_ecn_k")?, "port_ecn_k")?;
    let trim = opt_col(d, "port_trim")?;
    let classes = opt_col(d, "port_classes")?;
    let caps = u64s(opt_col(d, "class_cap")?, "class_cap")?;
    let credit = opt_col(d, "port_credit")?;
    // credit: each port's class for the routing's virtual-channel rule (`credit_vc_step`)
    let vc_class = opt_col(d, "port_vc_class")?;
    if !vc_class.is_empty() && vc_class.len() != n_ports {
        return Err(bad("port_vc_class", vc_class.len(), &format!("expected one value per port ({n_ports})")));
    }
    if let Some(gp) = vc_class.iter().position(|c| !(0..8).contains(c)) {
        return Err(bad(&format!("ports[{gp}].vc_class"), vc_class[gp], "expected a virtual-channel class 0..8"));
    }
    // weighted ports (flag per port) take one weight per class from `class_weight`, in port order
    let weighted = opt_col(d, "port_weighted")?;
    let weights = u32s(opt_col(d, "class_weight")?, "class_weight")?;
    let mut wat = 0usize;
    if !credit.is_empty() && credit.len() != n_ports {
        return Err(bad("port_credit", credit.len(), &format!("expected one value per port ({n_ports})")));
    }
    let mut port_disc = Vec::new();
    if !ecn_k.is_empty() || !trim.is_empty() || !classes.is_empty() {
        for (name, len) in [("port_ecn_k", ecn_k.len()), ("port_trim", trim.len()), ("port_classes", classes.len())] {
            if len != n_ports {
                return Err(bad(name, len, &format!("expected one value per port ({n_ports})")));
            }
        }
        let mut at = 0usize;
        for gp in 0..n_ports {
            let k = classes[gp];
            if !(0..=8).contains(&k) {
                return Err(bad(&format!("ports[{gp}].classes"), k, "expected 0..=8 priority classes"));
            }
            let class_cap = if k > 1 {
                let k = k as usize;
                if at + k > caps.len() {
                    return Err(bad("class_cap", caps.len(), "fewer caps than priority classes"));
                }
                at += k;
                caps[at - k..at].to_vec()
            } else {
                Vec::new()
            };
            let w = if weighted.get(gp).is_some_and(|&x| x != 0) {
                if wat + class_cap.len() > weights.len() {
                    return Err(bad("class_weight", weights.len(), "fewer weights than priority classes"));
                }
                wat += class_cap.len();
                weights[wat - class_cap.len()..wat].to_vec()
            } else {
                Vec::new()
            };
            port_disc.push(Discipline { class_cap, ecn_k: ecn_k[gp], trim: trim[gp] != 0,
                                        credit: credit.get(gp).is_some_and(|&c| c != 0), weights: w,
                                        vc_class: vc_class.get(gp).map_or(0, |&c| c as u8) });
        }
        if at != caps.len() {
            return Err(bad("class_cap", caps.len(), &format!("expected {at} caps (one per class of each port with classes)")));
        }
    }
    Ok(SimSpec {
        nodes: scalar(d, "nodes")?,
        port_offset,
        port_kind: kinds,
        port_rate_bps: u64_col(d, "port_rate_bps")?,
        port_prop_ps: u64_col(d, "port_prop_ps")?,
        port_buffer_bytes: u64_col(d, "port_buffer_bytes")?,
        port_peer: u32_col(d, "port_peer")?,
        slice_ps: u64s(opt_col(d, "slice_ps")?, "slice_ps")?,
        guardband_ps: scalar(d, "guardband_ps")?,
        sched_peer: u32s(opt_col(d, "sched_peer")?, "sched_peer")?,
        hosts_mode: scalar(d, "hosts_mode")?,
        ep_node: u32_col(d, "ep_node")?,
        ep_rate_bps: u64_col(d, "ep_rate_bps")?,
        ep_prop_ps: u64_col(d, "ep_prop_ps")?,
        ep_down_port: u32_col(d, "ep_down_port")?,
        router,
        multipath,
        max_hop: opt_scalar(d, "max_hop", 3u32)?,
        ucmp_alpha: opt_scalar(d, "ucmp_alpha", 1.0f64)?,
        expander_paths: opt_scalar(d, "expander_paths", 1u32)?,
        services: opendcn_core::spec::Services {
            congestion_detection: opt_scalar(d, "congestion_detection", false)? || opt_scalar(d, "pushback", false)?,
            pushback: opt_scalar(d, "pushback", false)?,
            flow_pausing: opt_scalar(d, "flow_pausing", false)?,
            elephant_bytes: opt_scalar(d, "elephant_bytes", 100_000u64)?,
            eqo_interval_ps: opt_scalar(d, "eqo_interval_ps", 0u64)?,
            offload_queues: opt_scalar(d, "offload_queues", 0u32)?,
        },
        entries,
        routes,
        flow_start_ps: u64_col(d, "flow_start_ps")?,
        flow_src: u32_col(d, "flow_src")?,
        flow_dst: u32_col(d, "flow_dst")?,
        flow_size: u64_col(d, "flow_size")?,
        mtu_bytes: scalar(d, "mtu_bytes")?,
        header_bytes: scalar(d, "header_bytes")?,
        seed: scalar(d, "seed")?,
        sample_interval_ps: scalar(d, "sample_interval_ps")?,
        watch_ports: u32s(opt_col(d, "watch_ports")?, "watch_ports")?,
        collect_tm: scalar(d, "collect_tm")?,
        flow_transport,
        transport,
        port_disc,
        loss: {
            let lf = u32s(opt_col(d, "loss_flow")?, "loss_flow")?;
            let ls = u32s(opt_col(d, "loss_seq")?, "loss_seq")?;
            if lf.len() != ls.len() {
                return Err(bad("loss_seq", ls.len(), "expected one segment per loss_flow entry"));
            }
            lf.into_iter().zip(ls).collect()
        },
        pias_thresholds: u64s(opt_col(d, "pias_thresholds")?, "pias_thresholds")?,
        stop_when: match opt_scalar(d, "stop_when", "duration".to_string())?.as_str() {
            "duration" => StopWhen::Duration,
            "ndp-done" | "low-latency-done" => StopWhen::LowLatencyDone,
            "all-done" => StopWhen::AllDone,
            o => return Err(bad("stop_when", o, "expected duration, ndp-done or all-done")),
        },
        net_series: opt_scalar(d, "net_series", false)?,
        hold_unrouted: opt_scalar(d, "hold_unrouted", false)?,
        admission_control: opt_scalar(d, "admission_control", false)?,
        flow_dep_ptr: u32s(opt_col(d, "flow_dep_ptr")?, "flow_dep_ptr")?,
        flow_dep_ids: u32s(opt_col(d, "flow_dep_ids")?, "flow_dep_ids")?,
        flow_gap_ps: u64s(opt_col(d, "flow_gap_ps")?, "flow_gap_ps")?,
        flow_coflow: u32s(opt_col(d, "flow_coflow")?, "flow_coflow")?,
        flow_app_rate_bps: u64s(opt_col(d, "flow_app_rate_bps")?, "flow_app_rate_bps")?,
        hop_limit: opt_scalar(d, "hop_limit", 0u32)?,
        lookahead_ps: opt_scalar(d, "lookahead_ps", 0u64)?,
        port_link_class: u32s(opt_col(d, "port_link_class")?, "port_link_class")?,
        log_drops: opt_scalar(d, "log_drops", 0u64)?,
        shared_buffer_bytes: u64s(opt_col(d, "shared_buffer_bytes")?, "shared_buffer_bytes")?,
        buffer_alpha: match d.get_item("buffer_alpha")? {
            Some(v) if !v.is_none() => v.extract::<Vec<f64>>().map_err(|_| bad("buffer_alpha", v.to_string(), "expected a list of numbers"))?,
            _ => Vec::new(),
        },
    })
}

/// The `packets` dict of an output (the ledger's packet side; a slotted engine's packets
/// are its cells, without ECN).
pub(crate) fn packets_dict<'py>(py: Python<'py>, p: &opendcn_core::sim::PacketTotals, ecn_marks: u64) -> PyResult<Bound<'py, PyDict>> {
    let pk = PyDict::new(py);
    pk.set_item("sent", p.sent)?;
    pk.set_item("retransmitted", p.sent_retx)?;
    pk.set_item("control", p.sent_ctrl)?;
    pk.set_item("delivered", p.delivered)?;
    for (key, rows) in [("dropped", &p.dropped), ("dropped_payload_bytes", &p.dropped_bytes)] {
        let dr = PyDict::new(py);
        for (k, v) in rows {
            dr.set_item(k, v)?;
        }
        pk.set_item(key, dr)?;
    }
    pk.set_item("trimmed", p.trimmed)?;
    pk.set_item("trims", p.trims)?;
    pk.set_item("bounces", p.bounces)?;
    pk.set_item("in_flight", p.in_flight)?;
    pk.set_item("duplicate_bytes", p.duplicate_bytes)?;
    pk.set_item("ecn_marks", ecn_marks)?;
    Ok(pk)
}

fn wild(x: u32) -> i64 {
    if x == WILD { -1 } else { x as i64 }
}

/// One simulation held by Python: build from a spec dict, advance, read results.
#[pyclass(module = "opendcn._core")]
struct Simulator {
    sim: Sim,
    broken: bool,
}

#[pymethods]
impl Simulator {
    #[new]
    fn new(py: Python<'_>, spec: &Bound<'_, PyDict>) -> PyResult<Self> {
        let spec = parse_spec(spec)?;
        // a large run's build takes a second or more: it goes on another thread so that a
        // Ctrl-C meanwhile is answered within milliseconds (the abandoned build finishes and
        // is dropped on its own thread)
        let build = std::thread::spawn(move || std::panic::catch_unwind(|| Sim::new(spec)));
        while !build.is_finished() {
            py.detach(|| std::thread::sleep(std::time::Duration::from_millis(5)));
            py.check_signals()?;
        }
        let built = build.join().ok().and_then(|r| r.ok()).ok_or_else(|| {
            EngineInternalError::new_err("engine bug (please report, with the spec and seed): the build panicked")
        })?;
        Ok(Simulator { sim: built.map_err(spec_err)?, broken: false })
    }

    /// Current simulated time (ps).
    /// Expander routing: global ports of slice `idx`'s path from node `a` to node `b`.
    fn expander_path(&self, a: u32, b: u32, idx: u32) -> PyResult<Vec<u32>> {
        self.sim.expander_path(a, b, idx).ok_or_else(|| bad("expander_path", (a, b, idx), "needs the expander router and nodes/slice in range"))
    }

    /// Expander routing: global ports of every path slice `idx` keeps from node `a` to node
    /// `b` (the BFS path first).
    fn expander_paths(&self, a: u32, b: u32, idx: u32) -> PyResult<Vec<Vec<u32>>> {
        self.sim.expander_paths(a, b, idx).ok_or_else(|| bad("expander_paths", (a, b, idx), "needs the expander router and nodes/slice in range"))
    }

    /// True once the run ended early by its stop condition.
    #[getter]
    fn stopped(&self) -> bool {
        self.sim.stopped()
    }

    /// Close the time series with a last sample at the current time (end of the run).
    fn final_sample(&mut self) {
        self.sim.final_sample();
    }

    #[getter]
    fn now(&self) -> u64 {
        self.sim.now()
    }

    /// Run all events up to and including `t_ps`, with the GIL released; true when it
    /// stopped early at the delivery of a control message.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        if self.broken {
            return Err(EngineInternalError::new_err("this simulation stopped on an internal error"));
        }
        let sim = &mut self.sim;
        let mut mail = false;
        let res = run_guarded(py, || mail = sim.run_until(t_ps));
        self.broken = res.is_err();
        res.map(|_| mail)
    }

    /// Counters, per-flow columns, time series and invariant errors, as a dict.
    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.sim.output();
        let d = PyDict::new(py);
        common_output!(py, d, o);
        d.set_item("peak_packets", o.peak_packets)?;
        let ec = PyDict::new(py);
        for (k, v) in opendcn_core::sim::EVENT_KINDS.iter().zip(o.event_counts.iter()) {
            ec.set_item(*k, *v)?;
        }
        d.set_item("event_counts", ec)?;
        d.set_item("ts_time_ps", PyArray1::from_vec(py, o.ts_time_ps))?;
        d.set_item("ts_port", PyArray1::from_vec(py, o.ts_port.into_iter().map(|p| p as i64).collect::<Vec<_>>()))?;
        d.set_item("ts_queued_bytes", PyArray1::from_vec(py, o.ts_queued_bytes))?;
        d.set_item("ts_tx_bytes", PyArray1::from_vec(py, o.ts_tx_bytes))?;
        d.set_item("congestion_events", o.congestion_events)?;
        d.set_item("pushback_msgs", o.pushback_msgs)?;
        d.set_item("paused_attempts", o.paused_attempts)?;
        d.set_item("eqo_samples", o.eqo_samples)?;
        d.set_item("eqo_mean_abs_error", o.eqo_mean_abs_error)?;
        d.set_item("eqo_max_abs_error", o.eqo_max_abs_error)?;
        d.set_item("eqo_mean_error", o.eqo_mean_error)?;
        d.set_item("offloaded_packets", o.offloaded_packets)?;
        d.set_item("offloaded_bytes", o.offloaded_bytes)?;
        d.set_item("offload_peak_host_bytes", o.offload_peak_host_bytes)?;
        d.set_item("offload_refused", o.offload_refused)?;
        d.set_item("shared_peak_bytes", o.shared_peak_bytes)?;
        d.set_item("shared_peak_node", o.shared_peak_node)?;
        if o.drop_log.on() {
            let l = &o.drop_log;
            let dl = PyDict::new(py);
            let i64v = |v: &[u32]| PyArray1::from_vec(py, v.iter().map(|&x| if x == u32::MAX { -1 } else { x as i64 }).collect::<Vec<_>>());
            dl.set_item("time_ps", PyArray1::from_vec(py, l.time.iter().map(|&t| t as i64).collect::<Vec<_>>()))?;
            dl.set_item("node", i64v(&l.node))?;
            dl.set_item("gport", i64v(&l.port))?;
            dl.set_item("dep", i64v(&l.dep))?;
            dl.set_item("src_node", i64v(&l.src_node))?;
            dl.set_item("dst_node", i64v(&l.dst_node))?;
            dl.set_item("flow", i64v(&l.flow))?;
            dl.set_item("reason", PyArray1::from_vec(py, l.reason.iter().map(|&r| r as i64).collect::<Vec<_>>()))?;
            dl.set_item("hops", PyArray1::from_vec(py, l.hops.iter().map(|&h| h as i64).collect::<Vec<_>>()))?;
            dl.set_item("unlogged", l.unlogged)?;
            dl.set_item("pb_sent_ps", PyArray1::from_vec(py, l.pb_sent.iter().map(|&t| t as i64).collect::<Vec<_>>()))?;
            dl.set_item("pb_arrive_ps", PyArray1::from_vec(py, l.pb_arrive.iter().map(|&t| t as i64).collect::<Vec<_>>()))?;
            dl.set_item("pb_until_ps", PyArray1::from_vec(py, l.pb_until.iter().map(|&t| t.min(i64::MAX as u64) as i64).collect::<Vec<_>>()))?;
            dl.set_item("pb_src_node", i64v(&l.pb_src))?;
            dl.set_item("pb_dst_node", i64v(&l.pb_dst))?;
            dl.set_item("pb_gport", i64v(&l.pb_port))?;
            dl.set_item("pb_dep", i64v(&l.pb_dep))?;
            d.set_item("drop_log", dl)?;
        }
        d.set_item("reroutes", o.reroutes)?;
        d.set_item("rlb_slices", o.rlb_slices)?;
        d.set_item("rlb_committed_pkts", o.rlb_committed_pkts)?;
        d.set_item("rlb_returns", o.rlb_returns)?;
        d.set_item("rlb_relayed_pkts", o.rlb_relayed_pkts)?;
        d.set_item("rlb_host_bytes", o.rlb_host_bytes)?;
        d.set_item("flow_transport", PyArray1::from_vec(py, o.flow_transport.iter().map(|t| t.code()).collect::<Vec<_>>()))?;
        d.set_item("flow_start_ps", PyArray1::from_vec(py, o.flow_start_ps.iter().map(|&t| if t == u64::MAX { -1 } else { t as i64 }).collect::<Vec<_>>()))?;
        d.set_item("adm_deferred", o.adm_deferred)?;
        d.set_item("flow_acked_ps", PyArray1::from_vec(py, o.flow_acked_ps.iter().map(|&t| if t == u64::MAX { -1 } else { t as i64 }).collect::<Vec<_>>()))?;
        let ser = PyDict::new(py);
        let i64s = |v: Vec<u64>| PyArray1::from_vec(py, v.into_iter().map(|x| x as i64).collect::<Vec<_>>());
        let fields: [(&str, fn(&opendcn_core::sim::NetSample) -> u64); 9] = [
            ("time_ps", |s| s.time_ps), ("queued_bytes", |s| s.queued_bytes), ("tx_bytes", |s| s.tx_bytes),
            ("trims", |s| s.trims), ("bounces", |s| s.bounces), ("delivered_bytes", |s| s.delivered_bytes),
            ("bulk_host_bytes", |s| s.bulk_host_bytes), ("congestion_events", |s| s.congestion_events),
            ("pushback_messages", |s| s.pushback_msgs),
        ];
        for (k, f) in fields {
            ser.set_item(k, i64s(o.net_series.iter().map(f).collect()))?;
        }
        d.set_item("series", ser)?;
        d.set_item("packets", packets_dict(py, &o.packets, o.ecn_marks)?)?;
        d.set_item("flow_retx", PyArray1::from_vec(py, o.flow_retx.iter().map(|&x| x as i64).collect::<Vec<_>>()))?;
        d.set_item("flow_timeouts", PyArray1::from_vec(py, o.flow_timeouts.iter().map(|&x| x as i64).collect::<Vec<_>>()))?;
        let lat = PyDict::new(py);
        lat.set_item("count", o.latency_count)?;
        lat.set_item("mean_ps", o.latency_mean_ps)?;
        lat.set_item("p50_ps", o.latency_p50_ps)?;
        lat.set_item("p99_ps", o.latency_p99_ps)?;
        d.set_item("latency", lat)?;
        let ro = PyDict::new(py);
        for (k, v) in opendcn_core::sim::REORDER_BUCKETS.iter().zip(o.reorder.iter()) {
            ro.set_item(*k, *v)?;
        }
        d.set_item("reorder", ro)?;
        d.set_item("delivered_by_hops", o.delivered_by_hops.clone())?;
        d.set_item("delivered_pkts_by_hops", o.delivered_pkts_by_hops.clone())?;
        d.set_item("bulk_pkts_by_hops", o.bulk_pkts_by_hops.clone())?;
        d.set_item("delivered_by_class", o.delivered_by_class.to_vec())?;
        d.set_item("delivered_by_hops_class", o.delivered_by_hops_class.iter().map(|r| r.to_vec()).collect::<Vec<_>>())?;
        let m = PyDict::new(py);
        for (k, v) in [("sent", o.messages.sent), ("delivered", o.messages.delivered), ("dropped", o.messages.dropped),
                       ("in_flight", o.messages.in_flight)] {
            m.set_item(k, v)?;
        }
        d.set_item("messages", m)?;
        let ct = PyDict::new(py);
        let cc = PyDict::new(py);
        for (i, k) in opendcn_core::sim::LINK_CLASSES.iter().enumerate() {
            ct.set_item(*k, o.class_tx_bytes[i])?;
            cc.set_item(*k, o.class_capacity_bytes[i])?;
        }
        d.set_item("class_tx_bytes", ct)?;
        d.set_item("class_capacity_bytes", cc)?;
        let h = PyDict::new(py);
        let hs = o.hold;
        for (k, v) in [("packets", hs.packets), ("bytes", hs.bytes), ("peak_packets", hs.peak_packets),
                       ("peak_bytes", hs.peak_bytes), ("total", hs.total), ("released", hs.released),
                       ("overflow", hs.overflow), ("refused", hs.refused)] {
            h.set_item(k, v)?;
        }
        h.set_item("peak_bytes_by_node", PyArray1::from_vec(py, o.hold_peak_bytes_by_node.iter().map(|&x| x as i64).collect::<Vec<_>>()))?;
        d.set_item("hold", h)?;
        d.set_item("switches", o.switches.clone())?;
        d.set_item("drain_refused", o.drain_refused)?;
        d.set_item("rerouted_at_tor", o.rerouted_at_tor)?;
        d.set_item("draining", o.draining)?;
        Ok(d)
    }

    /// Candidate (global port, departure slice or -1) actions at `node` for a packet that
    /// has crossed `hops` links.
    #[pyo3(signature = (node, src, dst, arr, hops = 0))]
    fn candidates(&mut self, node: u32, src: u32, dst: u32, arr: i64, hops: usize) -> Vec<(i64, i64)> {
        let arr = if arr < 0 { WILD } else { arr as u32 };
        self.sim.candidates_after(node, src, dst, arr, hops).into_iter().map(|a| (a.port as i64, wild(a.dep))).collect()
    }

    /// Reconfigure a static schedule at `at_ps` with a new peer table (-1 = no circuit);
    /// packets queued on changed ports are routed again, or dropped with `drop_queued`.
    /// With `drain`: drain the network, switch circuits and tables at once, then resume.
    #[pyo3(signature = (at_ps, peer, delay_ps, drop_queued = false, drain = false))]
    fn reconfigure(&mut self, at_ps: u64, peer: PyReadonlyArray1<i64>, delay_ps: u64, drop_queued: bool, drain: bool) -> PyResult<()> {
        let peer = u32s(peer.as_slice()?.to_vec(), "peer")?;
        self.sim.reconfigure_with(at_ps, peer, delay_ps, drop_queued, drain).map_err(spec_err)
    }

    /// Fail (`down`) or recover the fabric ports `ports` (global port ids) at `at_ps`.
    #[pyo3(signature = (at_ps, ports, down))]
    fn fail_ports(&mut self, at_ps: u64, ports: PyReadonlyArray1<i64>, down: bool) -> PyResult<()> {
        let ports = u32s(ports.as_slice()?.to_vec(), "ports")?;
        self.sim.fail_ports(at_ps, ports, down).map_err(spec_err)
    }

    /// Port-down intervals so far: (global port, from ps, until ps; until = 2^64 - 1 while down).
    fn fail_log(&self) -> Vec<(u32, u64, u64)> {
        self.sim.fail_log().to_vec()
    }

    /// Remaining bytes per (source node, destination node) of unfinished started flows.
    fn demand(&self) -> Vec<(u32, u32, u64)> {
        self.sim.demand()
    }

    /// Per flow, now: finish time (-1: not finished), payload bytes sent, bytes delivered.
    #[allow(clippy::type_complexity)]
    fn flow_progress<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>) {
        let (fin, sent, got) = self.sim.flow_progress();
        let fin = fin.into_iter().map(|t| if t == u64::MAX { -1 } else { t as i64 }).collect::<Vec<_>>();
        (PyArray1::from_vec(py, fin), PyArray1::from_vec(py, sent), PyArray1::from_vec(py, got))
    }

    /// Replace the time-flow tables (columns node, arr, src, dst, dep, global port; -1 = wildcard).
    fn set_tables(&mut self, spec: &Bound<'_, PyDict>) -> PyResult<()> {
        let cols = ["tf_node", "tf_arr", "tf_src", "tf_dst", "tf_dep", "tf_port"]
            .iter()
            .map(|k| u32_col(spec, k))
            .collect::<PyResult<Vec<_>>>()?;
        let items: Vec<_> = (0..cols[0].len())
            .map(|i| (cols[0][i], Entry { arr: cols[1][i], src: cols[2][i], dst: cols[3][i], dep: cols[4][i], port: cols[5][i] }))
            .collect();
        self.sim.set_tables(&items).map_err(spec_err)
    }

    /// Count injected bytes per (src node, dst node) from now on (or stop).
    fn set_collect_tm(&mut self, on: bool) {
        self.sim.set_collect_tm(on);
    }

    /// The traffic matrix since the last call: list of (src node, dst node, bytes).
    fn take_tm(&mut self) -> Vec<(u32, u32, u64)> {
        self.sim.take_tm()
    }

    /// Bytes queued at a global port right now.
    fn port_bytes(&mut self, port: u32) -> u64 {
        self.sim.port_bytes(port)
    }

    /// Send a control message of `size` wire bytes from node `src` to node `dst` now,
    /// routed by the tables (or along `path`, global ports); returns its id.
    #[pyo3(signature = (src, dst, tag, size, path = None))]
    fn send_message(&mut self, src: u32, dst: u32, tag: u64, size: u32, path: Option<Vec<i64>>) -> PyResult<u32> {
        let path = u32s(path.unwrap_or_default(), "path")?;
        if path.contains(&NONE) {
            return Err(bad("path", -1, "no such port"));
        }
        self.sim.send_message(src, dst, tag, size, path).map_err(spec_err)
    }

    /// The messages delivered since the last call: (id, time ps, src, dst, tag, sent ps,
    /// hops, link-class bits), in delivery order.
    fn take_messages(&mut self) -> Vec<(u32, u64, u32, u32, u64, u64, u16, u8)> {
        self.sim.take_messages().into_iter().map(|m| (m.id, m.time, m.src, m.dst, m.tag, m.sent, m.hops, m.classes)).collect()
    }

    /// Count data packets of more than `larger_than` wire bytes reaching their
    /// destination node, per node pair, from now on (None: stop).
    fn count_received(&mut self, larger_than: Option<u32>) {
        self.sim.count_received(larger_than);
    }

    /// The received counters since the last call: (src node, dst node, wire bytes, packets).
    fn take_received(&mut self) -> Vec<(u32, u32, u64, u64)> {
        self.sim.take_received()
    }
}

/// Opera's rotor fabric: `tors / uplinks` matchings per rotor (flat rows of `tors * uplinks`
/// ToR ids; empty = generate from `seed`), staggered so one rotor reconfigures per
/// superslice. Returns the per-superslice peer ToR of every (tor, rotor) (-1: no circuit),
/// the timing (ε, δ, superslice; 0 = auto from the longest path) and the matchings used.
#[pyfunction]
#[pyo3(signature = (tors, uplinks, matchings, seed, eps_ps, delta_ps, reconf_ps, prop_ps, ser_ps, queue_pkts))]
#[allow(clippy::too_many_arguments)]
fn rotor_fabric<'py>(py: Python<'py>, tors: u32, uplinks: u32, matchings: PyReadonlyArray1<i64>, seed: u64, eps_ps: u64,
                     delta_ps: u64, reconf_ps: u64, prop_ps: u64, ser_ps: u64, queue_pkts: u32) -> PyResult<Bound<'py, PyDict>> {
    use opendcn_core::rotors::Rotors;
    let m = u32s(matchings.as_slice()?.to_vec(), "matchings")?;
    let (r, used) = if m.is_empty() {
        Rotors::generated(tors, uplinks, seed, eps_ps, delta_ps, reconf_ps, prop_ps, ser_ps, queue_pkts).map_err(spec_err)?
    } else {
        (Rotors::new(tors, uplinks, &m, eps_ps, delta_ps, reconf_ps, prop_ps, ser_ps, queue_pkts).map_err(spec_err)?, m)
    };
    let mut peer = Vec::with_capacity((tors * tors * uplinks) as usize);
    for j in 0..tors {
        for t in 0..tors {
            for k in 0..uplinks {
                let q = r.peer_in(j, t, k);
                peer.push(if q == NONE { -1 } else { q as i64 });
            }
        }
    }
    let d = PyDict::new(py);
    d.set_item("peer", PyArray1::from_vec(py, peer))?;
    d.set_item("eps_ps", r.eps)?;
    d.set_item("delta_ps", r.delta)?;
    d.set_item("superslice_ps", r.d)?;
    d.set_item("max_path_hops", r.max_hops)?;
    d.set_item("changing", r.changing.clone())?;
    d.set_item("matchings", PyArray1::from_vec(py, used.iter().map(|&x| x as i64).collect::<Vec<_>>()))?;
    Ok(d)
}

/// Max-min fair rates (bit/s) of the active flows of a flow-level run, and whether a link
/// ends above its capacity (`opendcn_core::maxmin`; the reference is `flowsim._maxmin`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn flow_rates<'py>(py: Python<'py>, pair: PyReadonlyArray1<i64>, up: PyReadonlyArray1<i64>, down: PyReadonlyArray1<i64>,
                   blocked: PyReadonlyArray1<bool>, indptr: PyReadonlyArray1<i64>, indices: PyReadonlyArray1<i32>,
                   data: PyReadonlyArray1<f64>, cap: PyReadonlyArray1<f64>) -> PyResult<(Bound<'py, PyArray1<f64>>, bool)> {
    use opendcn_core::maxmin::{flow_rates as rates, FlowLinks};
    let fl = FlowLinks { pair: pair.as_slice()?, up: up.as_slice()?, down: down.as_slice()?, blocked: blocked.as_slice()?,
                         indptr: indptr.as_slice()?, indices: indices.as_slice()?, data: data.as_slice()? };
    let (r, over) = rates(&fl, cap.as_slice()?).map_err(|e| bad("flow_rates", "", &e))?;
    Ok((PyArray1::from_vec(py, r), over))
}

type Col<'py> = Bound<'py, PyArray1<i64>>;

/// The routing state graph of a flow-level run: `(st_pair, st_node, ef, ep, et, looped)`
/// (`opendcn_core::maxmin::state_graph`; the reference is `flowsim._state_graph`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn state_graph<'py>(py: Python<'py>, key: PyReadonlyArray1<i64>, gport: PyReadonlyArray1<i64>, up: PyReadonlyArray1<bool>,
                    nxt: PyReadonlyArray1<i64>, n: i64, t: i64, pid: PyReadonlyArray1<i64>, max_hops: usize)
                    -> PyResult<(Col<'py>, Col<'py>, Col<'py>, Col<'py>, Col<'py>, bool)> {
    if n < 1 || t < 1 {
        return Err(bad("state_graph", (n, t), "racks and nodes must be >= 1"));
    }
    let g = opendcn_core::maxmin::state_graph(key.as_slice()?, gport.as_slice()?, up.as_slice()?, nxt.as_slice()?, n, t,
                                              pid.as_slice()?, max_hops).map_err(|e| bad("state_graph", "", &e))?;
    Ok((PyArray1::from_vec(py, g.st_pair), PyArray1::from_vec(py, g.st_node), PyArray1::from_vec(py, g.ef),
        PyArray1::from_vec(py, g.ep), PyArray1::from_vec(py, g.et), g.looped))
}

type SharesCols<'py> = (Col<'py>, Col<'py>, Bound<'py, PyArray1<f64>>, Col<'py>, Col<'py>, Bound<'py, PyArray1<f64>>,
                        Bound<'py, PyArray1<bool>>);

/// The routing matrix entries of a flow-level run from its state graph:
/// `(rows, cols, vals, h_rows, h_cols, h_vals, reach)` (`opendcn_core::maxmin::state_shares`;
/// the reference is `flowsim._table_matrix`'s numpy steps).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn state_shares<'py>(py: Python<'py>, st_pair: PyReadonlyArray1<i64>, st_node: PyReadonlyArray1<i64>,
                     ef: PyReadonlyArray1<i64>, ep: PyReadonlyArray1<i64>, et: PyReadonlyArray1<i64>, n_pid: usize,
                     n: i64, max_hops: usize)
                     -> PyResult<SharesCols<'py>> {
    let sh = opendcn_core::maxmin::state_shares(st_pair.as_slice()?, st_node.as_slice()?, ef.as_slice()?, ep.as_slice()?,
                                                et.as_slice()?, n_pid, n, max_hops)
        .map_err(|e| bad("state_shares", "", &e))?;
    Ok((PyArray1::from_vec(py, sh.rows), PyArray1::from_vec(py, sh.cols), PyArray1::from_vec(py, sh.vals),
        PyArray1::from_vec(py, sh.h_rows), PyArray1::from_vec(py, sh.h_cols), PyArray1::from_vec(py, sh.h_vals),
        PyArray1::from_vec(py, sh.reach)))
}

/// A CSR matrix of `n_rows` rows from COO entries: `(indptr, indices, data)`, columns
/// ascending per row, repeated (row, column) entries summed in input order
/// (`opendcn_core::maxmin::coo_to_csr`).
#[pyfunction]
fn coo_to_csr<'py>(py: Python<'py>, rows: PyReadonlyArray1<i64>, cols: PyReadonlyArray1<i64>,
                   vals: PyReadonlyArray1<f64>, n_rows: usize) -> PyResult<(Col<'py>, Col<'py>, Bound<'py, PyArray1<f64>>)> {
    let (p, i, d) = opendcn_core::maxmin::coo_to_csr(rows.as_slice()?, cols.as_slice()?, vals.as_slice()?, n_rows)
        .map_err(|e| bad("coo_to_csr", "", &e))?;
    Ok((PyArray1::from_vec(py, p), PyArray1::from_vec(py, i), PyArray1::from_vec(py, d)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulator>()?;
    m.add_function(wrap_pyfunction!(rotor_fabric, m)?)?;
    m.add_function(wrap_pyfunction!(flow_rates, m)?)?;
    m.add_function(wrap_pyfunction!(state_graph, m)?)?;
    m.add_function(wrap_pyfunction!(state_shares, m)?)?;
    m.add_function(wrap_pyfunction!(coo_to_csr, m)?)?;
    slotted::register(m)?;
    shale::register(m)?;
    m.add("EngineSpecError", m.py().get_type::<EngineSpecError>())?;
    m.add("EngineInternalError", m.py().get_type::<EngineInternalError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DROP_REASONS", opendcn_core::sim::DROP_REASONS.to_vec())?;
    Ok(())
}
