//! RotorLB bulk transport glue: the hosts' offer/accept step at every matching, bulk
//! packets injected on their committed circuits, and their arrival at relays and receivers.

use crate::sim::*;

impl Sim {
    pub(in crate::sim) fn rlb_uplinks(&self) -> u32 {
        self.rlb.as_ref().map_or(0, |r| r.config().uplinks)
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
            let own: Vec<u32> = (spec.port_offset[n]..spec.port_offset[n + 1]).filter(|&g| self.optical[g as usize]).collect();
            if *u.get_or_insert(own.len()) != own.len() || own.len() < 2 {
                return Err(SpecError::new(field, "rotorlb", "needs the same number (>= 2) of optical ports (rotors) at every node"));
            }
            ports.extend(own);
        }
        let u = u.unwrap_or(0) as u32;
        let rate = self.ports[ports[0] as usize].rate;
        let full = self.mtu as u64 + self.header as u64;
        let ser = rate.tx(full);
        let delta = self.ports[ports[0] as usize].prop + ser;
        let up = (u as u64 * d).saturating_sub(spec.guardband_ps);
        if up <= delta {
            return Err(SpecError::new(field, "rotorlb", "a matching is not held long enough for one hop"));
        }
        let hold = up - delta;
        let max = (hold as u128 * rate.bps as u128) / (8 * crate::units::PS_PER_S as u128 * full as u128 * u as u128);
        let cfg = RotorLbConfig { tors: nodes, uplinks: u, hosts_per_tor: hpr, mss: self.mtu, hold_ps: hold,
                                  max_pkts: (max.min(u32::MAX as u128) as u32).max(1), pace_ps: u as u64 * ser };
        self.rlb = Some(RotorLb::new(cfg));
        self.rlb_ports = ports;
        Ok(())
    }

    /// Schedule the next offer/accept step: when the next slice's new circuits are up.
    pub(in crate::sim) fn schedule_rlb(&mut self) {
        if self.rlb_event {
            return;
        }
        self.rlb_event = true;
        let cur = self.slice_now();
        let t = self.sched.slice(cur.abs + 1).start + self.sched.guardband();
        self.push(t, Ev::Rlb);
    }

    /// Offer/accept for every rotor whose circuits changed at the start of this slice.
    pub(in crate::sim) fn on_rlb(&mut self) {
        self.rlb_event = false;
        let idx = self.slice_now().idx;
        let u = self.rlb_uplinks();
        let n = self.rlb_ports.len() as u32 / u;
        for k in 0..u {
            if !(0..n).any(|t| self.sched.guard_of(self.rlb_ports[(t * u + k) as usize], idx) > 0) {
                continue;
            }
            let (ports, sched, port_node) = (&self.rlb_ports, &self.sched, &self.port_node);
            let peer = |t: u32| {
                let q = sched.peer(ports[(t * u + k) as usize], idx);
                (q != NONE && port_node[q as usize] != t).then(|| port_node[q as usize])
            };
            let hosts = self.rlb.as_mut().expect("scheduled by RotorLB").on_slice(self.now, k, peer);
            for h in hosts {
                self.kick(h);
            }
        }
        if self.rlb.as_mut().expect("scheduled by RotorLB").end_slice() {
            self.schedule_rlb();
        }
    }

    /// Put a committed bulk packet on host `e`'s link toward its rack's rotor uplink.
    pub(in crate::sim) fn inject_bulk(&mut self, e: u32, b: BulkPkt) {
        let pid = self.new_packet(e, b.flow, b.label, K_BULK, b.payload, 0);
        if self.bulk_meta.len() <= pid as usize {
            self.bulk_meta.resize(pid as usize + 1, b);
        }
        self.bulk_meta[pid as usize] = b;
        let p = &mut self.pool[pid as usize];
        p.dst_node = b.want_tor;
        p.hops = b.relayed as u16;
        self.ledger.send(false, false);
        if self.admit(e, pid).is_err() {
            // the uplink has no room: the packet stays with its holder
            self.drop_pkt(pid, DROP_RETURNED);
        }
    }

    /// A bulk packet reached host `label`: delivered there, or held for its final host.
    pub(in crate::sim) fn bulk_arrive(&mut self, pid: u32) {
        let meta = self.bulk_meta[pid as usize];
        let h = self.pool_x[pid as usize].dst_ep;
        let (arr, step) = self.rlb.as_mut().expect("bulk packets come from RotorLB").on_arrive(h, &meta);
        match arr {
            Arrival::Delivered { flow, .. } => {
                self.latency.add(self.now - self.pool_x[pid as usize].ts);
                self.count_delivery(pid);
                let fl = self.flows[flow as usize];
                if fl.delivered == fl.size {
                    self.flow_finished(flow);
                }
            }
            Arrival::Relayed => {
                let hops = self.pool[pid as usize].hops;
                let fl = &mut self.flows[meta.flow as usize];
                fl.max_hops = fl.max_hops.max(hops);
                self.ledger.deliver(0, 0);
            }
        }
        self.release(pid);
        if step {
            self.schedule_rlb();
        }
    }
}
