//! The instruction set of the hot loops, chosen at run time.
//!
//! The wheel is built for baseline x86-64 (SSE2: 4 floats a vector), while
//! NumPy and torch pick AVX2 or AVX-512 loops when the CPU has them.
//! [`twin!`] compiles a loop twice more, under `#[target_feature(enable =
//! "avx2,fma,f16c")]` and under AVX-512 (F, BW, DQ, VL, with the AVX2 set),
//! and calls the widest copy the CPU runs (checked once, by std's cached
//! detection); the baseline copy stays for other CPUs, other architectures
//! and Miri. A loop may keep its AVX-512 copy out (`avx512 if false`) where
//! that copy measured slower. No crate: `multiversion` would do the same for
//! plain functions, but the loops are generic with `impl Fn` arguments, and a
//! few dozen lines of `macro_rules!` cover them without a proc-macro
//! dependency. Every copy computes the same thing the same way (no
//! fast-math, no contraction into FMA), so the results are equal bit for bit.
//! A copy's loops must be in its own body, inlined: a closure or function
//! the compiler keeps apart is compiled once, for the baseline, and a copy
//! that calls it runs that loop without AVX2 or AVX-512 at the same bits
//! (`tests/python/test_fast_paths.py` reads the built module for such
//! calls). `DLBRIDGE_ISA=baseline` runs the baseline copies, `DLBRIDGE_ISA=avx2`
//! stops at AVX2, `DLBRIDGE_ISA=avx512` at AVX-512 without its BF16 and
//! FP16 conversions, `DLBRIDGE_ISA=avx512bf16` without the FP16 ones (tests
//! and comparisons).

/// Whether the AVX2 copies may run: the CPU has AVX2, FMA and F16C, and
/// `DLBRIDGE_ISA` is not `baseline` (which runs the baseline copies, for
/// tests and comparisons). Decided once.
#[inline(always)]
#[cfg_attr(miri, allow(dead_code))] // Miri runs the baseline copies only
pub(crate) fn avx2() -> bool {
    choice() >= AVX2
}

/// Whether the AVX-512 copies may run: the CPU also has AVX-512 F, BW, DQ
/// and VL, and `DLBRIDGE_ISA` is neither `baseline` nor `avx2`.
#[inline(always)]
#[cfg_attr(miri, allow(dead_code))]
pub(crate) fn avx512() -> bool {
    choice() >= AVX512
}

/// Whether [`avx512`] holds and the CPU also converts float32 to bfloat16
/// (AVX-512 BF16: Sapphire Rapids, Zen 4 and later).
#[inline(always)]
#[cfg_attr(miri, allow(dead_code))]
pub(crate) fn avx512_bf16() -> bool {
    choice() >= AVX512_BF16
}

/// Whether [`avx512_bf16`] holds and the CPU also converts to and from
/// float16 in AVX-512 (AVX-512 FP16: Sapphire Rapids and later), and
/// `DLBRIDGE_ISA` is not `avx512bf16`.
#[inline(always)]
#[cfg_attr(miri, allow(dead_code))]
pub(crate) fn avx512_fp16() -> bool {
    choice() == AVX512_FP16
}

/// Whether the CPU is AMD's (CPUID's vendor string): a loop that measured
/// faster another way there asks (`numpy_sum.rs`). Decided once.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) fn amd() -> bool {
    static AMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AMD.get_or_init(|| {
        let v = std::arch::x86_64::__cpuid(0);
        // "AuthenticAMD", in the order CPUID gives it.
        [v.ebx, v.edx, v.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163]
    })
}

const BASELINE: u8 = 1;
const AVX2: u8 = 2;
const AVX512: u8 = 3;
const AVX512_BF16: u8 = 4;
const AVX512_FP16: u8 = 5;

/// The copies to run: decided once (0 until then).
#[inline(always)]
#[cfg_attr(miri, allow(dead_code))]
fn choice() -> u8 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        static CHOICE: AtomicU8 = AtomicU8::new(0);
        match CHOICE.load(Ordering::Relaxed) {
            0 => decide(&CHOICE),
            c => c,
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        BASELINE
    }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[cold]
#[inline(never)]
fn decide(choice: &std::sync::atomic::AtomicU8) -> u8 {
    let asked = std::env::var("DLBRIDGE_ISA").unwrap_or_default();
    let avx2 = asked != "baseline"
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c");
    let avx512 = avx2
        && asked != "avx2"
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl");
    let bf16 = avx512 && asked != "avx512" && std::arch::is_x86_feature_detected!("avx512bf16");
    let c = if bf16 && asked != "avx512bf16" && std::arch::is_x86_feature_detected!("avx512fp16") {
        AVX512_FP16
    } else if bf16 {
        AVX512_BF16
    } else if avx512 {
        AVX512
    } else if avx2 {
        AVX2
    } else {
        BASELINE
    };
    choice.store(c, std::sync::atomic::Ordering::Relaxed);
    c
}

/// `fn name[generics](args) -> ret => body;` defines `name`, which calls
/// `body(args)` (an `#[inline(always)]` function) compiled for AVX-512 when
/// [`avx512`] says so (and the optional `, avx512 if COND` holds), for AVX2
/// when [`avx2`] does, else as built. `unsafe fn` passes the caller's promise
/// on; a safe `fn` needs none.
macro_rules! twin {
    ($(#[$m:meta])* $vis:vis unsafe fn $name:ident [$($gen:tt)*] ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:path $(, avx512 if $wide:expr)?;) => {
        $(#[$m])*
        #[inline(always)]
        $vis unsafe fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            $crate::cpu::isa::twin!(@copy [unsafe] avx512, "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c",
                $crate::cpu::isa::avx512() $(&& $wide)?, [$($gen)*] ($($arg: $ty),*) $(-> $ret)? => $body);
            $crate::cpu::isa::twin!(@copy [unsafe] avx2, "avx2,fma,f16c",
                $crate::cpu::isa::avx2(), [$($gen)*] ($($arg: $ty),*) $(-> $ret)? => $body);
            // SAFETY: the caller's promise, passed on.
            unsafe { $body($($arg),*) }
        }
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident [$($gen:tt)*] ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:path $(, avx512 if $wide:expr)?;) => {
        $(#[$m])*
        #[inline(always)]
        $vis fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            $crate::cpu::isa::twin!(@copy [] avx512, "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c",
                $crate::cpu::isa::avx512() $(&& $wide)?, [$($gen)*] ($($arg: $ty),*) $(-> $ret)? => $body);
            $crate::cpu::isa::twin!(@copy [] avx2, "avx2,fma,f16c",
                $crate::cpu::isa::avx2(), [$($gen)*] ($($arg: $ty),*) $(-> $ret)? => $body);
            $body($($arg),*)
        }
    };
    // One copy: `body` compiled under `features`, called (and returned
    // from) when `when` holds.
    (@copy [$($unsafe:ident)?] $copy:ident, $features:literal, $when:expr,
     [$($gen:tt)*] ($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $body:path) => {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if $when {
            #[target_feature(enable = $features)]
            $($unsafe)? fn $copy<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: an unsafe body's promise is the caller's, passed on.
                #[allow(unused_unsafe)]
                unsafe { $body($($arg),*) }
            }
            // SAFETY: the CPU has the features (checked); the rest is the
            // caller's promise, passed on.
            return unsafe { $copy($($arg),*) };
        }
    };
}
pub(crate) use twin;
