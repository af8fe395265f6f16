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
