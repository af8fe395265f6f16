//! The run's output: time-series samples, per-pair epochs, counters, metrics and
//! invariant checks.

use super::Negotiator;
use crate::slotted::common::{finish_output, Held, SlottedOutput};
use crate::units::Ps;

impl Negotiator {
    pub(super) fn sample(&mut self, t: Ps) {
        while self.b.sample_due(t) {
            let q: Vec<u64> = self.src_bytes.iter().zip(&self.relay_bytes).map(|(a, b)| a + b).collect();
            self.b.record_queue(q.into_iter());
        }
    }

    /// Epoch in which pair (i → d) first sent a request / first got an accepted port.
    pub fn pair_epochs(&self, i: u32, d: u32) -> (u64, u64) {
        let k = (i * self.n + d) as usize;
        (self.first_req_epoch[k], self.first_data_epoch[k])
    }

    pub fn output(&self) -> SlottedOutput {
        // in flight, from the queues: bytes not yet cut at the sources, relayed cells
        // (held at their intermediate or on their way to it)
        let rq = self.rq.iter().flatten();
        let held = Held { bytes: Held::voqs(&self.voq) + rq.clone().map(|c| c.bytes).sum::<u64>(), cells: rq.count() as u64 };
        let queued: u64 = self.voq.iter().map(|v| v.bytes).sum::<u64>() + self.rq_bytes.iter().sum::<u64>();
        let now = self.now();
        let mut o = finish_output(&self.b, &self.fl, &self.fab, now, held, Vec::new());
        let src_sum: u64 = self.src_bytes.iter().chain(&self.relay_bytes).sum();
        if src_sum != queued || queued != held.bytes {
            o.invariant_errors.push(format!("per-source queued bytes {src_sum} != VOQ bytes {queued} (walked: {})", held.bytes));
        }
        let ratio = if self.m_ratio_epochs > 0 { self.m_ratio_sum / self.m_ratio_epochs as f64 } else { 0.0 };
        let port_ratio = if self.m_grants > 0 { self.m_accepts as f64 / self.m_grants as f64 } else { 0.0 };
        let (awgrs, awgr_ports) = self.fab.awgrs();
        let epochs = if self.lay.epoch_ps > 0 { now / self.lay.epoch_ps } else { 0 };
        let mut m: Vec<(String, f64)> = vec![
            ("match_ratio".into(), ratio),
            ("match_ratio_port".into(), port_ratio),
            ("match_epochs".into(), self.m_ratio_epochs as f64),
            ("grants".into(), self.m_grants as f64),
            ("accepts".into(), self.m_accepts as f64),
            ("pair_grants".into(), self.m_pair_grants as f64),
            ("pair_accepts".into(), self.m_pair_accepts as f64),
            ("requests".into(), self.m_requests as f64),
            ("lost_control_messages".into(), self.m_lost_ctrl as f64),
            ("pb_packets".into(), self.m_pb_pkts as f64),
            ("pb_bytes".into(), self.m_pb_bytes as f64),
            ("scheduled_packets".into(), self.m_sched_pkts as f64),
            ("scheduled_bytes".into(), self.m_sched_bytes as f64),
            ("scheduled_idle_port_slots".into(), self.m_sched_idle as f64),
            ("epoch_ps".into(), self.lay.epoch_ps as f64),
            ("epochs".into(), epochs as f64),
            ("predefined_slots".into(), self.lay.pre_slots as f64),
            ("predefined_slot_ps".into(), self.lay.pre_slot_ps as f64),
            ("round_robin_slots".into(), self.lay.rr_slots as f64),
            ("scheduled_slots".into(), self.lay.sched.len() as f64),
            ("pb_payload_bytes".into(), self.lay.pb_payload as f64),
            ("scheduled_payload_bytes".into(), self.lay.sched.first().map(|x| x.3).unwrap_or(0) as f64),
            ("request_threshold_bytes".into(), self.req_thr as f64),
            ("guardband_fraction".into(), (self.lay.pre_slots as u64 * self.spec.guardband_ps + if self.spec.transition_guard { self.spec.guardband_ps } else { 0 }) as f64 / self.lay.epoch_ps as f64),
            ("awgrs".into(), awgrs as f64),
            ("awgr_ports".into(), awgr_ports as f64),
            ("iterations".into(), self.iters as f64),
            ("scheduling_delay_epochs".into(), ((self.iters - 1) as u64 * (self.acc_lag + 1) + self.acc_lag) as f64),
            (
                "matched_port_fraction".into(),
                if self.m_matched_epochs > 0 { self.m_matched_ports as f64 / (self.m_matched_epochs * (self.n * self.s) as u64) as f64 } else { 0.0 },
            ),
        ];
        if !self.pend.is_empty() {
            m.push(("stateful_requests_not_granted".into(), self.m_stateful_blocked as f64));
        }
        if self.fault_relay_on {
            m.push(("fault_relay_bytes".into(), self.m_fault_relay_bytes as f64));
            m.push(("max_detoured_pairs".into(), self.m_detoured_max as f64));
        }
        if self.relay_on {
            m.push(("relay_requests".into(), self.m_relay_req as f64));
            m.push(("relay_grants".into(), self.m_relay_grants as f64));
            m.push(("relay_first_hop_bytes".into(), self.m_relay_first as f64));
            m.push(("relay_second_hop_bytes".into(), self.m_relay_second as f64));
            m.push(("max_relay_queue_bytes".into(), self.m_relay_max as f64));
            m.push(("relay_threshold_bytes".into(), self.relay_thr as f64));
            m.push(("relay_capacity_bytes".into(), self.relay_cap as f64));
            let rsv: u64 = self.reserved.iter().sum();
            let alloc: u64 = self.racc.iter().map(|x| x.1).sum();
            if rsv < alloc {
                o.invariant_errors.push(format!("relay reservations {rsv} below the accepted relay volume {alloc}"));
            }
        }
        if self.fail.on {
            let f = &self.fail;
            m.push(("failed_links".into(), (f.links_eg.len() + f.links_in.len()) as f64));
            m.push(("failed_egress_links".into(), f.links_eg.len() as f64));
            m.push(("failed_ingress_links".into(), f.links_in.len() as f64));
            m.push(("fail_epoch".into(), f.fail_epoch as f64));
            m.push(("recover_epoch".into(), f.recover_epoch as f64));
            m.push(("detections".into(), f.detect_epochs.len() as f64));
            let lat = |v: &Vec<u64>, base: u64| if v.is_empty() { -1.0 } else { v.iter().map(|&x| (x - base) as f64).sum::<f64>() / v.len() as f64 };
            m.push(("mean_detection_epochs".into(), lat(&f.detect_epochs, f.fail_epoch)));
            m.push(("max_detection_epochs".into(), f.detect_epochs.iter().map(|&x| x - f.fail_epoch).max().map(|x| x as f64).unwrap_or(-1.0)));
            m.push(("recoveries".into(), f.recovered_epochs.len() as f64));
            m.push(("mean_recovery_epochs".into(), lat(&f.recovered_epochs, f.recover_epoch)));
            let undetected = if f.state == 1 {
                f.links_eg.iter().filter(|&&l| !f.local_eg[l as usize]).count() + f.links_in.iter().filter(|&&l| !f.local_in[l as usize]).count()
            } else {
                0
            };
            m.push(("undetected_failed_links".into(), undetected as f64));
        }
        o.metrics = m;
        o
    }
}
