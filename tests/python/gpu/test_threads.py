"""Threads: shared CUDA tensors hammered from eight threads stay correct."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import hammer
from .conftest import DEV


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
