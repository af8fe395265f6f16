//! The window engine's output (as the timeslot engine's): the workers' counters added up,
//! cells and flights in flight, per-flow columns, metrics and invariant checks.

use super::super::{Sample, ShaleOutput, DROP_REASONS};
use super::{ck, cnt_get, WindowSim, Work, BMASK};
use crate::ledger::Ledger;

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
        let counts = super::super::output::Counts {
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
