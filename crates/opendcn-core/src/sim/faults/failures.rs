//! Link and node failures: ports going down and coming back, and the log of down intervals.

use crate::sim::*;

/// Link and node failures.
pub(in crate::sim) struct Failures {
    /// Failures: the ports that go down (true) or come back (false) at each event.
    pub(in crate::sim) events: Vec<(Vec<u32>, bool)>,
    /// Ports down now (a failed link: both its ends), and how many.
    pub(in crate::sim) down: Vec<bool>,
    pub(in crate::sim) n_down: u32,
    /// Port-down intervals, for the output: (port, from, until; Ps::MAX = still down).
    pub(in crate::sim) log: Vec<(u32, Ps, Ps)>,
}

impl Sim {
    /// Schedule a failure (`down`) or recovery of the fabric ports `ports` at `at` (a
    /// failed link is both its ends). From a failure on, nothing is sent into a down
    /// port: the packets queued on it are dropped (`failed_link`), routers that offer
    /// several ports choose among the others, and a packet whose only way on is a down
    /// port is dropped (`failed_link`); packets already on the wire arrive. Transports
    /// recover what they can. Recovery makes the ports usable again.
    pub fn fail_ports(&mut self, at: Ps, ports: Vec<u32>, down: bool) -> Result<(), SpecError> {
        if at < self.clock.now {
            return Err(SpecError::new("fail_at", at, "is in the past of the running simulation"));
        }
        if self.credit.on {
            return Err(SpecError::new("failures", ports.len(), "a lossless (credit) network cannot lose a link's packets"));
        }
        for &p in &ports {
            if p as usize >= self.net.ports.len() || self.net.port_node[p as usize] as usize >= self.net.port_offset.len() - 1 {
                return Err(SpecError::new("failed port", p, "is not a port of a fabric node"));
            }
        }
        if self.fail.down.is_empty() {
            self.fail.down = vec![false; self.net.ports.len()];
        }
        let i = self.fail.events.len() as u32;
        self.fail.events.push((ports, down));
        self.push(at, Ev::Reconfig(i | FAIL));
        Ok(())
    }

    /// Whether the output lists drop reason `i`: `failed_link` only in runs with failures,
    /// `adm_fail` only in runs with admission control, `loop` only with a hop limit.
    pub(in crate::sim) fn reason_listed(&self, i: usize) -> bool {
        match i {
            DROP_FAILED => !self.fail.down.is_empty(),
            DROP_ADM => self.mode.adm_listed,
            DROP_LOOP => self.mode.hop_limit > 0,
            _ => true,
        }
    }

    /// Port-down intervals so far: (port, from, until; `Ps::MAX` = still down).
    pub fn fail_log(&self) -> &[(u32, Ps, Ps)] {
        &self.fail.log
    }

    pub(in crate::sim) fn on_failure(&mut self, i: u32) {
        let (ports, down) = std::mem::take(&mut self.fail.events[i as usize]);
        for gp in ports {
            if self.fail.down[gp as usize] == down {
                continue;
            }
            self.fail.down[gp as usize] = down;
            if down {
                self.fail.n_down += 1;
                self.fail.log.push((gp, self.clock.now, Ps::MAX));
                self.drop_queued_as(gp, DROP_FAILED);
            } else {
                self.fail.n_down -= 1;
                if let Some(e) = self.fail.log.iter_mut().rev().find(|e| e.0 == gp && e.2 == Ps::MAX) {
                    e.2 = self.clock.now;
                }
            }
        }
    }
}
