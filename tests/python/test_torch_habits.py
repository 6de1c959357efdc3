"""PyTorch habits a new user brings, against the real torch side by side:
`as_tensor`/`asarray` (zero-copy where they can), `mT`/`mH`/`H`,
`all`/`any`, `squeeze`, `argmax`/`argmin`, `axis=`, other frameworks'
dtype and device objects, other frameworks' tensors in operators, and the
module's namespace."""

import numpy as np
import pytest
import torch

import dlbridge as db


def same(d, t):
    assert tuple(d.shape) == tuple(t.shape)
    assert str(d.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_array_equal(np.asarray(d.detach()), t.detach().numpy())


def twins(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = (torch.rand(shape, generator=g) * 10).round().to(dtype) if dtype != torch.bool else torch.rand(shape, generator=g) > 0.5
    return db.from_dlpack(t.clone()), t


# ----- as_tensor / asarray -----


def test_as_tensor_shares_numpy_memory():
    a = np.arange(4.0)
    t = db.as_tensor(a)
    assert t.data_ptr() == a.ctypes.data
    t[0] = 42
    assert a[0] == 42
    # a dtype it must convert to: a copy
    c = db.as_tensor(a, dtype=db.float32)
    assert c.data_ptr() != a.ctypes.data and c.dtype == db.float32
    c[1] = -1
    assert a[1] == 1.0


def test_as_tensor_of_a_dlbridge_tensor_is_the_same_object():
    t = db.ones(3)
    assert db.as_tensor(t) is t
    assert db.as_tensor(t, dtype=db.float32) is t
    assert db.as_tensor(t, device="cpu") is t
    assert db.asarray(t) is t
    assert db.as_tensor(t, dtype=db.float64) is not t


def test_as_tensor_shares_any_dlpack_producer():
    x = torch.arange(5)
    t = db.as_tensor(x)
    assert t.data_ptr() == x.data_ptr()
    t[1] = 7
    assert x[1].item() == 7
    y = db.as_tensor(x, dtype=torch.float64)  # a torch dtype is read as dlbridge's
    assert y.dtype == db.float64 and y.data_ptr() != x.data_ptr()


def test_lists_and_numbers_make_new_tensors_as_torch():
    for data in ([1, 2, 3], [[1.5, 2.0]], 3, 2.5, True, [True, False]):
        same(db.as_tensor(data), torch.as_tensor(data))
        same(db.asarray(data), torch.asarray(data))
    same(db.as_tensor([1, 2], dtype=db.float16), torch.as_tensor([1, 2], dtype=torch.float16))


def test_asarray_copy_meanings():
    a = np.arange(3.0)
    assert db.asarray(a).data_ptr() == a.ctypes.data
    assert db.asarray(a, copy=False).data_ptr() == a.ctypes.data
    c = db.asarray(a, copy=True)
    assert c.data_ptr() != a.ctypes.data
    c[0] = 5
    assert a[0] == 0
    t = db.ones(2)
    assert db.asarray(t, copy=True) is not t
    assert db.asarray(t, copy=True).data_ptr() != t.data_ptr()
    for args, kwargs in [
        (([1, 2],), dict(copy=False)),
        ((3,), dict(copy=False)),
        ((np.zeros(2),), dict(dtype=db.float32, copy=False)),
        ((db.zeros(2),), dict(dtype=db.float64, copy=False)),
    ]:
        targs = tuple(torch.zeros(2) if isinstance(x, db.Tensor) else x for x in args)
        tkw = {k: (torch.float32 if v is db.float32 else torch.float64 if v is db.float64 else v) for k, v in kwargs.items()}
        with pytest.raises(ValueError) as te:
            torch.asarray(*targs, **tkw)
        with pytest.raises(ValueError) as de:
            db.asarray(*args, **kwargs)
        assert str(de.value) == str(te.value)


def test_asarray_requires_grad():
    t = db.asarray([1.0, 2.0], requires_grad=True)
    assert t.requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex"):
        db.asarray([1, 2], requires_grad=True)


def test_as_tensor_of_a_read_only_array_stays_read_only():
    a = np.arange(3)
    a.flags.writeable = False
    t = db.as_tensor(a)
    assert t.is_read_only and t.data_ptr() == a.ctypes.data


# ----- mT, mH, H -----


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.int32])
@pytest.mark.parametrize("attr", ["mT", "mH"])
def test_matrix_transposes(attr, dtype):
    t = torch.arange(24).reshape(2, 3, 4).to(dtype)
    if dtype.is_complex:
        t = t + 1j * torch.arange(24).reshape(2, 3, 4)
    d = db.from_dlpack(t.clone())
    same(getattr(d, attr), getattr(t, attr).resolve_conj())
    same(d[0].H, t[0].H.resolve_conj())


def test_mT_is_a_view_and_mH_of_complex_a_copy():
    d = db.zeros(2, 3)
    d.mT[0, 1] = 5
    assert d[1, 0].item() == 5
    assert d.mH.data_ptr() == d.data_ptr()
    c = db.zeros(2, 2, dtype=db.complex64)
    assert c.mH.data_ptr() != c.data_ptr()


@pytest.mark.parametrize("expr", ["x.mT", "x.mH", "x.H", "y.H"])
def test_matrix_transpose_errors_match_torch(expr):
    with pytest.raises(RuntimeError) as te:
        eval(expr, {"x": torch.zeros(3), "y": torch.zeros(2, 2, 2)})
    with pytest.raises(RuntimeError) as de:
        eval(expr, {"x": db.zeros(3), "y": db.zeros(2, 2, 2)})
    assert str(de.value) == str(te.value)


# ----- all, any, argmax, argmin, squeeze, axis= -----

REDUCE_ARGS = [(), (0,), (1,), (-1,), ((0, 1),), (1, True)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.uint8, torch.complex64])
@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("args", REDUCE_ARGS, ids=repr)
def test_all_any(name, dtype, args):
    for seed in range(3):
        d, t = twins((3, 4), dtype if dtype != torch.complex64 else torch.float32, seed)
        if dtype == torch.complex64:
            d, t = d.to(db.complex64), t.to(torch.complex64)
        same(getattr(d, name)(*args), getattr(t, name)(*args))
        same(getattr(db, name)(d, *args), getattr(torch, name)(t, *args))


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 100_003])
def test_bool_extremes_find_the_first_deciding_element(n):
    # Bool max/min/any/all search 64 bytes at a time: the deciding element
    # first, last, in the last partial block, or absent.
    for fill, at in [(False, None), (True, None), (False, 0), (False, n - 1), (False, n // 2), (True, n - 1)]:
        t = torch.full((n,), fill)
        if at is not None:
            t[at] = not fill
            t[-1] = t[-1] if at != n - 1 else not fill
        d = db.from_dlpack(t.clone())
        for expr in ["x.max()", "x.min()", "x.any()", "x.all()",
                     "x.max(0).indices", "x.min(0).indices", "x[::3].any()", "x[1:].all()"]:
            same(eval(expr, {"x": d}), eval(expr, {"x": t}))


def test_all_any_edge_cases():
    for t in (torch.zeros(0), torch.tensor(float("nan")), torch.zeros(2, 0, 3), torch.ones(())):
        d = db.from_dlpack(t.clone())
        same(d.all(), t.all())
        same(d.any(), t.any())
    t = torch.zeros(2, 0, 3)
    same(db.from_dlpack(t.clone()).all(1), t.all(1))
    assert not db.ones(2, requires_grad=True).all().requires_grad


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("args", [(), (0,), (1,), (-1,), (None, True), (1, True), (0, True)], ids=repr)
def test_argmax_argmin(name, args):
    for seed in range(3):
        d, t = twins((3, 4), torch.float32, seed)
        same(getattr(d, name)(*args), getattr(t, name)(*args))
        same(getattr(db, name)(d, *args), getattr(torch, name)(t, *args))
    t = torch.tensor([1.0, float("nan"), 3.0])
    same(getattr(db.from_dlpack(t.clone()), name)(), getattr(t, name)())
    same(getattr(db.tensor(2.0), name)(), getattr(torch.tensor(2.0), name)())


def test_argmax_of_an_empty_tensor():
    with pytest.raises(IndexError) as te:
        torch.zeros(0).argmax()
    with pytest.raises(IndexError) as de:
        db.zeros(0).argmax()
    assert str(de.value) == str(te.value)


@pytest.mark.parametrize("args", [(), (0,), (2,), (1,), (-1,), ((0, 2),), ((0, 1),), ((),)], ids=repr)
def test_squeeze(args):
    t = torch.zeros(1, 3, 1)
    d = db.zeros(1, 3, 1)
    same(d.squeeze(*args), t.squeeze(*args))
    same(db.squeeze(d, *args), torch.squeeze(t, *args))
    assert d.squeeze(*args).data_ptr() == d.data_ptr()


def test_squeeze_errors_match_torch():
    for args in [(3,), ((0, 0),)]:
        with pytest.raises(Exception) as te:
            torch.zeros(1, 3, 1).squeeze(*args)
        with pytest.raises(Exception) as de:
            db.zeros(1, 3, 1).squeeze(*args)
        assert type(de.value) is type(te.value) and str(de.value) == str(te.value)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "argmax", "argmin", "all", "any", "squeeze"])
def test_axis_is_dims_alias(name):
    d, t = twins((2, 3))
    same(getattr(d, name)(axis=1), getattr(t, name)(axis=1))
    same(getattr(d, name)(axis=0, **({} if name == "squeeze" else {"keepdim": True})),
         getattr(t, name)(axis=0, **({} if name == "squeeze" else {"keepdim": True})))
    with pytest.raises(TypeError):
        getattr(d, name)(0, axis=0)


@pytest.mark.parametrize("name", ["max", "min"])
def test_axis_on_max_min(name):
    d, t = twins((2, 3))
    dv, di = getattr(d, name)(axis=1)
    tv, ti = getattr(t, name)(axis=1)
    same(dv, tv)
    same(di, ti)


# ----- other frameworks' dtypes and devices -----


def test_foreign_dtypes_map_to_dlbridge():
    import jax.numpy as jnp
    import ml_dtypes

    t = db.ones(2)
    assert t.to(torch.float16).dtype == db.float16
    assert t.to("cpu", torch.int32).dtype == db.int32
    assert t.to(dtype=torch.bfloat16).dtype == db.bfloat16
    assert db.zeros(2, dtype=np.float32).dtype == db.float32
    assert db.zeros(2, dtype=np.dtype("int16")).dtype == db.int16
    assert db.zeros(2, dtype=jnp.float32).dtype == db.float32
    assert db.zeros(2, dtype=jnp.bfloat16).dtype == db.bfloat16
    assert db.zeros(2, dtype=ml_dtypes.float8_e4m3fn).dtype == db.float8_e4m3fn
    assert db.zeros(2, dtype=np.bool_).dtype == db.bool
    # Python's types, as torch reads them
    for py_type in (float, int, bool, complex):
        assert str(db.zeros(2, dtype=py_type).dtype).split(".")[1] == str(torch.zeros(2, dtype=py_type).dtype).split(".")[1]
    assert db.tensor([1, 2]).sum(dtype=torch.float64).dtype == db.float64


def test_foreign_dtypes_dlbridge_lacks_name_the_spelling():
    with pytest.raises(TypeError, match=r"torch\.qint8 has no dlbridge dtype.*dlbridge\.float32"):
        db.ones(2).to(torch.qint8)
    with pytest.raises(TypeError, match="NumPy's dtype object has no dlbridge dtype"):
        db.zeros(2, dtype=np.dtype(object))
    with pytest.raises(TypeError, match=r"dtype must be a dlbridge\.dtype \(e\.g\. dlbridge\.float32\), not str"):
        db.zeros(2, dtype="float32")


def test_foreign_devices_map_to_dlbridge():
    import jax

    assert db.zeros(2, device=torch.device("cpu")).device == db.device("cpu")
    assert db.ones(2).to(torch.device("cpu")).device.type == "cpu"
    cpu = jax.devices("cpu")[0]
    assert db.zeros(2, device=cpu).device.type == "cpu"
    assert db.device(torch.device("cuda:1")) == db.device("cuda:1")
    with pytest.raises(TypeError, match=r"device must be a string, an int or a dlbridge\.device \(e\.g\. 'cpu'"):
        db.zeros(2, device=object())


def test_to_a_torch_dtype_no_longer_blames_the_device():
    t = db.ones(2)
    u = t.to(torch.float16)
    assert u.dtype == db.float16


# ----- other frameworks' tensors in operators -----

OPS = ["+", "-", "*", "/", "**", "==", "!=", "<", "<=", ">", ">="]


@pytest.mark.parametrize("op", OPS)
def test_foreign_tensor_operand_says_from_dlpack(op):
    t = db.ones(2)
    x = torch.ones(2)
    with pytest.raises(TypeError, match=r"dlbridge\.from_dlpack\(x\)"):
        eval(f"t {op} x")
    # the way it says: zero-copy, then compute
    r = eval(f"t {op} db.from_dlpack(x)")
    assert isinstance(r, db.Tensor)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**="])
def test_foreign_tensor_in_place_says_from_dlpack(op):
    t = db.ones(2)
    x = torch.ones(2)
    with pytest.raises(TypeError, match=r"dlbridge\.from_dlpack\(x\)"):
        exec(f"t {op} x")
    assert t.tolist() == [1.0, 1.0]
    for name in ["add_", "sub_", "mul_", "div_", "pow_", "add", "eq", "lt"]:
        with pytest.raises(TypeError, match=r"dlbridge\.from_dlpack\(x\)"):
            getattr(t, name)(x)


def test_jax_operand_says_from_dlpack():
    import jax.numpy as jnp

    with pytest.raises(TypeError, match=r"dlbridge\.from_dlpack\(x\)"):
        db.ones(2) + jnp.ones(2)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**"])
def test_foreign_tensor_on_the_left_gets_the_same_hint(op):
    import jax.numpy as jnp

    t = db.ones(2)
    for x in (torch.ones(2), jnp.ones(2)):
        with pytest.raises(TypeError, match=r"for \w+: '[\w.]+' and 'dlbridge\.Tensor'.*dlbridge\.from_dlpack\(x\)"):
            eval(f"x {op} t")


def test_numpy_operands_compute_both_ways_as_torch_does():
    t = db.ones(2)
    a = np.full(2, 2.0)
    r1, r2 = t + a, a + t
    assert isinstance(r1, db.Tensor) and isinstance(r2, db.Tensor)
    assert r1.dtype == db.float64 and r2.dtype == db.float64  # as torch.ones(2) + a
    assert (torch.ones(2) + a).dtype == torch.float64
    t += a
    assert t.tolist() == [3.0, 3.0]


# ----- the namespace -----


def test_dir_is_the_public_api():
    names = dir(db)
    assert "builtins" not in names
    stray = [n for n in names if n.startswith("_") and n != "__version__"]
    assert stray == []
    public = set(names) - {"__version__"}
    assert public == set(db.__all__)
    for name in db.__all__:
        assert hasattr(db, name), name
    # what PyTorch's namesakes are
    for name in ["as_tensor", "asarray", "all", "any", "argmax", "argmin", "squeeze", "from_dlpack", "Tensor"]:
        assert name in db.__all__ and hasattr(torch, name)


# ----- max(other) / min(other): elementwise, as torch -----


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_max_min_of_another_tensor_is_elementwise(name, dtype):
    (a, ta), (b, tb) = twins((3, 5), dtype, seed=1), twins((5,), dtype, seed=2)
    same(getattr(a, name)(b), getattr(ta, name)(tb))  # broadcasting
    same(getattr(db, name)(a, b), getattr(torch, name)(ta, tb))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_another_tensor_lets_nan_win(name):
    ta = torch.tensor([1.0, float("nan"), 3.0, float("-inf")])
    tb = torch.tensor([float("nan"), 2.0, 1.0, 0.0])
    same(getattr(db.from_dlpack(ta), name)(db.from_dlpack(tb)), getattr(ta, name)(tb))
    # a dim still gives (values, indices)
    values, indices = getattr(db.from_dlpack(tb), name)(0)
    tv, ti = getattr(tb, name)(0)
    same(values, tv)
    same(indices, ti)
