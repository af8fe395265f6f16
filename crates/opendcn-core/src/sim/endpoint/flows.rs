//! Flows: start (timed, after dependencies, behind co-flow barriers), finish, and the
//! run's early stop.

use crate::sim::*;

/// Flow start order, dependencies and co-flow barriers.
pub(in crate::sim) struct Deps {
    pub(in crate::sim) next_flow: usize,
    /// Flows without dependencies in order of start (`next_flow` indexes it); per flow
    /// the dependencies not yet finished and the gap after the last; per flow the flows
    /// waiting for it (`dependents[dep_ptr[f]..dep_ptr[f + 1]]`).
    pub(in crate::sim) timed: Vec<u32>,
    pub(in crate::sim) dep_wait: Vec<u32>,
    pub(in crate::sim) dep_gap: Vec<Ps>,
    pub(in crate::sim) dependents_ptr: Vec<u32>,
    pub(in crate::sim) dependents: Vec<u32>,
    /// Co-flow barriers (empty: none): each flow's co-flow (NONE: none), the unfinished
    /// flows of each co-flow, and each co-flow's flows (`coflow_flows[coflow_ptr[c]..
    /// coflow_ptr[c + 1]]`).
    pub(in crate::sim) flow_coflow: Vec<u32>,
    pub(in crate::sim) coflow_left: Vec<u32>,
    pub(in crate::sim) coflow_ptr: Vec<u32>,
    pub(in crate::sim) coflow_flows: Vec<u32>,
}

impl Sim {
    /// A flow finished (last byte at its receiver): count it, and end the run early when
    /// the stop condition holds (every flow started, and every low-latency flow or every
    /// flow finished).
    pub(in crate::sim) fn flow_finished(&mut self, f: u32) {
        self.flows[f as usize].finish = self.clock.now;
        self.acct.flows_completed += 1;
        if self.flows[f as usize].tp != TransportKind::RotorLb {
            self.ll_done += 1;
        }
        if !self.deps.dependents_ptr.is_empty() {
            // the flows waiting for this one: the last dependency to finish starts them
            let (a, b) = (self.deps.dependents_ptr[f as usize] as usize, self.deps.dependents_ptr[f as usize + 1] as usize);
            for k in a..b {
                self.one_wait_less(self.deps.dependents[k] as usize);
            }
        }
        if let Some(&c) = self.deps.flow_coflow.get(f as usize) {
            // the last flow of a co-flow lifts the barrier of the next one
            if c != NONE {
                self.deps.coflow_left[c as usize] -= 1;
                let next = c as usize + 1;
                if self.deps.coflow_left[c as usize] == 0 && next < self.deps.coflow_left.len() {
                    for k in self.deps.coflow_ptr[next] as usize..self.deps.coflow_ptr[next + 1] as usize {
                        self.one_wait_less(self.deps.coflow_flows[k] as usize);
                    }
                }
            }
        }
        self.check_stop();
    }

    /// Flow `h` has one unfinished dependency (or barrier) less; at none it starts now +
    /// its gap, and not before its own start.
    pub(in crate::sim) fn one_wait_less(&mut self, h: usize) {
        self.deps.dep_wait[h] -= 1;
        if self.deps.dep_wait[h] == 0 {
            let t = self.flows[h].start.max(self.clock.now.saturating_add(self.deps.dep_gap[h]));
            self.flows[h].start = t;
            self.push(t, Ev::Start(h as u32));
        }
    }

    pub(in crate::sim) fn check_stop(&mut self) {
        let all_started = self.acct.flows_started == self.flows.len() as u64;
        self.stopped |= all_started && match self.stop_when {
            StopWhen::Duration => false,
            StopWhen::LowLatencyDone => self.ll_done == self.ll_total,
            StopWhen::AllDone => self.acct.flows_completed == self.flows.len() as u64,
        };
    }

    // ---------------------------------------------------------------- packets and pool

    pub(in crate::sim) fn on_next_flows(&mut self) {
        while self.deps.next_flow < self.deps.timed.len() && self.flows[self.deps.timed[self.deps.next_flow] as usize].start <= self.clock.now {
            let f = self.deps.timed[self.deps.next_flow];
            self.deps.next_flow += 1;
            self.start_flow(f);
        }
        if self.deps.next_flow < self.deps.timed.len() {
            let t = self.flows[self.deps.timed[self.deps.next_flow] as usize].start;
            self.push(t, Ev::NextFlows);
        } else {
            self.check_stop();
        }
    }

    /// Flow `f` starts now: its bytes are offered and its source may send.
    pub(in crate::sim) fn start_flow(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        self.flows[f as usize].started = true;
        self.acct.offered += fl.size;
        self.acct.ledger.offer(fl.size);
        self.acct.flows_started += 1;
        if fl.tp == TransportKind::RotorLb && self.eps[fl.src as usize].node == self.eps[fl.dst as usize].node {
            // a bulk flow inside one rack never crosses the rotors: NDP through its ToR
            self.flows[f as usize].tp = TransportKind::Ndp;
            self.ll_total += 1;
            self.open_conn(f);
            return;
        }
        if fl.tp == TransportKind::RotorLb {
            let rlb = self.rlb.lb.as_mut().expect("built for bulk flows");
            if rlb.add_flow(f, fl.src, fl.dst, fl.size) {
                self.schedule_rlb();
            }
            return;
        }
        if fl.tp.reliable() {
            self.open_conn(f);
            return;
        }
        let dst_node = self.eps[fl.dst as usize].node;
        let ep = &mut self.eps[fl.src as usize];
        match ep.voq.get(&fl.dst) {
            Some(&slot) => ep.voqs[slot as usize].rest.push_back(f),
            None => {
                let q = Voq { dst: fl.dst, dst_node, head: f, size: fl.size, injected: fl.injected, rest: VecDeque::new() };
                let slot = match ep.voq_free.pop() {
                    Some(k) => {
                        ep.voqs[k as usize] = q;
                        k
                    }
                    None => {
                        ep.voqs.push(q);
                        (ep.voqs.len() - 1) as u32
                    }
                };
                ep.voq.insert(fl.dst, slot);
                ep.rr.push_back(slot);
            }
        }
        if !ep.scheduled {
            self.inject(fl.src);
        }
    }

    /// Remaining bytes (not yet delivered) per (source node, destination node) of the flows
    /// that have started and not completed, at the current time: what a demand-aware
    /// controller reads. Sorted by (source, destination).
    pub fn demand(&self) -> Vec<(u32, u32, u64)> {
        let mut m: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for f in self.flows.iter().filter(|f| f.started) {
            if f.finish == Ps::MAX && f.delivered < f.size {
                let k = (self.eps[f.src as usize].node, self.eps[f.dst as usize].node);
                *m.entry(k).or_default() += f.size - f.delivered;
            }
        }
        m.into_iter().map(|((a, b), v)| (a, b, v)).collect()
    }

    /// Per flow of the run, in order, at the current time: its finish time (`Ps::MAX`:
    /// not finished), payload bytes its source has sent (first transmissions) and bytes
    /// delivered.
    pub fn flow_progress(&self) -> (Vec<Ps>, Vec<u64>, Vec<u64>) {
        let fin = self.flows.iter().map(|f| f.finish).collect();
        let sent = self.flows.iter().map(|f| if f.started { f.injected } else { 0 }).collect();
        let got = self.flows.iter().map(|f| f.delivered).collect();
        (fin, sent, got)
    }
}
