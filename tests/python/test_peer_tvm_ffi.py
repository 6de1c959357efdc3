"""Exchange with apache-tvm-ffi through DLPack, both ways (see peer_suite.py).

`tvm_ffi.from_dlpack(t)` imports through dlbridge's DLPack C exchange table;
a tvm-ffi function called with dlbridge tensors receives them through that
table and hands tensors back as dlbridge tensors (the table's
`managed_tensor_to_py_object`), sharing memory. tvm-ffi tensors export
through `__dlpack__`. Every dtype, strides and 0-d are zero-copy both ways;
tvm-ffi keeps no READ_ONLY flag (its own exports of a read-only tensor are
writable), and its Python `dtype` cannot name complex dtypes.
"""

import numpy as np
import pytest

from dlbridge._peers import BY_NAME

tvm_ffi = pytest.importorskip(BY_NAME["tvm_ffi"].module)

import torch  # noqa: E402

import dlbridge as db  # noqa: E402
from conftest import COMPLEX_NAMES, DTYPE_NAMES, collect  # noqa: E402
from peer_suite import ZERO_COPY, Peer, PeerSuite, counts  # noqa: E402


class TvmFfi(Peer):
    info = BY_NAME["tvm_ffi"]  # the registry the doctor reads too
    into = dict.fromkeys(DTYPE_NAMES, ZERO_COPY)
    out_of = dict.fromkeys(DTYPE_NAMES, ZERO_COPY)
    into_table = "dlbridge"
    out_of_table = None
    dlpack_keywords = {}  # what it passes to producers without a table
    read_only_into = "flag-dropped"
    no_writes = "tvm-ffi's Python Tensor has no in-place writes (only tvm-ffi functions write through it)"

    def from_dlpack(self, t):
        return tvm_ffi.from_dlpack(t)

    def make(self, a):
        # tvm-ffi allocates nothing from Python: its tensors wrap another producer's
        # memory (NumPy's; torch's for bfloat16, which NumPy cannot export)
        if a.dtype.name == "bfloat16":
            return tvm_ffi.from_dlpack(torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16))
        return tvm_ffi.from_dlpack(np.array(a))

    def ptr(self, x):
        return x.data_ptr()

    def shape(self, x):
        return tuple(x.shape)

    def strides(self, x):
        return tuple(x.strides)

    # dtype_name and values: from its own DLPack export (str(x.dtype) fails for complex)

    def views(self):
        base = torch.arange(24.0).reshape(4, 6)
        return [("transposed", tvm_ffi.from_dlpack(base.t())), ("stepped", tvm_ffi.from_dlpack(base[::2, 1::2]))]


class TestTvmFfi(PeerSuite):
    peer = TvmFfi()


@pytest.mark.parametrize("name", COMPLEX_NAMES)
def test_tvm_ffi_holds_complex_but_cannot_name_it(name):
    t = db.tensor([1 + 2j, 3 - 1j], dtype=getattr(db, name))
    x = tvm_ffi.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError, match="unknown type_code=5"):
        str(x.dtype)
    assert db.from_dlpack(x).tolist() == [1 + 2j, 3 - 1j]


def test_tvm_ffi_require_contiguous_refuses_views():
    with pytest.raises(RuntimeError, match="not contiguous"):
        tvm_ffi.from_dlpack(db.arange(12.0).reshape(3, 4).t(), require_contiguous=True)


echo = tvm_ffi.get_global_func("testing.echo", allow_missing=True)
needs_echo = pytest.mark.skipif(echo is None, reason="this tvm-ffi has no testing.echo")


@needs_echo
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_tvm_ffi_function_gets_and_returns_dlbridge_tensors(name):
    t = db.arange(6).reshape(2, 3).to(getattr(db, name))
    before = counts()
    r = echo(t)
    after = counts()
    assert after[1] - before[1] == 1, "passed through dlbridge's exchange table"
    assert after[2] == before[2]
    assert type(r) is db.Tensor and r is not t  # a new dlbridge tensor...
    assert r.data_ptr() == t.data_ptr()  # ...over the same memory
    assert r.dtype is t.dtype and r.shape == t.shape and r.stride() == t.stride()
    u = db.from_dlpack(r)
    assert u.data_ptr() == t.data_ptr()


@needs_echo
def test_tvm_ffi_function_keeps_views_and_shares_writes():
    t = db.arange(24.0).reshape(4, 6)
    v = t.t()[1:, ::2]
    r = echo(v)
    assert r.shape == v.shape and r.stride() == v.stride() and r.data_ptr() == v.data_ptr()
    r.fill_(-1.0)
    assert v.tolist() == r.tolist() == [[-1.0] * 2] * 5
    expected = np.arange(24.0).reshape(4, 6)
    expected.T[1:, ::2] = -1.0
    assert t.tolist() == expected.tolist()


@needs_echo
def test_tvm_ffi_function_result_outlives_the_argument(no_leak):
    base = no_leak
    t = db.arange(1000, dtype=db.float64)
    r = echo(t)
    del t
    collect()
    # t's storage, kept by its export to tvm-ffi, and r's, which owns tvm-ffi's tensor
    assert db._core.live_storages() == base + 2
    assert r.sum().item() == sum(range(1000))
    del r
    collect()
    assert db._core.live_storages() == base


@needs_echo
def test_tvm_ffi_function_result_of_a_read_only_tensor_is_writable():
    a = np.arange(3.0)
    a.flags.writeable = False
    r = echo(db.from_numpy(a))
    assert r.data_ptr() == a.ctypes.data
    assert not r.is_read_only  # tvm-ffi keeps no READ_ONLY flag


@needs_echo
def test_tvm_ffi_function_hands_torch_and_tvm_tensors_back_as_theirs():
    tt = torch.arange(3.0)
    assert type(echo(tt)) is torch.Tensor
    x = tvm_ffi.from_dlpack(np.arange(3.0))
    assert type(echo(x)) is tvm_ffi.Tensor
