//! Faults: runtime reconfiguration and link or node failures.

mod failures;
mod reconfig;
