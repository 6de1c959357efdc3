"""The DLPack C exchange API (DLPack 1.3), both ways, against real PyTorch.

dlbridge publishes `Tensor.__dlpack_c_exchange_api__` (a capsule named
"dlpack_exchange_api" pointing to a static DLPackExchangeAPI table) and, as a
consumer, imports through a producer type's table when it has one (looked up
once per type; the older integer attribute `__c_dlpack_exchange_api__` too).
`db._core.exchange_api_counts()` returns (imports through a producer's table,
exports through dlbridge's table, exports through `__dlpack__`), so each test
can prove which path ran.
"""

import ctypes
import gc
import re

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge as db
from dlpack_abi import (VERSIONED_DELETER, DLDataType, DLDevice, DLManagedTensorVersioned, DLTensor,
                        ExchangeAPI, ExchangeAPIHeader, capsule_pointer)

counts = db._core.exchange_api_counts

TORCH_HAS_API = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
needs_torch_api = pytest.mark.skipif(not TORCH_HAS_API, reason="this torch has no DLPack C exchange API")


PMT = ctypes.POINTER(DLManagedTensorVersioned)
SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
ALLOCATOR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(PMT), ctypes.c_void_p, SET_ERROR)
# The Python-object functions are called with the GIL held (PYFUNCTYPE keeps
# it, and raises the Python exception a failing call sets).
FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(PMT))
TO_PY = ctypes.PYFUNCTYPE(ctypes.c_int, PMT, ctypes.POINTER(ctypes.c_void_p))
DLTENSOR_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(DLTensor))
STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


def table_pointer(tp):
    return capsule_pointer(tp.__dlpack_c_exchange_api__, b"dlpack_exchange_api")


def table(tp):
    return ExchangeAPI.from_address(table_pointer(tp))


# ----- dlbridge as a consumer -----

@needs_torch_api
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.uint8])
def test_from_dlpack_of_torch_takes_the_c_path_zero_copy(dtype):
    x = torch.arange(12).reshape(3, 4).to(dtype)
    before = counts()
    d = db.from_dlpack(x)
    after = counts()
    assert after[0] == before[0] + 1, "imported through torch's exchange table"
    assert after[2] == before[2]
    assert d.data_ptr() == x.data_ptr() and tuple(d.shape) == (3, 4) and d.stride() == x.stride()
    assert str(d.dtype).split(".")[1] == str(dtype).split(".")[1]
    if dtype.is_floating_point:
        d.add_(1)
        assert torch.equal(x, (torch.arange(12).reshape(3, 4) + 1).to(dtype))


@needs_torch_api
def test_c_path_keeps_views_and_lifetimes():
    x = torch.arange(20.0).reshape(4, 5)
    v = db.from_dlpack(x.T[1:, ::2])
    np.testing.assert_array_equal(v.numpy(), x.T[1:, ::2].numpy())
    gc.collect()  # earlier tests' garbage (an engine's cycles) must not be counted below
    live = db._core.live_storages()
    del x
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), np.arange(20.0).reshape(4, 5).T[1:, ::2])
    del v
    gc.collect()
    assert db._core.live_storages() == live - 1


def test_types_without_a_table_use_dlpack():
    a = np.arange(3.0)
    before = counts()
    db.from_dlpack(a)
    assert counts()[0] == before[0]


GRAD_REFUSED = "Can't export tensors that require gradient, use tensor.detach()"


class _DlpackOnly:
    """A producer with only the Python protocol, handing out `x`'s capsules."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def test_tensors_that_require_grad_are_refused_on_every_import_path():
    # Issue 21: torch's exchange table exported them silently while its __dlpack__
    # (and so np.from_dlpack) refuse; dlbridge refuses on every path, with torch's words.
    g = torch.ones(2, requires_grad=True)
    for consumer in (np.from_dlpack, torch.from_dlpack):
        with pytest.raises(BufferError, match=re.escape(GRAD_REFUSED)):
            consumer(g)
    producers = {"torch tensor (exchange table)": g, "nn.Parameter": torch.nn.Parameter(torch.ones(2)),
                 "torch tensor (__dlpack__ only)": _DlpackOnly(g),
                 "dlbridge tensor": db.ones(2, requires_grad=True)}
    for name, x in producers.items():
        with pytest.raises(BufferError, match=re.escape(GRAD_REFUSED)):
            db.from_dlpack(x)
        with pytest.raises(BufferError, match=re.escape(GRAD_REFUSED)):
            db.from_dlpack(x, copy=True)
    # What torch accepts, dlbridge accepts: detached, or not requiring grad.
    assert db.from_dlpack(g.detach()).tolist() == [1.0, 1.0]
    assert db.from_dlpack(torch.ones(2)).tolist() == [1.0, 1.0]
    assert db.from_dlpack(db.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]


# ----- dlbridge as a producer -----

def test_tensor_type_publishes_a_1_3_table():
    cap = db.Tensor.__dlpack_c_exchange_api__
    assert type(cap).__name__ == "PyCapsule" and "dlpack_exchange_api" in repr(cap)
    api = table(db.Tensor)
    assert (api.header.major, api.header.minor) == (1, 3) and not api.header.prev_api
    for name, _ in ExchangeAPI._fields_[1:]:
        assert getattr(api, name), name
    assert table_pointer(db.Tensor) == table_pointer(type(db.zeros(1)))  # one static table


def test_torch_from_dlpack_of_a_dlbridge_tensor_is_zero_copy_through_one_path():
    t = db.arange(6.0)
    before = counts()
    u = torch.from_dlpack(t)
    after = counts()
    assert u.data_ptr() == t.data_ptr()
    via_table, via_protocol = after[1] - before[1], after[2] - before[2]
    # torch 2.15's from_dlpack is Python code that calls __dlpack__; a torch
    # that consumes the C exchange API would use dlbridge's table instead.
    assert (via_table, via_protocol) in ((1, 0), (0, 1))


def test_managed_tensor_from_py_object_and_back():
    api = table(db.Tensor)
    t = db.from_numpy(np.arange(12, dtype=np.int32).reshape(3, 4))[:, 1:]
    out = PMT()
    before = counts()
    assert FROM_PY(api.managed_tensor_from_py_object_no_sync)(t, ctypes.byref(out)) == 0
    assert counts()[1] == before[1] + 1
    m = out.contents
    assert (m.major, m.minor) == (1, 3) and m.flags == 0
    dl = m.dl_tensor
    assert dl.data == t.data_ptr() and dl.ndim == 2 and (dl.dtype.code, dl.dtype.bits) == (0, 32)
    assert [dl.shape[i] for i in range(2)] == [3, 3] and [dl.strides[i] for i in range(2)] == [4, 1]
    # to_py_object steals it back into a dlbridge tensor.
    obj = ctypes.c_void_p()
    assert TO_PY(api.managed_tensor_to_py_object_no_sync)(out, ctypes.byref(obj)) == 0
    back = ctypes.cast(obj, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(back))  # we now own the reference it returned
    assert back.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_read_only_tensors_export_read_only_and_requires_grad_refuses():
    api = table(db.Tensor)
    a = np.arange(3.0)
    a.flags.writeable = False
    out = PMT()
    assert FROM_PY(api.managed_tensor_from_py_object_no_sync)(db.from_numpy(a), ctypes.byref(out)) == 0
    assert out.contents.flags & 1
    out.contents.deleter(out)
    g = db.ones(2)
    g.requires_grad = True
    with pytest.raises(BufferError, match="require gradient"):
        FROM_PY(api.managed_tensor_from_py_object_no_sync)(g, ctypes.byref(PMT()))
    with pytest.raises(TypeError):
        FROM_PY(api.managed_tensor_from_py_object_no_sync)(np.arange(2), ctypes.byref(PMT()))


def test_dltensor_view_points_into_the_object():
    api = table(db.Tensor)
    t = db.from_numpy(np.zeros((2, 3), dtype=ml_dtypes.bfloat16)).T
    view = DLTensor()
    assert DLTENSOR_FROM_PY(api.dltensor_from_py_object_no_sync)(t, ctypes.byref(view)) == 0
    assert view.data == t.data_ptr() and view.ndim == 2 and (view.dtype.code, view.dtype.bits) == (4, 16)
    assert [view.shape[i] for i in range(2)] == [3, 2] and [view.strides[i] for i in range(2)] == [1, 3]
    assert (view.device.device_type, view.device.device_id) == (1, 0)


def test_allocator_and_its_errors():
    api = table(db.Tensor)
    shape = (ctypes.c_int64 * 2)(2, 5)
    proto = DLTensor(None, DLDevice(1, 0), 2, DLDataType(2, 64, 1), shape, None, 0)
    out = PMT()
    errors = []
    on_error = SET_ERROR(lambda ctx, kind, msg: errors.append((kind.decode(), msg.decode())))
    assert ALLOCATOR(api.managed_tensor_allocator)(ctypes.byref(proto), ctypes.byref(out), None, on_error) == 0
    dl = out.contents.dl_tensor
    assert dl.ndim == 2 and [dl.shape[0], dl.shape[1]] == [2, 5] and dl.data
    out.contents.deleter(out)
    bad = DLTensor(None, DLDevice(1, 0), 1, DLDataType(2, 3, 1), shape, None, 0)  # 3-bit floats
    assert ALLOCATOR(api.managed_tensor_allocator)(ctypes.byref(bad), ctypes.byref(out), None, on_error) == -1
    assert errors and errors[-1][0] == "RuntimeError"
    neg = DLTensor(None, DLDevice(1, 0), -1, DLDataType(2, 32, 1), shape, None, 0)
    assert ALLOCATOR(api.managed_tensor_allocator)(ctypes.byref(neg), ctypes.byref(out), None, on_error) == -1
    assert "ndim -1" in errors[-1][1]


def test_current_work_stream_is_the_default_stream():
    api = table(db.Tensor)
    s = ctypes.c_void_p(123)
    assert STREAM(api.current_work_stream)(1, 0, ctypes.byref(s)) == 0 and s.value is None
    assert STREAM(api.current_work_stream)(2, 0, ctypes.byref(s)) == 0 and s.value is None


# ----- discovery: the integer form, version chains, caching -----

@needs_torch_api
def test_older_integer_attribute_is_accepted():
    class IntForm(torch.Tensor):
        __dlpack_c_exchange_api__ = None
        __c_dlpack_exchange_api__ = table_pointer(torch.Tensor)

    x = torch.arange(4.0).as_subclass(IntForm)
    before = counts()
    d = db.from_dlpack(x)
    assert counts()[0] == before[0] + 1 and d.data_ptr() == x.data_ptr()


@needs_torch_api
def test_newer_major_versions_walk_prev_api_and_unknown_ones_are_ignored():
    torch_header = ctypes.cast(table_pointer(torch.Tensor), ctypes.POINTER(ExchangeAPIHeader))
    newer = ExchangeAPIHeader(2, 0, torch_header)  # a hypothetical DLPack 2 table chaining to 1.x
    orphan = ExchangeAPIHeader(2, 0, None)         # a 2.x table with nothing older

    class Chained(torch.Tensor):
        __dlpack_c_exchange_api__ = None
        __c_dlpack_exchange_api__ = ctypes.addressof(newer)

    class Orphan(torch.Tensor):
        __dlpack_c_exchange_api__ = None
        __c_dlpack_exchange_api__ = ctypes.addressof(orphan)

    before = counts()
    db.from_dlpack(torch.zeros(2).as_subclass(Chained))
    assert counts()[0] == before[0] + 1
    d = db.from_dlpack(torch.ones(2).as_subclass(Orphan))  # falls back to __dlpack__
    assert counts()[0] == before[0] + 1 and d.tolist() == [1.0, 1.0]
    Chained.keep = newer  # the table must outlive the type, as the API requires
    Orphan.keep = orphan


@needs_torch_api
def test_the_table_is_looked_up_once_per_type():
    class Cached(torch.Tensor):
        pass

    db.from_dlpack(torch.zeros(1).as_subclass(Cached))
    Cached.__dlpack_c_exchange_api__ = None  # too late: the first lookup is cached
    before = counts()
    db.from_dlpack(torch.zeros(1).as_subclass(Cached))
    assert counts()[0] == before[0] + 1


def test_table_functions_take_the_gil_themselves():
    # A C consumer that calls without holding the GIL gets a working call,
    # not a crash (CFUNCTYPE releases the GIL around the call).
    api = table(db.Tensor)
    t = db.arange(5.0)
    out = PMT()
    unlocked = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(PMT))
    assert unlocked(api.managed_tensor_from_py_object_no_sync)(t, ctypes.byref(out)) == 0
    assert out.contents.dl_tensor.data == t.data_ptr()
    out.contents.deleter(out)
