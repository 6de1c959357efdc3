"""examples/pyo3-scale on CUDA tensors: another crate's extension, through dlbridge's pyo3
layer, computing on torch's and CuPy's GPU memory (the CPU cases: test_pyo3_example.py;
the module comes from the `ext` fixture of tests/python/conftest.py)."""

import numpy as np
import torch


def test_scale_of_a_torch_cuda_tensor_stays_on_the_gpu(ext, tcuda):
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    out = ext.scale(x, 2.0)
    assert out.device == "cuda:0" and out.__dlpack_device__() == (2, 0)
    y = torch.from_dlpack(out)
    assert y.is_cuda
    torch.testing.assert_close(y, x * 2)


def test_scale_inplace_edits_torch_cuda_memory_after_pending_work(ext, tcuda):
    # Work queued on torch's current stream must land before dlbridge's kernel reads x:
    # the import asks the producer to order its stream before dlbridge's (stream=1).
    x = torch.zeros(1 << 20, device="cuda")
    x.add_(1.0)
    ptr = x.data_ptr()
    ext.scale_(x, 3.0)
    assert x.data_ptr() == ptr
    torch.cuda.synchronize()
    assert torch.all(x == 3.0).item()


def test_scale_of_cupy_arrays_both_ways(ext, cp):
    a = cp.arange(10, dtype=cp.float64)
    out = cp.from_dlpack(ext.scale(a, 0.5))
    np.testing.assert_array_equal(cp.asnumpy(out), np.arange(10) * 0.5)
    ext.scale_(a, 2.0)
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cp.asnumpy(a), np.arange(10) * 2.0)
