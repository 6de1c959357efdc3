"""Shapes whose element count overflows are refused wherever a shape is made
(issue 21), with PyTorch's class of error, side by side with torch.

`zeros(1).expand(2**62, 2**62)` once gave `numel() == 0` and `len() == 2**62`:
zero strides keep the byte extent tiny, so only the element count can catch it.
PyTorch counts elements in an int64, so 2**63 elements are too many already."""

import ctypes
import pickle

import numpy as np
import pytest
import torch

import dlbridge as db
from dlpack_abi import VERSIONED_DELETER, DLDataType, DLDevice, DLManagedTensorVersioned, DLTensor
from dlpack_abi import new_capsule as PyCapsule_New

BIG = 2**62
NUMEL = "numel: integer multiplication overflow"
PANIC = db._core._panic_exception_type()


def both(make_db, make_torch, match=NUMEL):
    """Both libraries raise RuntimeError (dlbridge with `match`)."""
    with pytest.raises(RuntimeError):
        make_torch()
    with pytest.raises(RuntimeError, match=match):
        make_db()


@pytest.mark.parametrize("sizes", [(BIG, BIG), (2**32, 2**32), (BIG, 2), (BIG, BIG, 1), (2, BIG, BIG)])
def test_expand(sizes):
    both(lambda: db.zeros(1).expand(*sizes), lambda: torch.zeros(1).expand(*sizes))


def test_expand_within_int64_still_works():
    t, u = db.zeros(1).expand(2**40, 2**20), torch.zeros(1).expand(2**40, 2**20)
    assert t.numel() == u.numel() == 2**60
    assert len(t) == len(u) == 2**40


def test_broadcasting_ops_and_broadcast_to():
    a, b = db.zeros(1, 1).expand(BIG, 1), db.zeros(1, 1).expand(1, BIG)
    # The result's allocation says so first, in torch's words (a debug build's
    # overflow panic, "attempt to multiply with overflow", once passed a looser match).
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with sizes=\[") as e:
        a + b
    assert not isinstance(e.value, PANIC)
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with sizes=\["):
        torch.zeros(1, 1).expand(BIG, 1) + torch.zeros(1, 1).expand(1, BIG)
    with pytest.raises(RuntimeError, match=NUMEL):
        a.expand(BIG, BIG)


@pytest.mark.parametrize("method", ["view", "reshape"])
def test_view_and_reshape(method):
    both(lambda: getattr(db.zeros(0), method)(BIG, BIG, 0), lambda: getattr(torch.zeros(0), method)(BIG, BIG, 0))


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("sizes", [(BIG, BIG), (BIG, BIG, 0), (2**63 - 1, 2)])
def test_factories(factory, sizes):
    both(lambda: getattr(db, factory)(*sizes), lambda: getattr(torch, factory)(*sizes),
         match="Storage size calculation overflowed")


@VERSIONED_DELETER
def _no_delete(_):
    pass


def test_from_dlpack_with_zero_strides():
    data = (ctypes.c_float * 1)()
    shape, strides = (ctypes.c_int64 * 2)(BIG, BIG), (ctypes.c_int64 * 2)(0, 0)

    def capsule():
        t = DLTensor(ctypes.addressof(data), DLDevice(1, 0), 2, DLDataType(2, 32, 1), shape, strides, 0)
        m = DLManagedTensorVersioned(1, 3, None, _no_delete, 0, t)
        capsule.keep.append(m)
        return PyCapsule_New(ctypes.addressof(m), b"dltensor_versioned", None)
    capsule.keep = []
    both(lambda: db.from_dlpack(capsule()), lambda: torch.from_dlpack(capsule()))


def test_a_numpy_array_with_zero_strides_within_int64_imports():
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(2**31, 2**31), strides=(0, 0))
    assert db.from_numpy(a).numel() == db.from_dlpack(a).numel() == 2**62


def test_a_pickle_with_an_overflowing_shape_is_refused():
    class Crafted:
        def __reduce__(self):
            return db._core._rebuild_tensor_v1, (bytearray(4), "float32", (BIG, BIG), (0, 0), 0, "cpu", False)

    data = pickle.dumps(Crafted(), protocol=4)
    with pytest.raises(RuntimeError, match=NUMEL):
        pickle.loads(data)
    # torch refuses the same description the same way.
    with pytest.raises(RuntimeError, match=NUMEL):
        torch.zeros(1).as_strided((BIG, BIG), (0, 0))


def test_a_pickle_with_a_huge_but_overflowing_strided_shape_is_refused():
    with pytest.raises(RuntimeError, match=NUMEL):
        db._core._rebuild_tensor_v1(bytearray(8), "float32", (2**40, 2**40), (1, 1), 0, "cpu", False)


@pytest.mark.parametrize("end", [2**63, 2**62, 1e30])
def test_arange_of_an_impossible_length_is_an_error_not_a_panic(end):
    # arange(2**63) once panicked (capacity overflow): the values are now written
    # into memory allocated first, whose size is checked.
    with pytest.raises(RuntimeError):
        torch.arange(end, dtype=torch.float64)
    with pytest.raises(RuntimeError):
        db.arange(end, dtype=db.float64)
