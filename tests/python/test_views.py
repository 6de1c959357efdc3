"""Shape-only view ops against real PyTorch: T, t, transpose, permute,
unsqueeze, expand, view, reshape, flatten. Each result must equal torch's
(values, shape, strides), and a view must share memory with its base."""

import numpy as np
import pytest
import torch

import dlbridge as db


def pair(shape=(2, 3, 4)):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return db.from_numpy(a.copy()), torch.from_numpy(a.copy())


def same(d, t):
    assert tuple(d.shape) == tuple(t.shape)
    assert d.stride() == t.stride()
    np.testing.assert_array_equal(d.numpy(), t.numpy())


CASES = {
    "T": lambda x: x.T,
    "t 2d": lambda x: x[0].t(),
    "transpose(0,2)": lambda x: x.transpose(0, 2),
    "transpose(-1,0)": lambda x: x.transpose(-1, 0),
    "permute(2,0,1)": lambda x: x.permute(2, 0, 1),
    "permute((1,2,0))": lambda x: x.permute((1, 2, 0)),
    "unsqueeze(0)": lambda x: x.unsqueeze(0),
    "unsqueeze(-1)": lambda x: x.unsqueeze(-1),
    "unsqueeze(2)": lambda x: x.unsqueeze(2),
    "expand": lambda x: x[:, :1, :].expand(2, 5, 4),
    "expand(-1) + leading": lambda x: x[:1].expand(3, -1, -1, -1),
    "view(6,4)": lambda x: x.view(6, 4),
    "view(-1)": lambda x: x.view(-1),
    "view((4,-1))": lambda x: x.view((4, -1)),
    "view of transposed split": lambda x: x[0].t().view(2, 2, 3),
    "reshape copy": lambda x: x.transpose(0, 1).reshape(-1),
    "reshape view": lambda x: x.reshape(3, 8),
    "flatten": lambda x: x.flatten(),
    "flatten(1)": lambda x: x.flatten(1),
    "flatten(0,1)": lambda x: x.flatten(0, 1),
    "strided view": lambda x: x[:, ::2].reshape(2, -1),
}


@pytest.mark.filterwarnings("ignore:The use of `x.T`")
@pytest.mark.parametrize("op", list(CASES.values()), ids=list(CASES))
def test_views_match_torch(op):
    d, t = pair()
    same(op(d), op(t))


@pytest.mark.parametrize("op", ["T", "transpose(0,2)", "permute(2,0,1)", "unsqueeze(2)", "expand", "view(6,4)"])
def test_views_share_memory(op):
    d, _ = pair()
    v = CASES[op](d)
    assert np.shares_memory(v.numpy(), d.numpy())
    if op != "expand":
        v.fill_(-1)  # writing through the view writes the base
        assert (d.numpy() == -1).all()


def test_reshape_copies_only_when_it_must():
    d, _ = pair()
    assert np.shares_memory(d.reshape(4, 6).numpy(), d.numpy())
    assert not np.shares_memory(d.transpose(0, 1).reshape(-1).numpy(), d.numpy())


@pytest.mark.parametrize(
    "op,exc,match",
    [
        (lambda x: x.view(5, -1), RuntimeError, r"shape '\[5, -1\]' is invalid for input of size 24"),
        (lambda x: x.view(-1, -1), RuntimeError, "only one dimension can be inferred"),
        (lambda x: x.transpose(0, 1).view(-1), RuntimeError, "view size is not compatible"),
        (lambda x: x.permute(0, 0, 1), RuntimeError, "duplicate dims"),
        (lambda x: x.permute(0, 1), RuntimeError, "number of dimensions"),
        (lambda x: x.transpose(0, 3), IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"),
        (lambda x: x.unsqueeze(4), IndexError, "Dimension out of range"),
        (lambda x: x.t(), RuntimeError, r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
        (lambda x: x.expand(4, 3), RuntimeError, "number of sizes provided"),
        (lambda x: x.expand(3, 3, 4), RuntimeError, "must match"),
    ],
)
def test_view_errors_match_torch(op, exc, match):
    d, t = pair()
    with pytest.raises(exc, match=match):
        op(d)
    with pytest.raises(Exception):
        op(t)  # torch refuses the same request


def test_views_keep_requires_grad_and_zero_dim_cases():
    x = db.ones(2, 3)
    x.requires_grad = True
    assert x.T.requires_grad and x.view(6).requires_grad
    s = db.tensor(5.0)
    assert s.t().shape == () and s.view(1).shape == (1,) and s.unsqueeze(0).shape == (1,)
    assert s.flatten().shape == (1,) and s.reshape(()).shape == ()
