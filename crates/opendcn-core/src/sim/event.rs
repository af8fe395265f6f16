//! The engine's event kinds and their codes in the trace hash.


#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum Ev {
    /// A packet reaches the far end of a link (packet id, plan epoch).
    Arrive(u32, u16),
    HostArrive(u32),
    Inject(u32),
    NextFlows,
    Sample,
    Reconfig(u32),
    /// A push-back message reaches a source node (index into the pending messages).
    PushBack(u32),
    /// An offloaded packet leaves its host for the ToR (buffer offloading).
    OffloadSend(u32),
    /// An offloaded packet reaches its ToR again.
    OffloadReturn(u32, u16),
    /// A served port has finished a transmission.
    PortFree(u32),
    /// A flow's transport timer (lazy: stale unless it matches the flow's armed time).
    Timer(u32),
    /// An NDP pull pacer (of a receiving endpoint, or of a flow) may release a pull.
    Pacer(u32),
    /// Credit returns to a port (the oldest of its pending returns).
    Credit(u32),
    /// The deadlock watchdog of a credit-based network.
    Watchdog,
    /// RotorLB's offer/accept step (a rotor has just taken a new matching).
    Rlb,
    /// Held packets (no route yet) are tried again (after new tables, or when a port
    /// that a released packet needs has room again).
    Release,
    /// A flow whose dependencies have finished starts.
    Start(u32),
}

/// Names of the event kinds, in the order of `SimOutput::event_counts`.
pub const EVENT_KINDS: [&str; 17] = ["arrive", "host_arrive", "inject", "next_flows", "sample", "reconfig", "pushback",
                                   "offload_send", "offload_return", "port_free", "timer", "pacer", "credit", "watchdog", "rlb", "release",
                                   "flow_start"];

impl Ev {
    pub(in crate::sim) fn kind(self) -> usize {
        match self {
            Ev::Arrive(..) => 0,
            Ev::HostArrive(_) => 1,
            Ev::Inject(_) => 2,
            Ev::NextFlows => 3,
            Ev::Sample => 4,
            Ev::Reconfig(_) => 5,
            Ev::PushBack(_) => 6,
            Ev::OffloadSend(_) => 7,
            Ev::OffloadReturn(..) => 8,
            Ev::PortFree(_) => 9,
            Ev::Timer(_) => 10,
            Ev::Pacer(_) => 11,
            Ev::Credit(_) => 12,
            Ev::Watchdog => 13,
            Ev::Rlb => 14,
            Ev::Release => 15,
            Ev::Start(_) => 16,
        }
    }

    pub(in crate::sim) fn code(self) -> u64 {
        let id = match self {
            Ev::Arrive(x, e) | Ev::OffloadReturn(x, e) => x as u64 | (e as u64) << 40,
            Ev::HostArrive(x) | Ev::Inject(x) | Ev::Reconfig(x) | Ev::PushBack(x) | Ev::OffloadSend(x)
            | Ev::PortFree(x) | Ev::Timer(x) | Ev::Pacer(x) | Ev::Credit(x) | Ev::Start(x) => x as u64,
            Ev::NextFlows | Ev::Sample | Ev::Watchdog | Ev::Rlb | Ev::Release => 0,
        };
        id ^ (self.kind() as u64) << 32
    }
}
