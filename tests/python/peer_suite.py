"""The exchange checks every further DLPack peer gets (TensorFlow, PaddlePaddle,
ONNX Runtime, Warp, tvm-ffi), both ways, against the real library.

Each `tests/python/test_peer_<name>.py` describes its peer with a `Peer`
subclass and collects `PeerSuite`'s tests through a `Test...(PeerSuite)` class.
The description says, dtype by dtype and direction by direction, what the
exchange gives (`ZERO_COPY`, `Refused`, `Misread`, `Absent`), and what the peer
cannot do at all (0-d, strides, writes) with the reason; a limit that is the
peer's own is shown with PyTorch in dlbridge's place before the test skips.

Pointers and values of peer tensors are read without dlbridge: through the
peer's own API, or from the DLPack capsule the peer itself exports, read with
ctypes (`capsule_view`), so a copy on either side cannot go unnoticed.
"""

import ctypes
import gc
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, collect, sample
from dlbridge._peers import PEERS
from dlpack_abi import READ_ONLY, DLManagedTensor, DLManagedTensorVersioned, capsule_pointer

ZERO_COPY = "zero-copy"


class Refused(NamedTuple):
    """The import raises `exc` with a message matching `match`."""

    exc: type
    match: str


class Misread(NamedTuple):
    """The import succeeds, sharing memory, but the result has another dtype."""

    as_dtype: str
    why: str


class Absent(NamedTuple):
    """The peer cannot make a tensor of this dtype: `Peer.make` raises."""

    exc: type
    match: str
    why: str


# DLPack's (type code, bits) of each dtype dlbridge knows.
DL_DTYPES = {
    (6, 8): "bool", (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
    (5, 64): "complex64", (5, 128): "complex128",
}


class CapsuleView(NamedTuple):
    data: int  # address of the first element (data + byte_offset)
    dtype: str
    shape: tuple
    strides: tuple  # in elements; C-contiguous ones when the producer gave NULL
    flags: int  # 0 for a legacy capsule


def capsule_view(capsule):
    """What a DLPack capsule describes, read with ctypes; the capsule stays unconsumed
    (its destructor frees it), so the caller must keep it alive while using `data`."""
    if '"dltensor_versioned"' in repr(capsule):
        m = DLManagedTensorVersioned.from_address(capsule_pointer(capsule, b"dltensor_versioned"))
        flags = m.flags
    else:
        m = DLManagedTensor.from_address(capsule_pointer(capsule, b"dltensor"))
        flags = 0
    dl = m.dl_tensor
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    if dl.strides:
        strides = tuple(dl.strides[i] for i in range(dl.ndim))
    else:
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(dl.ndim))
    assert dl.dtype.lanes == 1
    return CapsuleView((dl.data or 0) + dl.byte_offset, DL_DTYPES[(dl.dtype.code, dl.dtype.bits)], shape,
                       strides, flags)


def read_memory(view):
    """A numpy copy of the elements a CapsuleView describes (read from raw memory)."""
    dt = np.dtype(ml_dtypes.bfloat16) if view.dtype == "bfloat16" else np.dtype(view.dtype)
    if 0 in view.shape:
        return np.zeros(view.shape, dt)
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(view.shape, view.strides))
    assert all(s >= 0 for s in view.strides)
    raw = np.frombuffer((ctypes.c_char * (span * dt.itemsize)).from_address(view.data), dtype=dt)
    return np.lib.stride_tricks.as_strided(raw, view.shape, [s * dt.itemsize for s in view.strides]).copy()


def plain(a):
    """numpy values comparable with assert_array_equal (bfloat16 as float32)."""
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a


class Spy:
    """Passes a peer's `__dlpack__` call through to a dlbridge tensor and records the
    keywords (a Spy is no dlbridge tensor, so a peer cannot use dlbridge's table)."""

    def __init__(self, t):
        self.t, self.calls = t, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


class Peer:
    """How a test reaches one peer. Subclasses fill in every attribute."""

    info = None  # its row of dlbridge._peers.PEERS, the registry the doctor reads too

    @property
    def name(self):
        return self.info.display
    into = {}  # dtype name -> expectation of peer.from_dlpack(dlbridge tensor)
    out_of = {}  # dtype name -> expectation of db.from_dlpack(peer tensor)
    # Which exchange table a direction uses: "dlbridge" (the peer calls dlbridge's),
    # "peer" (dlbridge calls the peer's) or None (the __dlpack__ protocol).
    into_table = None
    out_of_table = None
    # The keywords the peer's from_dlpack passes to a producer's __dlpack__; None
    # when it takes capsules only.
    dlpack_keywords = None
    # What peer.from_dlpack does with a read-only dlbridge tensor: a Refused,
    # "writes-through" (imports it and writes into it) or "flag-dropped" (imports
    # it, and exports it again without READ_ONLY).
    read_only_into = None
    # (exception, match, reason) when the peer cannot take what is named; None when it can.
    zero_d_refusal = None
    strided_refusal = None
    # Why the peer has no non-contiguous tensors of its own / no in-place writes (None: it has).
    no_views = None
    no_writes = None
    # Why the peer never frees what dlbridge exports to it (None: it does).
    leaks_exports = None

    def from_dlpack(self, t):
        """The peer's own import of a dlbridge tensor."""
        raise NotImplementedError

    def make(self, a):
        """A peer tensor holding the values of numpy array `a`, made the peer's own way."""
        raise NotImplementedError

    def capsule(self, x):
        """A DLPack capsule of peer tensor x, from the peer's own export."""
        return x.__dlpack__()

    def view(self, x):
        return capsule_view(self.capsule(x))

    def ptr(self, x):
        return self.view(x).data

    def values(self, x):
        c = self.capsule(x)
        return read_memory(capsule_view(c))

    def shape(self, x):
        return self.view(x).shape

    def strides(self, x):
        return self.view(x).strides

    def dtype_name(self, x):
        return self.view(x).dtype

    def fill(self, x, value):
        """Fills float32 peer tensor x in place, with the peer's own API."""
        raise NotImplementedError

    def views(self):
        """(label, peer tensor) pairs: non-contiguous tensors of the peer's own."""
        raise NotImplementedError


DB_VIEWS = {
    "transposed": lambda: db.from_numpy(np.arange(24.0, dtype=np.float32).reshape(4, 6)).t(),
    "stepped": lambda: db.from_numpy(np.arange(24.0, dtype=np.float32).reshape(4, 6))[::2, 1::2],
    "column": lambda: db.from_numpy(np.arange(24.0, dtype=np.float32).reshape(4, 6))[:, 3],
}


def counts():
    return db._core.exchange_api_counts()


class PeerSuite:
    """Collected once per peer through a subclass named Test...; `peer` is a Peer."""

    peer = Peer()

    def test_peer_is_the_registrys(self, request):
        """The peer is a row of dlbridge._peers, and this is the test module it names."""
        assert self.peer.info in PEERS
        assert request.module.__name__ == self.peer.info.test_module

    def test_expectations_cover_every_dtype(self):
        assert sorted(self.peer.into) == sorted(DTYPE_NAMES)
        assert sorted(self.peer.out_of) == sorted(DTYPE_NAMES)

    # ----- every dtype, both ways -----

    @pytest.mark.parametrize("name", DTYPE_NAMES)
    def test_dlbridge_to_peer(self, name):
        p, expect = self.peer, self.peer.into[name]
        t = db.from_numpy(sample(name).copy())
        if isinstance(expect, Refused):
            with pytest.raises(expect.exc, match=expect.match):
                p.from_dlpack(t)
            return
        x = p.from_dlpack(t)
        assert p.ptr(x) == t.data_ptr(), "the peer copied"
        assert p.shape(x) == (2, 3)
        if isinstance(expect, Misread):
            assert p.dtype_name(x) == expect.as_dtype
            return
        assert expect == ZERO_COPY
        assert p.dtype_name(x) == name
        np.testing.assert_array_equal(plain(p.values(x)), plain(sample(name)))

    @pytest.mark.parametrize("name", DTYPE_NAMES)
    def test_peer_to_dlbridge(self, name):
        p, expect = self.peer, self.peer.out_of[name]
        if isinstance(expect, Absent):
            with pytest.raises(expect.exc, match=expect.match):
                p.make(sample(name))
            return
        x = p.make(sample(name))
        if isinstance(expect, Refused):
            with pytest.raises(expect.exc, match=expect.match):
                db.from_dlpack(x)
            return
        u = db.from_dlpack(x)
        assert u.data_ptr() == p.ptr(x), "not zero-copy"
        assert u.shape == (2, 3)
        assert not u.is_read_only
        if isinstance(expect, Misread):
            assert u.dtype is getattr(db, expect.as_dtype)
            return
        assert expect == ZERO_COPY
        assert u.dtype is getattr(db, name)
        np.testing.assert_array_equal(plain(u.numpy()), plain(sample(name)))
        np.testing.assert_array_equal(plain(u.numpy()), plain(p.values(x)))

    def test_exchange_paths(self):
        p = self.peer
        before = counts()
        x = p.from_dlpack(db.arange(4.0))
        middle = counts()
        db.from_dlpack(p.make(np.arange(4.0, dtype=np.float32)))
        after = counts()
        # (imports through a producer's table, exports through dlbridge's, exports through __dlpack__)
        if p.into_table == "dlbridge":
            assert (middle[1] - before[1], middle[2] - before[2]) == (1, 0)
        else:
            assert (middle[1] - before[1], middle[2] - before[2]) == (0, 1)
        assert after[0] - middle[0] == (1 if p.out_of_table == "peer" else 0)
        assert p.values(x).tolist() == [0.0, 1.0, 2.0, 3.0]

    def test_keywords_the_peer_passes_to_dlpack(self):
        p = self.peer
        if p.dlpack_keywords is None:
            pytest.skip(f"{p.name} takes DLPack capsules only: the caller calls __dlpack__")
        spy = Spy(db.arange(3.0))
        x = p.from_dlpack(spy)
        assert spy.calls == [p.dlpack_keywords]
        assert p.ptr(x) == spy.t.data_ptr()

    # ----- shapes and layouts -----

    def test_zero_d_both_ways(self):
        p = self.peer
        if p.zero_d_refusal:
            exc, match, reason = p.zero_d_refusal
            with pytest.raises(exc, match=match):
                p.from_dlpack(torch.tensor(2.5))
            with pytest.raises(exc, match=match):
                p.from_dlpack(db.tensor(2.5))
            pytest.skip(reason)
        t = db.tensor(2.5)
        x = p.from_dlpack(t)
        assert p.shape(x) == ()
        assert p.ptr(x) == t.data_ptr()
        assert p.values(x).tolist() == 2.5
        y = p.make(np.array(4.5, dtype=np.float32))
        u = db.from_dlpack(y)
        assert u.shape == () and u.item() == 4.5
        assert u.data_ptr() == p.ptr(y)

    @pytest.mark.parametrize("shape", [(0,), (3, 0)], ids=str)
    def test_empty_both_ways(self, shape):
        p = self.peer
        x = p.from_dlpack(db.zeros(*shape))
        assert p.shape(x) == shape
        assert p.values(x).size == 0
        u = db.from_dlpack(p.make(np.zeros(shape, dtype=np.float32)))
        assert u.shape == shape and u.numel() == 0 and u.dtype is db.float32

    def test_offset_view_into_peer(self):
        # contiguous, but not at the start of its buffer
        base = db.arange(12.0)
        t = base[3:9]
        x = self.peer.from_dlpack(t)
        assert self.peer.ptr(x) == t.data_ptr() == base.data_ptr() + 3 * 4
        assert self.peer.values(x).tolist() == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]

    @pytest.mark.parametrize("view", DB_VIEWS.keys())
    def test_strided_dlbridge_views_into_peer(self, view):
        p = self.peer
        t = DB_VIEWS[view]()
        assert not t.is_contiguous()
        if p.strided_refusal:
            exc, match, reason = p.strided_refusal
            tt = torch.from_dlpack(t)  # the same view as a torch tensor
            assert not tt.is_contiguous()
            with pytest.raises(exc, match=match):
                p.from_dlpack(tt)
            with pytest.raises(exc, match=match):
                p.from_dlpack(t)
            pytest.skip(reason)
        x = p.from_dlpack(t)
        assert p.shape(x) == t.shape
        assert p.strides(x) == t.stride()
        assert p.ptr(x) == t.data_ptr()
        np.testing.assert_array_equal(p.values(x), t.numpy())

    def test_peer_strided_views_into_dlbridge(self):
        p = self.peer
        if p.no_views:
            pytest.skip(p.no_views)
        for label, x in p.views():
            u = db.from_dlpack(x)
            assert not u.is_contiguous(), label
            assert u.shape == p.shape(x), label
            assert u.stride() == p.strides(x), label
            assert u.data_ptr() == p.ptr(x), label
            np.testing.assert_array_equal(u.numpy(), p.values(x))

    # ----- writes -----

    def test_dlbridge_edits_show_in_peer(self):
        t = db.zeros(2, 3)
        x = self.peer.from_dlpack(t)
        t.add_(1.5)
        t[1, 2] = 4.0
        assert self.peer.values(x).tolist() == [[1.5, 1.5, 1.5], [1.5, 1.5, 4.0]]

    def test_peer_edits_show_in_dlbridge(self):
        p = self.peer
        if p.no_writes:
            pytest.skip(p.no_writes)
        x = p.make(np.zeros((2, 3), dtype=np.float32))
        u = db.from_dlpack(x)
        p.fill(x, 2.5)
        assert u.tolist() == [[2.5] * 3] * 2
        u.add_(1)
        assert p.values(x).tolist() == [[3.5] * 3] * 2
        # and into the peer: its writes land in dlbridge's memory
        t = db.zeros(4)
        p.fill(p.from_dlpack(t), 6.0)
        assert t.tolist() == [6.0] * 4

    def test_read_only_dlbridge_tensor_into_peer(self):
        p, expect = self.peer, self.peer.read_only_into
        a = np.arange(4, dtype=np.float32)
        a.flags.writeable = False
        r = db.from_numpy(a)
        assert r.is_read_only
        if isinstance(expect, Refused):
            with pytest.raises(expect.exc, match=expect.match):
                p.from_dlpack(r)
            return
        x = p.from_dlpack(r)
        assert p.ptr(x) == r.data_ptr()
        if expect == "writes-through":
            # as torch does: the peer ignores READ_ONLY and writes into the memory
            p.fill(x, 7.0)
            assert a.tolist() == [7.0] * 4
        else:
            assert expect == "flag-dropped"
            assert not p.view(x).flags & READ_ONLY
            assert not db.from_dlpack(x).is_read_only
            assert a.tolist() == [0.0, 1.0, 2.0, 3.0]

    # ----- lifetimes -----

    @pytest.fixture
    def frozen_gc(self):
        """gc.collect() scans only what the test made (the peers' modules are large)."""
        gc.collect()
        gc.freeze()
        yield
        gc.unfreeze()

    def test_peer_keeps_dlbridge_memory_alive(self, frozen_gc):
        p = self.peer
        base = db._core.live_storages()
        t = db.arange(1000, dtype=db.float64)
        addr = t.data_ptr()
        x = p.from_dlpack(t)
        del t
        collect()
        assert db._core.live_storages() == base + 1
        assert p.ptr(x) == addr
        assert p.values(x).sum() == sum(range(1000))
        del x
        collect()
        if p.leaks_exports:
            assert db._core.live_storages() == base + 1, f"{p.name} now frees dlbridge's exports: update leaks_exports"
            pytest.skip(p.leaks_exports)
        assert db._core.live_storages() == base

    def test_dlbridge_keeps_peer_memory_alive(self, frozen_gc):
        p = self.peer
        x = p.make(np.arange(1000, dtype=np.float64))
        addr = p.ptr(x)
        u = db.from_dlpack(x)
        del x
        collect()
        churn = [p.make(np.full(1000, -1.0)) for _ in range(20)]
        assert u.data_ptr() == addr
        assert u.sum().item() == sum(range(1000))
        del churn, u
        collect()
