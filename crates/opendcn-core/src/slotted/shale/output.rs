//! The run's output: counters, per-flow columns, metrics and invariant checks.

use super::{ShaleOutput, ShaleSim, DROP_REASONS};
use crate::ledger::Ledger;
use crate::units::NONE;

/// What both Shale engines count, for the parts of their output they share: the
/// invariant checks and the engine metrics, built here once for both.
#[derive(Default)]
pub(super) struct Counts {
    pub tau: u64,
    pub d: u64,
    pub t: u64,
    pub live_slots: u64,
    /// The engine's ledger and what it holds in flight, counted from its state: payload
    /// (live cells' bytes and unsent flow data) and cells (live cells and token-only
    /// flights not yet received).
    pub ledger: Ledger,
    pub in_flight: u64,
    pub cells_in_flight: u64,
    pub per_flow_delivered: u64,
    pub collisions: u64,
    pub guard_viol: u64,
    pub hbh_viol: u64,
    pub sends_cells: u64,
    pub new_cells: u64,
    pub skipped_sprays: u64,
    pub sends_token_only: u64,
    pub tokens_sent: u64,
    pub max_pieo: u32,
    pub max_distinct: u32,
    pub max_buckets: u32,
    pub max_buf: u32,
    pub outstanding: u64,
    pub cell_pool: u64,
    pub live_sum: u64,
    pub cutoff: u64,
    pub inval_tokens: u64,
    pub inval_requeued: u64,
    pub reval_tokens: u64,
    pub inval_held: u64,
    pub pulls: u64,
    pub trims: u64,
    pub resent_bytes: u64,
    pub ctrl_hops: u64,
}

impl Counts {
    /// Invariant errors: conservation, the fabric, `transport` (the end-to-end
    /// transports' own checks), the hop-by-hop budget.
    pub(super) fn errors(&self, transport: Vec<String>) -> Vec<String> {
        let mut errors = self.ledger.check(self.in_flight, self.cells_in_flight);
        if self.per_flow_delivered != self.ledger.delivered {
            errors.push(format!("conservation: per-flow delivered {} != delivered {}", self.per_flow_delivered, self.ledger.delivered));
        }
        if self.collisions > 0 {
            errors.push(format!("collisions: {}", self.collisions));
        }
        if self.guard_viol > 0 {
            errors.push(format!("guardband violations: {}", self.guard_viol));
        }
        errors.extend(transport);
        if self.hbh_viol > 0 {
            errors.push(format!("hop-by-hop invariant violated {} times", self.hbh_viol));
        }
        errors
    }

    /// The ledger in the packet engine's form (reasons: `DROP_REASONS`).
    pub(super) fn packets(&self) -> crate::sim::PacketTotals {
        crate::slotted::common::packet_totals(&self.ledger, &DROP_REASONS, self.cells_in_flight)
    }

    /// The engine metrics, services' last.
    pub(super) fn metrics(&self, svc: &crate::services::SlotServices) -> Vec<(String, f64)> {
        let sends = self.sends_cells + self.sends_token_only;
        let mut m: Vec<(String, f64)> = [
            ("timeslot_ps", self.tau as f64),
            ("hop_delay_timeslots", self.d as f64),
            ("cells_sent", self.sends_cells as f64),
            ("new_cells", self.new_cells as f64),
            ("skipped_sprays", self.skipped_sprays as f64),
            ("token_only_cells", self.sends_token_only as f64),
            ("tokens_sent", self.tokens_sent as f64),
            ("dummy_cells", self.live_slots.saturating_sub(sends) as f64),
            ("hbh_violations", self.hbh_viol as f64),
            ("max_pieo_length", self.max_pieo as f64),
            ("max_active_buckets", self.max_distinct as f64),
            ("max_bucket_queues", self.max_buckets as f64),
            ("max_buffer_cells", self.max_buf as f64),
            ("outstanding_entries", self.outstanding as f64),
            ("cell_pool", self.cell_pool as f64),
            // time average of the cells queued at nodes or on links (the work in flight)
            ("mean_cells_in_flight", if self.t > 0 { self.live_sum as f64 / self.t as f64 } else { 0.0 }),
            ("cutoff_bytes", self.cutoff as f64),
            ("invalidation_tokens", self.inval_tokens as f64),
            ("invalidation_requeued", self.inval_requeued as f64),
            ("revalidation_tokens", self.reval_tokens as f64),
            ("invalidations_held", self.inval_held as f64),
            ("pulls_sent", self.pulls as f64),
            ("trimmed_cells", self.trims as f64),
            ("resent_bytes", self.resent_bytes as f64),
            ("control_hops", self.ctrl_hops as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        m.extend(svc.metrics());
        m
    }
}

impl ShaleSim {
    /// Counters, per-flow columns, metrics and invariant errors.
    pub fn output(&self) -> ShaleOutput {
        // in flight, counted independently: live cells + unsent flow data; cells: live
        // cells + token-only flights on their way
        let mut live = vec![true; self.cells.len()];
        for &c in &self.free_cells {
            live[c as usize] = false;
        }
        let cell_bytes: u64 = self.cells.iter().zip(&live).filter(|(_, &l)| l).map(|(c, _)| c.bytes as u64).sum();
        let unsent: u64 = self.f_unsent.iter().sum();
        let in_flight = cell_bytes + unsent;
        let token_only = self.ring.iter().flatten().filter(|f| f.cell == NONE).count();
        let cells_in_flight = (live.iter().filter(|&&l| l).count() + token_only) as u64;
        let mut hist = self.hist.clone();
        for y in 0..self.n as usize {
            let v = self.buf[y] as usize;
            if hist.len() <= v {
                hist.resize(v + 1, 0);
            }
            hist[v] += self.t - self.buf_last[y];
        }
        let down = self.t.min(self.rec_tick).saturating_sub(self.fail_tick);
        let counts = Counts {
            tau: self.tau,
            d: self.d,
            t: self.t,
            live_slots: (self.n as u64 * self.t).saturating_sub(self.fail_list.len() as u64 * down),
            ledger: self.ledger.clone(),
            in_flight,
            cells_in_flight,
            per_flow_delivered: self.f_deliv.iter().sum(),
            collisions: self.collisions,
            guard_viol: self.guard_viol,
            hbh_viol: self.hbh_viol,
            sends_cells: self.sends_cells,
            new_cells: self.new_cells,
            skipped_sprays: self.skipped_sprays,
            sends_token_only: self.sends_token_only,
            tokens_sent: self.tokens_sent,
            max_pieo: self.max_pieo,
            max_distinct: self.max_distinct,
            max_buckets: self.max_buckets,
            max_buf: self.max_buf,
            outstanding: self.outstanding.len() as u64,
            cell_pool: self.cells.len() as u64,
            live_sum: self.live_sum,
            cutoff: self.cutoff,
            inval_tokens: self.inval_tokens,
            inval_requeued: self.inval_requeued,
            reval_tokens: self.revalidation_tokens,
            inval_held: self.inval.len(super::invalidation::RECV),
            pulls: self.tp.pulls,
            trims: self.tp.trims,
            resent_bytes: self.tp.resent_bytes,
            ctrl_hops: self.tp.ctrl_hops,
        };
        let mut tp_errors = Vec::new();
        self.tp_check(&mut tp_errors);
        let errors = counts.errors(tp_errors);
        let metrics = counts.metrics(&self.svc);
        let _ = self.max_outstanding_entries;
        let mut series = self.series.clone();
        if self.sample_ticks > 0 && series.last().is_none_or(|s| s.time_ps < self.t * self.tau) && self.t > 0 {
            let p = self.last_sample;
            series.push(super::Sample {
                time_ps: self.t * self.tau,
                buffered_cells: self.total_buf,
                max_node_cells: self.interval_max_buf,
                unsent_bytes: self.unsent_total,
                delivered_bytes: self.ledger.delivered - p.delivered_bytes,
                cell_hops: self.packet_hops - p.cell_hops,
                dropped_bytes: self.ledger.lost_total() - p.dropped_bytes,
                new_cells: self.new_cells - p.new_cells,
                backlogged_sources: self.backlogged,
            });
        }
        ShaleOutput {
            series,
            packets: counts.packets(),
            totals: crate::metrics::RunTotals {
                now_ps: self.t * self.tau,
                events: self.events,
                packet_hops: self.packet_hops,
                flows_started: self.flows_started,
                flows_completed: self.flows_completed,
                bytes_offered: self.ledger.offered,
                bytes_delivered: self.ledger.delivered,
                bytes_dropped: self.ledger.lost_total(),
                bytes_in_flight: in_flight,
                drops: DROP_REASONS.iter().zip(self.ledger.lost.iter()).map(|(k, v)| (k.to_string(), *v)).collect(),
                collisions: self.collisions,
                guardband_violations: self.guard_viol,
                trace_hash: self.hash.value(),
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
