"""The CUDA kernels of comparisons, pow, abs and reductions against dlbridge's CPU backend,
whose semantics (PyTorch's) tests/python/test_compare_reduce.py checks against torch: every
real dtype; tensor, zero-dim and number operands on either side; broadcasting, strided,
transposed and misaligned views; NaN, signed zeros, wrapping integers, negative integer
exponents; empty and zero-dim tensors; reductions over any dims, with keepdim and indices,
and long runs that take the kernels' multi-piece paths. Complex tensors keep PyTorch's
NotImplementedError.

Results must equal the CPU's bit for bit, except float powers (CUDA's powf and pow are
within a few units in the last place of the C library's) and sums of random floats (float64
accumulation: narrower floats within a unit of the float64 sum rounded once, float64 within
the error bound of summation in any order). Reduction data sit on a grid of 1/8, so their float64 sums
are exact in any order and must match exactly too."""

import operator

import numpy as np
import pytest

import dlbridge as db
from conftest import COMPLEX_NAMES, FLOAT_NAMES, INT_NAMES, NP_DTYPE
from .conftest import CUDA_VIEWS, REAL_NAMES, assert_on_cuda, cuda_from, diff, dname, rand_array, values_of

COMPARISONS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
               "ge": operator.ge}
SIGNED = ["int8", "int16", "int32", "int64"]
# Tolerances of float powers by the result's dtype, in units of its epsilon: CUDA's powf and
# pow are within a few units in the last place of the C library's; float16 and bfloat16
# round a float32 power once, so they differ by one unit at most.
POW = {"float16": 2, "bfloat16": 2, "float32": 8, "float64": 4}


# =========================================================================== helpers


def host(x):
    """The CPU twin of an operand: a tensor copied to the host, anything else unchanged."""
    return x.cpu() if isinstance(x, db.Tensor) else x


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def diff_tensor(got, want, rtol_eps=0, exact_bits=False, nan_bits=False):
    """None when the CUDA tensor `got` holds the CPU tensor `want`'s values (same dtype and
    shape; NaN matches NaN), else what differs. exact_bits: floats bit for bit, so the sign
    of a zero counts; nan_bits: a NaN's sign and payload too (for results that are input
    elements, or their bits: max, min, abs)."""
    if not isinstance(got, db.Tensor) or not got.is_cuda:
        return f"result {got!r} is not a CUDA tensor"
    if got.dtype is not want.dtype:
        return f"dtype {got.dtype} != the CPU's {want.dtype}"
    problem = diff(got, values_of(want), rtol_eps)
    if problem or not exact_bits:
        return problem
    g, w = values_of(got), values_of(want)
    if g.dtype.kind in "biu":
        return None
    bad = bits(g) != bits(w)
    if not nan_bits:
        with np.errstate(invalid="ignore"):
            bad &= ~(np.isnan(g.astype(np.float64)) & np.isnan(w.astype(np.float64)))
    if bad.any():
        i = np.argwhere(bad)[0]
        return f"{int(bad.sum())} differ in their bits, e.g. at {i.tolist()}: {g[tuple(i)]!r} != {w[tuple(i)]!r}"
    return None


def like_cpu(f, *operands, rtol_eps=0, exact_bits=False, nan_bits=False):
    """f(*operands) with CUDA tensors against f of their CPU copies: None, or what differs.
    Where the CPU raises, CUDA must raise the same exception class. rtol_eps may be a dict
    by the result's dtype name."""
    try:
        want = f(*(host(x) for x in operands))
    except Exception as e:  # noqa: BLE001 - compared with CUDA's below
        try:
            f(*operands)
        except Exception as g:  # noqa: BLE001
            return None if type(g) is type(e) else f"raised {type(g).__name__}: {g}; the CPU {type(e).__name__}: {e}"
        return f"no error; the CPU raised {type(e).__name__}: {e}"
    try:
        got = f(*operands)
    except Exception as e:  # noqa: BLE001 - reported
        return f"raised {type(e).__name__}: {e}"
    if isinstance(rtol_eps, dict):
        rtol_eps = rtol_eps.get(dname((want[0] if isinstance(want, tuple) else want).dtype), 0)
    if isinstance(want, tuple):  # max(dim) and min(dim): (values, indices)
        return (diff_tensor(got[0], want[0], rtol_eps, exact_bits, nan_bits) or
                diff_tensor(got[1], want[1]) or
                (None if type(got).__name__ == type(want).__name__ else f"{type(got)} != {type(want)}"))
    return diff_tensor(got, want, rtol_eps, exact_bits, nan_bits)


def special_values(name):
    """Edge values of a dtype: extremes, 0, +-1, and for floats +-0, +-inf and NaN."""
    dt = NP_DTYPE[name]
    if name == "bool":
        return np.array([False, True])
    if name in FLOAT_NAMES:
        return np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-3]).astype(dt)
    info = np.iinfo(dt)
    vals = [0, 1, 2, 7, int(info.max), int(info.max) - 1]
    if info.min < 0:
        vals += [-1, -2, int(info.min), int(info.min) + 1]
    return np.array(vals, dtype=dt)


def with_specials(rng, name, n):
    """n random values of a dtype, starting with its special values."""
    sv = special_values(name)
    return np.concatenate([sv, rand_array(rng, name, (max(n - sv.size, 0),))]).astype(NP_DTYPE[name])


def grid_data(rng, name, shape):
    """Values whose float64 sums are exact in any order (floats on a grid of 1/8, signed
    zeros included, many ties); integers across their range, so sums wrap."""
    if name in FLOAT_NAMES:
        v = np.asarray(np.round(rng.standard_normal(shape) * 64 * 8) / 8)
        v[rng.random(shape) < 0.1] = 3.0
        v[rng.random(shape) < 0.05] = -0.0
        return v.astype(NP_DTYPE[name])
    return rand_array(rng, name, shape)


def assert_no_problems(problems):
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


# =========================================================================== comparisons


@pytest.mark.parametrize("name", REAL_NAMES)
def test_comparisons_every_dtype_and_operand_kind(name, rng):
    """tensor op tensor, op a zero-dim tensor (on CUDA and on the CPU), op numbers of each
    kind on either side, broadcast column against row; NaN, infinities and extremes."""
    xa = with_specials(rng, name, 40)
    ya = np.concatenate([special_values(name)[::-1], rand_array(rng, name, (40,))])[:40].astype(NP_DTYPE[name])
    x, y = cuda_from(xa), cuda_from(ya)
    col, row = cuda_from(xa[:9].reshape(9, 1)), cuda_from(ya[:7])
    zero_d = cuda_from(xa[3])
    operands = {"tensor": (x, y), "broadcast": (col, row), "0-d": (x, zero_d), "cpu 0-d": (x, db.tensor(xa[2].item())),
                "strided": (x[::2], y[1::2]), "transposed": (col.expand(9, 7).T, row.reshape(7, 1))}
    for number in (0, 1, -1, 2, 2.5, -0.0, float("nan"), float("inf"), True, False, 300, -129, 2**40):
        operands[f"number {number!r}"] = (x, number)
        operands[f"{number!r} on the left"] = (number, x)
    problems = {}
    for kind, (p, q) in operands.items():
        for opname, op in COMPARISONS.items():
            problems[f"{kind} {opname}"] = like_cpu(op, p, q)
    for other in ("int32", "float64", "uint8", "bool"):  # promotion before the kernel
        z = cuda_from(with_specials(rng, other, 40))
        for opname, op in COMPARISONS.items():
            problems[f"vs {other} {opname}"] = like_cpu(op, x, z)
    assert_no_problems(problems)


@pytest.mark.parametrize("opname", COMPARISONS)
def test_named_comparisons_views_empty_and_zero_d(opname, rng):
    problems = {}
    for name in ("float32", "bfloat16", "int64", "uint16"):
        a = grid_data(rng, name, (12, 8))
        c, other = cuda_from(a), cuda_from(grid_data(rng, name, (12, 8)))
        for vname, (view, _) in CUDA_VIEWS.items():
            v = view(c)
            problems[f"{name} {vname} method"] = like_cpu(lambda s, t: getattr(s, opname)(t), v, view(other))
            problems[f"{name} {vname} function"] = like_cpu(lambda s: getattr(db, opname)(s, 3), v)
        e = db.empty((0, 3), dtype=getattr(db, name), device="cuda")
        problems[f"{name} empty"] = like_cpu(COMPARISONS[opname], e, cuda_from(a[0, :3]))
        problems[f"{name} 0-d"] = like_cpu(COMPARISONS[opname], cuda_from(a[0, 0]), cuda_from(a[1, 1]))
    assert_no_problems(problems)


def test_large_comparison_into_bool(rng):
    a = rng.standard_normal((513, 1025)).astype(np.float32)
    b = a[::-1].copy()
    b[::7, ::5] = np.nan
    t, u = cuda_from(a), cuda_from(b)
    r = t < u
    assert_on_cuda(r)
    assert r.dtype is db.bool and np.array_equal(values_of(r), a < b)
    assert np.array_equal(values_of(t.T >= u.T), (a.T >= b.T))
    assert np.array_equal(values_of(u != u), np.isnan(b))


# =========================================================================== pow


def pow_operands(rng, name, n=64):
    """Bases and exponents of a dtype: negative integer exponents, bases 0 and +-1, powers
    that wrap; for floats negative bases with integral and fractional exponents."""
    dt = NP_DTYPE[name]
    if name == "bool":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    if name in FLOAT_NAMES:
        base = rng.standard_normal(n) * 4
        exp = np.where(rng.random(n) < 0.5, rng.integers(-3, 4, n), rng.uniform(-3, 3, n))
        base[:6], exp[:6] = [0.0, -0.0, 1.0, -2.0, np.nan, np.inf], [-1.0, 3.0, np.nan, 0.5, 0.0, -2.0]
        return base.astype(dt), exp.astype(dt)
    signed = np.iinfo(dt).min < 0
    base = rng.integers(-4 if signed else 0, 7, n)
    exp = rng.integers(-3 if signed else 0, 13, n)
    exp[::9] = rng.integers(40, 70, exp[::9].size)  # wraps
    base[:4] = [1, -1 if signed else 1, 0, 2]
    exp[:4] = [-3 if signed else 3, -5 if signed else 5, -1 if signed else 1, 63]
    return base.astype(dt), exp.astype(dt)


@pytest.mark.parametrize("name", REAL_NAMES)
def test_pow_every_dtype_and_operand_kind(name, rng):
    ba, ea = pow_operands(rng, name)
    b, e = cuda_from(ba), cuda_from(ea)
    operands = {"tensor": (b, e), "0-d exponent": (b, cuda_from(ea[5])), "0-d base": (cuda_from(ba[7]), e),
                "broadcast": (b[:8].reshape(8, 1), e[:5]), "strided": (b[::2], e[1::2]),
                "misaligned": (b[1:], e[:-1]), "empty": (b[:0], e[:0])}
    for number in (0, 1, 2, 3, 13, -1, -2, 0.5, 2.5, -1.5, True, False):
        operands[f"** {number!r}"] = (b, number)
        operands[f"{number!r} **"] = (number, e)
    problems = {k: like_cpu(operator.pow, p, q, rtol_eps=POW) for k, (p, q) in operands.items()}
    for other in ("int64", "float32", "float64", "uint8"):  # promotion before the kernel
        oa, _ = pow_operands(rng, other)
        problems[f"** {other}"] = like_cpu(operator.pow, b, cuda_from(oa), rtol_eps=POW)
        problems[f"{other} **"] = like_cpu(operator.pow, cuda_from(np.abs(oa)), e, rtol_eps=POW)
    assert_no_problems(problems)


@pytest.mark.parametrize("name", [n for n in REAL_NAMES if n != "bool"])
def test_pow_in_place_and_named_forms(name, rng):
    ba, ea = pow_operands(rng, name, 48)
    problems = {}

    def in_place(x, y):
        x = x.clone()
        x.pow_(y)
        return x

    def operator_form(x, y):
        x = x.clone()
        x **= y
        return x

    def into_view(x, y):
        x = x.clone().reshape(6, 8)
        x[:, ::2].pow_(y)  # the odd columns keep their values
        return x

    b, e = cuda_from(ba), cuda_from(ea)
    problems["pow_"] = like_cpu(in_place, b, e, rtol_eps=POW)
    problems["**= 2"] = like_cpu(operator_form, b, 2, rtol_eps=POW)
    problems["view pow_"] = like_cpu(into_view, b, cuda_from(ea[:4]), rtol_eps=POW)
    problems["db.pow"] = like_cpu(db.pow, b, e, rtol_eps=POW)
    problems["method"] = like_cpu(lambda x, y: x.pow(y), b, 3, rtol_eps=POW)
    assert_no_problems(problems)


def test_integer_pow_rules_on_cuda():
    b = db.tensor([2, -1, 1, -1, 0, 3], device="cuda")
    e = db.tensor([-1, -3, -2, -2, 5, 40], device="cuda")
    assert (b ** e).tolist() == [0, -1, 1, 1, 0, 3**40 % 2**64 - (2**64 if 3**40 % 2**64 >= 2**63 else 0)]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        b ** -1
    assert (db.tensor([-128], dtype=db.int8, device="cuda") ** 3).tolist() == [0]
    assert (db.tensor([True, False], device="cuda") ** 2).dtype is db.int64


def test_large_float_pow(rng):
    a = np.abs(rng.standard_normal(1_000_003)).astype(np.float32) + 0.5
    t = cuda_from(a)
    assert like_cpu(lambda x: x ** 2.5, t, rtol_eps=POW) is None
    assert like_cpu(lambda x: x[1:] ** x[:-1], t, rtol_eps=POW) is None


# =========================================================================== abs


@pytest.mark.parametrize("name", [n for n in REAL_NAMES if n != "bool"])
def test_abs_every_dtype_bit_for_bit(name, rng):
    a = with_specials(rng, name, 300)
    if name in FLOAT_NAMES:  # a NaN with its sign bit set loses it too
        b = bits(a)
        b[-1] = bits(np.array([np.nan], dtype=a.dtype))[0] | (1 << (8 * a.itemsize - 1))
        a = b.view(a.dtype)
    c = cuda_from(a)
    problems = {}
    for vname, f in {"abs()": abs, "method": lambda t: t.abs(), "db.abs": db.abs, "strided": lambda t: abs(t[::3]),
                     "misaligned": lambda t: abs(t[1:]), "2-d transposed": lambda t: abs(t[:300].reshape(20, 15).T),
                     "empty": lambda t: abs(t[:0]), "0-d": lambda t: abs(t[4])}.items():
        problems[vname] = like_cpu(f, c, exact_bits=True, nan_bits=True)
    assert_no_problems(problems)
    assert abs(c).dtype is c.dtype


def test_abs_wraps_and_refuses_bool():
    for name in SIGNED:
        lo = int(np.iinfo(NP_DTYPE[name]).min)
        assert db.tensor([lo, -3, 3], dtype=getattr(db, name), device="cuda").abs().tolist() == [lo, 3, 3]
    with pytest.raises(NotImplementedError, match='"abs_cuda" not implemented for \'Bool\''):
        db.tensor([True], device="cuda").abs()


# =========================================================================== reductions


EXTREMES = ("amax", "amin", "max", "min")  # their results are input elements: NaN bits too


def reductions(name):
    """(name, f(tensor, dim, keepdim)) for the reductions of a dtype; dim None: all."""
    def call(method):
        def f(t, dim, keepdim):
            m = getattr(t, method)
            if dim is None:
                return m(keepdim=True) if keepdim and method in ("amax", "amin") else m()
            return m(dim, keepdim=keepdim)
        return f
    names = ["sum", "amax", "amin", "max", "min"] + (["mean"] if name in FLOAT_NAMES else [])
    return {m: call(m) for m in names}


DIMS = [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1), (0, 1, 2), ()]


@pytest.mark.parametrize("name", REAL_NAMES)
def test_reductions_over_any_dims_every_dtype(name, rng):
    """Sums, means, amax/amin and max/min (values and indices) over every dims of a 3-d
    tensor, a strided one and one with NaN; keepdim or not."""
    a = grid_data(rng, name, (6, 10, 9))
    sources = {"contiguous": cuda_from(a[:, :5, :4]), "strided": cuda_from(a)[::2, 1::2, ::2],
               "permuted": cuda_from(a).permute(2, 0, 1)[:4, :3, :5]}
    if name in FLOAT_NAMES:
        n = a.copy()
        n[rng.random(n.shape) < 0.05] = np.nan
        sources["nan"] = cuda_from(n)[:, :5, :4]
    problems = {}
    for sname, t in sources.items():
        for rname, f in reductions(name).items():
            for dim in DIMS:
                if rname in ("max", "min") and not (dim is None or isinstance(dim, int)):
                    continue
                for keepdim in (False, True):
                    problems[f"{sname} {rname} dim={dim} keepdim={keepdim}"] = like_cpu(
                        lambda x, f=f, dim=dim, keepdim=keepdim: f(x, dim, keepdim), t, exact_bits=True,
                        nan_bits=rname in EXTREMES)
    assert_no_problems(problems)


@pytest.mark.parametrize("name", REAL_NAMES)
def test_reductions_of_views_empty_and_zero_d(name, rng):
    c = cuda_from(grid_data(rng, name, (12, 8)))
    problems = {}
    for vname, (view, _) in CUDA_VIEWS.items():
        v = view(c)
        for rname, f in reductions(name).items():
            for dim in [None] + list(range(v.ndim)):
                problems[f"{vname} {rname} dim={dim}"] = like_cpu(lambda x, f=f, dim=dim: f(x, dim, False), v,
                                                                  exact_bits=True, nan_bits=rname in EXTREMES)
    z = cuda_from(grid_data(rng, name, ()))
    e = db.empty((4, 0, 3), dtype=getattr(db, name), device="cuda")
    for rname, f in reductions(name).items():
        problems[f"0-d {rname}"] = like_cpu(lambda x, f=f: f(x, None, False), z, exact_bits=True)
        problems[f"0-d {rname} dim=0"] = like_cpu(lambda x, f=f: f(x, 0, True), z, exact_bits=True)
        for dim in (None, 0, 1, 2, (0, 2)):  # max/min of an empty dimension raise, as on the CPU
            if rname in ("max", "min") and not (dim is None or isinstance(dim, int)):
                continue
            problems[f"empty {rname} dim={dim}"] = like_cpu(lambda x, f=f, dim=dim: f(x, dim, False), e)
    if name in INT_NAMES + ["bool"]:  # small values: float sums exact in any order
        s = cuda_from(rand_array(rng, name, (12, 8), small=True))
        problems["sum(dtype=float64)"] = like_cpu(lambda x: x.sum(1, dtype=db.float64), s, exact_bits=True)
        problems["mean(dtype=float32)"] = like_cpu(lambda x: x.mean(0, dtype=db.float32), s, exact_bits=True)
    assert_no_problems(problems)


LONG = [((3, 100_003), 1), ((100_003, 3), 0), ((2, 1_000_003), None), ((5000, 300), 1), ((300, 5000), 0),
        ((40, 70, 50), 1), ((2, 1_000_003), 1), ((1_000_003,), 0)]


@pytest.mark.parametrize("name", ["float32", "bfloat16", "float64", "int64", "uint8", "bool", "float16", "int32"])
def test_long_reductions_take_every_path(name, rng):
    """Runs long enough for 16-byte loads and several pieces per run (then a final pass),
    many short runs, runs across memory, and the full contiguous sum."""
    problems = {}
    for shape, dim in LONG:
        a = grid_data(rng, name, shape)
        t = cuda_from(a)
        for rname, f in reductions(name).items():
            problems[f"{shape} {rname} dim={dim}"] = like_cpu(lambda x, f=f: f(x, dim, False), t, exact_bits=True)
        problems[f"{shape} misaligned sum"] = like_cpu(lambda x: x.reshape(-1)[1:].sum(), t, exact_bits=True)
        if name in FLOAT_NAMES:  # a few NaN: the first one wins, wherever the pieces split
            a.reshape(-1)[rng.integers(0, a.size, 3)] = np.nan
            t = cuda_from(a)
            for rname in EXTREMES:
                problems[f"{shape} NaN {rname} dim={dim}"] = like_cpu(
                    lambda x, f=reductions(name)[rname]: f(x, dim, False), t, exact_bits=True, nan_bits=True)
    assert_no_problems(problems)


@pytest.mark.parametrize("name", [n for n in FLOAT_NAMES if n != "float64"])
def test_sums_of_random_floats_within_rounding(name, rng):
    """Narrower floats accumulate in float64 on the GPU and round once: within a unit in the
    last place of the float64 sum (or mean) rounded to the dtype. The CPU's float32 lanes
    (docs/benchmarks.md) are no reference here: where rows cancel, their rounding exceeds a
    unit of the result, which the CPU tests bound on their own."""
    a = rand_array(rng, name, (64, 20_011))
    t = cuda_from(a)
    wide_a = a.astype(np.float64)
    problems = {}
    for dim in (None, 0, 1):
        total = wide_a.sum(axis=dim)
        n = a.size if dim is None else a.shape[dim]
        for what, f, want in (("sum", lambda x: x.sum() if dim is None else x.sum(dim), total),
                              ("mean", lambda x: x.mean() if dim is None else x.mean(dim), total / n)):
            got = f(t)
            problems[f"{what} dim={dim}"] = (
                f"result {got!r} is not a CUDA tensor" if not got.is_cuda
                else diff(got, np.asarray(want).astype(a.dtype), rtol_eps=1))
    assert_no_problems(problems)


def test_float64_sums_of_random_floats_within_the_error_bound_of_any_order(rng):
    """float64 sums accumulate in float64, on the GPU in another order than on the CPU, so
    they differ from the CPU's and from the exact sum by rounding that can exceed a unit of the
    result where terms cancel. Each must be within the bound of summation in any order,
    (n - 1) * eps * sum|x| of the exact sum (math.fsum): far below one dropped or doubled
    term, whose error would be about 8 here."""
    import math

    a = rand_array(rng, "float64", (64, 20_011))
    t = cuda_from(a)
    eps = np.finfo(np.float64).eps
    problems = {}
    for dim in (None, 0, 1):
        rows = a.reshape(1, -1) if dim is None else np.moveaxis(a, dim, -1)
        exact = np.array([math.fsum(r) for r in rows])
        n = rows.shape[-1]
        bound = (n - 1) * eps * np.abs(rows).sum(axis=-1)
        for what, f, want, tol in (("sum", lambda x: x.sum(), exact, bound),
                                   ("mean", lambda x: x.mean(), exact / n, bound / n + eps * np.abs(exact / n))):
            result = f(t) if dim is None else getattr(t, what)(dim)
            assert_on_cuda(result)
            got = values_of(result).reshape(-1)
            bad = np.flatnonzero(~(np.abs(got - want) <= tol))
            if bad.size:
                i = bad[0]
                problems[f"{what} dim={dim}"] = (f"{bad.size} of {want.size} beyond the bound, e.g. [{i}]: "
                                                 f"got {got[i]!r}, exact {want[i]!r}, bound {tol[i]!r}")
    assert_no_problems(problems)


def test_mean_rounds_the_sum_to_the_dtype_first_as_the_cpu():
    # The CPU backend rounds the sum to the dtype before dividing (cpu/reduce.rs), so
    # float16's mean of 100000 ones is inf there (PyTorch gives 1); the CUDA backend agrees.
    t = db.ones(100_000, dtype=db.float16, device="cuda")
    assert like_cpu(lambda x: x.mean(), t) is None
    assert like_cpu(lambda x: x.reshape(10, 10_000).mean(1), t) is None


def test_max_min_indices_first_nan_and_first_of_equals():
    nan = float("nan")
    data = [[1.0, nan, 5.0, nan], [-0.0, 0.0, -1.0, -1.0], [2.0, 2.0, 2.0, 2.0], [0.0, -0.0, 0.0, -5.0]]
    for name in FLOAT_NAMES:
        t = db.tensor(data, dtype=getattr(db, name), device="cuda")
        for f in (lambda x: x.max(1), lambda x: x.min(1), lambda x: x.max(0), lambda x: x.amax(1),
                  lambda x: x.amin(0), lambda x: x.max(), lambda x: x.min()):
            assert like_cpu(f, t, exact_bits=True, nan_bits=True) is None, name
        r = t.max(1)
        assert r.indices.tolist() == [1, 0, 0, 0]


# =========================================================================== complex


@pytest.mark.parametrize("name", COMPLEX_NAMES)
def test_complex_keeps_pytorchs_not_implemented(name):
    c = db.ones(4, dtype=getattr(db, name), device="cuda")
    kind = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}[name]
    for kernel, f in (("eq", lambda: c == c), ("ne", lambda: c != 1), ("abs", lambda: abs(c)),
                      ("pow", lambda: c ** 2), ("pow", lambda: c ** c), ("sum", lambda: c.sum(0)),
                      ("mean", lambda: c.mean(0)), ("sum", lambda: c.sum())):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}_cuda\" not implemented for '{kind}'"):
            f()
    with pytest.raises(RuntimeError, match="lt_cuda"):
        c < c
    with pytest.raises(NotImplementedError):
        c.amax()
    assert c.tolist() == [1 + 0j] * 4
