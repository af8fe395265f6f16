//! The network: ports, calendar queues, served ports and credit, and one packet-hop.

mod calendar;
mod credit;
mod hop;
pub(in crate::sim) mod port;
mod served;
