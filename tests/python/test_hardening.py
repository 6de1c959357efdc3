"""Hardening: untrusted capsules, threads and long runs.

- Random DLPack descriptors (every field, versioned and legacy) handed over
  as capsules: dlbridge imports them or raises a clear exception, and the
  producer's deleter runs exactly once either way.
- Eight threads hammering exchange, arithmetic and in-place writes on shared
  tensors for a bounded time finish with correct data.
- A million exchange round trips with NumPy and with PyTorch: the live-storage
  counter returns to its start value and resident memory grows by < 1 MiB.
"""

import ctypes
import gc

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import ASAN_RUNTIME, hammer, rss_kib
from dlpack_abi import (LEGACY_DELETER, VERSIONED_DELETER, DLDataType, DLDevice, DLManagedTensor,
                        DLManagedTensorVersioned, DLTensor)
from dlpack_abi import new_capsule as PyCapsule_New

# ----- random capsules -----------------------------------------------------------------------

DELETES = []
_on_delete_v = VERSIONED_DELETER(lambda p: DELETES.append(ctypes.addressof(p.contents)))
_on_delete_l = LEGACY_DELETER(lambda p: DELETES.append(ctypes.addressof(p.contents)))
BUFFER = (ctypes.c_uint64 * 64)()


VALID_DTYPES = [(2, 32), (2, 64), (0, 8), (1, 8), (6, 8), (4, 16), (2, 16), (5, 64), (0, 64)]


def random_descriptor(rng):
    """A descriptor with random fields. Half are plausible (a valid dtype, CPU, small sizes),
    half anything; shape/strides hold ndim values whenever ndim is a rank dlbridge reads (a
    producer keeps its own promise), else a short array."""
    plausible = rng.random() < 0.5
    legacy = rng.random() < 0.3
    if plausible:
        ndim = int(rng.integers(0, 4))
    else:
        ndim = int(rng.integers(-3, 70)) if rng.random() < 0.3 else int(rng.integers(0, 5))
    n = ndim if 0 <= ndim <= 64 else 2
    wild = not plausible and rng.random() < 0.3
    shape = [int(rng.integers(-2**62, 2**62)) if wild else int(rng.integers(-1 if not plausible else 0, 6))
             for _ in range(n)]
    strides = [int(rng.integers(-2**62, 2**62)) if wild else int(rng.integers(-8, 9)) for _ in range(n)]
    keep = [(ctypes.c_int64 * max(n, 1))(*shape), (ctypes.c_int64 * max(n, 1))(*strides)]
    if plausible:
        code, bits = VALID_DTYPES[int(rng.integers(0, len(VALID_DTYPES)))]
        dtype, device = DLDataType(code, bits, 1), DLDevice(1, 0)
        data, shape_p, strides_p, offset = ctypes.addressof(BUFFER), keep[0], keep[1], 0
    else:
        dtype = DLDataType(int(rng.integers(0, 9)), int(rng.choice([1, 8, 16, 32, 64, 128, 3])),
                           int(rng.choice([1, 1, 0, 2])))
        device = DLDevice(int(rng.choice([1, 1, 1, 3, 2, 13, 4, 99])), int(rng.integers(-1, 2)))
        data = None if rng.random() < 0.1 else ctypes.addressof(BUFFER)
        shape_p = None if rng.random() < 0.05 else keep[0]
        strides_p = None if rng.random() < 0.1 else keep[1]
        offset = int(rng.choice([0, 0, 4, 3, 1024]))
    t = DLTensor(data, device, ndim, dtype, shape_p, strides_p, offset)
    if legacy:
        m = DLManagedTensor(t, None, _on_delete_l)
        name = b"dltensor"
    else:
        major = 1 if plausible else int(rng.choice([1, 1, 1, 0, 2]))
        m = DLManagedTensorVersioned(major, int(rng.integers(0, 5)), None, _on_delete_v, int(rng.integers(0, 8)), t)
        name = b"dltensor_versioned"
    return m, name, keep


def test_random_capsules_import_or_fail_cleanly_and_delete_once():
    rng = np.random.default_rng(2026)
    outcomes = {"imported": 0, "refused": 0}
    for _ in range(20000):
        m, name, keep = random_descriptor(rng)
        DELETES.clear()
        capsule = PyCapsule_New(ctypes.addressof(m), name, None)
        try:
            t = db.from_dlpack(capsule)
        except (BufferError, ValueError, TypeError, RuntimeError) as e:
            # RuntimeError: an element count past int64's, as torch.from_dlpack says (issue 21).
            assert str(e)
            assert len(DELETES) == 1, "a refused import must release the producer exactly once"
            outcomes["refused"] += 1
        else:
            assert DELETES == []  # still in use
            t.shape, t.dtype, t.device  # describing it is safe; its data is the producer's promise
            del t  # no cycles: the last reference goes here
            assert len(DELETES) == 1
            outcomes["imported"] += 1
        del capsule
        assert len(DELETES) == 1, "the used capsule must not delete again"
        del keep
    assert outcomes["imported"] > 2500 and outcomes["refused"] > 2500, outcomes


def test_unconsumed_random_capsules_are_released_by_their_destructor(no_leak):
    # A capsule nobody consumes: dlbridge's own exports free on destruction
    # (no_leak collects earlier tests' garbage first, then counts).
    for _ in range(1000):
        c = db.arange(4.0).__dlpack__(max_version=(1, 0))
        del c
    assert db._core.live_storages() == no_leak


# ----- threads -------------------------------------------------------------------------------


def test_eight_threads_hammering_shared_tensors_stay_correct():
    cols = 4096
    counts = db.zeros(8, cols, dtype=db.int64)  # each thread writes only its own row
    a = np.arange(cols, dtype=np.float32)
    shared = db.from_numpy(a)  # read by everyone
    tt = torch.arange(cols, dtype=torch.float32)

    def step():
        s = shared + shared  # arithmetic on a shared tensor
        assert s[cols - 1].item() == 2 * (cols - 1)
        assert np.from_dlpack(shared)[7] == 7.0  # exchange out
        assert db.from_dlpack(tt)[5].item() == 5.0  # exchange in (torch's table)
        assert torch.from_dlpack(shared)[3].item() == 3.0
        assert db.from_numpy(a).numpy()[9] == 9.0
        assert shared.to("cpu", db.float64).numpy(force=True)[11] == 11.0  # a copying move
        assert shared.sum().item() == pytest.approx(cols * (cols - 1) / 2)
        big = db.ones(50_000) * 2.0  # long enough to release the GIL
        assert big.sum().item() == 100_000.0

    hammer(counts, step)
    np.testing.assert_array_equal(a, np.arange(cols, dtype=np.float32))  # the shared input is untouched


# ----- long runs: a million round trips --------------------------------------------------------


@pytest.mark.parametrize("peer", ["numpy", "torch"])
def test_a_million_round_trips_leak_nothing(peer):
    a = np.arange(16, dtype=np.float32)
    if peer == "numpy":
        def trip():
            np.from_dlpack(db.from_dlpack(a))
            db.from_numpy(a).numpy()
    else:
        tt = torch.from_numpy(a)

        def trip():
            torch.from_dlpack(db.from_dlpack(tt))
            db.from_dlpack(torch.from_dlpack(db.from_numpy(a)))
    # Under AddressSanitizer freed memory waits in a quarantine (256 MiB) and
    # every allocation carries redzones, so resident memory says nothing
    # there. What is checked there, ASan's report on every trip and the
    # exact live-storage count, is the same for every trip, so a tenth of
    # the trips check as much (the million took six of the ASan run's 20
    # minutes).
    trips = 100_000 if ASAN_RUNTIME else 1_000_000
    for _ in range(trips // 10):  # warm-up: allocator pools, caches
        trip()
    gc.collect()
    live, rss = db._core.live_storages(), rss_kib()
    for _ in range(trips):
        trip()
    gc.collect()
    assert db._core.live_storages() == live
    grown = rss_kib() - rss
    if not ASAN_RUNTIME:
        assert grown < 1024, f"RSS grew by {grown} KiB over {trips:,} round trips"


def descriptor(**change):
    """A valid float32 (2, 3) CPU tensor (versioned 1.3), with `change` applied."""
    shape = (ctypes.c_int64 * 2)(2, 3)
    strides = (ctypes.c_int64 * 2)(3, 1)
    t = DLTensor(ctypes.addressof(BUFFER), DLDevice(1, 0), 2, DLDataType(2, 32, 1), shape, strides, 0)
    m = DLManagedTensorVersioned(1, 3, None, _on_delete_v, 0, t)
    for key, value in change.items():
        if key in ("major", "minor"):
            setattr(m, key, value)
        elif key == "shape_values":
            for i, v in enumerate(value):
                shape[i] = v
        elif key == "stride_values":
            for i, v in enumerate(value):
                strides[i] = v
        else:
            setattr(m.dl_tensor, key, value)
    return m, (shape, strides)


BAD_INPUTS = {
    # docs/hardening.md "Bad input" table, Python side: each is a BufferError naming the problem.
    "NULL data with elements": (dict(data=None), "NULL"),
    "negative ndim": (dict(ndim=-1), "ndim -1"),
    "ndim above 64": (dict(ndim=65), "ndim 65"),
    "NULL shape": (dict(shape=None), "shape"),
    "negative size": (dict(shape_values=(2, -3)), ""),
    "extent overflow": (dict(stride_values=(2**62, 1)), "overflow"),
    "extent reaching below address 0": (dict(stride_values=(-(2**60), 1)), "overflow"),
    "byte offset not a multiple of the item size": (dict(byte_offset=2), "byte_offset 2"),
    "unknown dtype code": (dict(dtype=DLDataType(9, 32, 1)), "unsupported DLPack dtype"),
    "unsupported bits": (dict(dtype=DLDataType(2, 24, 1)), "unsupported DLPack dtype"),
    "vector lanes": (dict(dtype=DLDataType(2, 32, 4)), "unsupported DLPack dtype"),
    "unknown device type": (dict(device=DLDevice(99, 0)), "unsupported DLPack device"),
    "negative CUDA device id": (dict(device=DLDevice(2, -1)), "unsupported DLPack device"),
    "major version 2": (dict(major=2), ""),
    "major version 0 in a versioned capsule": (dict(major=0), ""),
}


@pytest.mark.parametrize("change,message", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_each_bad_input_is_a_clear_error_and_releases_the_producer_once(change, message):
    m, keep = descriptor(**change)
    DELETES.clear()
    capsule = PyCapsule_New(ctypes.addressof(m), b"dltensor_versioned", None)
    with pytest.raises(BufferError, match=message or None) as err:
        db.from_dlpack(capsule)
    assert str(err.value)
    assert len(DELETES) == 1
    del capsule
    assert len(DELETES) == 1
    del keep


@pytest.mark.parametrize(
    "name,error",
    [(b"used_dltensor_versioned", ValueError), (b"used_dltensor", ValueError),
     (b"not_a_dltensor", TypeError)],
)
def test_a_capsule_that_is_not_for_the_taking_is_refused_and_left_alone(name, error):
    # A used_* capsule belongs to the consumer that renamed it; any other name is
    # someone else's capsule. Either way dlbridge must not call the deleter.
    m, keep = descriptor()
    DELETES.clear()
    capsule = PyCapsule_New(ctypes.addressof(m), name, None)
    with pytest.raises(error):
        db.from_dlpack(capsule)
    del capsule
    assert DELETES == []
    del keep


def test_a_zero_dim_array_with_null_shape_and_strides_imports():
    # NumPy gives 0-d arrays NULL shape and strides pointers (the ASan run's debug
    # build caught a slice built from them); the same through a DLPack capsule.
    a = np.array(2.5)
    t = db.from_numpy(a)
    assert t.shape == () and t.item() == 2.5
    t.add_(1)
    assert a == 3.5
    m, keep = descriptor(ndim=0, shape=None, strides=None, dtype=DLDataType(2, 64, 1))
    DELETES.clear()
    t = db.from_dlpack(PyCapsule_New(ctypes.addressof(m), b"dltensor_versioned", None))
    assert t.shape == () and t.data_ptr() == ctypes.addressof(BUFFER)
    del t
    assert len(DELETES) == 1
    del keep


def test_the_unmodified_descriptor_imports():
    m, keep = descriptor()
    DELETES.clear()
    t = db.from_dlpack(PyCapsule_New(ctypes.addressof(m), b"dltensor_versioned", None))
    assert tuple(t.shape) == (2, 3) and t.data_ptr() == ctypes.addressof(BUFFER)
    del t
    assert len(DELETES) == 1
    del keep


def test_a_panic_inside_dlbridge_is_a_catchable_runtime_error():
    # Any Rust panic in a dlbridge entry point reaches Python as a RuntimeError
    # (pyo3's PanicException, rebased by dlbridge/__init__.py), not a BaseException
    # that `except Exception` would miss.
    with pytest.raises(RuntimeError, match="dlbridge test panic") as err:
        db._core._panic_for_tests()
    assert isinstance(err.value, Exception)
    t = db.arange(3.0)  # the module keeps working
    assert (t + 1).tolist() == [1.0, 2.0, 3.0]
