//! Transposes in registers, for elements of 1, 2, 4 or 8 bytes: lines of
//! 16 bytes loaded, interleaved in rounds of unpacks (one round per
//! doubling of the unit, from the element to 8 bytes), stored as lines the
//! other way. An element at a time, a transpose costs a load and a store
//! per element: `permute(2,0,1).contiguous()` of bool and `m.T + m2` of
//! int8 ran at 1.3-1.9x NumPy's time, `m.T + m2` of bfloat16 at 2.6x
//! torch's.

/// Rows of a band (`band`'s callers cut their walks in bands of this
/// many rows): a whole block of one-byte elements, whole blocks of wider
/// ones.
pub(super) const SIDE: usize = 16;

/// Columns of a tile: [`band`] goes down the band a tile at a time,
/// so each destination line gets runs of this many elements.
const TILE: usize = 32;

/// Bytes of a register line.
const LINE: usize = 16;

/// Whether [`band_of`] takes elements of `T`: 1, 2, 4 or 8 bytes.
pub(super) const fn fits<T>() -> bool {
    matches!(size_of::<T>(), 1 | 2 | 4 | 8)
}

/// [`band`] in elements of `T` (their bytes moved as they are, so a bool's
/// are copies of bools): false, with nothing done, where `T` does not
/// [`fits`].
///
/// # Safety
/// As for [`band`].
pub(super) unsafe fn band_of<T>(
    src: *const T,
    ss: isize,
    dst: *mut T,
    ds: isize,
    rows: usize,
    cols: usize,
) -> bool {
    if !fits::<T>() {
        return false;
    }
    let (s, d) = (src.cast::<u8>(), dst.cast::<u8>());
    // SAFETY: the caller's promise, in elements of `E` = T's size.
    unsafe {
        match size_of::<T>() {
            1 => band::<1>(s, ss, d, ds, rows, cols),
            2 => band::<2>(s, ss, d, ds, rows, cols),
            4 => band::<4>(s, ss, d, ds, rows, cols),
            _ => band::<8>(s, ss, d, ds, rows, cols),
        }
    }
    true
}

/// `dst[r * ds + c] = src[r + c * ss]` for `r < rows`, `c < cols`, in
/// elements of `E` bytes (strides in elements): a band of `rows`
/// destination lines, whole blocks where both sides have a block's side
/// (16 / `E` elements; the last block of each side moved back to end at
/// the edge, rewriting a few elements with the same values), elements
/// elsewhere.
///
/// # Safety
/// `E` is 1, 2, 4 or 8; every `src[r + c * ss]` is readable and every
/// `dst[r * ds + c]` is writable, exclusively ours, and apart from the
/// source.
unsafe fn band<const E: usize>(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    rows: usize,
    cols: usize,
) {
    let side = LINE / E;
    let (e, ss, ds) = (E as isize, ss * E as isize, ds * E as isize);
    // SAFETY (whole body): every address below is an (r, c) of the band.
    unsafe {
        if rows < side || cols < side {
            for r in 0..rows as isize {
                for c in 0..cols as isize {
                    let (d, s) = (dst.offset(r * ds + c * e), src.offset(r * e + c * ss));
                    std::ptr::copy_nonoverlapping(s, d, E);
                }
            }
            return;
        }
        for c0 in (0..cols).step_by(TILE) {
            for r in (0..rows).step_by(side) {
                let r = r.min(rows - side) as isize;
                for c in (c0..cols.min(c0 + TILE)).step_by(side) {
                    let c = c.min(cols - side) as isize;
                    block::<E>(
                        src.offset(r * e + c * ss),
                        ss,
                        dst.offset(r * ds + c * e),
                        ds,
                    );
                }
            }
        }
    }
}

/// The block of `16 / E` lines at `src` (`ss` bytes apart) transposed into
/// `dst` (lines `ds` bytes apart): SSE2, which every x86-64 CPU has.
///
/// # Safety
/// `16 / E` lines of 16 bytes readable at `src`, writable at `dst`, apart.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block<const E: usize>(src: *const u8, ss: isize, dst: *mut u8, ds: isize) {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpackhi_epi16,
        _mm_unpackhi_epi32, _mm_unpackhi_epi64, _mm_unpacklo_epi8, _mm_unpacklo_epi16,
        _mm_unpacklo_epi32, _mm_unpacklo_epi64,
    };
    /// The block for one size: its lines loaded, each round interleaving
    /// lines 2i and 2i+1 in units of the round's width (the low halves to
    /// line i, the high ones to i + n/2), then line j stored to the
    /// destination line of j's bits reversed. Written out: built by loops
    /// or `array::from_fn`, the 16 lines of bytes stayed on the stack, and
    /// a byte transpose ran 2-3x slower.
    macro_rules! block {
        ([$($k:literal)*], $pairs:tt, [$($put:literal)*], $($lo:ident $hi:ident)*) => {{
            let mut v: [__m128i; [$($k),*].len()] =
                [$(_mm_loadu_si128(src.offset($k * ss).cast())),*];
            $(v = round!(v, $lo, $hi, $pairs);)*
            let mut j = 0;
            $(_mm_storeu_si128(dst.offset($put * ds).cast(), v[j]); j += 1;)*
            let _ = j;
        }};
    }
    macro_rules! round {
        ($v:ident, $lo:ident, $hi:ident, [$(($x:literal, $y:literal))*]) => {
            [$($lo($v[$x], $v[$y]),)* $($hi($v[$x], $v[$y]),)*]
        };
    }
    // SAFETY: the caller's promise; SSE2 is part of x86-64.
    unsafe {
        match E {
            1 => block!(
                [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
                [(0, 1) (2, 3) (4, 5) (6, 7) (8, 9) (10, 11) (12, 13) (14, 15)],
                [0 8 4 12 2 10 6 14 1 9 5 13 3 11 7 15],
                _mm_unpacklo_epi8 _mm_unpackhi_epi8 _mm_unpacklo_epi16 _mm_unpackhi_epi16
                _mm_unpacklo_epi32 _mm_unpackhi_epi32 _mm_unpacklo_epi64 _mm_unpackhi_epi64
            ),
            2 => block!(
                [0 1 2 3 4 5 6 7],
                [(0, 1) (2, 3) (4, 5) (6, 7)],
                [0 4 2 6 1 5 3 7],
                _mm_unpacklo_epi16 _mm_unpackhi_epi16 _mm_unpacklo_epi32 _mm_unpackhi_epi32
                _mm_unpacklo_epi64 _mm_unpackhi_epi64
            ),
            4 => block!(
                [0 1 2 3],
                [(0, 1) (2, 3)],
                [0 2 1 3],
                _mm_unpacklo_epi32 _mm_unpackhi_epi32 _mm_unpacklo_epi64 _mm_unpackhi_epi64
            ),
            _ => block!([0 1], [(0, 1)], [0 1], _mm_unpacklo_epi64 _mm_unpackhi_epi64),
        }
    }
}

/// [`block`] an element at a time, for other architectures.
///
/// # Safety
/// As for the x86-64 `block`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn block<const E: usize>(src: *const u8, ss: isize, dst: *mut u8, ds: isize) {
    let (n, e) = ((LINE / E) as isize, E as isize);
    for r in 0..n {
        for c in 0..n {
            // SAFETY: the caller's promise.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.offset(r * e + c * ss),
                    dst.offset(r * ds + c * e),
                    E,
                )
            };
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every shape around a block's side (elements, whole blocks, blocks
    /// moved back at the edges) and padded strides on both sides, for
    /// each element size: each destination element is its source element,
    /// and the padding is untouched.
    #[test]
    fn band_transposes_any_shape() {
        fn check<const E: usize>() {
            for rows in [1, 3, 7, 15, 16, 17, 31, 32, 33, 40] {
                for cols in [1, 2, 5, 15, 16, 17, 35, 48] {
                    let (ss, ds) = (rows + 3, cols + 5);
                    let src: Vec<u8> = (0..ss * cols * E).map(|i| (i * 7 + 1) as u8).collect();
                    let mut dst = vec![0xAAu8; ds * rows * E];
                    // SAFETY: both buffers hold every (r, c) at these strides.
                    unsafe {
                        super::band::<E>(
                            src.as_ptr(),
                            ss as isize,
                            dst.as_mut_ptr(),
                            ds as isize,
                            rows,
                            cols,
                        )
                    };
                    for r in 0..rows {
                        for c in 0..ds {
                            let got = &dst[(r * ds + c) * E..][..E];
                            if c < cols {
                                let want = &src[(r + c * ss) * E..][..E];
                                assert_eq!(got, want, "{E} bytes, {rows}x{cols} at ({r}, {c})");
                            } else {
                                assert!(
                                    got.iter().all(|&b| b == 0xAA),
                                    "{E}: padding at ({r}, {c})"
                                );
                            }
                        }
                    }
                }
            }
        }
        check::<1>();
        check::<2>();
        check::<4>();
        check::<8>();
    }
}
