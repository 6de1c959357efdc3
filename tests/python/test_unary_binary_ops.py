"""The ops generated from the op tables of src/backend.rs (maximum, minimum, exp, log,
sqrt) and the generic elementwise loops under every op, against PyTorch: every dtype,
odd sizes, strided, broadcast and in-place operands, NaN and infinities."""

import math

import pytest
import torch

import dlbridge as db

REAL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
SIZES = [0, 1, 7, 255, 257, 1023, 40_003]  # 40_003: past the threads' threshold, odd
SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 3e38]

UNARY = [name for name, kind in db._core._generated_ops() if kind == "unary"]
# The rounding divisions and remainders refuse zero integer divisors, which these
# samples hold, and have tests of their own (test_rounding_division.py).
ROUNDING = {"floor_divide", "remainder", "fmod"}
BINARY = [name for name, kind in db._core._generated_ops() if kind == "binary" and name not in ROUNDING]
# The rows for floats (and integers promoted to floats); the bitwise rows take integers
# and bools only and have tests of their own (test_bitwise.py).
FLOAT_UNARY = [name for name in UNARY if not name.startswith("bitwise_")]
FLOAT_BINARY = [name for name in BINARY if not name.startswith("bitwise_")]


def sample(dtype, shape, seed):
    """A torch tensor of `dtype` with NaN, infinities, signed zeros and values around them."""
    g = torch.Generator().manual_seed(seed)
    td = getattr(torch, dtype)
    n = math.prod(shape)
    if dtype == "bool":
        return torch.rand(shape, generator=g) > 0.5
    if td.is_complex:
        re = sample("float64", shape, seed)
        im = sample("float64", shape, seed + 1).flip(-1) if shape else sample("float64", shape, seed + 1)
        return torch.complex(re, im).to(td)
    if td.is_floating_point:
        x = torch.randn(n, generator=g, dtype=torch.float64) * 8
        k = min(n, len(SPECIALS))
        x[:k] = torch.tensor(SPECIALS[:k], dtype=torch.float64)
        x = x[torch.randperm(n, generator=g)] if n else x
        return x.to(td).reshape(shape)
    info = torch.iinfo(td)
    lo, hi = max(info.min, -120), min(info.max, 120)
    x = torch.randint(lo, hi + 1, (n,), generator=g, dtype=torch.int64)
    if n >= 2:
        x[0], x[1] = info.min, info.max
    return x.to(td).reshape(shape)


def to_db(t):
    return db.from_dlpack(t.clone())


def to_torch(t):
    return torch.from_dlpack(t)


def same(got, want):
    got = to_torch(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.is_floating_point() or want.is_complex():
        torch.testing.assert_close(got, want, equal_nan=True, rtol=None, atol=None)
    else:
        assert torch.equal(got, want)


def unary_supported(name, dtype):
    """Whether torch computes `name` for `dtype` on the CPU (dlbridge then must as well)."""
    try:
        getattr(torch, name)(sample(dtype, (2,), 0))
        return True
    except (RuntimeError, TypeError):
        return False


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_unary_matches_torch_for_every_dtype_and_size(name, dtype):
    for n in SIZES:
        x = sample(dtype, (n,), n)
        if not unary_supported(name, dtype):
            with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
                getattr(to_db(x), name)()
            return
        want = getattr(torch, name)(x)
        same(getattr(to_db(x), name)(), want)
        same(getattr(db, name)(to_db(x)), want)


WIDE_UNSIGNED = ["uint16", "uint32", "uint64"]


def unsigned_sample(dtype, n, seed):
    """Values of a wide unsigned dtype, its extremes among them, as NumPy's
    array (torch has few kernels for these dtypes)."""
    import numpy as np

    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(0, 1000, n, dtype=np.uint64).astype(dtype)
    if n >= 3:
        x[0], x[1], x[2] = info.max, 0, info.max - 1
    return x


@pytest.mark.parametrize("name", FLOAT_UNARY)
@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_unary_of_wide_unsigned_integers(name, dtype):
    # torch has no CPU kernel here; its rule (integers compute in the
    # default float dtype) applied to the same values, exact in float64
    # below 2^53 and rounded once to float32, is what its kernel would give.
    for n in SIZES:
        x = unsigned_sample(dtype, n, n)
        want = getattr(torch, name)(torch.from_numpy(x.astype("float64"))).to(torch.float32)
        same(getattr(db.from_numpy(x), name)(), want)
        same(getattr(db, name)(db.from_numpy(x)), want)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_binary_of_wide_unsigned_integers_matches_numpy(name, dtype):
    import numpy as np

    for n in SIZES:
        a, b = unsigned_sample(dtype, n, n), unsigned_sample(dtype, n, n + 1)[::-1].copy()
        want = getattr(np, name)(a, b)
        for got in (getattr(db.from_numpy(a), name)(db.from_numpy(b)), getattr(db, name)(db.from_numpy(a), db.from_numpy(b))):
            assert got.dtype == getattr(db, dtype)
            assert (got.numpy() == want).all()
    # Strided and broadcast operands.
    m = unsigned_sample(dtype, 30 * 40, 9).reshape(30, 40)
    for x, y in [(m, m[0]), (m[::2, ::3], m[1::2, ::3]), (m.T[:30, :30], m[:30, :30])]:
        assert (getattr(db.from_numpy(x), name)(db.from_numpy(y)).numpy() == getattr(np, name)(x, y)).all()


@pytest.mark.parametrize("name", FLOAT_UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32"])
def test_unary_of_strided_views(name, dtype):
    x = sample(dtype, (37, 41), 3)
    for view in (lambda t: t[::2, 1::3], lambda t: t.t(), lambda t: t[5]):
        same(getattr(view(to_db(x)), name)(), getattr(torch, name)(view(x)))


@pytest.mark.parametrize("name", FLOAT_UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_unary_in_place_writes_the_memory_views_share(name, dtype):
    for n in (7, 40_003):
        x = sample(dtype, (n,), 5)
        t = to_db(x)
        alias = torch.from_dlpack(t)
        assert getattr(t, name + "_")() is t
        want = getattr(torch, name)(x)
        same(t, want)
        torch.testing.assert_close(alias, want, equal_nan=True)
    # A strided view in place: only its elements change.
    x = sample(dtype, (9, 8), 6)
    t = to_db(x)
    getattr(t[1::2, ::3], name + "_")()
    want = x.clone()
    getattr(want[1::2, ::3], name + "_")()
    same(t, want)


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_in_place_refuses_integer_tensors_as_torch(name):
    x = torch.arange(4, dtype=torch.int64)
    with pytest.raises(RuntimeError) as theirs:
        getattr(x.clone(), name + "_")()
    with pytest.raises(RuntimeError) as ours:
        getattr(to_db(x), name + "_")()
    assert str(ours.value) == str(theirs.value)


def binary_supported(name, dtype):
    try:
        getattr(torch, name)(sample(dtype, (2,), 0), sample(dtype, (2,), 1))
        return True
    except (RuntimeError, TypeError):
        return False


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_binary_matches_torch_for_every_dtype_and_size(name, dtype):
    for n in SIZES:
        a, b = sample(dtype, (n,), n), sample(dtype, (n,), n + 1)
        if not binary_supported(name, dtype):
            with pytest.raises((RuntimeError, TypeError, NotImplementedError)) as ours:
                getattr(to_db(a), name)(to_db(b))
            return
        want = getattr(torch, name)(a, b)
        same(getattr(to_db(a), name)(to_db(b)), want)
        same(getattr(db, name)(to_db(a), to_db(b)), want)


@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_binary_nan_propagates_from_either_side(name):
    a = torch.tensor([math.nan, 1.0, math.nan, -math.inf, 0.0, -0.0])
    b = torch.tensor([1.0, math.nan, math.nan, math.inf, -0.0, 0.0])
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        x, y = a.to(getattr(torch, dtype)), b.to(getattr(torch, dtype))
        same(getattr(to_db(x), name)(to_db(y)), getattr(torch, name)(x, y))


@pytest.mark.parametrize("name", FLOAT_BINARY)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "uint8"])
def test_binary_broadcasts_promotes_and_reads_strided_views(name, dtype):
    m = sample(dtype, (30, 40), 7)
    cases = [
        (m, m[0]),
        (m[:, :1], m[0]),
        (m[::2, ::2], m[1::2, 1::2]),
        (m[:, :30].t(), m[:30, :30]),
        (m, sample("float64", (40,), 8)),  # promotion to float64
        (m, torch.tensor(2, dtype=getattr(torch, dtype))),  # a zero-dim tensor
    ]
    for a, b in cases:
        same(getattr(to_db(a), name)(to_db(b)), getattr(torch, name)(a, b))


@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_binary_takes_only_tensors_as_torch(name):
    t = to_db(torch.ones(3))
    with pytest.raises(TypeError) as theirs:
        getattr(torch.ones(3), name)(2)
    with pytest.raises(TypeError) as ours:
        getattr(t, name)(2)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", BINARY)
def test_binary_entry_points_take_arguments_by_position_or_name_as_torch(name):
    """The generated functions and methods are fast entry points (fastcall.rs) that take
    their operands by position or, as torch's, by name, in any order."""
    dtype = "int32" if name.startswith("bitwise_") else "float32"
    a, b = sample(dtype, (9,), 1), sample(dtype, (9,), 2)
    A, B = to_db(a), to_db(b)
    want = getattr(torch, name)(a, b)
    f = getattr(db, name)
    for got in (f(A, B), f(A, other=B), f(input=A, other=B), f(other=B, input=A),
                getattr(A, name)(B), getattr(A, name)(other=B), getattr(db.Tensor, name)(A, B)):
        same(got, want)
    for call in (lambda: f(A), lambda: f(A, B, B), lambda: f(A, B, input=A), lambda: f(A, input=A),
                 lambda: f(A, bogus=B), lambda: f(other=B), lambda: getattr(A, name)(),
                 lambda: getattr(A, name)(B, other=B), lambda: getattr(db.Tensor, name)(3, B)):
        with pytest.raises(TypeError):
            call()
    # A number first where torch's function takes one (bitwise_and(3, t)), refused where not (maximum).
    try:
        number_first = getattr(torch, name)(3, b)
    except TypeError:
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
            f(3, B)
    else:
        same(f(3, B), number_first)
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'other'"):
        f(input=A)
    with pytest.raises(TypeError, match=r"got multiple values for argument 'input'"):
        f(A, B, input=A)
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'bogus'"):
        f(A, bogus=B)
    assert f.__name__ == name and getattr(db.Tensor, name).__name__ == name
    assert f.__text_signature__ == "(input, other)"
    assert getattr(db.Tensor, name).__text_signature__ == "($self, other)"


@pytest.mark.parametrize("name", UNARY)
def test_unary_entry_points_take_arguments_by_position_or_name_as_torch(name):
    a = sample("int32" if name.startswith("bitwise_") else "float32", (9,), 3).abs()
    A = to_db(a)
    want = getattr(torch, name)(a)
    f = getattr(db, name)
    for got in (f(A), f(input=A), getattr(A, name)(), getattr(db.Tensor, name)(A)):
        same(got, want)
    B = to_db(a)
    assert getattr(B, name + "_")() is B
    same(B, want)
    for call in (lambda: f(), lambda: f(A, A), lambda: f(A, input=A), lambda: f(x=A),
                 lambda: getattr(A, name)(A), lambda: getattr(A, name + "_")(A), lambda: f(3)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        f(3)
    assert f.__text_signature__ == "(input)"
    assert getattr(db.Tensor, name).__text_signature__ == "($self)"
    assert getattr(db.Tensor, name + "_").__text_signature__ == "($self)"
    assert f.__doc__ and getattr(db.Tensor, name + "_").__doc__


# ----- the generic loops under the older ops: layouts and half precision


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32", "uint8", "bool"])
def test_arithmetic_in_every_layout_matches_torch(dtype):
    m = sample(dtype, (33, 65), 11)
    b = sample(dtype, (33, 65), 12)
    ops = [lambda x, y: x + y, lambda x, y: x * y]
    if dtype != "bool":
        ops.append(lambda x, y: x - y)
    for op in ops:
        for a2, b2 in [(m, b), (m, b[0]), (m[::2, ::3], b[::2, 1::3]), (m.t(), b.t()), (m[:, :1], b[0])]:
            same(op(to_db(a2), to_db(b2)), op(a2, b2))
    # Numbers on either side, in place on a strided view.
    if dtype != "bool":
        same(to_db(m) * 3, m * 3)
        same(3 - to_db(m), 3 - m)
        t = to_db(m)
        t[1::2, ::4].add_(5)
        want = m.clone()
        want[1::2, ::4].add_(5)
        same(t, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("row", [63, 64, 65, 255, 256, 257, 600])
def test_half_precision_strided_rows_match_torch_bit_for_bit(dtype, row):
    # Rows past a block (256) and a chunk (64), every other element read,
    # written in place every third: the gathered and scattered paths.
    m = sample(dtype, (3, 3 * row), 16)
    b = sample(dtype, (3, 3 * row), 17)

    def same_bits(got, want):
        # NaN payloads are the hardware's (torch's bfloat16 rounding makes
        # every NaN 0x7fc0, its float16 keeps them); the rest bit for bit.
        got = to_torch(got)
        assert torch.equal(got.isnan(), want.isnan())
        keep = ~want.isnan()
        assert torch.equal(got[keep].view(torch.int16), want[keep].view(torch.int16))

    for x, y in [(m[:, ::3], b[:, 1::3]), (m[:, ::3], b[0, 2::3]), (m[:, 1::3].t(), b[:, ::3].t())]:
        for op in (lambda p, q: p + q, lambda p, q: p * q, lambda p, q: p / q, lambda p, q: -p):
            same_bits(op(to_db(x), to_db(y)), op(x, y))
    t = to_db(m)
    t[:, 1::3].mul_(to_db(b[:, ::3]))
    want = m.clone()
    want[:, 1::3].mul_(b[:, ::3])
    same_bits(t, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_rounds_once_against_a_float32_number(dtype):
    x = sample(dtype, (40_003,), 13)
    same(to_db(x) * 0.1, x * 0.1)
    t = to_db(x)
    t.mul_(0.1)
    same(t, x * 0.1)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int64", "uint8"])
def test_comparisons_in_every_layout_match_torch(dtype):
    m = sample(dtype, (33, 65), 14)
    b = sample(dtype, (33, 65), 15)
    for a2, b2 in [(m, b), (m, b[0]), (m[::2, ::3], b[::2, 1::3]), (m.t(), b.t())]:
        for op in (lambda x, y: x < y, lambda x, y: x >= y, lambda x, y: x == y):
            same(op(to_db(a2), to_db(b2)), op(a2, b2))
    same(to_db(m) <= 1, m <= 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["exp", "log"])
def test_exp_and_log_of_an_empty_import_whose_pointer_is_null(dtype, name):
    # torch's empty tensors have a null data pointer; the dense exp/log path
    # once made a slice of it (undefined behaviour; caught by the ASan build).
    t = torch.empty(0, dtype=dtype)
    assert t.data_ptr() == 0
    d = db.from_dlpack(t)
    r = getattr(d, name)()
    assert tuple(r.shape) == (0,) and r.dtype == db.from_dlpack(t).dtype
    getattr(d, name + "_")()
    assert d.numel() == 0
