"""PyTorch's named arithmetic (src/python/named.rs): `add`/`sub` with `alpha=`,
`div` with `rounding_mode=`, the aliases (`subtract`, `multiply`, `divide`,
`true_divide`, `negative`), the in-place forms and the functions
(`dlbridge.add(input, other, *, alpha=1)`), against PyTorch: results and
dtypes, alpha's checks and messages word for word, numbers on either side."""

import pytest
import torch

import dlbridge as db

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]
BINARY = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide"]


def sample(dtype, n, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        return torch.rand(n, generator=g) > 0.5
    td = getattr(torch, dtype)
    if td.is_floating_point or td.is_complex:
        return ((torch.rand(n, generator=g, dtype=torch.float64) - 0.5) * 20).to(td)
    info = torch.iinfo(td)
    return torch.randint(max(info.min, -100), min(info.max, 100), (n,), generator=g, dtype=torch.int64).to(td)


def to_db(t):
    return db.from_dlpack(t.clone())


def same(got, want):
    got = torch.from_dlpack(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def outcome(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return e


def same_outcome(ours, theirs, fused=False):
    """Both return equal tensors, or both raise the same exception type and
    message. `fused`: `a + alpha * b`, which torch's vector loop computes
    with one fused multiply-add and dlbridge with a rounded product (float32
    for float16 and bfloat16), so floats may differ in the last bit."""
    got, want = outcome(ours), outcome(theirs)
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"expected {want!r}, got a result"
        assert type(got) is type(want) and str(got) == str(want), (got, want)
    else:
        assert not isinstance(got, Exception), f"expected a result, got {got!r}"
        if fused and (want.dtype.is_floating_point or want.dtype.is_complex):
            got = torch.from_dlpack(got)
            assert got.dtype == want.dtype
            torch.testing.assert_close(got, want, equal_nan=True)  # torch's default tolerances
        else:
            same(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_functions_and_methods_match_torch(dtype, name):
    a, b = sample(dtype, 257, 1), sample(dtype, 257, 2)
    A, B = to_db(a), to_db(b)
    same_outcome(lambda: getattr(db, name)(A, B), lambda: getattr(torch, name)(a, b))
    same_outcome(lambda: getattr(A, name)(B), lambda: getattr(a, name)(b))
    same_outcome(lambda: getattr(db, name)(input=A, other=B), lambda: getattr(torch, name)(input=a, other=b))
    # a number on either side of the function
    for s in (3, 2.5, True):
        same_outcome(lambda: getattr(db, name)(A, s), lambda: getattr(torch, name)(a, s))
        same_outcome(lambda: getattr(db, name)(s, B), lambda: getattr(torch, name)(s, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_in_place_forms_match_torch(dtype, name):
    a, b = sample(dtype, 65, 3), sample(dtype, 65, 4)
    shared = a.clone()
    A = db.from_dlpack(shared)
    want = outcome(lambda: getattr(a.clone(), name + "_")(b))
    got = outcome(lambda: getattr(A, name + "_")(to_db(b)))
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
        assert torch.equal(shared, a)  # a refused write leaves the memory whole
    else:
        assert got is A
        same(A, want)
        assert torch.equal(shared, want)  # torch sees the write


ALPHAS = [2, -3, 0, 1, 1.0, 0.5, -1.25, True, False, 2j, 1e5, 1e300, 300, 2**40, -1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["add", "sub", "subtract"])
def test_alpha_as_torch(dtype, name):
    a, b = sample(dtype, 33, 5), sample(dtype, 33, 6)
    A, B = to_db(a), to_db(b)
    for alpha in ALPHAS:
        same_outcome(lambda: getattr(A, name)(B, alpha=alpha), lambda: getattr(a, name)(b, alpha=alpha), True)
        same_outcome(lambda: getattr(db, name)(A, 3, alpha=alpha),
                     lambda: getattr(torch, name)(a, 3, alpha=alpha), True)
        same_outcome(lambda: getattr(db, name)(2, B, alpha=alpha),
                     lambda: getattr(torch, name)(2, b, alpha=alpha), True)
        shared = a.clone()
        A2 = db.from_dlpack(shared)
        same_outcome(lambda: getattr(A2, name + "_")(B, alpha=alpha),
                     lambda: getattr(a.clone(), name + "_")(b, alpha=alpha), True)
        if isinstance(outcome(lambda: getattr(a.clone(), name + "_")(b, alpha=alpha)), Exception):
            assert torch.equal(shared, a)  # a refused write leaves the memory whole


def test_alpha_scales_in_the_result_dtype():
    # b is cast to the result dtype first: int8 b * 4 would wrap, int64 does not
    a, b = torch.tensor([1, 2], dtype=torch.int64), torch.tensor([100, -100], dtype=torch.int8)
    same(db.add(to_db(a), to_db(b), alpha=4), torch.add(a, b, alpha=4))
    # a 0-dim tensor and a number: the int8 result wraps as torch's
    i8 = torch.ones(2, dtype=torch.int8)
    same(to_db(i8).add(db.tensor(100), alpha=4), i8.add(torch.tensor(100), alpha=4))
    same(to_db(i8).add(100, alpha=4), i8.add(100, alpha=4))
    # mixed float operands
    f, i = torch.tensor([1.5, 2.5]), torch.tensor([3, 4])
    same(db.sub(to_db(f), to_db(i), alpha=0.5), torch.sub(f, i, alpha=0.5))


def test_alpha_and_rounding_mode_refusals_word_for_word():
    a = db.tensor([1.0, 2.0])
    for call, exc, msg in [
        (lambda: a.add(a, alpha="x"), TypeError, "add(): argument 'alpha' must be Number, not str"),
        (lambda: db.sub(a, a, alpha=[1]), TypeError, "sub(): argument 'alpha' must be Number, not list"),
        (lambda: a.mul(a, alpha=2), TypeError, "mul() got an unexpected keyword argument 'alpha'"),
        (lambda: a.add(a, 2), TypeError, "add() takes 1 positional arguments but 2 were given"),
        (lambda: a.add("x"), TypeError, "add(): argument 'other' (position 1) must be Tensor, not str"),
        (lambda: db.add(a, "x"), TypeError, "add(): argument 'other' (position 2) must be Tensor, not str"),
        (lambda: db.add("x", a), TypeError, "add(): argument 'input' (position 1) must be Tensor, not str"),
        (lambda: a.add_([1]), TypeError, "add_(): argument 'other' (position 1) must be Tensor, not list"),
        (lambda: db.neg(2), TypeError, "neg(): argument 'input' (position 1) must be Tensor, not int"),
    ]:
        with pytest.raises(exc) as e:
            call()
        assert str(e.value) == msg


@pytest.mark.parametrize("dtype", DTYPES)
def test_neg_negative_and_their_in_place_forms(dtype):
    a = sample(dtype, 40, 7)
    A = to_db(a)
    for name in ("neg", "negative"):
        same_outcome(lambda: getattr(db, name)(A), lambda: getattr(torch, name)(a))
        same_outcome(lambda: getattr(A, name)(), lambda: getattr(a, name)())
        shared = a.clone()
        want = outcome(lambda: getattr(a.clone(), name + "_")())
        got = outcome(lambda: getattr(db.from_dlpack(shared), name + "_")())
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want)
            assert torch.equal(shared, a)
        else:
            assert torch.equal(shared, want)


def test_signatures_and_exports():
    assert db.add.__text_signature__ == "(input, other, *, alpha=1)"
    assert db.Tensor.add_.__text_signature__ == "($self, other, *, alpha=1)"
    assert db.div.__text_signature__ == "(input, other, *, rounding_mode=None)"
    assert db.Tensor.true_divide.__text_signature__ == "($self, other)"
    for name in [*BINARY, "neg", "negative"]:
        assert name in db.__all__
        assert callable(getattr(db, name))
        assert callable(getattr(db.Tensor, name + "_"))


def test_grad_flags_follow_torch():
    a = db.tensor([1.0, 2.0], requires_grad=True)
    assert db.add(a, 1, alpha=2).requires_grad
    assert db.mul(2, db.tensor([1.0])).requires_grad is False
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a.add_(1, alpha=2)
