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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_times() {
        assert_eq!(tx_time_ps(1500, 400_000_000_000), 30_000); // 1500 B at 400 Gb/s = 30 ns
        assert_eq!(tx_time_ps(1500, 100_000_000_000), 120_000);
        assert_eq!(tx_time_ps(256, 50_000_000_000), 40_960); // Shale cell: 40.96 ns
        assert_eq!(tx_time_ps(1, 3), 2_666_666_666_667); // rounds up
    }
}
