//! A switch buffer shared by the switch's ports, as merchant switch chips have it (a
//! Tofino2 has one 64 MB pool), with the dynamic-threshold admission of Choudhury and
//! Hahne ("Dynamic queue length thresholds for shared-memory packet switches", IEEE/ACM
//! ToN 6(2), 1998).
//!
//! The rule, exactly: a switch has a pool of `B` bytes of which `Q` are in use by the
//! packets queued at its ports (every queue of every port, and the packets it holds
//! without a route). A packet of `w` wire bytes joins queue `i`, which holds `q_i` bytes,
//! only if
//!
//! - `q_i + w <= floor(alpha_c * (B - Q))` (the dynamic threshold of the queue's class
//!   `c`: a queue may grow to `alpha` times the free part of the pool), and
//! - `Q + w <= B` (the pool has room), and
//! - the port's own static limits hold (its per-port buffer and, on a port with priority
//!   classes, the class's cap: a design's explicit queue limit, such as Opera's 8 data
//!   packets, stays a limit).
//!
//! A queue is an egress port's queue (the sum of its calendar queues: opendcn's calendar
//! queues share their port's count), or on a port with priority classes each class's
//! queue. With one congested queue the threshold settles where `q = alpha (B - q)`, at
//! `alpha B / (1 + alpha)`: with `alpha = 1`, half the pool, far more than an even split.
//!
//! The engine keeps the per-port counts; this component owns the pool sizes, the alphas
//! and the static limits, and turns the counts into the caps the ports' admission tests
//! read ([`SharedBuffers::caps`]), so every admission site of the engine applies the same
//! rule without knowing about the pool.

use smallvec::SmallVec;

use crate::error::SpecError;

/// The shared pools of a run (empty when no switch shares its buffer).
#[derive(Debug, Clone, Default)]
pub struct SharedBuffers {
    /// Per node: its pool in bytes (0: the node's ports keep static per-port buffers).
    pool: Vec<u64>,
    /// Per priority class (class 0 first; the last value covers the classes beyond).
    alpha: Vec<f64>,
    /// Per port of a pooled node: its static byte cap and class caps, as configured.
    port_cap: Vec<u64>,
    class_cap: Vec<SmallVec<[u64; 4]>>,
    /// Largest occupancy of one node's pool seen at an admission test, and where.
    pub peak_bytes: u64,
    pub peak_node: u32,
}

/// What [`SharedBuffers::caps`] computes for one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    pub port: u64,
    pub classes: SmallVec<[u64; 4]>,
}

impl SharedBuffers {
    /// Pools per node (empty or all zero: none) and alphas per class (empty: 1.0).
    /// `port_cap` / `class_cap` are every port's static limits (class caps empty for a
    /// port without classes).
    pub fn new(pool: Vec<u64>, alpha: Vec<f64>, port_cap: Vec<u64>, class_cap: Vec<SmallVec<[u64; 4]>>)
        -> Result<Self, SpecError> {
        if let Some(a) = alpha.iter().find(|a| !(a.is_finite() && **a > 0.0)) {
            return Err(SpecError::new("buffer_alpha", a, "expected a positive number"));
        }
        if alpha.len() > 8 {
            return Err(SpecError::new("buffer_alpha", alpha.len(), "at most one alpha per priority class (8)"));
        }
        let alpha = if alpha.is_empty() { vec![1.0] } else { alpha };
        Ok(SharedBuffers { pool, alpha, port_cap, class_cap, peak_bytes: 0, peak_node: 0 })
    }

    /// True when some node shares its buffer.
    pub fn on(&self) -> bool {
        self.pool.iter().any(|&b| b > 0)
    }

    /// The pool of `node` (0: none).
    #[inline]
    pub fn pool(&self, node: u32) -> u64 {
        self.pool.get(node as usize).copied().unwrap_or(0)
    }

    /// The alpha of priority class `c`.
    pub fn alpha(&self, c: usize) -> f64 {
        self.alpha[c.min(self.alpha.len() - 1)]
    }

    /// The dynamic threshold for `free` bytes of free pool and `alpha`.
    #[inline]
    pub fn threshold(alpha: f64, free: u64) -> u64 {
        (alpha * free as f64).floor() as u64
    }

    /// The caps of global port `gp` of a node whose pool has `used` bytes in use, the port
    /// holding `bytes` (and `class_bytes` per class): a packet of `w` bytes is admitted to
    /// class `c` exactly when `bytes + w <= caps.port` and `class_bytes[c] + w <=
    /// caps.classes[c]` (a port without classes has no class caps; its port cap carries
    /// the threshold). Records the peak occupancy.
    pub fn caps(&mut self, node: u32, gp: u32, used: u64, bytes: u64, class_bytes: &[u64]) -> Caps {
        let b = self.pool(node);
        if used > self.peak_bytes {
            self.peak_bytes = used;
            self.peak_node = node;
        }
        let free = b.saturating_sub(used);
        let g = gp as usize;
        let stat = self.port_cap[g];
        let port_room = bytes.saturating_add(free).min(stat);
        if class_bytes.len() <= 1 {
            let port = port_room.min(Self::threshold(self.alpha(0), free));
            let classes = self.class_cap[g].iter().map(|&cc| cc.min(port)).collect();
            return Caps { port, classes };
        }
        let classes = class_bytes.iter().enumerate().map(|(c, &q)| {
            let st = self.class_cap[g].get(c).copied().unwrap_or(u64::MAX);
            st.min(q.saturating_add(free)).min(Self::threshold(self.alpha(c), free))
        }).collect();
        Caps { port: port_room, classes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    fn admit(sb: &mut SharedBuffers, used: u64, q: u64, w: u64) -> bool {
        let c = sb.caps(0, 0, used, q, &[]);
        q + w <= c.port
    }

    /// The oracle: q + w <= floor(alpha (B - Q)), Q + w <= B, q + w <= static cap.
    fn oracle(b: u64, alpha: f64, stat: u64, used: u64, q: u64, w: u64) -> bool {
        let free = b.saturating_sub(used);
        q + w <= (alpha * free as f64).floor() as u64 && used + w <= b && q + w <= stat
    }

    #[test]
    fn admission_matches_the_dynamic_threshold_rule() {
        for &alpha in &[0.25, 0.5, 1.0, 2.0, 8.0] {
            for &stat in &[u64::MAX, 30_000] {
                let mut sb = SharedBuffers::new(vec![100_000], vec![alpha], vec![stat], vec![smallvec![]]).unwrap();
                for used in (0..=100_000).step_by(2_500) {
                    for q in (0..=used).step_by(1_500) {
                        for w in [64, 1_500, 9_000] {
                            assert_eq!(admit(&mut sb, used, q, w), oracle(100_000, alpha, stat, used, q, w),
                                "alpha {alpha} stat {stat} used {used} q {q} w {w}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn one_congested_queue_settles_at_alpha_over_one_plus_alpha() {
        // fill one queue packet by packet while it is admitted: it stops near alpha B / (1 + alpha)
        for &alpha in &[0.5, 1.0, 2.0] {
            let b = 1_000_000u64;
            let mut sb = SharedBuffers::new(vec![b], vec![alpha], vec![u64::MAX], vec![smallvec![]]).unwrap();
            let mut q = 0;
            while admit(&mut sb, q, q, 1_000) {
                q += 1_000;
            }
            let settle = alpha * b as f64 / (1.0 + alpha);
            assert!((q as f64 - settle).abs() <= 1_000.0 * (1.0 + alpha), "alpha {alpha}: {q} vs {settle}");
            assert_eq!(sb.peak_bytes, q);
        }
    }

    #[test]
    fn classes_get_their_own_threshold_and_keep_their_static_caps() {
        let mut sb = SharedBuffers::new(vec![100_000], vec![2.0, 0.5], vec![u64::MAX],
                                        vec![smallvec![12_000, u64::MAX]]).unwrap();
        let c = sb.caps(0, 0, 40_000, 30_000, &[10_000, 20_000]);
        // free 60 000: class 0 min(12 000 static, 2 x 60 000); class 1 min(0.5 x 60 000, 20 000 + 60 000)
        assert_eq!(c.classes.as_slice(), &[12_000, 30_000]);
        assert_eq!(c.port, 30_000 + 60_000);
        assert!(SharedBuffers::new(vec![1], vec![0.0], vec![1], vec![smallvec![]]).is_err());
        assert!(SharedBuffers::new(vec![1], vec![f64::NAN], vec![1], vec![smallvec![]]).is_err());
    }
}
