"""Exchange with ONNX Runtime (CPU) through DLPack, both ways (see peer_suite.py).

`OrtValue.from_dlpack(t)` calls a bare `__dlpack__()` (a legacy capsule);
`OrtValue.__dlpack__` takes no `max_version`, which `db.from_dlpack` handles by
asking again with fewer keywords. Both ways are zero-copy for every dtype but
complex (ONNX Runtime has none); ONNX Runtime refuses strided input and has no
strided tensors of its own. An OrtValue made by `ortvalue_from_numpy` does not
keep its array alive through DLPack: it must outlive every import.
"""

import gc
import weakref

import numpy as np
import pytest

from dlbridge._peers import BY_NAME

ort = pytest.importorskip(BY_NAME["onnxruntime"].module)

import torch  # noqa: E402

import dlbridge as db  # noqa: E402
from conftest import COMPLEX_NAMES, DTYPE_NAMES  # noqa: E402
from peer_suite import ZERO_COPY, Absent, Peer, PeerSuite, Refused  # noqa: E402

OrtValue = ort.OrtValue
ONNX_BFLOAT16 = 16  # onnx.TensorProto.BFLOAT16
ORT_DTYPES = {"tensor(float)": "float32", "tensor(double)": "float64"}


class OnnxRuntime(Peer):
    info = BY_NAME["onnxruntime"]  # the registry the doctor reads too
    into = {**dict.fromkeys(DTYPE_NAMES, ZERO_COPY),
            **dict.fromkeys(COMPLEX_NAMES, Refused(RuntimeError, "Unsupported DLPack data type: code 5"))}
    out_of = {**dict.fromkeys(DTYPE_NAMES, ZERO_COPY),
              **dict.fromkeys(COMPLEX_NAMES, Absent(RuntimeError, "can't be converted to MLDataType",
                                                    "ONNX Runtime has no complex tensors"))}
    into_table = out_of_table = None
    dlpack_keywords = {}
    read_only_into = Refused(BufferError, "read-only")  # it asks for a legacy capsule
    strided_refusal = (RuntimeError, "ORT only supports contiguous tensor",
                       "ONNX Runtime refuses non-contiguous DLPack input (RuntimeError: ORT only supports "
                       "contiguous tensor for now), as it does for torch")
    no_views = "ONNX Runtime tensors (OrtValue) are always contiguous: it has no strided tensors to export"

    def from_dlpack(self, t):
        return OrtValue.from_dlpack(t)

    def make(self, a):
        # memory ONNX Runtime allocates and owns, then filled from `a`
        a = np.array(a, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        if a.dtype.name == "bfloat16":
            x = OrtValue.ortvalue_from_shape_and_type(list(a.shape), ONNX_BFLOAT16)
            x.update_inplace(a.view(np.uint16))
            return x
        x = OrtValue.ortvalue_from_shape_and_type(list(a.shape), a.dtype.type)
        x.update_inplace(a)  # same dtype: update_inplace checks only the element count
        return x

    def ptr(self, x):
        return x.data_ptr()

    def values(self, x):
        if x.data_type() == "tensor(bfloat16)":  # no NumPy type: read through its DLPack export
            return super().values(x)
        return x.numpy().copy()

    def shape(self, x):
        return tuple(x.shape())

    def dtype_name(self, x):
        name = x.data_type().removeprefix("tensor(").removesuffix(")")
        return {"float": "float32", "double": "float64"}.get(name, name)

    def fill(self, x, value):
        x.update_inplace(np.full(x.shape(), value, dtype=np.float32))


class TestOnnxRuntime(PeerSuite):
    peer = OnnxRuntime()


def test_ortvalue_dlpack_takes_no_max_version():
    x = OrtValue.ortvalue_from_numpy(np.arange(3.0))
    with pytest.raises(TypeError, match="max_version"):
        x.__dlpack__(max_version=(1, 3))
    assert db.from_dlpack(x).data_ptr() == x.data_ptr()


def test_ortvalue_from_numpy_shares_the_array_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    x = OrtValue.ortvalue_from_numpy(a)
    assert x.data_ptr() == a.ctypes.data
    u = db.from_dlpack(x)
    assert u.data_ptr() == a.ctypes.data
    u.add_(1)
    assert a.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


@pytest.mark.parametrize("consumer", [db.from_dlpack, torch.from_dlpack], ids=["dlbridge", "torch"])
def test_ortvalue_from_numpy_does_not_keep_its_array_alive_through_dlpack(consumer):
    # ONNX Runtime's capsule holds the OrtValue's C++ tensor, not the NumPy array it
    # wraps: once the OrtValue goes, the array is freed under any consumer (torch's
    # too). Shown with a weak reference, without touching the freed memory.
    a = np.arange(1000.0)
    alive = weakref.ref(a)
    x = OrtValue.ortvalue_from_numpy(a)
    del a
    imported = consumer(x)
    gc.collect()
    assert alive() is not None
    del x
    gc.collect()
    assert alive() is None
    del imported


def test_read_only_numpy_through_ortvalue_arrives_writable():
    a = np.arange(3.0)
    a.flags.writeable = False
    x = OrtValue.ortvalue_from_numpy(a)  # ONNX Runtime accepts it...
    u = db.from_dlpack(x)  # ...and its legacy capsule cannot say read-only
    assert u.data_ptr() == a.ctypes.data
    assert not u.is_read_only
