"""Tensor creation: db.tensor, db.Tensor, zeros/ones/empty/full/arange/eye/rand and the *_like forms."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import cuda_or_no_cuda_error, ptr


def dtype_name(dt):
    """'float32' for db.float32 or torch.float32."""
    return repr(dt).split(".")[-1]


# --------------------------------------------------------------------------- db.tensor

INFERENCE = {
    "int": 1,
    "float": 1.0,
    "bool": True,
    "complex": 1 + 2j,
    "ints": [1, 2, 3],
    "floats": [1.0, 2.0],
    "bools": [True, False],
    "int_float": [1, 2.5],
    "float_int": [1.5, 2],
    "bool_int": [True, 2],
    "bool_float": [True, 1.5],
    "int_complex": [1, 1j],
    "nested_ints": [[1, 2], [3, 4]],
    "nested_mixed": [[1, 2], [3, 4.5]],
    "big_int": [2**40],
    "empty": [],
    "empty_nested": [[], []],
    "np_int16": np.array([1, 2], dtype=np.int16),
    "np_uint16": np.array([1, 2], dtype=np.uint16),
    "np_float64": np.array([1.0, 2.0]),
    "np_float16": np.array([1.0], dtype=np.float16),
    "np_bool": np.array([True]),
    "np_complex128": np.array([1 + 1j]),
    "np_0d": np.array(3.0),
}


@pytest.mark.parametrize("data", INFERENCE.values(), ids=INFERENCE.keys())
def test_tensor_infers_dtype_like_torch(data):
    ours = db.tensor(data)
    theirs = torch.tensor(data)
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype)
    assert ours.shape == tuple(theirs.shape)
    assert ours.tolist() == theirs.tolist()


NUMPY_SCALARS = {
    "np.float64": np.float64(1.5),
    "np.int32": np.int32(3),
    "np.float16": np.float16(1.0),
    "list_np.float64": [np.float64(1.0), 2.0],
    "list_np.float32_np.float64": [np.float32(1.0), np.float64(2.0)],
    "list_np.int8_np.int16": [np.int8(1), np.int16(2)],
    "np.bool_": np.bool_(True),
    "list_np.int64_float": [np.int64(1), 2.5],
}


@pytest.mark.parametrize("data", NUMPY_SCALARS.values(), ids=NUMPY_SCALARS.keys())
def test_tensor_infers_numpy_scalar_dtype_like_torch(data):
    # torch.tensor(np.float64(1.5)) is float64: numpy scalars carry their dtype
    assert dtype_name(db.tensor(data).dtype) == dtype_name(torch.tensor(data).dtype)


def test_tensor_documented_defaults():
    assert db.tensor([1.0, 2.0]).dtype is db.float32
    assert db.tensor([1, 2]).dtype is db.int64
    assert db.tensor([True]).dtype is db.bool
    assert db.tensor([1, 2.0]).dtype is db.float32
    assert db.tensor(np.array([1, 2], dtype=np.int32)).dtype is db.int32


def test_tensor_always_copies_numpy():
    a = np.arange(4.0)
    t = db.tensor(a)
    assert t.dtype is db.float64
    assert t.data_ptr() != ptr(a)
    a[0] = 100.0
    assert t[0].item() == 0.0
    t[1] = -1.0
    assert a[1] == 1.0


def test_tensor_of_tensor_copies():
    src = db.arange(3, dtype=db.float64)
    t = db.tensor(src)
    assert t.data_ptr() != src.data_ptr()
    assert t.dtype is db.float64
    assert t.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("dtype", [db.float64, db.int32, db.uint8, db.float16, db.bool, db.complex64, db.bfloat16],
                         ids=repr)
def test_tensor_with_dtype(dtype):
    t = db.tensor([0, 1, 2], dtype=dtype)
    assert t.dtype is dtype
    expected = torch.tensor([0, 1, 2], dtype=getattr(torch, dtype_name(dtype)))
    if dtype is db.bfloat16:
        t, expected = t.float(), expected.float()
    assert t.tolist() == expected.tolist()


def test_tensor_float_to_int_truncates_like_torch():
    assert db.tensor([1.7, -1.7], dtype=db.int32).tolist() == torch.tensor([1.7, -1.7], dtype=torch.int32).tolist()


def test_tensor_value_out_of_range_for_dtype_raises_like_torch():
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
        torch.tensor([300], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without overflow"):
        db.tensor([300], dtype=db.uint8)


@pytest.mark.parametrize("data", [[[1, 2], [3]], [[1], [2, 3]], [[[1, 2]], [[3]]]], ids=str)
def test_tensor_ragged_raises_value_error_like_torch(data):
    with pytest.raises(ValueError) as theirs:
        torch.tensor(data)
    with pytest.raises(ValueError) as ours:
        db.tensor(data)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("data", [[1, [2, 3]], [[1, 2], 3]], ids=str)
def test_tensor_scalar_sequence_mix_raises_value_error(data):
    # torch raises TypeError here; the contract asks for ValueError for any ragged list
    with pytest.raises(ValueError):
        db.tensor(data)


@pytest.mark.parametrize("data", ["abc", ["a", "b"], None, [None], {1: 2}], ids=str)
def test_tensor_uninferable_data_raises_like_torch(data):
    # torch: TypeError for a str, ValueError for strs inside a list, RuntimeError otherwise
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - the class is what is compared
        torch.tensor(data)
    with pytest.raises(theirs.type) as ours:
        db.tensor(data)
    assert str(ours.value) == str(theirs.value)


def test_tensor_requires_grad():
    t = db.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad
    assert not db.tensor([1.0]).requires_grad


def test_tensor_requires_grad_on_int_raises_like_torch():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        db.tensor([1, 2], requires_grad=True)


def test_tensor_device():
    assert db.tensor([1], device="cpu").device == db.device("cpu")
    cuda_or_no_cuda_error(lambda: db.tensor([1], device="cuda"))
    cuda_or_no_cuda_error(lambda: db.tensor([1], device="cuda:0"))


def test_tensor_zero_d():
    t = db.tensor(3.5)
    assert t.shape == () and t.ndim == 0 and t.item() == 3.5


# --------------------------------------------------------------------------- db.Tensor


def test_Tensor_of_numpy_is_a_float32_copy():
    a = np.array([5, 7, 1, 2, 4, 4], dtype=np.int32)
    t = db.Tensor(a)
    assert t.dtype is db.float32
    assert t.tolist() == [5.0, 7.0, 1.0, 2.0, 4.0, 4.0]
    a[0] = 0
    assert t[0].item() == 5.0


def test_Tensor_float64_numpy_becomes_float32():
    t = db.Tensor(np.array([0.5, 1.5]))
    assert t.dtype is db.float32
    assert t.tolist() == [0.5, 1.5]


@pytest.mark.parametrize("sizes", [(2, 3), (4,), (0,), (1, 2, 3)], ids=str)
def test_Tensor_of_sizes(sizes):
    t = db.Tensor(*sizes)
    assert t.shape == sizes
    assert t.dtype is db.float32


def test_Tensor_of_list_and_nothing():
    assert db.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert db.Tensor([1, 2]).dtype is db.float32
    assert db.Tensor().shape == (0,)


# --------------------------------------------------------------------------- factories

SHAPE_FACTORIES = {
    "zeros": (db.zeros, torch.zeros),
    "ones": (db.ones, torch.ones),
    "empty": (db.empty, torch.empty),
    "rand": (db.rand, torch.rand),
}


@pytest.mark.parametrize("ours,theirs", SHAPE_FACTORIES.values(), ids=SHAPE_FACTORIES.keys())
@pytest.mark.parametrize("shape_args", [(2, 3), ((2, 3),), ([2, 3],), (5,), ((),), (0,)], ids=str)
def test_shape_factories(ours, theirs, shape_args):
    t = ours(*shape_args)
    ref = theirs(*shape_args)
    assert t.shape == tuple(ref.shape)
    assert t.dtype is db.float32
    assert t.device == db.device("cpu")
    assert t.is_contiguous()
    if ours is not db.empty and ours is not db.rand:
        assert t.tolist() == ref.tolist()


@pytest.mark.parametrize("factory", [db.zeros, db.ones, db.empty, db.rand], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [db.float64, db.float16, db.bfloat16, db.float32], ids=repr)
def test_shape_factories_dtype(factory, dtype):
    t = factory(3, 2, dtype=dtype)
    assert t.dtype is dtype
    assert t.shape == (3, 2)


@pytest.mark.parametrize("factory", [db.zeros, db.ones, db.empty], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [db.int8, db.int64, db.uint8, db.bool, db.complex128], ids=repr)
def test_shape_factories_non_float_dtype(factory, dtype):
    t = factory(4, dtype=dtype)
    assert t.dtype is dtype


@pytest.mark.parametrize("factory", [db.zeros, db.ones, db.empty, db.rand], ids=lambda f: f.__name__)
def test_shape_factories_device(factory):
    assert factory(2, device="cpu").device.type == "cpu"
    assert factory(2, device=db.device("cpu")).device.type == "cpu"
    cuda_or_no_cuda_error(lambda: factory(2, device="cuda"))
    cuda_or_no_cuda_error(lambda: factory(2, device=0))


def test_zeros_ones_values():
    assert db.zeros(2, 2, dtype=db.int32).tolist() == [[0, 0], [0, 0]]
    assert db.ones(3, dtype=db.bool).tolist() == [True] * 3
    assert db.ones(2, dtype=db.complex64).tolist() == [1 + 0j, 1 + 0j]


@pytest.mark.parametrize("args,kwargs", [
    (((2, 2), 3), {}),
    (((2, 2), 3.0), {}),
    (((3,), True), {}),
    (((2,), 1.5), {"dtype": "float16"}),
    (((2,), 7), {"dtype": "float64"}),
    (((2, 1), 2 + 1j), {}),
], ids=str)
def test_full_like_torch(args, kwargs):
    t = db.full(*args, **{k: getattr(db, v) for k, v in kwargs.items()})
    ref = torch.full(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert dtype_name(t.dtype) == dtype_name(ref.dtype)
    assert t.tolist() == ref.tolist()


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}),
    ((1, 4), {}),
    ((0, 10, 3), {}),
    ((5.0,), {}),
    ((0, 1, 0.25), {}),
    ((10, 0, -3), {}),
    ((0, 10, 3), {"dtype": "float64"}),
    ((4,), {"dtype": "uint8"}),
    ((0,), {}),
], ids=str)
def test_arange_like_torch(args, kwargs):
    t = db.arange(*args, **{k: getattr(db, v) for k, v in kwargs.items()})
    ref = torch.arange(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert dtype_name(t.dtype) == dtype_name(ref.dtype)
    assert t.tolist() == ref.tolist()


def test_arange_device():
    assert db.arange(3, device="cpu").tolist() == [0, 1, 2]
    cuda_or_no_cuda_error(lambda: db.arange(3, device="cuda"))


@pytest.mark.parametrize("args", [(3,), (2, 3), (3, 2), (0,), (1,)], ids=str)
def test_eye_like_torch(args):
    t = db.eye(*args)
    ref = torch.eye(*args)
    assert t.dtype is db.float32
    assert t.tolist() == ref.tolist()


def test_eye_dtype_device():
    assert db.eye(2, dtype=db.int64).tolist() == [[1, 0], [0, 1]]
    assert db.eye(2, dtype=db.int64).dtype is db.int64
    assert db.eye(2, device="cpu").device.type == "cpu"
    cuda_or_no_cuda_error(lambda: db.eye(2, device="cuda:0"))


def test_rand_values_in_unit_interval():
    t = db.rand(10000, dtype=db.float64)
    a = t.numpy()
    assert a.min() >= 0.0 and a.max() < 1.0
    assert 0.45 < a.mean() < 0.55  # uniform, not constant
    assert len(np.unique(a)) > 9000


@pytest.mark.parametrize("dtype", [db.float16, db.bfloat16, db.float32], ids=repr)
def test_rand_low_precision_stays_below_one(dtype):
    a = db.rand(100000, dtype=dtype).float().numpy()
    assert a.min() >= 0.0 and a.max() < 1.0


def test_manual_seed_makes_rand_reproducible():
    db.manual_seed(1234)
    a = db.rand(3, 4).tolist()
    b = db.rand(5).tolist()
    db.manual_seed(1234)
    assert db.rand(3, 4).tolist() == a
    assert db.rand(5).tolist() == b
    db.manual_seed(4321)
    assert db.rand(3, 4).tolist() != a


def test_manual_seed_also_drives_rand_like():
    x = db.zeros(2, 3)
    db.manual_seed(7)
    a = db.rand_like(x).tolist()
    db.manual_seed(7)
    assert db.rand_like(x).tolist() == a


LIKE = {
    "zeros_like": (db.zeros_like, lambda t: t.tolist() == [[0] * 3] * 2),
    "ones_like": (db.ones_like, lambda t: t.tolist() == [[1] * 3] * 2),
    "empty_like": (db.empty_like, lambda t: True),
    "rand_like": (db.rand_like, lambda t: all(0 <= v < 1 for row in t.tolist() for v in row)),
    "full_like": (lambda x, **kw: db.full_like(x, 7, **kw), lambda t: t.tolist() == [[7] * 3] * 2),
}


@pytest.mark.parametrize("make,check", LIKE.values(), ids=LIKE.keys())
@pytest.mark.parametrize("dtype", [db.float32, db.float64], ids=repr)
def test_like_factories_follow_the_source(make, check, dtype):
    src = db.from_numpy(np.arange(6.0).reshape(2, 3).T.T).to(dtype)
    t = make(src)
    assert t.shape == (2, 3)
    assert t.dtype is dtype
    assert t.device == src.device
    assert t.data_ptr() != src.data_ptr()
    assert check(t)


@pytest.mark.parametrize("make", [v[0] for v in LIKE.values()], ids=LIKE.keys())
def test_like_factories_dtype_and_device_overrides(make):
    src = db.zeros(2, 3)
    assert make(src, dtype=db.float64).dtype is db.float64
    assert make(src, device="cpu").device.type == "cpu"
    cuda_or_no_cuda_error(lambda: make(src, device="cuda"))


def test_like_factories_keep_int_dtype():
    src = db.ones(2, dtype=db.int8)
    assert db.zeros_like(src).dtype is db.int8
    assert db.ones_like(src).tolist() == [1, 1]


def test_rand_like_int_raises_like_torch():
    with pytest.raises(RuntimeError) as theirs:
        torch.rand_like(torch.ones(2, dtype=torch.int8))
    with pytest.raises(RuntimeError) as ours:
        db.rand_like(db.ones(2, dtype=db.int8))
    assert str(ours.value) == str(theirs.value)
