"""Several GPUs (skipped with fewer than two)."""

import numpy as np
import pytest
import torch

import dlbridge as db
from .conftest import MIXED, assert_on_cuda, assert_values, cuda_from, rand_array, values_of


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
