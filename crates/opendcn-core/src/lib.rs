//! opendcn engine: a deterministic packet-level simulator for optical and reconfigurable
//! datacenter networks. No Python in here: the bindings crate converts a [`spec::SimSpec`]
//! from Python and calls [`sim::Sim`].
//!
//! Layers, bottom up: [`units`] (integer picoseconds, bit rates) · [`rng`] (named streams)
//! · [`schedule`] (the only owner of slice arithmetic) · [`timeflow`] (time-flow tables and
//! built-in routers) · [`spec`] (validated plain-data input) · [`sim`] (events, ports with
//! calendar queues, links, endpoints, metrics and invariants).

pub mod departures;
pub mod earliest;
pub mod error;
#[cfg(feature = "kernels")]
pub mod event;
#[cfg(not(feature = "kernels"))]
pub(crate) mod event;
pub mod expander;
pub mod flatmap;
pub mod ledger;
pub mod maxmin;
pub mod packedmap;
pub mod metrics;
#[cfg(feature = "kernels")]
pub mod prefetch;
#[cfg(not(feature = "kernels"))]
pub(crate) mod prefetch;
#[cfg(feature = "kernels")]
pub mod rng;
#[cfg(not(feature = "kernels"))]
pub(crate) mod rng;
pub mod rotors;
pub mod schedule;
pub mod services;
pub mod sim;
pub mod slotted;
pub mod spec;
pub mod timeflow;
pub mod trace;
pub mod transport;
pub mod units;

pub use error::SpecError;
pub use sim::{Sim, SimOutput};
pub use spec::SimSpec;
