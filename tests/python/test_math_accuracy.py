"""Accuracy of the CPU's own math (src/cpu/vmath.rs): `exp` and `log`
within 1 ulp of the exact value."""

import math

import numpy as np
import pytest
import torch

import dlbridge as db


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


@pytest.mark.parametrize("name", ["exp", "log"])
def test_float32_exp_and_log_are_within_one_ulp(name):
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
