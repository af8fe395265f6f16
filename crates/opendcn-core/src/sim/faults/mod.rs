//! Faults: runtime reconfiguration and link or node failures.

mod failures;
mod reconfig;

pub(in crate::sim) use failures::Failures;
pub(in crate::sim) use reconfig::Reconfigs;
