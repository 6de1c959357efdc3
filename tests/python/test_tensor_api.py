"""The Tensor API: attributes, conversions, copies, indexing and repr, checked against torch."""

import warnings

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, NO_CUDA, ptr, without_cuda


def pair(data=None, dtype="float64"):
    """The same tensor in dlbridge (over numpy memory) and in torch."""
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) if data is None else np.asarray(data)
    a = a.astype(dtype) if dtype else a
    return db.from_numpy(a.copy()), torch.from_numpy(a.copy())


# --------------------------------------------------------------------------- attributes

ATTRS = {
    "shape": lambda x: tuple(x.shape),
    "ndim": lambda x: x.ndim,
    "dim": lambda x: x.dim(),
    "numel": lambda x: x.numel(),
    "nelement": lambda x: x.nelement(),
    "size": lambda x: tuple(x.size()),
    "size1": lambda x: x.size(1),
    "size-1": lambda x: x.size(-1),
    "stride": lambda x: [st for st, n in zip(x.stride(), x.shape) if n != 1],  # size-1: see below
    "stride_last": lambda x: x.stride(-1),
    "is_contiguous": lambda x: x.is_contiguous(),
    "element_size": lambda x: x.element_size(),
    "itemsize": lambda x: x.itemsize,
    "nbytes": lambda x: x.nbytes,
    "is_cuda": lambda x: x.is_cuda,
    "is_cpu": lambda x: x.is_cpu,
    "requires_grad": lambda x: x.requires_grad,
    "len": len,
    "is_floating_point": lambda x: x.is_floating_point(),
    "is_complex": lambda x: x.is_complex(),
}
VIEWS = {
    "whole": lambda x: x,
    "row": lambda x: x[1],
    "column": lambda x: x[:, 1],
    "stepped": lambda x: x[:, ::2, 1:],
    "newaxis": lambda x: x[None, :, None],
    "ellipsis": lambda x: x[..., 2],
    "scalar_in_last": lambda x: x[1, 2],
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("attr", ATTRS.values(), ids=ATTRS.keys())
def test_attributes_match_torch(attr, view):
    ours, theirs = pair()
    assert outcome(attr, view(ours)) == outcome(attr, view(theirs))


def outcome(f, x):
    """f(x), or the exception it raises as (type name, message)."""
    try:
        return f(x)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


def test_shape_is_a_size_tuple():
    t = db.zeros(2, 3)
    assert isinstance(t.shape, tuple)
    assert isinstance(t.shape, db.Size)
    assert repr(t.shape) == "dlbridge.Size([2, 3])"
    assert str(t.size()) == "dlbridge.Size([2, 3])"
    assert repr(db.tensor(1.0).shape) == "dlbridge.Size([])"
    assert t.shape == (2, 3) and t.shape[1] == 3
    a, b = t.shape
    assert (a, b) == (2, 3)
    assert t.shape.numel() == 6


def test_size_dim_out_of_range_like_torch():
    with pytest.raises(IndexError) as theirs:
        torch.zeros(2, 3).size(2)
    with pytest.raises(IndexError) as ours:
        db.zeros(2, 3).size(2)
    assert str(ours.value) == str(theirs.value)


def test_stride_in_elements():
    a = np.zeros((3, 4), dtype=np.int16)
    assert db.from_numpy(a).stride() == (4, 1)
    assert db.from_numpy(a.T).stride() == (1, 4)
    assert db.from_numpy(a[:, ::2]).stride() == (4, 2)


def test_data_ptr_is_first_element_address():
    a = np.arange(12.0).reshape(3, 4)
    t = db.from_numpy(a)
    assert t.data_ptr() == ptr(a)
    assert t[1].data_ptr() == ptr(a[1])
    assert t[:, 2].data_ptr() == ptr(a[:, 2])


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_element_size_and_nbytes(name):
    t = db.zeros(3, 5, dtype=getattr(db, name))
    ref = torch.zeros(3, 5, dtype=getattr(torch, name))
    assert t.element_size() == ref.element_size()
    assert t.nbytes == ref.nbytes


def test_len_of_0d_raises_like_torch():
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(db.tensor(1.0))


# --------------------------------------------------------------------------- requires_grad


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_requires_grad_settable_on_float_and_complex(name):
    t = db.zeros(2, dtype=getattr(db, name))
    assert t.requires_grad is False
    t.requires_grad = True
    assert t.requires_grad is True
    t.requires_grad = False
    assert t.requires_grad is False
    assert t.requires_grad_() is t
    assert t.requires_grad is True
    t.requires_grad_(False)
    assert t.requires_grad is False


@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int32", "int64", "uint64"])
def test_requires_grad_refused_on_other_dtypes(name):
    t = db.zeros(2, dtype=getattr(db, name))
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match="floating point"):
        t.requires_grad_()
    assert t.requires_grad is False
    t.requires_grad = False  # always allowed


def test_detach_is_a_view_without_grad():
    t = db.ones(3, requires_grad=True)
    d = t.detach()
    assert d is not t
    assert d.requires_grad is False
    assert t.requires_grad is True
    assert d.data_ptr() == t.data_ptr()
    d[0] = 5.0
    assert t[0].item() == 5.0


# --------------------------------------------------------------------------- to / conversions


def test_to_cpu_returns_the_same_object():
    t = db.zeros(3)
    assert t.to("cpu") is t
    assert t.to(db.device("cpu")) is t
    assert t.to(device="cpu") is t
    assert t.cpu() is t
    assert t.to(db.float32) is t
    assert t.to("cpu", db.float32) is t


@pytest.mark.filterwarnings("ignore:Casting complex values to real discards")  # torch's note
@pytest.mark.parametrize("src", DTYPE_NAMES)
@pytest.mark.parametrize("dst", DTYPE_NAMES)
def test_to_dtype_matches_torch(src, dst):
    vals = [0, 1, 2, 3] if src != "bool" else [True, False, True, True]
    ours = db.tensor(vals, dtype=getattr(db, src)).to(getattr(db, dst))
    theirs = torch.tensor(vals, dtype=getattr(torch, src)).to(getattr(torch, dst))
    assert ours.dtype is getattr(db, dst)
    if dst == "bfloat16":
        ours, theirs = ours.float(), theirs.float()
    assert ours.tolist() == theirs.tolist()


def test_to_float_to_int_truncates_like_torch():
    vals = [-2.7, -0.5, 0.5, 2.7, 100.9]
    for name in ("int8", "int32", "int64", "uint8"):
        src = [abs(v) for v in vals] if name == "uint8" else vals
        ours = db.tensor(src).to(getattr(db, name)).tolist()
        theirs = torch.tensor(src).to(getattr(torch, name)).tolist()
        assert ours == theirs, name


def test_to_dtype_makes_a_new_tensor():
    a = np.array([1.5, 2.5])
    t = db.from_numpy(a)
    u = t.to(db.float32)
    assert u is not t and u.dtype is db.float32
    u.fill_(0)
    assert a.tolist() == [1.5, 2.5]


def test_to_device_and_dtype():
    t = db.tensor([1, 2])
    u = t.to("cpu", db.float64)
    assert u.dtype is db.float64 and u.device.type == "cpu"
    assert t.to(device="cpu", dtype=db.float16).dtype is db.float16
    assert t.to(dtype=db.int8).dtype is db.int8


def test_to_other_tensor_takes_its_dtype():
    assert db.tensor([1, 2]).to(db.zeros(1, dtype=db.float64)).dtype is db.float64


def test_to_copy_true_copies_even_when_nothing_changes():
    a = np.array([1.0, 2.0])
    t = db.from_numpy(a)
    u = t.to(db.float64, copy=True)
    assert u is not t
    assert u.data_ptr() != t.data_ptr()
    u.fill_(0)
    assert a.tolist() == [1.0, 2.0]
    assert t.to("cpu", copy=True).data_ptr() != t.data_ptr()


CUDA_MOVES = {
    "to('cuda')": lambda t: t.to("cuda"),
    "to('cuda:0')": lambda t: t.to("cuda:0"),
    "to(0)": lambda t: t.to(0),
    "to(device=cuda)": lambda t: t.to(device=db.device("cuda")),
    "to(cuda, dtype)": lambda t: t.to("cuda", db.float64),
    "cuda()": lambda t: t.cuda(),
    "cuda(0)": lambda t: t.cuda(0),
    "cuda(device='cuda:0')": lambda t: t.cuda(device="cuda:0"),
}


@without_cuda()
@pytest.mark.parametrize("move", CUDA_MOVES.values(), ids=CUDA_MOVES.keys())
def test_cuda_moves_raise_no_cuda(move):
    t = db.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=NO_CUDA):
        move(t)
    assert t.device.type == "cpu"


@pytest.mark.parametrize("method,dtype", [
    ("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
    ("int", "int32"), ("long", "int64"), ("bool", "bool"),
])
def test_conversion_methods_match_torch(method, dtype):
    vals = [0.0, 1.5, -2.5, 3.0]
    ours = getattr(db.tensor(vals), method)()
    theirs = getattr(torch.tensor(vals), method)()
    assert ours.dtype is getattr(db, dtype)
    assert ours.float().tolist() == theirs.float().tolist()


def test_conversion_to_same_dtype_returns_self():
    t = db.zeros(2)
    assert t.float() is t
    assert t.type(db.float32) is t


def test_type_with_dtype_and_without():
    t = db.tensor([1, 2])
    assert t.type(db.float64).dtype is db.float64
    assert t.type() == "dlbridge.LongTensor"
    assert db.zeros(1).type() == "dlbridge.FloatTensor"
    assert db.zeros(1, dtype=db.float64).type() == torch.zeros(1, dtype=torch.float64).type().replace("torch", "dlbridge")


# --------------------------------------------------------------------------- copies and fills


def test_clone_is_new_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = db.from_numpy(a)
    c = t.clone()
    assert c.data_ptr() != t.data_ptr()
    assert c.tolist() == t.tolist() and c.dtype is t.dtype
    c.fill_(0)
    assert a.sum() == 15


def test_clone_of_read_only_is_writeable():
    a = np.arange(3.0)
    a.flags.writeable = False
    c = db.from_numpy(a).clone()
    assert not c.is_read_only
    c.add_(1)
    assert c.tolist() == [1.0, 2.0, 3.0]


def test_contiguous():
    t = db.from_numpy(np.arange(12.0).reshape(3, 4))
    assert t.contiguous() is t
    v = t[:, ::2]
    assert not v.is_contiguous()
    c = v.contiguous()
    assert c.is_contiguous()
    assert c.stride() == (2, 1)
    assert c.tolist() == v.tolist()
    assert c.data_ptr() != v.data_ptr()


def test_copy_broadcasts_and_casts():
    t = db.zeros(2, 3, dtype=db.int32)
    out = t.copy_(db.tensor([1.7, -2.2, 3.9]))
    assert out is t
    assert t.dtype is db.int32
    assert t.tolist() == [[1, -2, 3], [1, -2, 3]]
    ref = torch.zeros(2, 3, dtype=torch.int32).copy_(torch.tensor([1.7, -2.2, 3.9]))
    assert t.tolist() == ref.tolist()


def test_copy_into_a_view_writes_the_parent():
    a = np.zeros((3, 3))
    t = db.from_numpy(a)
    t[:, 1].copy_(db.tensor([1.0, 2.0, 3.0]))
    assert a[:, 1].tolist() == [1.0, 2.0, 3.0]
    assert a.sum() == 6.0


def test_copy_from_overlapping_self_view():
    a = np.arange(5.0)
    t = db.from_numpy(a)
    t[1:].copy_(t[:-1])
    tt = torch.arange(5.0, dtype=torch.float64)
    tt[1:].copy_(tt[:-1].clone())
    assert t.tolist() == tt.tolist()


def test_copy_shape_mismatch_raises():
    with pytest.raises(RuntimeError):
        db.zeros(2, 3).copy_(db.zeros(2))


def test_fill_and_zero():
    t = db.tensor([1, 2, 3])
    assert t.fill_(2.7) is t
    assert t.tolist() == torch.tensor([1, 2, 3]).fill_(2.7).tolist()
    assert t.zero_() is t
    assert t.tolist() == [0, 0, 0]
    t.fill_(db.tensor(9))
    assert t.tolist() == [9, 9, 9]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_tolist_and_item_match_torch(name):
    a = np.array([[0, 1, 2], [3, 4, 5]]).astype("bool" if name == "bool" else "int64")
    ours = db.tensor(a.tolist(), dtype=getattr(db, name))
    theirs = torch.tensor(a.tolist(), dtype=getattr(torch, name))
    assert ours.tolist() == theirs.tolist()
    assert type(ours[1, 2].item()) is type(theirs[1, 2].item())
    assert ours[1, 2].item() == theirs[1, 2].item()


def test_item_of_many_elements_raises_like_torch():
    with pytest.raises(RuntimeError, match="a Tensor with 3 elements cannot be converted to Scalar"):
        db.zeros(3).item()


def test_item_of_one_element_any_rank():
    assert db.tensor([[2.5]]).item() == 2.5
    assert db.tensor(7).item() == 7
    assert db.tensor(5).tolist() == 5


def test_sum_and_mean():
    t = db.from_numpy(np.arange(6.0).reshape(2, 3))
    assert t.sum().item() == 15.0
    assert t.sum().shape == ()
    assert t.mean().item() == 2.5
    assert db.tensor([1, 2, 3]).sum().dtype is db.int64
    assert db.tensor([True, True]).sum().item() == 2


def test_mean_int_raises_runtime_error():
    with pytest.raises(RuntimeError):
        db.tensor([1, 2, 3]).mean()


# --------------------------------------------------------------------------- indexing

INDEXES = {
    "int": 1,
    "neg_int": -1,
    "tuple_ints": (1, 2),
    "neg_tuple": (-1, -2, -3),
    "slice": slice(0, 1),
    "slice_step": (slice(None), slice(None, None, 2)),
    "slice_start_step": (slice(None), slice(1, None, 2), slice(None, None, 3)),
    "none": None,
    "none_middle": (slice(None), None, 1),
    "ellipsis": Ellipsis,
    "ellipsis_int": (Ellipsis, 1),
    "int_ellipsis_int": (0, Ellipsis, -1),
    "none_ellipsis_none": (None, Ellipsis, None),
    "clamped_slice": slice(-10, 10),
    "empty_slice": (slice(None), slice(2, 1)),
    "beyond_end": slice(5, 9),
}


@pytest.mark.parametrize("index", INDEXES.values(), ids=INDEXES.keys())
def test_indexing_matches_torch(index):
    ours, theirs = pair()
    a, b = ours[index], theirs[index]
    assert a.shape == tuple(b.shape)
    # the stride of a size-1 dimension is never used; test_none_dim_stride_like_torch checks it
    assert [st for st, n in zip(a.stride(), a.shape) if n != 1] == \
        [st for st, n in zip(b.stride(), b.shape) if n != 1]
    assert a.tolist() == b.tolist()
    if a.numel():
        assert a.data_ptr() - ours.data_ptr() == (b.data_ptr() - theirs.data_ptr())


@pytest.mark.parametrize("index", [i for k, i in INDEXES.items() if k not in ("empty_slice", "beyond_end")],
                         ids=[k for k in INDEXES if k not in ("empty_slice", "beyond_end")])
def test_index_views_share_memory(index):
    a = np.arange(24.0).reshape(2, 3, 4)
    t = db.from_numpy(a)
    v = t[index]
    v.fill_(-1.0)
    expected = np.arange(24.0).reshape(2, 3, 4)
    expected[index] = -1.0
    np.testing.assert_array_equal(a, expected)


def test_none_dim_stride_like_torch():
    ours, theirs = pair()
    for index in (None, (slice(None), None), (Ellipsis, None)):
        assert ours[index].stride() == theirs[index].stride(), index


def test_chained_indexing_writes_parent():
    a = np.zeros((3, 4))
    t = db.from_numpy(a)
    t[1][2] = 5.0
    t[:, 1:][0][::2] = 7.0
    assert a[1, 2] == 5.0
    assert a[0, 1] == 7.0 and a[0, 3] == 7.0


def test_bool_index_is_not_an_integer_index():
    # torch treats t[True] as a mask that adds a dimension, never as t[1]
    ours, theirs = pair()
    assert ours[True].shape == tuple(theirs[True].shape)
    assert ours[False].shape == tuple(theirs[False].shape)


@pytest.mark.parametrize("index", [2, -3, (0, 3), (0, 0, 4), (0, -4)], ids=str)
def test_out_of_range_index_raises_index_error_like_torch(index):
    ours, theirs = pair()
    with pytest.raises(IndexError) as e_theirs:
        theirs[index]
    with pytest.raises(IndexError) as e_ours:
        ours[index]
    assert str(e_ours.value) == str(e_theirs.value)


def test_too_many_indices_raises_index_error():
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        pair()[0][0, 0, 0, 0]


@pytest.mark.parametrize("index", [slice(None, None, -1), (slice(None), slice(3, 0, -2))], ids=["::-1", ":,3:0:-2"])
def test_negative_step_raises_value_error(index):
    with pytest.raises(ValueError, match="step must be greater than zero"):
        pair()[0][index]


def test_zero_step_raises_value_error_like_torch():
    with pytest.raises(ValueError) as theirs:
        torch.zeros(3)[::0]
    with pytest.raises(ValueError) as ours:
        db.zeros(3)[::0]
    assert str(ours.value) == str(theirs.value)


def test_index_of_0d_raises():
    with pytest.raises(IndexError):
        db.tensor(1.0)[0]


# --------------------------------------------------------------------------- assignment


def test_assign_scalar_to_slice():
    a = np.zeros(5)
    t = db.from_numpy(a)
    t[1:3] = 5
    assert a.tolist() == [0.0, 5.0, 5.0, 0.0, 0.0]


def test_assign_tensor_to_row():
    a = np.zeros((3, 2))
    t = db.from_numpy(a)
    t[0] = db.tensor([1.0, 2.0])
    t[2] = db.tensor(7)  # 0-d broadcast, int cast to float
    assert a.tolist() == [[1.0, 2.0], [0.0, 0.0], [7.0, 7.0]]


@pytest.mark.parametrize("index,value", [
    ((slice(None), 1), 3.5),
    ((Ellipsis, -1), -1),
    ((slice(None, None, 2),), 9),
    ((0, slice(1, None)), [1.0, 2.0, 3.0, 4.0]),
    ((1, 2, 3), True),
    ((None, 0), 4.0),
], ids=str)
def test_setitem_matches_torch(index, value):
    ours, theirs = pair()
    ours[index] = db.tensor(value) if isinstance(value, list) else value
    theirs[index] = torch.tensor(value) if isinstance(value, list) else value
    assert ours.tolist() == theirs.tolist()


def test_setitem_broadcast_shape_mismatch_raises():
    with pytest.raises(RuntimeError):
        db.zeros(3, 2)[0] = db.tensor([1.0, 2.0, 3.0])


def test_setitem_out_of_range_raises_index_error():
    t = db.zeros(3)
    with pytest.raises(IndexError):
        t[3] = 1.0


def test_setitem_int_tensor_with_float_truncates_like_torch():
    ours, theirs = db.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    ours[0] = 2.9
    theirs[0] = 2.9
    assert ours.tolist() == theirs.tolist()


# --------------------------------------------------------------------------- repr


def test_repr_float64_from_numpy():
    assert repr(db.from_numpy(np.array([0.0, 1.0, 2.0]))) == "tensor([0., 1., 2.], dtype=dlbridge.float64)"


REPR_CASES = {
    "float32": lambda m: m.tensor([0.0, 1.0, 2.0]),
    "int64": lambda m: m.tensor([1, 2, 3]),
    "bool": lambda m: m.tensor([True, False]),
    "int32": lambda m: m.tensor([5, 7], dtype=m.int32),
    "float16": lambda m: m.tensor([0.5, 1.5], dtype=m.float16),
    "bfloat16": lambda m: m.tensor([0.5, 1.5], dtype=m.bfloat16),
    "complex64": lambda m: m.tensor([1 + 2j]),
    "0d": lambda m: m.tensor(3.5),
    "0d_int": lambda m: m.tensor(3),
    "empty": lambda m: m.tensor([]),
    "empty_int": lambda m: m.zeros(0, dtype=m.int64),
    "2d": lambda m: m.eye(3),
    "requires_grad": lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad_f64": lambda m: m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True),
    "uint8": lambda m: m.tensor([1, 255], dtype=m.uint8),
}


@pytest.mark.parametrize("make", REPR_CASES.values(), ids=REPR_CASES.keys())
def test_repr_matches_torch(make):
    assert repr(make(db)) == repr(make(torch)).replace("torch.", "dlbridge.")
    assert str(make(db)) == str(make(torch)).replace("torch.", "dlbridge.")


def test_repr_of_view_and_read_only():
    a = np.arange(6.0).reshape(2, 3)
    a.flags.writeable = False
    assert repr(db.from_numpy(a)[:, 1]) == "tensor([1., 4.], dtype=dlbridge.float64)"


# ----- complex to real: PyTorch's warning (issue 21) -----

DISCARDS = "Casting complex values to real discards the imaginary part"
_COMPLEX_TO_REAL = {
    "copy_": lambda lib, c: lib.zeros(3).copy_(c),
    "copy_ into int": lambda lib, c: lib.zeros(3, dtype=lib.int64).copy_(c),
    "to(float32)": lambda lib, c: c.to(lib.float32),
    "to(int64)": lambda lib, c: c.to(lib.int64),
    "float()": lambda lib, c: c.float(),
    "double()": lambda lib, c: c.double(),
    "half()": lambda lib, c: c.half(),
    "type(float64)": lambda lib, c: c.type(lib.float64),
    "setitem": lambda lib, c: _set_all(lib.zeros(3), c),
}
_COMPLEX_KEPT = {
    "to(bool)": lambda lib, c: c.to(lib.bool),
    "to(complex128)": lambda lib, c: c.to(lib.complex128),
    "copy_ into complex": lambda lib, c: lib.zeros(3, dtype=lib.complex64).copy_(c),
    "copy_ of real into real": lambda lib, c: lib.zeros(3).copy_(lib.tensor([1.0, 3.0, 0.0])),
}


def _set_all(t, v):
    t[:] = v
    return t


@pytest.mark.parametrize("op", list(_COMPLEX_TO_REAL))
def test_complex_to_real_warns_as_torch_does(op):
    make = _COMPLEX_TO_REAL[op]
    c = db.tensor([1 + 2j, 3 - 4j, 5j])
    with pytest.warns(UserWarning, match=DISCARDS):
        got = make(db, c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns once per process, so only the values are compared
        want = make(torch, torch.tensor([1 + 2j, 3 - 4j, 5j]))
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("op", list(_COMPLEX_KEPT))
def test_casts_that_keep_the_imaginary_part_or_have_none_do_not_warn(op):
    c = db.tensor([1 + 2j, 3 - 4j, 5j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _COMPLEX_KEPT[op](db, c)


def test_the_complex_warning_is_a_warning_filters_can_raise():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match=DISCARDS):
            db.zeros(3).copy_(db.tensor([1j, 2j, 3j]))
