"""The CUDA kernels against NumPy: elementwise arithmetic (every dtype pair, scalars,
broadcasting, odd sizes, misaligned and strided views, in place), neg, fill_, copy_,
contiguous and clone, casts, sum and mean, rand."""

import operator

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import COMPLEX_NAMES, DTYPE_NAMES, FLOAT_NAMES, INT_NAMES, NP_DTYPE
from .conftest import (CUDA0, DEV, EPS, FILL, NUMERIC_NAMES, REAL_NAMES, assert_on_cuda, assert_values, cuda_from, diff,
                       dname, equal_mask, is_float, rand_array, values_of, wide)


TINY = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 5e-324}

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv}
METHODS = {"add": "add_", "sub": "sub_", "mul": "mul_", "truediv": "div_"}
INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "truediv": operator.itruediv}


# =========================================================================== helpers


def nonzero(a):
    """a with its zeros replaced by ones (divisors)."""
    a = np.array(a, copy=True)
    a[wide(a) == 0] = 1
    return a


def sentinel(name):
    if name in FLOAT_NAMES or name in COMPLEX_NAMES:
        return float("nan")
    if name == "bool":
        return True
    return int(np.iinfo(NP_DTYPE[name]).max) - 5


def is_sentinel(values, name):
    values = np.asarray(values)
    if name in FLOAT_NAMES or name in COMPLEX_NAMES:
        return bool(np.isnan(wide(values)).all())
    return bool((values == sentinel(name)).all())


def poison_pool(nbytes):
    """Frees a NaN-filled block, so a new result that reuses it and skips elements shows NaN."""
    p = db.full((nbytes // 4 + 64,), float("nan"), dtype=db.float32, device=DEV)
    db.cuda.synchronize()
    del p


def diff_any(got, candidates):
    """Like diff, each element may match any of the candidate arrays."""
    g = values_of(got)
    if g.shape != candidates[0].shape or g.dtype != candidates[0].dtype:
        return f"{g.dtype}{g.shape} != expected {candidates[0].dtype}{candidates[0].shape}"
    ok = np.zeros(g.shape, dtype=bool)
    for c in candidates:
        ok |= equal_mask(g, c)
    if not ok.all():
        idx = np.argwhere(~ok)[:5]
        return (f"{int((~ok).sum())} of {ok.size} differ, e.g. at {idx.tolist()}: got "
                f"{[g[tuple(i)] for i in idx]} expected {[candidates[0][tuple(i)] for i in idx]}")
    return None


def torch_like(x):
    """A CPU torch stand-in for a dlbridge operand, for torch.result_type."""
    if isinstance(x, db.Tensor):
        return torch.empty(x.shape, dtype=getattr(torch, dname(x.dtype)))
    return x


def result_name(opname, x, y):
    """The dtype torch gives `x op y`, or None where torch defines none (uint16+ promotion)."""
    try:
        r = dname(torch.result_type(torch_like(x), torch_like(y)))
    except RuntimeError as e:
        if "Promotion for uint16, uint32, uint64" in str(e):
            return None
        raise
    if opname == "truediv" and r not in FLOAT_NAMES and r not in COMPLEX_NAMES:
        return "float32"  # true division of integers gives the default float dtype
    return r


def ref_binary(opname, xa, ya, res):
    """xa op ya as torch computes it: array operands converted to the result dtype res, the
    exact result (float64 holds it) rounded once to res; integers wrap like C. Python scalars
    are used as they are (the tests' scalars are exact in every dtype)."""
    rdt, op = NP_DTYPE[res], OPS[opname]
    with np.errstate(all="ignore"):
        if res in FLOAT_NAMES:
            xa, ya = (wide(np.asarray(v).astype(rdt)) if isinstance(v, np.ndarray) else v for v in (xa, ya))
            return np.asarray(op(wide(xa), wide(ya))).astype(rdt)
        return np.asarray(op(np.asarray(xa).astype(rdt), np.asarray(ya).astype(rdt))).astype(rdt)


def neg_ref(a):
    """-a, exact for floats, wrapping for integers."""
    a = np.asarray(a)
    with np.errstate(all="ignore"):
        return (-wide(a)).astype(a.dtype) if is_float(a.dtype) else np.negative(a)


def is_bool_sub(opname, *operands):
    return opname == "sub" and any(
        x is True or x is False or (isinstance(x, db.Tensor) and dname(x.dtype) == "bool") for x in operands)


def check_op(opname, x, y, xa, ya):
    """Runs x op y on the GPU and compares it with NumPy. Returns a problem or None."""
    res = result_name(opname, x, y)
    if res is None or is_bool_sub(opname, x, y):
        return None
    try:
        got = OPS[opname](x, y)
    except Exception as e:  # noqa: BLE001 - reported with the operands
        return f"raised {type(e).__name__}: {e}"
    if not got.is_cuda:
        return f"result on {got.device}"
    if dname(got.dtype) != res:
        return f"dtype {dname(got.dtype)}, torch gives {res}"
    return diff(got, ref_binary(opname, xa, ya, res), rtol_eps=2 if opname == "truediv" else 0)


# =========================================================================== elementwise kernels


@pytest.mark.parametrize("left", REAL_NAMES)
@pytest.mark.parametrize("opname", OPS.keys())
def test_binary_tensor_tensor_every_dtype_pair(opname, left, rng):
    """left op right, right a tensor or a 0-d tensor of every real dtype (torch's promotion)."""
    problems = {}
    xa = rand_array(rng, left, (17,), small=True)
    x = cuda_from(xa)
    for right in REAL_NAMES:
        for kind, shape in (("tensor", (17,)), ("0d", ())):
            ya = rand_array(rng, right, shape, small=True)
            if opname == "truediv":
                ya = nonzero(ya)
            problem = check_op(opname, x, cuda_from(ya), xa, ya)
            if problem:
                problems[f"{kind}-{right}"] = problem
    assert not problems, problems


SCALARS = {"int": 2, "neg_int": -3, "float": 2.5, "quarter": 0.25, "bool": True}


@pytest.mark.parametrize("name", REAL_NAMES)
@pytest.mark.parametrize("opname", OPS.keys())
def test_binary_tensor_scalar_both_orders(opname, name, rng):
    """t op s and s op t (2 - t, 3 / t, ...) for Python scalars."""
    problems = {}
    xa = rand_array(rng, name, (17,), small=True)
    if opname == "truediv":
        xa = nonzero(xa)
    x = cuda_from(xa)
    for sname, s in SCALARS.items():
        for order, (p, q, pa, qa) in {"t op s": (x, s, xa, s), "s op t": (s, x, s, xa)}.items():
            problem = check_op(opname, p, q, pa, qa)
            if problem:
                problems[f"{order} ({sname})"] = problem
    assert not problems, problems


def test_bool_subtraction_and_negation_raise_on_cuda():
    b = db.tensor([True, False], device="cuda")
    for f in (lambda: b - b, lambda: b - True, lambda: 1 - b, lambda: -b, lambda: b.neg(), lambda: b.sub_(b)):
        with pytest.raises(RuntimeError):
            f()


BROADCAST = [((3, 1), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((5, 4), (1,)), ((1,), (0,)),
             ((2, 0), (2, 1)), ((1, 1, 1), (3,)), ((4, 1, 2), (1, 3, 1)), ((1023, 1), (1, 17))]


@pytest.mark.parametrize("name", ["float64", "int32", "bfloat16"])
@pytest.mark.parametrize("sa,sb", BROADCAST, ids=str)
def test_broadcasting_on_cuda(sa, sb, name, rng):
    problems = {}
    xa, ya = nonzero(rand_array(rng, name, sa, small=True)), nonzero(rand_array(rng, name, sb, small=True))
    x, y = cuda_from(xa), cuda_from(ya)
    for opname in OPS:
        for order, args in {"a op b": (x, y, xa, ya), "b op a": (y, x, ya, xa)}.items():
            problem = check_op(opname, *args)
            if problem:
                problems[f"{opname} {order}"] = problem
    assert not problems, problems


ODD_SIZES = [1, 3, 17, 1023, 1_000_003]

KERNEL_NAMES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "int64", "uint64"]


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_elementwise_odd_sizes_misaligned_views_and_poisoned_outputs(name, n, rng):
    """Sizes that leave vector-load tails, views that start off alignment, and in-place
    results framed by sentinels that a kernel overrunning its range would overwrite."""
    npdt, dt = NP_DTYPE[name], getattr(db, name)
    isz = npdt.itemsize
    problems = {}
    a, b = rand_array(rng, name, n + 3), rand_array(rng, name, n + 3)  # integers wrap like C
    A, B = cuda_from(a), cuda_from(b)
    qa, qb = rand_array(rng, name, n + 3, small=True), nonzero(rand_array(rng, name, n + 3, small=True))
    QA, QB = cuda_from(qa), cuda_from(qb)
    pairs = {"aligned": (slice(0, n), slice(0, n)), "misaligned x": (slice(1, n + 1), slice(0, n)),
             "both offset": (slice(1, n + 1), slice(3, n + 3))}
    for vname, (sx, sy) in pairs.items():
        x, y, xa, ya = A[sx], B[sy], a[sx], b[sy]
        for opname in ("add", "sub", "mul"):
            poison_pool(n * 8)
            problems[f"{vname}: x {opname} y"] = check_op(opname, x, y, xa, ya)
        poison_pool(n * 8)
        problems[f"{vname}: x * 3"] = check_op("mul", x, 3, xa, 3)
        problems[f"{vname}: 2 - x"] = check_op("sub", 2, x, 2, xa)
        problems[f"{vname}: -x"] = diff(-x, neg_ref(xa))
        # true division on small values (integers exact in float32, as torch computes them)
        poison_pool(n * 8)
        problems[f"{vname}: x / y"] = check_op("truediv", QA[sx], QB[sy], qa[sx], qb[sy])
        problems[f"{vname}: 3 / y"] = check_op("truediv", 3, QB[sy], 3, qb[sy])
    # in place, into a view framed by sentinels (misaligned and aligned start)
    for off in (1, max(1, 16 // isz)):
        for opname in ("add", "sub", "mul", "truediv"):
            if opname == "truediv" and name not in FLOAT_NAMES:
                continue
            src, other, sa, oa = (QA, QB, qa, qb) if opname == "truediv" else (A, B, a, b)
            buf = db.full((n + off + 5,), sentinel(name), dtype=dt, device=DEV)
            v = buf[off:off + n]
            assert v.copy_(src[:n]) is v
            getattr(v, METHODS[opname])(other[2:n + 2])
            key = f"in-place {METHODS[opname]} at offset {off}"
            problems[key] = diff(v, ref_binary(opname, sa[:n], oa[2:n + 2], name),
                                 rtol_eps=2 if opname == "truediv" else 0)
            h = values_of(buf)
            if not (is_sentinel(h[:off], name) and is_sentinel(h[off + n:], name)):
                problems[key + " frame"] = "wrote outside the view"
        # operator form with a scalar
        buf = db.full((n + off + 5,), sentinel(name), dtype=dt, device=DEV)
        v = buf[off:off + n]
        v.copy_(A[:n])
        v *= 3
        v += 1
        problems[f"v *= 3; v += 1 at offset {off}"] = diff(
            v, ref_binary("add", ref_binary("mul", a[:n], 3, name), 1, name))
        h = values_of(buf)
        if not (is_sentinel(h[:off], name) and is_sentinel(h[off + n:], name)):
            problems[f"operators at offset {off} frame"] = "wrote outside the view"
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


@pytest.mark.parametrize("name", ["float32", "float64", "bfloat16", "float16", "int32", "uint8", "int64"])
def test_non_contiguous_and_expanded_inputs(name, rng):
    a, b = rand_array(rng, name, (64, 66)), rand_array(rng, name, (64, 66))
    row, col = rand_array(rng, name, (33,)), rand_array(rng, name, (64, 1))
    bt = np.ascontiguousarray(b.T)
    A, B, R, C, BT = (cuda_from(x) for x in (a, b, row, col, bt))
    cases = {
        "A[:, ::2] op B[:, 1::2]": (A[:, ::2], B[:, 1::2], a[:, ::2], b[:, 1::2]),
        "A.T op B.T": (A.T, B.T, a.T, b.T),
        "A.T op contiguous": (A.T, BT, a.T, bt),
        "contiguous op A.T": (BT, A.T, bt, a.T),
        "A[:, ::2] op R.expand": (A[:, ::2], R.expand(64, 33), a[:, ::2], np.broadcast_to(row, (64, 33))),
        "C.expand op R.expand": (C.expand(64, 33), R.expand(64, 33), np.broadcast_to(col, (64, 33)),
                                 np.broadcast_to(row, (64, 33))),
        "C op R": (C, R, col, row),
        "A[1:, 3:36] op R": (A[1:, 3:36], R, a[1:, 3:36], row),
        "A[::3, ::5] op 2": (A[::3, ::5], 2, a[::3, ::5], 2),
        "permuted": (A.view(64, 2, 33).permute(1, 2, 0), B.view(64, 2, 33).permute(1, 2, 0),
                     a.reshape(64, 2, 33).transpose(1, 2, 0), b.reshape(64, 2, 33).transpose(1, 2, 0)),
    }
    # integer true division is covered on small values elsewhere; float divisors here are
    # normal * 8, never zero
    ops = ["add", "sub", "mul"] + (["truediv"] if name in FLOAT_NAMES else [])
    problems = {}
    for case, (x, y, xa, ya) in cases.items():
        for opname in ops:
            problem = check_op(opname, x, y, xa, ya)
            if problem:
                problems[f"{case} [{opname}]"] = problem
    # in place into a strided view with an expanded operand: the other columns are untouched
    A2 = cuda_from(a)
    A2[:, ::2].add_(R)
    expected = a.copy()
    expected[:, ::2] = ref_binary("add", a[:, ::2], row, name)
    problems["A[:, ::2].add_(R)"] = diff(A2, expected)
    A3 = cuda_from(a)
    v = A3.T[::2]
    v.mul_(C.T.expand(33, 64))
    expected = a.copy()
    expected.T[::2] = ref_binary("mul", a.T[::2], np.broadcast_to(col.T, (33, 64)), name)
    problems["A.T[::2].mul_(C.T.expand)"] = diff(A3, expected)
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


@pytest.mark.parametrize("opname", METHODS.keys())
@pytest.mark.parametrize("name", NUMERIC_NAMES)
def test_in_place_into_strided_views_every_dtype(name, opname, rng):
    """t[:, ::2] op= u: the even columns change, the odd ones keep their sentinel."""
    if opname == "truediv" and name not in FLOAT_NAMES:
        t = db.ones(3, dtype=getattr(db, name), device="cuda")
        with pytest.raises(RuntimeError):
            t.div_(2)  # torch: result type Float can't be cast to the desired output type
        with pytest.raises(RuntimeError):
            t /= 2
        return
    a, u = rand_array(rng, name, (8, 9)), rand_array(rng, name, (8, 9), small=True)
    if opname == "truediv":
        u = nonzero(u)
    for form in ("method", "operator", "scalar"):
        buf = db.full((8, 18), sentinel(name), dtype=getattr(db, name), device="cuda")
        v = buf[:, ::2]
        v.copy_(cuda_from(a))
        if form == "method":
            assert getattr(v, METHODS[opname])(cuda_from(u)) is v
            expected = ref_binary(opname, a, u, name)
        elif form == "operator":
            w = INPLACE[opname](v, cuda_from(u))
            assert w is v
            expected = ref_binary(opname, a, u, name)
        else:
            getattr(v, METHODS[opname])(2)
            expected = ref_binary(opname, a, 2, name)
        assert_values(v, expected, rtol_eps=2 if opname == "truediv" else 0)
        assert is_sentinel(values_of(buf)[:, 1::2], name), form


def test_in_place_with_other_dtypes_like_torch(rng):
    a = rand_array(rng, "float32", (1023,))
    d = rand_array(rng, "float64", (1023,))
    t = cuda_from(a)
    t += cuda_from(d)  # computed in float64, rounded to float32
    assert t.dtype is db.float32
    assert_values(t, (wide(a) + d).astype(np.float32))
    i = rand_array(rng, "int32", (1023,))
    j = rand_array(rng, "int64", (1023,))
    ti = cuda_from(i)
    ti.add_(cuda_from(j))  # int64 result wrapped into int32
    assert_values(ti, (i.astype(np.int64) + j).astype(np.int32))
    h = rand_array(rng, "float16", (1023,))
    th = cuda_from(h)
    th *= 2.5
    assert_values(th, (wide(h) * 2.5).astype(np.float16))
    u = rand_array(rng, "uint8", (1023,))
    tu = cuda_from(u)
    tu -= 3
    assert_values(tu, (u.astype(np.int64) - 3).astype(np.uint8))
    ti = db.ones(3, dtype=db.int64, device="cuda")
    with pytest.raises(RuntimeError):
        ti += 2.5  # float result can't go into an integer tensor (torch's rule)
    assert ti.tolist() == [1, 1, 1]


@pytest.mark.parametrize("name", NUMERIC_NAMES)
def test_neg_every_dtype(name, rng):
    a = rand_array(rng, name, (33, 31))
    c = cuda_from(a)
    ref = neg_ref(a)
    assert_values(-c, ref)
    assert_values(c.neg(), ref)
    assert_values(-c[:, ::3], np.ascontiguousarray(ref[:, ::3]))
    assert_values(-(c.T), np.ascontiguousarray(ref.T))
    assert (-c).dtype is c.dtype
    assert_values(c, a)  # out of place


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_fill_contiguous_strided_and_misaligned(name, rng):
    dt, npdt, val = getattr(db, name), NP_DTYPE[name], FILL[name]
    a = rand_array(rng, name, (8, 10))
    c = cuda_from(a)
    assert c.fill_(val) is c
    assert_values(c, np.full((8, 10), val, npdt))
    c = cuda_from(a)
    c[:, ::2].fill_(val)  # odd columns keep their values
    expected = a.copy()
    expected[:, ::2] = val
    assert_values(c, expected)
    c = cuda_from(a)
    c.T[1::3].fill_(val)
    expected = a.copy()
    expected.T[1::3] = val
    assert_values(c, expected)
    for n in (1, 17, 1023, 100_003):
        buf = db.full((n + 2,), sentinel(name) if name != "bool" else False, dtype=dt, device="cuda")
        buf[1:n + 1].fill_(val)
        h = values_of(buf)
        assert_values(h[1:n + 1], np.full(n, val, npdt))
        if name == "bool":
            assert not h[0] and not h[-1]
        else:
            assert is_sentinel(h[[0, -1]], name)
    z = db.zeros((), dtype=dt, device="cuda")
    z.fill_(val)
    assert_values(z, np.full((), val, npdt))


COPY_PAIRS = [("float32", "int64"), ("float64", "float16"), ("int32", "float32"), ("bfloat16", "float32"),
              ("uint8", "bool"), ("int8", "int8"), ("float16", "bfloat16"), ("uint64", "int16"),
              ("bool", "float64"), ("complex64", "complex64")]


@pytest.mark.parametrize("dst,src", COPY_PAIRS, ids=lambda x: str(x))
def test_copy_into_strided_views_with_casts_and_broadcasting(dst, src, rng):
    base = rand_array(rng, dst, (6, 10))
    s = cast_source(rng, src, dst, 30).reshape(6, 5)
    row = cast_source(rng, src, dst, 5)
    ref_s, ref_row = ref_cast(s, dst)[0], ref_cast(row, dst)[0]
    D = cuda_from(base)
    v = D[:, ::2]
    assert v.copy_(cuda_from(s)) is v
    expected = base.copy()
    expected[:, ::2] = ref_s
    assert_values(D, expected)
    D[:, 1::2].copy_(cuda_from(row))  # broadcast (5,) over (6, 5)
    expected[:, 1::2] = ref_row
    assert_values(D, expected)
    # strided source into a contiguous destination
    E = db.empty((5, 6), dtype=getattr(db, dst), device="cuda")
    E.copy_(cuda_from(s).T)
    assert_values(E, np.ascontiguousarray(ref_s.T))
    # cross-device, both ways, into strided destinations
    F = cuda_from(base)
    F[:, ::2].copy_(db.from_numpy(s))  # host -> CUDA
    expected = base.copy()
    expected[:, ::2] = ref_s
    assert_values(F, expected)
    h = np.array(base, copy=True)
    db.from_numpy(h)[:, 1::2].copy_(cuda_from(s))  # CUDA -> host, written through to h
    expected = base.copy()
    expected[:, 1::2] = ref_s
    assert_values(h, expected)
    row10 = cast_source(rng, src, dst, 10)
    h2 = np.array(base, copy=True)
    db.from_numpy(h2).copy_(cuda_from(row10))  # CUDA -> host, broadcast (10,) over (6, 10)
    assert_values(h2, np.broadcast_to(ref_cast(row10, dst)[0], (6, 10)))
    G = cuda_from(base)
    G.copy_(db.from_numpy(row10))  # host -> CUDA, broadcast
    assert_values(G, np.broadcast_to(ref_cast(row10, dst)[0], (6, 10)))


def test_copy_poisoned_destination_large(rng):
    n = 1_000_003
    a = rng.standard_normal(n).astype(np.float32)
    dst = db.full((n + 2,), float("nan"), dtype=db.float32, device="cuda")
    dst[1:n + 1].copy_(db.from_numpy(a))
    h = values_of(dst)
    assert np.isnan(h[0]) and np.isnan(h[-1])
    assert np.array_equal(h[1:n + 1], a)
    d2 = db.full((n,), float("nan"), dtype=db.float64, device="cuda")
    d2.copy_(cuda_from(a))  # cast on the GPU
    assert_values(d2, a.astype(np.float64))


@pytest.mark.parametrize("name", ["float32", "bfloat16", "int8", "uint64", "complex64", "bool"])
def test_contiguous_and_clone(name, rng):
    a = rand_array(rng, name, (6, 9))
    c = cuda_from(a)
    assert c.contiguous() is c
    t = c.T
    assert not t.is_contiguous()
    k = t.contiguous()
    assert_on_cuda(k)
    assert k.is_contiguous() and k.data_ptr() != c.data_ptr()
    assert_values(k, np.ascontiguousarray(a.T))
    for v, ref in ((c, a), (c[::2, 1::3], a[::2, 1::3]), (c[1:].reshape(-1)[1:], a[1:].reshape(-1)[1:])):
        cl = v.clone()
        assert_on_cuda(cl)
        assert cl.data_ptr() != v.data_ptr()
        assert_values(cl, np.ascontiguousarray(ref))
    cl = c.clone()
    cl.fill_(FILL[name])
    assert_values(c, a)


# --------------------------------------------------------------------------- casts


def cast_source(rng, src, dst, n=257):
    """Values of dtype src whose conversion to dst is defined (no UB) and exactly predictable."""
    with np.errstate(all="ignore"):  # overflow to inf is intended
        return _cast_source(rng, src, dst, n)


def _cast_source(rng, src, dst, n):
    sdt = NP_DTYPE[src]
    if src == "bool":
        return rng.random(n) < 0.5
    if src in COMPLEX_NAMES:
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(sdt)
    if src in FLOAT_NAMES:
        if dst == "bool":
            v = rng.standard_normal(n) * 4
            v[::5] = 0.0
            v[1], v[2] = np.nan, -0.0
        elif dst in FLOAT_NAMES:
            v = rng.standard_normal(n) * 1000 * rng.choice([1e-6, 1e-3, 1.0, 10.0], n)
            special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-5, 7e4, -1e-30]
            v[:min(n, 8)] = special[:min(n, 8)]
        else:  # float -> integer: in range, with fractions (truncation toward zero)
            lo = -100 if np.iinfo(NP_DTYPE[dst]).min < 0 else 0
            v = rng.integers(lo, 101, n) + rng.choice([-0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75], n)
            v = np.clip(v, lo - 0.75, 100.75)
        return v.astype(sdt)
    info = np.iinfo(sdt)
    if dst in ("float16", "bfloat16"):  # |x| <= 2**24: exact in float32, one rounding to half
        v = rng.integers(max(int(info.min), -2**24), min(int(info.max), 2**24), n, endpoint=True).astype(sdt)
    else:
        v = rng.integers(info.min, info.max, n, dtype=sdt, endpoint=True)
    v[::7] = 0
    return v


def ref_cast(a, dst):
    """Acceptable results of casting array a to dst (a list: float64 -> half may round
    directly or through float32, as torch's CUDA kernels do)."""
    with np.errstate(all="ignore"):  # overflow to inf is intended
        return _ref_cast(a, dst)


def _ref_cast(a, dst):
    ddt = NP_DTYPE[dst]
    src_float = is_float(a.dtype)
    if dst == "bool":
        return [wide(a) != 0]
    if src_float and dst not in FLOAT_NAMES:
        return [np.trunc(wide(a)).astype(ddt)]
    if src_float:
        direct = wide(a).astype(ddt)
        if a.dtype == np.float64 and dst in ("float16", "bfloat16"):
            return [direct, a.astype(np.float32).astype(ddt)]
        return [direct]
    if a.dtype.kind == "c":
        return [a.astype(ddt)]
    if dst in ("float16", "bfloat16"):
        return [a.astype(np.float64).astype(ddt)]
    return [a.astype(ddt)]  # integers wrap modulo 2**bits, like C


@pytest.mark.parametrize("src", REAL_NAMES)
def test_casts_between_real_dtypes(src, rng):
    problems = {}
    for dst in REAL_NAMES:
        a = cast_source(rng, src, dst)
        t = cuda_from(a)
        poison_pool(a.size * 8)
        got = t.to(getattr(db, dst))
        if not got.is_cuda or dname(got.dtype) != dst:
            problems[dst] = f"gave {got.dtype} on {got.device}"
            continue
        cands = ref_cast(a, dst)
        problems[dst] = diff_any(got, cands)
        problems[f"{dst} (strided)"] = diff_any(t[1::3].to(getattr(db, dst)), [c[1::3] for c in cands])
        if src != dst:
            assert got.data_ptr() != t.data_ptr()
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


SPELLINGS = {  # the cast applies to a CUDA tensor, except where it names the device
    "to(dtype)": (lambda t: t.to(db.int16), "int16"),
    "to(dtype=)": (lambda t: t.to(dtype=db.uint8), "uint8"),
    "to('cuda', dtype) of a host tensor": (lambda t: t.cpu().to("cuda", db.float64), "float64"),
    "to('cuda:0', dtype=) of a host tensor": (lambda t: t.cpu().to("cuda:0", dtype=db.float16), "float16"),
    "to(device=, dtype=) of a host tensor": (lambda t: t.cpu().to(device=CUDA0, dtype=db.int32), "int32"),
    "type(dtype)": (lambda t: t.type(db.float16), "float16"),
    "float()": (lambda t: t.float(), "float32"),
    "double()": (lambda t: t.double(), "float64"),
    "half()": (lambda t: t.half(), "float16"),
    "bfloat16()": (lambda t: t.bfloat16(), "bfloat16"),
    "int()": (lambda t: t.int(), "int32"),
    "long()": (lambda t: t.long(), "int64"),
    "bool()": (lambda t: t.bool(), "bool"),
}


@pytest.mark.parametrize("spell", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_cast_spellings_on_cuda(spell, rng):
    f, dst = spell
    a = cast_source(rng, "float32", "uint8" if dst in ("uint8", "bool") else "int8", 101)
    got = f(cuda_from(a))
    assert_on_cuda(got)
    assert dname(got.dtype) == dst
    assert_values(got, ref_cast(a, dst)[0])
    strided = f(cuda_from(np.stack([a, a]))[:, ::2])  # a non-contiguous source
    assert_values(strided, np.ascontiguousarray(ref_cast(np.stack([a, a]), dst)[0][:, ::2]))


@pytest.mark.parametrize("src", FLOAT_NAMES)
def test_float_to_int_truncates_toward_zero(src):
    vals = [-2.75, -1.5, -0.5, -0.25, 0.0, 0.5, 1.5, 2.75, 99.5, -99.5]  # exact in bfloat16 too
    t = db.tensor(vals, dtype=getattr(db, src), device="cuda")
    for dst in ("int8", "int16", "int32", "int64"):
        assert t.to(getattr(db, dst)).tolist() == [-2, -1, 0, 0, 0, 0, 1, 2, 99, -99]
    assert db.tensor(vals[3:9], dtype=getattr(db, src), device="cuda").to(db.uint8).tolist() == [0, 0, 0, 1, 2, 99]


# =========================================================================== reductions


@pytest.mark.parametrize("n", [1, 17, 1023, 1_000_003])
@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_sum_and_mean_of_floats(name, n, rng):
    a = rand_array(rng, name, (n,))
    c = cuda_from(a)
    w = wide(a)
    ref, scale = w.sum(), np.abs(w).sum()
    # float64 accumulation: the only sizeable error is the final rounding to the dtype
    for what, got, expected, slack in (("sum", c.sum(), ref, 1e-11 * scale), ("mean", c.mean(), ref / n, 1e-11 * scale / n)):
        assert_on_cuda(got)
        assert got.shape == () and got.dtype is c.dtype
        g = float(wide(values_of(got)))
        tol = 2 * EPS[name] * abs(expected) + slack + TINY[name]
        assert abs(g - expected) <= tol, (what, g, expected, tol)
    assert c[1:].sum().item() == pytest.approx(float(w[1:].sum()), rel=2 * EPS[name], abs=TINY[name] + 1e-11 * scale)


def wrapped_int_sum(a):
    """Sum of integer (or bool) values as int64 with C wrap-around."""
    s = np.asarray(a).astype(np.uint64).sum(dtype=np.uint64)
    return int(np.asarray(s, dtype=np.uint64).view(np.int64))


@pytest.mark.parametrize("n", [1, 1023, 1_000_003])
@pytest.mark.parametrize("name", INT_NAMES + ["bool"])
def test_sum_of_integers_is_exact_int64(name, n, rng):
    a = rand_array(rng, name, (n,))
    c = cuda_from(a)
    s = c.sum()
    assert_on_cuda(s)
    assert s.shape == () and s.dtype is db.int64
    assert s.item() == wrapped_int_sum(a)
    assert c[1:].sum().item() == wrapped_int_sum(a[1:])
    assert c[::3].sum().item() == wrapped_int_sum(a[::3])


def test_sum_and_mean_of_views(rng):
    a = rand_array(rng, "float64", (300, 301))
    c = cuda_from(a)
    for v, ref in ((c[:, ::2], a[:, ::2]), (c.T, a.T), (c[1:, 3:], a[1:, 3:]), (c[::7], a[::7]),
                   (c[:, :1].expand(300, 1000), np.broadcast_to(a[:, :1], (300, 1000)))):
        slack = 1e-11 * float(np.abs(ref).sum())  # float64 accumulation, any summation order
        assert v.sum().item() == pytest.approx(float(ref.sum()), rel=1e-13, abs=slack)
        assert v.mean().item() == pytest.approx(float(ref.mean()), rel=1e-13, abs=slack / ref.size)
    i = rand_array(rng, "int32", (300, 301))
    ci = cuda_from(i)
    assert ci.T[::2].sum().item() == wrapped_int_sum(i.T[::2])
    assert ci[:, :1].expand(300, 7).sum().item() == wrapped_int_sum(np.broadcast_to(i[:, :1], (300, 7)))


def test_sum_and_mean_of_empty_and_zero_d():
    e = db.empty(0, dtype=db.float32, device="cuda")
    assert e.sum().item() == 0.0 and e.sum().is_cuda
    assert np.isnan(e.mean().item())
    assert db.empty((3, 0), dtype=db.int8, device="cuda").sum().item() == 0
    z = db.tensor(2.5, device="cuda")
    assert z.sum().item() == 2.5 and z.mean().item() == 2.5 and z.sum().shape == ()


@pytest.mark.parametrize("name", INT_NAMES + ["bool"])
def test_mean_of_integers_raises_like_torch(name):
    with pytest.raises(RuntimeError, match="mean"):
        db.ones(3, dtype=getattr(db, name), device="cuda").mean()


# =========================================================================== rand


@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_rand_on_cuda(name):
    n = 1 << 20
    t = db.rand(n, dtype=getattr(db, name), device="cuda")
    assert_on_cuda(t)
    assert t.dtype is getattr(db, name) and t.shape == (n,)
    v = wide(values_of(t))
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.005
    assert abs(v.var() - 1 / 12) < 0.005
    hist = np.histogram(v, bins=8, range=(0.0, 1.0))[0]  # bin edges exact in every dtype
    assert (np.abs(hist - n / 8) < 0.05 * n / 8).all(), hist
    u = wide(values_of(db.rand(n, dtype=getattr(db, name), device="cuda")))
    assert not np.array_equal(u, v)
    assert db.rand(3, 4, device="cuda").dtype is db.float32
    r = db.rand_like(t[:10])
    assert_on_cuda(r)
    assert r.dtype is t.dtype


def test_manual_seed_makes_cuda_rand_reproducible():
    db.manual_seed(1234)
    x = values_of(db.rand(4096, device="cuda"))
    y = values_of(db.rand(4096, device="cuda"))
    db.manual_seed(1234)
    assert np.array_equal(values_of(db.rand(4096, device="cuda")), x)
    assert np.array_equal(values_of(db.rand(4096, device="cuda")), y)
    assert not np.array_equal(x, y)
    db.manual_seed(1235)
    assert not np.array_equal(values_of(db.rand(4096, device="cuda")), x)
