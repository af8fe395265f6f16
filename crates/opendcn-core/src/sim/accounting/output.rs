//! Everything a run reports ([`SimOutput`]): the end-of-run invariants and the counters,
//! time series and per-flow records assembled from the engine's state.

use crate::sim::*;

impl Sim {
    /// Counters, per-flow columns, time series and invariant checks at the current time.
    pub fn output(&self) -> SimOutput {
        // payload in flight, from the engine's state: ideal flows' bytes not yet injected
        // and the payload of their live packets; transport flows' bytes their receivers
        // still miss (from the receivers' bits)
        let mut in_flight: u64 = 0;
        for f in self.flows.iter().filter(|f| f.started) {
            if f.tp == TransportKind::RotorLb {
                continue; // counted by RotorLB below
            }
            if !f.tp.reliable() {
                in_flight += f.size - f.injected;
            } else if let Some(Some(c)) = self.conns.get(f.conn as usize) {
                in_flight += c.missing_bytes(f.size, self.mtu);
            }
        }
        if let Some(r) = &self.rlb {
            // bulk payload held at hosts (unsent, relayed, committed) or in the network,
            // each by RotorLB's own counter
            let (a, b, c) = r.held_bytes();
            in_flight += a + b + c + r.net_bytes();
        }
        let mut live = 0u64;
        let mut msgs_live = 0u64;
        let free: std::collections::BTreeSet<u32> = self.free.iter().copied().collect();
        for (i, p) in self.pool.iter().enumerate() {
            if !free.contains(&(i as u32)) {
                if p.kind == K_DATA && !p.trimmed && !self.flows[p.flow as usize].tp.reliable() {
                    in_flight += self.pool_x[i].payload as u64;
                }
                msgs_live += (p.kind == K_MSG) as u64;
                live += 1;
            }
        }
        let dropped: u64 = self.drops.iter().sum();
        let mut errors = self.ledger.check(in_flight, live);
        if dropped != self.ledger.lost_total() {
            errors.push(format!("lost payload: {} by reason != {} in the ledger", dropped, self.ledger.lost_total()));
        }
        if live != self.live {
            errors.push(format!("packet pool: {} live packets counted, {} tracked", live, self.live));
        }
        errors.extend(self.msg.check(msgs_live));
        let innet = self.pool.iter().enumerate().filter(|(i, p)| p.innet && !free.contains(&(*i as u32))).count() as u64;
        if innet != self.in_net {
            errors.push(format!("packets in the network: {innet} counted, {} tracked", self.in_net));
        }
        // the holds, scanned: every held packet is live, and the counters agree
        let (mut held_pkts, mut held_bytes) = (0u64, 0u64);
        for (n, m) in self.holds.iter().enumerate() {
            let mut at_node = 0u64;
            for q in m.values() {
                for &pid in q {
                    if free.contains(&pid) {
                        errors.push(format!("hold of node {n}: packet {pid} is not live"));
                    }
                    held_pkts += 1;
                    at_node += self.pool[pid as usize].wire as u64;
                }
            }
            held_bytes += at_node;
            if at_node > self.hold_bytes[n] {
                errors.push(format!("hold of node {n}: {at_node} bytes held > {} counted", self.hold_bytes[n]));
            }
        }
        if (held_pkts, held_bytes) != (self.hold.packets, self.hold.bytes) {
            errors.push(format!("holds: {held_pkts} packets / {held_bytes} bytes held, {} / {} counted",
                                self.hold.packets, self.hold.bytes));
        }
        let flow_delivered: u64 = self.flows.iter().map(|f| f.delivered).sum();
        if flow_delivered != self.delivered {
            errors.push(format!("per-flow delivered {} != delivered {}", flow_delivered, self.delivered));
        }
        if self.collisions > 0 {
            errors.push(format!("{} optical collisions", self.collisions));
        }
        if let Some(r) = &self.rlb {
            if let Err(e) = r.check() {
                errors.push(format!("RotorLB: {e}"));
            }
        }
        if self.credit_net && self.ledger.dropped_total() > 0 {
            errors.push(format!("lossless credit network dropped {} packets", self.ledger.dropped_total()));
        }
        if let Some(cycle) = &self.deadlock {
            let names: Vec<String> = cycle.iter().map(|&p| {
                let n = self.port_node[p as usize];
                format!("node {} port {}", n, p - self.port_offset[n as usize])
            }).collect();
            errors.push(format!("deadlock at {} ps: ports waiting for each other's credit in a cycle: {}",
                                self.now, names.join(" -> ")));
        }
        if self.gb_violations > 0 {
            errors.push(format!("{} guardband violations", self.gb_violations));
        }
        if self.offload.window_violations > 0 {
            errors.push(format!("{} departures planned outside the offload window of {} slices",
                                self.offload.window_violations, self.offload.queues));
        }
        SimOutput {
            totals: crate::metrics::RunTotals {
                now_ps: self.now,
                events: self.events,
                packet_hops: self.packet_hops,
                flows_started: self.flows_started,
                flows_completed: self.flows_completed,
                bytes_offered: self.offered,
                bytes_delivered: self.delivered,
                bytes_dropped: dropped,
                bytes_in_flight: in_flight,
                drops: DROP_REASONS.iter().zip(self.drops.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                collisions: self.collisions,
                guardband_violations: self.gb_violations,
                trace_hash: self.trace.value(),
                flow_finish_ps: self.flows.iter().map(|f| f.finish).collect(),
                flow_delivered: self.flows.iter().map(|f| f.delivered).collect(),
                flow_hops: self.flows.iter().map(|f| f.max_hops as u32).collect(),
                invariant_errors: errors,
            },
            peak_packets: self.peak_live,
            event_counts: self.event_counts.to_vec(),
            ts_time_ps: self.out_ts.0.clone(),
            ts_port: self.out_ts.1.clone(),
            ts_queued_bytes: self.out_ts.2.clone(),
            ts_tx_bytes: self.out_ts.3.clone(),
            congestion_events: self.congestion_events,
            pushback_msgs: self.pushback_msgs,
            paused_attempts: self.paused_attempts,
            eqo_samples: self.eqo.samples,
            eqo_mean_abs_error: if self.eqo.samples > 0 { self.eqo.abs_err_sum as f64 / self.eqo.samples as f64 } else { 0.0 },
            eqo_max_abs_error: self.eqo.max_abs_err,
            eqo_mean_error: if self.eqo.samples > 0 { self.eqo.signed_err_sum as f64 / self.eqo.samples as f64 } else { 0.0 },
            offloaded_packets: self.offload.packets,
            offloaded_bytes: self.offload.bytes,
            offload_peak_host_bytes: self.offload.peak_held_bytes,
            offload_refused: self.offload.refused,
            shared_peak_bytes: self.shared.peak_bytes,
            shared_peak_node: self.shared.peak_node,
            drop_log: self.droplog.clone(),
            packets: PacketTotals {
                sent: self.ledger.sent,
                sent_retx: self.ledger.sent_retx,
                sent_ctrl: self.ledger.sent_ctrl,
                delivered: self.ledger.pkts_delivered,
                dropped: DROP_REASONS.iter().zip(self.ledger.pkts_dropped.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                dropped_bytes: DROP_REASONS.iter().zip(self.ledger.dropped_bytes.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                trimmed: self.ledger.pkts_trimmed,
                trims: self.ledger.trims,
                bounces: self.ledger.bounces,
                in_flight: live,
                duplicate_bytes: self.ledger.duplicate_bytes,
            },
            flow_acked_ps: self.flows.iter().map(|f| f.acked_at).collect(),
            flow_transport: self.flows.iter().map(|f| f.tp).collect(),
            flow_start_ps: self.flows.iter().map(|f| if f.started { f.start } else { Ps::MAX }).collect(),
            adm_deferred: self.adm_deferred,
            net_series: self.out_net.clone(),
            flow_retx: self.flows.iter().map(|f| match self.conns.get(f.conn as usize) {
                Some(Some(c)) => c.stats().retransmits,
                _ => f.retx,
            }).collect(),
            flow_timeouts: self.flows.iter().map(|f| match self.conns.get(f.conn as usize) {
                Some(Some(c)) => c.stats().timeouts,
                _ => f.timeouts,
            }).collect(),
            ecn_marks: self.ecn_marks,
            reroutes: self.reroutes,
            rlb_slices: self.rlb.as_ref().map_or(0, |r| r.stats().slices),
            rlb_committed_pkts: self.rlb.as_ref().map_or(0, |r| r.stats().committed_pkts),
            rlb_returns: self.rlb.as_ref().map_or(0, |r| r.stats().returns),
            rlb_relayed_pkts: self.rlb.as_ref().map_or(0, |r| r.stats().relayed_pkts),
            rlb_host_bytes: self.rlb.as_ref().map_or(0, |r| { let (a, b, c) = r.held_bytes(); a + b + c }),
            latency_count: self.latency.n,
            latency_mean_ps: if self.latency.n > 0 { self.latency.sum as f64 / self.latency.n as f64 } else { 0.0 },
            latency_p50_ps: self.latency.quantile(0.5),
            latency_p99_ps: self.latency.quantile(0.99),
            reorder: self.reorder,
            delivered_by_hops: self.delivered_by_hops.clone(),
            delivered_pkts_by_hops: self.pkts_by_hops[0].clone(),
            bulk_pkts_by_hops: self.pkts_by_hops[1].clone(),
            delivered_by_class: self.delivered_by_class,
            delivered_by_hops_class: self.delivered_by_hops_class.clone(),
            messages: self.msg.totals(msgs_live),
            class_tx_bytes: self.class_tx_now(),
            class_capacity_bytes: {
                let mut cap = [0u64; 4];
                for (gp, pt) in self.ports.iter().enumerate() {
                    if pt.kind != PortKind::Unused && (pt.kind != PortKind::Electrical || pt.peer != NONE) {
                        cap[self.port_class[gp] as usize] += (pt.rate.bps as u128 * self.now as u128 / 8_000_000_000_000) as u64;
                    }
                }
                cap
            },
            hold: self.hold,
            hold_peak_bytes_by_node: self.hold_peak_node.clone(),
            switches: self.switch_log.clone(),
            drain_refused: self.drain_refused,
            rerouted_at_tor: self.rerouted_at_tor,
            draining: self.draining != NONE,
        }
    }
}
