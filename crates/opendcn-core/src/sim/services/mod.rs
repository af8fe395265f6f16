//! OpenOptics infrastructure services: push-back, admission control, EQO and offloading,
//! holding unrouted packets. (Control messages are in `messages`, shared buffers in `buffer`.)

mod admission;
mod eqo_offload;
mod hold;
mod pushback;
