"""Zero-copy exchange with PyTorch in both directions, through DLPack."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, collect, other_value, sample


def torch_sample(name, shape=(2, 3)):
    """`sample` as a torch tensor (bfloat16 through float32, which numpy->torch lacks)."""
    if name == "bfloat16":
        return torch.from_numpy(sample("float32", shape)).to(torch.bfloat16)
    return torch.from_numpy(sample(name, shape).copy())


def as_list(x):
    """Values of a torch or dlbridge tensor as a nested list (bfloat16 via float)."""
    if x.dtype in (torch.bfloat16, db.bfloat16):
        x = x.float()
    return x.tolist()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlbridge_to_torch_shares_memory(name):
    t = db.from_numpy(sample(name))
    tt = torch.from_dlpack(t)
    assert tt.dtype == getattr(torch, name)
    assert tt.data_ptr() == t.data_ptr()
    assert tuple(tt.shape) == t.shape
    assert tt.stride() == t.stride()
    assert as_list(tt) == as_list(t)
    tt[0, 0] = other_value(name)
    assert t[0, 0].item() == other_value(name)
    t[1, 2] = other_value(name)
    assert tt[1, 2].item() == other_value(name)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_torch_to_dlbridge_shares_memory(name):
    tt = torch_sample(name)
    t = db.from_dlpack(tt)
    assert t.dtype is getattr(db, name)
    assert t.data_ptr() == tt.data_ptr()
    assert t.stride() == tt.stride()
    assert as_list(t) == as_list(tt)
    assert not t.is_read_only
    t[0, 1] = other_value(name)
    assert tt[0, 1].item() == other_value(name)
    tt[1, 0] = other_value(name)
    assert t[1, 0].item() == other_value(name)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_torch_round_trip_through_dlbridge(name):
    tt = torch_sample(name)
    back = torch.from_dlpack(db.from_dlpack(tt))
    assert back.dtype == tt.dtype
    assert back.data_ptr() == tt.data_ptr()
    assert torch.equal(back, tt)


def test_in_place_ops_visible_across():
    tt = torch.zeros(5)
    t = db.from_dlpack(tt)
    t.add_(1)
    assert tt.tolist() == [1.0] * 5
    tt.mul_(3)
    assert t.tolist() == [3.0] * 5
    t += 1
    assert tt.tolist() == [4.0] * 5


TORCH_VIEWS = {
    "transposed": lambda: torch.arange(24.0).reshape(4, 6).t(),
    "stepped": lambda: torch.arange(24.0).reshape(4, 6)[::2, 1::2],
    "column": lambda: torch.arange(24.0).reshape(4, 6)[:, 3],
    "offset": lambda: torch.arange(24.0)[5:17],
    "permuted_3d": lambda: torch.arange(60.0).reshape(3, 4, 5).permute(2, 0, 1),
    "expanded": lambda: torch.arange(3.0).expand(4, 3),
}


@pytest.mark.parametrize("make", TORCH_VIEWS.values(), ids=TORCH_VIEWS.keys())
def test_torch_views_into_dlbridge(make):
    tt = make()
    t = db.from_dlpack(tt)
    assert t.shape == tuple(tt.shape)
    assert t.data_ptr() == tt.data_ptr()
    assert t.tolist() == tt.tolist()
    assert t.is_contiguous() == tt.is_contiguous()
    if tt.numel() == len(set(tt.flatten().tolist())):  # no aliasing: strides are canonical
        assert t.stride() == tt.stride()


DB_VIEWS = {
    "column": lambda: db.from_numpy(np.arange(24.0).reshape(4, 6))[:, 3],
    "stepped": lambda: db.from_numpy(np.arange(24.0).reshape(4, 6))[::2, 1::2],
    "transposed": lambda: db.from_numpy(np.arange(24.0).reshape(4, 6).T),
    "offset": lambda: db.arange(24)[5:17],
}


@pytest.mark.parametrize("make", DB_VIEWS.values(), ids=DB_VIEWS.keys())
def test_dlbridge_views_into_torch(make):
    t = make()
    tt = torch.from_dlpack(t)
    assert tuple(tt.shape) == t.shape
    assert tt.stride() == t.stride()
    assert tt.data_ptr() == t.data_ptr()
    assert tt.tolist() == t.tolist()
    tt.zero_()
    assert t.sum().item() == 0


def test_zero_d_both_ways():
    tt = torch.tensor(2.5)
    t = db.from_dlpack(tt)
    assert t.shape == () and t.item() == 2.5
    t.fill_(4.0)
    assert tt.item() == 4.0
    back = torch.from_dlpack(db.tensor(7))
    assert back.shape == () and back.item() == 7 and back.dtype == torch.int64


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)], ids=str)
def test_empty_both_ways(shape):
    t = db.from_dlpack(torch.zeros(shape))
    assert t.shape == shape and t.numel() == 0
    tt = torch.from_dlpack(db.zeros(*shape))
    assert tuple(tt.shape) == shape and tt.numel() == 0


def test_high_rank_both_ways():
    tt = torch.arange(256.0).reshape((2,) * 8)
    t = db.from_dlpack(tt)
    assert t.shape == (2,) * 8
    assert t.stride() == tt.stride()
    assert torch.from_dlpack(t).tolist() == tt.tolist()


def test_torch_from_dlpack_keeps_dlbridge_memory_alive(no_leak):
    base = no_leak
    t = db.arange(1000, dtype=db.float64)
    tt = torch.from_dlpack(t)
    del t
    collect()
    assert db._core.live_storages() == base + 1
    assert tt.sum().item() == sum(range(1000))
    del tt
    collect()
    assert db._core.live_storages() == base


def test_dlbridge_from_torch_keeps_torch_memory_alive():
    tt = torch.arange(1000, dtype=torch.float64)
    addr = tt.data_ptr()
    t = db.from_dlpack(tt)
    del tt
    collect()
    churn = [torch.full((1000,), -1.0, dtype=torch.float64) for _ in range(20)]
    assert t.data_ptr() == addr
    assert t.sum().item() == sum(range(1000))
    del churn


def test_requires_grad_torch_tensor_follows_the_path_torch_offers():
    tt = torch.ones(3, requires_grad=True)
    # torch's C exchange table (what dlbridge uses when torch has one) would export
    # tensors that require grad, which its __dlpack__ refuses: dlbridge refuses them
    # on every path, as torch's __dlpack__ does (issue 21).
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        db.from_dlpack(tt)
    with pytest.raises((RuntimeError, BufferError)):
        db.from_dlpack(tt.__dlpack__(max_version=(1, 0)))
    assert db.from_dlpack(tt.detach()).tolist() == [1.0, 1.0, 1.0]


def test_values_of_float_data_match_torch():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((50, 40)).astype(np.float32)
    t = db.from_numpy(a)
    tt = torch.from_dlpack(t)
    assert torch.equal(tt, torch.from_numpy(a))

