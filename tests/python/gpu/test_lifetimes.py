"""Lifetimes and leaks: memory stays alive while shared, and is released exactly once;
long loops of transfers, exchanges and allocations leak nothing."""

import numpy as np
import torch

import dlbridge as db
from conftest import ASAN_RUNTIME, collect, rss_kib
from .conftest import check_export_outlives_tensor, rand_array


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
