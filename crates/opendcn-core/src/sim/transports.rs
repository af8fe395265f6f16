//! Glue between the engine and the sans-IO transports (TCP/DCTCP, NDP): a flow's
//! connection, what a receiver does with an arriving packet, ACK/NACK/PULL replies, pull
//! pacers and retransmission timers.

use crate::sim::*;

/// Transport connections, pull pacers and their parameters.
pub(in crate::sim) struct TransportGlue {
    pub(in crate::sim) params: TransportParams,
    pub(in crate::sim) conns: Vec<Option<Conn>>,
    pub(in crate::sim) conn_free: Vec<u32>,
    /// (flow, segment) pairs whose first data copy is dropped at its first arrival.
    pub(in crate::sim) loss: std::collections::BTreeSet<(u32, u32)>,
    /// PIAS thresholds in bytes sent (empty: off).
    pub(in crate::sim) pias: Vec<u64>,
    /// NDP pull pacers by key (receiving endpoint, or flow) and their pending event times.
    pub(in crate::sim) pacers: Vec<Option<PullPacer>>,
    pub(in crate::sim) pacer_at: Vec<Ps>,
    /// Per flow: its application's rate in bit/s (0 or empty: none; TCP flows only).
    pub(in crate::sim) app_rate: Vec<u64>,
}

/// Sender and receiver state of one flow with an end-to-end transport.
pub(in crate::sim) enum Conn {
    Tcp(TcpSender, TcpReceiver),
    Ndp(NdpSender, NdpReceiver),
}

impl Conn {
    pub(in crate::sim) fn can_send(&self) -> bool {
        match self {
            Conn::Tcp(s, _) => s.can_send(),
            Conn::Ndp(s, _) => s.can_send(),
        }
    }
    pub(in crate::sim) fn poll_send(&mut self, now: Ps) -> Option<Send> {
        match self {
            Conn::Tcp(s, _) => s.poll_send(now),
            Conn::Ndp(s, _) => s.poll_send(now),
        }
    }
    pub(in crate::sim) fn timer(&self) -> Option<Ps> {
        match self {
            Conn::Tcp(s, _) => s.timer(),
            Conn::Ndp(s, _) => s.timer(),
        }
    }
    pub(in crate::sim) fn on_timer(&mut self, now: Ps) {
        match self {
            Conn::Tcp(s, _) => s.on_timer(now),
            Conn::Ndp(s, _) => s.on_timer(now),
        }
    }
    pub(in crate::sim) fn sender_done(&self) -> bool {
        match self {
            Conn::Tcp(s, _) => s.done(),
            Conn::Ndp(s, _) => s.done(),
        }
    }
    pub(in crate::sim) fn stats(&self) -> crate::transport::SenderStats {
        match self {
            Conn::Tcp(s, _) => s.stats(),
            Conn::Ndp(s, _) => s.stats(),
        }
    }
    /// Payload bytes the receiver has not received yet, counted from its bits.
    pub(in crate::sim) fn missing_bytes(&self, size: u64, mss: u32) -> u64 {
        let set = match self {
            Conn::Tcp(_, r) => r.received(),
            Conn::Ndp(_, r) => r.received(),
        };
        let n = crate::transport::segments(size, mss);
        (0..n).filter(|&q| !set.contains(q)).map(|q| crate::transport::seg_len(size, mss, q) as u64).sum()
    }
}

impl Sim {
    /// Create the transport state of flow `f` and let its source send.
    pub(in crate::sim) fn open_conn(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        let t = &self.tg.params;
        let mss = self.net.mtu;
        let conn = match fl.tp {
            TransportKind::Tcp | TransportKind::Dctcp => {
                let cfg = TcpConfig {
                    mss,
                    init_cwnd: t.tcp_init_cwnd,
                    init_ssthresh: t.tcp_init_ssthresh,
                    dupack: t.tcp_dupack,
                    min_rto: t.tcp_min_rto_ps,
                    init_rto: t.tcp_init_rto_ps,
                    max_rto: t.tcp_max_rto_ps,
                    dctcp: fl.tp == TransportKind::Dctcp,
                    dctcp_g: t.dctcp_g,
                };
                let s = TcpSender::new(cfg, fl.size);
                let s = match self.tg.app_rate.get(f as usize) {
                    Some(&r) if r > 0 => s.with_app_rate(self.clock.now, r),
                    _ => s,
                };
                Conn::Tcp(s, TcpReceiver::new(fl.size, mss))
            }
            TransportKind::Ndp => {
                let cfg = NdpConfig { mss, init_window: t.ndp_init_window, rto: t.ndp_rto_ps };
                Conn::Ndp(NdpSender::new(cfg, fl.size), NdpReceiver::new(fl.size, mss))
            }
            TransportKind::Ideal | TransportKind::Credit | TransportKind::RotorLb => unreachable!("ideal, credit and bulk flows have no connection state"),
        };
        let id = match self.tg.conn_free.pop() {
            Some(id) => {
                self.tg.conns[id as usize] = Some(conn);
                id
            }
            None => {
                self.tg.conns.push(Some(conn));
                (self.tg.conns.len() - 1) as u32
            }
        };
        let fm = &mut self.flows[f as usize];
        fm.conn = id;
        fm.inq = true;
        // an application-rated flow waits for its first segment to be written (otherwise
        // nothing is outstanding yet and no timer is due)
        self.sync_timer(f);
        self.eps[fl.src as usize].tready.push_back(f);
        self.kick(fl.src);
    }

    /// A packet of a transport flow reached its endpoint.
    pub(in crate::sim) fn transport_arrive(&mut self, pid: u32) {
        let p = self.pool.pkt[pid as usize];
        let px = self.pool.x[pid as usize];
        let f = p.flow;
        let fl = self.flows[f as usize];
        let now = self.clock.now;
        if p.kind == K_DATA {
            // at the receiver
            let Some(conn) = self.tg.conns.get_mut(fl.conn as usize).and_then(|c| c.as_mut()) else {
                // the sender has finished: a late copy
                self.exit(pid, if p.trimmed { Exit::Header } else { Exit::Delivered { new: 0, dup: px.payload as u64 } });
                return;
            };
            if p.trimmed {
                if let Conn::Ndp(_, r) = conn {
                    r.on_header(px.seq);
                }
                self.exit(pid, Exit::Header);
                self.reply(f, K_NACK, px.seq, false, 0);
                self.request_pull(f);
                return;
            }
            let expected = match conn {
                Conn::Tcp(_, r) => r.received().cum,
                Conn::Ndp(_, r) => r.received().cum,
            };
            let (new, ack) = match conn {
                Conn::Tcp(_, r) => {
                    let (a, new) = r.on_data(px.seq, p.ce, px.ts);
                    (new, (a.cum, a.ece, a.ts_echo))
                }
                Conn::Ndp(_, r) => (r.on_data(px.seq), (px.seq, false, px.ts)),
            };
            let complete = match conn {
                Conn::Tcp(_, r) => r.complete(),
                Conn::Ndp(_, r) => r.complete(),
            };
            let d = px.seq as i64 - expected as i64;
            self.acct.reordered(d);
            self.acct.latency.add(now - px.ts);
            let how = if new {
                let new = self.count_delivery(pid);
                if complete {
                    self.flow_finished(f);
                }
                Exit::Delivered { new, dup: 0 }
            } else {
                Exit::Delivered { new: 0, dup: px.payload as u64 }
            };
            self.exit(pid, how);
            self.reply(f, K_ACK, ack.0, ack.1, ack.2);
            if fl.tp == TransportKind::Ndp && !complete {
                self.request_pull(f);
            }
            return;
        }
        // control at the sender (a NACK that is a trimmed header came back: a bounce)
        self.exit(pid, if p.trimmed { Exit::Header } else { Exit::Control });
        let Some(conn) = self.tg.conns.get_mut(fl.conn as usize).and_then(|c| c.as_mut()) else { return };
        match conn {
            Conn::Tcp(s, _) => {
                if p.kind == K_ACK {
                    s.on_ack(now, TcpAck { cum: px.seq, ece: p.ce, ts_echo: px.ts });
                }
            }
            Conn::Ndp(s, _) => match p.kind {
                K_ACK => s.on_ack(now, px.seq),
                K_NACK if p.trimmed => s.on_bounce(now, px.seq),
                K_NACK => s.on_nack(now, px.seq),
                K_PULL => s.on_pull(now, px.seq),
                _ => {}
            },
        }
        self.after_sender_event(f);
    }

    /// Payload of a data packet delivered for the first time (flow, metrics); returns its
    /// payload bytes, which the packet's [`Sim::exit`] books.
    pub(in crate::sim) fn count_delivery(&mut self, pid: u32) -> u64 {
        let p = self.pool.pkt[pid as usize];
        let px = self.pool.x[pid as usize];
        let fl = &mut self.flows[p.flow as usize];
        fl.delivered += px.payload as u64;
        fl.max_hops = fl.max_hops.max(p.hops);
        self.acct.delivered(px.payload as u64, p.hops, p.classes, p.kind == K_BULK);
        px.payload as u64
    }

    /// The receiver of flow `f` sends a control packet back to its sender.
    pub(in crate::sim) fn reply(&mut self, f: u32, kind: u8, seq: u32, ce: bool, ts: Ps) {
        let fl = self.flows[f as usize];
        let c = self.new_packet(fl.dst, f, fl.src, kind, 0, seq);
        self.pool.pkt[c as usize].ce = ce;
        self.pool.x[c as usize].ts = ts;
        self.acct.ledger.send(false, true);
        self.eps[fl.dst as usize].ctrl.push_back(c);
        self.kick(fl.dst);
    }

    /// NDP: the receiver of flow `f` owes its sender one pull, released by its pacer (one
    /// per receiving endpoint, or one per flow with `ndp_pacer_per_flow`), which lets one
    /// pull go per full-packet time at the receiver's link rate × `ndp_pull_rate`.
    pub(in crate::sim) fn request_pull(&mut self, f: u32) {
        let e = self.flows[f as usize].dst;
        let key = if self.tg.params.ndp_pacer_per_flow { f } else { e };
        let full = self.eps[e as usize].rate.tx(self.net.mtu as u64 + self.net.header as u64);
        let interval = ((full as f64 / self.tg.params.ndp_pull_rate).round() as Ps).max(1);
        if self.tg.pacers.len() <= key as usize {
            self.tg.pacers.resize_with(key as usize + 1, || None);
            self.tg.pacer_at.resize(key as usize + 1, Ps::MAX);
        }
        self.tg.pacers[key as usize].get_or_insert_with(|| PullPacer::new(interval)).request(f);
        self.schedule_pacer(key);
    }

    pub(in crate::sim) fn schedule_pacer(&mut self, key: u32) {
        let now = self.clock.now;
        let Some(t) = self.tg.pacers[key as usize].as_ref().and_then(|p| p.next_time()) else { return };
        let t = t.max(now);
        let at = &mut self.tg.pacer_at[key as usize];
        if *at == Ps::MAX || t < *at {
            *at = t;
            self.push(t, Ev::Pacer(key));
        }
    }

    pub(in crate::sim) fn on_pacer(&mut self, key: u32) {
        let now = self.clock.now;
        if self.tg.pacer_at[key as usize] != now {
            return; // superseded
        }
        self.tg.pacer_at[key as usize] = Ps::MAX;
        let pick = self.tg.pacers[key as usize].as_mut().and_then(|p| p.poll(now));
        if let Some(f) = pick {
            let conn = self.flows[f as usize].conn;
            if let Some(Some(Conn::Ndp(_, r))) = self.tg.conns.get_mut(conn as usize) {
                if !r.complete() {
                    let n = r.next_pull();
                    self.reply(f, K_PULL, n, false, 0);
                }
            }
        }
        self.schedule_pacer(key);
    }

    /// Keep one timer event for flow `f` no later than its transport's deadline.
    pub(in crate::sim) fn sync_timer(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        let Some(d) = self.tg.conns.get(fl.conn as usize).and_then(|c| c.as_ref()).and_then(|c| c.timer()) else { return };
        if fl.timer_at == Ps::MAX || d < fl.timer_at {
            let t = d.max(self.clock.now);
            self.flows[f as usize].timer_at = t;
            self.push(t, Ev::Timer(f));
        }
    }

    pub(in crate::sim) fn on_timer(&mut self, f: u32) {
        let now = self.clock.now;
        if self.flows[f as usize].timer_at != now {
            return; // superseded
        }
        self.flows[f as usize].timer_at = Ps::MAX;
        let conn = self.flows[f as usize].conn;
        if let Some(Some(c)) = self.tg.conns.get_mut(conn as usize) {
            c.on_timer(now);
            self.after_sender_event(f);
        }
    }

    /// After the sender of flow `f` reacted to something: free it when done, else keep
    /// its timer and let it send if its window opened.
    pub(in crate::sim) fn after_sender_event(&mut self, f: u32) {
        let fl = self.flows[f as usize];
        let Some(c) = self.tg.conns.get(fl.conn as usize).and_then(|c| c.as_ref()) else { return };
        if c.sender_done() {
            let st = c.stats();
            let fm = &mut self.flows[f as usize];
            fm.retx = st.retransmits;
            fm.timeouts = st.timeouts;
            fm.acked_at = self.clock.now;
            fm.conn = NONE;
            fm.timer_at = Ps::MAX;
            self.tg.conns[fl.conn as usize] = None;
            self.tg.conn_free.push(fl.conn);
            if fl.tp == TransportKind::Ndp {
                let key = if self.tg.params.ndp_pacer_per_flow { f } else { fl.dst };
                if let Some(Some(p)) = self.tg.pacers.get_mut(key as usize) {
                    p.forget(f);
                }
            }
            return;
        }
        let can = c.can_send();
        self.sync_timer(f);
        if can && !fl.inq {
            self.flows[f as usize].inq = true;
            self.eps[fl.src as usize].tready.push_back(f);
            self.kick(fl.src);
        }
    }

    // ---------------------------------------------------------------- monitoring, control
}
