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
            } else if let Some(Some(c)) = self.tg.conns.get(f.conn as usize) {
                in_flight += c.missing_bytes(f.size, self.net.mtu);
            }
        }
        if let Some(r) = &self.rlb.lb {
            // bulk payload held at hosts (unsent, relayed, committed) or in the network,
            // each by RotorLB's own counter
            let (a, b, c) = r.held_bytes();
            in_flight += a + b + c + r.net_bytes();
        }
        let mut live = 0u64;
        let mut msgs_live = 0u64;
        let free: std::collections::BTreeSet<u32> = self.pool.free.iter().copied().collect();
        for (i, p) in self.pool.pkt.iter().enumerate() {
            if !free.contains(&(i as u32)) {
                if p.kind == K_DATA && !p.trimmed && !self.flows[p.flow as usize].tp.reliable() {
                    in_flight += self.pool.x[i].payload as u64;
                }
                msgs_live += (p.kind == K_MSG) as u64;
                live += 1;
            }
        }
        let dropped: u64 = self.acct.drops.iter().sum();
        let mut errors = self.acct.ledger.check(in_flight, live);
        if dropped != self.acct.ledger.lost_total() {
            errors.push(format!("lost payload: {} by reason != {} in the ledger", dropped, self.acct.ledger.lost_total()));
        }
        if live != self.pool.live {
            errors.push(format!("packet pool: {} live packets counted, {} tracked", live, self.pool.live));
        }
        errors.extend(self.msg.check(msgs_live));
        let innet = self.pool.pkt.iter().enumerate().filter(|(i, p)| p.innet && !free.contains(&(*i as u32))).count() as u64;
        if innet != self.rc.in_net {
            errors.push(format!("packets in the network: {innet} counted, {} tracked", self.rc.in_net));
        }
        // the holds, scanned: every held packet is live, and the counters agree
        let (mut held_pkts, mut held_bytes) = (0u64, 0u64);
        for (n, m) in self.hold.queues.iter().enumerate() {
            let mut at_node = 0u64;
            for q in m.values() {
                for &pid in q {
                    if free.contains(&pid) {
                        errors.push(format!("hold of node {n}: packet {pid} is not live"));
                    }
                    held_pkts += 1;
                    at_node += self.pool.pkt[pid as usize].wire as u64;
                }
            }
            held_bytes += at_node;
            if at_node > self.hold.bytes[n] {
                errors.push(format!("hold of node {n}: {at_node} bytes held > {} counted", self.hold.bytes[n]));
            }
        }
        if (held_pkts, held_bytes) != (self.hold.stats.packets, self.hold.stats.bytes) {
            errors.push(format!("holds: {held_pkts} packets / {held_bytes} bytes held, {} / {} counted",
                                self.hold.stats.packets, self.hold.stats.bytes));
        }
        let flow_delivered: u64 = self.flows.iter().map(|f| f.delivered).sum();
        if flow_delivered != self.acct.delivered {
            errors.push(format!("per-flow delivered {} != delivered {}", flow_delivered, self.acct.delivered));
        }
        // a delivered byte crossed every link class its packet used, on the wire with at
        // least its payload: what a class's links sent covers what was delivered across them
        let tx = self.class_tx_now();
        for (c, &sent) in tx.iter().enumerate().take(3) {
            let across: u64 = (0..8).filter(|m| (m >> c) & 1 == 1).map(|m| self.acct.delivered_by_class[m]).sum();
            if sent < across {
                errors.push(format!("{} links sent {sent} bytes on the wire, less than the {across} payload bytes delivered across them",
                                    super::LINK_CLASSES[c]));
            }
        }
        if self.acct.collisions > 0 {
            errors.push(format!("{} optical collisions", self.acct.collisions));
        }
        if let Some(r) = &self.rlb.lb {
            if let Err(e) = r.check() {
                errors.push(format!("RotorLB: {e}"));
            }
        }
        if self.credit.on && self.acct.ledger.dropped_total() > 0 {
            errors.push(format!("lossless credit network dropped {} packets", self.acct.ledger.dropped_total()));
        }
        if let Some(cycle) = &self.credit.deadlock {
            let names: Vec<String> = cycle.iter().map(|&p| {
                let n = self.net.port_node[p as usize];
                format!("node {} port {}", n, p - self.net.port_offset[n as usize])
            }).collect();
            errors.push(format!("deadlock at {} ps: ports waiting for each other's credit in a cycle: {}",
                                self.clock.now, names.join(" -> ")));
        }
        if self.acct.gb_violations > 0 {
            errors.push(format!("{} guardband violations", self.acct.gb_violations));
        }
        if self.offload.window_violations > 0 {
            errors.push(format!("{} departures planned outside the offload window of {} slices",
                                self.offload.window_violations, self.offload.queues));
        }
        SimOutput {
            totals: crate::metrics::RunTotals {
                now_ps: self.clock.now,
                events: self.acct.events,
                packet_hops: self.acct.packet_hops,
                flows_started: self.acct.flows_started,
                flows_completed: self.acct.flows_completed,
                bytes_offered: self.acct.offered,
                bytes_delivered: self.acct.delivered,
                bytes_dropped: dropped,
                bytes_in_flight: in_flight,
                drops: DROP_REASONS.iter().zip(self.acct.drops.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                collisions: self.acct.collisions,
                guardband_violations: self.acct.gb_violations,
                trace_hash: self.acct.trace.value(),
                flow_finish_ps: self.flows.iter().map(|f| f.finish).collect(),
                flow_delivered: self.flows.iter().map(|f| f.delivered).collect(),
                flow_hops: self.flows.iter().map(|f| f.max_hops as u32).collect(),
                invariant_errors: errors,
            },
            peak_packets: self.pool.peak,
            event_counts: self.acct.event_counts.to_vec(),
            ts_time_ps: self.smp.out_ts.0.clone(),
            ts_port: self.smp.out_ts.1.clone(),
            ts_queued_bytes: self.smp.out_ts.2.clone(),
            ts_tx_bytes: self.smp.out_ts.3.clone(),
            congestion_events: self.pb.congestion_events,
            pushback_msgs: self.pb.msgs,
            paused_attempts: self.pb.paused_attempts,
            eqo_samples: self.eqo.samples,
            eqo_mean_abs_error: if self.eqo.samples > 0 { self.eqo.abs_err_sum as f64 / self.eqo.samples as f64 } else { 0.0 },
            eqo_max_abs_error: self.eqo.max_abs_err,
            eqo_mean_error: if self.eqo.samples > 0 { self.eqo.signed_err_sum as f64 / self.eqo.samples as f64 } else { 0.0 },
            offloaded_packets: self.offload.packets,
            offloaded_bytes: self.offload.bytes,
            offload_peak_host_bytes: self.offload.peak_held_bytes,
            offload_refused: self.offload.refused,
            shared_peak_bytes: self.net.shared.peak_bytes,
            shared_peak_node: self.net.shared.peak_node,
            drop_log: self.droplog.clone(),
            packets: PacketTotals {
                sent: self.acct.ledger.sent,
                sent_retx: self.acct.ledger.sent_retx,
                sent_ctrl: self.acct.ledger.sent_ctrl,
                delivered: self.acct.ledger.pkts_delivered,
                dropped: DROP_REASONS.iter().zip(self.acct.ledger.pkts_dropped.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                dropped_bytes: DROP_REASONS.iter().zip(self.acct.ledger.dropped_bytes.iter()).enumerate().filter(|(i, _)| self.reason_listed(*i)).map(|(_, (r, &v))| (r.to_string(), v)).collect(),
                trimmed: self.acct.ledger.pkts_trimmed,
                trims: self.acct.ledger.trims,
                bounces: self.acct.ledger.bounces,
                in_flight: live,
                duplicate_bytes: self.acct.ledger.duplicate_bytes,
            },
            flow_acked_ps: self.flows.iter().map(|f| f.acked_at).collect(),
            flow_transport: self.flows.iter().map(|f| f.tp).collect(),
            flow_start_ps: self.flows.iter().map(|f| if f.started { f.start } else { Ps::MAX }).collect(),
            adm_deferred: self.acct.adm_deferred,
            net_series: self.smp.out_net.clone(),
            flow_retx: self.flows.iter().map(|f| match self.tg.conns.get(f.conn as usize) {
                Some(Some(c)) => c.stats().retransmits,
                _ => f.retx,
            }).collect(),
            flow_timeouts: self.flows.iter().map(|f| match self.tg.conns.get(f.conn as usize) {
                Some(Some(c)) => c.stats().timeouts,
                _ => f.timeouts,
            }).collect(),
            ecn_marks: self.acct.ecn_marks,
            reroutes: self.acct.reroutes,
            rlb_slices: self.rlb.lb.as_ref().map_or(0, |r| r.stats().slices),
            rlb_committed_pkts: self.rlb.lb.as_ref().map_or(0, |r| r.stats().committed_pkts),
            rlb_returns: self.rlb.lb.as_ref().map_or(0, |r| r.stats().returns),
            rlb_relayed_pkts: self.rlb.lb.as_ref().map_or(0, |r| r.stats().relayed_pkts),
            rlb_host_bytes: self.rlb.lb.as_ref().map_or(0, |r| { let (a, b, c) = r.held_bytes(); a + b + c }),
            latency_count: self.acct.latency.n,
            latency_mean_ps: if self.acct.latency.n > 0 { self.acct.latency.sum as f64 / self.acct.latency.n as f64 } else { 0.0 },
            latency_p50_ps: self.acct.latency.quantile(0.5),
            latency_p99_ps: self.acct.latency.quantile(0.99),
            reorder: self.acct.reorder,
            delivered_by_hops: self.acct.delivered_by_hops.clone(),
            delivered_pkts_by_hops: self.acct.pkts_by_hops[0].clone(),
            bulk_pkts_by_hops: self.acct.pkts_by_hops[1].clone(),
            delivered_by_class: self.acct.delivered_by_class,
            delivered_by_hops_class: self.acct.delivered_by_hops_class.clone(),
            messages: self.msg.totals(msgs_live),
            class_tx_bytes: self.class_tx_now(),
            class_capacity_bytes: {
                let mut cap = [0u64; 4];
                for (gp, pt) in self.net.ports.iter().enumerate() {
                    if pt.kind != PortKind::Unused && (pt.kind != PortKind::Electrical || pt.peer != NONE) {
                        cap[self.net.port_class[gp] as usize] += (pt.rate.bps as u128 * self.clock.now as u128 / 8_000_000_000_000) as u64;
                    }
                }
                cap
            },
            hold: self.hold.stats,
            hold_peak_bytes_by_node: self.hold.peak_node.clone(),
            switches: self.rc.switch_log.clone(),
            drain_refused: self.rc.drain_refused,
            rerouted_at_tor: self.acct.rerouted_at_tor,
            draining: self.rc.draining != NONE,
        }
    }
}
