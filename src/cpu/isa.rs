//! The instruction set of the hot loops, chosen at run time.
//!
//! The wheel is built for baseline x86-64 (SSE2: 4 floats a vector), while
//! NumPy and torch pick AVX2 loops when the CPU has them. [`twin!`] compiles
//! a loop a second time under `#[target_feature(enable = "avx2,fma,f16c")]`
//! and calls that copy when the CPU has the three (checked once, by std's
//! cached detection); the baseline copy stays for other CPUs, other
//! architectures and Miri. No crate: `multiversion` would do the same for
//! plain functions, but the loops are generic with `impl Fn` arguments, and a
//! dozen lines of `macro_rules!` cover them without a proc-macro dependency.
//! Both copies compute the same thing the same way (no fast-math, no
//! contraction into FMA), so the results are equal bit for bit.

/// Whether the AVX2 copies may run: the CPU has AVX2, FMA and F16C, and
/// `DLBRIDGE_ISA` is not `baseline` (which runs the baseline copies, for
/// tests and comparisons). Decided once.
#[inline(always)]
#[cfg_attr(miri, allow(dead_code))] // Miri runs the baseline copies only
pub(crate) fn avx2() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0: not decided yet, 1: baseline, 2: AVX2.
        static CHOICE: AtomicU8 = AtomicU8::new(0);
        match CHOICE.load(Ordering::Relaxed) {
            2 => true,
            1 => false,
            _ => decide(&CHOICE),
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[cold]
#[inline(never)]
fn decide(choice: &std::sync::atomic::AtomicU8) -> bool {
    let yes = std::env::var("DLBRIDGE_ISA").as_deref() != Ok("baseline")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c");
    choice.store(
        if yes { 2 } else { 1 },
        std::sync::atomic::Ordering::Relaxed,
    );
    yes
}

/// `fn name[generics](args) -> ret => body;` defines `name`, which calls
/// `body(args)` (an `#[inline(always)]` function) compiled for AVX2 when
/// [`avx2`] says so, else as built. `unsafe fn` passes the caller's promise
/// on; a safe `fn` needs none.
macro_rules! twin {
    ($(#[$m:meta])* $vis:vis unsafe fn $name:ident [$($gen:tt)*] ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:path;) => {
        $(#[$m])*
        #[inline(always)]
        $vis unsafe fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if $crate::cpu::isa::avx2() {
                #[target_feature(enable = "avx2,fma,f16c")]
                unsafe fn avx2<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    // SAFETY: the caller's promise, passed on.
                    unsafe { $body($($arg),*) }
                }
                // SAFETY: the CPU has the features (checked); the rest is
                // the caller's promise, passed on.
                return unsafe { avx2($($arg),*) };
            }
            // SAFETY: the caller's promise, passed on.
            unsafe { $body($($arg),*) }
        }
    };
    ($(#[$m:meta])* $vis:vis fn $name:ident [$($gen:tt)*] ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:path;) => {
        $(#[$m])*
        #[inline(always)]
        $vis fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if $crate::cpu::isa::avx2() {
                #[target_feature(enable = "avx2,fma,f16c")]
                fn avx2<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                // SAFETY: the CPU has the features (checked).
                return unsafe { avx2($($arg),*) };
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use twin;
