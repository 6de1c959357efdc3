"""Arithmetic: + - * / and unary -, broadcasting, torch's type promotion, in-place forms.

Every result is compared with what real torch gives for the same operands: the
result dtype, the values, and for rejected combinations the exception and message.
Where torch has no CPU kernel for a dtype (add on uint16/32/64, for instance) the
dtype is checked with ``torch.result_type`` and the values against the same op
done in a wide dtype and cast back, which is what torch's kernels would give.
"""

import operator

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, ptr

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv}
INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "truediv": operator.itruediv}
METHODS = {"add": "add_", "sub": "sub_", "mul": "mul_", "truediv": "div_"}

# torch's own notes when it builds its complex32 / bcomplex32 reference results
pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental", "ignore:BComplex32 support is experimental")

# torch refuses to promote uint16/32/64 with other integer dtypes; such pairs are not compared
UNSIGNED_PROMOTION = "Promotion for uint16, uint32, uint64 types is not supported"

SCALARS = {"int": 2, "neg_int": -3, "float": 2.5, "bool": True, "complex": 1 + 2j}


def values(name):
    return [False, True, True, False] if name == "bool" else [1, 2, 3, 4]


def make_pair(kind, name):
    """(dlbridge operand, torch operand) of the given kind."""
    if kind == "scalar":
        return SCALARS[name], SCALARS[name]
    data = values(name) if kind == "tensor" else (True if name == "bool" else 3)
    return db.tensor(data, dtype=getattr(db, name)), torch.tensor(data, dtype=getattr(torch, name))


OPERANDS = [("tensor", n) for n in DTYPE_NAMES] + [("0d", n) for n in DTYPE_NAMES] + [
    ("scalar", n) for n in SCALARS
]


def to_numpy(x):
    """Values of a torch or dlbridge tensor as float64 / complex128 numpy data."""
    if isinstance(x, torch.Tensor):
        x = x.to(torch.complex128 if x.is_complex() else torch.float64).numpy()
    else:
        x = x.to(db.complex128 if x.dtype.is_complex else db.float64).numpy()
    return np.asarray(x)


def torch_reference(op, a, b):
    """torch's result, falling back to a wide computation where torch lacks a kernel."""
    try:
        return op(a, b), None
    except RuntimeError as e:  # NotImplementedError included
        if "not implemented for" not in str(e):
            return None, e
    out = torch.result_type(a, b)
    wide = torch.complex128 if out.is_complex else torch.float64 if out.is_floating_point else torch.int64
    wa = a.to(wide) if isinstance(a, torch.Tensor) else a
    wb = b.to(wide) if isinstance(b, torch.Tensor) else b
    return op(wa, wb).to(out), None


def torch_only(ref, err):
    """torch's answer involves a dtype dlbridge does not have (complex32, bcomplex32)."""
    if err is not None:
        return "ComplexHalf" in str(err) or "BComplex32" in str(err)
    return ref is not None and ref.dtype in (torch.complex32, getattr(torch, "bcomplex32", torch.complex32))


def same_error(e, err):
    """dlbridge raised what torch raised. torch's NotImplementedError is a RuntimeError:
    a plain RuntimeError is accepted for it here (test_errors.py checks the exact class)."""
    expected = RuntimeError if isinstance(err, NotImplementedError) else type(err)
    return isinstance(e, expected) and str(e) == str(err).replace("torch.", "dlbridge.")


def is_bool_subtraction(op, *operands):
    return op is operator.sub and any(
        x is True or x is False or getattr(x, "dtype", None) in (db.bool, torch.bool) for x in operands)


def check_binary(op, ours_a, ours_b, theirs_a, theirs_b):
    """Returns a description of the difference with torch, or None."""
    ref, err = torch_reference(op, theirs_a, theirs_b)
    if err is not None and str(err).startswith(UNSIGNED_PROMOTION):
        return None  # torch defines no result here; dlbridge may promote as it likes
    if torch_only(ref, err) or is_bool_subtraction(op, theirs_a, theirs_b):
        return None  # the latter has its own test below
    try:
        got = op(ours_a, ours_b)
    except Exception as e:  # noqa: BLE001 - compared with torch's below
        if err is None:
            return f"raised {type(e).__name__}: {e}; torch gives {ref.dtype}"
        if not same_error(e, err):
            return f"{type(e).__name__}: {e} != torch's {type(err).__name__}: {err}"
        return None
    if err is not None:
        return f"gave {got.dtype}, torch raises {type(err).__name__}: {err}"
    if repr(got.dtype).split(".")[-1] != repr(ref.dtype).split(".")[-1]:
        return f"dtype {got.dtype} != torch's {ref.dtype}"
    if got.shape != tuple(ref.shape):
        return f"shape {got.shape} != torch's {tuple(ref.shape)}"
    if not values_match(op, got, ref):
        return f"values {got.tolist()} != torch's {ref.tolist()}"
    return None


def values_match(op, got, ref):
    ours, theirs = to_numpy(got), to_numpy(ref)
    if op is operator.truediv and ref.is_complex() and not np.isfinite(theirs).all():
        return True  # complex x / 0: test_complex_division_by_zero_like_torch
    try:
        if op is operator.truediv and (ref.is_complex() or ref.is_floating_point()):
            # torch computes t / scalar as t * (1 / scalar), and complex division with another
            # algorithm: dlbridge's correctly rounded results may differ by an ulp or two
            eps = torch.finfo(ref.real.dtype if ref.is_complex() else ref.dtype).eps
            np.testing.assert_allclose(ours, theirs, rtol=4 * eps, atol=0)
        else:
            np.testing.assert_array_equal(ours, theirs)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
@pytest.mark.parametrize("left", [k for k in OPERANDS if k[0] != "scalar"], ids=lambda k: f"{k[0]}-{k[1]}")
def test_binary_op_matches_torch(op, left):
    """left op right, for every kind of right operand (tensor, 0-d tensor, Python scalar)."""
    la, lt = make_pair(*left)
    problems = {}
    for right in OPERANDS:
        ra, rt = make_pair(*right)
        diff = check_binary(op, la, ra, lt, rt)
        if diff:
            problems[f"{right[0]}-{right[1]}"] = diff
    assert not problems, problems


@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
@pytest.mark.parametrize("scalar", SCALARS.keys())
def test_reflected_op_matches_torch(op, scalar):
    """scalar op tensor (2 - t, 1 / t, ...) for every tensor dtype."""
    problems = {}
    for right in [k for k in OPERANDS if k[0] != "scalar"]:
        ra, rt = make_pair(*right)
        diff = check_binary(op, SCALARS[scalar], ra, SCALARS[scalar], rt)
        if diff:
            problems[f"{right[0]}-{right[1]}"] = diff
    assert not problems, problems


@pytest.mark.parametrize("kind", ["tensor", "0d"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_unary_neg_matches_torch(name, kind):
    ours, theirs = make_pair(kind, name)
    try:
        ref, err = -theirs, None
    except RuntimeError as e:
        ref, err = None, e
        if "not implemented for" in str(e):  # no uint16/32/64 kernel: wrap around like C
            ref, err = (-theirs.to(torch.int64)).to(theirs.dtype), None
    for neg in (lambda t: -t, lambda t: t.neg()):
        if err is not None:
            with pytest.raises(RuntimeError) as e:
                neg(ours)
            assert str(e.value) == str(err)
        else:
            got = neg(ours)
            assert got.dtype is ours.dtype
            np.testing.assert_array_equal(to_numpy(got), to_numpy(ref))


def test_pos_returns_equal_tensor():
    t = db.tensor([1, -2])
    assert (+t).tolist() == [1, -2]


def test_documented_examples():
    t = db.tensor([1.0, 2.0, 4.0])
    assert (t + 1).tolist() == [2.0, 3.0, 5.0]
    assert (2 - t).tolist() == [1.0, 0.0, -2.0]
    assert (1 / t).tolist() == [1.0, 0.5, 0.25]
    assert (t * t).tolist() == [1.0, 4.0, 16.0]
    assert (-t).tolist() == [-1.0, -2.0, -4.0]
    assert (t - t / 2).tolist() == [0.5, 1.0, 2.0]


def test_int_true_division_gives_float32():
    r = db.tensor([1, 2, 3]) / db.tensor([2, 2, 2])
    assert r.dtype is db.float32
    assert r.tolist() == [0.5, 1.0, 1.5]
    assert (db.tensor([3]) / 2).dtype is db.float32
    assert (7 / db.tensor([2])).tolist() == [3.5]


def test_int_division_by_zero_like_torch():
    ours = (db.tensor([1, 0, -1]) / 0).tolist()
    theirs = (torch.tensor([1, 0, -1]) / 0).tolist()
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_division_by_zero_like_torch(dtype):
    # torch (like numpy and C99 Annex G) gives an infinity for nonzero / 0, not nan
    for zero in (0, 0.0, "int_tensor", "complex_tensor"):
        def divisor(mod):
            return {"int_tensor": mod.tensor([0, 0]), "complex_tensor": mod.tensor([0j, 0j])}.get(zero, zero)

        ours = db.tensor([1 + 2j, 0j], dtype=getattr(db, dtype)) / divisor(db)
        theirs = torch.tensor([1 + 2j, 0j], dtype=getattr(torch, dtype)) / divisor(torch)
        assert str(ours.tolist()) == str(theirs.tolist()), f"divisor {zero}"


def test_scalar_does_not_promote_tensor_category():
    assert (db.tensor([1, 2], dtype=db.int8) + 1000).dtype is db.int8
    assert (db.tensor([1.0], dtype=db.float16) + 1.0).dtype is db.float16
    assert (db.tensor([1], dtype=db.uint8) + 1.5).dtype is db.float32
    assert (db.tensor([1.0], dtype=db.float64) + 1j).dtype is db.complex128


def test_zero_d_tensor_does_not_promote_like_a_dimensioned_one():
    a = db.tensor([1, 2], dtype=db.int8)
    assert (a + db.tensor(5)).dtype is db.int8  # 0-d int64 tensor: same category
    assert (a + db.tensor([5])).dtype is db.int64  # 1-d: full promotion
    assert (a + db.tensor(5.0, dtype=db.float64)).dtype is db.float64  # higher category: its dtype
    assert (a + 5.0).dtype is db.float32  # Python float: the default float dtype


# --------------------------------------------------------------------------- broadcasting

BROADCAST = [((3, 1), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((5, 4), (1,)), ((1,), (0,)),
             ((2, 0), (2, 1)), ((1, 1, 1), (3,)), ((4, 1, 2), (1, 3, 1))]


@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
@pytest.mark.parametrize("sa,sb", BROADCAST, ids=str)
def test_broadcasting_like_numpy(op, sa, sb):
    a = np.arange(1, 1 + int(np.prod(sa)), dtype=np.float64).reshape(sa)
    b = np.arange(2, 2 + int(np.prod(sb)), dtype=np.float64).reshape(sb)
    r = op(db.from_numpy(a), db.from_numpy(b))
    expected = op(a, b)
    assert r.shape == expected.shape
    np.testing.assert_array_equal(r.numpy(), expected)
    r2 = op(db.from_numpy(b), db.from_numpy(a))
    np.testing.assert_array_equal(r2.numpy(), op(b, a))


def test_broadcast_3_1_plus_4():
    r = db.zeros(3, 1) + db.arange(4)
    assert r.shape == (3, 4)


def test_ops_on_non_contiguous_views():
    a = np.arange(24.0).reshape(4, 6)
    t = db.from_numpy(a)
    np.testing.assert_array_equal((t[:, ::2] + t[:, 1::2]).numpy(), a[:, ::2] + a[:, 1::2])
    np.testing.assert_array_equal((db.from_numpy(a.T) * 2).numpy(), a.T * 2)
    np.testing.assert_array_equal((db.from_numpy(a[::-1]) - 1).numpy(), a[::-1] - 1)


@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3), (2,)), ((4, 2), (3, 3, 2))], ids=str)
def test_shape_mismatch_message_like_torch(sa, sb):
    """torch's message (first mismatch counted from the trailing dimension), plus both shapes."""
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(sa) + torch.zeros(sb)
    with pytest.raises(RuntimeError) as ours:
        db.zeros(*sa) + db.zeros(*sb)
    assert str(ours.value).startswith(str(theirs.value))
    assert str(list(sa)) in str(ours.value) and str(list(sb)) in str(ours.value)


def test_shape_mismatch_names_both_sizes():
    with pytest.raises(RuntimeError, match=r"tensor a \(3\).*tensor b \(4\)"):
        db.zeros(3) * db.zeros(4)


def _bool_sub_pairs(other):
    for a, b in ((db.tensor([True, False]), other), (other, db.tensor([True, False]))):
        ta = torch.from_dlpack(a) if isinstance(a, db.Tensor) else a
        tb = torch.from_dlpack(b) if isinstance(b, db.Tensor) else b
        yield a, b, ta, tb


@pytest.mark.parametrize("other", [db.tensor([True]), db.tensor(False), True], ids=["tensor", "0d", "scalar"])
def test_bool_minus_bool_message_like_torch(other):
    for a, b, ta, tb in _bool_sub_pairs(other):
        with pytest.raises(RuntimeError) as theirs:
            ta - tb
        with pytest.raises(RuntimeError) as ours:
            a - b
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("other", [db.tensor([1]), db.tensor([1.5]), 1, 1.5], ids=["int_tensor", "float_tensor", "int", "float"])
def test_subtraction_with_one_bool_operand_raises_like_torch(other):
    # torch refuses `-` whenever one operand is a bool tensor, on either side
    for a, b, ta, tb in _bool_sub_pairs(other):
        with pytest.raises(RuntimeError) as theirs:
            ta - tb
        with pytest.raises(RuntimeError) as ours:
            a - b
        assert str(ours.value) == str(theirs.value)


def test_bool_minus_bool_raises_like_torch():
    msg = "Subtraction, the `-` operator, with two bool tensors is not supported"
    with pytest.raises(RuntimeError, match=msg):
        db.tensor([True]) - db.tensor([False])
    with pytest.raises(RuntimeError, match=msg):
        db.tensor([True]) - True


def test_bool_plus_bool_stays_bool():
    r = db.tensor([True, False]) + db.tensor([True, True])
    assert r.dtype is db.bool
    assert r.tolist() == [True, True]


def test_large_op_matches_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(10**6).astype(np.float32)
    b = rng.standard_normal(10**6).astype(np.float32)
    ta, tb = db.from_numpy(a), db.from_numpy(b)
    np.testing.assert_array_equal((ta + tb).numpy(), a + b)
    np.testing.assert_array_equal((ta * tb - ta).numpy(), a * b - a)
    np.testing.assert_array_equal((ta / 3).numpy(), a / np.float32(3))
    np.testing.assert_allclose(ta.sum().item(), a.sum(dtype=np.float64), rtol=1e-4)


UNSUPPORTED = {"str": "a", "None": None, "list": [1, 2], "object": object(), "device": db.device("cpu")}


@pytest.mark.parametrize("other", UNSUPPORTED.values(), ids=UNSUPPORTED.keys())
def test_ops_with_unsupported_operand_raise_type_error(other):
    # as torch: "unsupported operand type(s) for +: 'Tensor' and 'str'"; reflected, str and
    # list raise their own TypeError ("can only concatenate ...") before asking the tensor
    for name, op in OPS.items():
        # `t * "a"` is str repetition, which asks for t.__index__: torch raises that TypeError too
        repeats = name == "mul" and isinstance(other, (str, list))
        with pytest.raises(TypeError, match=None if repeats else "unsupported operand type"):
            op(db.zeros(2), other)
        with pytest.raises(TypeError):
            op(other, db.zeros(2))
        with pytest.raises(TypeError):
            op(other, torch.zeros(2))


# --------------------------------------------------------------------------- in place


@pytest.mark.parametrize("opname", INPLACE.keys())
def test_in_place_operators_write_into_the_shared_buffer(opname):
    a = np.array([2.0, 4.0, 8.0])
    t = db.from_numpy(a)
    before = t
    t = INPLACE[opname](t, 2)
    assert t is before
    assert t.data_ptr() == ptr(a)
    np.testing.assert_array_equal(a, OPS[opname](np.array([2.0, 4.0, 8.0]), 2))


@pytest.mark.parametrize("opname", METHODS.keys())
def test_in_place_methods_write_into_the_shared_buffer(opname):
    a = np.array([2.0, 4.0, 8.0])
    t = db.from_numpy(a)
    out = getattr(t, METHODS[opname])(db.tensor([2.0, 2.0, 2.0], dtype=db.float64))
    assert out is t
    np.testing.assert_array_equal(a, OPS[opname](np.array([2.0, 4.0, 8.0]), 2))


def test_in_place_on_a_view_changes_the_parent():
    a = np.zeros((3, 4))
    t = db.from_numpy(a)
    v = t[:, 1]
    v += 5
    assert a[:, 1].tolist() == [5.0] * 3
    assert a.sum() == 15.0
    t[1:, ::2].add_(1)
    assert a[1:, ::2].tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_in_place_broadcasts_the_other_operand():
    t = db.zeros(2, 3)
    t += db.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2
    with pytest.raises(RuntimeError):
        t += db.zeros(4, 2, 3)  # would need to grow self


def test_int_iadd_float_raises_like_torch():
    t = db.tensor([1, 2])
    with pytest.raises(RuntimeError) as e:
        t += 1.5
    assert str(e.value) == "result type Float can't be cast to the desired output type Long"
    assert t.tolist() == [1, 2]


@pytest.mark.parametrize("opname", METHODS.keys())
@pytest.mark.parametrize("left", DTYPE_NAMES)
def test_in_place_matches_torch(opname, left):
    """t.op_(other) for every other operand: torch's result (kept dtype) or torch's error."""
    problems = {}
    for right in OPERANDS:
        lo, lt = make_pair("tensor", left)
        ro, rt = make_pair(*right)

        def inplace(a, b):
            return getattr(a, METHODS[opname])(b)

        ref, err = None, None
        try:
            ref = inplace(lt, rt)
        except RuntimeError as e:
            err = e
            if "not implemented for" in str(e):  # no torch kernel: out-of-place result, cast back
                wide, err = torch_reference(OPS[opname], lt.clone(), rt)
                if err is None and not torch.can_cast(torch.result_type(lt, rt), lt.dtype):
                    err = RuntimeError(
                        f"result type {_torch_name(torch.result_type(lt, rt))} can't be cast to the "
                        f"desired output type {_torch_name(lt.dtype)}")
                ref = wide.to(lt.dtype) if err is None else None
        if (err is not None and str(err).startswith(UNSIGNED_PROMOTION)) or torch_only(ref, err) \
                or is_bool_subtraction(OPS[opname], lt, rt):
            continue
        key = f"{right[0]}-{right[1]}"
        try:
            got = inplace(lo, ro)
        except Exception as e:  # noqa: BLE001
            if err is None:
                problems[key] = f"raised {type(e).__name__}: {e}"
            elif not same_error(e, err):
                problems[key] = f"{type(e).__name__}: {e!s} != torch's {err!s}"
            elif lo.tolist() != values(left):
                problems[key] = "raised but modified self"
            continue
        if err is not None:
            problems[key] = f"gave {got.tolist()}, torch raises {err}"
        elif got is not lo or got.dtype is not getattr(db, left):
            problems[key] = "did not return self with its dtype"
        elif not values_match(OPS[opname], lo, ref):
            problems[key] = f"values {lo.tolist()} != torch's {ref.tolist()}"
    assert not problems, problems


def _torch_name(dt):
    return {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
            torch.bfloat16: "BFloat16", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
            torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
            torch.uint8: "Byte", torch.bool: "Bool", torch.uint16: "UInt16", torch.uint32: "UInt32",
            torch.uint64: "UInt64"}[dt]


def test_iadd_keeps_identity():
    t = db.zeros(3)
    ident = id(t)
    t += 1
    t -= 0.5
    t *= 4
    t /= 2
    assert id(t) == ident
    assert t.tolist() == [1.0, 1.0, 1.0]


# --------------------------------------------------------------------------- read-only operands


def _read_only():
    a = np.array([1.0, 2.0, 3.0])
    a.flags.writeable = False
    return a, db.from_numpy(a)


@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
def test_out_of_place_ops_on_read_only_tensors_work(op):
    a, t = _read_only()
    other = db.tensor([2.0, 2.0, 2.0], dtype=db.float64)
    np.testing.assert_array_equal(op(t, other).numpy(), op(a, 2.0))
    np.testing.assert_array_equal(op(other, t).numpy(), op(2.0, a))
    np.testing.assert_array_equal(op(t, 2).numpy(), op(a, 2))
    assert not op(t, other).is_read_only


@pytest.mark.parametrize("opname", INPLACE.keys())
def test_in_place_on_read_only_raises(opname):
    a, t = _read_only()
    with pytest.raises(RuntimeError):
        INPLACE[opname](t, 1)
    with pytest.raises(RuntimeError):
        getattr(t, METHODS[opname])(1)
    assert a.tolist() == [1.0, 2.0, 3.0]


def test_in_place_into_writeable_from_read_only_works():
    _, ro = _read_only()
    t = db.zeros(3, dtype=db.float64)
    t += ro
    t.copy_(t + ro)
    assert t.tolist() == [2.0, 4.0, 6.0]


# --------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_sum_matches_torch(name):
    ours, theirs = make_pair("tensor", name)
    diff = check_binary(lambda a, _: a.sum(), ours, None, theirs, None)
    assert diff is None, diff


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_mean_matches_torch(name):
    ours, theirs = make_pair("tensor", name)
    try:
        ref = theirs.mean()
    except RuntimeError as e:  # NotImplementedError for integer dtypes
        with pytest.raises(RuntimeError) as got:
            ours.mean()
        assert str(got.value) == str(e)
        return
    got = ours.mean()
    assert repr(got.dtype).split(".")[-1] == repr(ref.dtype).split(".")[-1]
    np.testing.assert_array_equal(to_numpy(got), to_numpy(ref))


def test_mean_of_int_raises():
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*Got: Long"):
        db.tensor([1, 2, 3]).mean()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_sum_of_empty_is_positive_zero_like_torch(dtype):
    ours = db.zeros(0, dtype=getattr(db, dtype)).sum()
    theirs = torch.zeros(0, dtype=getattr(torch, dtype)).sum()
    assert repr(ours).replace("dlbridge", "torch") == repr(theirs)
    assert str(ours.item()) == str(theirs.item())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("expr", ["t * 0.1", "t / 3", "0.7 * t", "1.1 - t", "t + 0.3", "t - 0.3", "0.3 + t"])
def test_half_types_with_python_numbers_round_once_like_torch(dtype, expr):
    import torch

    a = np.arange(1, 2049, dtype=np.float32)
    d = db.from_numpy(a).to(getattr(db, dtype))
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    got = eval(expr, {"t": d}).float().numpy()
    want = eval(expr, {"t": t}).float().numpy()
    np.testing.assert_array_equal(got, want)
    d2 = d.clone()
    d2.mul_(0.1)
    np.testing.assert_array_equal(d2.float().numpy(), (t * 0.1).float().numpy())


def test_in_place_writes_into_expanded_tensors_are_refused_like_torch():
    base = db.zeros(3)
    e = base.expand(2, 3)
    for write in (lambda: e.add_(1), lambda: e.fill_(2), lambda: e.copy_(db.ones(2, 3))):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            write()
    assert base.tolist() == [0.0, 0.0, 0.0]
