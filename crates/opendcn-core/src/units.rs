//! Units: time is an integer number of picoseconds, rates are bits per second, sizes bytes.

/// Simulated time in picoseconds.
pub type Ps = u64;

/// Marker for "no value" in `u32` id fields (no port, no peer, wildcard slice).
pub const NONE: u32 = u32::MAX;

/// Picoseconds per second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Serialization time of `bytes` at `rate_bps`, rounded up to a whole picosecond.
#[inline]
pub fn tx_time_ps(bytes: u64, rate_bps: u64) -> Ps {
    let num = bytes as u128 * 8 * PS_PER_S as u128;
    num.div_ceil(rate_bps as u128) as Ps
}

/// A link rate with a fast path for serialization times: when 8·10¹² is a multiple of
/// the rate (every rate in whole Gb/s dividing 8000, e.g. 10, 25, 50, 100, 200, 400 Gb/s),
/// a byte takes a whole number of picoseconds and no division is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub bps: u64,
    ps_per_byte: u64,
}

impl Rate {
    pub fn new(bps: u64) -> Self {
        let num = 8 * PS_PER_S;
        let ps_per_byte = if bps > 0 && num.is_multiple_of(bps) { num / bps } else { 0 };
        Rate { bps, ps_per_byte }
    }

    /// Serialization time of `bytes` (exactly `tx_time_ps(bytes, bps)`).
    #[inline]
    pub fn tx(self, bytes: u64) -> Ps {
        if self.ps_per_byte != 0 { bytes * self.ps_per_byte } else { tx_time_ps(bytes, self.bps) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_times() {
        assert_eq!(tx_time_ps(1500, 400_000_000_000), 30_000); // 1500 B at 400 Gb/s = 30 ns
        assert_eq!(tx_time_ps(1500, 100_000_000_000), 120_000);
        assert_eq!(tx_time_ps(256, 50_000_000_000), 40_960); // Shale cell: 40.96 ns
        assert_eq!(tx_time_ps(1, 3), 2_666_666_666_667); // rounds up
        for bps in [3u64, 10_000_000_000, 100_000_000_000, 400_000_000_000, 33_000_000_000, 1] {
            for b in [0u64, 1, 64, 1500, 9000] {
                assert_eq!(Rate::new(bps).tx(b), tx_time_ps(b, bps));
            }
        }
    }
}
