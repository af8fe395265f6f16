//! Time series: periodic port and network-wide samples, the traffic matrix, and byte
//! counts read while the run is in progress.

use crate::sim::*;

impl Sim {
    pub(in crate::sim) fn on_sample(&mut self) {
        self.sample_ports();
        if self.net_series {
            self.net_sample();
        }
        let t = self.now + self.sample_interval;
        self.push(t, Ev::Sample);
    }

    /// One row per watched port: bytes queued now, bytes sent since the last sample.
    pub(in crate::sim) fn sample_ports(&mut self) {
        for i in 0..self.watch.len() {
            let w = self.watch[i];
            self.release_departed(w);
            let pt = &mut self.ports[w as usize];
            self.out_ts.0.push(self.now);
            self.out_ts.1.push(w);
            self.out_ts.2.push(pt.bytes);
            self.out_ts.3.push(pt.tx_bytes - pt.tx_bytes_sampled);
            pt.tx_bytes_sampled = pt.tx_bytes;
        }
    }

    /// One network-wide sample: levels now, counters over the interval ending now.
    pub(in crate::sim) fn net_sample(&mut self) {
        let mut queued = 0;
        let mut tx = 0;
        for gp in 0..self.ports.len() as u32 {
            self.release_departed(gp);
            let pt = &self.ports[gp as usize];
            queued += pt.bytes;
            tx += pt.tx_bytes;
        }
        let bulk = self.rlb.as_ref().map_or(0, |r| { let (a, b, c) = r.held_bytes(); a + b + c });
        let s = NetSample {
            time_ps: self.now, queued_bytes: queued, tx_bytes: tx, trims: self.ledger.trims, bounces: self.ledger.bounces,
            delivered_bytes: self.delivered, bulk_host_bytes: bulk, congestion_events: self.congestion_events,
            pushback_msgs: self.pushback_msgs,
        };
        let p = self.net_last;
        self.out_net.push(NetSample {
            tx_bytes: s.tx_bytes - p.tx_bytes, trims: s.trims - p.trims, bounces: s.bounces - p.bounces,
            delivered_bytes: s.delivered_bytes - p.delivered_bytes, congestion_events: s.congestion_events - p.congestion_events,
            pushback_msgs: s.pushback_msgs - p.pushback_msgs, ..s
        });
        self.net_last = s;
    }

    /// Close the time series at the end of a run: one last (partial-interval) sample at
    /// `now` unless one was taken there (nothing when sampling is off).
    pub fn final_sample(&mut self) {
        if self.sample_interval == 0 || (self.watch.is_empty() && !self.net_series) {
            return;
        }
        let last = self.out_ts.0.last().copied().or(self.out_net.last().map(|x| x.time_ps)).unwrap_or(0);
        if self.now > last {
            self.sample_ports();
            if self.net_series {
                self.net_sample();
            }
        }
    }

    /// Start (or stop) counting injected bytes per (src node, dst node).
    pub fn set_collect_tm(&mut self, on: bool) {
        self.collect_tm = on;
    }

    /// Take the traffic matrix collected since the last call: (src node, dst node, bytes).
    pub fn take_tm(&mut self) -> Vec<(u32, u32, u64)> {
        std::mem::take(&mut self.tm).into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// Bytes sent per link class up to now: what the releases counted, plus the planned
    /// transmissions that have started and wait for their port's next (lazy) release.
    pub(in crate::sim) fn class_tx_now(&self) -> [u64; 4] {
        let mut tx = self.class_tx;
        for (gp, pt) in self.ports.iter().enumerate() {
            if pt.cal == NONE || pt.next_dep > self.now {
                continue;
            }
            let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
            let started: u64 = self.cal[pt.cal as usize..(pt.cal + n) as usize].iter()
                .flat_map(|q| q.planned.iter().take_while(|e| e.0 <= self.now))
                .chain(pt.departs.unreleased().filter(|e| e.0 <= self.now))
                .map(|e| e.1 as u64).sum();
            tx[self.port_class[gp] as usize] += started;
        }
        tx
    }

    /// Bytes currently queued at `port` (global id).
    pub fn port_bytes(&mut self, port: u32) -> u64 {
        self.release_departed(port);
        self.ports[port as usize].bytes
    }
}
