"""Writes src/cpu/vpow_table.rs: the tables of `pow`'s logarithm (vpow.rs).

    python tools/pow_log_table.py > src/cpu/vpow_table.rs

`vpow.rs` writes `x = 2^k · m` with `m` in [0.7, 1.4), and picks a slot by
the top mantissa bits of `x`'s bits less an offset (`OFF`): 128 slots for
float64, 32 for float32. Each slot holds `invc ≈ 1/c` (`c` the middle of the
slot's range of `m`, so `r = m·invc − 1` is small either side) and
`ln c = −ln(invc)` of that rounded `invc`, computed here at 200 bits with
mpmath: for float64 as a high part (a multiple of 2^-32, so that adding
`k·ln2`'s high part is exact) and a low float64, for float32 one float64. The slot holding 1 has `invc = 1` and `ln c = 0`, so `x` near 1 has
no table error at all. `tests/python/test_pow_table.py` runs this again and
compares.
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
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
