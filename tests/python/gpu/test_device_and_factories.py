"""The device itself (dlbridge.cuda, device attributes, repr, NVRTC diagnostics) and the
factories on CUDA."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, NP_DTYPE
from .conftest import CUDA0, DEV, FILL, assert_on_cuda, assert_values


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
