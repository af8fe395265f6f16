//! Time series: periodic port and network-wide samples, the traffic matrix, and byte
//! counts read while the run is in progress.

use crate::sim::*;

/// Time series and the traffic matrix.
pub(in crate::sim) struct Sampling {
    pub(in crate::sim) interval: Ps,
    pub(in crate::sim) watch: Vec<u32>,
    pub(in crate::sim) out_ts: (Vec<Ps>, Vec<u32>, Vec<u64>, Vec<u64>),
    pub(in crate::sim) collect_tm: bool,
    pub(in crate::sim) tm: BTreeMap<(u32, u32), u64>,
    /// Network-wide time series: on, its samples and the last levels.
    pub(in crate::sim) net_series: bool,
    pub(in crate::sim) out_net: Vec<NetSample>,
    pub(in crate::sim) net_last: NetSample,
}

impl Sim {
    pub(in crate::sim) fn on_sample(&mut self) {
        self.sample_ports();
        if self.smp.net_series {
            self.net_sample();
        }
        let t = self.clock.now + self.smp.interval;
        self.push(t, Ev::Sample);
    }

    /// One row per watched port: bytes queued now, bytes sent since the last sample.
    pub(in crate::sim) fn sample_ports(&mut self) {
        for i in 0..self.smp.watch.len() {
            let w = self.smp.watch[i];
            self.release_departed(w);
            let pt = &mut self.net.ports[w as usize];
            self.smp.out_ts.0.push(self.clock.now);
            self.smp.out_ts.1.push(w);
            self.smp.out_ts.2.push(pt.bytes);
            self.smp.out_ts.3.push(pt.tx_bytes - pt.tx_bytes_sampled);
            pt.tx_bytes_sampled = pt.tx_bytes;
        }
    }

    /// One network-wide sample: levels now, counters over the interval ending now.
    pub(in crate::sim) fn net_sample(&mut self) {
        let mut queued = 0;
        let mut tx = 0;
        for gp in 0..self.net.ports.len() as u32 {
            self.release_departed(gp);
            let pt = &self.net.ports[gp as usize];
            queued += pt.bytes;
            tx += pt.tx_bytes;
        }
        let bulk = self.rlb.lb.as_ref().map_or(0, |r| { let (a, b, c) = r.held_bytes(); a + b + c });
        let s = NetSample {
            time_ps: self.clock.now, queued_bytes: queued, tx_bytes: tx, trims: self.acct.ledger.trims, bounces: self.acct.ledger.bounces,
            delivered_bytes: self.acct.delivered, bulk_host_bytes: bulk, congestion_events: self.pb.congestion_events,
            pushback_msgs: self.pb.msgs,
        };
        let p = self.smp.net_last;
        self.smp.out_net.push(NetSample {
            tx_bytes: s.tx_bytes - p.tx_bytes, trims: s.trims - p.trims, bounces: s.bounces - p.bounces,
            delivered_bytes: s.delivered_bytes - p.delivered_bytes, congestion_events: s.congestion_events - p.congestion_events,
            pushback_msgs: s.pushback_msgs - p.pushback_msgs, ..s
        });
        self.smp.net_last = s;
    }

    /// Close the time series at the end of a run: one last (partial-interval) sample at
    /// `now` unless one was taken there (nothing when sampling is off).
    pub fn final_sample(&mut self) {
        if self.smp.interval == 0 || (self.smp.watch.is_empty() && !self.smp.net_series) {
            return;
        }
        let last = self.smp.out_ts.0.last().copied().or(self.smp.out_net.last().map(|x| x.time_ps)).unwrap_or(0);
        if self.clock.now > last {
            self.sample_ports();
            if self.smp.net_series {
                self.net_sample();
            }
        }
    }

    /// Start (or stop) counting injected bytes per (src node, dst node).
    pub fn set_collect_tm(&mut self, on: bool) {
        self.smp.collect_tm = on;
    }

    /// Take the traffic matrix collected since the last call: (src node, dst node, bytes).
    pub fn take_tm(&mut self) -> Vec<(u32, u32, u64)> {
        std::mem::take(&mut self.smp.tm).into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// Bytes sent per link class up to now: what the releases counted, plus the planned
    /// transmissions that have started and wait for their port's next (lazy) release.
    pub(in crate::sim) fn class_tx_now(&self) -> [u64; 4] {
        let mut tx = self.acct.class_tx;
        for (gp, pt) in self.net.ports.iter().enumerate() {
            if pt.cal == NONE || pt.next_dep > self.clock.now {
                continue;
            }
            let n = if pt.kind == PortKind::Optical && !self.sched.is_static() { self.sched.slices() } else { 1 };
            let started: u64 = self.net.cal[pt.cal as usize..(pt.cal + n) as usize].iter()
                .flat_map(|q| q.planned.iter().take_while(|e| e.0 <= self.clock.now))
                .chain(pt.departs.unreleased().filter(|e| e.0 <= self.clock.now))
                .map(|e| e.1 as u64).sum();
            tx[self.net.port_class[gp] as usize] += started;
        }
        tx
    }

    /// Bytes currently queued at `port` (global id).
    pub fn port_bytes(&mut self, port: u32) -> u64 {
        self.release_departed(port);
        self.net.ports[port as usize].bytes
    }
}
