"""Exchange with PaddlePaddle (CPU) through DLPack, both ways (see peer_suite.py).

`paddle.from_dlpack(t)` asks dlbridge for a versioned capsule
(`max_version=(1, 2)`); `db.from_dlpack(p)` goes through paddle's DLPack C
exchange table. Both ways are zero-copy for every dtype, strides included.
Paddle ignores READ_ONLY, as torch does, and never calls the deleter of a
managed tensor whose `manager_ctx` is NULL; dlbridge's exports point theirs at
their own block, so paddle frees them.
"""

import gc

import numpy as np
import pytest

from dlbridge._peers import BY_NAME

from conftest import DTYPE_NAMES, import_paddle

if import_paddle() is None:
    pytest.skip("paddle is not installed (or fails to import)", allow_module_level=True)
import paddle  # noqa: E402

import dlbridge as db  # noqa: E402
from dlpack_abi import DLManagedTensorVersioned, capsule_pointer  # noqa: E402
from peer_suite import ZERO_COPY, Peer, PeerSuite, capsule_view, counts  # noqa: E402

class Paddle(Peer):
    info = BY_NAME["paddle"]  # the registry the doctor reads too
    into = dict.fromkeys(DTYPE_NAMES, ZERO_COPY)
    out_of = dict.fromkeys(DTYPE_NAMES, ZERO_COPY)
    into_table = None
    out_of_table = "peer"
    dlpack_keywords = {"max_version": (1, 2)}
    read_only_into = "writes-through"

    def from_dlpack(self, t):
        return paddle.from_dlpack(t)

    def make(self, a):
        if a.dtype.name == "bfloat16":
            return paddle.to_tensor(a.astype(np.float32)).astype("bfloat16")
        if a.dtype in (np.uint16, np.uint32, np.uint64):
            # paddle holds these but cannot make them from NumPy: to_tensor refuses
            # uint32/uint64 and reads uint16 as bfloat16 (test below)
            return paddle.from_dlpack(np.array(a))
        return paddle.to_tensor(a)

    def ptr(self, x):
        return x.data_ptr()

    def values(self, x):
        return (x.astype("float32") if x.dtype == paddle.bfloat16 else x).numpy()

    def shape(self, x):
        return tuple(x.shape)

    def strides(self, x):
        return tuple(x.strides)

    # dtype_name: from paddle's own DLPack export (str(paddle.uint16) is "paddle.bfloat16")

    def fill(self, x, value):
        x.fill_(value)

    def views(self):
        x = paddle.arange(24, dtype="float32").reshape([4, 6])
        return [("transposed", x.t()), ("stepped", x[::2, 1::2]), ("column", x[:, 3])]


class TestPaddle(PeerSuite):
    peer = Paddle()


def test_paddle_uint16_prints_as_bfloat16_but_is_uint16():
    assert str(paddle.uint16) == "paddle.bfloat16" and paddle.uint16 != paddle.bfloat16
    t = db.tensor([1, 2, 300], dtype=db.uint16)
    p = paddle.from_dlpack(t)
    assert p.dtype == paddle.uint16
    assert p.astype("float32").tolist() == [1.0, 2.0, 300.0]
    back = db.from_dlpack(p)
    assert back.dtype is db.uint16 and back.data_ptr() == t.data_ptr()


def test_paddle_to_tensor_reads_uint16_numpy_data_as_bfloat16_bits():
    p = paddle.to_tensor(np.array([1, 2, 300], dtype=np.uint16))
    assert p.dtype == paddle.bfloat16
    assert capsule_view(p.__dlpack__()).dtype == "bfloat16"


def test_paddle_makes_uint32_and_uint64_only_through_dlpack():
    for name in ("uint32", "uint64"):
        with pytest.raises(ValueError):
            paddle.to_tensor(np.arange(3, dtype=name))
        t = db.tensor([1, 2, 3], dtype=getattr(db, name))
        p = paddle.from_dlpack(t)
        assert p.dtype == getattr(paddle, name)
        back = db.from_dlpack(p)
        assert back.data_ptr() == t.data_ptr() and back.dtype is getattr(db, name)


def test_paddle_import_goes_through_paddles_exchange_table_zero_copy():
    assert hasattr(type(paddle.zeros([1])), "__dlpack_c_exchange_api__")
    p = paddle.arange(12, dtype="float32").reshape([3, 4]).t()
    before = counts()
    u = db.from_dlpack(p)
    assert counts()[0] == before[0] + 1
    assert u.data_ptr() == p.data_ptr() and u.stride() == (1, 4)


def test_paddle_frees_imports_only_when_manager_ctx_is_set():
    """Paddle never calls the deleter of a managed tensor whose manager_ctx is NULL (shown
    with a capsule whose context is cleared by hand); dlbridge's exports set theirs, so
    what paddle imports from dlbridge is freed."""
    for clear_ctx in (True, False):
        gc.collect()
        base = db._core.live_storages()
        t = db.arange(10.0)
        c = t.__dlpack__(max_version=(1, 2))
        m = DLManagedTensorVersioned.from_address(capsule_pointer(c, b"dltensor_versioned"))
        assert m.manager_ctx == capsule_pointer(c, b"dltensor_versioned")  # the block itself
        if clear_ctx:
            m.manager_ctx = None
        del t
        x = paddle.from_dlpack(c)
        assert x.tolist() == [float(i) for i in range(10)]
        del c, x
        gc.collect()
        assert db._core.live_storages() == base + (1 if clear_ctx else 0)
