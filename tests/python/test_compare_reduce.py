"""Comparisons, abs, powers and reductions, each compared with real torch.

For every dtype and operand kind: the result's dtype, shape and values, or, for
refused combinations, the exception class and message torch gives. Where torch has
no CPU kernel for a dtype (uint16/32/64 mostly), the same op is done by torch in a
wide dtype and cast back, which is what its kernels would give.
"""

import operator
import pickle

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, FLOAT_NAMES
from test_ops import OPERANDS, make_pair, same_error, to_numpy

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")

COMPARISONS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
               "gt": operator.gt, "ge": operator.ge}
UNSIGNED_PROMOTION = "Promotion for uint16, uint32, uint64 types is not supported"


def missing_kernel(e):
    return isinstance(e, RuntimeError) and "not implemented for" in str(e) and any(
        f"'{n}'" in str(e) for n in ("UInt16", "UInt32", "UInt64"))


def reference(f, *args, reduction=False):
    """torch's (result, error) for f(*args). Where torch lacks an unsigned kernel, the
    same op is done by NumPy on the same dtypes (a Python number first rounded to the
    result dtype, wrapping as torch does), which is what the kernel would give; a
    reduction is done by torch in int64 (the test data fit) and cast back."""
    try:
        return f(*args), None
    except Exception as e:  # noqa: BLE001 - compared below
        if not missing_kernel(e):
            return None, e
    if reduction:
        (t,) = args
        out = f(t.to(torch.int64))
        if isinstance(out, torch.Tensor):
            return out.to(t.dtype), None
        return type(out)((out.values.to(t.dtype), out.indices)), None
    rt = torch.result_type(*args) if len(args) == 2 else args[0].dtype
    arrays = [(a if isinstance(a, torch.Tensor) else torch.tensor(a)).to(rt).numpy() for a in args]
    return torch.from_numpy(np.asarray(f(*arrays))), None


def compare_with_torch(f, ours, theirs, rtol=0.0, reduction=False):
    """None when f(*ours) behaves as torch's f(*theirs), else what differs."""
    ref, err = reference(f, *theirs, reduction=reduction)
    if err is not None and str(err).startswith(UNSIGNED_PROMOTION):
        return None  # torch defines no result; dlbridge may promote as it likes
    if err is not None and ("ComplexHalf" in str(err) or "BComplex32" in str(err)):
        return None  # dtypes dlbridge does not have (torch promotes bfloat16 with complex to one)
    try:
        got = f(*ours)
    except Exception as e:  # noqa: BLE001 - compared with torch's
        if err is None:
            return f"raised {type(e).__name__}: {e}; torch gives {ref.dtype}"
        return None if same_error(e, err) else f"{type(e).__name__}: {e} != torch's {type(err).__name__}: {err}"
    if err is not None:
        return f"gave {got.dtype}, torch raises {type(err).__name__}: {err}"
    return same_tensor(got, ref, rtol)


def same_tensor(got, ref, rtol=0.0):
    if repr(got.dtype).split(".")[-1] != repr(ref.dtype).split(".")[-1]:
        return f"dtype {got.dtype} != torch's {ref.dtype}"
    if got.shape != tuple(ref.shape):
        return f"shape {got.shape} != torch's {tuple(ref.shape)}"
    try:
        if rtol and (ref.is_floating_point() or ref.is_complex()):
            np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=rtol, atol=0, equal_nan=True)
        else:
            np.testing.assert_array_equal(to_numpy(got), to_numpy(ref))
    except AssertionError:
        return f"values {got.tolist()} != torch's {ref.tolist()}"
    return None


def eps(name):
    return float(torch.finfo(getattr(torch, name)).eps) if name in FLOAT_NAMES else 0.0


# --------------------------------------------------------------------------- comparisons


@pytest.mark.parametrize("op", COMPARISONS.values(), ids=COMPARISONS.keys())
@pytest.mark.parametrize("left", [k for k in OPERANDS if k[0] != "scalar"], ids=lambda k: f"{k[0]}-{k[1]}")
def test_comparison_matches_torch(op, left):
    """left op right for every kind of right operand, and the reflected scalar forms."""
    la, lt = make_pair(*left)
    problems = {}
    for right in OPERANDS:
        ra, rt = make_pair(*right)
        for name, (x, y, u, v) in {"": (la, ra, lt, rt), "reflected": (ra, la, rt, lt)}.items():
            diff = compare_with_torch(op, (x, y), (u, v))
            if diff:
                problems[f"{name}{right[0]}-{right[1]}"] = diff
    assert not problems, problems


@pytest.mark.parametrize("name", COMPARISONS)
def test_named_comparisons_match_the_operators(name):
    a, b = db.tensor([[1.0, 5.0, float("nan")]]), db.tensor([[1.0], [6.0]])
    ta, tb = torch.tensor([[1.0, 5.0, float("nan")]]), torch.tensor([[1.0], [6.0]])
    for ours, theirs in [(getattr(a, name)(b), getattr(ta, name)(tb)),
                         (getattr(db, name)(a, 5), getattr(torch, name)(ta, 5)),
                         (COMPARISONS[name](a, b), COMPARISONS[name](ta, tb))]:
        assert ours.dtype is db.bool and not ours.requires_grad
        assert ours.tolist() == theirs.tolist()


def test_comparison_rounds_the_number_to_the_tensor_dtype_as_torch():
    assert (db.tensor([1.5], dtype=db.float16) == 1.5000001).tolist() == [True]
    assert (db.tensor([0], dtype=db.uint8) < -1).tolist() == \
        (torch.tensor([0], dtype=torch.uint8) < -1).tolist()


def test_comparison_with_what_is_not_a_tensor_or_number_is_not_implemented():
    t = db.tensor([1, 2])
    assert (t == [1, 2]) is False and (t != [1, 2]) is True  # as torch: Python's fallback
    assert (t == "a") is False
    with pytest.raises(TypeError):
        t < "a"
    with pytest.raises(TypeError, match="eq"):
        t.eq([1, 2])


def test_comparison_with_an_ndarray_is_elementwise():
    t = db.tensor([1, 2, 3])
    assert (t == np.array([1, 0, 3])).tolist() == [True, False, True]


def test_ordering_complex_is_refused_with_torchs_message():
    c, tc = db.tensor([1j]), torch.tensor([1j])
    with pytest.raises(RuntimeError) as e:
        c < c
    with pytest.raises(RuntimeError) as te:
        tc < tc
    assert str(e.value) == str(te.value)
    assert (c == c).tolist() == [True]


def test_tensors_hash_by_identity():
    t, u = db.tensor([1]), db.tensor([1])
    assert hash(t) == hash(t) and hash(t) != hash(u)
    d = {t: "t", u: "u"}
    assert d[t] == "t" and d[u] == "u"


def test_large_comparison_matches_numpy():
    a = np.random.default_rng(0).standard_normal((513, 1024)).astype(np.float32)
    b = a[::-1].copy()
    assert np.array_equal(db.from_numpy(a).lt(db.from_numpy(b)).numpy(), a < b)


# --------------------------------------------------------------------------- abs and powers


@pytest.mark.parametrize("kind", ["tensor", "0d"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_abs_matches_torch(name, kind):
    ours, theirs = make_pair(kind, name)
    ours, theirs = (ours, theirs) if name == "bool" else (-ours if not name.startswith("uint") else ours,
                                                            -theirs if not name.startswith("uint") else theirs)
    assert compare_with_torch(abs, (ours,), (theirs,)) is None
    if name != "bool":
        for f in (lambda t: t.abs(), lambda t: db.abs(t)):
            assert f(ours).tolist() == abs(ours).tolist()


def test_abs_of_complex_is_the_real_magnitude():
    t = db.tensor([3 + 4j, -5j], dtype=db.complex64)
    m = abs(t)
    assert m.dtype is db.float32 and m.tolist() == [5.0, 5.0]
    assert db.abs(db.tensor([-128], dtype=db.int8)).tolist() == [-128]  # wraps, as torch


@pytest.mark.parametrize("left", [k for k in OPERANDS if k[0] != "scalar"], ids=lambda k: f"{k[0]}-{k[1]}")
def test_pow_matches_torch(left):
    la, lt = make_pair(*left)
    problems = {}
    for right in OPERANDS:
        ra, rt = make_pair(*right)
        for name, (x, y, u, v) in {"": (la, ra, lt, rt), "reflected": (ra, la, rt, lt)}.items():
            rtol = 4 * max(eps(left[1]), eps(right[1]), 1e-15 if "complex" in left[1] + right[1] else 0)
            diff = compare_with_torch(operator.pow, (x, y), (u, v), rtol=rtol or 1e-6 * ("float" in name))
            if diff:
                problems[f"{name}{right[0]}-{right[1]}"] = diff
    assert not problems, problems


def test_pow_forms_and_torchs_integer_rules():
    t = db.tensor([2, 3, -2])
    assert (t ** 2).tolist() == t.pow(2).tolist() == db.pow(t, 2).tolist() == [4, 9, 4]
    assert (2 ** db.tensor([-1, 0, 3])).tolist() == (2 ** torch.tensor([-1, 0, 3])).tolist()
    b = db.tensor([2, -1, 1])
    assert (b ** db.tensor([-1, -1, -2])).tolist() == (torch.tensor([2, -1, 1]) ** torch.tensor([-1, -1, -2])).tolist()
    with pytest.raises(RuntimeError) as e:
        t ** -1
    with pytest.raises(RuntimeError) as te:
        torch.tensor([2, 3, -2]) ** -1
    assert str(e.value) == str(te.value)
    assert (db.tensor([True, False]) ** 2).dtype is db.int64
    u = db.tensor([1.0, 2.0])
    u **= 3
    assert u.tolist() == [1.0, 8.0]
    assert u.pow_(0.5) is u
    np.testing.assert_allclose(u.numpy(), [1.0, 8.0 ** 0.5], rtol=1e-6)


def test_pow_keeps_requires_grad_and_comparison_drops_it():
    t = db.tensor([1.0, 2.0], requires_grad=True)
    assert (t ** 2).requires_grad and abs(t).requires_grad
    assert not (t > 1).requires_grad


# --------------------------------------------------------------------------- reductions

REDUCE_DATA = [[3, -1, 4], [-5, 9, 2]]  # distinct values: the index of an extreme is unique
DIMS = [None, 0, 1, -1, -2, (0, 1), (1, 0), [1], ()]


def reduction_pair(name):
    data = [[True, False, True], [False, False, True]] if name == "bool" else (
        [[3, 1, 4], [5, 9, 2]] if name.startswith("uint") else REDUCE_DATA)
    return db.tensor(data, dtype=getattr(db, name)), torch.tensor(data, dtype=getattr(torch, name))


def call(method, t, dim, keepdim):
    if dim is None:
        return getattr(t, method)() if not keepdim else getattr(t, method)(keepdim=True)
    return getattr(t, method)(dim, keepdim=keepdim)


@pytest.mark.parametrize("method", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_reduction_matches_torch(method, name):
    ours, theirs = reduction_pair(name)
    problems = {}
    for dim in DIMS:
        for keepdim in (False, True):
            if method in ("sum", "mean") and dim is None and keepdim:
                continue  # torch's sum(keepdim=True) without dim is an error of its own signature
            def f(t, dim=dim, keepdim=keepdim):
                return call(method, t, dim, keepdim)
            diff = compare_with_torch(f, (ours,), (theirs,), rtol=4 * eps(name) or 1e-12,
                                      reduction=True)
            if diff:
                problems[f"dim={dim} keepdim={keepdim}"] = diff
    assert not problems, problems


@pytest.mark.parametrize("method", ["max", "min"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_max_min_match_torch(method, name):
    ours, theirs = reduction_pair(name)
    assert compare_with_torch(lambda t: getattr(t, method)(), (ours,), (theirs,), reduction=True) is None
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            ref, err = reference(lambda t: getattr(t, method)(dim, keepdim=keepdim), theirs, reduction=True)
            if err is not None:
                with pytest.raises(type(err) if not isinstance(err, NotImplementedError) else RuntimeError) as e:
                    getattr(ours, method)(dim, keepdim=keepdim)
                assert same_error(e.value, err), (str(e.value), str(err))
                continue
            got = getattr(ours, method)(dim, keepdim=keepdim)
            assert type(got).__name__ == method and type(got).__module__ == "dlbridge.return_types"
            values, indices = got
            assert got.values is values and got.indices is indices
            assert same_tensor(values, ref.values) is None, (dim, keepdim)
            assert same_tensor(indices, ref.indices) is None, (dim, keepdim)


def test_sum_dtype_and_promotion():
    t = db.tensor([[1, 2], [3, 4]], dtype=db.int8)
    assert t.sum().dtype is db.int64 and t.sum(0).dtype is db.int64
    assert t.sum(1, dtype=db.float32).tolist() == [3.0, 7.0]
    assert db.tensor([True, True]).sum().item() == 2
    assert db.sum(t, 0).tolist() == [4, 6] and db.mean(t.float(), (0, 1)).item() == 2.5


@pytest.mark.parametrize("expr", [
    "t.max()", "t.amax(0)", "t.max(0).values", "t.mean()", "t.sum(0, dtype=lib.bool)",
    "e.max()", "e.amax(0)", "e.max(0).values", "e.sum(0)", "e.mean(0)", "e.amax(1)",
    "t.sum((0, 0))", "t.amax((0, -2))", "t.sum(2)", "t.max(-3)", "c.max()", "c.amax()", "c.max(0).values",
    "c.amin(0)", "t.max((0, 1))", "t.sum('a')", "t.sum(0.5)",
], ids=str)
def test_reduction_errors_match_torch(expr):
    def run(lib):
        t = lib.tensor([[1, 2], [3, 4]])
        e = lib.zeros(0, 3)  # noqa: F841 - used by eval
        c = lib.tensor([1j, 2j])  # noqa: F841
        return eval(expr)

    try:
        ref, err = run(torch), None
    except Exception as x:  # noqa: BLE001
        ref, err = None, x
    if err is None:
        got = run(db)
        assert same_tensor(got, ref) is None
        return
    with pytest.raises(Exception) as e:
        run(db)
    if isinstance(err, TypeError):  # argument parsing: the class matters, torch's long text does not
        assert isinstance(e.value, TypeError), e.value
    else:
        assert same_error(e.value, err), f"{type(e.value).__name__}: {e.value} != {type(err).__name__}: {err}"


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
def test_half_means_divide_in_float32_as_torch(name):
    """The float16 sum of 100,000 ones is inf, its mean 1: PyTorch divides in float32."""
    for data in (db.ones(100000, dtype=getattr(db, name)), db.full((3,), 1 / 3, dtype=getattr(db, name))):
        ref = torch.from_numpy(data.float().numpy()).to(getattr(torch, name))
        assert same_tensor(data.mean(), ref.mean()) is None
        assert same_tensor(data.sum(), ref.sum()) is None


def test_nan_wins_the_extremes_as_in_torch():
    data = [[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]]
    t, tt = db.tensor(data), torch.tensor(data)
    for f in (lambda x: x.max(), lambda x: x.amin(1), lambda x: x.max(1).values, lambda x: x.max(1).indices):
        assert same_tensor(f(t), f(tt), rtol=1e-7) is None


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_extremes_see_every_element_of_a_run_tail_included(name):
    """Rows of every length through the lane tiers (shorter than a chunk,
    a whole number of chunks, a tail the last chunk overlaps): a NaN, an
    infinity or the winner placed on each position, the tail's last ones
    too, wins as in torch, at its first position."""
    rng = np.random.default_rng(5)
    for n in [*range(1, 20), 31, 33, 63, 65, 100, 255, 257, 300]:
        base = rng.standard_normal(n).astype(name)
        for at in sorted({0, n // 2, max(n - 9, 0), max(n - 2, 0), n - 1}):
            for special in (np.nan, np.inf, -np.inf, 10.0):
                row = base.copy()
                row[at] = special
                m = np.stack([row, base, row[::-1].copy()])
                t, tt = db.from_numpy(m), torch.from_numpy(m)
                for op in ("max", "min"):
                    got, want = getattr(t, op)(1), getattr(tt, op)(1)
                    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy(), err_msg=f"{op} {n} {at} {special}")
                    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=f"{op} {n} {at} {special}")
                    assert same_tensor(getattr(t, "a" + op)(1), getattr(tt, "a" + op)(1)) is None


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_extremes_down_columns_see_nan_infinities_and_signed_zeros(name):
    """Extremes over dim 0 with the kept columns contiguous (blocks of 32,
    8 and 1 columns in registers, a column with a NaN or an infinity done
    again by the winner rule): a NaN anywhere, in the first row too, wins
    and infinities alone win as values, as torch; of +0 and -0 the earlier
    stays."""
    rng = np.random.default_rng(11)
    for rows, cols in [(2, 1), (3, 45), (7, 300), (40, 77)]:
        m = rng.standard_normal((rows, cols)).astype(name)
        specials = [np.nan, np.inf, -np.inf, 0.0, -0.0]
        for j in range(cols):
            k = j % 7
            if k < len(specials):
                m[(j * 5) % rows, j] = specials[k]
            if k == 5:  # infinity, then a NaN below it
                m[0, j] = np.inf
                m[rows - 1, j] = np.nan
            if k == 6:  # signed zeros only
                m[:, j] = np.where(np.arange(rows) % 2 == 0, -0.0, 0.0)
        t, tt = db.from_numpy(m), torch.from_numpy(m)
        for op in ("amax", "amin"):
            got, want = getattr(t, op)(0).numpy(), getattr(tt, op)(0).numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {rows}x{cols}")
            # Zeros tie: the earliest stays (torch's sign depends on its
            # vector order there, so the rule is checked, not torch).
            zeros = (m == 0).all(axis=0)
            np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(m[0, zeros]), err_msg=f"{op} {rows}x{cols}")
        for op in ("max", "min"):
            got, want = getattr(t, op)(0), getattr(tt, op)(0)
            np.testing.assert_array_equal(got.values.numpy(), want.values.numpy(), err_msg=f"{op} {rows}x{cols}")
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=f"{op} {rows}x{cols}")


@pytest.mark.parametrize("name", ["float32", "float64", "int8", "int32", "int64", "uint8", "bool"])
def test_extreme_positions_down_rows_keep_the_first_of_ties(name):
    """max/min with indices over a dim whose rows are reduced one by one
    (dim 0 of 2-D, dim 1 of 3-D; blocks of columns updated without a branch):
    values drawn from three, so most columns tie, and the first row of the
    winning value is the index, as torch's."""
    rng = np.random.default_rng(23)
    for shape, dim in [((300, 300), 0), ((7, 45), 0), ((40, 20, 40), 1), ((3, 9, 5), 1), ((1, 70), 0)]:
        m = rng.integers(0, 3, size=shape).astype(name)
        t, tt = db.from_numpy(m), torch.from_numpy(m)
        for op in ("max", "min"):
            got, want = getattr(t, op)(dim), getattr(tt, op)(dim)
            np.testing.assert_array_equal(got.values.numpy(), want.values.numpy(), err_msg=f"{op} {shape}")
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=f"{op} {shape}")
            first = np.argmax(m == np.expand_dims(want.values.numpy(), dim), axis=dim)
            np.testing.assert_array_equal(got.indices.numpy(), first, err_msg=f"{op} {shape}: not the first")


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_extremes_where_the_nan_watch_sums_to_nan_without_a_nan(name):
    """The lanes that watch a run (or a column) for a NaN sum its values: both
    infinities in one lane, or a sum that overflowed to +inf meeting -inf,
    make them NaN where no NaN is. The winners and their positions stand, as
    in torch (a scan finds no NaN), in runs long enough for every lane tier
    and for two threads, and down columns."""
    rng = np.random.default_rng(17)
    n = 300_003
    big = np.finfo(name).max / 4
    both = rng.standard_normal(n).astype(name)
    both[1000], both[1000 + 64 * 7] = np.inf, -np.inf  # one lane in every lane count
    overflow = np.full(n, big, dtype=name)
    overflow[4000 * 64] = -np.inf
    overflow[:64] = -1.0
    for a in (both, overflow, both[:900].copy(), overflow[::2].copy()):
        t, tt = db.from_numpy(a), torch.from_numpy(a)
        for op in ("amax", "amin", "argmax", "argmin"):
            assert getattr(t, op)().item() == getattr(tt, op)().item(), op
        for op in ("max", "min"):
            assert getattr(t, op)().item() == getattr(tt, op)().item(), op
    m = rng.standard_normal((9, 70)).astype(name)
    m[0, 3], m[5, 3] = np.inf, -np.inf
    m[:, 40] = big
    m[8, 40] = -np.inf
    t, tt = db.from_numpy(m), torch.from_numpy(m)
    for op in ("amax", "amin"):
        np.testing.assert_array_equal(getattr(t, op)(0).numpy(), getattr(tt, op)(0).numpy(), err_msg=op)
    for op in ("max", "min"):
        got, want = getattr(t, op)(0), getattr(tt, op)(0)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy(), err_msg=op)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=op)


def test_reductions_over_views_and_large_tensors_match_numpy():
    a = np.random.default_rng(1).standard_normal((300, 700))
    t = db.from_numpy(a)
    np.testing.assert_allclose(t.sum(0).numpy(), a.sum(0), rtol=1e-12)
    np.testing.assert_allclose(t.T.mean(1).numpy(), a.T.mean(1), rtol=1e-12)
    np.testing.assert_array_equal(t[::2, 1::3].amax(1).numpy(), a[::2, 1::3].max(1))
    np.testing.assert_array_equal(t.max(0).indices.numpy(), a.argmax(0))


def test_return_types_behave_like_torchs():
    r, tr = db.tensor([[1, 5], [7, 2]]).max(1), torch.tensor([[1, 5], [7, 2]]).max(1)
    assert repr(r) == repr(tr).replace("torch.", "dlbridge.")
    assert isinstance(r, tuple) and len(r) == 2
    back = pickle.loads(pickle.dumps(db.return_types.max((1, 2))))
    assert back == (1, 2) and type(back) is db.return_types.max and back.indices == 2


def test_functional_forms_take_only_tensors():
    with pytest.raises(TypeError, match="must be Tensor"):
        db.sum([1, 2])
    assert db.amin(db.tensor([[3, 1], [2, 0]]), 1).tolist() == [1, 0]
    assert db.max(db.tensor([[3, 1], [2, 0]]), 0, keepdim=True).values.tolist() == [[3, 1]]

