//! The run's output: counters, per-flow columns, metrics and invariant checks.

use super::{ShaleOutput, ShaleSim, DROP_REASONS};

impl ShaleSim {
    /// Counters, per-flow columns, metrics and invariant errors.
    pub fn output(&self) -> ShaleOutput {
        // in flight, counted independently: live cells + unsent flow data
        let mut live = vec![true; self.cells.len()];
        for &c in &self.free_cells {
            live[c as usize] = false;
        }
        let cell_bytes: u64 = self.cells.iter().zip(&live).filter(|(_, &l)| l).map(|(c, _)| c.bytes as u64).sum();
        let unsent: u64 = self.f_unsent.iter().sum();
        let in_flight = cell_bytes + unsent;
        let mut errors = Vec::new();
        if self.offered != self.delivered + self.dropped + in_flight {
            errors.push(format!(
                "conservation: offered {} != delivered {} + dropped {} + in flight {}",
                self.offered, self.delivered, self.dropped, in_flight
            ));
        }
        let fsum: u64 = self.f_deliv.iter().sum();
        if fsum != self.delivered {
            errors.push(format!("conservation: per-flow delivered {} != delivered {}", fsum, self.delivered));
        }
        if self.collisions > 0 {
            errors.push(format!("collisions: {}", self.collisions));
        }
        if self.guard_viol > 0 {
            errors.push(format!("guardband violations: {}", self.guard_viol));
        }
        self.tp_check(&mut errors);
        if self.hbh_viol > 0 {
            errors.push(format!("hop-by-hop invariant violated {} times", self.hbh_viol));
        }
        let mut hist = self.hist.clone();
        for y in 0..self.n as usize {
            let v = self.buf[y] as usize;
            if hist.len() <= v {
                hist.resize(v + 1, 0);
            }
            hist[v] += self.t - self.buf_last[y];
        }
        let down = self.t.min(self.rec_tick).saturating_sub(self.fail_tick);
        let live_slots = (self.n as u64 * self.t).saturating_sub(self.fail_list.len() as u64 * down);
        let sends = self.sends_cells + self.sends_token_only;
        let mut metrics = vec![
            ("timeslot_ps".to_string(), self.tau as f64),
            ("hop_delay_timeslots".to_string(), self.d as f64),
            ("cells_sent".to_string(), self.sends_cells as f64),
            ("new_cells".to_string(), self.new_cells as f64),
            ("skipped_sprays".to_string(), self.skipped_sprays as f64),
            ("token_only_cells".to_string(), self.sends_token_only as f64),
            ("tokens_sent".to_string(), self.tokens_sent as f64),
            ("dummy_cells".to_string(), live_slots.saturating_sub(sends) as f64),
            ("hbh_violations".to_string(), self.hbh_viol as f64),
            ("max_pieo_length".to_string(), self.max_pieo as f64),
            ("max_active_buckets".to_string(), self.max_distinct as f64),
            ("max_bucket_queues".to_string(), self.max_buckets as f64),
            ("max_buffer_cells".to_string(), self.max_buf as f64),
            ("outstanding_entries".to_string(), self.outstanding.len() as f64),
            ("cell_pool".to_string(), self.cells.len() as f64),
            // time average of the cells queued at nodes or on links (the work in flight)
            ("mean_cells_in_flight".to_string(), if self.t > 0 { self.live_sum as f64 / self.t as f64 } else { 0.0 }),
            ("cutoff_bytes".to_string(), self.cutoff as f64),
            ("invalidation_tokens".to_string(), self.inval_tokens as f64),
            ("invalidation_requeued".to_string(), self.inval_requeued as f64),
            ("revalidation_tokens".to_string(), self.revalidation_tokens as f64),
            ("invalidations_held".to_string(), self.inval.len() as f64),
            ("pulls_sent".to_string(), self.tp.pulls as f64),
            ("trimmed_cells".to_string(), self.tp.trims as f64),
            ("resent_bytes".to_string(), self.tp.resent_bytes as f64),
            ("control_hops".to_string(), self.tp.ctrl_hops as f64),
        ];
        metrics.extend(self.svc.metrics());
        let _ = self.max_outstanding_entries;
        let mut series = self.series.clone();
        if self.sample_ticks > 0 && series.last().map_or(true, |s| s.time_ps < self.t * self.tau) && self.t > 0 {
            let p = self.last_sample;
            series.push(super::Sample {
                time_ps: self.t * self.tau,
                buffered_cells: self.total_buf,
                max_node_cells: self.interval_max_buf,
                unsent_bytes: self.unsent_total,
                delivered_bytes: self.delivered - p.delivered_bytes,
                cell_hops: self.packet_hops - p.cell_hops,
                dropped_bytes: self.dropped - p.dropped_bytes,
                new_cells: self.new_cells - p.new_cells,
                backlogged_sources: self.backlogged,
            });
        }
        ShaleOutput {
            series,
            totals: crate::metrics::RunTotals {
                now_ps: self.t * self.tau,
                events: self.events,
                packet_hops: self.packet_hops,
                flows_started: self.flows_started,
                flows_completed: self.flows_completed,
                bytes_offered: self.offered,
                bytes_delivered: self.delivered,
                bytes_dropped: self.dropped,
                bytes_in_flight: in_flight,
                drops: DROP_REASONS.iter().zip(self.drops.iter()).map(|(k, v)| (k.to_string(), *v)).collect(),
                collisions: self.collisions,
                guardband_violations: self.guard_viol,
                trace_hash: self.hash,
                flow_finish_ps: self.f_finish.clone(),
                flow_delivered: self.f_deliv.clone(),
                flow_hops: self.f_hops.clone(),
                invariant_errors: errors,
            },
            timeslots: self.t,
            buffer_hist: hist,
            metrics,
        }
    }
}
