"""The bitwise ops (rows of src/backend.rs: bitwise_and, bitwise_or, bitwise_xor,
bitwise_not) and their operators `&`, `|`, `^`, `~` (reflected and in place), against
PyTorch: every integer dtype and bool, numbers, broadcast and strided operands,
promotion, and PyTorch's refusals of floats word for word."""

import operator

import numpy as np
import pytest
import torch

import dlbridge as db

INTS = ["uint8", "int8", "int16", "int32", "int64"]
DTYPES = ["bool", *INTS]
OPS = {"bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor}
IOPS = {"bitwise_and": operator.iand, "bitwise_or": operator.ior, "bitwise_xor": operator.ixor}


def sample(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        return torch.rand(shape, generator=g) > 0.5
    td = getattr(torch, dtype)
    info = torch.iinfo(td)
    x = torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(td)
    flat = x.view(-1)
    if flat.numel() >= 3:
        flat[0], flat[1], flat[2] = info.min, info.max, -1 if info.min < 0 else 0
    return x


def to_db(t):
    return db.from_dlpack(t.clone())


def same(got, want):
    got = torch.from_dlpack(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("n", [0, 1, 7, 257, 40_003])
def test_binary_bitwise_matches_torch(dtype, name, n):
    a, b = sample(dtype, (n,), n), sample(dtype, (n,), n + 1)
    want = getattr(torch, name)(a, b)
    A, B = to_db(a), to_db(b)
    same(OPS[name](A, B), want)
    same(getattr(db, name)(A, B), want)
    same(getattr(A, name)(B), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7, 257, 40_003])
def test_bitwise_not_matches_torch(dtype, n):
    a = sample(dtype, (n,), n)
    want = ~a
    A = to_db(a)
    same(~A, want)
    same(db.bitwise_not(A), want)
    same(A.bitwise_not(), want)
    assert A.bitwise_not_() is A
    same(A, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_numbers_on_either_side_as_torch(dtype, name):
    a = sample(dtype, (33,), 3)
    A = to_db(a)
    numbers = [True, False] if dtype == "bool" else [True, 0, 1, 5, -1, 2**40]
    for s in numbers:
        f = OPS[name]
        same(f(A, s), f(a, s))
        same(f(s, A), f(s, a))
        same(getattr(db, name)(A, s), getattr(torch, name)(a, s))
        # The number first, as torch's Scalar_Tensor overload.
        same(getattr(db, name)(s, A), getattr(torch, name)(s, a))


@pytest.mark.parametrize("name", OPS)
def test_broadcast_strided_and_promoted_operands_as_torch(name):
    f = OPS[name]
    m = sample("int32", (30, 40), 7)
    cases = [
        (m, m[0]),
        (m[:, :1], m[0]),
        (m[::2, ::2], m[1::2, 1::2]),
        (m[:, :30].t(), m[:30, :30]),
        (m, torch.tensor(6, dtype=torch.int64)),  # a zero-dim tensor: int32 stays
        (m, sample("int64", (40,), 8)),  # promotion to int64
        (sample("uint8", (40,), 9), sample("int8", (40,), 10)),  # uint8 with int8: int16
        (sample("bool", (30, 40), 11), m),  # bool with an integer: the integer
    ]
    for a, b in cases:
        same(f(to_db(a), to_db(b)), f(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_in_place_writes_the_memory_torch_shares(dtype, name):
    a, b = sample(dtype, (9, 8), 1), sample(dtype, (8,), 2)
    A = to_db(a)
    alias = torch.from_dlpack(A)
    want = OPS[name](a, b)
    X = A
    X = IOPS[name](X, to_db(b))
    assert X is A
    same(A, want)
    assert torch.equal(alias, want)
    # The named in-place method on a strided view: only its elements change.
    A = to_db(a)
    assert getattr(A[1::2, ::3], name + "_")(to_db(b[::3])) is not None
    want = a.clone()
    getattr(want[1::2, ::3], name + "_")(b[::3])
    same(A, want)


def wide_unsigned(dtype, n, seed):
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(0, info.max, n, dtype=dtype, endpoint=True)
    x[:2] = info.max, 0
    return x


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_wide_unsigned_integers_match_numpy(dtype):
    # torch has no CPU kernels for these dtypes; NumPy's are the reference.
    a, b = wide_unsigned(dtype, 1001, 1), wide_unsigned(dtype, 1001, 2)
    A, B = db.from_numpy(a), db.from_numpy(b)
    for name, f in OPS.items():
        got = f(A, B)
        assert got.dtype == getattr(db, dtype)
        assert (got.numpy() == getattr(np, name)(a, b)).all()
    assert ((~A).numpy() == np.invert(a)).all()


def raised(f):
    with pytest.raises(Exception) as info:
        f()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64"])
def test_floats_are_refused_as_torch_refuses_them(dtype):
    a = torch.ones(3, dtype=getattr(torch, dtype))
    A = to_db(a)
    i = torch.ones(3, dtype=torch.int32)
    I = to_db(i)
    pairs = [
        (lambda: a & a, lambda: A & A),
        (lambda: a | 1, lambda: A | 1),
        (lambda: i ^ a, lambda: I ^ A),
        (lambda: torch.bitwise_and(a, a), lambda: db.bitwise_and(A, A)),
        (lambda: torch.bitwise_not(a), lambda: db.bitwise_not(A)),
        (lambda: a.bitwise_not_(), lambda: A.bitwise_not_()),
        (lambda: ~a, lambda: ~A),
    ]
    if dtype != "complex64":  # torch's complex message names the promotion, ours the kernel
        pairs.append((lambda: i & 1.5, lambda: I & 1.5))
    for theirs, ours in pairs:
        assert raised(ours) == raised(theirs)


def test_in_place_casts_as_torch_and_refuses_what_it_refuses():
    # int8 &= int64 casts back (one integer kind); bool |= int64 is refused.
    a, b = sample("int8", (5,), 1), sample("int64", (5,), 2)
    A, B = to_db(a), to_db(b)
    A &= B
    a &= b
    same(A, a)
    m = torch.ones(5, dtype=torch.bool)
    M = to_db(m)
    assert raised(lambda: M.bitwise_or_(B)) == raised(lambda: m.bitwise_or_(b))


def test_other_objects_are_type_errors():
    A = to_db(torch.ones(3, dtype=torch.int32))
    for f in (lambda: A & object(), lambda: object() | A, lambda: A ^ "x"):
        with pytest.raises(TypeError):
            f()


def test_masks_combine_as_in_torch_code():
    x = torch.arange(-5, 15, dtype=torch.float32)
    X = db.from_dlpack(x.clone())
    want = ((x > 0) & (x < 10)) | ~(x != 12)
    same(((X > 0) & (X < 10)) | ~(X != 12), want)
