//! Unit tests of RotorLB.

use super::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const US: Ps = 1_000_000;
const RATE: u64 = 10_000_000_000;
/// 1500 B at 10 Gb/s.
const SER: Ps = 1_200_000;
const D: Ps = 20 * US;
const EPS: Ps = 2 * US;
const MSS: u64 = 1436;

/// Opera's parameters for 10 Gb/s, 1500 B packets, D = 20 µs, ε = 2 µs.
fn cfg(tors: u32, uplinks: u32, hpr: u32) -> RotorLbConfig {
    RotorLbConfig::opera(tors, uplinks, hpr, 1500, 64, RATE, D, EPS)
}

/// Everything host `h` sends from `t` on while its NIC is free between its own packets
/// (one packet per `SER`), until it is idle; each packet goes to `net`.
fn drain(lb: &mut RotorLb, h: u32, mut t: Ps, mut net: impl FnMut(&mut RotorLb, Ps, BulkPkt)) -> Vec<(Ps, BulkPkt)> {
    let mut out = Vec::new();
    loop {
        match lb.poll_send(h, t) {
            Poll::Send(p) => {
                out.push((t, p));
                lb.check().unwrap();
                net(lb, t, p);
                lb.check().unwrap();
                t += SER;
            }
            Poll::Wait(w) => {
                assert!(w > t);
                t = w;
            }
            Poll::Idle => return out,
        }
    }
}

fn deliver(lb: &mut RotorLb, _t: Ps, p: BulkPkt) {
    let (a, _) = lb.on_arrive(p.label, &p);
    assert_eq!(a, Arrival::Delivered { flow: p.flow, payload: p.payload });
}

fn pkts(size: u64) -> u64 {
    size.div_ceil(MSS)
}

#[test]
fn opera_parameters() {
    let c = cfg(8, 4, 2);
    assert_eq!(c.mss, 1436);
    assert_eq!(c.hold_ps, 3 * D + EPS);
    // 62 µs at 10 Gb/s on a quarter of the link: 62e-6 * 1e10 / (8 * 1500 * 4) = 12.9
    assert_eq!(c.max_pkts, 12);
    assert_eq!(c.pace_ps, 4 * SER);
    // never below one packet
    assert_eq!(RotorLbConfig::opera(8, 4, 2, 1500, 64, RATE, 1000, 1).max_pkts, 1);
}

#[test]
fn direct_pair_commits_everything_paced_within_the_hold() {
    let c = cfg(2, 4, 1);
    let mut lb = RotorLb::new(c);
    let size = 9 * MSS + 700; // 10 packets, under max_pkts
    assert!(lb.add_flow(7, 0, 1, size), "first flow asks for a step");
    assert!(!lb.add_flow(8, 1, 0, 3 * MSS), "a step is pending already");
    assert!(lb.pending());
    let kicks = lb.on_slice(0, 2, |t| Some(1 - t));
    assert_eq!(kicks, vec![0, 1]);
    assert!(!lb.pending());
    assert_eq!(lb.stats().committed_pkts, 10 + 3);
    assert_eq!(lb.held_bytes(), (0, 0, size + 3 * MSS));
    assert!(lb.end_slice(), "committed packets remain: another step is due");
    let sent = drain(&mut lb, 0, 0, deliver);
    assert_eq!(sent.len() as u64, pkts(size));
    assert_eq!(sent.iter().map(|x| x.1.payload as u64).sum::<u64>(), size);
    assert_eq!(sent.last().unwrap().1.payload, 700);
    for w in sent.windows(2) {
        assert!(w[1].0 - w[0].0 >= c.pace_ps, "{:?}", w);
    }
    for &(t, p) in &sent {
        assert!(t < c.hold_ps);
        assert_eq!((p.flow, p.fin, p.label, p.holder, p.rotor, p.want_tor, p.relayed), (7, 1, 1, 0, 2, 1, false));
    }
    drain(&mut lb, 1, 0, deliver);
    assert_eq!(lb.held_bytes(), (0, 0, 0));
    assert_eq!(lb.net_bytes(), 0);
    assert_eq!(lb.stats().delivered_bytes, size + 3 * MSS);
    // the pending step finds nothing and ends the loop
    assert!(lb.on_slice(D, 3, |t| Some(1 - t)).is_empty());
    assert!(!lb.end_slice());
    assert!(!lb.pending());
    lb.check().unwrap();
}

#[test]
fn a_last_packet_sent_at_the_step_start_needs_no_further_step() {
    let mut lb = RotorLb::new(cfg(2, 4, 1));
    assert!(lb.add_flow(0, 0, 1, 100));
    assert_eq!(lb.on_slice(0, 0, |t| Some(1 - t)), vec![0]);
    let Poll::Send(p) = lb.poll_send(0, 0) else { panic!("the packet may leave at once") };
    assert_eq!(lb.poll_send(0, 0), Poll::Idle);
    assert!(!lb.end_slice(), "nothing held once the NIC took it");
    // it comes back: a new step is due
    assert!(lb.on_return(&p));
    assert!(lb.pending());
    lb.check().unwrap();
}

#[test]
fn vlb_offers_to_the_connected_rack_which_relays_later() {
    let c = cfg(3, 2, 1);
    let mut lb = RotorLb::new(c);
    let size = 4 * MSS + 10;
    assert!(lb.add_flow(0, 0, 2, size));
    // rack 2 is not connected; rack 0 reaches rack 1
    let kicks = lb.on_slice(0, 0, |t| [Some(1), Some(0), None][t as usize]);
    assert_eq!(kicks, vec![0]);
    assert!(lb.end_slice());
    let mut arrived = Vec::new();
    let first = drain(&mut lb, 0, 0, |lb, t, p| {
        assert_eq!((p.label, p.fin, p.want_tor, p.relayed), (1, 2, 1, false));
        let (a, need) = lb.on_arrive(1, &p);
        assert_eq!(a, Arrival::Relayed);
        assert!(!need, "a step is pending");
        arrived.push(t);
    });
    assert_eq!(first.len() as u64, pkts(size));
    assert_eq!(lb.held_bytes(), (0, size, 0));
    assert_eq!(lb.stats().relayed_pkts, pkts(size));
    // next superslice: rotor 1 connects rack 1 to rack 2; the relay sends straight on
    let kicks = lb.on_slice(D, 1, |t| [None, Some(2), Some(1)][t as usize]);
    assert_eq!(kicks, vec![1]);
    let second = drain(&mut lb, 1, D, |lb, _, p| {
        assert_eq!((p.label, p.fin, p.want_tor, p.relayed, p.rotor), (2, 2, 2, true, 1));
        deliver(lb, 0, p);
    });
    assert_eq!(second.len() as u64, pkts(size));
    assert!(second[0].0 >= D && second[0].0 > *arrived.last().unwrap());
    assert_eq!(lb.stats().delivered_bytes, size);
    assert!(!lb.end_slice());
    lb.check().unwrap();
}

#[test]
fn a_relay_never_offers_relayed_packets_onward() {
    // host 1 holds relayed packets for host 2, but its rack only reaches rack 0:
    // relayed data is never offered for another VLB hop
    let mut lb = RotorLb::new(cfg(3, 2, 1));
    lb.add_flow(0, 0, 2, 3 * MSS);
    lb.on_slice(0, 0, |t| [Some(1), Some(0), None][t as usize]);
    lb.end_slice();
    drain(&mut lb, 0, 0, |lb, _, p| {
        lb.on_arrive(1, &p);
    });
    let before = lb.stats().committed_pkts;
    for s in 1..6u64 {
        // rack 1 -> rack 0 only: no commitment for host 2's packets
        assert!(lb.on_slice(s * D, (s % 2) as u32, |t| [Some(1), Some(0), None][t as usize]).is_empty());
        lb.end_slice();
    }
    assert_eq!(lb.stats().committed_pkts, before);
    assert_eq!(lb.held_bytes(), (0, 3 * MSS, 0));
    // a relayed packet arriving away from its final host is flagged
    let p = BulkPkt { flow: 0, payload: 1, fin: 2, label: 0, holder: 1, rotor: 0, want_tor: 0, relayed: true };
    let mut bad = lb.clone();
    bad.net_bytes += 1;
    bad.stats.offered_bytes += 1;
    bad.on_arrive(0, &p);
    assert!(bad.check().unwrap_err().contains("relayed a second time"));
}

#[test]
fn accept_stops_at_twice_the_per_destination_share() {
    // max 4 per host per step, 2 hosts per rack: max/H = 2, accept room 4 per destination
    let mut c = cfg(3, 2, 2);
    c.max_pkts = 4;
    let mut lb = RotorLb::new(c);
    lb.add_flow(0, 0, 4, 20 * MSS);
    let peer = |t: u32| [Some(1), None, None][t as usize];
    let step = |lb: &mut RotorLb, s: u64| {
        let r = (s % 2) as u32;
        lb.on_slice(s * D, r, peer);
        let labels: Vec<u32> = lb.hosts[0].commits[r as usize].iter().map(|it| it.label).collect();
        lb.end_slice();
        drain(lb, 0, s * D, |lb, _, p| {
            lb.on_arrive(p.label, &p);
        });
        labels
    };
    // step 0: host 2 accepts all 4 (room 4, host 0's budget 4)
    assert_eq!(step(&mut lb, 0), vec![2; 4]);
    assert_eq!(lb.relay_pkts_for(2, 4), 4);
    // step 1: host 2 is full; host 3 has 2 own packets for host 4, so room 2
    lb.add_flow(1, 3, 4, 2 * MSS);
    assert_eq!(step(&mut lb, 1), vec![3; 2]);
    // step 2: host 3 holds 2 relayed + 2 own for host 4: both full
    assert!(step(&mut lb, 2).is_empty());
    assert_eq!(lb.stats().committed_pkts, 6);
    assert_eq!(lb.held_bytes().0, 14 * MSS + 2 * MSS);
    lb.check().unwrap();
}

#[test]
fn relays_send_at_most_the_per_destination_share() {
    // max 12, H 1: host 1 accepts while it holds under 2·max/H = 24 for host 2
    let mut lb = RotorLb::new(cfg(3, 4, 1));
    lb.add_flow(0, 0, 2, 30 * MSS);
    for s in 0..4u64 {
        lb.on_slice(s * D, (s % 4) as u32, |t| [Some(1), None, None][t as usize]);
        lb.end_slice();
        drain(&mut lb, 0, s * D, |lb, _, p| {
            lb.on_arrive(p.label, &p);
        });
    }
    assert_eq!(lb.stats().committed_pkts, 12 + 12);
    assert_eq!(lb.relay_pkts_for(1, 2), 24);
    assert_eq!(lb.held_bytes(), (6 * MSS, 24 * MSS, 0));
    // the relay forwards at most max/H = 12 per step
    lb.on_slice(4 * D, 0, |t| [None, Some(2), None][t as usize]);
    assert_eq!(lb.hosts[1].commits[0].len(), 12);
    lb.check().unwrap();
}

#[test]
fn return_goes_to_the_front_and_is_sent_again() {
    let mut lb = RotorLb::new(cfg(3, 2, 1));
    // two flows through relay host 1, so its queue for host 2 mixes flows
    lb.add_flow(0, 0, 2, 3 * MSS);
    lb.add_flow(1, 0, 2, 2 * MSS + 5);
    lb.on_slice(0, 0, |t| [Some(1), Some(0), None][t as usize]);
    lb.end_slice();
    drain(&mut lb, 0, 0, |lb, _, p| {
        lb.on_arrive(1, &p);
    });
    let q: Vec<(u32, u32)> = lb.hosts[1].relay[&2].iter().copied().collect();
    assert_eq!(q.len(), 6);
    lb.on_slice(D, 1, |t| [None, Some(2), Some(1)][t as usize]);
    assert!(lb.end_slice());
    // the first packet leaves and comes back; the second too
    let Poll::Send(p1) = lb.poll_send(1, D) else { panic!() };
    assert_eq!((p1.flow, p1.payload), q[0]);
    assert!(!lb.on_return(&p1), "a step is pending");
    lb.check().unwrap();
    assert_eq!(lb.hosts[1].relay[&2].front(), Some(&q[0]));
    let Poll::Wait(w) = lb.poll_send(1, D + SER) else { panic!("paced") };
    let Poll::Send(p2) = lb.poll_send(1, w) else { panic!() };
    assert_eq!((p2.flow, p2.payload), q[1]);
    lb.on_return(&p2);
    assert_eq!(lb.hosts[1].relay[&2].iter().take(2).copied().collect::<Vec<_>>(), vec![q[1], q[0]]);
    assert_eq!(lb.stats().returns, 2);
    lb.check().unwrap();
    // the rest is delivered; the returned ones at the next step with a circuit
    drain(&mut lb, 1, w + SER, deliver);
    assert_eq!(lb.held_bytes(), (0, p1.payload as u64 + p2.payload as u64, 0));
    lb.end_slice();
    let mut got = Vec::new();
    for s in 2..2 + 4u64 {
        lb.on_slice(s * D, (s % 2) as u32, |t| [None, Some(2), Some(1)][t as usize]);
        lb.end_slice();
        got.extend(drain(&mut lb, 1, s * D, deliver).into_iter().map(|x| (x.1.flow, x.1.payload)));
    }
    assert_eq!(got, vec![q[1], q[0]]);
    assert_eq!(lb.stats().delivered_bytes, 5 * MSS + 5);
    // an own packet returns to its flow's unsent bytes
    lb.add_flow(2, 0, 1, MSS + 1);
    lb.on_slice(6 * D, 0, |t| [Some(1), Some(0), None][t as usize]);
    let Poll::Send(p) = lb.poll_send(0, 6 * D) else { panic!() };
    assert_eq!(lb.held_bytes(), (0, 0, 1));
    lb.on_return(&p);
    assert_eq!(lb.held_bytes(), (MSS, 0, 1));
    assert_eq!(lb.hosts[0].local, vec![2]);
    lb.check().unwrap();
}

#[test]
fn a_nic_push_sends_the_last_commitment_back_to_the_front_of_its_queue() {
    // opera-sim's NICpush: other traffic took a slot, one committed packet goes back
    let mut c = cfg(2, 4, 1);
    c.max_pkts = 5;
    let mut lb = RotorLb::new(c);
    lb.add_flow(0, 0, 1, 8 * MSS);
    lb.on_slice(0, 0, |t| Some(1 - t));
    assert_eq!(lb.held_bytes(), (3 * MSS, 0, 5 * MSS));
    lb.nic_push(0);
    assert_eq!(lb.held_bytes(), (4 * MSS, 0, 4 * MSS));
    assert_eq!(lb.stats().nic_pushed, 1);
    lb.check().unwrap();
    // nothing committed: nothing to push
    let mut idle = RotorLb::new(c);
    assert!(!idle.nic_push(0));
    assert_eq!(idle.stats().nic_pushed, 0);
}

#[test]
fn unsent_commitments_expire_at_the_end_of_the_hold() {
    // 20 packets committed at once (max 20) but the pace lets only 13 out in 62 µs
    let mut c = cfg(2, 4, 1);
    c.max_pkts = 20;
    let mut lb = RotorLb::new(c);
    lb.add_flow(0, 0, 1, 20 * MSS);
    lb.on_slice(0, 0, |t| Some(1 - t));
    let sent = drain(&mut lb, 0, 0, deliver);
    assert_eq!(sent.len(), 13);
    for (k, w) in sent.windows(2).enumerate() {
        assert_eq!(w[1].0 - w[0].0, c.pace_ps, "gap {k}");
    }
    assert!(sent.last().unwrap().0 < c.hold_ps);
    // the NIC's last poll was past the hold: the rest went back, not lost
    assert_eq!(lb.held_bytes(), (7 * MSS, 0, 0));
    assert_eq!(lb.hosts[0].local, vec![0]);
    assert!(!lb.has_committed(0));
    lb.check().unwrap();

    // a NIC that never asks: the rotor's next step expires and re-commits them
    let mut lb = RotorLb::new(cfg(2, 4, 1));
    lb.add_flow(0, 0, 1, 5 * MSS);
    lb.on_slice(0, 0, |t| Some(1 - t));
    assert_eq!(lb.held_bytes(), (0, 0, 5 * MSS));
    for s in 1..4 {
        lb.on_slice(s * D, s as u32, |_| None);
        assert_eq!(lb.held_bytes(), (0, 0, 5 * MSS), "other rotors leave them alone");
    }
    lb.on_slice(4 * D, 0, |_| None);
    assert_eq!(lb.held_bytes(), (5 * MSS, 0, 0));
    assert_eq!(lb.stats().committed_pkts, 5);
    lb.on_slice(5 * D, 1, |t| Some(1 - t));
    assert_eq!(lb.stats().committed_pkts, 10);
    assert_eq!(drain(&mut lb, 0, 5 * D, deliver).len(), 5);
    lb.check().unwrap();

    // relayed commitments expire back to the front of the relay queue, order kept
    let mut lb = RotorLb::new(cfg(3, 2, 1));
    lb.add_flow(0, 0, 2, 2 * MSS + 1);
    lb.add_flow(1, 0, 2, MSS + 2);
    lb.on_slice(0, 0, |t| [Some(1), Some(0), None][t as usize]);
    drain(&mut lb, 0, 0, |lb, _, p| {
        lb.on_arrive(1, &p);
    });
    let q: Vec<(u32, u32)> = lb.hosts[1].relay[&2].iter().copied().collect();
    lb.on_slice(D, 1, |t| [None, Some(2), Some(1)][t as usize]);
    assert_eq!(lb.held_bytes().2, 3 * MSS + 3);
    assert_eq!(lb.poll_send(1, D + lb.cfg.hold_ps), Poll::Idle);
    assert_eq!(lb.hosts[1].relay[&2].iter().copied().collect::<Vec<_>>(), q);
    lb.check().unwrap();
}

#[test]
fn check_names_a_corrupted_counter() {
    // a state with bytes in every term
    let mut lb = RotorLb::new(cfg(3, 2, 1));
    lb.add_flow(0, 0, 2, 20 * MSS);
    lb.on_slice(0, 0, |t| [Some(1), Some(0), None][t as usize]);
    let (mut n, mut kept) = (0, Vec::new());
    drain(&mut lb, 0, 0, |lb, _, p| {
        n += 1;
        if n % 3 == 0 {
            kept.push(p);
        } else {
            lb.on_arrive(p.label, &p);
        }
    });
    lb.add_flow(1, 0, 1, 40 * MSS);
    lb.on_slice(D, 1, |t| [None, Some(2), None][t as usize]);
    let Poll::Send(p) = lb.poll_send(1, D) else { panic!() };
    lb.on_arrive(2, &p);
    lb.on_arrive(1, &kept[0]);
    let (u, r, c) = lb.held_bytes();
    assert!(u > 0 && r > 0 && c > 0 && lb.net_bytes() > 0 && lb.stats().delivered_bytes > 0);
    lb.check().unwrap();
    type Bump = fn(&mut RotorLb);
    let bumps: [(&str, Bump); 6] = [
        ("unsent", |l| l.unsent_bytes += 1),
        ("relayed", |l| l.relay_bytes += 1),
        ("committed", |l| l.commit_bytes -= 1),
        ("in network", |l| l.net_bytes += 1),
        ("delivered", |l| l.stats.delivered_bytes += 1),
        ("offered", |l| l.stats.offered_bytes -= 1),
    ];
    for (name, bump) in bumps {
        let mut bad = lb.clone();
        bump(&mut bad);
        let e = bad.check().unwrap_err();
        assert!(e.contains("not conserved") && e.contains(name), "{name}: {e}");
    }
    // a balanced slip (bytes moved between terms by no operation) is caught by the recount
    let mut bad = lb.clone();
    bad.relay_bytes += 1;
    bad.commit_bytes -= 1;
    let e = bad.check().unwrap_err();
    assert!(!e.contains("not conserved") && e.contains("relayed bytes") && e.contains("committed bytes"), "{e}");
    // a packet returned twice
    let mut bad = lb.clone();
    let p = BulkPkt { flow: 1, payload: 1000, fin: 1, label: 1, holder: 0, rotor: 0, want_tor: 1, relayed: false };
    bad.net_bytes = 0;
    bad.on_return(&p);
    assert!(bad.check().unwrap_err().contains("not conserved"));
}

#[test]
fn a_flow_inside_one_rack_is_never_committed() {
    // documented limitation: RotorLB only moves bulk between racks
    let mut lb = RotorLb::new(cfg(4, 2, 2));
    assert!(lb.add_flow(0, 0, 1, 5 * MSS));
    for s in 0..8u64 {
        assert!(lb.on_slice(s * D, (s % 2) as u32, |t| Some((t + 1 + s as u32 % 3) % 4)).is_empty());
        assert!(lb.end_slice(), "held bytes keep the steps going");
        assert!(lb.on_slice((s + 1) * D, ((s + 1) % 2) as u32, |_| None).is_empty());
        assert!(lb.end_slice());
    }
    assert_eq!(lb.stats().committed_pkts, 0);
    assert_eq!(lb.held_bytes(), (5 * MSS, 0, 0));
    lb.check().unwrap();
}

// ---- a small engine: rotors, NICs, uplinks, events ----

#[derive(Clone, Copy, Debug)]
enum Ev {
    Start(u32),
    Slice(u64),
    Nic(u32),
    /// The packet reaches the head of its uplink queue.
    Head(BulkPkt),
    Arrive(BulkPkt),
}

struct Engine {
    lb: RotorLb,
    n: u32,
    u: u32,
    hold: Ps,
    flows: Vec<(Ps, u32, u32, u64)>,
    /// Extra wait in the uplink queue of the k-th packet, and whether the engine
    /// returns it whatever the circuit.
    queue_wait: fn(u64) -> Ps,
    force_return: fn(u64) -> bool,
    heap: BinaryHeap<Reverse<(Ps, u64)>>,
    evs: Vec<Ev>,
    nic_free: Vec<Ps>,
    nic_wake: Vec<Ps>,
    scheduled: Option<u64>,
    sent: u64,
    log: Vec<(Ps, BulkPkt)>,
    delivered: Vec<u64>,
    finish: Vec<Ps>,
}

/// Rotor `r` takes a new matching at every superslice `s` with `s % U == r`:
/// a rotation of the racks, some racks left without a circuit; over 140 superslices
/// every rotor connects every pair of racks.
fn peer(n: u32, s: u64, tor: u32) -> Option<u32> {
    if (tor as u64 + s / 7) % 5 == 3 {
        return None;
    }
    let shift = 1 + ((s * 5) % (n as u64 - 1)) as u32;
    Some((tor + shift) % n)
}

impl Engine {
    fn new(c: RotorLbConfig, flows: Vec<(Ps, u32, u32, u64)>) -> Self {
        let nh = (c.tors * c.hosts_per_tor) as usize;
        let nf = flows.len();
        let mut e = Engine {
            lb: RotorLb::new(c), n: c.tors, u: c.uplinks, hold: c.hold_ps, flows,
            queue_wait: |k| (k * 7 % 11) * SER, force_return: |k| k % 13 == 5,
            heap: BinaryHeap::new(), evs: Vec::new(), nic_free: vec![0; nh], nic_wake: vec![0; nh],
            scheduled: None, sent: 0, log: Vec::new(), delivered: vec![0; nf], finish: vec![Ps::MAX; nf],
        };
        for f in 0..nf {
            e.push(e.flows[f].0, Ev::Start(f as u32));
        }
        e
    }

    fn push(&mut self, t: Ps, ev: Ev) {
        self.heap.push(Reverse((t, self.evs.len() as u64)));
        self.evs.push(ev);
    }

    fn schedule_step(&mut self, now: Ps) {
        let s = now / D + 1;
        assert_eq!(self.scheduled, None, "one step pending at a time");
        self.scheduled = Some(s);
        self.push(s * D, Ev::Slice(s));
    }

    fn wake(&mut self, h: u32, t: Ps) {
        let w = &mut self.nic_wake[h as usize];
        if *w == 0 || *w > t {
            *w = t;
            self.push(t, Ev::Nic(h));
        }
    }

    fn kick(&mut self, h: u32, now: Ps) {
        if now < self.nic_free[h as usize] {
            self.wake(h, self.nic_free[h as usize]);
            return;
        }
        match self.lb.poll_send(h, now) {
            Poll::Send(p) => {
                self.log.push((now, p));
                self.nic_free[h as usize] = now + SER;
                let k = self.sent;
                self.sent += 1;
                self.push(now + SER + (self.queue_wait)(k), Ev::Head(p));
                if self.lb.has_committed(h) {
                    self.wake(h, now + SER);
                }
            }
            Poll::Wait(t) => self.wake(h, t),
            Poll::Idle => {}
        }
    }

    /// Peer of `tor` on `rotor` at `t`, None when the rotor is down or has no circuit.
    fn circuit(&self, tor: u32, rotor: u32, t: Ps) -> Option<u32> {
        let cur = t / D;
        let u = self.u as u64;
        if cur < rotor as u64 {
            return None;
        }
        let s = cur - (cur + u - rotor as u64) % u;
        if t >= s * D + self.hold {
            return None;
        }
        peer(self.n, s, tor)
    }

    fn run(&mut self, limit: Ps) {
        let hpr = self.lb.cfg.hosts_per_tor;
        let max = self.lb.cfg.max_pkts as usize;
        while let Some(Reverse((now, i))) = self.heap.pop() {
            assert!(now < limit, "did not finish: {:?}, held {:?}", self.lb.stats(), self.lb.held_bytes());
            match self.evs[i as usize] {
                Ev::Start(f) => {
                    let (_, src, dst, size) = self.flows[f as usize];
                    if self.lb.add_flow(f, src, dst, size) {
                        self.schedule_step(now);
                    }
                }
                Ev::Slice(s) => {
                    assert_eq!(self.scheduled, Some(s));
                    self.scheduled = None;
                    let r = (s % self.u as u64) as u32;
                    let n = self.n;
                    let kicks = self.lb.on_slice(now, r, |t| peer(n, s, t));
                    // caps: this step's commitments per sender and per receiver
                    let mut recv = vec![0usize; self.nic_free.len()];
                    for (h, hs) in self.lb.hosts.iter().enumerate() {
                        let q = &hs.commits[r as usize];
                        assert!(q.len() <= max, "host {h} committed {} > {max}", q.len());
                        assert_eq!(!q.is_empty(), kicks.contains(&(h as u32)));
                        for it in q {
                            assert_eq!(peer(n, s, h as u32 / hpr), Some(it.label / hpr));
                            recv[it.label as usize] += 1;
                        }
                    }
                    assert!(recv.iter().all(|&x| x <= max));
                    for h in kicks {
                        self.kick(h, now);
                    }
                    if self.lb.end_slice() {
                        self.schedule_step(now);
                    }
                }
                Ev::Nic(h) => {
                    if self.nic_wake[h as usize] == now {
                        self.nic_wake[h as usize] = 0;
                    }
                    self.kick(h, now);
                }
                Ev::Head(p) => {
                    let k = i; // any deterministic per-packet number
                    let ok = self.circuit(p.holder / hpr, p.rotor, now) == Some(p.want_tor);
                    if ok && !(self.force_return)(k) {
                        self.push(now + US, Ev::Arrive(p));
                    } else if self.lb.on_return(&p) {
                        self.schedule_step(now);
                    }
                }
                Ev::Arrive(p) => {
                    let (a, need) = self.lb.on_arrive(p.label, &p);
                    if need {
                        self.schedule_step(now);
                    }
                    match a {
                        Arrival::Delivered { flow, payload } => {
                            assert_eq!(p.label, p.fin);
                            let f = flow as usize;
                            self.delivered[f] += payload as u64;
                            assert!(self.delivered[f] <= self.flows[f].3);
                            if self.delivered[f] == self.flows[f].3 {
                                self.finish[f] = now;
                            }
                        }
                        Arrival::Relayed => {
                            assert!(!p.relayed, "relayed twice");
                            assert_ne!(p.label, p.fin);
                        }
                    }
                }
            }
            self.lb.check().unwrap();
        }
    }
}

fn random_flows(n_hosts: u32, hpr: u32, k: usize, seed: u64) -> Vec<(Ps, u32, u32, u64)> {
    let mut x = seed;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x >> 33
    };
    (0..k)
        .map(|_| {
            // inter-rack only (intra-rack flows are never committed: see `add_flow`)
            let src = (next() % n_hosts as u64) as u32;
            let tors = n_hosts / hpr;
            let drack = (src / hpr + 1 + (next() % (tors as u64 - 1)) as u32) % tors;
            let dst = drack * hpr + (next() % hpr as u64) as u32;
            (next() % (30 * D), src, dst, 1 + next() % (60 * MSS))
        })
        .collect()
}

fn run_random(seed: u64) -> Engine {
    let c = cfg(8, 4, 2);
    let mut e = Engine::new(c, random_flows(16, 2, 40, seed));
    e.run(200_000 * D);
    e
}

#[test]
fn engine_delivers_everything_in_at_most_two_hops_and_stops() {
    for seed in [1, 2, 3] {
        let e = run_random(seed);
        for (f, fl) in e.flows.iter().enumerate() {
            assert_eq!(e.delivered[f], fl.3, "flow {f}");
            assert!(e.finish[f] > fl.0);
        }
        let st = e.lb.stats();
        assert!(st.returns > 0 && st.relayed_pkts > 0, "{st:?}");
        assert_eq!(st.offered_bytes, e.flows.iter().map(|f| f.3).sum::<u64>());
        assert_eq!(st.delivered_bytes, st.offered_bytes);
        assert_eq!(e.lb.held_bytes(), (0, 0, 0));
        assert_eq!(e.lb.net_bytes(), 0);
        // the heap ran dry: no step pending once nothing is held
        assert!(!e.lb.pending() && e.scheduled.is_none());
        assert!(e.log.iter().all(|(_, p)| !p.relayed || p.label == p.fin));
        assert!(e.lb.hosts.iter().all(|h| !h.active));
    }
}

#[test]
fn same_inputs_same_packets() {
    let a = run_random(7);
    let b = run_random(7);
    assert!(!a.log.is_empty());
    assert_eq!(a.log, b.log);
    assert_eq!(a.finish, b.finish);
    assert_eq!(a.lb.stats(), b.lb.stats());
    let c = run_random(8);
    assert_ne!(a.log, c.log);
}
