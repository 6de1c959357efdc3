//! Transposes of one-byte elements (bool, int8, uint8) in registers: 16
//! lines of 16 bytes loaded, interleaved in four rounds of unpacks, stored
//! as 16 lines the other way. A byte at a time, a transpose costs a load
//! and a store per element, and `permute(2,0,1).contiguous()` of bool and
//! `m.T + m2` of int8 ran at 1.3-1.9x NumPy's time.

/// Side of a block, in bytes.
pub(super) const SIDE: usize = 16;

/// `dst[r * ds + c] = src[r + c * ss]` for `r < rows`, `c < cols`: a
/// band of `rows` destination lines, whole blocks where both sides have
/// [`SIDE`] elements (the last block of each side moved back to end at the
/// edge, rewriting a few bytes with the same values), bytes elsewhere.
///
/// # Safety
/// Every `src[r + c * ss]` is readable and every `dst[r * ds + c]` is
/// writable, exclusively ours, and apart from the source.
pub(super) unsafe fn bytes(
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    ds: isize,
    rows: usize,
    cols: usize,
) {
    // SAFETY (whole body): every address below is an (r, c) of the band.
    unsafe {
        if rows < SIDE || cols < SIDE {
            for r in 0..rows {
                let (d, s) = (dst.offset(r as isize * ds), src.add(r));
                for c in 0..cols {
                    *d.add(c) = *s.offset(c as isize * ss);
                }
            }
            return;
        }
        for c in (0..cols).step_by(SIDE) {
            let c = c.min(cols - SIDE) as isize;
            for r in (0..rows).step_by(SIDE) {
                let r = r.min(rows - SIDE) as isize;
                block(src.offset(r + c * ss), ss, dst.offset(r * ds + c), ds);
            }
        }
    }
}

/// The 16x16 block at `src` (lines `ss` apart) transposed into `dst`
/// (lines `ds` apart): SSE2, which every x86-64 CPU has.
///
/// # Safety
/// 16 lines of 16 bytes readable at `src`, writable at `dst`, apart.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block(src: *const u8, ss: isize, dst: *mut u8, ds: isize) {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_storeu_si128, _mm_unpackhi_epi8, _mm_unpackhi_epi16,
        _mm_unpackhi_epi32, _mm_unpackhi_epi64, _mm_unpacklo_epi8, _mm_unpacklo_epi16,
        _mm_unpacklo_epi32, _mm_unpacklo_epi64,
    };
    /// One round: lines 2k and 2k+1 interleaved in units of the round's
    /// width, the low halves to line k, the high ones to k + 8. Written
    /// out: built by `array::from_fn`, the rounds stayed loops over the
    /// stack, and a 300x300 transpose took 26 us (NumPy 29).
    macro_rules! round {
        ($v:ident, $lo:ident, $hi:ident) => {
            $v = [
                $lo($v[0], $v[1]),
                $lo($v[2], $v[3]),
                $lo($v[4], $v[5]),
                $lo($v[6], $v[7]),
                $lo($v[8], $v[9]),
                $lo($v[10], $v[11]),
                $lo($v[12], $v[13]),
                $lo($v[14], $v[15]),
                $hi($v[0], $v[1]),
                $hi($v[2], $v[3]),
                $hi($v[4], $v[5]),
                $hi($v[6], $v[7]),
                $hi($v[8], $v[9]),
                $hi($v[10], $v[11]),
                $hi($v[12], $v[13]),
                $hi($v[14], $v[15]),
            ];
        };
    }
    // SAFETY: the caller's promise; SSE2 is part of x86-64.
    unsafe {
        let at = |k: isize| _mm_loadu_si128(src.offset(k * ss).cast());
        let mut v: [__m128i; SIDE] = [
            at(0),
            at(1),
            at(2),
            at(3),
            at(4),
            at(5),
            at(6),
            at(7),
            at(8),
            at(9),
            at(10),
            at(11),
            at(12),
            at(13),
            at(14),
            at(15),
        ];
        round!(v, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
        round!(v, _mm_unpacklo_epi16, _mm_unpackhi_epi16);
        round!(v, _mm_unpacklo_epi32, _mm_unpackhi_epi32);
        round!(v, _mm_unpacklo_epi64, _mm_unpackhi_epi64);
        // After the four rounds line j holds destination line j's bits
        // reversed.
        let put = |line: isize, v| _mm_storeu_si128(dst.offset(line * ds).cast(), v);
        put(0, v[0]);
        put(8, v[1]);
        put(4, v[2]);
        put(12, v[3]);
        put(2, v[4]);
        put(10, v[5]);
        put(6, v[6]);
        put(14, v[7]);
        put(1, v[8]);
        put(9, v[9]);
        put(5, v[10]);
        put(13, v[11]);
        put(3, v[12]);
        put(11, v[13]);
        put(7, v[14]);
        put(15, v[15]);
    }
}

/// [`block`] a byte at a time, for other architectures.
///
/// # Safety
/// As for the x86-64 `block`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn block(src: *const u8, ss: isize, dst: *mut u8, ds: isize) {
    for r in 0..SIDE as isize {
        for c in 0..SIDE as isize {
            // SAFETY: the caller's promise.
            unsafe { *dst.offset(r * ds + c) = *src.offset(r + c * ss) };
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every shape around the block's side (bytes, whole blocks, blocks
    /// moved back at the edges) and padded strides on both sides: each
    /// destination byte is its source byte, and the padding is untouched.
    #[test]
    fn bytes_transpose_any_band() {
        for rows in [1, 7, 15, 16, 17, 31, 32, 33, 40] {
            for cols in [1, 15, 16, 17, 35, 48] {
                let (ss, ds) = (rows + 3, cols + 5);
                let src: Vec<u8> = (0..ss * cols).map(|i| (i * 7 + 1) as u8).collect();
                let mut dst = vec![0xAAu8; ds * rows];
                // SAFETY: both buffers hold every (r, c) at these strides.
                unsafe {
                    super::bytes(
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
                        let want = if c < cols { src[r + c * ss] } else { 0xAA };
                        assert_eq!(dst[r * ds + c], want, "{rows}x{cols} at ({r}, {c})");
                    }
                }
            }
        }
    }
}
