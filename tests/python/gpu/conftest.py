"""Shared fixtures and helpers of the GPU suite (tests/python/gpu): the CUDA backend on a
real GPU, in one file per topic: transfers, kernels, zero-copy exchange with PyTorch, CuPy
and JAX, stream ordering, lifetimes, threads and errors.

Every test here needs a CUDA device. Without one, every test in this folder is skipped, and
the reason is shown (the suite runs with ``-ra``). Tests that need a peer's GPU build (torch
with CUDA, CuPy, JAX with a GPU backend) skip themselves when that peer can't use the GPU.

References are NumPy, computed in float64 (or exactly, in the result dtype, for integers)
and rounded once to the result dtype. Nothing is mocked. Random data: each test draws from
its own generator. The seed is the CRC-32 of the test's id XOR ``DLBRIDGE_TEST_SEED``
(default 0), so a run is reproducible, and another value gives fresh data. The seed is
printed, so a failure report shows it.

The test modules import the suite-wide helpers from ``conftest`` (tests/python/conftest.py,
on sys.path) and these from ``.conftest``: this folder is a package, so its conftest and
its modules do not clash with tests/python's own.
"""

# tests/python/conftest.py sets XLA_PYTHON_CLIENT_PREALLOCATE=false, so JAX does not take
# 75% of the GPU's memory at start-up (the out-of-memory, pool and large-array tests need it).
import os
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import COMPLEX_NAMES, DTYPES, DTYPE_NAMES, FLOAT_NAMES, INT_NAMES, NP_DTYPE, collect, is_capsule
from dlpack_abi import DLManagedTensor, DLManagedTensorVersioned, capsule_pointer

NO_GPU = None if db.cuda.is_available() else (
    f"no CUDA device ({db.cuda.unavailable_reason()}): the GPU suite needs one")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Without a CUDA device every test in this folder is skipped, with the reason (the suite
    runs with -ra). The test modules still import, so each of their tests is collected and counted."""
    if NO_GPU:
        pytest.skip(NO_GPU)


DEV = "cuda:0"
CUDA0 = db.device("cuda", 0)
CPU = db.device("cpu")
REAL_NAMES = [n for n in DTYPE_NAMES if n not in COMPLEX_NAMES]
NUMERIC_NAMES = [n for n in REAL_NAMES if n != "bool"]
NAME_OF = {np.dtype(dt): name for name, dt in DTYPES}
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}

FILL = {"bool": True, "complex64": 1 - 2j, "complex128": -3 + 0.5j, **{n: 7 for n in INT_NAMES},
        **{n: -1.5 for n in FLOAT_NAMES}}

MIXED = "Expected all tensors to be on the same device"


# =========================================================================== fixtures


@pytest.fixture
def rng(request):
    """A generator seeded from the test's id (and DLBRIDGE_TEST_SEED for fresh data)."""
    base = int(os.environ.get("DLBRIDGE_TEST_SEED", "0"))
    seed = zlib.crc32(request.node.nodeid.encode()) ^ base
    print(f"rng seed {seed} (DLBRIDGE_TEST_SEED={base})")
    return np.random.default_rng(seed)


@pytest.fixture
def tcuda():
    """torch with a usable GPU."""
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA (CPU-only wheel or no driver)")
    return torch


@pytest.fixture(scope="module")
def cp():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy sees no GPU")
    except Exception as e:  # noqa: BLE001 - any driver problem means: no CuPy on GPU here
        pytest.skip(f"CuPy cannot use the GPU: {e}")
    return cupy


# =========================================================================== helpers


def dname(dt):
    """'float32' for dlbridge.float32, torch.float32 or np.dtype('float32')."""
    if isinstance(dt, np.dtype):
        return NAME_OF[dt]
    return repr(dt).split(".")[-1]


def is_float(npdt):
    return npdt.kind == "f" or npdt == NP_DTYPE["bfloat16"]


def wide(x):
    """float64 (complex128 for complex) values of an array or scalar: exact for every dtype."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def values_of(x):
    """A host NumPy copy of a dlbridge tensor (any device), a torch tensor or an array."""
    if isinstance(x, db.Tensor):
        x = x.cpu().numpy() if x.is_cuda else x.numpy()
    elif isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            return x.float().numpy().astype(NP_DTYPE["bfloat16"])
        x = x.numpy()
    return np.array(x, copy=True)


def rand_array(rng, name, shape, small=False):
    """Random values of a dtype. Integers span the dtype's range, or [-100, 100] when small."""
    dt = NP_DTYPE[name]
    if name == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if name in COMPLEX_NAMES:
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if name in FLOAT_NAMES:
        return np.asarray(rng.standard_normal(shape) * 8).astype(dt)
    info = np.iinfo(dt)
    if small:
        return np.asarray(rng.integers(max(int(info.min), -100), 101, size=shape)).astype(dt)
    return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True))


def cuda_from(a):
    """A fresh C-contiguous CUDA tensor holding a's values."""
    return db.from_numpy(np.array(a, order="C", copy=True)).to(DEV)


def equal_mask(g, e):
    g, e = np.asarray(g), np.asarray(e)
    if is_float(g.dtype) or g.dtype.kind == "c":
        g, e = wide(g), wide(e)
        return (g == e) | (np.isnan(g) & np.isnan(e))
    return g == e


def diff(got, expected, rtol_eps=0):
    """None when got (tensor or array) holds exactly `expected` (same dtype and shape),
    or within rtol_eps units of the dtype's epsilon; else a description."""
    g, e = values_of(got), np.asarray(expected)
    if g.shape != e.shape:
        return f"shape {g.shape} != expected {e.shape}"
    if g.dtype != e.dtype:
        return f"dtype {g.dtype} != expected {e.dtype}"
    if rtol_eps and is_float(g.dtype):
        eps = EPS[NAME_OF[g.dtype]]
        with np.errstate(all="ignore"):
            bad = ~(np.isclose(wide(g), wide(e), rtol=rtol_eps * eps, atol=0) | equal_mask(g, e))
    else:
        bad = ~equal_mask(g, e)
    if bad.any():
        idx = np.argwhere(bad)[:5]
        return (f"{int(bad.sum())} of {bad.size} differ, e.g. at {idx.tolist()}: "
                f"got {[g[tuple(i)] for i in idx]} expected {[e[tuple(i)] for i in idx]}")
    return None


def assert_values(got, expected, rtol_eps=0):
    problem = diff(got, expected, rtol_eps)
    assert problem is None, problem


def assert_on_cuda(t, index=0):
    assert isinstance(t, db.Tensor)
    assert t.is_cuda and t.device == db.device("cuda", index), t.device


CUDA_VIEWS = {
    "transposed": (lambda t: t.T, lambda a: a.T),
    "stepped": (lambda t: t[::2, 1::3], lambda a: a[::2, 1::3]),
    "column": (lambda t: t[:, 3], lambda a: a[:, 3]),
    "row_offset": (lambda t: t[1:, 2:], lambda a: a[1:, 2:]),
    "misaligned": (lambda t: t.reshape(-1)[1:], lambda a: a.reshape(-1)[1:]),
    "permuted_3d": (lambda t: t.view(2, 6, 8).permute(2, 0, 1), lambda a: a.reshape(2, 6, 8).transpose(2, 0, 1)),
    "expanded": (lambda t: t[:, :1].expand(12, 5), lambda a: np.broadcast_to(a[:, :1], (12, 5))),
}


def check_export_outlives_tensor(base, consume, total):
    """A consumer's view of a dlbridge CUDA tensor keeps its memory after the tensor is
    deleted: the storage stays live (base + 1), its block is not handed out again, and
    the data is intact; dropping the view releases it."""
    t = db.arange(4096, dtype=db.float64, device="cuda")
    addr = t.data_ptr()
    x = consume(t)
    del t
    collect()
    assert db._core.live_storages() == base + 1
    churn = [db.full((4096,), -1.0, dtype=db.float64, device="cuda") for _ in range(20)]
    assert all(c.data_ptr() != addr for c in churn)
    assert total(x) == sum(range(4096))
    del x, churn
    collect()
    assert db._core.live_storages() == base


# --------------------------------------------------------------------------- DLPack capsules


def capsule_info(c):
    """Reads an unconsumed DLPack capsule: device, address of the first element, flags,
    strides (in elements; None where the producer left them NULL)."""
    versioned = is_capsule(c, "dltensor_versioned")
    assert versioned or is_capsule(c, "dltensor"), repr(c)
    p = capsule_pointer(c, b"dltensor_versioned" if versioned else b"dltensor")
    m = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(p)
    t = m.dl_tensor
    return SimpleNamespace(versioned=versioned, flags=m.flags if versioned else None,
                           device=(t.device.device_type, t.device.device_id),
                           data=(t.data or 0) + t.byte_offset, ndim=t.ndim,
                           strides=tuple(t.strides[:t.ndim]) if t.strides else None)
