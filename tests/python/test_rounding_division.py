"""The rounding divisions and remainders (rows of src/backend.rs: floor_divide,
div(rounding_mode="trunc"), remainder, fmod) and their operators `//` and `%`
(reflected and in place), against PyTorch: every integer and float dtype, odd
sizes, NaN, infinities and signed zeros, numbers on either side, broadcast and
strided operands, promotion, zero integer divisors refused before anything is
written, and PyTorch's refusals word for word."""

import operator

import pytest
import torch

import dlbridge as db

INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
DTYPES = INTS + FLOATS


def floor_div(a, b):
    return torch.div(a, b, rounding_mode="floor")


def trunc_div(a, b):
    return torch.div(a, b, rounding_mode="trunc")


# name -> (torch's function, dlbridge's function); each is also a method.
OPS = {
    "floor_divide": (torch.floor_divide, db.floor_divide),
    "remainder": (torch.remainder, db.remainder),
    "fmod": (torch.fmod, db.fmod),
    "div_floor": (floor_div, lambda a, b: db.div(a, b, rounding_mode="floor")),
    "div_trunc": (trunc_div, lambda a, b: db.div(a, b, rounding_mode="trunc")),
}


def sample(dtype, shape, seed, divisor=False):
    """Random values with the edges: for integers MIN, MAX, -1 (a divisor has
    no zero); for floats NaN, +-inf, +-0 and values near the divisors."""
    g = torch.Generator().manual_seed(seed)
    td = getattr(torch, dtype)
    if dtype in INTS:
        info = torch.iinfo(td)
        x = torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(td)
        flat = x.view(-1)
        if flat.numel() >= 3:
            flat[0], flat[1], flat[2] = info.max, -1 if info.min < 0 else 1, info.min if not divisor else 7
        if divisor:
            x[x == 0] = 3
        elif flat.numel() >= 5:
            flat[4] = info.min
        return x
    x = (torch.rand(shape, generator=g, dtype=torch.float64) - 0.5) * 20
    flat = x.view(-1)
    edges = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 3.0, -3.0, 1e-3]
    for i, e in enumerate(edges[: flat.numel()]):
        flat[(i * 5 + (1 if divisor else 0)) % flat.numel()] = e
    return x.to(td)


NARROW = (torch.float16, torch.bfloat16)


def ref(theirs, x, y):
    """PyTorch's result, for float16 and bfloat16 computed in float32 and
    rounded once, as dlbridge (and torch's own scalar loop) computes them:
    torch's vectorized loop rounds the quotient to the narrow dtype before
    flooring it (float16 -8.53125 // -0.005829: 1464 there, 1463 for the
    same pair alone)."""
    narrow = next((t.dtype for t in (x, y) if isinstance(t, torch.Tensor) and t.dtype in NARROW), None)
    if narrow is None:
        return theirs(x, y)
    wide = [t.float() if isinstance(t, torch.Tensor) else torch.tensor(t, dtype=narrow).float() for t in (x, y)]
    return theirs(*wide).to(narrow)


def to_db(t):
    return db.from_dlpack(t.clone())


def same(got, want):
    got = torch.from_dlpack(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    if want.dtype.is_floating_point:  # the sign of every zero too
        zero = want == 0
        assert torch.equal(torch.signbit(got[zero]), torch.signbit(want[zero]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("n", [0, 1, 7, 257, 40_003])
def test_matches_torch(dtype, name, n):
    a, b = sample(dtype, (n,), n), sample(dtype, (n,), n + 1, divisor=True)
    theirs, ours = OPS[name]
    want = ref(theirs, a, b)
    A, B = to_db(a), to_db(b)
    same(ours(A, B), want)
    if name in ("floor_divide", "remainder", "fmod"):
        same(getattr(A, name)(B), want)
    if name == "floor_divide":
        same(A // B, want)
    if name == "remainder":
        same(A % B, want)


def every_exponent(dtype, n, seed):
    """Floats from random bits (every exponent, subnormals, infinities, NaN):
    most quotients of two such are far past the fast fmod's bound (2^29 for
    float32, 2^52 for float64), so libm's lanes sit among the fast ones."""
    bits = {torch.float32: torch.int32, torch.float64: torch.int64}[dtype]
    info = torch.iinfo(bits)
    g = torch.Generator().manual_seed(seed)
    return torch.randint(info.min, info.max, (n,), generator=g, dtype=torch.int64).to(bits).view(dtype)


def exact(name, a, b):
    """NumPy's results from libm's exact fmod; `remainder` from it by
    torch's rule (NumPy's gives a zero the divisor's sign, torch's keeps
    the dividend's)."""
    import numpy as np

    a, b = a.numpy(), b.numpy()
    with np.errstate(all="ignore"):
        if name == "floor_divide":
            return torch.from_numpy(np.floor_divide(a, b))
        m = np.fmod(a, b)
        if name == "remainder":
            m = np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)
        return torch.from_numpy(m)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_floats_of_every_exponent_are_exact(dtype, name):
    # Against libm (through NumPy), not torch: torch's vectorized fmod gives
    # NaN where x / y overflows (fmod(-8.4e208, 2.6e-159) is -2.6e-159).
    ours = OPS[name][1]
    n = 20_011
    a, b = every_exponent(dtype, n, 1), every_exponent(dtype, n, 2)
    # Quotients near the fast paths' bounds, and x just below a multiple of
    # y, where x / y in float64 rounds up to the integer above the quotient.
    y = torch.linspace(0.7, 1.9, 1000, dtype=torch.float64)
    k = torch.arange(1, 1001, dtype=torch.float64)
    below = torch.nextafter(k * y, torch.zeros(()))
    a[:1000], b[:1000] = below.to(dtype), y.to(dtype)
    huge = 2.0 ** (29 if dtype == torch.float32 else 52)
    a[1000:2000] = (huge * torch.linspace(0.5, 2.0, 1000, dtype=torch.float64)).to(dtype)
    b[1000:2000] = 1.0 + torch.rand(1000, generator=torch.Generator().manual_seed(3), dtype=dtype)
    a[2000:2002] = torch.tensor([110.72084346389788, -675.7763301612498]).to(dtype)
    b[2000:2002] = torch.tensor([1.7033975917522752, 1.0847132105317012]).to(dtype)
    same(ours(to_db(a), to_db(b)), exact(name, a, b))
    # Strided and in place go through the same blocks.
    same(ours(to_db(a)[::3], to_db(b)[::3]), exact(name, a[::3], b[::3]))
    A = to_db(a)
    getattr(A, name + "_")(to_db(b))
    same(A, exact(name, a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_in_place_writes_memory_torch_shares(dtype, name):
    a, b = sample(dtype, (1003,), 5), sample(dtype, (1003,), 6, divisor=True)
    want = ref(getattr(torch, name), a, b)
    shared = a.clone()
    A = db.from_dlpack(shared)
    assert getattr(A, name + "_")(to_db(b)) is A
    same(A, want)
    torch.testing.assert_close(shared, want, rtol=0, atol=0, equal_nan=True)  # torch sees the write


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_in_place_and_div_modes_in_place(dtype):
    a, b = sample(dtype, (64,), 8), sample(dtype, (64,), 9, divisor=True)
    for iop, want in ((operator.ifloordiv, ref(torch.floor_divide, a, b)), (operator.imod, ref(torch.remainder, a, b))):
        A = to_db(a)
        R = iop(A, to_db(b))
        assert R is A
        same(A, want)
    for mode in ("floor", "trunc"):
        A = to_db(a)
        assert A.div_(to_db(b), rounding_mode=mode) is A
        want = ref(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b)
        same(A, want)
        A = to_db(a)
        assert A.divide_(to_db(b), rounding_mode=mode) is A
        same(A, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_numbers_on_either_side_as_torch(dtype, name):
    a = sample(dtype, (33,), 3, divisor=True)
    A = to_db(a)
    theirs, ours = OPS[name]
    numbers = [3, -2, 7, 2.5, -0.75, True] if dtype in FLOATS else [3, -2, 7, True, 2.5, -0.75]
    for s in numbers:
        same(ours(A, s), ref(theirs, a, s))
        if name in ("floor_divide", "remainder"):
            # The number first, as torch's Scalar_Tensor overloads.
            same(getattr(db, name)(s, A), ref(getattr(torch, name), s, a))
        if name == "floor_divide":
            same(A // s, ref(operator.floordiv, a, s))
            same(s // A, ref(operator.floordiv, s, a))
        if name == "remainder":
            same(A % s, ref(operator.mod, a, s))
            same(s % A, ref(operator.mod, s, a))


@pytest.mark.parametrize("name", OPS)
def test_broadcast_strided_and_promoted_operands(name):
    theirs, ours = OPS[name]
    m = sample("float32", (6, 8), 11)
    row = sample("int16", (8,), 12, divisor=True)
    want = theirs(m.T[::2], row.reshape(8, 1)[::2])
    same(ours(to_db(m).T[::2], to_db(row).reshape(8, 1)[::2]), want)
    i8, i64 = sample("int8", (5, 7), 13), sample("int64", (7,), 14, divisor=True)
    same(ours(to_db(i8), to_db(i64)), theirs(i8, i64))  # int8 op int64 -> int64
    u8, i8b = sample("uint8", (9,), 15), sample("int8", (9,), 16, divisor=True)
    same(ours(to_db(u8), to_db(i8b)), theirs(u8, i8b))  # uint8 op int8 -> int16


def test_the_most_negative_integer_wraps_as_torch():
    # MIN // -1 wraps to MIN and MIN % -1 is 0, as torch's floor_divide,
    # remainder and fmod give them (torch's own trunc division of int32 and
    # int64 MIN by -1 dies of SIGFPE, so its results are written out here).
    for dtype in ["int8", "int16", "int32", "int64"]:
        td = getattr(torch, dtype)
        mn = torch.iinfo(td).min
        a, b = torch.tensor([mn, mn, mn], dtype=td), torch.tensor([-1, 1, 2], dtype=td)
        quotient, rest = torch.tensor([mn, mn, mn // 2], dtype=td), torch.zeros(3, dtype=td)
        for name, (theirs, ours) in OPS.items():
            want = quotient if name.startswith(("floor", "div")) else rest
            same(ours(to_db(a), to_db(b)), want)
            if name in ("floor_divide", "remainder", "fmod"):
                same(ours(to_db(a), to_db(b)), theirs(a, b))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", OPS)
def test_a_zero_integer_divisor_is_refused_before_anything_is_written(dtype, name):
    theirs, ours = OPS[name]
    a = sample(dtype, (50,), 4)
    b = sample(dtype, (50,), 5, divisor=True)
    b[37] = 0
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        theirs(a, b)
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        ours(to_db(a), to_db(b))
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        ours(to_db(a), 0)
    if name in ("floor_divide", "remainder", "fmod"):
        shared = a.clone()
        A = db.from_dlpack(shared)
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            getattr(A, name + "_")(to_db(b))
        assert torch.equal(shared, a)  # nothing written
    # a number that wraps to zero in the dtype is a zero divisor too, as in torch
    if dtype == "int8":
        for wraps in (256, torch.tensor(256)):  # a number, a zero-dim int64 tensor
            with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
                theirs(a, wraps)
            with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
                ours(to_db(a), wraps if isinstance(wraps, int) else to_db(wraps))


def test_float_zero_divisors_give_ieee_results():
    a = torch.tensor([1.0, -1.0, 0.0, float("nan")])
    z = torch.zeros(4)
    for theirs, ours in OPS.values():
        same(ours(to_db(a), to_db(z)), theirs(a, z))
    i = torch.tensor([5, -5])
    same(db.floor_divide(to_db(i), 0.0), torch.floor_divide(i, 0.0))  # promoted to float: no error


@pytest.mark.parametrize(
    "dtype,torch_name",
    [("bool", "Bool"), ("complex64", "ComplexFloat"), ("complex128", "ComplexDouble")],
)
@pytest.mark.parametrize("name,kernel", [("floor_divide", "div_floor"), ("remainder", "remainder"),
                                          ("fmod", "fmod"), ("div_trunc", "div_trunc"),
                                          ("div_floor", "div_floor")])
def test_refusals_word_for_word(dtype, torch_name, name, kernel):
    theirs, ours = OPS[name]
    t = torch.ones(3, dtype=getattr(torch, dtype))
    message = f'"{kernel}_cpu" not implemented for \'{torch_name}\''
    with pytest.raises(NotImplementedError) as want:
        theirs(t, t)
    assert str(want.value) == message
    with pytest.raises(NotImplementedError) as got:
        ours(to_db(t), to_db(t))
    assert str(got.value) == message


def test_storage_only_dtypes_are_refused():
    t = db.zeros(3, dtype=db.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e4m3fn'"):
        t // t


def test_a_number_first_where_torch_has_no_such_overload():
    t = torch.tensor([1.0, 2.0])
    for name in ["fmod", "maximum", "minimum"]:
        with pytest.raises(TypeError):
            getattr(torch, name)(5, t)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
            getattr(db, name)(5, to_db(t))
    # Two numbers: no tensor at all.
    with pytest.raises(TypeError, match=r"^remainder\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
        db.remainder(5, 2)
    with pytest.raises(TypeError):
        torch.remainder(5, 2)
    # A zero divisor tensor after a number is refused as torch's.
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.remainder(5, torch.tensor([0]))
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        db.floor_divide(5, db.tensor([1, 0]))


def test_bad_rounding_modes_and_operands():
    a = db.tensor([1, 2])
    for call, exc, msg in [
        (lambda: db.div(a, a, rounding_mode="round"), RuntimeError,
         "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"),
        (lambda: a.div(a, rounding_mode=3), TypeError, "div(): argument 'rounding_mode' must be str, not int"),
        (lambda: a.floor_divide("x"), TypeError, "floor_divide(): argument 'other' (position 1) must be Tensor, not str"),
        (lambda: db.remainder([1], a), TypeError, "remainder(): argument 'input' (position 1) must be Tensor, not list"),
        (lambda: a // "x", TypeError, "unsupported operand type(s) for //: 'dlbridge.Tensor' and 'str'"),
        (lambda: a.true_divide(a, rounding_mode="floor"), TypeError,
         "true_divide() got an unexpected keyword argument 'rounding_mode'"),
    ]:
        with pytest.raises(exc) as e:
            call()
        assert str(e.value) == msg
    # rounding_mode=None is true division
    same(a.div(a, rounding_mode=None), torch.tensor([1.0, 1.0]))


def test_rust_names_and_c_names_come_from_the_rows():
    ops = dict(db._core._generated_ops())
    for name in ("floor_divide", "remainder", "fmod"):
        assert ops[name] == "binary"
        assert getattr(db, name).__text_signature__ == "(input, other)"
    assert "div_trunc" not in ops and "div_floor" not in ops  # reached through div(rounding_mode=)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_wide_unsigned_integers_match_numpy(dtype, name):
    # torch has no CPU kernel for these dtypes; NumPy's unsigned results are the same.
    import numpy as np

    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    a = rng.integers(0, info.max, 1003, dtype=dtype, endpoint=True)
    b = rng.integers(1, 1000, 1003, dtype=dtype)
    # Every magnitude (64-bit lanes below 2^52 divide in float64, the rest
    # by idiv), and large divisors.
    a[500:] >>= rng.integers(0, info.bits, 503).astype(dtype)
    b[::7] = rng.integers(1, info.max, len(b[::7]), dtype=dtype, endpoint=True)
    a[:3] = info.max, 0, 1
    want = getattr(np, name)(a, b)
    got = getattr(db, name)(db.from_numpy(a), db.from_numpy(b))
    assert got.dtype == getattr(db, dtype)
    assert (got.numpy() == want).all()
    assert (getattr(db.from_numpy(a), name)(7).numpy() == getattr(np, name)(a, np.array(7, dtype=dtype))).all()


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_int64_of_every_magnitude_matches_torch(name):
    # Lanes below 2^52 divide in float64, the others by idiv, in one block.
    g = torch.Generator().manual_seed(11)
    n = 4099
    a = torch.randint(-(2**63), 2**63 - 1, (n,), generator=g) >> torch.randint(0, 64, (n,), generator=g)
    b = torch.randint(-(2**63), 2**63 - 1, (n,), generator=g) >> torch.randint(0, 64, (n,), generator=g)
    b[b == 0] = -3
    a[:6] = torch.tensor([-(2**63), -(2**63), 2**63 - 1, -(2**52), 2**52 - 1, 2**52])
    b[:6] = torch.tensor([-1, 1, -1, 3, -3, -(2**52)])
    theirs, ours = OPS[name]
    same(ours(to_db(a), to_db(b)), theirs(a, b))
    same(ours(to_db(a), 7), theirs(a, 7))
