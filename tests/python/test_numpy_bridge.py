"""db.from_numpy / Tensor.numpy / np.asarray: zero-copy exchange with NumPy."""

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, NP_DTYPE, collect, other_value, ptr, sample


# --------------------------------------------------------------------------- from_numpy


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_from_numpy_every_dtype_is_zero_copy(name):
    a = sample(name)
    t = db.from_numpy(a)
    assert t.dtype is getattr(db, name)
    assert t.shape == a.shape
    assert t.data_ptr() == ptr(a)
    assert t.element_size() == a.itemsize
    back = t.numpy()
    assert back.dtype == a.dtype
    assert np.shares_memory(back, a)
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_from_numpy_edits_visible_both_ways(name):
    a = sample(name)
    t = db.from_numpy(a)
    a[0, 0] = other_value(name)
    assert t[0, 0].item() == other_value(name)
    t[1, 2] = other_value(name)
    assert a[1, 2] == other_value(name)


def test_from_numpy_float64_stays_float64():
    t = db.from_numpy(np.array([0.5, 1.5]))
    assert t.dtype is db.float64
    assert t.numpy().dtype == np.float64
    assert t.tolist() == [0.5, 1.5]


def test_from_numpy_in_place_op_is_seen_by_numpy():
    a = np.zeros(5)
    t = db.from_numpy(a)
    t.add_(1)
    np.testing.assert_array_equal(a, np.ones(5))
    np.add(a, 2, out=a)
    assert t.tolist() == [3.0] * 5


def test_from_numpy_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.float64)
    addr = ptr(a)
    t = db.from_numpy(a)
    del a
    collect()
    churn = [np.full(1000, -1.0) for _ in range(50)]  # reuse freed memory, if any
    assert t.data_ptr() == addr
    assert t.sum().item() == sum(range(1000))
    assert t[999].item() == 999.0


IN_PLACE_WRITES = {
    "add_": lambda t: t.add_(1),
    "sub_": lambda t: t.sub_(1),
    "mul_": lambda t: t.mul_(2),
    "div_": lambda t: t.div_(2),
    "fill_": lambda t: t.fill_(7),
    "zero_": lambda t: t.zero_(),
    "copy_": lambda t: t.copy_(db.ones(3, dtype=db.float64)),
    "setitem": lambda t: t.__setitem__(0, 5.0),
    "setitem_slice": lambda t: t.__setitem__(slice(0, 2), 5.0),
    "iadd": lambda t: t.__iadd__(1),
}


@pytest.mark.parametrize("write", IN_PLACE_WRITES.values(), ids=IN_PLACE_WRITES.keys())
def test_read_only_array_gives_read_only_tensor(write):
    a = np.array([1.0, 2.0, 3.0])
    a.flags.writeable = False
    t = db.from_numpy(a)
    assert t.is_read_only
    with pytest.raises(RuntimeError):
        write(t)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


def test_writeable_array_gives_writeable_tensor():
    assert not db.from_numpy(np.zeros(3)).is_read_only


def test_read_only_tensor_numpy_is_not_writeable():
    a = np.arange(3.0)
    a.flags.writeable = False
    out = db.from_numpy(a).numpy()
    assert not out.flags.writeable
    assert np.shares_memory(out, a)


@pytest.mark.parametrize(
    "shape", [(), (0,), (3, 0), (0, 2, 5), (1,), (2, 1, 2, 1, 2, 1, 2, 1)], ids=str
)
def test_from_numpy_shapes(shape):
    a = sample("float32", shape)
    t = db.from_numpy(a)
    assert t.shape == shape
    assert t.ndim == len(shape) == t.dim()
    assert t.numel() == a.size
    if a.size:
        assert t.data_ptr() == ptr(a)
    assert t.tolist() == a.tolist()
    np.testing.assert_array_equal(t.numpy(), a)


def test_from_numpy_zero_d_value_and_edit():
    a = np.array(3.5)
    t = db.from_numpy(a)
    assert t.item() == 3.5
    t.fill_(1.25)
    assert a[()] == 1.25


def _as_strided_odd():
    buf = np.arange(40, dtype=np.uint8)
    return np.lib.stride_tricks.as_strided(buf.view(np.int16)[:1], shape=(4, 3), strides=(5, 3))


BASE = np.arange(4 * 6, dtype=np.float64).reshape(4, 6)
VIEWS = {
    "transposed": lambda: BASE.copy().T,
    "stepped": lambda: BASE.copy()[::2, 1::3],
    "negative": lambda: BASE.copy()[::-1],
    "negative_cols": lambda: BASE.copy()[:, ::-2],
    "column": lambda: BASE.copy()[:, 2],
    "broadcast_zero_stride": lambda: np.broadcast_to(np.arange(3.0), (4, 3)),
    "odd_byte_strides": _as_strided_odd,
}


@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_from_numpy_non_contiguous_views_are_zero_copy(make):
    v = make()
    t = db.from_numpy(v)
    assert t.shape == v.shape
    assert t.data_ptr() == ptr(v)
    assert t.tolist() == v.tolist()
    back = t.numpy()
    assert np.shares_memory(back, v)
    assert back.strides == v.strides
    np.testing.assert_array_equal(back, v)


@pytest.mark.parametrize("make", [VIEWS[k] for k in ("transposed", "stepped", "negative")],
                         ids=["transposed", "stepped", "negative"])
def test_non_contiguous_strides_in_elements(make):
    v = make()
    t = db.from_numpy(v)
    assert t.stride() == tuple(s // v.itemsize for s in v.strides)
    assert t.is_contiguous() == v.flags.c_contiguous


def test_negative_stride_view_edit_lands_in_the_right_place():
    a = np.arange(5.0)
    t = db.from_numpy(a[::-1])
    assert t.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    t[0] = 40.0
    assert a[4] == 40.0
    assert t.stride() == (-1,)


def test_odd_byte_strides_values_read_correctly():
    v = _as_strided_odd()
    t = db.from_numpy(v)
    assert t.dtype is db.int16
    assert t.tolist() == v.tolist()
    assert t.sum().item() == int(v.sum())


@pytest.mark.parametrize("obj", [[1, 2], 3, (1.0,), torch.zeros(2), "abc"],
                         ids=["list", "int", "tuple", "torch", "str"])
def test_from_numpy_rejects_non_arrays_like_torch(obj):
    with pytest.raises(TypeError) as theirs:
        torch.from_numpy(obj)
    with pytest.raises(TypeError) as ours:
        db.from_numpy(obj)
    assert str(ours.value) == str(theirs.value)


def test_from_numpy_list_message():
    with pytest.raises(TypeError, match=r"^expected np\.ndarray \(got list\)$"):
        db.from_numpy([1, 2, 3])


BAD_DTYPES = {
    "object": (np.array([1, "a"], dtype=object), "numpy.object_"),
    "str": (np.array(["ab"]), "numpy.str_"),
    "bytes": (np.array([b"ab"]), "numpy.bytes_"),
    "datetime": (np.array(["2020-01-01"], dtype="datetime64[D]"), "numpy.datetime64"),
    "timedelta": (np.array([1], dtype="timedelta64[s]"), "numpy.timedelta64"),
    "structured": (np.zeros(2, dtype=[("x", "f4"), ("y", "i4")]), "numpy.void"),
    "void": (np.zeros(2, dtype="V4"), "numpy.void"),
    "longdouble": (np.zeros(2, dtype=np.longdouble), "numpy.longdouble"),
}


@pytest.mark.parametrize("arr,type_name", BAD_DTYPES.values(), ids=BAD_DTYPES.keys())
def test_from_numpy_rejects_unsupported_dtypes(arr, type_name):
    with pytest.raises(TypeError, match=f"can't convert np.ndarray of type {type_name}\\."):
        db.from_numpy(arr)


@pytest.mark.parametrize("dt", [">f4", ">i8", ">c16", ">u2"])
def test_from_numpy_rejects_non_native_byte_order(dt):
    with pytest.raises(ValueError, match="byte order"):
        db.from_numpy(np.arange(3).astype(dt))


def test_from_numpy_native_byte_order_spelled_explicitly_is_fine():
    a = np.arange(3).astype("<f8" if np.little_endian else ">f8")
    assert db.from_numpy(a).tolist() == [0.0, 1.0, 2.0]


def test_from_numpy_takes_no_keyword_arguments():
    with pytest.raises(TypeError):
        db.from_numpy(ndarray=np.zeros(2))  # torch: "from_numpy() takes no keyword arguments"


# --------------------------------------------------------------------------- Tensor.numpy


def test_numpy_is_a_zero_copy_view():
    t = db.zeros(4)
    a = t.numpy()
    assert a.dtype == np.float32
    assert ptr(a) == t.data_ptr()
    assert a.flags.writeable
    a[1] = 5
    assert t[1].item() == 5
    t[2] = 7
    assert a[2] == 7


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_numpy_keeps_dtype(name):
    t = db.from_numpy(sample(name))
    assert t.numpy().dtype == NP_DTYPE[name]


def test_numpy_bfloat16_gives_ml_dtypes_array():
    t = db.ones(3, dtype=db.bfloat16)
    a = t.numpy()
    assert a.dtype == ml_dtypes.bfloat16
    assert ptr(a) == t.data_ptr()
    assert a.astype(np.float32).tolist() == [1.0, 1.0, 1.0]


def test_numpy_keeps_the_tensor_memory_alive(no_leak):
    t = db.arange(1000, dtype=db.float64)
    live = db._core.live_storages()
    a = t.numpy()
    del t
    collect()
    assert db._core.live_storages() == live
    churn = [db.full((1000,), -1.0, dtype=db.float64) for _ in range(20)]
    del churn
    assert a.sum() == sum(range(1000))
    del a
    collect()
    assert db._core.live_storages() == live - 1


def test_numpy_of_requires_grad_tensor_raises():
    t = db.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        t.numpy()
    assert str(e.value) == (
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    )
    np.testing.assert_array_equal(t.detach().numpy(), [1, 1, 1])


def test_numpy_force_true_on_cpu():
    t = db.tensor([1.0, 2.0], requires_grad=True)
    a = t.numpy(force=True)
    assert a.tolist() == [1.0, 2.0]
    assert a.dtype == np.float32


def test_numpy_force_false_is_default():
    t = db.tensor([1.0, 2.0])
    assert t.numpy(force=False).tolist() == [1.0, 2.0]


def test_numpy_force_is_keyword_only():
    with pytest.raises(TypeError):
        db.tensor([1.0]).numpy(True)


@pytest.mark.parametrize("make", [lambda: db.zeros(4, 3)[:, 1], lambda: db.arange(10)[::3],
                                  lambda: db.from_numpy(np.zeros((3, 4)).T)],
                         ids=["column", "stepped", "transposed"])
def test_numpy_of_views_keeps_strides(make):
    t = make()
    a = t.numpy()
    assert ptr(a) == t.data_ptr()
    assert a.strides == tuple(s * t.element_size() for s in t.stride())
    assert a.tolist() == t.tolist()


def test_np_asarray_is_zero_copy():
    t = db.from_numpy(np.arange(6.0).reshape(2, 3))
    a = np.asarray(t)
    assert a.dtype == np.float64
    assert a.shape == (2, 3)
    assert ptr(a) == t.data_ptr()


def test_np_asarray_with_dtype_converts():
    t = db.from_numpy(np.array([1.5, 2.5, 3.0]))
    a = np.asarray(t, dtype=np.float32)
    assert a.dtype == np.float32
    assert a.tolist() == [1.5, 2.5, 3.0]
    assert not np.shares_memory(a, t.numpy())


def test_np_array_copies_by_default():
    t = db.from_numpy(np.array([1.0, 2.0]))
    a = np.array(t)
    a[0] = 10
    assert t[0].item() == 1.0


def test_numpy_round_trip_preserves_values_of_large_array():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((100, 37))
    t = db.from_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(t), a)
