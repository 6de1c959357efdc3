"""PyTorch habits on CUDA tensors, against torch on the same GPU: advanced
indexing (which runs through host memory), all/any, argmax/argmin,
squeeze/mT/mH, as_tensor/asarray and foreign device objects."""

import numpy as np
import pytest
import torch

import dlbridge as db


def same(d, t):
    assert tuple(d.shape) == tuple(t.shape)
    assert d.device.type == "cuda"
    np.testing.assert_array_equal(d.cpu().numpy(), t.cpu().numpy())


@pytest.fixture
def twins():
    t = torch.arange(24, device="cuda").reshape(2, 3, 4)
    return db.from_dlpack(t.clone()), t


@pytest.mark.parametrize(
    "key",
    [[1, 0], (slice(None), [2, 0]), ([0, 1], slice(None), [1, 2]), (0, slice(None), [3, 0])],
    ids=repr,
)
def test_index_read_and_write(twins, key):
    d, t = twins
    same(d[key], t[key])
    d[key] = -1
    t[key] = -1
    same(d, t)


def test_mask_read_and_write(twins):
    d, t = twins
    same(d[d > 5], t[t > 5])
    d[d > 5] = 0
    t[t > 5] = 0
    same(d, t)


def test_index_error_on_cuda(twins):
    d, _ = twins
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        d[[5]]


def test_reductions_and_views(twins):
    d, t = twins
    f, tf = d.float(), t.float()
    for name, args in [("all", ()), ("any", (1,)), ("argmax", ()), ("argmin", (2, True))]:
        same(getattr(f, name)(*args), getattr(tf, name)(*args))
    same(d[:1].squeeze(0), t[:1].squeeze(0))
    same(d.mT, t.mT)


def test_as_tensor_keeps_cuda_memory_and_reads_torch_devices():
    x = torch.arange(4, device="cuda")
    d = db.as_tensor(x)
    assert d.data_ptr() == x.data_ptr()
    assert db.as_tensor(x, device=torch.device("cuda:0")).data_ptr() == x.data_ptr()
    assert db.asarray(np.arange(3), device="cuda").device.type == "cuda"
