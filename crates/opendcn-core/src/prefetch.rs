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

/// Prefetch every cache line of `v` (one hint per 64 bytes).
#[inline]
pub fn all<T>(v: &[T]) {
    let bytes = std::mem::size_of_val(v);
    let p = v.as_ptr() as *const u8;
    let mut o = 0;
    while o < bytes {
        // SAFETY: p + o stays inside v
        read(unsafe { &*p.add(o) });
        o += 64;
    }
}
