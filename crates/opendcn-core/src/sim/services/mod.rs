//! OpenOptics infrastructure services: push-back, admission control, EQO and offloading,
//! holding unrouted packets. (Control messages are in `messages`, shared buffers in `buffer`.)

mod admission;
mod eqo_offload;
mod hold;
mod pushback;

pub(in crate::sim) use hold::Hold;
pub(in crate::sim) use pushback::PushBack;
