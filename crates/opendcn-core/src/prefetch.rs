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

/// Prefetch every cache line of `v` into the second-level cache (one hint per 64
/// bytes; bulk prefetches into L2 do not hold up the few L1 miss buffers).
#[inline]
pub fn all<T>(v: &[T]) {
    let bytes = std::mem::size_of_val(v);
    let p = v.as_ptr() as *const i8;
    let mut o = 0;
    while o < bytes {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint; p + o stays inside v
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
            _mm_prefetch(p.add(o), _MM_HINT_T1);
        }
        o += 64;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
