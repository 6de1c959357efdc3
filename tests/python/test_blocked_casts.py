"""Ops whose operands must be cast first (`int32 < float64`, `sum(dtype=...)`,
`mean(dtype=...)`, and past 4 blocks `int32 + float64`) cast a block of the
output at a time (src/ops/blocks.rs): the values are torch's, and no
temporary as large as the input is made. The true division of two integer
tensors of one dtype (`int32 / int32`) converts each element as it reads
it, in one pass, on the CPU (`Backend::divide_casting`).

The memory checks run in a fresh process that resets its peak resident size
(`/proc/self/clear_refs`, 5) before the op and reads it (`VmHWM`) after: a
whole-input cast shows there as tens of MB, a block as under one.
"""

import math
import os
import sys
import textwrap

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import run_python

# Past src/ops/blocks.rs's floor (4096 elements), so the outputs span blocks.
SHAPES = [(70000,), (300, 257), (3, 5, 4099), (1, 9000)]
COMPARE_PAIRS = [("int32", "float64"), ("int8", "float16"), ("uint8", "int8"), ("bool", "float32"),
                 ("int64", "float32"), ("float16", "bfloat16")]
OPS = ["lt", "le", "gt", "ge", "eq", "ne"]


def values(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(-3, 4, shape, generator=g).to(getattr(torch, dtype))
    if t.is_floating_point():
        t += torch.rand(shape, generator=g).to(t.dtype).round()  # ties with the integers
        flat = t.view(-1)
        flat[::97] = float("nan")
        flat[5::101] = float("inf")
        flat[7::103] = float("-inf")
    return t


def same(d, t):
    assert d.dtype == getattr(db, str(t.dtype).split(".")[1])
    assert tuple(d.shape) == tuple(t.shape)
    wide = (lambda x: x.double()) if t.dtype == torch.bfloat16 else (lambda x: x)  # NumPy has no bfloat16
    np.testing.assert_array_equal(wide(torch.from_dlpack(d)).numpy(), wide(t).numpy())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("left,right", COMPARE_PAIRS)
def test_mixed_comparisons_match_torch(shape, left, right):
    a, b = values(left, shape, 1), values(right, shape, 2)
    for op in OPS:
        same(getattr(db.from_dlpack(a), op)(db.from_dlpack(b)), getattr(a, op)(b))
        same(getattr(db.from_dlpack(b), op)(db.from_dlpack(a)), getattr(b, op)(a))


@pytest.mark.parametrize("left,right", COMPARE_PAIRS)
def test_mixed_comparisons_broadcast_stride_and_take_numbers(left, right):
    a, b = values(left, (257, 300), 3), values(right, (300,), 4)
    A, B = db.from_dlpack(a), db.from_dlpack(b)
    same(A < B, a < b)                      # a row broadcast down
    same(A.T >= B[:257], a.T >= b[:257])    # a transposed operand: torch's output strides too
    assert (A.T >= B[:257]).stride() == (a.T >= b[:257]).stride()
    same(A[::2, 1::3] != B[1::3], a[::2, 1::3] != b[1::3])
    same(A[:, :1] == B, a[:, :1] == b)      # both sides broadcast
    for number in (0.5, -1, 2.5, True):
        same(A < number, a < number)
        same(A == number, a == number)
    same(A[3, 4] < B, a[3, 4] < b)          # a 0-d tensor with a tensor of another dtype


def test_mixed_comparisons_of_empty_and_zero_dim():
    a, b = torch.zeros(0, 5, dtype=torch.int32), torch.ones(5, dtype=torch.float64)
    same(db.from_dlpack(a) < db.from_dlpack(b), a < b)
    x, y = torch.tensor(3, dtype=torch.int16), torch.tensor(2.5)
    same(db.from_dlpack(x) > db.from_dlpack(y), x > y)


# Operands past 4 blocks of 2^16 elements (src/ops/arith.rs's CAST_BLOCKS_FROM), so
# arithmetic casts its operands a block at a time; the last is below it.
ARITH_SHAPES = [(300001,), (700, 401), (3, 5, 20011), (70001,)]
ARITH_PAIRS = [("int32", "int32"), ("int64", "int64"), ("int32", "float64"), ("float16", "float32"),
               ("bool", "float32"), ("uint8", "int8"), ("bfloat16", "float16")]
ARITH_OPS = ["add", "sub", "mul", "div", "maximum", "minimum"]


def arith(x, op, y):
    if op == "sub" and torch.bool in (getattr(x, "dtype", None), getattr(y, "dtype", None)):
        return None  # refused, with PyTorch's words: tests/python/test_unary_binary_ops.py
    return getattr(x, op)(y)


@pytest.mark.parametrize("shape", ARITH_SHAPES, ids=str)
@pytest.mark.parametrize("left,right", ARITH_PAIRS)
def test_mixed_arithmetic_matches_torch(shape, left, right):
    a, b = values(left, shape, 6), values(right, shape, 7)
    A, B = db.from_dlpack(a), db.from_dlpack(b)
    for op in ARITH_OPS:
        for (x, y), (X, Y) in (((a, b), (A, B)), ((b, a), (B, A))):
            want = arith(x, op, y)
            if want is not None:
                same(arith(X, op, Y), want)


@pytest.mark.parametrize("left,right", ARITH_PAIRS)
def test_mixed_arithmetic_broadcasts_strides_and_takes_numbers(left, right):
    a, b = values(left, (701, 400), 8), values(right, (400,), 9)
    A, B = db.from_dlpack(a), db.from_dlpack(b)
    for op in ("add", "mul", "div"):
        same(arith(A, op, B), arith(a, op, b))                          # a row broadcast down
        got, want = arith(A.T, op, B[:, None]), arith(a.T, op, b[:, None])
        same(got, want)                                                 # a transposed operand
        assert got.stride() == want.stride()                            # torch's output strides
        same(arith(A[::2, 1::3], op, B[1::3]), arith(a[::2, 1::3], op, b[1::3]))
        same(arith(B[4], op, A.T), arith(b[4], op, a.T))                # a 0-d tensor
    if left != "bool":
        for number in (0.5, -3, 2.5, True):
            same(A / number, a / number)
            # torch's `number / a` is `a.reciprocal() * number` (two
            # roundings); dlbridge divides once, as torch's div kernel does.
            same(number / A, torch.tensor(number) / a)
            same(A * number, a * number)
            if number is not True:  # refused for a bool number, as by PyTorch
                same(number - A, number - a)
    c = values(right, (701, 400), 10)
    C = db.from_dlpack(c)
    same(A.T.contiguous() * C.T, a.T.contiguous() * c.T)                # two layouts


INTEGERS = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]


def integers(dtype, shape, seed):
    """Integers over the dtype's whole range, with zeros (x / 0 is +-inf,
    0 / 0 NaN) and, for the 64-bit ones, odd values past 2^24 and 2^53
    (rounded to float32 as the cast rounds them, once: 2^60 + 2^36 + 1
    goes up, where float64 on the way would round it down)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    flat[::7] = 0
    flat[1::11] = rng.integers(0, 5, size=flat[1::11].shape).astype(dtype)
    if info.bits == 64:
        flat[2::13] = (1 << 53) + 1
        flat[3::17] = (1 << 24) + 3
        flat[4::19] = (1 << 60) + (1 << 36) + 1  # through float64 first: rounded twice, down
    return x


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_true_division_converts_as_it_reads(dtype):
    """`a / b` of two integer tensors of one dtype is float32 (PyTorch's
    default float dtype), each operand converted to float32 to nearest and
    then divided: NumPy's `a.astype(float32) / b.astype(float32)` bit for
    bit, and torch's own `a / b` where torch divides that dtype, over
    contiguous, strided, transposed, broadcast and 0-d operands."""
    a, b = integers(dtype, (301, 257), 1), integers(dtype, (301, 257), 2)
    A, B = db.from_numpy(a), db.from_numpy(b)
    cases = [
        (lambda x: x, lambda y: y),                     # contiguous, 77,357 elements
        (lambda x: x[:1, :7], lambda y: y[1:2, :7]),    # short
        (lambda x: x[:300:2, 1::3], lambda y: y[1::2, ::3]),  # strided
        (lambda x: x.T, lambda y: y.T),                 # transposed: the output keeps the layout
        (lambda x: x, lambda y: y[5]),                  # a row broadcast down
        (lambda x: x[:, :1], lambda y: y[:1]),          # both broadcast
        (lambda x: x[3, 4], lambda y: y),               # a 0-d tensor
        (lambda x: x[3, 4], lambda y: y[5, 6]),         # both 0-d
    ]
    with np.errstate(divide="ignore", invalid="ignore"):
        for f, g in cases:
            got = f(A) / g(B)
            assert got.dtype == db.float32
            want = f(a).astype(np.float32) / g(b).astype(np.float32)
            np.testing.assert_array_equal(np.from_dlpack(got), want)
            if dtype in ("uint8", "int8", "int16", "int32", "int64"):
                theirs = f(torch.from_numpy(a)) / g(torch.from_numpy(b))
                same(got, theirs)
                assert got.stride() == theirs.stride()
    empty = db.from_numpy(np.zeros((0, 3), dtype=dtype))
    assert (empty / B[0, :3]).shape == (0, 3)


REDUCE_CASES = [  # shape, dims: outputs in blocks (few reduced) and partial sums (many reduced)
    ((70000,), None), ((300, 257), (1,)), ((300, 257), (0,)), ((3, 5, 4099), (0, 2)),
    ((3, 70001), (1,)), ((70001, 3), (0,)), ((2, 40000, 3), (1,)), ((5, 6, 7), None),
    ((2, 300, 3, 250), (1, 3)), ((300, 2, 250, 3), (0, 2)), ((2, 3, 70001), None),
]


@pytest.mark.parametrize("shape,dims", REDUCE_CASES, ids=str)
@pytest.mark.parametrize("src,dt", [("float32", "float64"), ("int32", "float32"), ("float16", "float32"),
                                    ("float64", "float16"), ("int8", "int64"), ("bool", "int32")])
def test_sums_and_means_with_a_dtype_match_the_whole_cast(shape, dims, src, dt):
    t = values(src, shape, 5).nan_to_num(0.0, 0.0, 0.0) if src.startswith("float") else values(src, shape, 5)
    d = db.from_dlpack(t)
    dbt, tdt = getattr(db, dt), getattr(torch, dt)
    kw = {"dim": tuple(range(len(shape))) if dims is None else dims}
    # The whole cast made first (no cast inside the op) is the reference.
    whole = db.from_dlpack(t.to(tdt))
    for keepdim in (False, True):
        got = d.sum(**kw, keepdim=keepdim, dtype=dbt)
        want = whole.sum(**kw, keepdim=keepdim)
        ref = t.sum(**kw, keepdim=keepdim, dtype=tdt)
        assert got.dtype == dbt and tuple(got.shape) == tuple(ref.shape)
        np.testing.assert_allclose(torch.from_dlpack(got).double().numpy(),
                                   torch.from_dlpack(want).double().numpy(), rtol=2e-3 if "16" in dt else 1e-12)
        if dt.startswith("float"):
            got = d.mean(**kw, keepdim=keepdim, dtype=dbt)
            ref = t.mean(**kw, keepdim=keepdim, dtype=tdt)
            assert got.dtype == dbt and tuple(got.shape) == tuple(ref.shape)
            np.testing.assert_allclose(torch.from_dlpack(got).double().numpy(), ref.double().numpy(),
                                       rtol=2e-3 if "16" in dt else 1e-6, atol=1e-3 if "16" in dt else 1e-9)


def test_outputs_in_blocks_give_the_whole_casts_bits():
    # Few reduced elements per output: each output is computed from its own
    # block exactly as from the whole cast.
    t = torch.randn(3000, 77, dtype=torch.float32)
    d = db.from_dlpack(t)
    for dim in (0, 1):
        got = torch.from_dlpack(d.sum(dim, dtype=db.float64))
        want = torch.from_dlpack(db.from_dlpack(t.double()).sum(dim))
        assert torch.equal(got, want), dim


@pytest.mark.parametrize("src,dt", [("float64", "float32"), ("float16", "float32"), ("float32", "float64")])
def test_a_long_sum_with_a_dtype_rounds_once(src, dt):
    # 10^6 values summed by blocks: the partial sums stay in float64 (the
    # backend's accumulator), so the result is the sum of the cast values
    # rounded about once to `dt`: no rounding of each block's sum to
    # float32, however the data cancel.
    for x in (np.random.default_rng(0).standard_normal(1_000_003),
              np.random.default_rng(1).standard_normal(1_000_003) * 1e3 + 1e4):
        x = x.astype(src)
        cast = x.astype(dt).astype(np.float64)
        exact = math.fsum(cast)
        # Within an ulp of the result dtype (float64: of the float64 sum's
        # pairwise bound), where float32 partials drifted by several.
        ulp = float(np.spacing(np.abs(np.array(exact, dtype=dt))))
        tol = ulp if dt == "float32" else 1e-13 * float(np.abs(cast).sum())
        got = db.from_numpy(x).sum(dtype=getattr(db, dt)).item()
        assert abs(got - exact) <= tol, (got, exact)
        mean = db.from_numpy(x).mean(dtype=getattr(db, dt)).item()
        assert abs(mean - exact / x.size) <= 2 * float(np.spacing(np.abs(np.array(exact / x.size, dtype=dt)))) + \
            (0 if dt == "float32" else tol / x.size), (mean, exact / x.size)


PEAK = textwrap.dedent("""
    import sys, numpy as np, dlbridge as db

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024

    def inputs(n):
        return db.from_numpy(np.arange(n, dtype=np.{src}) % 7), db.from_numpy(np.full(n, 3, dtype=np.{other}))

    # The op once on small inputs (threads, first-call set-up), then on large
    # ones: none of dlbridge's memory is cached yet, so every byte the op
    # takes shows in the peak.
    a, b = inputs(100_000)  # past the threads' threshold: they start here
    r = {op}
    del r
    a, b = inputs({n})
    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    r = {op}
    print(status("VmHWM") - base)
""")


def peak_growth(op, src, other="float64", n=4_000_000):
    # Two threads whatever the machine, so their stacks stay within the slack.
    env = dict(os.environ, DLBRIDGE_NUM_THREADS="2", RAYON_NUM_THREADS="2")
    out = run_python(PEAK.format(op=op, src=src, other=other, n=n), env=env)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def clear_refs_resets_the_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


MEASURABLE = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not clear_refs_resets_the_peak()
    or bool(os.environ.get("DLBRIDGE_ASAN_RUNTIME")),
    reason="the peak resident size is reset through Linux's /proc/self/clear_refs, and the ASan build's "
           "quarantine and redzones would count in it")


@MEASURABLE
@pytest.mark.parametrize("op,src,output_bytes", [
    ("a < b", "int32", 4_000_000),                              # bool output, float64 compare
    ("a + b", "int32", 32_000_000),                             # float64 output, int32 cast to it
    ("a.sum(dtype=db.float64)", "float32", 8),                  # one float64
    ("a.mean(dtype=db.float64)", "float32", 8),
    ("a.view(-1, 2000).sum(1, dtype=db.float64)", "float32", 16_000),
])
def test_casting_ops_make_no_temporary_as_large_as_the_input(op, src, output_bytes):
    # 4 * 10^6 elements: a whole-input cast to float64 is 32 MB; a block
    # is 512 KiB at most.
    grew = peak_growth(op, src)
    assert grew <= output_bytes + 6 * 2**20, f"{op}: peak grew {grew / 2**20:.1f} MiB"


@MEASURABLE
def test_the_peak_measure_sees_a_whole_input_cast():
    # The measure itself: an explicit cast of the input does show.
    assert peak_growth("a.to(db.float64)", "int32") >= 30_000_000
