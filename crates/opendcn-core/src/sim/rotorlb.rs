//! RotorLB bulk transport glue: the hosts' offer/accept step at every matching, bulk
//! packets injected on their committed circuits, and their arrival at relays and receivers.

use crate::sim::*;

/// RotorLB at the hosts.
pub(in crate::sim) struct RlbGlue {
    /// RotorLB state of the hosts (when some flow uses it), the global port of each
    /// (node, rotor) — a node's k-th optical port is rotor k — the bulk packets' routes
    /// by packet id, and whether an offer/accept step is scheduled.
    pub(in crate::sim) lb: Option<RotorLb>,
    pub(in crate::sim) ports: Vec<u32>,
    pub(in crate::sim) meta: Vec<BulkPkt>,
    pub(in crate::sim) event: bool,
}

impl Sim {
    pub(in crate::sim) fn rlb_uplinks(&self) -> u32 {
        self.rlb.lb.as_ref().map_or(0, |r| r.config().uplinks)
    }

    /// Build RotorLB for the bulk flows: hosts below nodes, the same number of hosts and
    /// of optical ports (rotors) at every node, a cyclic schedule of equal slices. Its
    /// hold is how long a new matching stays usable less one hop (propagation and a full
    /// packet): `U·D − r − δ`, Opera's `(U − 1)·D + ε`.
    pub(in crate::sim) fn setup_rotorlb(&mut self, spec: &SimSpec) -> Result<(), SpecError> {
        let field = "transport";
        let nodes = spec.nodes;
        if !spec.hosts_mode || spec.slice_ps.is_empty() {
            return Err(SpecError::new(field, "rotorlb", "needs hosts below nodes and a cyclic optical schedule"));
        }
        let d = spec.slice_ps[0];
        if spec.slice_ps.iter().any(|&x| x != d) {
            return Err(SpecError::new(field, "rotorlb", "needs slices of equal duration"));
        }
        let hpr = spec.ep_node.len() as u32 / nodes;
        if hpr == 0 || spec.ep_node.iter().enumerate().any(|(h, &n)| n != h as u32 / hpr) {
            return Err(SpecError::new(field, "rotorlb", "needs the same number of hosts below every node, numbered node by node"));
        }
        let mut ports = Vec::new();
        let mut u = None;
        for n in 0..nodes as usize {
            let own: Vec<u32> = (spec.port_offset[n]..spec.port_offset[n + 1]).filter(|&g| self.net.optical[g as usize]).collect();
            if *u.get_or_insert(own.len()) != own.len() || own.len() < 2 {
                return Err(SpecError::new(field, "rotorlb", "needs the same number (>= 2) of optical ports (rotors) at every node"));
            }
            ports.extend(own);
        }
        let u = u.unwrap_or(0) as u32;
        let rate = self.net.ports[ports[0] as usize].rate;
        let full = self.net.mtu as u64 + self.net.header as u64;
        let ser = rate.tx(full);
        let delta = self.net.ports[ports[0] as usize].prop + ser;
        let up = (u as u64 * d).saturating_sub(spec.guardband_ps);
        if up <= delta {
            return Err(SpecError::new(field, "rotorlb", "a matching is not held long enough for one hop"));
        }
        let hold = up - delta;
        let max = (hold as u128 * rate.bps as u128) / (8 * crate::units::PS_PER_S as u128 * full as u128 * u as u128);
        let cfg = RotorLbConfig { tors: nodes, uplinks: u, hosts_per_tor: hpr, mss: self.net.mtu, hold_ps: hold,
                                  max_pkts: (max.min(u32::MAX as u128) as u32).max(1), pace_ps: u as u64 * ser };
        self.rlb.lb = Some(RotorLb::new(cfg));
        self.rlb.ports = ports;
        Ok(())
    }

    /// Schedule the next offer/accept step: when the next slice's new circuits are up.
    pub(in crate::sim) fn schedule_rlb(&mut self) {
        if self.rlb.event {
            return;
        }
        self.rlb.event = true;
        let cur = self.clock.slice();
        let t = self.sched.slice(cur.abs + 1).start + self.sched.guardband();
        self.push(t, Ev::Rlb);
    }

    /// Offer/accept for every rotor whose circuits changed at the start of this slice.
    pub(in crate::sim) fn on_rlb(&mut self) {
        self.rlb.event = false;
        let idx = self.clock.slice().idx;
        let u = self.rlb_uplinks();
        let n = self.rlb.ports.len() as u32 / u;
        for k in 0..u {
            if !(0..n).any(|t| self.sched.guard_of(self.rlb.ports[(t * u + k) as usize], idx) > 0) {
                continue;
            }
            let (ports, sched, port_node) = (&self.rlb.ports, &self.sched, &self.net.port_node);
            let peer = |t: u32| {
                let q = sched.peer(ports[(t * u + k) as usize], idx);
                (q != NONE && port_node[q as usize] != t).then(|| port_node[q as usize])
            };
            let hosts = self.rlb.lb.as_mut().expect("scheduled by RotorLB").on_slice(self.clock.now, k, peer);
            for h in hosts {
                self.kick(h);
            }
        }
        if self.rlb.lb.as_mut().expect("scheduled by RotorLB").end_slice() {
            self.schedule_rlb();
        }
    }

    /// Put a committed bulk packet on host `e`'s link toward its rack's rotor uplink.
    pub(in crate::sim) fn inject_bulk(&mut self, e: u32, b: BulkPkt) {
        let pid = self.new_packet(e, b.flow, b.label, K_BULK, b.payload, 0);
        if self.rlb.meta.len() <= pid as usize {
            self.rlb.meta.resize(pid as usize + 1, b);
        }
        self.rlb.meta[pid as usize] = b;
        let p = &mut self.pool.pkt[pid as usize];
        p.dst_node = b.want_tor;
        p.hops = b.relayed as u16;
        self.acct.ledger.send(false, false);
        if self.admit(e, pid, None).is_err() {
            // the uplink has no room: the packet stays with its holder
            self.drop_pkt(pid, DROP_RETURNED);
        }
    }

    /// A bulk packet reached host `label`: delivered there, or held for its final host.
    pub(in crate::sim) fn bulk_arrive(&mut self, pid: u32) {
        let meta = self.rlb.meta[pid as usize];
        let h = self.pool.x[pid as usize].dst_ep;
        let (arr, step) = self.rlb.lb.as_mut().expect("bulk packets come from RotorLB").on_arrive(h, &meta);
        let how = match arr {
            Arrival::Delivered { flow, .. } => {
                self.acct.latency.add(self.clock.now - self.pool.x[pid as usize].ts);
                let new = self.count_delivery(pid);
                let fl = self.flows[flow as usize];
                if fl.delivered == fl.size {
                    self.flow_finished(flow);
                }
                Exit::Delivered { new, dup: 0 }
            }
            Arrival::Relayed => {
                let hops = self.pool.pkt[pid as usize].hops;
                let fl = &mut self.flows[meta.flow as usize];
                fl.max_hops = fl.max_hops.max(hops);
                Exit::Control
            }
        };
        self.exit(pid, how);
        if step {
            self.schedule_rlb();
        }
    }
}
