//! Software prefetch hints for the engines' memory-bound loops (a no-op off x86-64).

/// Ask the CPU to bring the cache line holding `*p` into all cache levels.
#[inline(always)]
pub fn read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults and has no observable effect.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(p as *const T as *const i8, _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetch element `i` of `v` if it exists.
#[inline(always)]
pub fn at<T>(v: &[T], i: usize) {
    if let Some(x) = v.get(i) {
        read(x);
    }
}

/// Prefetches into the second-level cache issued a few lines at a time: a loop that
/// has the next piece of work's memory in view queues its regions, then calls
/// [`Spread::step`] as it goes. Issued all at once, a few hundred hints fill the core's
/// miss buffers and stall it; spread over the work they overlap with it.
#[derive(Default)]
pub struct Spread {
    /// (first byte, end) of each region still to hint, and the next line to hint.
    regions: Vec<(usize, usize)>,
    cur: usize,
    addr: usize,
}

impl Spread {
    /// Forget every queued region.
    pub fn clear(&mut self) {
        self.regions.clear();
        self.cur = 0;
        self.addr = 0;
    }

    /// Queue every cache line of `v`.
    pub fn add<T>(&mut self, v: &[T]) {
        let bytes = std::mem::size_of_val(v);
        if bytes > 0 {
            let a = v.as_ptr() as usize;
            self.regions.push((a, a + bytes));
        }
    }

    /// Hint up to `k` more lines.
    #[inline]
    pub fn step(&mut self, mut k: usize) {
        while k > 0 && self.cur < self.regions.len() {
            let (a, e) = self.regions[self.cur];
            if self.addr == 0 {
                // the region's first line
                self.addr = a & !63;
            }
            if self.addr >= e {
                self.cur += 1;
                self.addr = 0;
                continue;
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is a hint; it never faults, whatever the address.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
                _mm_prefetch(self.addr as *const i8, _MM_HINT_T1);
            }
            self.addr += 64;
            k -= 1;
        }
    }

    /// Hint every line still queued.
    pub fn finish(&mut self) {
        self.step(usize::MAX);
    }
}
