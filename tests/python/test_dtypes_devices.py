"""db.dtype objects and db.device, compared with their torch namesakes."""

import pickle

import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, NO_CUDA, sample, without_cuda

# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_repr_and_str(name):
    d = getattr(db, name)
    assert isinstance(d, db.dtype)
    assert repr(d) == f"dlbridge.{name}"
    assert str(d) == f"dlbridge.{name}"
    assert repr(getattr(torch, name)) == f"torch.{name}"  # the spelling we copy


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_properties_match_torch(name):
    ours, theirs = getattr(db, name), getattr(torch, name)
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.is_complex == theirs.is_complex
    assert ours.is_signed == theirs.is_signed
    assert ours.itemsize == theirs.itemsize


@pytest.mark.parametrize("alias,target", [
    ("float", "float32"), ("double", "float64"), ("half", "float16"), ("int", "int32"),
    ("long", "int64"), ("short", "int16"), ("cfloat", "complex64"), ("cdouble", "complex128"),
])
def test_dtype_aliases_are_the_same_object(alias, target):
    assert getattr(db, alias) is getattr(db, target)
    assert getattr(torch, alias) is getattr(torch, target)  # as in torch


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_tensor_dtype_is_the_module_object(name):
    t = db.from_numpy(sample(name))
    assert t.dtype is getattr(db, name)
    assert t.dtype == getattr(db, name)


def test_dtypes_are_distinct_and_hashable():
    dtypes = [getattr(db, n) for n in DTYPE_NAMES]
    assert len(set(dtypes)) == len(dtypes)
    assert {db.float32: "x"}[db.float] == "x"
    assert db.float32 != db.float64


def test_dtype_cannot_be_constructed():
    with pytest.raises(TypeError):
        db.dtype()


def test_dtype_pickles_to_the_same_object():
    # torch dtypes pickle; dlbridge ships dlbridge._dtype_by_name for this
    for name in DTYPE_NAMES:
        d = getattr(db, name)
        assert pickle.loads(pickle.dumps(d)) is d


# --------------------------------------------------------------------------- devices

DEVICE_SPECS = {
    "cpu": (("cpu",), {}),
    "cuda": (("cuda",), {}),
    "cuda:0": (("cuda:0",), {}),
    "cuda:1": (("cuda:1",), {}),
    "int0": ((0,), {}),
    "int3": ((3,), {}),
    "cuda,0": (("cuda", 0), {}),
    "cuda,2": (("cuda", 2), {}),
    "type=cuda,index=0": ((), {"type": "cuda", "index": 0}),
    "type=cuda": ((), {"type": "cuda"}),
    "type=cpu": ((), {"type": "cpu"}),
    "cpu:0": (("cpu:0",), {}),
    "cpu,0": (("cpu", 0), {}),
}


@pytest.mark.parametrize("args,kwargs", DEVICE_SPECS.values(), ids=DEVICE_SPECS.keys())
def test_device_matches_torch(args, kwargs):
    ours = db.device(*args, **kwargs)
    theirs = torch.device(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)
    assert ours.type == theirs.type
    assert ours.index == theirs.index


def test_device_documented_reprs():
    assert repr(db.device("cuda:0")) == "device(type='cuda', index=0)"
    assert repr(db.device(0)) == "device(type='cuda', index=0)"
    assert repr(db.device(type="cuda", index=0)) == "device(type='cuda', index=0)"
    assert repr(db.device("cuda", 0)) == "device(type='cuda', index=0)"
    assert repr(db.device("cpu")) == "device(type='cpu')"
    assert repr(db.device("cuda")) == "device(type='cuda')"
    assert db.device("cuda").index is None
    assert db.device("cpu").type == "cpu"


def test_device_creation_needs_no_cuda():
    # describing a CUDA device is fine without a GPU; only using it fails
    d = db.device("cuda:0")
    assert d.type == "cuda" and d.index == 0


def test_device_from_device():
    d = db.device("cuda:1")
    assert db.device(d) == d


def test_device_equality_and_hash():
    assert db.device("cuda", 0) == db.device("cuda:0") == db.device(0)
    assert db.device("cuda") != db.device("cuda:0")
    assert db.device("cpu") != db.device("cuda")
    assert hash(db.device("cuda:0")) == hash(db.device(0))
    assert len({db.device("cpu"), db.device("cpu"), db.device("cuda:0")}) == 2


def test_device_pickles():
    d = db.device("cuda:1")
    assert pickle.loads(pickle.dumps(d)) == d


@pytest.mark.parametrize("bad", ["gpu", "cpu:x", "cuda:-1", "cuda:0:1", "CUDA", "cuda0", "", "cuda:", ":0"])
def test_bad_device_string_raises_runtime_error(bad):
    with pytest.raises(RuntimeError):
        torch.device(bad)  # the behaviour we copy
    with pytest.raises(RuntimeError):
        db.device(bad)


@pytest.mark.parametrize("bad", ["cpu:x", "cuda:-1", "cuda:0:1", "cuda0", "cuda:"])
def test_invalid_device_string_message_matches_torch(bad):
    with pytest.raises(RuntimeError) as theirs:
        torch.device(bad)
    with pytest.raises(RuntimeError) as ours:
        db.device(bad)
    assert str(ours.value) == str(theirs.value)


def test_unknown_device_type_message():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda.* device type at start of device string: gpu"):
        db.device("gpu")


def test_negative_device_index_raises():
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        db.device(-1)


def test_device_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError):
        db.device(1.5)


@without_cuda()
def test_cuda_module_reports_no_cuda():
    assert db.cuda.is_available() is False
    assert db.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match=NO_CUDA):
        db.cuda.synchronize()


def test_tensor_device_attributes():
    t = db.zeros(2)
    assert t.device == db.device("cpu")
    assert isinstance(t.device, db.device)
    assert repr(t.device) == "device(type='cpu')"
    assert t.is_cpu is True
    assert t.is_cuda is False
