"""Pickling, copy.copy and copy.deepcopy of dlbridge tensors (issue 13).

Protocol 5 hands the tensor's own memory out of band (no copy at dumps) and
loads from such a buffer without a copy; a read-only buffer gives a
read-only tensor; views keep their strides; the reconstructor refuses any
state that would build a view outside its buffer. Multiprocessing, Ray,
Dask and DataLoader are in test_engines.py and test_shared_memory.py.
"""

import copy
import io
import pickle
import pickletools
import struct

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, sample

NARROW = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
          "float4_e2m1fn", "float4_e2m1fn_x2", "complex32"]
REBUILD = db._core._rebuild_tensor_v1
BITS = {1: db.uint8, 2: db.int16, 4: db.int32, 8: db.int64}
NP_BITS = {1: np.uint8, 2: np.int16, 4: np.int32}


def bits(t):
    """The tensor's elements as integers of the same width (exact for every dtype)."""
    t = t.contiguous()
    if t.dtype.itemsize == 16:
        return t.numpy().view(np.int64).tolist()
    return t.view(BITS[t.dtype.itemsize]).tolist()


def round_trip(t, protocol):
    return pickle.loads(pickle.dumps(t, protocol=protocol))


def out_of_band(t):
    """(loaded tensor, the PickleBuffers dumps handed out)."""
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    return pickle.loads(data, buffers=buffers), buffers


def buffer_address(buf):
    return np.frombuffer(buf.raw(), np.uint8).ctypes.data


# ----------------------------------------------------------------- values


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_every_dtype_round_trips(name, protocol):
    t = db.from_numpy(sample(name, (3, 4)))
    r = round_trip(t, protocol)
    assert (r.dtype, r.shape, r.device) == (t.dtype, t.shape, t.device)
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    assert r.data_ptr() != t.data_ptr()  # in band: a copy
    assert not r.is_read_only


@pytest.mark.parametrize("name", NARROW)
def test_narrow_dtypes_round_trip_bit_for_bit(name):
    dt = getattr(db, name)
    raw = np.arange(24 * dt.itemsize, dtype=np.uint8) * 7  # every bit pattern kind
    t = db.from_numpy(raw.view(NP_BITS[dt.itemsize]).reshape(4, 6)).view(dt)
    for protocol in (2, 5):
        r = round_trip(t, protocol)
        assert (r.dtype, r.shape) == (t.dtype, t.shape)
        assert bits(r) == bits(t)
    r, _ = out_of_band(t)
    assert r.data_ptr() == t.data_ptr() and bits(r) == bits(t)


def test_scalars_empty_and_requires_grad_round_trip():
    for t in (db.tensor(3.5), db.empty(0, 3), db.zeros(2, 0, dtype=db.int64), db.tensor(True)):
        for protocol in (2, 5):
            r = round_trip(t, protocol)
            assert (r.shape, r.dtype, r.tolist()) == (t.shape, t.dtype, t.tolist())
    g = db.ones(3).requires_grad_()
    assert round_trip(g, 5).requires_grad and round_trip(g, 2).requires_grad
    assert not round_trip(db.ones(3), 5).requires_grad


# ----------------------------------------------------------------- zero copy


def test_protocol_5_hands_out_the_tensors_own_memory_and_loads_it_without_copy():
    t = db.arange(1000, dtype=db.float32)
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 300  # the bytes are not in the stream
    assert buffer_address(buffers[0]) == t.data_ptr()
    r = pickle.loads(data, buffers=buffers)
    assert r.data_ptr() == t.data_ptr()
    r[0] = 42  # the same memory: a write shows on the other side
    assert t[0].item() == 42


def test_an_out_of_band_load_keeps_its_buffer_alive():
    a = np.arange(10, dtype=np.float64) * 1.5
    buffers = []
    data = pickle.dumps(db.from_numpy(a), protocol=5, buffer_callback=buffers.append)
    mem = bytearray(buffers[0].raw())  # the bytes another process would receive
    r = pickle.loads(data, buffers=[mem])
    assert r.data_ptr() == np.frombuffer(mem, np.uint8).ctypes.data
    del mem, buffers, a
    import gc

    gc.collect()
    assert r.tolist() == [i * 1.5 for i in range(10)]


def test_a_read_only_buffer_gives_a_read_only_tensor():
    t = db.arange(6, dtype=db.int32)
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    frozen = bytes(buffers[0].raw())  # read-only, as Ray's object store hands out
    r = pickle.loads(data, buffers=[frozen])
    assert r.is_read_only and r.data_ptr() == np.frombuffer(frozen, np.uint8).ctypes.data
    with pytest.raises(RuntimeError, match="read-only"):
        r.add_(1)
    assert r.tolist() == list(range(6))
    # torch has no read-only tensors: it wraps the same buffer and warns
    with pytest.warns(UserWarning, match="not writable"):
        torch.frombuffer(frozen, dtype=torch.int32)


def test_read_only_tensors_stay_read_only_in_every_protocol():
    ro = db.from_numpy(np.frombuffer(np.arange(4, dtype=np.int32).tobytes(), np.int32))
    assert ro.is_read_only
    for protocol in (0, 2, 4, 5):
        r = round_trip(ro, protocol)
        assert r.is_read_only and r.tolist() == [0, 1, 2, 3]
    r, (buf,) = out_of_band(ro)
    assert buf.raw().readonly and r.is_read_only and r.data_ptr() == ro.data_ptr()


def test_writable_tensors_load_writable_in_band():
    for protocol in (0, 2, 4, 5):
        r = round_trip(db.ones(3), protocol)
        r.add_(1)
        assert r.tolist() == [2.0, 2.0, 2.0]


def test_empty_tensors_with_a_null_data_pointer_pickle_and_share():
    t = db.from_dlpack(torch.empty(0))
    assert t.data_ptr() == 0  # torch hands out NULL for no elements
    for protocol in (2, 4, 5):
        r = round_trip(t, protocol)
        assert r.shape == (0,) and r.dtype == db.float32
    assert t.share_memory_().is_shared() and t.numel() == 0


def test_one_byte_tensors_never_write_into_pythons_shared_bytes():
    for protocol in (2, 4):
        r = round_trip(db.tensor([5], dtype=db.uint8), protocol)
        r[0] = 7
        assert r.tolist() == [7] and bytes([5]) == b"\x05" and b"\x05"[0] == 5
        e = round_trip(db.empty(0, dtype=db.uint8), protocol)
        assert e.numel() == 0 and not e.is_read_only


def test_protocol_4_loads_writable_tensors_into_their_own_memory():
    data = pickle.dumps(db.arange(1000.0), protocol=4)
    r = pickle.loads(data)
    r.add_(1)
    assert r[0].item() == 1.0 and not r.is_read_only
    assert pickle.loads(data)[0].item() == 0.0


def _crafted_stream(payload, rebuilds):
    """A protocol-4 pickle, written opcode by opcode: `payload` as one memoized `bytes`
    object, `rebuilds` writable float32 tensors rebuilt over it (the second one fetching
    the bytes from the memo), then the bytes object itself again, all in one tuple."""
    n = len(payload) // 4
    out = [b"\x80\x04", b"(",  # PROTO 4, MARK (the outer tuple)
           b"B" + struct.pack("<I", len(payload)) + payload, b"q\x00", b"0"]  # BINBYTES, BINPUT 0, POP
    for _ in range(rebuilds):
        out += [b"cdlbridge._core\n_rebuild_tensor_v1\n", b"(",  # GLOBAL, MARK (the arguments)
                b"h\x00",  # BINGET 0: the memoized bytes
                b"\x8c\x07float32", b"(J" + struct.pack("<i", n) + b"t", b"(K\x01t", b"K\x00",
                b"\x8c\x03cpu", b"\x89", b"\x88",  # device, requires_grad False, writable True
                b"t", b"R"]  # TUPLE, REDUCE
    out += [b"h\x00", b"t", b"."]  # BINGET 0: the bytes object itself, TUPLE, STOP
    stream = b"".join(out)
    pickletools.dis(stream, out=io.StringIO())  # a well-formed stream
    return stream


@pytest.mark.parametrize("rebuilds", [1, 2])
def test_a_crafted_pickle_never_gets_writable_memory_of_a_bytes_object(rebuilds):
    # Issue 21: under protocols <= 4 a writable tensor was rebuilt over the unpickled
    # `bytes` object's own memory, so a stream returning that object beside the tensor
    # let writes change an immutable `bytes`, and two tensors over it shared memory.
    payload = bytes(range(64)) * 64
    *tensors, raw = pickle.loads(_crafted_stream(payload, rebuilds))
    assert isinstance(raw, bytes) and raw == payload
    for i, t in enumerate(tensors):
        assert not t.is_read_only
        t.fill_(float(i + 7))
    assert raw == payload, "a write through the tensor changed an immutable bytes object"
    assert [t[0].item() for t in tensors] == [float(i + 7) for i in range(rebuilds)], \
        "two tensors rebuilt over one bytes object share memory"
    address = np.frombuffer(raw, np.uint8).ctypes.data
    assert all(t.data_ptr() != address for t in tensors)


# ----------------------------------------------------------------- layouts


def _views():
    base = db.arange(24, dtype=db.float32).reshape(4, 6)
    return {
        "transposed": base.T,
        "column step": base[:, ::2],
        "row slice": base[1:3],
        "permuted": db.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
        "expanded": db.arange(3.0).reshape(3, 1).expand(3, 5),
        "reversed numpy": db.from_numpy(np.arange(8.0)[::-1]),
        "numpy 2-d step": db.from_numpy(np.arange(40).reshape(5, 8)[::2, 1::3]),
    }


@pytest.mark.parametrize("protocol", [2, 5])
@pytest.mark.parametrize("kind", list(_views()))
def test_views_keep_their_strides_and_values(kind, protocol):
    v = _views()[kind]
    r = round_trip(v, protocol)
    assert r.stride() == v.stride() and r.shape == v.shape
    assert r.tolist() == v.tolist()


def test_a_view_ships_only_the_bytes_it_spans():
    base = db.arange(1000, dtype=db.float64)
    r, (buf,) = out_of_band(base[100:110])
    assert buf.raw().nbytes == 10 * 8 and r.data_ptr() == base[100:110].data_ptr()
    _, (buf,) = out_of_band(base[100:200:10])
    assert buf.raw().nbytes == (90 + 1) * 8  # the span, as PyTorch ships its storage


def test_byte_strides_that_split_elements_are_copied_compact():
    rec = np.zeros(4, dtype=[("a", np.int8), ("b", np.int32)])
    rec["b"] = [1, 2, 3, 4]
    t = db.from_numpy(rec["b"])  # stride 5 bytes: not a whole number of int32s
    r = round_trip(t, 5)
    assert r.tolist() == [1, 2, 3, 4] and r.stride() == (1,)


# ----------------------------------------------------------------- copy


def test_copy_shares_memory_as_torch_does_and_deepcopy_does_not():
    for lib in (torch, db):
        t = lib.arange(6.0).reshape(2, 3)
        c = copy.copy(t)
        c[0, 0] = 100
        assert t[0, 0].item() == 100, lib.__name__
        d = copy.deepcopy(t)
        d[0, 1] = -1
        assert t[0, 1].item() == 1, lib.__name__
    g = db.ones(2).requires_grad_()
    assert copy.copy(g).requires_grad and copy.deepcopy(g).requires_grad
    ro = db.from_numpy(np.frombuffer(b"\x01\x02", np.uint8))
    assert copy.copy(ro).is_read_only and not copy.deepcopy(ro).is_read_only


def test_deepcopy_of_a_container_copies_each_tensor():
    t = db.arange(4.0)
    box = copy.deepcopy({"x": [t, t.T]})
    box["x"][0][0] = 9
    assert t[0].item() == 0


def test_deepcopy_keeps_views_of_one_storage_sharing_one_copy_as_torch_does():
    # Issue 21: tied weights stay tied through deepcopy(model) (a memo by storage).
    for lib in (torch, db):
        w = lib.arange(6.0)
        a, b = copy.deepcopy([w, w[1:3]])
        a[1] = 100
        assert b.tolist() == [100.0, 2.0], lib.__name__
        assert w.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], lib.__name__
        assert b.stride() == (1,), lib.__name__
        m = lib.arange(6.0).reshape(2, 3)
        box = copy.deepcopy({"w": m, "wt": m.T, "again": m})
        assert box["w"] is box["again"], lib.__name__
        box["wt"][2, 1] = -1
        assert box["w"][1, 2].item() == -1 and m[1, 2].item() == 5, lib.__name__
        assert box["wt"].stride() == m.T.stride(), lib.__name__
        # Separate deepcopy calls make separate copies.
        c, d = copy.deepcopy(w), copy.deepcopy(w[1:3])
        c[1] = -5
        assert d[0].item() == 1.0, lib.__name__


def test_deepcopy_of_views_of_foreign_and_read_only_memory():
    a = np.arange(8.0)
    t = db.from_numpy(a)
    x, y = copy.deepcopy((t[::2], t[1::2]))
    x[0], y[0] = -1, -2
    assert a[0] == 0 and t.tolist() == list(range(8))
    assert x.tolist() == [-1, 2, 4, 6] and y.tolist() == [-2, 3, 5, 7]
    ro = db.from_numpy(np.frombuffer(bytes(range(6)), np.uint8))
    p, q = copy.deepcopy([ro, ro[2:]])
    p[2] = 99
    assert q[0].item() == 99 and not q.is_read_only and ro[2].item() == 2


# ----------------------------------------------------------------- devices


def test_a_cuda_tensor_cannot_load_without_cuda():
    if db.cuda.is_available():
        pytest.skip("this machine has CUDA: tests/python/gpu/ covers CUDA pickles")
    with pytest.raises(RuntimeError, match=r"cuda:0.*not available.*\.cpu\(\)"):
        REBUILD(bytearray(8), "float32", (2,), (1,), 0, "cuda:0", False)


# ----------------------------------------------------------------- bad state


BAD_STATES = {
    "buffer too short": (bytearray(8), "float32", (3,), (1,), 0, "cpu", False),
    "negative size": (bytearray(8), "float32", (-1,), (1,), 0, "cpu", False),
    "negative offset": (bytearray(8), "float32", (1,), (1,), -1, "cpu", False),
    "offset past the end": (bytearray(8), "float32", (1,), (1,), 2, "cpu", False),
    "stride past the end": (bytearray(8), "float32", (2,), (2,), 0, "cpu", False),
    "stride below the start": (bytearray(8), "float32", (2,), (-1,), 0, "cpu", False),
    "overflowing stride": (bytearray(8), "float32", (2,), (2**62,), 0, "cpu", False),
    "strides missing": (bytearray(8), "float32", (2, 1), (1,), 0, "cpu", False),
}


@pytest.mark.parametrize("case", list(BAD_STATES))
def test_inconsistent_state_is_refused(case):
    with pytest.raises(BufferError, match="invalid tensor description"):
        REBUILD(*BAD_STATES[case])


def test_bad_dtype_device_and_buffer_are_refused():
    with pytest.raises(TypeError, match="unknown dtype 'float128'"):
        REBUILD(bytearray(16), "float128", (1,), (1,), 0, "cpu", False)
    with pytest.raises(RuntimeError, match="tpu"):
        REBUILD(bytearray(4), "float32", (1,), (1,), 0, "tpu", False)
    with pytest.raises(TypeError, match="bytes-like"):
        REBUILD(12345, "float32", (1,), (1,), 0, "cpu", False)
    with pytest.raises(RuntimeError, match="require gradients"):
        REBUILD(bytearray(4), "int32", (1,), (1,), 0, "cpu", True)
    with pytest.raises((TypeError, OverflowError)):
        REBUILD(bytearray(4), "float32", (2**70,), (1,), 0, "cpu", False)


class _Evil:
    """Pickles as a dlbridge tensor whose state reaches past its buffer."""

    def __reduce__(self):
        return REBUILD, (bytearray(4), "float64", (1000,), (1,), 0, "cpu", False)


def test_a_crafted_pickle_stream_raises_and_builds_nothing(no_leak):
    data = pickle.dumps(_Evil(), protocol=2)
    with pytest.raises(BufferError, match="reach outside"):
        pickle.loads(data)
    assert db._core.live_storages() == no_leak


def test_a_truncated_out_of_band_buffer_is_refused():
    t = db.arange(100, dtype=db.int64)
    buffers = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    with pytest.raises(BufferError, match="reach outside"):
        pickle.loads(data, buffers=[bytearray(buffers[0].raw())[:-8]])

