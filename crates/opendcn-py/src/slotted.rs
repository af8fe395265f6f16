//! Bindings of the slotted engines (NegotiaToR, Sirius): spec dict in, run with the GIL
//! released, counters + numpy columns out, errors as `EngineSpecError`.

use numpy::PyArray1;
use opendcn_core::slotted::common::{SlottedOutput, Topology};
use opendcn_core::slotted::negotiator::{Matcher, NegSpec, Negotiator, Variant};
use opendcn_core::slotted::sirius::{RelayCc, SirFailSpec, SirSpec, Sirius};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::spec_io::{bad, int_col, ints, opt_col, opt_scalar, scalar, services, spec_err, u64s};

fn topo(s: &str) -> PyResult<Topology> {
    match s {
        "parallel" => Ok(Topology::Parallel),
        "thin-clos" => Ok(Topology::ThinClos),
        o => Err(bad("topology", o, "expected parallel or thin-clos")),
    }
}

fn neg_spec(d: &Bound<'_, PyDict>) -> PyResult<NegSpec> {
    let variant = match scalar::<String>(d, "variant")?.as_str() {
        "base" => Variant::Base,
        "data-size" => Variant::DataSize,
        "hol-delay" => Variant::HolDelay { alpha: scalar(d, "hol_alpha")? },
        "relay" => Variant::Relay,
        "stateful" => Variant::Stateful,
        "projector" => Variant::Projector,
        o => match o.strip_prefix("iterative:").and_then(|x| x.parse::<u32>().ok()) {
            Some(k) => Variant::Iterative { iters: k },
            None => return Err(bad("variant", o, "expected base, iterative:N, relay, data-size, hol-delay, stateful or projector")),
        },
    };
    Ok(NegSpec {
        tors: scalar(d, "tors")?,
        ports: scalar(d, "ports")?,
        topology: topo(&scalar::<String>(d, "topology")?)?,
        port_rate_bps: scalar(d, "port_rate_bps")?,
        guardband_ps: scalar(d, "guardband_ps")?,
        pre_slots: scalar(d, "pre_slots")?,
        pre_slot_ps: scalar(d, "pre_slot_ps")?,
        ctrl_bytes: scalar(d, "ctrl_bytes")?,
        sched_slots: scalar(d, "sched_slots")?,
        sched_slot_ps: scalar(d, "sched_slot_ps")?,
        header_bytes: scalar(d, "header_bytes")?,
        prop_ps: scalar(d, "prop_ps")?,
        pb: scalar(d, "pb")?,
        pq: scalar(d, "pq")?,
        pias_t1: scalar(d, "pias_t1")?,
        pias_t2: scalar(d, "pias_t2")?,
        req_threshold_pkts: scalar(d, "req_threshold_pkts")?,
        transition_guard: scalar(d, "transition_guard")?,
        variant,
        fail_fraction: scalar(d, "fail_fraction")?,
        fail_at_ps: scalar(d, "fail_at_ps")?,
        recover_at_ps: scalar(d, "recover_at_ps")?,
        detect_epochs: scalar(d, "detect_epochs")?,
        relay_threshold: scalar(d, "relay_threshold")?,
        relay_capacity: scalar(d, "relay_capacity")?,
        fault_relay: scalar(d, "fault_relay")?,
        seed: scalar(d, "seed")?,
        duration_ps: scalar(d, "duration_ps")?,
        sample_ps: scalar(d, "sample_ps")?,
        flow_start_ps: int_col(d, "flow_start_ps")?,
        flow_src: int_col(d, "flow_src")?,
        flow_dst: int_col(d, "flow_dst")?,
        flow_size: int_col(d, "flow_size")?,
    })
}

fn sir_spec(d: &Bound<'_, PyDict>) -> PyResult<SirSpec> {
    Ok(SirSpec {
        tors: scalar(d, "tors")?,
        ports: scalar(d, "ports")?,
        port_rate_bps: scalar(d, "port_rate_bps")?,
        slot_ps: scalar(d, "slot_ps")?,
        guardband_ps: scalar(d, "guardband_ps")?,
        header_bytes: scalar(d, "header_bytes")?,
        prop_ps: scalar(d, "prop_ps")?,
        pq: scalar(d, "pq")?,
        pias_t1: scalar(d, "pias_t1")?,
        pias_t2: scalar(d, "pias_t2")?,
        relay_cap: scalar(d, "relay_cap")?,
        relay_all: scalar::<String>(d, "relay")? == "all",
        cc: match scalar::<String>(d, "cc")?.as_str() {
            "ideal" => RelayCc::Ideal,
            "inband" => RelayCc::Inband,
            "grant" => RelayCc::Grant,
            o => return Err(bad("cc", o, "expected ideal, inband or grant")),
        },
        services: services(d)?,
        fail: sir_failures(d)?,
        seed: scalar(d, "seed")?,
        duration_ps: scalar(d, "duration_ps")?,
        sample_ps: scalar(d, "sample_ps")?,
        flow_start_ps: int_col(d, "flow_start_ps")?,
        flow_src: int_col(d, "flow_src")?,
        flow_dst: int_col(d, "flow_dst")?,
        flow_size: int_col(d, "flow_size")?,
    })
}

/// Sirius' failures (all optional): columns `fail_link_node`, `fail_link_port`,
/// `fail_link_at_ps`, `fail_link_until_ps` and `fail_node`, `fail_node_at_ps`,
/// `fail_node_until_ps` (an until of -1: never recovers), scalar `fail_bin_ps`.
fn sir_failures(d: &Bound<'_, PyDict>) -> PyResult<SirFailSpec> {
    let until = |key: &str| -> PyResult<Vec<u64>> {
        opt_col(d, key)?.into_iter().map(|x| if x == -1 { Ok(u64::MAX) } else if x < 0 { Err(bad(key, x, "must be non-negative (-1: never)")) } else { Ok(x as u64) }).collect()
    };
    Ok(SirFailSpec {
        link_node: ints(opt_col(d, "fail_link_node")?, "fail_link_node")?,
        link_port: ints(opt_col(d, "fail_link_port")?, "fail_link_port")?,
        link_at_ps: u64s(opt_col(d, "fail_link_at_ps")?, "fail_link_at_ps")?,
        link_until_ps: until("fail_link_until_ps")?,
        node: ints(opt_col(d, "fail_node")?, "fail_node")?,
        node_at_ps: u64s(opt_col(d, "fail_node_at_ps")?, "fail_node_at_ps")?,
        node_until_ps: until("fail_node_until_ps")?,
        bin_ps: opt_scalar(d, "fail_bin_ps", 0u64)?,
    })
}


fn out_dict<'py>(py: Python<'py>, o: SlottedOutput) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    common_output!(py, d, o);
    d.set_item("packets", crate::packets_dict(py, &o.packets, 0)?)?;
    d.set_item("ts_time_ps", PyArray1::from_vec(py, o.ts_time_ps))?;
    d.set_item("ts_node", PyArray1::from_vec(py, o.ts_node.into_iter().map(|x| x as i64).collect::<Vec<_>>()))?;
    d.set_item("ts_queued_bytes", PyArray1::from_vec(py, o.ts_queued_bytes))?;
    d.set_item("ts_tx_bytes", PyArray1::from_vec(py, o.ts_tx_bytes))?;
    d.set_item("ts_rx_bytes", PyArray1::from_vec(py, o.ts_rx_bytes))?;
    let m = PyDict::new(py);
    for (k, v) in &o.metrics {
        m.set_item(k, v)?;
    }
    d.set_item("metrics", m)?;
    if !o.series.is_empty() {
        let s = PyDict::new(py);
        for (k, v) in o.series {
            s.set_item(k, PyArray1::from_vec(py, v))?;
        }
        d.set_item("series", s)?;
    }
    Ok(d)
}

/// A NegotiaToR run held by Python.
#[pyclass(module = "opendcn._core")]
struct NegotiatorSim {
    sim: Negotiator,
}

#[pymethods]
impl NegotiatorSim {
    #[new]
    fn new(spec: &Bound<'_, PyDict>) -> PyResult<Self> {
        Ok(NegotiatorSim { sim: Negotiator::new(neg_spec(spec)?).map_err(spec_err)? })
    }

    #[getter]
    fn now(&self) -> u64 {
        self.sim.now()
    }

    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<()> {
        let sim = &mut self.sim;
        crate::run_guarded(py, || sim.run_until(t_ps))
    }

    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        out_dict(py, self.sim.output())
    }

    /// (first request epoch, first accepted epoch) of pair (src → dst); -1 = never.
    fn pair_epochs(&self, src: u32, dst: u32) -> (i64, i64) {
        let (a, b) = self.sim.pair_epochs(src, dst);
        let c = |x: u64| if x == u64::MAX { -1 } else { x as i64 };
        (c(a), c(b))
    }

    /// Destination of egress port p of ToR i in predefined slot k of epoch e (-1 idle).
    fn predefined_peer(&self, epoch: u64, slot: u32, tor: u32, port: u32) -> i64 {
        let d = self.sim.pre_conn(epoch, slot, tor, port);
        if d == u32::MAX { -1 } else { d as i64 }
    }
}

/// A Sirius run held by Python.
#[pyclass(module = "opendcn._core")]
struct SiriusSim {
    sim: Sirius,
}

#[pymethods]
impl SiriusSim {
    #[new]
    fn new(spec: &Bound<'_, PyDict>) -> PyResult<Self> {
        Ok(SiriusSim { sim: Sirius::new(sir_spec(spec)?).map_err(spec_err)? })
    }

    #[getter]
    fn now(&self) -> u64 {
        self.sim.now()
    }

    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<()> {
        let sim = &mut self.sim;
        crate::run_guarded(py, || sim.run_until(t_ps))
    }

    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        out_dict(py, self.sim.output())
    }
}

/// One NegotiaToR matching round outside the simulator (for property tests):
/// `requests` = list of (src, dst); returns (grants [(dst, port, src)], accepts
/// [(src, port, dst)]). The matcher's ring pointers persist across `rounds` calls on
/// the same request set when `rounds > 1` (the last round is returned).
#[pyfunction]
#[pyo3(signature = (tors, ports, topology, seed, requests, rounds=1))]
fn negotiator_match(tors: u32, ports: u32, topology: &str, seed: u64, requests: Vec<(u32, u32)>, rounds: u32) -> PyResult<(Vec<(u32, u32, u32)>, Vec<(u32, u32, u32)>)> {
    let t = topo(topology)?;
    if tors < 2 || ports < 1 || (t == Topology::ThinClos && tors % ports != 0) {
        return Err(bad("tors/ports", (tors, ports), "invalid fabric size"));
    }
    let mut m = Matcher::new(tors, ports, t, seed);
    let mut by_dst: Vec<Vec<(u32, u64)>> = vec![Vec::new(); tors as usize];
    for &(s, d) in &requests {
        if s >= tors || d >= tors || s == d {
            return Err(bad("requests", (s, d), "bad pair"));
        }
        by_dst[d as usize].push((s, 0));
    }
    for v in by_dst.iter_mut() {
        v.sort_unstable();
        v.dedup();
    }
    let mut grants = Vec::new();
    let mut accepts = Vec::new();
    for _ in 0..rounds.max(1) {
        grants.clear();
        accepts.clear();
        let mut per_src: Vec<Vec<(u32, u32)>> = vec![Vec::new(); tors as usize];
        let mut out = Vec::new();
        for d in 0..tors {
            out.clear();
            m.grant(d, &by_dst[d as usize], false, |_| true, |_, _| Some(0), &mut out);
            for &(s, p, _) in &out {
                grants.push((d, p, s));
                per_src[s as usize].push((p, d));
            }
        }
        for i in 0..tors {
            let g = &mut per_src[i as usize];
            g.sort_unstable();
            for p in 0..ports {
                let c: Vec<(u32, u64)> = g.iter().filter(|x| x.0 == p).map(|x| (x.1, 0)).collect();
                if let Some(d) = m.accept(i, p, &c, |_| true) {
                    accepts.push((i, p, d));
                }
            }
        }
    }
    Ok((grants, accepts))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NegotiatorSim>()?;
    m.add_class::<SiriusSim>()?;
    m.add_function(wrap_pyfunction!(negotiator_match, m)?)?;
    Ok(())
}
