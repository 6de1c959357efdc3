"""Accuracy of the CPU's own math (src/cpu/vmath.rs, src/cpu/log32.rs, src/cpu/sqrt.rs,
src/cpu/cast.rs): `exp` and `log` within 1 ulp of the exact value, `sqrt`
correctly rounded (IEEE's, NumPy's bits), and float64 and integers
rounded once to float16 and bfloat16 (NumPy's float16 rounding; torch goes
through float32 and can round twice)."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import python_env


def f32_inputs():
    """Every exponent, the overflow and underflow edges, subnormals, specials."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 400_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.72283, 88.72284, -87.33654, -87.33655,
         -103.27893, -103.97208, -103.97209, 1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38],
        dtype=np.float32,
    )
    near = np.linspace(-110, 95, 100_001, dtype=np.float32)
    return np.concatenate([x, edges, near, np.float32(1) + np.arange(-500, 500, dtype=np.float32) * 2**-23])


def ulps_f32(got, want64):
    """|got - want| in float32 ulps at want (0 where got is want rounded)."""
    with np.errstate(over="ignore"):
        want32 = want64.astype(np.float32)
    same = (got == want32) | (np.isnan(got) & np.isnan(want64))
    spacing = np.spacing(np.abs(want32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - want64) / spacing
    return np.where(same, 0.0, err)


def near_squares(dtype, n, seed):
    """Inputs a few ulps from the square of a random number: the roots
    that lie closest to a rounding midpoint."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(1, 2, n).astype(dtype) * np.exp2(rng.integers(-60, 60, n)).astype(dtype)
    bits = (s * s).view(np.int32 if dtype == np.float32 else np.int64)
    return (bits + rng.integers(-3, 4, n).astype(bits.dtype)).view(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sqrt_is_correctly_rounded(dtype):
    """dlbridge's square root (on AVX-512 a multiply-add kernel, not the
    square-root unit) is IEEE's: NumPy's bits on random bit patterns,
    near-squares, both ends of the exponent range and the specials;
    apart, in place, from an odd offset and over an odd length."""
    rng = np.random.default_rng(7)
    uint = np.uint32 if dtype == np.float32 else np.uint64
    x = np.concatenate([
        rng.integers(0, np.iinfo(uint).max, 300_001, dtype=uint).view(dtype),
        near_squares(dtype, 300_000, 8),
        np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan], dtype=dtype),
        np.finfo(dtype).smallest_subnormal * np.arange(1, 50, dtype=dtype),
        np.finfo(dtype).max / np.arange(1, 50, dtype=dtype),
    ])
    with np.errstate(invalid="ignore"):
        want = np.sqrt(x)
    same = lambda got, w: np.array_equal(got.view(uint), w.view(uint)) or np.array_equal(got, w, equal_nan=True)
    assert same(db.from_numpy(x).sqrt().numpy(), want)
    assert same(db.from_numpy(x[3:-2]).sqrt().numpy(), want[3:-2])
    t = db.from_numpy(x.copy())
    t.sqrt_()
    assert same(t.numpy(), want)


def test_float16_sqrt_is_correctly_rounded():
    """Every float16 (on AVX-512 rooted in float32 blocks by the multiply-add
    kernel and rounded back): NumPy's bits, apart, in place and from an odd
    offset."""
    x = np.arange(2**16, dtype=np.uint16).view(np.float16)
    with np.errstate(invalid="ignore"):
        want = np.sqrt(x)
    same = lambda got, w: np.array_equal(got.view(np.uint16), w.view(np.uint16)) or np.array_equal(got, w, equal_nan=True)
    assert same(db.from_numpy(x).sqrt().numpy(), want)
    assert same(db.from_numpy(x[3:-2]).sqrt().numpy(), want[3:-2])
    t = db.from_numpy(x.copy())
    t.sqrt_()
    assert same(t.numpy(), want)


@pytest.mark.parametrize("name", ["exp", "log"])
def test_float32_exp_and_log_are_within_one_ulp(name):
    check_float32_within_one_ulp(name)


def test_float32_log_without_avx512_is_within_one_ulp():
    """On AVX-512 CPUs float32 log runs a table-driven kernel
    (src/cpu/log32.rs); the other CPUs' fdlibm kernel is checked here in a
    process held to AVX2."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = f"import sys; sys.path.insert(0, {here!r}); import test_math_accuracy as t; t.check_float32_within_one_ulp('log')"
    env = python_env(dict(os.environ, DLBRIDGE_ISA="avx2"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def check_float32_within_one_ulp(name):
    x = f32_inputs()
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x.astype(np.float64))
    for t in (db.from_numpy(x), db.from_numpy(np.repeat(x, 2))[::2]):  # contiguous, strided
        got = getattr(t, name)().numpy()
        err = ulps_f32(got, want)
        worst = int(np.nanargmax(err))
        assert err[worst] < 1.0, f"{name}({x[worst]!r}) = {got[worst]!r}, exact {want[worst]!r}: {err[worst]} ulp"


@pytest.mark.parametrize("name", ["exp", "log"])
def test_float64_exp_and_log_are_within_one_ulp_of_libm(name):
    rng = np.random.default_rng(6)
    x = np.concatenate([
        rng.integers(0, 2**63, 200_000, dtype=np.uint64).view(np.float64),
        np.linspace(-750, 712, 200_001),
        [0.0, -0.0, np.inf, -np.inf, np.nan, 709.782712893384, 709.79, -745.13, -745.14, 5e-324, 2.2250738585072014e-308],
    ])
    got = getattr(db.from_numpy(x), name)().numpy()
    want = np.array([libm(name, v) for v in x.tolist()])
    both_nan = np.isnan(got) & np.isnan(want)
    apart = np.abs(got.view(np.int64) - want.view(np.int64))
    bad = ~both_nan & ((apart > 1) | (np.isinf(got) != np.isinf(want)))
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))


def libm(name, v):
    """`math.exp`/`math.log` (glibc's) with IEEE results where they raise."""
    try:
        return getattr(math, name)(v)
    except OverflowError:
        return math.inf
    except ValueError:  # log of 0 or of a negative number
        return -math.inf if v == 0 else math.nan


def test_exp_and_log_specials_match_torch():
    x = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, -1.0, 1e-45, 100.0, -200.0])
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        t = x.to(dtype)
        for name in ("exp", "log"):
            got = torch.from_dlpack(getattr(db.from_dlpack(t), name)())
            torch.testing.assert_close(got, getattr(t, name)(), equal_nan=True, rtol=0, atol=0)


def round_once(x, bits, min_exp):
    """x (float64) rounded to a float of `bits` significant bits whose
    normal numbers start at 2^min_exp, ties to even: exact (frexp, rint)."""
    e = np.frexp(x)[1]
    quantum = np.maximum(e, min_exp + 1) - bits  # subnormals keep the smallest quantum
    return np.ldexp(np.rint(np.ldexp(x, -quantum)), quantum)


def ties(bits, lo, hi, n, seed, step):
    """Values at, `step` above and `step` below (relative to the quantum: an
    integer step keeps integers integers) the halfway points of a `bits`-bit
    float, with quanta 2^lo..2^hi, both signs."""
    rng = np.random.default_rng(seed)
    mant = rng.integers(2 ** (bits - 1), 2**bits, n).astype(np.float64)
    q = rng.integers(lo, hi, n)
    tie = np.ldexp(mant + 0.5, q)
    d = np.ldexp(1.0, q + step) if step < 0 else np.full(n, float(step))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return np.concatenate([tie, tie + d, tie - d]) * np.tile(sign, 3)


@pytest.mark.parametrize("dtype,bits,min_exp", [("float16", 11, -14), ("bfloat16", 8, -126)])
def test_float64_and_integers_round_once_to_narrow_floats(dtype, bits, min_exp):
    to = getattr(db, dtype)
    top = 15 - bits if dtype == "float16" else 120  # below the largest finite value
    x = ties(bits, min_exp + 1 - bits, top, 20_000, 7, step=-40)
    want = round_once(x, bits, min_exp)
    for t in (db.from_numpy(x), db.from_numpy(np.repeat(x, 2))[::2]):  # the fast loop, the generic path
        got = torch.from_dlpack(t.to(to)).double().numpy()
        np.testing.assert_array_equal(got, want)
    if dtype == "float16":
        np.testing.assert_array_equal(x.astype(np.float16).astype(np.float64), want)  # NumPy agrees
    # Integers reach them through float64 (exact below 2^53), rounded once.
    ints = ties(bits, 1, top if dtype == "float16" else 52 - bits, 5_000, 8, step=1).astype(np.int64)
    for src in (ints, ints[np.abs(ints) < 2**31].astype(np.int32)):
        got = torch.from_dlpack(db.from_numpy(src).to(to)).double().numpy()
        np.testing.assert_array_equal(got, round_once(src.astype(np.float64), bits, min_exp))


# --------------------------------------------------------------------------- pow


def pow_pairs(dtype, n, seed):
    """Bases and exponents whose powers cover the dtype's range (subnormal
    and overflowing results too), bases near 1 with large exponents (where
    `ln x` needs more than the dtype's precision), negative bases with
    integer exponents and every pair of special values."""
    rng = np.random.default_rng(seed)
    span = 60 if dtype == np.float32 else 500
    x = np.exp2(rng.uniform(-span / 3, span / 3, n))
    y = rng.uniform(-3, 3, n)
    near = 1 + rng.uniform(-1e-4, 1e-4, n // 4)
    big = rng.uniform(-1e5, 1e5, n // 4) * (1 if dtype == np.float64 else 1e-2)
    neg = -np.exp2(rng.uniform(-8, 8, n // 4))
    ints = rng.integers(-40, 40, n // 4).astype(np.float64)
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan,
                        1e-310 if dtype == np.float64 else 1e-40])
    sx, sy = (v.ravel() for v in np.meshgrid(special, special))
    with np.errstate(over="ignore"):
        return (np.concatenate([x, near, neg, sx]).astype(dtype), np.concatenate([y, big, ints, sy]).astype(dtype))


def test_float64_pow_is_within_one_ulp():
    """float64 `a ** b` (src/cpu/vpow.rs: a double-double logarithm and the
    table-driven exp) against long double's `powl` (64 bits of mantissa:
    the exact value to float64's purposes): within 1 ulp, and C99's special
    values (NumPy's `np.power`, libm's) bit for bit."""
    x, y = pow_pairs(np.float64, 200_000, 11)
    got = (db.from_numpy(x) ** db.from_numpy(y)).numpy()
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.longdouble), y.astype(np.longdouble))
        want = np.power(x, y)
    finite = np.isfinite(want) & np.isfinite(got) & (want != 0)
    spacing = np.spacing(np.abs(want[finite])).astype(np.longdouble)
    err = np.abs(got[finite].astype(np.longdouble) - exact[finite]) / spacing
    worst = int(np.argmax(err))
    assert err[worst] < 1.0, f"pow({x[finite][worst]!r}, {y[finite][worst]!r}): {err[worst]} ulp"
    # Zeros, infinities and NaN where libm gives them, with its signs.
    assert np.array_equal(np.isnan(got), np.isnan(want))
    rest = ~finite & ~np.isnan(want)
    assert np.array_equal(got[rest], want[rest]) and np.array_equal(np.signbit(got[rest]), np.signbit(want[rest]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_pow_is_within_an_ulp(dtype):
    """float32 `a ** b` computes in float32 lanes (as NumPy's SVML and
    torch's SLEEF do, src/cpu/vpow.rs) within 0.55 ulp of the exact power,
    0.8 where the result is subnormal (rounded twice), and is the
    correctly rounded power for all but about one in three hundred; exponents
    past ±512 (float64 arithmetic) included. float16 computes in it and
    rounds once more, as torch does: within 1 ulp. Special values as
    NumPy's."""
    x, y = pow_pairs(np.float32, 200_000, 12)
    if dtype == np.float16:
        x, y = x.astype(np.float16), y.astype(np.float16)
    got = (db.from_numpy(x) ** db.from_numpy(y)).numpy()
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        want = exact.astype(np.float32).astype(dtype)
    off = ~((got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want))
    assert off.sum() <= len(x) // 150, (off.sum(), list(zip(x[off][:5], y[off][:5], got[off][:5], want[off][:5])))
    finite = np.isfinite(want) & (exact != 0)
    if dtype == np.float32:
        tiny = np.abs(exact[finite]) < np.finfo(np.float32).tiny
        ulp = np.exp2(np.maximum(np.floor(np.log2(np.abs(exact[finite]))) - 23, -149))
        err = np.abs(got[finite].astype(np.float64) - exact[finite]) / ulp
        assert err[~tiny].max() < 0.55 and err[tiny].max() < 0.8, (err[~tiny].max(), err[tiny].max())
    else:
        apart = np.abs(got[off].astype(np.float64) - want[off]) / np.spacing(np.abs(want[off])).astype(np.float64)
        assert (apart <= 1).all()
    # Zeros, infinities and NaN where the rounded exact power has them.
    assert np.array_equal(np.isnan(got), np.isnan(want))
    rest = ~finite & ~np.isnan(want)
    assert (got[rest] == want[rest]).all() and (np.signbit(got[rest]) == np.signbit(want[rest])).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_pow_gives_the_same_bits_in_every_layout(dtype):
    """The general power runs one kernel for every layout: strided,
    transposed, broadcast, a number on either side and in place give the
    dense result's bits (and within an ulp of torch's SLEEF kernels)."""
    g = torch.Generator().manual_seed(3)
    a = (torch.rand(64, 33, generator=g, dtype=torch.float64) * 4).to(getattr(torch, dtype))
    b = ((torch.rand(64, 33, generator=g, dtype=torch.float64) - 0.5) * 6).to(getattr(torch, dtype))
    a[0, :5] = torch.tensor([0.0, -2.0, float("inf"), float("nan"), 1.0])
    b[0, :5] = torch.tensor([-1.0, 3.0, -0.5, 0.0, float("nan")])
    da, dbb = db.from_dlpack(a), db.from_dlpack(b)

    def dense(u, v):
        return torch.from_dlpack(db.from_dlpack(u.contiguous()) ** db.from_dlpack(v.contiguous()))

    def same(got, want):
        got = torch.from_dlpack(got)
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(want))

    same(da[::2, 1::3] ** dbb[::2, 1::3], dense(a[::2, 1::3], b[::2, 1::3]))
    same(da.T ** dbb.T, dense(a.T, b.T))
    same(da ** dbb[3], dense(a, b[3].expand(64, 33)))
    # A number travels in the compute type (float32 for float16 and
    # bfloat16, unrounded to the dtype, as torch's does).
    wide = torch.float32 if dtype in ("float16", "bfloat16") else a.dtype
    same(da ** 2.7, dense(a.to(wide), torch.full(a.shape, 2.7, dtype=wide)).to(a.dtype))
    same(1.3 ** dbb, dense(torch.full(b.shape, 1.3, dtype=wide), b.to(wide)).to(a.dtype))
    t = db.from_dlpack(a.clone())
    t[::3].pow_(dbb[::3])
    want = a.clone()
    want[::3] = dense(a[::3], b[::3])
    same(t, want)
    # Against torch: within one ulp of the dtype (both round a float32 or
    # float64 power once).
    got = torch.from_dlpack(da ** dbb).double()
    ref = (a ** b).double()
    ok = (got == ref) | (got.isnan() & ref.isnan())
    ulp = {"float32": 2**-23, "float64": 2**-52, "float16": 2**-10, "bfloat16": 2**-7}[dtype]
    assert (ok | ((got - ref).abs() <= ulp * ref.abs())).all()
