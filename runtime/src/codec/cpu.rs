//! What the CPU offers beyond baseline x86-64, for the two loops that use
//! it (the checksum and the mask clear).

/// With std, its run-time detection of `$feature` (run once, then
/// cached); without, whether the build was compiled for it.
#[cfg(target_arch = "x86_64")]
macro_rules! has {
    ($feature:tt) => {{
        #[cfg(feature = "std")]
        let yes = std::is_x86_feature_detected!($feature);
        #[cfg(not(feature = "std"))]
        let yes = cfg!(target_feature = $feature);
        yes
    }};
}

/// Whether the CPU has SSE 4.2 (the CRC-32C instruction).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn sse42() -> bool {
    has!("sse4.2")
}

/// Whether the CPU has AVX2 (32-byte integer stores).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn avx2() -> bool {
    has!("avx2")
}
