"""Every door for Python tensors takes the same things, through one routine (src/python/arg.rs):
from_dlpack, as_tensor, asarray, tensor(), copy_, index assignment, and (in another crate)
the pyo3 layer's TensorArg (test_pyo3_example.py). Operators take dlbridge tensors, ndarrays
and numbers, and refuse other frameworks' tensors with the from_dlpack hint, as torch refuses
a JAX array."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import OldStyleProducer


def _sources():
    """(name, make) pairs: each make() returns (object, data pointer, values) afresh
    (capsules are consumed once)."""

    def torch_tensor():
        x = torch.arange(6, dtype=torch.float32)
        return x, x.data_ptr(), x.tolist()

    def capsule(max_version):
        def make():
            x = torch.arange(6, dtype=torch.float32)
            kw = {} if max_version is None else {"max_version": max_version}
            # The capsule keeps x's memory alive (torch's deleter holds a reference).
            return x.__dlpack__(**kw), x.data_ptr(), x.tolist()

        return make

    def ndarray():
        a = np.arange(6, dtype=np.float32)
        return a, a.ctypes.data, a.tolist()

    def ndarray_subclass():
        a = np.arange(6, dtype=np.float32).view(np.ma.MaskedArray)
        return a, a.ctypes.data, a.tolist()

    def dlbridge_tensor():
        t = db.arange(6, dtype=db.float32)
        return t, t.data_ptr(), t.tolist()

    def old_producer():
        a = np.arange(6, dtype=np.float32)
        return OldStyleProducer(a), a.ctypes.data, a.tolist()

    return [
        ("dlbridge", dlbridge_tensor),
        ("ndarray", ndarray),
        ("ndarray subclass", ndarray_subclass),
        ("torch", torch_tensor),
        ("versioned capsule", capsule((1, 3))),
        ("legacy capsule", capsule(None)),
        ("producer without max_version", old_producer),
    ]


SOURCES = _sources()
IDS = [name for name, _ in SOURCES]


@pytest.mark.parametrize("make", [m for _, m in SOURCES], ids=IDS)
@pytest.mark.parametrize("door", [db.from_dlpack, db.as_tensor, db.asarray], ids=["from_dlpack", "as_tensor", "asarray"])
def test_zero_copy_doors_share_the_memory(door, make):
    x, ptr, values = make()
    t = door(x)
    assert t.data_ptr() == ptr
    assert t.tolist() == values


@pytest.mark.parametrize("make", [m for _, m in SOURCES], ids=IDS)
def test_tensor_copies(make):
    x, ptr, values = make()
    t = db.tensor(x)
    assert t.data_ptr() != ptr and t.tolist() == values


@pytest.mark.parametrize("make", [m for _, m in SOURCES], ids=IDS)
def test_copy_and_index_assignment_take_every_source(make):
    dst = db.zeros(6)
    x, _, values = make()
    dst.copy_(x)
    assert dst.tolist() == values
    dst = db.zeros(2, 6)
    x, _, values = make()
    dst[1] = x
    assert dst.tolist() == [[0.0] * 6, values]
    dst = db.zeros(8)
    x, _, values = make()
    dst[[0, 1, 2, 3, 4, 5]] = x
    assert dst.tolist() == values + [0.0, 0.0]


@pytest.mark.parametrize("name,make", [(n, m) for n, m in SOURCES], ids=IDS)
def test_operators_take_own_tensors_and_arrays_and_refuse_other_frameworks(name, make):
    x, _, values = make()
    t = db.ones(6)
    if name in ("dlbridge", "ndarray", "ndarray subclass"):
        assert (t + x).tolist() == [v + 1 for v in values]
        return
    if "capsule" in name:
        # A capsule is no operand for torch either.
        with pytest.raises(TypeError):
            torch.ones(6) + x
        with pytest.raises(TypeError):
            t + x
        return
    with pytest.raises(TypeError, match=r"dlbridge\.from_dlpack\(x\)"):
        t + x
    with pytest.raises(TypeError, match=r"dlbridge\.from_dlpack\(x\)"):
        t.add_(x)


@pytest.mark.parametrize("bad", [[1, 2], 3, "x", None, object()], ids=["list", "int", "str", "None", "object"])
def test_from_dlpack_refuses_what_is_not_a_tensor(bad):
    # (torch raises RuntimeError "invalid capsule" here; a TypeError names the mistake.)
    with pytest.raises(TypeError, match="from_dlpack expects an object with __dlpack__"):
        db.from_dlpack(bad)


def test_requires_grad_is_refused_by_every_importing_door():
    x = torch.ones(3, requires_grad=True)
    for door in (db.from_dlpack, db.as_tensor, db.asarray, db.tensor):
        with pytest.raises(BufferError, match="require gradient"):
            door(x)
    with pytest.raises(BufferError, match="require gradient"):
        db.zeros(3).copy_(x)
