"""Writes src/cpu/vpow_table.rs: the tables of `pow`'s logarithm (vpow.rs).

    python tools/pow_log_table.py > src/cpu/vpow_table.rs

`vpow.rs` writes `x = 2^k · m` with `m` in [0.7, 1.4), and picks a slot by
the top mantissa bits of `x`'s bits less an offset (`OFF`): 128 slots for
float64, 32 for float32. Each slot holds `invc ≈ 1/c` (`c` the middle of the
slot's range of `m`, so `r = m·invc − 1` is small either side) and
`ln c = −ln(invc)` of that rounded `invc`, computed here at 200 bits with
mpmath: for float64 as a high part (a multiple of 2^-32, so that adding
`k·ln2`'s high part is exact) and a low float64, for float32 one float64. The slot holding 1 has `invc = 1` and `ln c = 0`, so `x` near 1 has
no table error at all.

float32's own kernel (float32 lanes) takes the same 32 slots with `invc` a
float32, `log2 c` as a multiple of 2^-16 and a float32 remainder, the 32
pairs of `2^(j/32)`, and two polynomials fitted here (near-minimax: least
squares on Chebyshev nodes of values at 200 bits), each with its largest
error written beside it. `tests/python/test_pow_table.py` runs this again
and compares.
"""

import struct

import mpmath

mpmath.mp.prec = 200

# (name, offset, slots, mantissa bits, struct format, the high part's
# step): the offsets put 1 in the middle of a slot's bits. float64's high
# part is a multiple of 2^-32, as `k · LN2_HI` is, so their sum is exact.
FORMATS = [
    ("", 0x3FE6B00000000000, 128, 52, "<d", "<Q", mpmath.mpf(2) ** -32),
    ("32", 0x3F320000, 32, 23, "<f", "<I", None),
]


def value(bits, fmt, ifmt):
    return struct.unpack(fmt, struct.pack(ifmt, bits))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def slots(off, count, mant, fmt, ifmt, step):
    """(invc, ln c high, ln c low, largest |r|) per slot, as float64 bits;
    the high part rounded to a multiple of `step` where one is given."""
    shift = mant - (count.bit_length() - 1)
    m_of = lambda t: mpmath.mpf(value(t + off, fmt, ifmt))  # noqa: E731  x's bits are t + off
    for j in range(count):
        a = m_of(j << shift)
        b = m_of((j + 1) << shift) if j + 1 < count else 2 * mpmath.mpf(value(off, fmt, ifmt))
        invc = mpmath.mpf(1) if a <= 1 < b else mpmath.mpf(float(2 / (a + b)))
        logc = -mpmath.log(invc)
        hi = float(logc) if step is None else float(mpmath.nint(logc / step) * step)
        yield f64_bits(invc), f64_bits(hi), f64_bits(logc - mpmath.mpf(hi)), max(abs(a * invc - 1), abs(b * invc - 1))


def table(name, doc, vs):
    out = [f"/// {doc}", f"pub(super) const {name}: [u64; {len(vs)}] = ["]
    out += [f"    0x{v >> 48:04x}_{(v >> 32) & 0xffff:04x}_{(v >> 16) & 0xffff:04x}_{v & 0xffff:04x}," for v in vs]
    return out + ["];", ""]


def main():
    out = ["//! Written by `tools/pow_log_table.py`; do not edit. See `vpow.rs`.", ""]
    for suffix, off, count, mant, fmt, ifmt, step in FORMATS:
        rows = list(slots(off, count, mant, fmt, ifmt, step))
        kind = "float64" if not suffix else "float32"
        out += table(f"INVC{suffix}", f"{kind}: `invc`, about `1/c`, per slot (float64 bits).", [r[0] for r in rows])
        rounded = "to a multiple of 2^-32" if step is not None else "to float64"
        out += table(f"LOGC{'_HI' if not suffix else suffix}",
                     f"{kind}: `ln c = -ln(invc)` rounded {rounded}, per slot (bits).", [r[1] for r in rows])
        if not suffix:
            out += table("LOGC_LO", "float64: `ln c` less `LOGC_HI`, rounded to float64, per slot (bits).",
                         [r[2] for r in rows])
        worst = max(r[3] for r in rows)
        out += [f"// {kind}: the largest |r| over the slots is 2^{float(mpmath.log(worst, 2)):.3f}.", ""]
    out += lanes32()
    print("\n".join(out).rstrip())


def f32(x):
    """`x` rounded to float32, as an mpf."""
    return mpmath.mpf(struct.unpack("<f", struct.pack("<f", float(x)))[0])


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", float(f32(x))))[0]


def table32(name, doc, vs):
    out = [f"/// {doc}", f"pub(super) const {name}: [u32; {len(vs)}] = ["]
    out += [f"    0x{v >> 16:04x}_{v & 0xffff:04x}," for v in vs]
    return out + ["];", ""]


def fit(g, weight, degree, half_width):
    """float32 coefficients, lowest first, of a polynomial near the
    minimax one for `g` on [-half_width, half_width], where the error that
    counts is `weight(x)` times `g`'s: least squares on Chebyshev nodes
    (the values at 200 bits), then rounded; and that weighted error's
    largest value on a fine grid, with the rounded coefficients."""
    import numpy as np

    n = 64
    xs = [half_width * mpmath.cos(mpmath.pi * (i + 0.5) / n) for i in range(n)]
    a = np.array([[float(weight(x) * x**d) for d in range(degree + 1)] for x in xs])
    b = np.array([float(weight(x) * g(x)) for x in xs])
    coefs = [f32(c) for c in np.linalg.lstsq(a, b, rcond=None)[0]]
    grid = [half_width * (2 * mpmath.mpf(i) / 2000 - 1) for i in range(2001)]
    worst = max(abs(weight(x) * (mpmath.polyval(coefs[::-1], x) - g(x))) for x in grid if x != 0)
    return coefs, worst


def lanes32():
    """float32 `pow`'s tables and polynomials for sixteen float32 lanes
    (vpow.rs's `pow_f32`): `log2 x = k + log2 c + log2(1 + r)`, `r = m·invc
    − 1`, over the same 32 slots as INVC32, and `2^t = 2^n · 2^(j/32) ·
    2^f`."""
    off, count, mant = 0x3F320000, 32, 23
    shift = mant - 5
    m_of = lambda t: mpmath.mpf(value(t + off, "<f", "<I"))  # noqa: E731
    invc, hi, lo, worst_r = [], [], [], 0
    for j in range(count):
        a = m_of(j << shift)
        b = m_of((j + 1) << shift) if j + 1 < count else 2 * m_of(0)
        ic = mpmath.mpf(1) if a <= 1 < b else f32(2 / (a + b))
        l2 = -mpmath.log(ic, 2)
        h = mpmath.nint(l2 * 2**16) / 2**16  # k + h is exact for |k| < 2^8
        invc.append(f32_bits(ic))
        hi.append(f32_bits(h))
        lo.append(f32_bits(l2 - h))
        worst_r = max(worst_r, abs(a * ic - 1), abs(b * ic - 1))
    r_max = worst_r * (1 + mpmath.mpf(2) ** -20)
    inv_ln2 = 1 / mpmath.log(2)
    # (log2(1 + r) - r/ln2)/r^2, whose error counts times r^2.
    q, q_err = fit(lambda r: (mpmath.log(1 + r, 2) - r * inv_ln2) / r**2 if r else -inv_ln2 / 2,
                   lambda r: r * r, 3, r_max)
    # (2^f - 1)/f, whose error counts times f; |f| <= 1/64 and a rounding.
    f_max = mpmath.mpf(1) / 64 * (1 + mpmath.mpf(2) ** -10)
    e, e_err = fit(lambda f: (2**f - 1) / f if f else mpmath.log(2), lambda f: f, 2, f_max)
    c_hi = f32(inv_ln2)
    out = ["// float32 lanes (`pow_f32`): the same slots, as float32 values.", ""]
    out += table32("INVC_F32", "float32 lanes: `invc`, about `1/c`, per slot (float32 bits).", invc)
    out += table32("LOG2C_HI", "float32 lanes: `log2 c = -log2(invc)` rounded to a multiple of 2^-16 (so that "
                   "adding an exponent `k` is exact), per slot (bits).", hi)
    out += table32("LOG2C_LO", "float32 lanes: `log2 c` less `LOG2C_HI`, rounded to float32, per slot (bits).", lo)
    out += table32("EXP2_HI", "float32 lanes: `2^(j/32)` rounded to float32 (bits).",
                   [f32_bits(mpmath.mpf(2) ** (mpmath.mpf(j) / 32)) for j in range(32)])
    out += table32("EXP2_LO", "float32 lanes: `2^(j/32)` less `EXP2_HI`, rounded to float32 (bits).",
                   [f32_bits(mpmath.mpf(2) ** (mpmath.mpf(j) / 32) - f32(mpmath.mpf(2) ** (mpmath.mpf(j) / 32)))
                    for j in range(32)])
    out += ["/// float32 lanes: `1/ln 2` as a float32 and its remainder (bits).",
            f"pub(super) const INV_LN2: [u32; 2] = [0x{f32_bits(c_hi):08x}, 0x{f32_bits(inv_ln2 - c_hi):08x}];", ""]
    out += [f"/// float32 lanes: `log2(1 + r) ≈ r/ln2 + r²·(q0 + q1 r + q2 r² + q3 r³)` for |r| ≤ "
            f"2^{float(mpmath.log(r_max, 2)):.3f}; the error of the r² term is below 2^{float(mpmath.log(q_err, 2)):.1f}.",
            f"pub(super) const LOG2_POLY: [u32; 4] = [{', '.join(f'0x{f32_bits(c):08x}' for c in q)}];", ""]
    out += [f"/// float32 lanes: `2^f − 1 ≈ f·(e0 + e1 f + e2 f²)` for |f| ≤ 1/64; its error is below "
            f"2^{float(mpmath.log(e_err, 2)):.1f}.",
            f"pub(super) const EXP2_POLY: [u32; 3] = [{', '.join(f'0x{f32_bits(c):08x}' for c in e)}];", ""]
    return out


if __name__ == "__main__":
    main()
