"""The ops generated from the op tables (maximum, minimum, exp, log, sqrt, the bitwise ops, the
rounding divisions and remainders) on a GPU: every
real dtype, odd sizes, NaN and infinities, strided and broadcast operands, in place on a
torch tensor's memory. The reference is the same op on the CPU (tested against torch by
tests/python/test_unary_binary_ops.py); float results within a few ulp (CUDA's libdevice
`exp`/`log` are not correctly rounded), integers and NaN positions exactly."""

import math

import numpy as np
import pytest

import dlbridge as db
from .conftest import EPS, REAL_NAMES, assert_on_cuda, cuda_from, rand_array, values_of

UNARY = [name for name, kind in db._core._generated_ops() if kind == "unary"]
BINARY = [name for name, kind in db._core._generated_ops() if kind == "binary"]
FLOAT_UNARY = [name for name in UNARY if not name.startswith("bitwise_")]  # the bitwise rows take no floats
ROUNDING = {"floor_divide", "remainder", "fmod"}  # no zero integer divisor (refused: tested apart)
SIZES = [1, 7, 257, 40_003]
SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5]
TINY = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 5e-324}  # smallest subnormals


def sample(rng, name, n):
    a = rand_array(rng, name, (n,), small=True)
    if a.dtype.kind == "f" or name == "bfloat16":
        k = min(n, len(SPECIALS))
        a[:k] = np.array(SPECIALS[:k]).astype(a.dtype)
        rng.shuffle(a)
    return a


def close(got, want):
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    g, w = values_of(got), values_of(want)
    name = str(want.dtype).split(".")[-1]
    if name in EPS:
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        assert (np.isnan(g64) == np.isnan(w64)).all()
        keep = ~np.isnan(w64)
        # An ulp of a subnormal result is more than 4 EPS of it: absolute there.
        np.testing.assert_allclose(g64[keep], w64[keep], rtol=4 * EPS[name], atol=4 * TINY[name])
    else:
        assert (g == w).all()


def cpu_or_error(f, *args):
    try:
        return f(*args), None
    except Exception as e:  # noqa: BLE001 - the GPU must refuse the same way
        return None, e


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", REAL_NAMES)
def test_unary_on_the_gpu_matches_the_cpu(rng, name, dtype):
    for n in SIZES:
        a = sample(rng, dtype, n)
        want, err = cpu_or_error(lambda: getattr(db.from_numpy(a), name)())
        if err is not None:
            with pytest.raises(type(err)):
                getattr(cuda_from(a), name)()
            return
        got = getattr(cuda_from(a), name)()
        assert_on_cuda(got)
        close(got, want)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", REAL_NAMES)
def test_binary_on_the_gpu_matches_the_cpu(rng, name, dtype):
    for n in SIZES:
        a, b = sample(rng, dtype, n), sample(rng, dtype, n)
        if name in ROUNDING and b.dtype.kind in "iu":
            b[b == 0] = 3
        want, err = cpu_or_error(lambda: getattr(db, name)(db.from_numpy(a), db.from_numpy(b)))
        if err is not None:
            with pytest.raises(type(err)):
                getattr(db, name)(cuda_from(a), cuda_from(b))
            return
        got = getattr(db, name)(cuda_from(a), cuda_from(b))
        assert_on_cuda(got)
        close(got, want)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "uint8"])
def test_binary_on_the_gpu_broadcasts_and_reads_strided_views(rng, name, dtype):
    if name.startswith("bitwise_") and dtype in ("float32", "bfloat16"):
        pytest.skip("the bitwise ops take no floats (refusal tested on the CPU and above)")
    m = rand_array(rng, dtype, (30, 40), small=True)
    if name in ROUNDING and m.dtype.kind in "iu":
        m[m == 0] = 3
    M, C = cuda_from(m), db.from_numpy(m)
    for view_a, view_b in [(lambda t: t, lambda t: t[0]), (lambda t: t[::2, ::2], lambda t: t[1::2, 1::2]),
                           (lambda t: t[:, :30].T, lambda t: t[:30, :30]), (lambda t: t[:, :1], lambda t: t[0])]:
        got = getattr(db, name)(view_a(M), view_b(M))
        close(got, getattr(db, name)(view_a(C), view_b(C)))


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_in_place_on_torch_memory_shows_in_torch(tcuda, name):
    x = tcuda.rand(40_003, device="cuda", dtype=tcuda.float32) + 0.5
    want = getattr(tcuda, name)(x)
    t = db.from_dlpack(x)
    getattr(t, name + "_")()
    tcuda.cuda.synchronize()
    np.testing.assert_allclose(x.cpu().numpy(), want.cpu().numpy(), rtol=4 * EPS["float32"])
    # A strided view in place: only its elements change.
    y = tcuda.rand(9, 8, device="cuda") + 0.5
    before = y.clone()
    getattr(db.from_dlpack(y)[1::2, ::3], name + "_")()
    tcuda.cuda.synchronize()
    expect = before.clone()
    getattr(expect[1::2, ::3], name + "_")()
    np.testing.assert_allclose(y.cpu().numpy(), expect.cpu().numpy(), rtol=4 * EPS["float32"])


def test_mixed_dtype_comparisons_and_casting_sums_on_the_gpu(rng):
    # src/ops/blocks.rs: the operands cast a block at a time, on the device.
    a = rand_array(rng, "int32", (300, 257), small=True)
    b = rand_array(rng, "float64", (257,))
    got = cuda_from(a) < cuda_from(b)
    assert_on_cuda(got)
    assert (values_of(got) == (a < b)).all()
    f = rand_array(rng, "float32", (3, 70_001))
    for dims in (None, 1, 0):
        kw = {} if dims is None else {"dim": dims}
        g = cuda_from(f).sum(**kw, dtype=db.float64)
        np.testing.assert_allclose(values_of(g), f.astype(np.float64).sum(axis=dims), rtol=1e-12)
        assert_on_cuda(g)


@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_rounding_ops_refuse_a_zero_integer_divisor_on_the_gpu(name):
    a = db.tensor([7, -7, 5], dtype=db.int32, device="cuda")
    b = db.tensor([2, 0, 1], dtype=db.int32, device="cuda")
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        getattr(db, name)(a, b)
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        getattr(a, name + "_")(b)
    assert a.cpu().tolist() == [7, -7, 5]  # nothing written
    mn = db.tensor([-2**31, -2**31], dtype=db.int32, device="cuda")
    neg1 = db.tensor([-1, 2], dtype=db.int32, device="cuda")
    assert getattr(db, name)(mn, neg1).cpu().tolist() == getattr(db, name)(mn.cpu(), neg1.cpu()).tolist()
