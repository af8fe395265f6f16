//! The network: ports, calendar queues, served ports and credit, and one packet-hop.

mod calendar;
mod credit;
mod hop;
pub(in crate::sim) mod port;
mod served;

pub(in crate::sim) use credit::Credit;

use crate::sim::*;

/// Ports, calendar queues and the switch buffers.
pub(in crate::sim) struct Net {
    pub(in crate::sim) port_node: Vec<u32>,
    pub(in crate::sim) port_offset: Vec<u32>,
    pub(in crate::sim) optical: Vec<bool>,
    pub(in crate::sim) ports: Vec<Port>,
    /// The ports' calendar queues (see `Port::cal`).
    pub(in crate::sim) cal: Vec<CalQ>,
    /// Per receiving port: the absolute slice and the sender of the last packet it
    /// received (the collision check).
    pub(in crate::sim) rx_last: Vec<(u32, u32)>,
    pub(in crate::sim) mtu: u32,
    pub(in crate::sim) header: u32,
    /// Per port: its link class (index into `LINK_CLASSES`).
    pub(in crate::sim) port_class: Vec<u8>,
    /// Switch buffers shared by their ports (dynamic thresholds); `shared_on` when any.
    pub(in crate::sim) shared: buffer::SharedBuffers,
    pub(in crate::sim) shared_on: bool,
}
