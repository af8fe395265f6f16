//! Slotted optical fabrics simulated cell by cell, slot by slot over the active set:
//! designs whose endpoints exchange fixed-size cells in fixed timeslots (NegotiaToR's
//! epochs over AWGRs, Sirius' cyclic round robin). Shares units, random streams and
//! errors with the packet engine; flows come from the same workload generators.

pub mod common;
pub mod negotiator;
pub mod sirius;
pub mod shale;
