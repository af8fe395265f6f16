//! Bindings of the Opera engine: a spec dict in, counters, metrics and numpy columns out.

use numpy::{PyArray1, PyReadonlyArray1};
use opendcn_core::opera::{Opera, OperaSpec, Stop};
use opendcn_core::SpecError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn bad(field: &str, value: impl std::fmt::Debug, reason: &str) -> PyErr {
    let e = SpecError::new(field, value, reason);
    super::EngineSpecError::new_err((e.field, e.value, e.reason))
}

fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    let item = d.get_item(key)?.ok_or_else(|| bad(key, "missing", "required spec field"))?;
    item.extract().map_err(|_| bad(key, item.to_string(), "wrong type"))
}

fn col<T: TryFrom<i64>>(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<T>> {
    let item = d.get_item(key)?.ok_or_else(|| bad(key, "missing", "required spec field"))?;
    let a: PyReadonlyArray1<i64> = item.extract().map_err(|_| bad(key, "?", "expected a 1-D int64 numpy array"))?;
    a.as_slice()?.iter().map(|&x| T::try_from(x).map_err(|_| bad(key, x, "out of range"))).collect()
}

/// One Opera simulation held by Python.
#[pyclass(module = "opendcn._core")]
struct OperaSim {
    sim: Opera,
}

#[pymethods]
impl OperaSim {
    #[new]
    fn new(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        let stop = match get::<String>(d, "stop")?.as_str() {
            "duration" => Stop::Duration,
            "ndp-done" => Stop::NdpDone,
            "all-done" => Stop::AllDone,
            o => return Err(bad("stop", o, "expected duration, ndp-done or all-done")),
        };
        let spec = OperaSpec {
            tors: get(d, "tors")?,
            uplinks: get(d, "uplinks")?,
            hosts_per_tor: get(d, "hosts_per_tor")?,
            matchings: col(d, "matchings")?,
            link_rate_bps: get(d, "link_rate_bps")?,
            prop_ps: get(d, "prop_ps")?,
            host_prop_ps: get(d, "host_prop_ps")?,
            eps_ps: get(d, "eps_ps")?,
            delta_ps: get(d, "delta_ps")?,
            reconf_ps: get(d, "reconf_ps")?,
            packet_bytes: get(d, "packet_bytes")?,
            header_bytes: get(d, "header_bytes")?,
            queue_pkts: get(d, "queue_pkts")?,
            hi_cap_bytes: get(d, "hi_cap_bytes")?,
            cutoff_bytes: get(d, "cutoff_bytes")?,
            initial_window: get(d, "initial_window")?,
            pull_rate: get(d, "pull_rate")?,
            pacer_per_flow: match get::<String>(d, "pull_pacer")?.as_str() {
                "host" => false,
                "flow" => true,
                o => return Err(bad("pull_pacer", o, "expected host or flow")),
            },
            rto_ps: get(d, "rto_ps")?,
            stop,
            seed: get(d, "seed")?,
            sample_interval_ps: get(d, "sample_interval_ps")?,
            watch_ports: col(d, "watch_ports")?,
            congestion_detection: get(d, "congestion_detection")?,
            pushback: get(d, "pushback")?,
            flow_start_ps: col(d, "flow_start_ps")?,
            flow_src: col(d, "flow_src")?,
            flow_dst: col(d, "flow_dst")?,
            flow_size: col(d, "flow_size")?,
        };
        let sim = Opera::new(spec).map_err(|e| super::EngineSpecError::new_err((e.field, e.value, e.reason)))?;
        Ok(OperaSim { sim })
    }

    #[getter]
    fn now(&self) -> u64 {
        self.sim.now()
    }

    #[getter]
    fn stopped(&self) -> bool {
        self.sim.stopped()
    }

    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<()> {
        let sim = &mut self.sim;
        crate::run_guarded(py, || sim.run_until(t_ps))
    }

    /// Close the time series with a last sample at the current time (end of the run).
    fn final_sample(&mut self) {
        self.sim.final_sample();
    }

    /// Shortest-path hops from ToR `a` to ToR `b` in the superslice of time `t_ps`.
    fn path_hops(&self, a: u32, b: u32, t_ps: u64) -> PyResult<u32> {
        let r = self.sim.rotors();
        if a >= r.n || b >= r.n {
            return Err(bad("tor", (a, b), "out of range"));
        }
        Ok(r.hops(r.slice_idx(t_ps), a, b))
    }

    /// Rotors of the source route from ToR `a` to ToR `b` for a packet routed at time `t_ps`.
    fn slice_path(&self, a: u32, b: u32, t_ps: u64) -> PyResult<Vec<u32>> {
        let r = self.sim.rotors();
        if a >= r.n || b >= r.n {
            return Err(bad("tor", (a, b), "out of range"));
        }
        Ok(r.path(r.slice_idx(t_ps), a, b))
    }

    /// ToR reached by uplink `rotor` of `tor` at time `t_ps` (-1 while down or self-loop).
    fn peer(&self, tor: u32, rotor: u32, t_ps: u64) -> PyResult<i64> {
        let r = self.sim.rotors();
        if tor >= r.n || rotor >= r.u {
            return Err(bad("tor/rotor", (tor, rotor), "out of range"));
        }
        let (p, up, _) = r.state(tor, rotor, t_ps);
        Ok(if up && p != u32::MAX { p as i64 } else { -1 })
    }

    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.sim.output();
        let d = PyDict::new(py);
        common_output!(py, d, o);
        let m = PyDict::new(py);
        for (k, v) in &o.metrics {
            m.set_item(k, v)?;
        }
        d.set_item("metrics", m)?;
        d.set_item("ndp_hops_hist", o.ndp_hops_hist.clone())?;
        d.set_item("bulk_hops_hist", o.bulk_hops_hist.clone())?;
        d.set_item("flow_bulk", PyArray1::from_vec(py, o.flow_bulk.iter().map(|&b| b as i64).collect::<Vec<_>>()))?;
        d.set_item("flow_acked_ps", PyArray1::from_vec(py, o.flow_acked_ps.iter().map(|&t| if t == u64::MAX { -1 } else { t as i64 }).collect::<Vec<_>>()))?;
        let i64s = |v: &[u64]| PyArray1::from_vec(py, v.iter().map(|&x| x as i64).collect::<Vec<_>>());
        d.set_item("port_tx_bytes", i64s(&o.port_tx_bytes))?;
        d.set_item("ts_time_ps", i64s(&o.ts.0))?;
        d.set_item("ts_port", PyArray1::from_vec(py, o.ts.1.iter().map(|&x| x as i64).collect::<Vec<_>>()))?;
        d.set_item("ts_queued_bytes", i64s(&o.ts.2))?;
        d.set_item("ts_tx_bytes", i64s(&o.ts.3))?;
        let ser = PyDict::new(py);
        let fields: [(&str, fn(&opendcn_core::opera::NetSample) -> u64); 9] = [
            ("time_ps", |s| s.time_ps), ("queued_bytes", |s| s.queued_bytes), ("tx_bytes", |s| s.tx_bytes),
            ("trims", |s| s.trims), ("bounces", |s| s.bounces), ("delivered_bytes", |s| s.delivered_bytes),
            ("bulk_host_bytes", |s| s.bulk_host_bytes), ("congestion_events", |s| s.congestion_events),
            ("pushback_messages", |s| s.pushback_msgs),
        ];
        for (k, f) in fields {
            ser.set_item(k, i64s(&o.series.iter().map(f).collect::<Vec<_>>()))?;
        }
        d.set_item("series", ser)?;
        d.set_item("flow_rtx", PyArray1::from_vec(py, o.flow_rtx.iter().map(|&b| b as i64).collect::<Vec<_>>()))?;
        Ok(d)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OperaSim>()?;
    Ok(())
}
