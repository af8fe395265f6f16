//! Named random streams from one master seed (as ns-3's RngSeedManager): each consumer
//! draws from its own stream, so adding a draw in one place never changes another's.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// FNV-1a of a stream name.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64 finalizer: a well-mixed 64-bit hash.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A deterministic random stream.
pub struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// The stream `name` of master seed `seed`.
    pub fn new(seed: u64, name: &str) -> Self {
        Stream(Xoshiro256PlusPlus::seed_from_u64(mix64(seed) ^ fnv1a(name)))
    }

    /// A uniform integer in `0..n` (`n > 0`), by Lemire's multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.0.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    /// A raw 64-bit draw.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_independent_and_reproducible() {
        let a: Vec<u32> = (0..8).map({ let mut s = Stream::new(1, "routing"); move |_| s.below(1000) }).collect();
        let b: Vec<u32> = (0..8).map({ let mut s = Stream::new(1, "routing"); move |_| s.below(1000) }).collect();
        let c: Vec<u32> = (0..8).map({ let mut s = Stream::new(1, "traffic"); move |_| s.below(1000) }).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut s = Stream::new(7, "x");
        assert!((0..10_000).all(|_| s.below(3) < 3));
    }
}
