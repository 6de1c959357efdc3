"""Pickling CUDA tensors (issue 13): through host memory, back on the same device index,
as PyTorch's pickles do; copy.copy shares the device memory, deepcopy copies on the device."""

import copy
import pickle

import numpy as np
import pytest

import dlbridge as db


@pytest.mark.parametrize("protocol", [2, 5])
def test_a_cuda_tensor_comes_back_on_its_device(protocol):
    t = db.arange(12, dtype=db.float32).reshape(3, 4).cuda()
    buffers = []
    data = pickle.dumps(t, protocol=protocol, buffer_callback=buffers.append if protocol == 5 else None)
    r = pickle.loads(data, buffers=buffers)
    assert r.device == t.device and r.dtype == t.dtype and r.shape == t.shape
    assert r.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(r.cpu().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))


def test_a_cuda_view_keeps_its_strides_and_grad():
    t = db.arange(24.0, device="cuda").reshape(4, 6).T
    t.requires_grad_()
    r = pickle.loads(pickle.dumps(t, protocol=5))
    assert r.requires_grad and r.device == t.device
    assert r.cpu().tolist() == t.cpu().tolist()


def test_a_cuda_tensor_on_a_second_device_comes_back_there():
    if db.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    t = db.ones(3, device="cuda:1")
    assert pickle.loads(pickle.dumps(t)).device == db.device("cuda:1")


def test_copy_and_deepcopy_on_cuda():
    t = db.zeros(4, device="cuda")
    c = copy.copy(t)
    assert c.data_ptr() == t.data_ptr()
    d = copy.deepcopy(t)
    assert d.device == t.device and d.data_ptr() != t.data_ptr()
    d.add_(1)
    assert t.cpu().tolist() == [0.0] * 4
