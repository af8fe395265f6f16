//! Control messages between nodes, for controllers that talk over the network itself
//! (Duo's DistDA: PortRequest / PortApprove / DeclineRequest), and per node-pair
//! counters of what reaches a destination node (elephant detection at the destination).
//!
//! What is modeled:
//! - A message is a real packet of `size` wire bytes and no payload, originated by the
//!   source node's control plane (no host link): it is routed by the current tables (or
//!   along a given list of ports), queues in the highest priority class of served ports
//!   (it is not data: `class_of` puts it with ACKs and headers), crosses links with their
//!   serialization and propagation, and can be dropped like any packet (a full class,
//!   a reconfigured or failed port, no route). Nothing resends a lost message.
//! - It counts in the packet ledger as a control packet (sent, then delivered, dropped
//!   or in flight), in the link classes' bytes and in the per-port counters.
//! - At its destination node it is put in the mailbox (time, source, destination, tag,
//!   send time, hops, link classes crossed), and `Sim::run_until` returns right after
//!   that event, so a controller reacts at the exact simulated time of the delivery.
//! - Its own balance is checked at the end of a run: sent == delivered + dropped +
//!   in flight (live message packets, scanned from the pool).

use std::collections::BTreeMap;

use super::{Exit, Packet, PacketX, Sim, DROP_NO_ROUTE, K_DATA, K_MSG};
use crate::error::SpecError;
use crate::timeflow::WILD;
use crate::units::{Ps, NONE};

/// A message as the controller sent it.
#[derive(Debug, Clone)]
struct Sent {
    src: u32,
    dst: u32,
    tag: u64,
    at: Ps,
    /// Global ports to take, in order (empty: routed by the tables at every node).
    path: Vec<u32>,
}

/// A delivered message, as the mailbox holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Its id (the order in which messages were sent, from 0).
    pub id: u32,
    /// When it reached its destination node.
    pub time: Ps,
    pub src: u32,
    pub dst: u32,
    /// The controller's tag.
    pub tag: u64,
    /// When it was sent.
    pub sent: Ps,
    /// Links crossed, and the set of link classes crossed (bit 0 electrical, 1 static
    /// optical, 2 reconfigurable optical).
    pub hops: u16,
    pub classes: u8,
}

/// The message counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageTotals {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_flight: u64,
}

/// The state behind messages and the received-bytes counters.
#[derive(Debug, Clone)]
pub(super) struct Messages {
    sent: Vec<Sent>,
    mailbox: Vec<Message>,
    /// A message was delivered by the event just run (`run_until` returns).
    pub(super) new_mail: bool,
    delivered: u64,
    pub(super) dropped: u64,
    /// Count data packets larger than this many wire bytes reaching their destination
    /// node (`NONE`: off), per (source node, destination node): (bytes, packets).
    pub(super) rx_min: u32,
    rx: BTreeMap<(u32, u32), (u64, u64)>,
}

impl Default for Messages {
    fn default() -> Self {
        Messages { sent: Vec::new(), mailbox: Vec::new(), new_mail: false, delivered: 0, dropped: 0, rx_min: NONE,
                   rx: BTreeMap::new() }
    }
}

impl Messages {
    pub(super) fn totals(&self, live: u64) -> MessageTotals {
        MessageTotals { sent: self.sent.len() as u64, delivered: self.delivered, dropped: self.dropped, in_flight: live }
    }

    /// The message balance against the live message packets scanned from the pool.
    pub(super) fn check(&self, live: u64) -> Option<String> {
        let sent = self.sent.len() as u64;
        (sent != self.delivered + self.dropped + live).then(|| {
            format!("message balance: {sent} sent != {} delivered + {} dropped + {live} in flight", self.delivered, self.dropped)
        })
    }
}

impl Sim {
    /// Send a control message of `size` wire bytes from node `src` to node `dst` now,
    /// with the controller's `tag`; it is routed by the current tables at every node,
    /// or along `path` (global ports, the first one a port of `src`) when one is given.
    /// Returns the message id. Errors name the argument that is wrong.
    pub fn send_message(&mut self, src: u32, dst: u32, tag: u64, size: u32, path: Vec<u32>) -> Result<u32, SpecError> {
        let nodes = self.net.port_offset.len() as u32 - 1;
        if src >= nodes {
            return Err(SpecError::new("src", src, format!("no such node (the network has {nodes})")));
        }
        if dst >= nodes || dst == src {
            return Err(SpecError::new("dst", dst, format!("expected another node than the source, below {nodes}")));
        }
        let full = self.net.mtu + self.net.header;
        if size == 0 || size > full {
            return Err(SpecError::new("size", size, format!("a message is one packet: 1 to {full} bytes")));
        }
        if let Some(&gp) = path.iter().find(|&&gp| gp as usize >= self.net.ports.len()) {
            return Err(SpecError::new("path", gp, "no such port"));
        }
        if let Some(&first) = path.first() {
            if self.net.port_node[first as usize] != src {
                return Err(SpecError::new("path", first, format!("the first port is not a port of node {src}")));
            }
        }
        let id = self.msg.sent.len() as u32;
        self.msg.sent.push(Sent { src, dst, tag, at: self.clock.now, path });
        let tag_slice = if self.rt.expander { self.route_slice(self.clock.now) } else { self.clock.slice().idx };
        let pid = self.alloc(Packet {
            flow: id,
            src_node: src,
            dst_node: dst,
            wire: size,
            tag: tag_slice,
            at: src,
            rx: NONE,
            from: NONE,
            route: NONE,
            kind: K_MSG,
            cred_port: NONE,
            ..Packet::default()
        }, PacketX { dst_ep: NONE, q_port: NONE, q_dep: WILD, ts: self.clock.now, ..PacketX::default() });
        self.acct.ledger.send(false, true);
        self.pool.pkt[pid as usize].innet = true;
        self.rc.in_net += 1;
        self.msg_forward(src, pid);
        Ok(id)
    }

    /// The messages delivered since the last call, in delivery order.
    pub fn take_messages(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.msg.mailbox)
    }

    /// Count, per (source node, destination node), the data packets of more than
    /// `larger_than` wire bytes that reach their destination node, from now on (`None`:
    /// stop); the counters restart from zero.
    pub fn count_received(&mut self, larger_than: Option<u32>) {
        self.msg.rx_min = larger_than.unwrap_or(NONE);
        self.msg.rx.clear();
    }

    /// The received counters since the last call: (source node, destination node, wire
    /// bytes, packets), in node order.
    pub fn take_received(&mut self) -> Vec<(u32, u32, u64, u64)> {
        std::mem::take(&mut self.msg.rx).into_iter().map(|((a, b), (by, n))| (a, b, by, n)).collect()
    }

    /// A data packet reached its destination node: count it (see `count_received`).
    pub(super) fn count_rx(&mut self, pid: u32) {
        let p = &self.pool.pkt[pid as usize];
        debug_assert!(p.kind == K_DATA);
        let e = self.msg.rx.entry((p.src_node, p.dst_node)).or_default();
        e.0 += p.wire as u64;
        e.1 += 1;
    }

    /// A message packet arrived at a node: into the mailbox at its destination, else on.
    pub(super) fn msg_arrive(&mut self, pid: u32) {
        let p = self.pool.pkt[pid as usize];
        if p.at != p.dst_node {
            self.msg_forward(p.at, pid);
            return;
        }
        self.return_credit(pid);
        let s = &self.msg.sent[p.flow as usize];
        self.msg.mailbox.push(Message { id: p.flow, time: self.clock.now, src: s.src, dst: s.dst, tag: s.tag, sent: s.at,
                                        hops: p.hops, classes: p.classes });
        self.msg.delivered += 1;
        self.msg.new_mail = true;
        self.exit(pid, Exit::Control);
    }

    /// Is `pid` a message that follows a path of ports (not the tables)?
    pub(super) fn msg_on_path(&self, pid: u32) -> bool {
        let p = &self.pool.pkt[pid as usize];
        p.kind == K_MSG && !self.msg.sent[p.flow as usize].path.is_empty()
    }

    /// Send message packet `pid` on from `node`: along its path, or by the tables.
    fn msg_forward(&mut self, node: u32, pid: u32) {
        let p = self.pool.pkt[pid as usize];
        let path = &self.msg.sent[p.flow as usize].path;
        if path.is_empty() {
            match self.route(node, pid) {
                Ok(a) => self.enqueue(a.port, pid, a.dep),
                Err(why) => self.no_route(node, pid, why),
            }
            return;
        }
        match path.get(p.pos as usize).copied() {
            Some(gp) if self.net.port_node[gp as usize] == node => {
                self.pool.pkt[pid as usize].pos += 1;
                self.enqueue(gp, pid, WILD);
            }
            // the path ends, or does not pass here (its circuits changed)
            _ => self.drop_pkt(pid, DROP_NO_ROUTE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimOutput;
    use crate::spec::{Discipline, Multipath, PortKind, RouterKind, Services, SimSpec, TransportKind, TransportParams};
    use crate::timeflow::Entry;

    const PROP: Ps = 500_000;
    /// 64 B at 100 Gb/s.
    const SER64: Ps = 5_120;

    /// Nodes 0 - 1 - 2 on a line of 100 Gb/s electrical links (port 0 of node 0 to port 1
    /// of node 1, port 2 of node 1 to port 3 of node 2) with three priority classes per
    /// port (Duo's), tables for every destination, and one ideal flow 0 -> 2 of `size`
    /// bytes (none if 0).
    fn line3(size: u64) -> SimSpec {
        let e = |dst, port| Entry { arr: WILD, src: WILD, dst, dep: WILD, port };
        SimSpec {
            nodes: 3,
            port_offset: vec![0, 1, 3, 4],
            port_kind: vec![PortKind::Electrical; 4],
            port_rate_bps: vec![100_000_000_000; 4],
            port_prop_ps: vec![PROP; 4],
            port_buffer_bytes: vec![100_000; 4],
            port_peer: vec![1, 0, 3, 2],
            slice_ps: vec![],
            guardband_ps: 0,
            sched_peer: vec![],
            hosts_mode: false,
            ep_node: vec![0, 1, 2],
            ep_rate_bps: vec![100_000_000_000; 3],
            ep_prop_ps: vec![0; 3],
            ep_down_port: vec![NONE; 3],
            router: RouterKind::Table,
            multipath: Multipath::Packet,
            max_hop: 3,
            ucmp_alpha: 1.0,
            expander_paths: 1,
            services: Services::default(),
            entries: vec![(0, e(1, 0)), (0, e(2, 0)), (1, e(0, 1)), (1, e(2, 2)), (2, e(1, 3)), (2, e(0, 3))],
            routes: vec![],
            flow_start_ps: if size > 0 { vec![0] } else { vec![] },
            flow_src: if size > 0 { vec![0] } else { vec![] },
            flow_dst: if size > 0 { vec![2] } else { vec![] },
            flow_size: if size > 0 { vec![size] } else { vec![] },
            mtu_bytes: 1436,
            header_bytes: 64,
            seed: 1,
            sample_interval_ps: 0,
            watch_ports: vec![],
            collect_tm: false,
            flow_transport: if size > 0 { vec![TransportKind::Ideal] } else { vec![] },
            transport: TransportParams::default(),
            port_disc: vec![Discipline { class_cap: vec![30_000; 3], ..Default::default() }; 4],
            loss: vec![],
            pias_thresholds: vec![],
            stop_when: Default::default(),
            net_series: false,
            hold_unrouted: false,
            port_link_class: vec![],
            shared_buffer_bytes: vec![],
            buffer_alpha: vec![],
            log_drops: 0,
            admission_control: false,
            flow_dep_ptr: vec![],
            flow_dep_ids: vec![],
            flow_gap_ps: vec![],
            flow_coflow: vec![],
            flow_app_rate_bps: vec![],
            hop_limit: 0,
            lookahead_ps: 0,
        }
    }

    fn clean(o: &SimOutput) {
        assert!(o.invariant_errors.is_empty(), "{:?}", o.invariant_errors);
    }

    #[test]
    fn a_message_crosses_the_network_and_stops_the_run_at_its_delivery() {
        let mut sim = Sim::new(line3(0)).unwrap();
        sim.run_until(1_000_000);
        let id = sim.send_message(0, 2, 77, 64, vec![]).unwrap();
        assert_eq!(id, 0);
        // two hops of serialization and propagation
        let at = 1_000_000 + 2 * (SER64 + PROP);
        assert!(sim.run_until(50_000_000));
        assert_eq!(sim.now(), at, "the run stops at the delivery");
        let got = sim.take_messages();
        assert_eq!(got, vec![Message { id: 0, time: at, src: 0, dst: 2, tag: 77, sent: 1_000_000, hops: 2, classes: 1 }]);
        assert!(sim.take_messages().is_empty());
        assert!(!sim.run_until(50_000_000));
        assert_eq!(sim.now(), 50_000_000, "then it runs on");
        let o = sim.output();
        clean(&o);
        assert_eq!(o.messages, MessageTotals { sent: 1, delivered: 1, dropped: 0, in_flight: 0 });
        assert_eq!((o.packets.sent, o.packets.sent_ctrl, o.packets.delivered), (1, 1, 1));
        // on the links like any packet: 64 B on each of the two ports it left by
        assert_eq!(o.class_tx_bytes[0], 128);
        assert_eq!(o.packet_hops, 2);
    }

    #[test]
    fn a_message_in_flight_is_in_both_ledgers_and_a_path_is_followed() {
        let mut sim = Sim::new(line3(0)).unwrap();
        sim.send_message(2, 0, 5, 100, vec![3, 1]).unwrap();
        sim.run_until(PROP);
        let o = sim.output();
        clean(&o);
        assert_eq!((o.messages.in_flight, o.packets.in_flight), (1, 1));
        sim.run_until(10_000_000);
        let m = sim.take_messages();
        assert_eq!(m.len(), 1);
        // 100 B at 100 Gb/s = 8 ns per hop
        assert_eq!((m[0].time, m[0].hops, m[0].tag), (2 * (8_000 + PROP), 2, 5));
        // a path that does not pass the node it reaches: dropped there (no route)
        sim.send_message(0, 2, 6, 64, vec![0, 3]).unwrap();
        sim.run_until(20_000_000);
        assert!(sim.take_messages().is_empty());
        let o = sim.output();
        clean(&o);
        assert_eq!(o.messages, MessageTotals { sent: 2, delivered: 1, dropped: 1, in_flight: 0 });
        assert!(o.packets.dropped.iter().any(|(r, n)| r == "no_route" && *n == 1));
    }

    #[test]
    fn a_message_overtakes_queued_data_in_the_high_class() {
        // the source host sends at 400 Gb/s into a 100 Gb/s port: data queue up at node 0
        let mut spec = line3(143_600);
        spec.ep_rate_bps = vec![400_000_000_000; 3];
        let mut sim = Sim::new(spec).unwrap();
        let t0 = 2_000_000;
        sim.run_until(t0);
        assert!(sim.port_bytes(0) >= 15 * 1500, "a queue of data at node 0");
        sim.send_message(0, 2, 1, 64, vec![]).unwrap();
        sim.run_until(100_000_000);
        let m = sim.take_messages();
        // at most the data packet being sent at each of the two ports, then its own hops
        let full = 120_000;
        assert!(m[0].time <= t0 + 2 * full + 2 * (SER64 + PROP), "{}", m[0].time);
        sim.run_until(100_000_000);
        let o = sim.output();
        clean(&o);
        assert!(o.flow_finish_ps[0] > m[0].time + 15 * full, "the data queued before it finish later");
    }

    #[test]
    fn bad_messages_are_refused_by_name() {
        let mut sim = Sim::new(line3(0)).unwrap();
        for (src, dst, size, path, field) in [(3, 0, 64, vec![], "src"), (0, 0, 64, vec![], "dst"), (0, 5, 64, vec![], "dst"),
                                              (0, 2, 0, vec![], "size"), (0, 2, 1501, vec![], "size"),
                                              (0, 2, 64, vec![1], "path"), (0, 2, 64, vec![0, 9], "path")] {
            let e = sim.send_message(src, dst, 0, size, path).unwrap_err();
            assert_eq!(e.field, field);
        }
        let o = sim.output();
        clean(&o);
        assert_eq!((o.messages.sent, o.packets.sent), (0, 0));
    }

    #[test]
    fn received_counters_count_data_at_the_destination_node() {
        // 10 packets of 1436 + 64 B; the counters start at 0 and ignore what is not larger
        let mut sim = Sim::new(line3(14_360)).unwrap();
        sim.count_received(Some(255));
        sim.run_until(100_000_000);
        assert_eq!(sim.take_received(), vec![(0, 2, 15_000, 10)]);
        assert!(sim.take_received().is_empty());
        let mut sim = Sim::new(line3(14_360)).unwrap();
        sim.count_received(Some(1500));
        sim.run_until(100_000_000);
        assert!(sim.take_received().is_empty());
        clean(&sim.output());
    }

    #[test]
    fn a_link_class_override_marks_the_packets_that_cross_it() {
        // node 1's port towards node 2 counts as reconfigurable optical
        let mut spec = line3(14_360);
        spec.port_link_class = vec![NONE, NONE, 2, NONE];
        let mut sim = Sim::new(spec).unwrap();
        sim.run_until(100_000_000);
        let o = sim.output();
        clean(&o);
        assert_eq!(o.delivered_by_class[0b101], 14_360);
        assert_eq!(o.delivered_by_hops_class[2][0b101], 14_360);
        assert_eq!(o.delivered_by_hops_class.iter().flatten().sum::<u64>(), 14_360);
        assert_eq!((o.class_tx_bytes[0], o.class_tx_bytes[2]), (15_000, 15_000));
        let mut bad = line3(0);
        bad.port_link_class = vec![NONE, 3, NONE, NONE];
        assert_eq!(Sim::new(bad).err().unwrap().field, "ports[1].link_class");
        let mut short = line3(0);
        short.port_link_class = vec![2];
        assert_eq!(Sim::new(short).err().unwrap().field, "port_link_class");
    }
}
