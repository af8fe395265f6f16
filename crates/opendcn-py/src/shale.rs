//! Bindings of the Shale engine: a spec dict in, numpy columns and counters out.

use numpy::PyArray1;
use opendcn_core::slotted::shale::schedule::{Ebs, Plan};
use opendcn_core::slotted::shale::{Cc, ShaleRun, ShaleSpec};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::spec_io::{bad, int_col, opt_scalar, opt_scalar_or, scalar, services, spec_err, u64_col};

/// One Shale simulation held by Python.
#[pyclass(module = "opendcn._core", unsendable)]
struct ShaleSimulator {
    sim: ShaleRun,
}

#[pymethods]
impl ShaleSimulator {
    #[new]
    fn new(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        let cc: String = scalar(d, "cc")?;
        let spec = ShaleSpec {
            nodes: scalar(d, "nodes")?,
            h: scalar(d, "h")?,
            h_hi: scalar(d, "h_hi")?,
            inter_num: scalar(d, "inter_num")?,
            inter_den: scalar(d, "inter_den")?,
            cutoff_bytes: scalar(d, "cutoff_bytes")?,
            lanes: scalar(d, "lanes")?,
            slot_ps: scalar(d, "slot_ps")?,
            guard_ps: scalar(d, "guard_ps")?,
            lane_rate_bps: scalar(d, "lane_rate_bps")?,
            cell_bytes: scalar(d, "cell_bytes")?,
            header_bytes: scalar(d, "header_bytes")?,
            prop_ps: scalar(d, "prop_ps")?,
            cc: Cc::parse(&cc).ok_or_else(|| bad("cc", &cc, "unknown congestion control"))?,
            token_budget: scalar(d, "token_budget")?,
            first_hop_budget: scalar(d, "first_hop_budget")?,
            isd_cap_num: scalar(d, "isd_cap_num")?,
            isd_cap_den: scalar(d, "isd_cap_den")?,
            init_window: scalar(d, "init_window")?,
            pull_every: scalar(d, "pull_every")?,
            ndp_queue: scalar(d, "ndp_queue")?,
            fail_nodes: int_col(d, "fail_nodes")?,
            fail_links: int_col(d, "fail_links")?,
            invalidation: scalar(d, "invalidation")?,
            token_one_each: opt_scalar(d, "token_one_each", false)?,
            recover_at_ps: scalar(d, "recover_at_ps")?,
            fail_at_ps: scalar(d, "fail_at_ps")?,
            flow_start_ps: u64_col(d, "flow_start_ps")?,
            flow_src: int_col(d, "flow_src")?,
            flow_dst: int_col(d, "flow_dst")?,
            flow_size: u64_col(d, "flow_size")?,
            seed: scalar(d, "seed")?,
            duration_ps: scalar(d, "duration_ps")?,
            sample_ps: scalar(d, "sample_ps")?,
            services: services(d)?,
            threads: opt_scalar_or(d, "threads", 1, "expected a count")?,
        };
        let engine: String = opt_scalar(d, "engine", "auto".to_string())?;
        Ok(ShaleSimulator { sim: ShaleRun::new(spec, &engine).map_err(spec_err)? })
    }

    #[getter]
    fn now(&self) -> u64 {
        self.sim.now()
    }

    /// The engine serving this run: "window" or "timeslot".
    #[getter]
    fn engine(&self) -> &'static str {
        self.sim.engine()
    }

    /// Running totals between steps: (timeslots run, cell-hops, sum over the timeslots
    /// run of the cells alive at each).
    fn progress(&self) -> (u64, u64, u64) {
        self.sim.progress()
    }

    #[getter]
    fn tau_ps(&self) -> u64 {
        self.sim.tau_ps()
    }

    #[getter]
    fn hop_delay(&self) -> u64 {
        self.sim.hop_delay()
    }

    /// The node `x` sends to in timeslot `t`.
    fn peer(&self, x: u32, t: u64) -> u32 {
        self.sim.peer(x, t)
    }

    /// Run every timeslot starting before `t_ps`, with the GIL released.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<()> {
        let sim = &mut self.sim;
        crate::run_guarded(py, || sim.run_until(t_ps))
    }

    fn output<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.sim.output();
        let d = PyDict::new(py);
        common_output!(py, d, o);
        d.set_item("packets", crate::packets_dict(py, &o.packets, 0)?)?;
        d.set_item("timeslots", o.timeslots)?;
        d.set_item("buffer_hist", PyArray1::from_vec(py, o.buffer_hist.into_iter().map(|x| x as i64).collect::<Vec<_>>()))?;
        let m = PyDict::new(py);
        for (k, v) in &o.metrics {
            m.set_item(k, v)?;
        }
        d.set_item("metrics", m)?;
        let ser = &o.series;
        let colv = |f: &dyn Fn(&opendcn_core::slotted::shale::Sample) -> i64| ser.iter().map(f).collect::<Vec<i64>>();
        let ts = PyDict::new(py);
        ts.set_item("time_ps", PyArray1::from_vec(py, colv(&|s| s.time_ps as i64)))?;
        ts.set_item("buffered_cells", PyArray1::from_vec(py, colv(&|s| s.buffered_cells as i64)))?;
        ts.set_item("max_node_cells", PyArray1::from_vec(py, colv(&|s| s.max_node_cells as i64)))?;
        ts.set_item("unsent_bytes", PyArray1::from_vec(py, colv(&|s| s.unsent_bytes as i64)))?;
        ts.set_item("delivered_bytes", PyArray1::from_vec(py, colv(&|s| s.delivered_bytes as i64)))?;
        ts.set_item("cell_hops", PyArray1::from_vec(py, colv(&|s| s.cell_hops as i64)))?;
        ts.set_item("dropped_bytes", PyArray1::from_vec(py, colv(&|s| s.dropped_bytes as i64)))?;
        ts.set_item("new_cells", PyArray1::from_vec(py, colv(&|s| s.new_cells as i64)))?;
        ts.set_item("backlogged_sources", PyArray1::from_vec(py, colv(&|s| s.backlogged_sources as i64)))?;
        d.set_item("series", ts)?;
        Ok(d)
    }
}

/// Peer table of an EBS schedule (optionally interleaved): row t = the node each node
/// sends to in timeslot t, for t in 0..slots.
#[pyfunction]
#[pyo3(signature = (nodes, h, slots, h_hi=0, num=0, den=1))]
fn shale_peers(nodes: u32, h: u32, slots: u64, h_hi: u32, num: u64, den: u64) -> PyResult<Vec<Vec<u32>>> {
    let mut subs = vec![Ebs::new(nodes, h).map_err(spec_err)?];
    if h_hi != 0 {
        subs.push(Ebs::new(nodes, h_hi).map_err(spec_err)?);
    }
    let plan = Plan::new(subs, num, den).map_err(spec_err)?;
    Ok((0..slots)
        .map(|t| {
            let (s, p, j, _) = plan.slot(t);
            (0..nodes).map(|x| plan.subs[s].tx_peer(x, p, j)).collect()
        })
        .collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ShaleSimulator>()?;
    m.add_function(wrap_pyfunction!(shale_peers, m)?)?;
    Ok(())
}
