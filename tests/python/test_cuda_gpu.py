"""The CUDA backend on a real GPU: transfers, kernels, zero-copy exchange with PyTorch, CuPy
and JAX, stream ordering, lifetimes and errors.

Every test here needs a CUDA device. Without one, the whole module is skipped, and the
reason is shown (the suite runs with ``-ra``). Tests that need a peer's GPU build (torch with
CUDA, CuPy, JAX with a GPU backend) skip themselves when that peer can't use the GPU.

References are NumPy, computed in float64 (or exactly, in the result dtype, for integers)
and rounded once to the result dtype. Nothing is mocked. Random data: each test draws from
its own generator. The seed is the CRC-32 of the test's id XOR ``DLBRIDGE_TEST_SEED``
(default 0), so a run is reproducible, and another value gives fresh data. The seed is
printed, so a failure report shows it.
"""

# conftest.py sets XLA_PYTHON_CLIENT_PREALLOCATE=false, so JAX does not take 75% of the
# GPU's memory at start-up (the out-of-memory, pool and large-array tests need it).
import ctypes
import operator
import os
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import ASAN_RUNTIME, COMPLEX_NAMES, DTYPE_NAMES, DTYPES, FLOAT_NAMES, INT_NAMES, NP_DTYPE, collect, hammer, rss_kib

if not db.cuda.is_available():
    pytest.skip(
        f"no CUDA device ({db.cuda.unavailable_reason()}): the GPU suite needs one",
        allow_module_level=True,
    )

DEV = "cuda:0"
CUDA0 = db.device("cuda", 0)
CPU = db.device("cpu")
REAL_NAMES = [n for n in DTYPE_NAMES if n not in COMPLEX_NAMES]
NUMERIC_NAMES = [n for n in REAL_NAMES if n != "bool"]
CUPY_NAMES = [n for n in DTYPE_NAMES if n != "bfloat16"]  # CuPy has no bfloat16
NAME_OF = {np.dtype(dt): name for name, dt in DTYPES}
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
TINY = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 5e-324}

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv}
METHODS = {"add": "add_", "sub": "sub_", "mul": "mul_", "truediv": "div_"}
INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "truediv": operator.itruediv}
FILL = {"bool": True, "complex64": 1 - 2j, "complex128": -3 + 0.5j, **{n: 7 for n in INT_NAMES},
        **{n: -1.5 for n in FLOAT_NAMES}}

READ_ONLY, IS_COPIED = 1, 2  # DLManagedTensorVersioned.flags
NO_DEVICE_SYNC = "torch's current stream is not the legacy default stream"
MIXED = "Expected all tensors to be on the same device"
SLEEP_CYCLES = 200_000_000  # ~0.1 s of GPU time at ~2 GHz


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


@pytest.fixture
def legacy_default(tcuda):
    """torch's current stream is the legacy default stream (dlbridge's own stream)."""
    if torch.cuda.current_stream().cuda_stream != 0:
        pytest.skip(NO_DEVICE_SYNC)
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


@pytest.fixture(scope="module")
def jx():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)  # keep 64-bit dtypes as they are
    try:
        gpus = jax.devices("gpu")
    except Exception as e:  # noqa: BLE001 - RuntimeError "Unknown backend" and friends
        pytest.skip(f"jax has no GPU backend: {e}")
    import jax.dlpack
    import jax.numpy as jnp

    return SimpleNamespace(jax=jax, jnp=jnp, gpu=gpus[0])


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


def nonzero(a):
    """a with its zeros replaced by ones (divisors)."""
    a = np.array(a, copy=True)
    a[wide(a) == 0] = 1
    return a


def cuda_from(a):
    """A fresh C-contiguous CUDA tensor holding a's values."""
    return db.from_numpy(np.array(a, order="C", copy=True)).to(DEV)


def sentinel(name):
    if name in FLOAT_NAMES or name in COMPLEX_NAMES:
        return float("nan")
    if name == "bool":
        return True
    return int(np.iinfo(NP_DTYPE[name]).max) - 5


def is_sentinel(values, name):
    values = np.asarray(values)
    if name in FLOAT_NAMES or name in COMPLEX_NAMES:
        return bool(np.isnan(wide(values)).all())
    return bool((values == sentinel(name)).all())


def poison_pool(nbytes):
    """Frees a NaN-filled block, so a new result that reuses it and skips elements shows NaN."""
    p = db.full((nbytes // 4 + 64,), float("nan"), dtype=db.float32, device=DEV)
    db.cuda.synchronize()
    del p


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


def diff_any(got, candidates):
    """Like diff, each element may match any of the candidate arrays."""
    g = values_of(got)
    if g.shape != candidates[0].shape or g.dtype != candidates[0].dtype:
        return f"{g.dtype}{g.shape} != expected {candidates[0].dtype}{candidates[0].shape}"
    ok = np.zeros(g.shape, dtype=bool)
    for c in candidates:
        ok |= equal_mask(g, c)
    if not ok.all():
        idx = np.argwhere(~ok)[:5]
        return (f"{int((~ok).sum())} of {ok.size} differ, e.g. at {idx.tolist()}: got "
                f"{[g[tuple(i)] for i in idx]} expected {[candidates[0][tuple(i)] for i in idx]}")
    return None


def assert_values(got, expected, rtol_eps=0):
    problem = diff(got, expected, rtol_eps)
    assert problem is None, problem


def assert_on_cuda(t, index=0):
    assert isinstance(t, db.Tensor)
    assert t.is_cuda and t.device == db.device("cuda", index), t.device


def torch_like(x):
    """A CPU torch stand-in for a dlbridge operand, for torch.result_type."""
    if isinstance(x, db.Tensor):
        return torch.empty(x.shape, dtype=getattr(torch, dname(x.dtype)))
    return x


def result_name(opname, x, y):
    """The dtype torch gives `x op y`, or None where torch defines none (uint16+ promotion)."""
    try:
        r = dname(torch.result_type(torch_like(x), torch_like(y)))
    except RuntimeError as e:
        if "Promotion for uint16, uint32, uint64" in str(e):
            return None
        raise
    if opname == "truediv" and r not in FLOAT_NAMES and r not in COMPLEX_NAMES:
        return "float32"  # true division of integers gives the default float dtype
    return r


def ref_binary(opname, xa, ya, res):
    """xa op ya as torch computes it: array operands converted to the result dtype res, the
    exact result (float64 holds it) rounded once to res; integers wrap like C. Python scalars
    are used as they are (the tests' scalars are exact in every dtype)."""
    rdt, op = NP_DTYPE[res], OPS[opname]
    with np.errstate(all="ignore"):
        if res in FLOAT_NAMES:
            xa, ya = (wide(np.asarray(v).astype(rdt)) if isinstance(v, np.ndarray) else v for v in (xa, ya))
            return np.asarray(op(wide(xa), wide(ya))).astype(rdt)
        return np.asarray(op(np.asarray(xa).astype(rdt), np.asarray(ya).astype(rdt))).astype(rdt)


def neg_ref(a):
    """-a, exact for floats, wrapping for integers."""
    a = np.asarray(a)
    with np.errstate(all="ignore"):
        return (-wide(a)).astype(a.dtype) if is_float(a.dtype) else np.negative(a)


def is_bool_sub(opname, *operands):
    return opname == "sub" and any(
        x is True or x is False or (isinstance(x, db.Tensor) and dname(x.dtype) == "bool") for x in operands)


def check_op(opname, x, y, xa, ya):
    """Runs x op y on the GPU and compares it with NumPy. Returns a problem or None."""
    res = result_name(opname, x, y)
    if res is None or is_bool_sub(opname, x, y):
        return None
    try:
        got = OPS[opname](x, y)
    except Exception as e:  # noqa: BLE001 - reported with the operands
        return f"raised {type(e).__name__}: {e}"
    if not got.is_cuda:
        return f"result on {got.device}"
    if dname(got.dtype) != res:
        return f"dtype {dname(got.dtype)}, torch gives {res}"
    return diff(got, ref_binary(opname, xa, ya, res), rtol_eps=2 if opname == "truediv" else 0)


# --------------------------------------------------------------------------- DLPack capsules


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def is_capsule(c, name):
    return type(c).__name__ == "PyCapsule" and f'"{name}"' in repr(c)


def capsule_info(c):
    """Reads an unconsumed DLPack capsule: device, address of the first element, flags."""
    versioned = is_capsule(c, "dltensor_versioned")
    assert versioned or is_capsule(c, "dltensor"), repr(c)
    p = _capsule_pointer(c, b"dltensor_versioned" if versioned else b"dltensor")
    m = (_DLManagedTensorVersioned if versioned else _DLManagedTensor).from_address(p)
    t = m.dl_tensor
    return SimpleNamespace(versioned=versioned, flags=m.flags if versioned else None,
                           device=(t.device.device_type, t.device.device_id),
                           data=(t.data or 0) + t.byte_offset, ndim=t.ndim)


# =========================================================================== the device itself


def test_cuda_module_reports_the_device():
    assert db.cuda.is_available() is True
    assert db.cuda.device_count() >= 1
    assert db.cuda.current_device() == 0
    if torch.cuda.is_available():
        assert db.cuda.device_count() == torch.cuda.device_count()
    for arg in ((), (0,), ("cuda:0",), (CUDA0,), (None,)):
        assert db.cuda.synchronize(*arg) is None


def test_cuda_tensor_device_attributes():
    t = db.zeros(3, device="cuda")
    assert repr(t.device) == "device(type='cuda', index=0)"
    assert str(t.device) == "cuda:0"
    assert t.device == CUDA0 == db.device("cuda:0")
    assert t.is_cuda is True and t.is_cpu is False
    assert t.__dlpack_device__() == (2, 0)
    assert t.data_ptr() != 0
    assert db.zeros(3).__dlpack_device__() == (1, 0)


def test_cuda_tensor_repr_like_torch(tcuda):
    cases = [([1.5, 2.0], "float32"), ([[1, 2], [3, 4]], "int64"), ([True, False], "bool"),
             (2.5, "float64"), ([], "float32"), ([0.25, -8.0], "bfloat16")]
    for data, name in cases:
        ours = db.tensor(data, dtype=getattr(db, name), device="cuda")
        theirs = torch.tensor(data, dtype=getattr(torch, name), device="cuda")
        assert repr(ours) == repr(theirs).replace("torch.", "dlbridge."), (data, name)


def test_diagnostics_nvrtc_version_and_compile_kernels():
    major, minor = db.cuda.nvrtc_version()
    assert isinstance(major, int) and isinstance(minor, int) and major >= 12
    arch = "sm_90"
    if torch.cuda.is_available():
        arch = "sm_{}{}".format(*torch.cuda.get_device_capability(0))
    sizes = db.cuda.compile_kernels(arch)
    assert isinstance(sizes, dict) and sizes, sizes
    for name, size in sizes.items():
        assert isinstance(name, str) and isinstance(size, int) and size > 0, (name, size)


# =========================================================================== factories


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_factories_on_cuda(name):
    dt, npdt = getattr(db, name), NP_DTYPE[name]
    for t, expected in [
        (db.zeros(3, 5, dtype=dt, device="cuda"), np.zeros((3, 5), npdt)),
        (db.ones((4,), dtype=dt, device=DEV), np.ones(4, npdt)),
        (db.full((2, 3), FILL[name], dtype=dt, device=CUDA0), np.full((2, 3), FILL[name], npdt)),
        (db.zeros((), dtype=dt, device="cuda"), np.zeros((), npdt)),
        (db.ones(0, 3, dtype=dt, device="cuda"), np.ones((0, 3), npdt)),
    ]:
        assert_on_cuda(t)
        assert t.dtype is dt
        assert_values(t, expected)
    e = db.empty(6, 7, dtype=dt, device="cuda")
    assert_on_cuda(e)
    assert e.dtype is dt and e.shape == (6, 7) and e.is_contiguous()


FACTORY_CALLS = {
    "arange(17)": lambda **kw: db.arange(17, **kw),
    "arange(2,40,3,int16)": lambda **kw: db.arange(2, 40, 3, dtype=db.int16, **kw),
    "arange(0,1,0.125)": lambda **kw: db.arange(0, 1, 0.125, **kw),
    "arange(-5,5,0.25,f16)": lambda **kw: db.arange(-5.0, 5.0, 0.25, dtype=db.float16, **kw),
    "arange(1000003,f32)": lambda **kw: db.arange(1_000_003, dtype=db.float32, **kw),
    "eye(3)": lambda **kw: db.eye(3, **kw),
    "eye(3,5,int32)": lambda **kw: db.eye(3, 5, dtype=db.int32, **kw),
    "eye(4,bool)": lambda **kw: db.eye(4, dtype=db.bool, **kw),
    "tensor(2d)": lambda **kw: db.tensor([[1, 2], [3, 4]], **kw),
    "tensor(0d)": lambda **kw: db.tensor(2.5, **kw),
    "tensor(bool)": lambda **kw: db.tensor([True, False, True], **kw),
    "tensor(bf16)": lambda **kw: db.tensor([1.5, -2.0, 3.25], dtype=db.bfloat16, **kw),
    "tensor(complex)": lambda **kw: db.tensor([1 + 2j, -0.5j], **kw),
}


@pytest.mark.parametrize("make", FACTORY_CALLS.values(), ids=FACTORY_CALLS.keys())
def test_factory_on_cuda_matches_the_cpu_result(make):
    ours, cpu = make(device="cuda"), make()
    assert_on_cuda(ours)
    assert ours.dtype is cpu.dtype and ours.shape == cpu.shape
    assert_values(ours, cpu.numpy())


LIKE = {
    "zeros_like": lambda t, **kw: db.zeros_like(t, **kw),
    "ones_like": lambda t, **kw: db.ones_like(t, **kw),
    "empty_like": lambda t, **kw: db.empty_like(t, **kw),
    "full_like": lambda t, **kw: db.full_like(t, 3, **kw),
    "rand_like": lambda t, **kw: db.rand_like(t, **kw),
}


@pytest.mark.parametrize("like", LIKE.values(), ids=LIKE.keys())
def test_like_factories_follow_the_device(like):
    c, h = db.zeros(2, 3, device="cuda"), db.zeros(2, 3)
    for src, kw, on_cuda in [(c, {}, True), (h, {"device": "cuda"}, True), (c, {"device": "cpu"}, False)]:
        r = like(src, **kw)
        assert r.is_cuda is on_cuda and r.shape == (2, 3) and r.dtype is db.float32
    if like is LIKE["full_like"]:
        assert_values(like(c), np.full((2, 3), 3, np.float32))
    if like is LIKE["zeros_like"]:
        assert_values(like(db.ones(5, dtype=db.int8, device="cuda")), np.zeros(5, np.int8))


# =========================================================================== transfers

TO_CUDA = {
    "to('cuda:0')": lambda t: t.to("cuda:0"),
    "to('cuda')": lambda t: t.to("cuda"),
    "to(0)": lambda t: t.to(0),
    "to(device('cuda',0))": lambda t: t.to(db.device("cuda", 0)),
    "to(device='cuda')": lambda t: t.to(device="cuda"),
    "cuda()": lambda t: t.cuda(),
    "cuda(0)": lambda t: t.cuda(0),
    "from_dlpack(device='cuda')": lambda t: db.from_dlpack(t, device="cuda"),
    "from_dlpack(device=device)": lambda t: db.from_dlpack(t, device=CUDA0),
    "__dlpack__(dl_device)": lambda t: db.from_dlpack(t.__dlpack__(dl_device=(2, 0))),
    "__dlpack__(dl_device,copy)": lambda t: db.from_dlpack(t.__dlpack__(dl_device=(2, 0), copy=True)),
    "__dlpack__(versioned)": lambda t: db.from_dlpack(
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=True)),
}

TO_CPU = {
    "cpu()": lambda t: t.cpu(),
    "to('cpu')": lambda t: t.to("cpu"),
    "to(device('cpu'))": lambda t: t.to(CPU),
    "numpy(force=True)": lambda t: t.numpy(force=True),
    "from_dlpack(device='cpu')": lambda t: db.from_dlpack(t, device="cpu"),
    "__dlpack__(dl_device)": lambda t: db.from_dlpack(t.__dlpack__(dl_device=(1, 0))),
    "__dlpack__(versioned)": lambda t: db.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))),
    "np.from_dlpack(device='cpu')": lambda t: np.from_dlpack(t, device="cpu"),
}


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("form", TO_CUDA.values(), ids=TO_CUDA.keys())
def test_host_to_cuda_every_form_and_dtype(form, name, rng):
    a = rand_array(rng, name, (5, 7))
    keep = a.copy()
    t = db.from_numpy(a)
    r = form(t)
    assert_on_cuda(r)
    assert r.dtype is t.dtype and r.shape == (5, 7)
    assert r.data_ptr() != t.data_ptr()
    assert_values(r, keep)
    a[...] = a[::-1, ::-1]  # the source changes; the copy does not
    assert_values(r, keep)


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("form", TO_CPU.values(), ids=TO_CPU.keys())
def test_cuda_to_host_every_form_and_dtype(form, name, rng):
    if form is TO_CPU["np.from_dlpack(device='cpu')"] and name == "bfloat16":
        pytest.skip("NumPy has no bfloat16 to import")
    a = rand_array(rng, name, (5, 7))
    c = cuda_from(a)
    h = form(c)
    if isinstance(h, db.Tensor):
        assert h.device == CPU and not h.is_cuda and h.dtype is c.dtype
        host = h.numpy()
    else:
        assert isinstance(h, np.ndarray)
        host = h
    assert host.dtype == a.dtype and host.shape == (5, 7)
    assert host.__array_interface__["data"][0] != c.data_ptr()
    assert_values(host, a)
    if host.flags.writeable:  # a copy: writing it leaves the GPU data alone
        host[...] = host[::-1, ::-1]
        assert_values(c, a)


@pytest.mark.parametrize("producer", ["numpy", "torch"])
def test_from_dlpack_device_cuda_of_host_producers(producer, rng):
    a = rand_array(rng, "float32", (3, 4))
    src = a if producer == "numpy" else torch.from_numpy(a)
    for device in ("cuda", "cuda:0", CUDA0):
        r = db.from_dlpack(src, device=device)
        assert_on_cuda(r)
        assert_values(r, a)


HOST_LAYOUTS = {
    "transposed": lambda a: a.T,
    "stepped": lambda a: a[::2, 1::3],
    "negative_stride": lambda a: a[::-1],
    "negative_2d": lambda a: a[::-2, ::-1],
    "column": lambda a: a[:, 3],
    "offset": lambda a: a.reshape(-1)[5:37],
    "permuted_3d": lambda a: a.reshape(2, 6, 7).transpose(2, 0, 1),
}


@pytest.mark.parametrize("name", ["float32", "bfloat16", "int64", "bool", "uint16", "complex128"])
@pytest.mark.parametrize("layout", HOST_LAYOUTS.values(), ids=HOST_LAYOUTS.keys())
def test_non_contiguous_host_sources_to_cuda_and_back(layout, name, rng):
    a = rand_array(rng, name, (12, 7))
    v = layout(a)
    t = db.from_numpy(v)
    for to_cuda in (TO_CUDA["to('cuda')"], TO_CUDA["from_dlpack(device='cuda')"],
                    TO_CUDA["__dlpack__(dl_device,copy)"]):
        r = to_cuda(t)
        assert_on_cuda(r)
        assert r.shape == v.shape
        assert_values(r, v)
        assert_values(r.cpu(), v)
        assert_values(r.numpy(force=True), v)


CUDA_VIEWS = {
    "transposed": (lambda t: t.T, lambda a: a.T),
    "stepped": (lambda t: t[::2, 1::3], lambda a: a[::2, 1::3]),
    "column": (lambda t: t[:, 3], lambda a: a[:, 3]),
    "row_offset": (lambda t: t[1:, 2:], lambda a: a[1:, 2:]),
    "misaligned": (lambda t: t.reshape(-1)[1:], lambda a: a.reshape(-1)[1:]),
    "permuted_3d": (lambda t: t.view(2, 6, 8).permute(2, 0, 1), lambda a: a.reshape(2, 6, 8).transpose(2, 0, 1)),
    "expanded": (lambda t: t[:, :1].expand(12, 5), lambda a: np.broadcast_to(a[:, :1], (12, 5))),
}


@pytest.mark.parametrize("name", ["float64", "bfloat16", "int8", "bool", "uint64", "complex64"])
@pytest.mark.parametrize("view", CUDA_VIEWS.values(), ids=CUDA_VIEWS.keys())
def test_non_contiguous_cuda_views_to_host(view, name, rng):
    on_t, on_a = view
    a = rand_array(rng, name, (12, 8))
    v, expected = on_t(cuda_from(a)), on_a(a)
    assert_on_cuda(v)
    for form_name, form in TO_CPU.items():
        if form_name == "np.from_dlpack(device='cpu')" and name == "bfloat16":
            continue
        problem = diff(form(v), np.ascontiguousarray(expected))
        assert problem is None, (form_name, problem)


@pytest.mark.parametrize("name", ["float32", "int16", "bool", "complex64", "bfloat16"])
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)], ids=str)
def test_empty_tensors_both_ways(shape, name):
    a = np.zeros(shape, NP_DTYPE[name])
    for form in (TO_CUDA["to('cuda')"], TO_CUDA["from_dlpack(device='cuda')"], TO_CUDA["__dlpack__(versioned)"]):
        c = form(db.from_numpy(a))
        assert_on_cuda(c)
        assert c.shape == shape and c.numel() == 0
        assert c.cpu().shape == shape
        assert c.numpy(force=True).shape == shape
        assert db.from_dlpack(c, device="cpu").shape == shape
    e = db.empty(shape, dtype=getattr(db, name), device="cuda")
    assert e.shape == shape and e.cpu().numpy().shape == shape
    if name in ("float32", "int16"):
        assert (e + e).shape == shape and (e * 2).shape == shape
        assert e.sum().item() == 0
        e.fill_(3)  # nothing to write
        e.add_(1)
        assert e.clone().shape == shape and e.contiguous().shape == shape


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_zero_d_tensors_both_ways(name, rng):
    a = rand_array(rng, name, ())
    assert a.shape == ()
    c = db.from_numpy(a).to("cuda")
    assert_on_cuda(c)
    assert c.shape == () and c.ndim == 0
    assert_values(c, a)
    assert_values(c.numpy(force=True), a)
    expected = wide(a).item() if name == "bfloat16" else a.item()
    assert c.item() == expected
    assert c.tolist() == expected
    assert db.tensor(2.5, device="cuda").item() == 2.5


def test_large_100mb_transfers_are_exact(rng):
    n = 25_000_000  # 100 MB of float32
    a = rng.random(n, dtype=np.float32)
    for to_cuda in (TO_CUDA["to('cuda')"], TO_CUDA["from_dlpack(device='cuda')"]):
        c = to_cuda(db.from_numpy(a))
        assert_on_cuda(c)
        assert c.shape == (n,)
        back = c.cpu().numpy()
        assert np.array_equal(back, a)
        assert np.array_equal(c.numpy(force=True), a)
        del c
    sq = a.reshape(5000, 5000)
    ct = db.from_numpy(sq.T).to("cuda")  # a transposed 100 MB source
    assert np.array_equal(ct.cpu().numpy(), sq.T)
    assert np.array_equal(cuda_from(sq).T.cpu().numpy(), sq.T)  # a transposed 100 MB CUDA view


def test_to_same_device_returns_the_tensor_and_copies_are_new_memory(rng):
    a = rand_array(rng, "float32", (4, 5))
    c = cuda_from(a)
    assert c.to("cuda") is c and c.to(DEV) is c and c.cuda() is c  # as torch: nothing to do
    assert c.to(db.float32) is c
    same = db.from_dlpack(c)
    assert same.data_ptr() == c.data_ptr()
    copies = [db.from_dlpack(c, copy=True), c.clone(), db.from_dlpack(c.__dlpack__(copy=True)),
              db.from_dlpack(c.__dlpack__(max_version=(1, 0), copy=True))]
    ptrs = {c.data_ptr()}
    for k in copies:
        assert_on_cuda(k)
        assert_values(k, a)
        assert k.data_ptr() not in ptrs
        ptrs.add(k.data_ptr())
    copies[0].fill_(0)
    assert_values(c, a)


def test_capsule_fields_of_cuda_exports(rng):
    a = rand_array(rng, "float32", (4, 5))
    c = cuda_from(a)
    info = capsule_info(c.__dlpack__(max_version=(1, 0)))
    assert info.versioned and info.device == (2, 0) and info.data == c.data_ptr() and info.flags == 0
    info = capsule_info(c.__dlpack__(max_version=(1, 0), dl_device=(2, 0)))
    assert info.device == (2, 0) and info.data == c.data_ptr() and info.flags == 0
    info = capsule_info(c.__dlpack__(max_version=(1, 0), copy=True))
    assert info.device == (2, 0) and info.data != c.data_ptr() and info.flags & IS_COPIED
    info = capsule_info(c.__dlpack__())
    assert not info.versioned and info.device == (2, 0) and info.data == c.data_ptr()
    v = c[1:, 2:]
    info = capsule_info(v.__dlpack__(max_version=(1, 0)))
    assert info.data == v.data_ptr() == c.data_ptr() + (5 + 2) * 4


def test_dlpack_dl_device_cpu_of_cuda_tensor_is_a_flagged_host_copy(rng):
    a = rand_array(rng, "int32", (3, 4))
    c = cuda_from(a)
    cap = c.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    info = capsule_info(cap)
    assert info.device == (1, 0) and info.flags & IS_COPIED and info.data != c.data_ptr()
    h = db.from_dlpack(cap)
    assert h.device == CPU
    assert_values(h, a)
    legacy = c.__dlpack__(dl_device=(1, 0))
    assert capsule_info(legacy).device == (1, 0)
    assert_values(db.from_dlpack(legacy), a)


def test_dlpack_dl_device_cuda_of_cpu_tensor_is_a_flagged_cuda_copy(rng):
    a = rand_array(rng, "float64", (3, 4))
    t = db.from_numpy(a)
    cap = t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=True)
    info = capsule_info(cap)
    assert info.device == (2, 0) and info.flags & IS_COPIED
    c = db.from_dlpack(cap)
    assert_on_cuda(c)
    assert c.data_ptr() == info.data
    assert_values(c, a)
    if torch.cuda.is_available():
        x = torch.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=True))
        assert x.is_cuda
        assert_values(x, a)


def test_copy_false_when_a_copy_is_needed_raises_buffer_error():
    c, h = db.ones(3, device="cuda"), db.ones(3)
    with pytest.raises(BufferError):
        c.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError):
        c.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError):
        h.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(BufferError):
        db.from_dlpack(c, device="cpu", copy=False)
    with pytest.raises(BufferError):
        db.from_dlpack(h, device="cuda", copy=False)
    assert db.from_dlpack(c, copy=False).data_ptr() == c.data_ptr()


def test_numpy_of_cuda_tensor_raises_like_torch():
    msg = ("can't convert cuda:0 device type tensor to numpy. "
           "Use Tensor.cpu() to copy the tensor to host memory first.")
    c = db.arange(4, device="cuda")
    with pytest.raises(TypeError) as e:
        c.numpy()
    assert str(e.value) == msg
    with pytest.raises(TypeError):
        c.numpy(force=False)
    assert c.numpy(force=True).tolist() == [0, 1, 2, 3]
    bf = db.tensor([1.5, -2.0], dtype=db.bfloat16, device="cuda").numpy(force=True)
    assert bf.dtype == NP_DTYPE["bfloat16"] and wide(bf).tolist() == [1.5, -2.0]


# =========================================================================== views


def test_views_of_cuda_tensors_share_memory(rng):
    a = rand_array(rng, "float64", (4, 6))
    t = cuda_from(a)
    base = t.data_ptr()
    cases = {  # name: (view, NumPy view, first element address, strides)
        "t[::2]": (t[::2], a[::2], base, (12, 1)),
        "t[:, 1]": (t[:, 1], a[:, 1], base + 8, (6,)),
        "t[1:, 2:5]": (t[1:, 2:5], a[1:, 2:5], base + 8 * 8, (6, 1)),
        "t.T": (t.T, a.T, base, (1, 6)),
        "t.t()": (t.t(), a.T, base, (1, 6)),
        "t.transpose(0, 1)": (t.transpose(0, 1), a.T, base, (1, 6)),
        "t.view(6, 4)": (t.view(6, 4), a.reshape(6, 4), base, (4, 1)),
        "t.reshape(3, 8)": (t.reshape(3, 8), a.reshape(3, 8), base, (8, 1)),
        "t.unsqueeze(1)": (t.unsqueeze(1), a[:, None], base, (6, 6, 1)),
        "t[:, :1].expand(4, 5)": (t[:, :1].expand(4, 5), np.broadcast_to(a[:, :1], (4, 5)), base, (6, 0)),
        "permute": (t.view(2, 2, 6).permute(2, 0, 1), a.reshape(2, 2, 6).transpose(2, 0, 1), base, (1, 12, 6)),
    }
    for name, (v, ref, addr, strides) in cases.items():
        assert_on_cuda(v)
        assert v.shape == ref.shape, name
        assert v.stride() == strides, name
        assert v.data_ptr() == addr, name
        assert v.is_contiguous() == ref.flags.c_contiguous, name
        problem = diff(v, np.ascontiguousarray(ref))
        assert problem is None, (name, problem)
    r = t.T.reshape(24)  # not viewable: a copy
    assert r.data_ptr() != base
    assert_values(r, a.T.reshape(24))
    assert t[1, 2].item() == a[1, 2]
    assert t.tolist() == a.tolist()
    assert t[:, 1].tolist() == a[:, 1].tolist()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_item_and_tolist_on_cuda(name, rng):
    a = rand_array(rng, name, (3, 4))
    c = cuda_from(a)
    ref = wide(a) if name == "bfloat16" else a
    assert c.tolist() == ref.tolist()
    assert c[2, 1].item() == ref[2, 1].item()
    assert c[:, 2].tolist() == ref[:, 2].tolist()


# =========================================================================== elementwise kernels


@pytest.mark.parametrize("left", REAL_NAMES)
@pytest.mark.parametrize("opname", OPS.keys())
def test_binary_tensor_tensor_every_dtype_pair(opname, left, rng):
    """left op right, right a tensor or a 0-d tensor of every real dtype (torch's promotion)."""
    problems = {}
    xa = rand_array(rng, left, (17,), small=True)
    x = cuda_from(xa)
    for right in REAL_NAMES:
        for kind, shape in (("tensor", (17,)), ("0d", ())):
            ya = rand_array(rng, right, shape, small=True)
            if opname == "truediv":
                ya = nonzero(ya)
            problem = check_op(opname, x, cuda_from(ya), xa, ya)
            if problem:
                problems[f"{kind}-{right}"] = problem
    assert not problems, problems


SCALARS = {"int": 2, "neg_int": -3, "float": 2.5, "quarter": 0.25, "bool": True}


@pytest.mark.parametrize("name", REAL_NAMES)
@pytest.mark.parametrize("opname", OPS.keys())
def test_binary_tensor_scalar_both_orders(opname, name, rng):
    """t op s and s op t (2 - t, 3 / t, ...) for Python scalars."""
    problems = {}
    xa = rand_array(rng, name, (17,), small=True)
    if opname == "truediv":
        xa = nonzero(xa)
    x = cuda_from(xa)
    for sname, s in SCALARS.items():
        for order, (p, q, pa, qa) in {"t op s": (x, s, xa, s), "s op t": (s, x, s, xa)}.items():
            problem = check_op(opname, p, q, pa, qa)
            if problem:
                problems[f"{order} ({sname})"] = problem
    assert not problems, problems


def test_bool_subtraction_and_negation_raise_on_cuda():
    b = db.tensor([True, False], device="cuda")
    for f in (lambda: b - b, lambda: b - True, lambda: 1 - b, lambda: -b, lambda: b.neg(), lambda: b.sub_(b)):
        with pytest.raises(RuntimeError):
            f()


BROADCAST = [((3, 1), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((5, 4), (1,)), ((1,), (0,)),
             ((2, 0), (2, 1)), ((1, 1, 1), (3,)), ((4, 1, 2), (1, 3, 1)), ((1023, 1), (1, 17))]


@pytest.mark.parametrize("name", ["float64", "int32", "bfloat16"])
@pytest.mark.parametrize("sa,sb", BROADCAST, ids=str)
def test_broadcasting_on_cuda(sa, sb, name, rng):
    problems = {}
    xa, ya = nonzero(rand_array(rng, name, sa, small=True)), nonzero(rand_array(rng, name, sb, small=True))
    x, y = cuda_from(xa), cuda_from(ya)
    for opname in OPS:
        for order, args in {"a op b": (x, y, xa, ya), "b op a": (y, x, ya, xa)}.items():
            problem = check_op(opname, *args)
            if problem:
                problems[f"{opname} {order}"] = problem
    assert not problems, problems


ODD_SIZES = [1, 3, 17, 1023, 1_000_003]
KERNEL_NAMES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "int64", "uint64"]


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_elementwise_odd_sizes_misaligned_views_and_poisoned_outputs(name, n, rng):
    """Sizes that leave vector-load tails, views that start off alignment, and in-place
    results framed by sentinels that a kernel overrunning its range would overwrite."""
    npdt, dt = NP_DTYPE[name], getattr(db, name)
    isz = npdt.itemsize
    problems = {}
    a, b = rand_array(rng, name, n + 3), rand_array(rng, name, n + 3)  # integers wrap like C
    A, B = cuda_from(a), cuda_from(b)
    qa, qb = rand_array(rng, name, n + 3, small=True), nonzero(rand_array(rng, name, n + 3, small=True))
    QA, QB = cuda_from(qa), cuda_from(qb)
    pairs = {"aligned": (slice(0, n), slice(0, n)), "misaligned x": (slice(1, n + 1), slice(0, n)),
             "both offset": (slice(1, n + 1), slice(3, n + 3))}
    for vname, (sx, sy) in pairs.items():
        x, y, xa, ya = A[sx], B[sy], a[sx], b[sy]
        for opname in ("add", "sub", "mul"):
            poison_pool(n * 8)
            problems[f"{vname}: x {opname} y"] = check_op(opname, x, y, xa, ya)
        poison_pool(n * 8)
        problems[f"{vname}: x * 3"] = check_op("mul", x, 3, xa, 3)
        problems[f"{vname}: 2 - x"] = check_op("sub", 2, x, 2, xa)
        problems[f"{vname}: -x"] = diff(-x, neg_ref(xa))
        # true division on small values (integers exact in float32, as torch computes them)
        poison_pool(n * 8)
        problems[f"{vname}: x / y"] = check_op("truediv", QA[sx], QB[sy], qa[sx], qb[sy])
        problems[f"{vname}: 3 / y"] = check_op("truediv", 3, QB[sy], 3, qb[sy])
    # in place, into a view framed by sentinels (misaligned and aligned start)
    for off in (1, max(1, 16 // isz)):
        for opname in ("add", "sub", "mul", "truediv"):
            if opname == "truediv" and name not in FLOAT_NAMES:
                continue
            src, other, sa, oa = (QA, QB, qa, qb) if opname == "truediv" else (A, B, a, b)
            buf = db.full((n + off + 5,), sentinel(name), dtype=dt, device=DEV)
            v = buf[off:off + n]
            assert v.copy_(src[:n]) is v
            getattr(v, METHODS[opname])(other[2:n + 2])
            key = f"in-place {METHODS[opname]} at offset {off}"
            problems[key] = diff(v, ref_binary(opname, sa[:n], oa[2:n + 2], name),
                                 rtol_eps=2 if opname == "truediv" else 0)
            h = values_of(buf)
            if not (is_sentinel(h[:off], name) and is_sentinel(h[off + n:], name)):
                problems[key + " frame"] = "wrote outside the view"
        # operator form with a scalar
        buf = db.full((n + off + 5,), sentinel(name), dtype=dt, device=DEV)
        v = buf[off:off + n]
        v.copy_(A[:n])
        v *= 3
        v += 1
        problems[f"v *= 3; v += 1 at offset {off}"] = diff(
            v, ref_binary("add", ref_binary("mul", a[:n], 3, name), 1, name))
        h = values_of(buf)
        if not (is_sentinel(h[:off], name) and is_sentinel(h[off + n:], name)):
            problems[f"operators at offset {off} frame"] = "wrote outside the view"
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


@pytest.mark.parametrize("name", ["float32", "float64", "bfloat16", "float16", "int32", "uint8", "int64"])
def test_non_contiguous_and_expanded_inputs(name, rng):
    a, b = rand_array(rng, name, (64, 66)), rand_array(rng, name, (64, 66))
    row, col = rand_array(rng, name, (33,)), rand_array(rng, name, (64, 1))
    bt = np.ascontiguousarray(b.T)
    A, B, R, C, BT = (cuda_from(x) for x in (a, b, row, col, bt))
    cases = {
        "A[:, ::2] op B[:, 1::2]": (A[:, ::2], B[:, 1::2], a[:, ::2], b[:, 1::2]),
        "A.T op B.T": (A.T, B.T, a.T, b.T),
        "A.T op contiguous": (A.T, BT, a.T, bt),
        "contiguous op A.T": (BT, A.T, bt, a.T),
        "A[:, ::2] op R.expand": (A[:, ::2], R.expand(64, 33), a[:, ::2], np.broadcast_to(row, (64, 33))),
        "C.expand op R.expand": (C.expand(64, 33), R.expand(64, 33), np.broadcast_to(col, (64, 33)),
                                 np.broadcast_to(row, (64, 33))),
        "C op R": (C, R, col, row),
        "A[1:, 3:36] op R": (A[1:, 3:36], R, a[1:, 3:36], row),
        "A[::3, ::5] op 2": (A[::3, ::5], 2, a[::3, ::5], 2),
        "permuted": (A.view(64, 2, 33).permute(1, 2, 0), B.view(64, 2, 33).permute(1, 2, 0),
                     a.reshape(64, 2, 33).transpose(1, 2, 0), b.reshape(64, 2, 33).transpose(1, 2, 0)),
    }
    # integer true division is covered on small values elsewhere; float divisors here are
    # normal * 8, never zero
    ops = ["add", "sub", "mul"] + (["truediv"] if name in FLOAT_NAMES else [])
    problems = {}
    for case, (x, y, xa, ya) in cases.items():
        for opname in ops:
            problem = check_op(opname, x, y, xa, ya)
            if problem:
                problems[f"{case} [{opname}]"] = problem
    # in place into a strided view with an expanded operand: the other columns are untouched
    A2 = cuda_from(a)
    A2[:, ::2].add_(R)
    expected = a.copy()
    expected[:, ::2] = ref_binary("add", a[:, ::2], row, name)
    problems["A[:, ::2].add_(R)"] = diff(A2, expected)
    A3 = cuda_from(a)
    v = A3.T[::2]
    v.mul_(C.T.expand(33, 64))
    expected = a.copy()
    expected.T[::2] = ref_binary("mul", a.T[::2], np.broadcast_to(col.T, (33, 64)), name)
    problems["A.T[::2].mul_(C.T.expand)"] = diff(A3, expected)
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


@pytest.mark.parametrize("opname", METHODS.keys())
@pytest.mark.parametrize("name", NUMERIC_NAMES)
def test_in_place_into_strided_views_every_dtype(name, opname, rng):
    """t[:, ::2] op= u: the even columns change, the odd ones keep their sentinel."""
    if opname == "truediv" and name not in FLOAT_NAMES:
        t = db.ones(3, dtype=getattr(db, name), device="cuda")
        with pytest.raises(RuntimeError):
            t.div_(2)  # torch: result type Float can't be cast to the desired output type
        with pytest.raises(RuntimeError):
            t /= 2
        return
    a, u = rand_array(rng, name, (8, 9)), rand_array(rng, name, (8, 9), small=True)
    if opname == "truediv":
        u = nonzero(u)
    for form in ("method", "operator", "scalar"):
        buf = db.full((8, 18), sentinel(name), dtype=getattr(db, name), device="cuda")
        v = buf[:, ::2]
        v.copy_(cuda_from(a))
        if form == "method":
            assert getattr(v, METHODS[opname])(cuda_from(u)) is v
            expected = ref_binary(opname, a, u, name)
        elif form == "operator":
            w = INPLACE[opname](v, cuda_from(u))
            assert w is v
            expected = ref_binary(opname, a, u, name)
        else:
            getattr(v, METHODS[opname])(2)
            expected = ref_binary(opname, a, 2, name)
        assert_values(v, expected, rtol_eps=2 if opname == "truediv" else 0)
        assert is_sentinel(values_of(buf)[:, 1::2], name), form


def test_in_place_with_other_dtypes_like_torch(rng):
    a = rand_array(rng, "float32", (1023,))
    d = rand_array(rng, "float64", (1023,))
    t = cuda_from(a)
    t += cuda_from(d)  # computed in float64, rounded to float32
    assert t.dtype is db.float32
    assert_values(t, (wide(a) + d).astype(np.float32))
    i = rand_array(rng, "int32", (1023,))
    j = rand_array(rng, "int64", (1023,))
    ti = cuda_from(i)
    ti.add_(cuda_from(j))  # int64 result wrapped into int32
    assert_values(ti, (i.astype(np.int64) + j).astype(np.int32))
    h = rand_array(rng, "float16", (1023,))
    th = cuda_from(h)
    th *= 2.5
    assert_values(th, (wide(h) * 2.5).astype(np.float16))
    u = rand_array(rng, "uint8", (1023,))
    tu = cuda_from(u)
    tu -= 3
    assert_values(tu, (u.astype(np.int64) - 3).astype(np.uint8))
    ti = db.ones(3, dtype=db.int64, device="cuda")
    with pytest.raises(RuntimeError):
        ti += 2.5  # float result can't go into an integer tensor (torch's rule)
    assert ti.tolist() == [1, 1, 1]


@pytest.mark.parametrize("name", NUMERIC_NAMES)
def test_neg_every_dtype(name, rng):
    a = rand_array(rng, name, (33, 31))
    c = cuda_from(a)
    ref = neg_ref(a)
    assert_values(-c, ref)
    assert_values(c.neg(), ref)
    assert_values(-c[:, ::3], np.ascontiguousarray(ref[:, ::3]))
    assert_values(-(c.T), np.ascontiguousarray(ref.T))
    assert (-c).dtype is c.dtype
    assert_values(c, a)  # out of place


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_fill_contiguous_strided_and_misaligned(name, rng):
    dt, npdt, val = getattr(db, name), NP_DTYPE[name], FILL[name]
    a = rand_array(rng, name, (8, 10))
    c = cuda_from(a)
    assert c.fill_(val) is c
    assert_values(c, np.full((8, 10), val, npdt))
    c = cuda_from(a)
    c[:, ::2].fill_(val)  # odd columns keep their values
    expected = a.copy()
    expected[:, ::2] = val
    assert_values(c, expected)
    c = cuda_from(a)
    c.T[1::3].fill_(val)
    expected = a.copy()
    expected.T[1::3] = val
    assert_values(c, expected)
    for n in (1, 17, 1023, 100_003):
        buf = db.full((n + 2,), sentinel(name) if name != "bool" else False, dtype=dt, device="cuda")
        buf[1:n + 1].fill_(val)
        h = values_of(buf)
        assert_values(h[1:n + 1], np.full(n, val, npdt))
        if name == "bool":
            assert not h[0] and not h[-1]
        else:
            assert is_sentinel(h[[0, -1]], name)
    z = db.zeros((), dtype=dt, device="cuda")
    z.fill_(val)
    assert_values(z, np.full((), val, npdt))


COPY_PAIRS = [("float32", "int64"), ("float64", "float16"), ("int32", "float32"), ("bfloat16", "float32"),
              ("uint8", "bool"), ("int8", "int8"), ("float16", "bfloat16"), ("uint64", "int16"),
              ("bool", "float64"), ("complex64", "complex64")]


@pytest.mark.parametrize("dst,src", COPY_PAIRS, ids=lambda x: str(x))
def test_copy_into_strided_views_with_casts_and_broadcasting(dst, src, rng):
    base = rand_array(rng, dst, (6, 10))
    s = cast_source(rng, src, dst, 30).reshape(6, 5)
    row = cast_source(rng, src, dst, 5)
    ref_s, ref_row = ref_cast(s, dst)[0], ref_cast(row, dst)[0]
    D = cuda_from(base)
    v = D[:, ::2]
    assert v.copy_(cuda_from(s)) is v
    expected = base.copy()
    expected[:, ::2] = ref_s
    assert_values(D, expected)
    D[:, 1::2].copy_(cuda_from(row))  # broadcast (5,) over (6, 5)
    expected[:, 1::2] = ref_row
    assert_values(D, expected)
    # strided source into a contiguous destination
    E = db.empty((5, 6), dtype=getattr(db, dst), device="cuda")
    E.copy_(cuda_from(s).T)
    assert_values(E, np.ascontiguousarray(ref_s.T))
    # cross-device, both ways, into strided destinations
    F = cuda_from(base)
    F[:, ::2].copy_(db.from_numpy(s))  # host -> CUDA
    expected = base.copy()
    expected[:, ::2] = ref_s
    assert_values(F, expected)
    h = np.array(base, copy=True)
    db.from_numpy(h)[:, 1::2].copy_(cuda_from(s))  # CUDA -> host, written through to h
    expected = base.copy()
    expected[:, 1::2] = ref_s
    assert_values(h, expected)
    row10 = cast_source(rng, src, dst, 10)
    h2 = np.array(base, copy=True)
    db.from_numpy(h2).copy_(cuda_from(row10))  # CUDA -> host, broadcast (10,) over (6, 10)
    assert_values(h2, np.broadcast_to(ref_cast(row10, dst)[0], (6, 10)))
    G = cuda_from(base)
    G.copy_(db.from_numpy(row10))  # host -> CUDA, broadcast
    assert_values(G, np.broadcast_to(ref_cast(row10, dst)[0], (6, 10)))


def test_copy_poisoned_destination_large(rng):
    n = 1_000_003
    a = rng.standard_normal(n).astype(np.float32)
    dst = db.full((n + 2,), float("nan"), dtype=db.float32, device="cuda")
    dst[1:n + 1].copy_(db.from_numpy(a))
    h = values_of(dst)
    assert np.isnan(h[0]) and np.isnan(h[-1])
    assert np.array_equal(h[1:n + 1], a)
    d2 = db.full((n,), float("nan"), dtype=db.float64, device="cuda")
    d2.copy_(cuda_from(a))  # cast on the GPU
    assert_values(d2, a.astype(np.float64))


@pytest.mark.parametrize("name", ["float32", "bfloat16", "int8", "uint64", "complex64", "bool"])
def test_contiguous_and_clone(name, rng):
    a = rand_array(rng, name, (6, 9))
    c = cuda_from(a)
    assert c.contiguous() is c
    t = c.T
    assert not t.is_contiguous()
    k = t.contiguous()
    assert_on_cuda(k)
    assert k.is_contiguous() and k.data_ptr() != c.data_ptr()
    assert_values(k, np.ascontiguousarray(a.T))
    for v, ref in ((c, a), (c[::2, 1::3], a[::2, 1::3]), (c[1:].reshape(-1)[1:], a[1:].reshape(-1)[1:])):
        cl = v.clone()
        assert_on_cuda(cl)
        assert cl.data_ptr() != v.data_ptr()
        assert_values(cl, np.ascontiguousarray(ref))
    cl = c.clone()
    cl.fill_(FILL[name])
    assert_values(c, a)


# --------------------------------------------------------------------------- casts


def cast_source(rng, src, dst, n=257):
    """Values of dtype src whose conversion to dst is defined (no UB) and exactly predictable."""
    with np.errstate(all="ignore"):  # overflow to inf is intended
        return _cast_source(rng, src, dst, n)


def _cast_source(rng, src, dst, n):
    sdt = NP_DTYPE[src]
    if src == "bool":
        return rng.random(n) < 0.5
    if src in COMPLEX_NAMES:
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(sdt)
    if src in FLOAT_NAMES:
        if dst == "bool":
            v = rng.standard_normal(n) * 4
            v[::5] = 0.0
            v[1], v[2] = np.nan, -0.0
        elif dst in FLOAT_NAMES:
            v = rng.standard_normal(n) * 1000 * rng.choice([1e-6, 1e-3, 1.0, 10.0], n)
            special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-5, 7e4, -1e-30]
            v[:min(n, 8)] = special[:min(n, 8)]
        else:  # float -> integer: in range, with fractions (truncation toward zero)
            lo = -100 if np.iinfo(NP_DTYPE[dst]).min < 0 else 0
            v = rng.integers(lo, 101, n) + rng.choice([-0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75], n)
            v = np.clip(v, lo - 0.75, 100.75)
        return v.astype(sdt)
    info = np.iinfo(sdt)
    if dst in ("float16", "bfloat16"):  # |x| <= 2**24: exact in float32, one rounding to half
        v = rng.integers(max(int(info.min), -2**24), min(int(info.max), 2**24), n, endpoint=True).astype(sdt)
    else:
        v = rng.integers(info.min, info.max, n, dtype=sdt, endpoint=True)
    v[::7] = 0
    return v


def ref_cast(a, dst):
    """Acceptable results of casting array a to dst (a list: float64 -> half may round
    directly or through float32, as torch's CUDA kernels do)."""
    with np.errstate(all="ignore"):  # overflow to inf is intended
        return _ref_cast(a, dst)


def _ref_cast(a, dst):
    ddt = NP_DTYPE[dst]
    src_float = is_float(a.dtype)
    if dst == "bool":
        return [wide(a) != 0]
    if src_float and dst not in FLOAT_NAMES:
        return [np.trunc(wide(a)).astype(ddt)]
    if src_float:
        direct = wide(a).astype(ddt)
        if a.dtype == np.float64 and dst in ("float16", "bfloat16"):
            return [direct, a.astype(np.float32).astype(ddt)]
        return [direct]
    if a.dtype.kind == "c":
        return [a.astype(ddt)]
    if dst in ("float16", "bfloat16"):
        return [a.astype(np.float64).astype(ddt)]
    return [a.astype(ddt)]  # integers wrap modulo 2**bits, like C


@pytest.mark.parametrize("src", REAL_NAMES)
def test_casts_between_real_dtypes(src, rng):
    problems = {}
    for dst in REAL_NAMES:
        a = cast_source(rng, src, dst)
        t = cuda_from(a)
        poison_pool(a.size * 8)
        got = t.to(getattr(db, dst))
        if not got.is_cuda or dname(got.dtype) != dst:
            problems[dst] = f"gave {got.dtype} on {got.device}"
            continue
        cands = ref_cast(a, dst)
        problems[dst] = diff_any(got, cands)
        problems[f"{dst} (strided)"] = diff_any(t[1::3].to(getattr(db, dst)), [c[1::3] for c in cands])
        if src != dst:
            assert got.data_ptr() != t.data_ptr()
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


SPELLINGS = {  # the cast applies to a CUDA tensor, except where it names the device
    "to(dtype)": (lambda t: t.to(db.int16), "int16"),
    "to(dtype=)": (lambda t: t.to(dtype=db.uint8), "uint8"),
    "to('cuda', dtype) of a host tensor": (lambda t: t.cpu().to("cuda", db.float64), "float64"),
    "to('cuda:0', dtype=) of a host tensor": (lambda t: t.cpu().to("cuda:0", dtype=db.float16), "float16"),
    "to(device=, dtype=) of a host tensor": (lambda t: t.cpu().to(device=CUDA0, dtype=db.int32), "int32"),
    "type(dtype)": (lambda t: t.type(db.float16), "float16"),
    "float()": (lambda t: t.float(), "float32"),
    "double()": (lambda t: t.double(), "float64"),
    "half()": (lambda t: t.half(), "float16"),
    "bfloat16()": (lambda t: t.bfloat16(), "bfloat16"),
    "int()": (lambda t: t.int(), "int32"),
    "long()": (lambda t: t.long(), "int64"),
    "bool()": (lambda t: t.bool(), "bool"),
}


@pytest.mark.parametrize("spell", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_cast_spellings_on_cuda(spell, rng):
    f, dst = spell
    a = cast_source(rng, "float32", "uint8" if dst in ("uint8", "bool") else "int8", 101)
    got = f(cuda_from(a))
    assert_on_cuda(got)
    assert dname(got.dtype) == dst
    assert_values(got, ref_cast(a, dst)[0])
    strided = f(cuda_from(np.stack([a, a]))[:, ::2])  # a non-contiguous source
    assert_values(strided, np.ascontiguousarray(ref_cast(np.stack([a, a]), dst)[0][:, ::2]))


@pytest.mark.parametrize("src", FLOAT_NAMES)
def test_float_to_int_truncates_toward_zero(src):
    vals = [-2.75, -1.5, -0.5, -0.25, 0.0, 0.5, 1.5, 2.75, 99.5, -99.5]  # exact in bfloat16 too
    t = db.tensor(vals, dtype=getattr(db, src), device="cuda")
    for dst in ("int8", "int16", "int32", "int64"):
        assert t.to(getattr(db, dst)).tolist() == [-2, -1, 0, 0, 0, 0, 1, 2, 99, -99]
    assert db.tensor(vals[3:9], dtype=getattr(db, src), device="cuda").to(db.uint8).tolist() == [0, 0, 0, 1, 2, 99]


# =========================================================================== reductions


@pytest.mark.parametrize("n", [1, 17, 1023, 1_000_003])
@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_sum_and_mean_of_floats(name, n, rng):
    a = rand_array(rng, name, (n,))
    c = cuda_from(a)
    w = wide(a)
    ref, scale = w.sum(), np.abs(w).sum()
    # float64 accumulation: the only sizeable error is the final rounding to the dtype
    for what, got, expected, slack in (("sum", c.sum(), ref, 1e-11 * scale), ("mean", c.mean(), ref / n, 1e-11 * scale / n)):
        assert_on_cuda(got)
        assert got.shape == () and got.dtype is c.dtype
        g = float(wide(values_of(got)))
        tol = 2 * EPS[name] * abs(expected) + slack + TINY[name]
        assert abs(g - expected) <= tol, (what, g, expected, tol)
    assert c[1:].sum().item() == pytest.approx(float(w[1:].sum()), rel=2 * EPS[name], abs=TINY[name] + 1e-11 * scale)


def wrapped_int_sum(a):
    """Sum of integer (or bool) values as int64 with C wrap-around."""
    s = np.asarray(a).astype(np.uint64).sum(dtype=np.uint64)
    return int(np.asarray(s, dtype=np.uint64).view(np.int64))


@pytest.mark.parametrize("n", [1, 1023, 1_000_003])
@pytest.mark.parametrize("name", INT_NAMES + ["bool"])
def test_sum_of_integers_is_exact_int64(name, n, rng):
    a = rand_array(rng, name, (n,))
    c = cuda_from(a)
    s = c.sum()
    assert_on_cuda(s)
    assert s.shape == () and s.dtype is db.int64
    assert s.item() == wrapped_int_sum(a)
    assert c[1:].sum().item() == wrapped_int_sum(a[1:])
    assert c[::3].sum().item() == wrapped_int_sum(a[::3])


def test_sum_and_mean_of_views(rng):
    a = rand_array(rng, "float64", (300, 301))
    c = cuda_from(a)
    for v, ref in ((c[:, ::2], a[:, ::2]), (c.T, a.T), (c[1:, 3:], a[1:, 3:]), (c[::7], a[::7]),
                   (c[:, :1].expand(300, 1000), np.broadcast_to(a[:, :1], (300, 1000)))):
        slack = 1e-11 * float(np.abs(ref).sum())  # float64 accumulation, any summation order
        assert v.sum().item() == pytest.approx(float(ref.sum()), rel=1e-13, abs=slack)
        assert v.mean().item() == pytest.approx(float(ref.mean()), rel=1e-13, abs=slack / ref.size)
    i = rand_array(rng, "int32", (300, 301))
    ci = cuda_from(i)
    assert ci.T[::2].sum().item() == wrapped_int_sum(i.T[::2])
    assert ci[:, :1].expand(300, 7).sum().item() == wrapped_int_sum(np.broadcast_to(i[:, :1], (300, 7)))


def test_sum_and_mean_of_empty_and_zero_d():
    e = db.empty(0, dtype=db.float32, device="cuda")
    assert e.sum().item() == 0.0 and e.sum().is_cuda
    assert np.isnan(e.mean().item())
    assert db.empty((3, 0), dtype=db.int8, device="cuda").sum().item() == 0
    z = db.tensor(2.5, device="cuda")
    assert z.sum().item() == 2.5 and z.mean().item() == 2.5 and z.sum().shape == ()


@pytest.mark.parametrize("name", INT_NAMES + ["bool"])
def test_mean_of_integers_raises_like_torch(name):
    with pytest.raises(RuntimeError, match="mean"):
        db.ones(3, dtype=getattr(db, name), device="cuda").mean()


# =========================================================================== rand


@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_rand_on_cuda(name):
    n = 1 << 20
    t = db.rand(n, dtype=getattr(db, name), device="cuda")
    assert_on_cuda(t)
    assert t.dtype is getattr(db, name) and t.shape == (n,)
    v = wide(values_of(t))
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.005
    assert abs(v.var() - 1 / 12) < 0.005
    hist = np.histogram(v, bins=8, range=(0.0, 1.0))[0]  # bin edges exact in every dtype
    assert (np.abs(hist - n / 8) < 0.05 * n / 8).all(), hist
    u = wide(values_of(db.rand(n, dtype=getattr(db, name), device="cuda")))
    assert not np.array_equal(u, v)
    assert db.rand(3, 4, device="cuda").dtype is db.float32
    r = db.rand_like(t[:10])
    assert_on_cuda(r)
    assert r.dtype is t.dtype


def test_manual_seed_makes_cuda_rand_reproducible():
    db.manual_seed(1234)
    x = values_of(db.rand(4096, device="cuda"))
    y = values_of(db.rand(4096, device="cuda"))
    db.manual_seed(1234)
    assert np.array_equal(values_of(db.rand(4096, device="cuda")), x)
    assert np.array_equal(values_of(db.rand(4096, device="cuda")), y)
    assert not np.array_equal(x, y)
    db.manual_seed(1235)
    assert not np.array_equal(values_of(db.rand(4096, device="cuda")), x)


# =========================================================================== PyTorch exchange


def torch_cuda_sample(rng, name, shape=(5, 7)):
    """Random values, and the same as a torch CUDA tensor."""
    a = rand_array(rng, name, shape)
    x = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16) if name == "bfloat16" else torch.from_numpy(a.copy())
    return a, x.to("cuda")


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_torch_cuda_to_dlbridge_is_zero_copy(name, tcuda, rng):
    a, x = torch_cuda_sample(rng, name)
    d = db.from_dlpack(x)
    assert_on_cuda(d)
    assert dname(d.dtype) == name
    assert d.data_ptr() == x.data_ptr()
    assert d.shape == tuple(x.shape) and d.stride() == x.stride()
    assert not d.is_read_only
    assert_values(d, a)
    d.fill_(FILL[name])
    db.cuda.synchronize()
    assert_values(x, np.full(a.shape, FILL[name], a.dtype))


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlbridge_cuda_to_torch_is_zero_copy(name, tcuda, rng):
    a = rand_array(rng, name, (5, 7))
    t = cuda_from(a)
    x = torch.from_dlpack(t)
    assert x.is_cuda and x.device == torch.device("cuda", 0)
    assert dname(x.dtype) == name
    assert x.data_ptr() == t.data_ptr()
    assert x.stride() == t.stride()
    assert_values(x, a)
    t.fill_(FILL[name])
    db.cuda.synchronize()
    assert_values(x, np.full(a.shape, FILL[name], a.dtype))


def test_in_place_ops_on_imported_torch_memory_write_the_producer(tcuda):
    x = torch.ones(4, device="cuda")
    d = db.from_dlpack(x)
    d.mul_(3)
    db.cuda.synchronize()
    assert x.tolist() == [3.0] * 4
    d += 1
    d[::2].fill_(0)
    db.cuda.synchronize()
    assert x.tolist() == [0.0, 4.0, 0.0, 4.0]
    x.add_(1)
    torch.cuda.synchronize()
    assert d.tolist() == [1.0, 5.0, 1.0, 5.0]
    t = db.zeros(3, device="cuda")
    y = torch.from_dlpack(t)
    y.add_(2)
    torch.cuda.synchronize()
    assert t.tolist() == [2.0] * 3


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_capsules_between_torch_and_dlbridge(max_version, tcuda, rng):
    name = "dltensor_versioned" if max_version else "dltensor"
    a = rand_array(rng, "float32", (3, 5))
    t = cuda_from(a)
    c = t.__dlpack__(max_version=max_version)
    assert is_capsule(c, name)
    x = torch.from_dlpack(c)
    assert x.is_cuda and x.data_ptr() == t.data_ptr()
    assert_values(x, a)
    y = torch.from_numpy(a.copy()).cuda()
    c2 = y.__dlpack__(max_version=max_version) if max_version else y.__dlpack__()
    assert is_capsule(c2, name)
    d = db.from_dlpack(c2)
    assert_on_cuda(d)
    assert d.data_ptr() == y.data_ptr()
    assert_values(d, a)
    with pytest.raises(ValueError):
        db.from_dlpack(c2)  # consumed


def test_torch_round_trip_through_dlbridge_on_cuda(tcuda):
    x = torch.arange(12.0, device="cuda").reshape(3, 4)
    back = torch.from_dlpack(db.from_dlpack(x))
    assert back.data_ptr() == x.data_ptr() and back.device == x.device
    assert torch.equal(back, x)


TORCH_VIEWS = {
    "transposed": lambda: torch.arange(24.0, device="cuda").reshape(4, 6).t(),
    "stepped": lambda: torch.arange(24.0, device="cuda").reshape(4, 6)[::2, 1::2],
    "column": lambda: torch.arange(24.0, device="cuda").reshape(4, 6)[:, 3],
    "offset": lambda: torch.arange(24.0, device="cuda")[5:17],
    "permuted_3d": lambda: torch.arange(60.0, device="cuda").reshape(3, 4, 5).permute(2, 0, 1),
    "expanded": lambda: torch.arange(3.0, device="cuda").expand(4, 3),
}


@pytest.mark.parametrize("make", TORCH_VIEWS.values(), ids=TORCH_VIEWS.keys())
def test_torch_cuda_views_into_dlbridge(make, tcuda):
    x = make()
    d = db.from_dlpack(x)
    assert_on_cuda(d)
    assert d.shape == tuple(x.shape) and d.data_ptr() == x.data_ptr()
    assert d.is_contiguous() == x.is_contiguous()
    if x.numel() == len(set(x.flatten().tolist())):  # no aliasing: strides are canonical
        assert d.stride() == x.stride()
    assert d.tolist() == x.tolist()
    assert_values(d + 1, (x + 1).cpu().numpy())


DB_CUDA_VIEWS = {
    "column": lambda: db.arange(24.0, device="cuda").view(4, 6)[:, 3],
    "stepped": lambda: db.arange(24.0, device="cuda").view(4, 6)[::2, 1::2],
    "transposed": lambda: db.arange(24.0, device="cuda").view(4, 6).T,
    "offset": lambda: db.arange(24, device="cuda")[5:17],
}


@pytest.mark.parametrize("make", DB_CUDA_VIEWS.values(), ids=DB_CUDA_VIEWS.keys())
def test_dlbridge_cuda_views_into_torch(make, tcuda):
    t = make()
    x = torch.from_dlpack(t)
    assert x.is_cuda and tuple(x.shape) == t.shape
    assert x.stride() == t.stride() and x.data_ptr() == t.data_ptr()
    assert x.tolist() == t.tolist()
    x.zero_()
    torch.cuda.synchronize()
    assert t.sum().item() == 0


# =========================================================================== CuPy exchange and __cuda_array_interface__


@pytest.mark.parametrize("name", CUPY_NAMES)
def test_cupy_to_dlbridge_is_zero_copy(name, cp, rng):
    a = rand_array(rng, name, (5, 7))
    c = cp.asarray(a)
    d = db.from_dlpack(c)
    assert_on_cuda(d)
    assert dname(d.dtype) == name and d.data_ptr() == c.data.ptr
    assert d.stride() == tuple(s // c.itemsize for s in c.strides)
    assert_values(d, a)
    d.fill_(FILL[name])
    db.cuda.synchronize()
    assert_values(cp.asnumpy(c), np.full(a.shape, FILL[name], a.dtype))


@pytest.mark.parametrize("via", ["from_dlpack", "asarray"])
@pytest.mark.parametrize("name", CUPY_NAMES)
def test_dlbridge_to_cupy_is_zero_copy(name, via, cp, rng):
    a = rand_array(rng, name, (5, 7))
    t = cuda_from(a)
    c = cp.from_dlpack(t) if via == "from_dlpack" else cp.asarray(t)  # asarray reads __cuda_array_interface__
    assert c.data.ptr == t.data_ptr() and c.dtype == a.dtype and c.shape == (5, 7)
    assert_values(cp.asnumpy(c), a)
    c.fill(FILL[name])
    cp.cuda.runtime.deviceSynchronize()
    assert_values(t, np.full(a.shape, FILL[name], a.dtype))


def test_in_place_ops_on_imported_cupy_memory_write_the_producer(cp):
    c = cp.ones(4, dtype=cp.float32)
    d = db.from_dlpack(c)
    d.mul_(3)
    db.cuda.synchronize()
    assert cp.asnumpy(c).tolist() == [3.0] * 4


@pytest.mark.parametrize("name", CUPY_NAMES)
def test_cuda_array_interface_fields(name, rng):
    t = cuda_from(rand_array(rng, name, (3, 4)))
    isz = NP_DTYPE[name].itemsize
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3
    assert tuple(cai["shape"]) == (3, 4)
    assert cai["typestr"] == NP_DTYPE[name].str
    assert tuple(cai["data"]) == (t.data_ptr(), False)
    assert cai.get("strides") is None
    assert cai["stream"] == 1
    for v, strides in ((t[:, ::2], (4 * isz, 2 * isz)), (t.T, (isz, 4 * isz)), (t[1:, 1], (4 * isz,))):
        cai = v.__cuda_array_interface__
        assert tuple(cai["shape"]) == v.shape
        assert tuple(cai["strides"]) == strides
        assert cai["data"][0] == v.data_ptr()
    z = db.zeros((), dtype=getattr(db, name), device="cuda").__cuda_array_interface__
    assert tuple(z["shape"]) == () and z.get("strides") is None


def test_cuda_array_interface_only_on_cuda_tensors():
    assert not hasattr(db.zeros(2), "__cuda_array_interface__")  # like torch: CPU tensors have none
    assert hasattr(db.zeros(2, device="cuda"), "__cuda_array_interface__")


CUPY_VIEWS = {
    "stepped": lambda c: c[::2, 1::2],
    "transposed": lambda c: c.T,
    "column": lambda c: c[:, 3],
    "negative": lambda c: c[::-1],
    "negative_2d": lambda c: c[::-1, ::-2],
    "offset": lambda c: c[1:, 2:],
}


@pytest.mark.parametrize("view", CUPY_VIEWS.values(), ids=CUPY_VIEWS.keys())
def test_cupy_strided_views_into_dlbridge(view, cp, rng):
    a = rand_array(rng, "float64", (6, 8))
    c = view(cp.asarray(a))
    try:
        cp.from_dlpack(c)
    except Exception as e:  # noqa: BLE001 - CuPy itself does not export this layout
        pytest.skip(f"CuPy does not export this view: {e}")
    d = db.from_dlpack(c)
    assert d.shape == c.shape and d.data_ptr() == c.data.ptr
    assert d.stride() == tuple(s // 8 for s in c.strides)
    assert_values(d, cp.asnumpy(c))
    assert_values(d * 2, cp.asnumpy(c) * 2)


@pytest.mark.parametrize("via", ["from_dlpack", "asarray"])
@pytest.mark.parametrize("view", CUDA_VIEWS.values(), ids=CUDA_VIEWS.keys())
def test_dlbridge_cuda_views_into_cupy(view, via, cp, rng):
    on_t, on_a = view
    a = rand_array(rng, "float32", (12, 8))
    v = on_t(cuda_from(a))
    c = cp.from_dlpack(v) if via == "from_dlpack" else cp.asarray(v)
    assert c.data.ptr == v.data_ptr() and c.shape == v.shape
    assert c.strides == tuple(s * 4 for s in v.stride())
    assert_values(cp.asnumpy(c), np.ascontiguousarray(on_a(a)))


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


def test_cupy_keeps_dlbridge_memory_alive(cp, no_leak):
    check_export_outlives_tensor(no_leak, cp.from_dlpack, lambda c: float(c.sum()))


# =========================================================================== JAX exchange


@pytest.mark.parametrize("importer", ["jnp.from_dlpack", "jax.dlpack.from_dlpack"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlbridge_cuda_to_jax_is_zero_copy(name, importer, jx, rng):
    imp = jx.jnp.from_dlpack if importer == "jnp.from_dlpack" else jx.jax.dlpack.from_dlpack
    a = rand_array(rng, name, (5, 7))
    t = cuda_from(a)
    j = imp(t)
    assert j.unsafe_buffer_pointer() == t.data_ptr()
    assert j.devices() == {jx.gpu}
    assert np.dtype(j.dtype) == a.dtype and j.shape == (5, 7)
    t2 = cuda_from(a)
    j2 = imp(t2)
    t2.fill_(FILL[name])  # an edit after the import shows through (first read of j2)
    db.cuda.synchronize()
    assert_values(np.asarray(j2), np.full(a.shape, FILL[name], a.dtype))
    assert_values(np.asarray(j), a)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_jax_cuda_to_dlbridge_is_zero_copy_and_read_only(name, jx, rng):
    a = rand_array(rng, name, (5, 7))
    j = jx.jax.device_put(a, jx.gpu)
    d = db.from_dlpack(j)
    assert_on_cuda(d)
    assert dname(d.dtype) == name and d.data_ptr() == j.unsafe_buffer_pointer()
    assert d.is_read_only
    assert_values(d, a)
    with pytest.raises(RuntimeError, match="read-only"):
        d.fill_(FILL[name])
    with pytest.raises(RuntimeError, match="read-only"):
        d.copy_(cuda_from(a))
    if name in NUMERIC_NAMES:  # (complex arithmetic may refuse first, for its own reason)
        with pytest.raises(RuntimeError, match="read-only"):
            d.add_(1)
    assert d.__cuda_array_interface__["data"][1] is True
    assert capsule_info(d.__dlpack__(max_version=(1, 0))).flags & READ_ONLY
    assert_values(np.asarray(j), a)
    k = d.clone()
    assert not k.is_read_only and k.data_ptr() != d.data_ptr()
    assert_values(k, a)


def test_jax_import_with_copy_true_is_writable(jx, rng):
    a = rand_array(rng, "float32", (64,))
    j = jx.jax.device_put(a, jx.gpu)
    d = db.from_dlpack(j, copy=True)
    assert_on_cuda(d)
    assert not d.is_read_only and d.data_ptr() != j.unsafe_buffer_pointer()
    d.add_(1)
    assert_values(d, a + np.float32(1))
    assert_values(np.asarray(j), a)


def test_jax_buffer_stays_alive_while_imported(jx):
    j = jx.jax.device_put(np.arange(4096, dtype=np.float64), jx.gpu)
    addr = j.unsafe_buffer_pointer()
    d = db.from_dlpack(j)
    del j
    collect()
    churn = [jx.jax.device_put(np.full(4096, -1.0), jx.gpu) for _ in range(20)]
    assert all(c.unsafe_buffer_pointer() != addr for c in churn)
    assert d.data_ptr() == addr
    assert d.sum().item() == sum(range(4096))


# =========================================================================== stream ordering


def test_import_waits_for_the_producers_stream(legacy_default):
    """torch writes on a busy non-default stream; dlbridge imports while that stream is
    current (torch makes the legacy stream, which dlbridge names, wait) and reads 5s."""
    x = torch.zeros(1 << 22, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(5.0)
        d = db.from_dlpack(x)
    host = d.cpu().numpy()
    assert (host == 5.0).all(), f"read {np.unique(host)[:5]} before the producer's stream finished"
    torch.cuda.synchronize()


@pytest.mark.parametrize("how", ["torch.from_dlpack(d)", "capsule(stream=s)"])
def test_export_makes_the_consumers_stream_wait(how, legacy_default):
    """dlbridge writes (queued behind a sleep on the legacy stream); torch consumes on its own
    non-blocking stream s and must see the write: dlbridge makes s wait on an event."""
    d = db.zeros(1 << 22, device="cuda")
    db.cuda.synchronize()
    s = torch.cuda.Stream()
    torch.cuda._sleep(SLEEP_CYCLES)  # torch's current stream is the legacy default stream
    d.fill_(7.0)
    with torch.cuda.stream(s):
        if how == "torch.from_dlpack(d)":
            y = torch.from_dlpack(d)  # torch passes s.cuda_stream
        else:
            y = torch.from_dlpack(d.__dlpack__(stream=s.cuda_stream, max_version=(1, 0)))
        out = y.clone()  # read on s
        host = out.cpu()  # copies on s and waits for s only
    assert (host == 7.0).all(), f"read {host.unique()[:5].tolist()} before dlbridge's write"
    torch.cuda.synchronize()


def test_export_to_cupy_on_a_non_blocking_stream_waits(cp):
    spin = cp.RawKernel(r'''
    extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
    }''', "spin")
    d = db.zeros(1 << 22, device="cuda")
    db.cuda.synchronize()
    spin((1,), (1,), (np.int64(SLEEP_CYCLES),), stream=cp.cuda.Stream.null)  # the legacy stream
    d.fill_(7.0)
    with cp.cuda.Stream(non_blocking=True) as cs:
        c = cp.from_dlpack(d)
        out = c.copy()
        host = cp.asnumpy(out, stream=cs)
        cs.synchronize()
    assert (host == 7.0).all()


@pytest.mark.parametrize("stream", ["None", "1", "2", "-1", "torch_stream"])
def test_dlpack_stream_values_accepted(stream, rng):
    if stream == "torch_stream":
        if not torch.cuda.is_available():
            pytest.skip("torch has no CUDA")
        ts = torch.cuda.Stream()  # kept alive for the test
        value = ts.cuda_stream
    else:
        value = None if stream == "None" else int(stream)
    a = rand_array(rng, "float32", (9,))
    t = cuda_from(a)
    for mv in (None, (1, 0)):
        c = t.__dlpack__(stream=value, max_version=mv)
        d = db.from_dlpack(c)
        assert d.data_ptr() == t.data_ptr()
        db.cuda.synchronize()
        assert_values(d, a)


@pytest.mark.parametrize("stream", [0, -2, -7])
def test_dlpack_stream_values_rejected(stream):
    t = db.zeros(3, device="cuda")
    with pytest.raises(ValueError):
        t.__dlpack__(stream=stream)
    with pytest.raises(ValueError):
        t.__dlpack__(stream=stream, max_version=(1, 0))


@pytest.mark.parametrize("stream", [1, 2, -1])
def test_cpu_tensor_rejects_a_stream(stream):
    with pytest.raises(ValueError):
        db.zeros(3).__dlpack__(stream=stream)


# =========================================================================== lifetimes


def test_torch_memory_stays_alive_while_imported(tcuda):
    x = torch.arange(4096, dtype=torch.float64, device="cuda")
    addr = x.data_ptr()
    d = db.from_dlpack(x)
    del x
    collect()
    churn = [torch.full((4096,), -1.0, dtype=torch.float64, device="cuda") for _ in range(20)]
    assert all(c.data_ptr() != addr for c in churn)  # torch did not hand the block out again
    assert d.data_ptr() == addr
    assert d.sum().item() == sum(range(4096))


def test_dlbridge_cuda_memory_exported_to_torch_survives_del(tcuda, no_leak):
    check_export_outlives_tensor(no_leak, torch.from_dlpack, lambda x: x.sum().item())


def test_transfers_and_ops_leave_no_storages(no_leak, rng):
    a = rand_array(rng, "float32", (64, 33))
    for _ in range(50):
        c = db.from_numpy(a).to("cuda")
        (c + c).cpu()
        c.T.contiguous().numpy(force=True)
        db.from_dlpack(c, device="cpu")
        db.from_dlpack(c.__dlpack__(dl_device=(1, 0)))
        c.__dlpack__(max_version=(1, 0))  # dropped unconsumed: the capsule's destructor frees it
        c.__dlpack__(max_version=(1, 0), copy=True)
        c.sum().item()
        c[:, ::2].fill_(1)
        c.to(db.float16).clone()
    del c


def test_ten_thousand_exchanges_do_not_leak(tcuda, no_leak):
    t = db.ones(256, device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for _ in range(10_000):
        x = torch.from_dlpack(t)
        db.from_dlpack(x)
        db.from_dlpack(torch.empty(256, device="cuda"))  # the torch tensor must be released
        t.__dlpack__(max_version=(1, 0))
    del x
    collect()
    assert torch.cuda.memory_allocated() == before
    assert t.sum().item() == 256
    del t


def test_eight_threads_hammering_shared_cuda_tensors_stay_correct(tcuda):
    """Issue 5's thread hammer on the GPU: exchange both ways with torch, kernels,
    and transfers both ways, from 8 threads on shared tensors for 3 s."""
    cols = 4096
    counts = db.zeros(8, cols, dtype=db.int64, device=DEV)  # each thread adds to its own row
    host = db.from_numpy(np.arange(cols, dtype=np.float32))
    shared = host.cuda()
    tt = torch.arange(cols, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()

    def step():
        assert (shared + shared)[cols - 1].item() == 2 * (cols - 1)
        assert torch.from_dlpack(shared)[3].item() == 3.0  # exchange out
        assert db.from_dlpack(tt)[5].item() == 5.0  # exchange in
        assert shared.cpu()[7].item() == 7.0  # device to host
        assert host.cuda()[9].item() == 9.0  # host to device
        assert shared.sum().item() == pytest.approx(cols * (cols - 1) / 2)

    hammer(counts, step)
    np.testing.assert_array_equal(shared.cpu().numpy(), np.arange(cols, dtype=np.float32))


def test_ten_thousand_transfers_leak_nothing():
    """Issue 5's GPU leak test: 10,000 rounds of host-to-device and device-to-host
    transfers (every tenth through the pinned staging ring) leave dlbridge's live
    storage count where it was and grow resident memory by under 1 MiB."""
    small = db.from_numpy(np.arange(256, dtype=np.float32))
    big = db.from_numpy(np.arange(1 << 19, dtype=np.float32))  # 2 MiB: the staging path

    def trip(i):
        src = big if i % 10 == 0 else small
        on_gpu = src.cuda()
        back = on_gpu.cpu()
        also = on_gpu.numpy(force=True)
        if i % 1000 == 0:
            assert np.array_equal(back.numpy(), src.numpy())
            assert np.array_equal(also, src.numpy())

    for i in range(1000):  # warm-up: memory pool, staging ring, caches
        trip(i)
    collect()
    live, rss = db._core.live_storages(), rss_kib()
    for i in range(10_000):
        trip(i)
    db.cuda.synchronize()
    collect()
    assert db._core.live_storages() == live
    grown = rss_kib() - rss
    if not ASAN_RUNTIME:  # ASan's quarantine holds freed memory back
        assert grown < 1024, f"RSS grew by {grown} KiB over 10,000 transfer rounds"


def test_allocate_free_loop_reuses_memory(tcuda, no_leak):
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info()
    n = free // 3
    for i in range(12):  # a leak of any block runs out of memory by the fourth round
        t = db.empty(n, dtype=db.uint8, device="cuda")
        t[:: 1 << 20].fill_(i)
        del t
    db.cuda.synchronize()


# =========================================================================== errors


def test_out_of_memory_raises_with_the_size(no_leak):
    n = 2**45  # 32 TiB
    with pytest.raises(RuntimeError) as e:
        db.empty(n, dtype=db.uint8, device="cuda")
    msg = str(e.value)
    assert "out of memory" in msg.lower(), msg
    assert any(s in msg for s in (str(n), f"{n:,}", "32.00 TiB", "32.0 TiB", "32 TiB", "35.18 TB", "32768.00 GiB")), msg
    assert db.ones(10, device="cuda").sum().item() == 10  # the device is still usable


def test_invalid_device_ordinal():
    t = db.ones(2)
    for f in (lambda: t.to("cuda:99"), lambda: t.cuda(99), lambda: db.zeros(2, device="cuda:99"),
              lambda: db.tensor([1.0], device=db.device("cuda", 99))):
        with pytest.raises(RuntimeError, match="(?i)invalid device ordinal"):
            f()


def test_mixing_devices_in_an_op_raises():
    c, h = db.ones(3, device="cuda"), db.ones(3)
    for f in (lambda: c + h, lambda: h + c, lambda: c * h, lambda: h / c, lambda: c.add_(h),
              lambda: h.mul_(c), lambda: c.sub_(h)):
        with pytest.raises(RuntimeError, match=MIXED):
            f()
    assert c.tolist() == [1.0] * 3 and h.tolist() == [1.0] * 3


@pytest.mark.parametrize("name", COMPLEX_NAMES)
def test_complex_tensors_move_copy_and_fill_on_cuda(name, rng):
    a = rand_array(rng, name, (6, 8))
    c = cuda_from(a)
    assert_on_cuda(c)
    assert_values(c, a)
    assert_values(c.clone(), a)
    assert_values(c.T.contiguous(), np.ascontiguousarray(a.T))
    assert_values(c[::2, 1::3].cpu(), a[::2, 1::3])
    d = db.empty((6, 8), dtype=getattr(db, name), device="cuda")
    d.copy_(c)
    assert_values(d, a)
    d[:, ::2].fill_(FILL[name])
    expected = a.copy()
    expected[:, ::2] = FILL[name]
    assert_values(d, expected)
    if torch.cuda.is_available():
        x = torch.from_dlpack(c)
        assert x.data_ptr() == c.data_ptr()
        assert_values(x, a)


@pytest.mark.parametrize("name", COMPLEX_NAMES)
def test_complex_arithmetic_and_casts_on_cuda_raise_not_implemented(name):
    c = db.ones(4, dtype=getattr(db, name), device="cuda")
    r = db.ones(4, device="cuda")
    other = "complex128" if name == "complex64" else "complex64"
    for f in (lambda: c + c, lambda: c * 2, lambda: 2 - c, lambda: c / c, lambda: -c, lambda: c.sum(),
              lambda: c.mean(), lambda: c.add_(1), lambda: c.to(db.float32), lambda: c.to(getattr(db, other)),
              lambda: r.to(getattr(db, name)), lambda: r + 1j, lambda: r * c):
        with pytest.raises(NotImplementedError):
            f()
    assert c.tolist() == [1 + 0j] * 4


# =========================================================================== several GPUs

two_gpus = pytest.mark.skipif(db.cuda.device_count() < 2, reason="needs two CUDA devices")


@two_gpus
def test_to_the_second_gpu_and_back(rng):
    a = rand_array(rng, "float32", (5, 7))
    for to1 in (lambda t: t.to("cuda:1"), lambda t: t.cuda(1), lambda t: t.to(db.device("cuda", 1)),
                lambda t: db.from_dlpack(t, device="cuda:1")):
        for src in (db.from_numpy(a), cuda_from(a)):
            g = to1(src)
            assert_on_cuda(g, 1)
            assert g.__dlpack_device__() == (2, 1)
            assert_values(g, a)
            assert_values(g.to("cuda:0"), a)
    z = db.zeros(3, device="cuda:1")
    assert_on_cuda(z, 1)
    assert_values(z + 1, np.ones(3, np.float32))
    db.cuda.synchronize(1)


@two_gpus
def test_cross_device_copy_(rng):
    a = rand_array(rng, "float64", (6, 10))
    c0 = cuda_from(a)
    c1 = db.empty((6, 10), dtype=db.float64, device="cuda:1")
    c1.copy_(c0)
    assert_values(c1, a)
    c1b = db.full((6, 10), float("nan"), dtype=db.float64, device="cuda:1")
    c1b[:, ::2].copy_(c0[:, 1::2])
    h = values_of(c1b)
    assert_values(h[:, ::2], a[:, 1::2])
    assert np.isnan(h[:, 1::2]).all()
    back = db.zeros((6, 10), dtype=db.float32, device="cuda:0")
    back.copy_(c1)  # cross-device with a cast
    assert_values(back, a.astype(np.float32))


@two_gpus
def test_ops_across_gpus_raise():
    a, b = db.ones(3, device="cuda:0"), db.ones(3, device="cuda:1")
    for f in (lambda: a + b, lambda: b * a, lambda: a.add_(b)):
        with pytest.raises(RuntimeError, match=MIXED):
            f()


@two_gpus
def test_torch_tensor_on_the_second_gpu_both_ways(tcuda):
    with torch.cuda.device(1):  # torch exports only from its current device
        x = torch.arange(6.0, device="cuda:1")
        d = db.from_dlpack(x)
    assert_on_cuda(d, 1)
    assert d.__dlpack_device__() == (2, 1) and d.data_ptr() == x.data_ptr()
    assert d.tolist() == x.tolist()
    t = db.arange(6.0, device="cuda:1")
    y = torch.from_dlpack(t)
    assert y.device == torch.device("cuda", 1) and y.data_ptr() == t.data_ptr()
    assert y.tolist() == t.tolist()
