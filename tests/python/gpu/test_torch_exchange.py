"""Zero-copy exchange with PyTorch's CUDA tensors, both ways."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, is_capsule
from .conftest import FILL, assert_on_cuda, assert_values, cuda_from, dname, rand_array


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
