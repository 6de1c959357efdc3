"""Reductions over every layout the CPU kernels take apart (contiguous runs,
rows of columns, gathered strided runs, negative and zero strides, long runs
split across threads), against torch and NumPy; and the accuracy of float
sums on adversarial data against exact references (at least as accurate as
NumPy's pairwise summation)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import dlbridge as db


def layouts(shape, seed=0):
    """(name, NumPy array, dlbridge tensor) over the same memory, for views
    of several layouts of `shape`."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal([s * 2 for s in shape]).astype(np.float32)
    out = []
    a = np.ascontiguousarray(base[tuple(slice(0, s) for s in shape)])
    out.append(("contiguous", a))
    out.append(("strided", base[tuple(slice(0, 2 * s, 2) for s in shape)]))
    out.append(("flipped", base[tuple(slice(s - 1, None, -1) for s in shape)]))
    perm = tuple(reversed(range(len(shape))))
    out.append(("transposed", np.ascontiguousarray(a.transpose(perm)).transpose(perm)))
    return [(name, v, db.from_numpy(v)) for name, v in out]


DIMS_3D = [0, 1, 2, (0, 1), (0, 2), (1, 2), (0, 1, 2), None]


@pytest.mark.parametrize("dims", DIMS_3D, ids=str)
def test_sums_and_extremes_over_3d_layouts_match_numpy(dims):
    for name, v, t in layouts((6, 5, 300)):
        want = v.astype(np.float64).sum(axis=dims)
        got = t.sum(dims) if dims is not None else t.sum()
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-4, err_msg=name)
        got = t.mean(dims) if dims is not None else t.mean()
        np.testing.assert_allclose(got.numpy(), v.astype(np.float64).mean(axis=dims), rtol=1e-5, atol=1e-5)
        got = t.amax(dims) if dims is not None else t.amax()
        np.testing.assert_array_equal(got.numpy(), v.max(axis=dims), err_msg=name)
        got = t.amin(dims) if dims is not None else t.amin()
        np.testing.assert_array_equal(got.numpy(), v.min(axis=dims), err_msg=name)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_max_min_with_indices_over_layouts_match_torch(dim):
    for name, v, t in layouts((7, 6, 300), seed=1):
        # Ties everywhere: the first position must win.
        v = np.round(v * 2).astype(np.float32)
        t = db.from_numpy(v)
        for op in ("max", "min"):
            values, idx = getattr(t, op)(dim)
            tv, ti = getattr(torch.from_numpy(v.copy()), op)(dim)
            np.testing.assert_array_equal(values.numpy(), tv.numpy(), err_msg=f"{name} {op}")
            np.testing.assert_array_equal(idx.numpy(), ti.numpy(), err_msg=f"{name} {op}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(1,), (17,), (1000, 3), (3, 1000), (70, 80), (5, 4, 600)], ids=str)
def test_every_dtype_and_dim_matches_torch(dtype, shape):
    g = torch.Generator().manual_seed(5)
    if dtype == "bool":
        tt = torch.rand(shape, generator=g) > 0.5
    elif dtype.startswith(("int", "uint")):
        tt = torch.randint(0, 50, shape, generator=g).to(getattr(torch, dtype))
    else:
        tt = torch.randn(shape, generator=g).to(getattr(torch, dtype))
    t = db.from_dlpack(tt)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in ("float16", "bfloat16") else dict(rtol=1e-5, atol=1e-5)
    for dims in [None] + [d for k in range(1, len(shape) + 1) for d in itertools.combinations(range(len(shape)), k)]:
        args = () if dims is None else (dims,)
        want = tt.sum(*args).double() if dtype not in ("float16", "bfloat16") else tt.double().sum(*args)
        np.testing.assert_allclose(torch.from_dlpack(t.sum(*args)).double().numpy(), want.numpy(), **tol)
        if dtype != "bool":
            for op in ("amax", "amin"):
                np.testing.assert_array_equal(torch.from_dlpack(getattr(t, op)(*args)).double().numpy(),
                                              getattr(tt, op)(*args).double().numpy())
    if dtype != "bool":
        for d in range(len(shape)):
            for op in ("max", "min"):
                values, idx = getattr(t, op)(d)
                tv, ti = getattr(tt, op)(d)
                assert torch.equal(torch.from_dlpack(values), tv)
                assert torch.equal(torch.from_dlpack(idx), ti)


def test_zero_and_negative_strides_and_empty_reductions():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = db.from_numpy(a)
    e = t[0:1].expand(5, 4)
    assert e.sum(0).tolist() == [0.0, 5.0, 10.0, 15.0]
    assert e.sum().item() == 30.0
    assert db.from_numpy(a[::-1, ::-1]).max(1)[1].tolist() == [0, 0, 0]
    assert db.from_numpy(a[::-1]).sum(0).tolist() == a.sum(0).tolist()
    assert t[:, :0].sum(1).tolist() == [0.0, 0.0, 0.0]
    assert math.isnan(t[:, :0].mean(1)[0].item())


def test_nan_wins_everywhere_with_its_first_position():
    for n in (5, 100, 300_000):
        a = np.ones(n, np.float32)
        a[n // 3] = np.nan
        a[n // 2] = np.nan
        t = db.from_numpy(a)
        v, i = t.max(0)
        assert math.isnan(v.item()) and i.item() == n // 3
        assert math.isnan(t.amin().item())
        m = db.from_numpy(np.stack([a, a]).T.copy())  # (n, 2): reduced over rows
        v, i = m.min(0)
        assert i.tolist() == [n // 3, n // 3]


def test_long_runs_split_across_threads_are_exact():
    a = np.arange(3_000_001, dtype=np.int64)
    assert db.from_numpy(a).sum().item() == int(a.sum())
    v, i = db.from_numpy(a).max(0)
    assert (v.item(), i.item()) == (3_000_000, 3_000_000)
    b = np.full(2_000_003, 7, np.int32)
    b[1_500_000] = 9
    b[1_900_000] = 9
    assert db.from_numpy(b).max(0)[1].item() == 1_500_000


# ------------------------------------------------------------------- accuracy


def exact_sum(a) -> Fraction:
    return sum((Fraction(float(x)) for x in a), Fraction(0))


def error(got, exact) -> float:
    return abs(Fraction(float(got)) - exact) / max(abs(exact), Fraction(1, 10**300))


def lanes_total(acc: np.ndarray) -> float:
    """The lanes halved as a tree (`lanes_total` in src/cpu/reduce_run.rs)."""
    acc = acc.astype(np.float64)
    w = len(acc)
    while w > 1:
        w //= 2
        acc[:w] += acc[w : 2 * w]
    return float(acc[0])


def float32_lanes_sum(x: np.ndarray) -> float:
    """dlbridge's sum of a float32 (or widened float16/bfloat16) run, step for
    step: halves past 2^16 elements cut at multiples of 512; 4, 16 or 64
    float32 lanes (4 below 64 elements, 64 from 4096, else 16), each adding
    8 chunks before its float64 lane takes the sum;
    the float64 lanes halved as a tree; the tail in 4 float64 lanes, then
    one by one."""
    x = np.asarray(x, np.float32)
    n = len(x)
    if n >= 1 << 16:
        mid = n // 2 // 512 * 512
        return float32_lanes_sum(x[:mid]) + float32_lanes_sum(x[mid:])
    lanes = 4 if n < 64 else 16 if n < 4096 else 64
    body = n - n % lanes
    chunks = x[:body].reshape(-1, lanes)
    wide = np.zeros(lanes)
    for b0 in range(0, len(chunks), 8):
        acc = np.zeros(lanes, np.float32)
        for c in chunks[b0 : b0 + 8]:
            acc = acc + c  # float32 + float32: rounded to float32
        wide += acc.astype(np.float64)
    tail = x[body:].astype(np.float64)
    b4 = len(tail) - len(tail) % 4
    acc4 = np.zeros(4)
    for c in tail[:b4].reshape(-1, 4):
        acc4 += c
    rest = 0.0
    for v in tail[b4:]:
        rest += v
    return lanes_total(wide) + (lanes_total(acc4) + rest)


def float32_column_sums(m: np.ndarray) -> np.ndarray:
    """dlbridge's sums down the rows of `m` (one reduced dimension): each
    column adds 8 rows in float32, then its float64 accumulator takes them."""
    acc = np.zeros(m.shape[1])
    for r0 in range(0, m.shape[0], 8):
        s = np.zeros(m.shape[1], np.float32)
        for row in m[r0 : r0 + 8].astype(np.float32):
            s = s + row
        acc += s.astype(np.float64)
    return acc


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_narrow_float_sums_follow_their_documented_order(dtype):
    """float32, float16 and bfloat16 sums, bit for bit, against the order written out
    in Python: runs of every length through the lane tiers, the flushes of
    8 chunks, the tails and the halves of long runs; runs along dim 1; and
    columns down rows (8 rows in float32 at a time). Values of very
    different magnitudes, so any other order rounds differently."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    rng = np.random.default_rng(7)
    lengths = [*range(1, 80), 255, 256, 257, 511, 512, 513, 1000, 4095, 4096, 4097, 65_535, 65_536, 70_001, 300_000]
    for n in lengths:
        x = (rng.standard_normal(n) * 2.0 ** rng.integers(-8, 8, n)).astype(dtype)
        want = np.asarray(float32_lanes_sum(x.astype(np.float32))).astype(dtype)
        assert db.from_numpy(x).sum().item() == float(want), n
    m = (rng.standard_normal((5, 300)) * 2.0 ** rng.integers(-8, 8, (5, 300))).astype(dtype)
    rows = db.from_numpy(m).sum(1).numpy()
    want = np.array([float32_lanes_sum(r.astype(np.float32)) for r in m]).astype(dtype)
    np.testing.assert_array_equal(rows, want)
    for r in (1, 7, 8, 9, 17, 40):
        for c in (3, 64, 70, 300):
            m = (rng.standard_normal((r, c)) * 2.0 ** rng.integers(-8, 8, (r, c))).astype(dtype)
            want = float32_column_sums(m).astype(dtype)
            np.testing.assert_array_equal(db.from_numpy(m).sum(0).numpy(), want, err_msg=f"{r}x{c}")


def test_float32_sums_of_constants_err_less_than_numpy():
    """Ten million copies of one float32 value, the classic drift of float32
    accumulation: NumPy's pairwise sum (8 accumulators of 16, then a float32
    tree) and dlbridge's (lanes of 8 additions, then float64) are both within
    NumPy's bound, and over many values dlbridge's error is the smaller on
    average; `sum(dtype=float64)` is exact here (44 bits suffice)."""
    rng = np.random.default_rng(3)
    n = 10**7
    ours_total = numpy_total = 0.0
    for v in [0.1, 0.3, 0.7, 1 / 3, 0.01, *rng.random(5)]:
        a = np.full(n, v, np.float32)
        exact = float(np.float32(v)) * n  # exact in float64
        ours = db.from_numpy(a).sum().item()
        theirs = float(a.sum())
        bound = (16 + 3 + math.log2(n / 128)) * 2.0**-24 * exact
        assert abs(ours - exact) <= bound and abs(theirs - exact) <= bound, v
        ours_total += abs(ours - exact)
        numpy_total += abs(theirs - exact)
        assert db.from_numpy(a).sum(dtype=db.float64).item() == exact, v
    assert ours_total < numpy_total, (ours_total, numpy_total)
    a = np.full(n, 0.1, np.float32)
    assert db.from_numpy(a).mean().item() == pytest.approx(float(np.float32(0.1)), rel=1e-7)
    rows = db.from_numpy(a.reshape(1000, 10**4)).sum(1).numpy()
    assert (rows == np.float32(float32_lanes_sum(a[: 10**4]))).all()
    cols = db.from_numpy(a.reshape(10**4, 1000)).sum(0).numpy()
    assert (cols == np.float32(float32_column_sums(a[:10**4].reshape(-1, 1))[0])).all()


@pytest.mark.parametrize("case", ["alternating", "kahan", "growing", "cancelling", "small-after-large"])
def test_float64_sums_are_within_the_pairwise_bound_and_no_worse_than_numpy(case):
    """NumPy's pairwise summation errs by at most about (16 + log2 n) eps
    sum|x|; dlbridge's must stay within that bound, and on the cases where
    rounding does not cancel by chance it must not be worse than NumPy's."""
    rng = np.random.default_rng(11)
    n = 200_000
    if case == "alternating":
        a = np.where(np.arange(n) % 2 == 0, 1e16, 1.0)
    elif case == "kahan":
        a = np.tile([1.0, 1e100, 1.0, -1e100], n // 4)
    elif case == "growing":
        a = np.geomspace(1e-8, 1e8, n) * rng.choice([1, -1], n)
    elif case == "small-after-large":
        a = np.concatenate([[1e16], np.full(n, 1.0)])
    else:
        x = rng.standard_normal(n // 2) * 1e10
        a = rng.permutation(np.concatenate([x, -x, rng.standard_normal(10)]))
    exact = exact_sum(a)
    ours = Fraction(db.from_numpy(a).sum().item())
    bound = (16 + math.log2(len(a))) * np.finfo(np.float64).eps * float(np.abs(a).sum())
    assert abs(ours - exact) <= Fraction(bound)
    if case != "cancelling":
        assert abs(ours - exact) <= abs(Fraction(float(np.sum(a))) - exact)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_narrow_float_sums_are_closer_to_exact_than_numpy_or_torch(dtype):
    rng = np.random.default_rng(2)
    n = 30_001 if dtype == "float16" else 1_000_003  # float16 holds sums below 65504
    x = (rng.random(n) + 1).astype(np.float32)
    tt = torch.from_numpy(x).to(getattr(torch, dtype))
    exact = exact_sum(tt.double().numpy())
    ours = torch.from_dlpack(db.from_dlpack(tt).sum()).item()
    theirs = tt.sum().item()
    assert error(ours, exact) <= error(theirs, exact) + 1e-12
    if dtype == "float32":
        assert error(ours, exact) <= error(np.sum(x), exact) + 1e-12


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"])
def test_runs_and_rows_of_every_short_length_match_torch(dtype):
    """Every length from 1 to 70 (the lanes' chunks, tails and trees), ties,
    NaN first, middle and last, zeros of both signs and infinities: values
    and first positions as torch's, along contiguous runs and down rows."""
    g = torch.Generator().manual_seed(11)
    floating = dtype.startswith(("float", "bfloat"))
    for n in range(1, 71):
        m = torch.randint(0, 7, (9, n), generator=g).to(getattr(torch, dtype))
        if floating:
            m = m - 3
            m[1, n // 2] = float("nan")
            m[2, 0] = float("nan")
            m[3, n - 1] = float("nan")
            m[4] = 0.0
            m[4, n // 3] = -0.0
            m[5] = float("-inf")
            m[6, n - 1] = float("inf")
        for dim, view in ((1, m), (0, m.T.contiguous())):
            t = db.from_dlpack(view)
            for op in ("max", "min"):
                values, idx = getattr(t, op)(dim)
                tv, ti = getattr(view, op)(dim)
                torch.testing.assert_close(torch.from_dlpack(values), tv, rtol=0, atol=0, equal_nan=True)
                assert torch.equal(torch.from_dlpack(idx), ti), (n, dim, op)
            for op in ("amax", "amin"):
                got = torch.from_dlpack(getattr(t, op)(dim))
                torch.testing.assert_close(got, getattr(view, op)(dim), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64"])
def test_short_runs_in_batches_match_torch(dtype):
    """Short contiguous runs are reduced a batch of 64 outputs a call: more
    outputs than a batch (150, 2 800) over one kept dimension (offsets counted
    directly) and over two that do not collapse (a strided middle dimension,
    offsets walked), with ties and NaN, values and first positions as torch's."""
    g = torch.Generator().manual_seed(5)
    base = torch.randint(-3, 4, (70, 40, 37), generator=g).to(getattr(torch, dtype))
    if dtype.startswith("float"):
        base[1, 2, 5] = float("nan")
        base[3, :, 0] = float("nan")
    for view in (base, base[:3, :50], base[:, ::2], base[::3, 1::3, :20]):
        t = db.from_dlpack(view)
        for op in ("max", "min"):
            values, idx = getattr(t, op)(2)
            tv, ti = getattr(view, op)(2)
            torch.testing.assert_close(torch.from_dlpack(values), tv, rtol=0, atol=0, equal_nan=True)
            assert torch.equal(torch.from_dlpack(idx), ti), (view.shape, op)
        for op in ("amax", "amin"):
            torch.testing.assert_close(
                torch.from_dlpack(getattr(t, op)(2)), getattr(view, op)(2), rtol=0, atol=0, equal_nan=True
            )
        want = view.double().sum(2)
        got = torch.from_dlpack(t.sum(2)).double()
        torch.testing.assert_close(got, want.to(view.dtype).double(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_float_means_divide_the_float32_sum_in_float32(dtype):
    """A float16/bfloat16 mean divides its float32 sum in float32, as torch's
    does (1 + half an ulp + tiny: the sum is exact in float64 and rounds to
    float32 first), along runs and over everything."""
    tiny = 2.0**-24 if dtype == "float16" else 2.0**-40
    row = [1.0, 2.0**-11 if dtype == "float16" else 2.0**-8, tiny]
    m = torch.tensor([row] * 5, dtype=getattr(torch, dtype))
    t = db.from_dlpack(m)
    assert torch.equal(torch.from_dlpack(t.mean(1)), m.mean(1))
    assert torch.equal(torch.from_dlpack(t[:1].mean()), m[:1].mean())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"])
def test_columns_down_rows_of_every_width_match_row_order_sums_and_torch(dtype):
    """Reductions down rows (one reduced dimension, columns contiguous) keep a
    block of columns in registers while the rows pass: widths around that block
    (64 columns) and the 256-column tile, a few row counts, zero-stride rows,
    and NaN in single cells. float64 and integer sums are the row-order float64
    (int64) sums, as NumPy adds down axis 0; float32, float16 and bfloat16 ones
    add 8 rows in float32 at a time, then in float64 (`float32_column_sums`),
    rounded once; extremes equal torch's, NaN winning."""
    rng = np.random.default_rng(11)
    floats = dtype.startswith(("float", "bfloat"))
    for rows, cols in itertools.product((2, 3, 17), (1, 63, 64, 65, 129, 257, 300)):
        if floats:
            tt = torch.from_numpy(rng.standard_normal((rows, cols)) * 100).to(getattr(torch, dtype))
            if rows * cols > 40:
                flat = tt.view(-1)
                flat[int(rng.integers(flat.numel()))] = float("nan")
        else:
            tt = torch.from_numpy(rng.integers(0, 120, (rows, cols))).to(getattr(torch, dtype))
        for name, src in (("rows", tt), ("expanded", tt[:1].expand(rows, cols)),
                          ("3-d", tt.reshape(1, rows, cols).expand(2, rows, cols))):
            t = db.from_dlpack(src)
            dim = src.dim() - 2
            if dtype in ("float32", "float16", "bfloat16"):
                # One column is one run (the kept dimension of 1 drops out).
                column = float32_column_sums if cols > 1 else lambda p: [float32_lanes_sum(p[:, 0])]
                flat = src.float().reshape(-1, rows, cols)
                want = np.stack([column(p.numpy()) for p in flat]).reshape(src.shape[:-2] + (cols,))
            else:
                wide = src.double() if floats else src.long()
                want = np.add.reduce(wide.numpy(), axis=dim)  # row after row
            got = torch.from_dlpack(t.sum(dim))
            want_t = torch.from_numpy(np.asarray(want)).to(got.dtype)
            assert torch.equal(got.isnan(), want_t.isnan()), (name, rows, cols)
            assert torch.equal(got.nan_to_num(), want_t.nan_to_num()), (name, rows, cols)
            for op in ("amax", "amin"):
                got, want_op = torch.from_dlpack(getattr(t, op)(dim)), getattr(src, op)(dim)
                assert torch.equal(got.isnan(), want_op.isnan()), (name, op, rows, cols)
                assert torch.equal(got.nan_to_num(), want_op.nan_to_num()), (name, op, rows, cols)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32"])
def test_sums_along_runs_of_every_length_round_once(dtype):
    """Runs of every length through the lane tiers (4, 16 and 64 lanes, the
    tails, the batched short runs, whole 1024-element leaves and past them):
    float64 sums are NumPy's to the bit; the others are exact here (small
    integers), so equal the float64 sum rounded once."""
    lengths = [*range(1, 300), 511, 1023, 1024, 1025, 2049, 4100]
    for n in lengths:
        m = torch.arange(3 * n, dtype=torch.float64).remainder(7).sub(3).reshape(3, n)
        m = m.to(getattr(torch, dtype))
        t = db.from_dlpack(m)
        got = torch.from_dlpack(t.sum(1))
        if dtype == "float64":
            want = torch.from_numpy(np.sum(m.numpy(), axis=1))
        else:
            want = m.double().sum(1).to(got.dtype)
        assert torch.equal(got, want), (n, got, want)
        assert torch.from_dlpack(t[1].sum()).item() == want[1].item(), n


def bits16(t) -> list:
    return torch.from_dlpack(t).view(torch.int16).tolist()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_float_extremes_by_their_bits_match_float32(dtype):
    """float16/bfloat16 winners found on the bits (order keys, a block of
    4096 at a time): value bits and first positions equal the float32
    reduction's (widening is exact), across block edges, with subnormals,
    infinities, all-negative runs, NaN in a later block, and zeros of both
    signs (the first zero wins a tie, with its sign)."""
    rng = np.random.default_rng(5)
    tiny = 2.0**-20 if dtype == "float16" else 2.0**-130
    for n in (1, 31, 33, 4095, 4096, 4097, 9000, 70_001):
        base = rng.standard_normal(n) * rng.choice([1.0, 1e-3, tiny, 1e3], n)
        cases = {"mixed": base, "negative": -np.abs(base) - tiny}
        if n > 2:
            inf = base.copy()
            inf[n // 2], inf[-1] = np.inf, -np.inf
            cases["inf"] = inf
            nan = base.copy()
            nan[n - 2] = np.nan
            nan[n - 1] = np.nan
            cases["nan"] = nan
        for name, v in cases.items():
            src = torch.from_numpy(v).to(getattr(torch, dtype))
            wide = src.float().numpy()
            t = db.from_dlpack(src)
            for op, arg in (("max", np.argmax), ("min", np.argmin)):
                at = int(np.argmax(np.isnan(wide))) if np.isnan(wide).any() else int(arg(wide))
                want = src[at : at + 1].view(torch.int16).item()
                value, idx = getattr(t, op)(0)
                assert (bits16(value), idx.item()) == (want, at), (n, name, op)
                assert bits16(getattr(t, op)()) == want, (n, name, op)
                assert bits16(getattr(t, "a" + op)()) == want, (n, name, op)
    for n in (3, 5000):
        zeros = torch.zeros(n, dtype=getattr(torch, dtype))
        for first in (0.0, -0.0):
            zeros[0], zeros[n // 2] = first, -first
            t = db.from_dlpack(zeros)
            for op in ("max", "min", "amax", "amin"):
                assert bits16(getattr(t, op)()) == zeros[:1].view(torch.int16).item(), (n, first, op)


def first_winner_bits(m: torch.Tensor, op: str) -> list:
    """Per column of `m` (rows first), the bits of the first NaN, else of
    the first element equal to the column's max or min (so a tie of the two
    zeros keeps the earlier sign): the winner rule, written out."""
    return [b for b, _ in first_winners(m, op)]


def first_winners(m: torch.Tensor, op: str) -> list:
    """(bits, row) of each column's winner, as `first_winner_bits`."""
    wide, bits = m.float(), m.view(torch.int16)
    out = []
    for j in range(m.shape[1]):
        col = wide[:, j]
        nan = torch.isnan(col)
        if nan.any():
            at = int(nan.int().argmax())
        else:
            w = col.max() if op == "amax" else col.min()
            at = int((col == w).int().argmax())
        out.append((bits[at, j].item(), at))
    return out


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_float_extremes_down_rows_by_their_bits(dtype):
    """amax/amin down rows of float16/bfloat16 (order keys in blocks of 64
    and 16 columns, the last columns as a block overlapping the one before,
    fewer than 16 one at a time), and max/min with positions (float32
    buffers of 64 or 256 columns): each column's bits and row are the
    winner rule's,
    with NaNs of both signs and different payloads, zeros of both signs in
    either order, infinities, subnormals, one row and many, and a column
    whose running winner starts as a NaN or a zero."""
    g = torch.Generator().manual_seed(21)
    dt = getattr(torch, dtype)
    tiny = 2.0**-20 if dtype == "float16" else 2.0**-130
    nan_bits = [0x7E00, 0xFE00, 0x7C01 if dtype == "float16" else 0x7F81, 0xFFFF]
    for rows, cols in itertools.product((1, 2, 3, 41), (1, 7, 15, 16, 17, 63, 64, 65, 80, 130)):
        m = torch.randn(rows, cols, generator=g) * torch.tensor([1.0, 1e3, tiny])[torch.randint(0, 3, (rows, cols), generator=g)]
        m = m.to(dt)
        bits = m.view(torch.int16)
        for j in range(cols):
            kind = j % 6
            if kind == 0:  # NaNs with different payloads, later rows
                for k, r in enumerate(range(j % rows, rows, 2)):
                    bits[r, j] = torch.tensor(nan_bits[(j + k) % 4]).to(torch.int16)
            elif kind == 1:  # zeros only, of both signs, in either order
                bits[:, j] = 0
                bits[(j // 6) % rows, j] = -0x8000
            elif kind == 2:  # all negative with zeros: the zeros win a max
                m[:, j] = -m[:, j].abs() - tiny
                m[rows // 2, j] = 0.0 if j % 4 else -0.0
                m[rows - 1, j] = -0.0 if j % 4 else 0.0
            elif kind == 3:
                m[(j // 6) % rows, j] = float("inf")
                m[rows - 1, j] = float("-inf")
        for view in (m, m.flip(1), m.flip(0)):
            t = db.from_dlpack(view)
            for op in ("amax", "amin"):
                got = bits16(getattr(t, op)(0))
                assert got == first_winner_bits(view, op), (rows, cols, op)
                # with positions: row by row through float32 buffers
                values, idx = getattr(t, op[1:])(0)
                got = list(zip(bits16(values), torch.from_dlpack(idx).tolist()))
                assert got == first_winners(view, op), (rows, cols, op)
        if rows > 1:  # 3-D: down the middle dimension of each slab
            three = m.reshape(1, rows, cols).expand(2, rows, cols).contiguous()
            got = bits16(db.from_dlpack(three).amax(1))
            assert got == [first_winner_bits(m, "amax")] * 2, (rows, cols)
