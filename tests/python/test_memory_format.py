"""New tensors made from others get the strides PyTorch gives them
(`preserve_format`): `clone()`, `.to(dtype)` and elementwise ops keep a
transpose transposed and a permuted layout permuted, against torch side by
side over many layouts."""

import itertools

import numpy as np
import pytest
import torch

import dlbridge as db


def layouts():
    """torch tensors in the layouts users make: permuted, sliced, expanded,
    with size-1 and size-0 dimensions, 0-dim, overlapping."""
    base = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)
    out = {"contiguous": base, "0-dim": torch.tensor(5.0), "1-d step": torch.arange(10.0)[::3]}
    for perm in itertools.permutations(range(3)):
        out[f"permute{perm}"] = base.permute(perm)
    out["transpose"] = torch.arange(12.0).reshape(3, 4).T
    out["sliced transpose"] = torch.arange(24.0).reshape(6, 4).T[:, ::2]
    out["every other"] = torch.arange(48.0).reshape(6, 8)[::2, ::2]
    out["expanded"] = torch.arange(4.0).expand(3, 4)
    out["expanded middle"] = torch.arange(6.0).reshape(2, 1, 3).expand(2, 4, 3)
    out["size-1 permuted"] = torch.arange(12.0).reshape(3, 1, 4).permute(2, 1, 0)
    out["size-1 odd stride"] = torch.arange(12.0).as_strided((3, 1, 4), (4, 100, 1))
    out["size-0 transposed"] = torch.empty(0, 3).T
    out["column"] = torch.arange(12.0).reshape(4, 3)[:, 1:2]
    out["channels last"] = torch.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5).to(memory_format=torch.channels_last)
    out["overlapping"] = torch.arange(10.0).as_strided((4, 3), (2, 1))
    return out


LAYOUTS = layouts()


def check(d, t):
    d = torch.from_dlpack(d)
    assert d.shape == t.shape and d.dtype == t.dtype
    assert d.stride() == t.stride(), (d.stride(), t.stride())
    torch.testing.assert_close(d, t, equal_nan=True)  # exp within an ulp of torch


@pytest.mark.parametrize("name", LAYOUTS)
def test_copies_and_casts_keep_torch_strides(name):
    t = LAYOUTS[name]
    d = db.from_dlpack(t)
    check(d.clone(), t.clone())
    check(d.to(db.float64), t.to(torch.float64))
    check(d.to(db.float16), t.to(torch.float16))
    check(d.to(db.int32), t.to(torch.int32))
    check(d.double(), t.double())
    check(d.to(db.float32, copy=True), t.to(torch.float32, copy=True))
    # contiguous() stays contiguous.
    check(d.contiguous(), t.contiguous())


@pytest.mark.parametrize("name", LAYOUTS)
def test_like_functions_keep_torch_strides(name):
    t = LAYOUTS[name]
    d = db.from_dlpack(t)
    check(db.zeros_like(d), torch.zeros_like(t))
    check(db.ones_like(d, dtype=db.int16), torch.ones_like(t, dtype=torch.int16))
    check(db.full_like(d, 7), torch.full_like(t, 7))
    assert db.empty_like(d).stride() == torch.empty_like(t).stride()


@pytest.mark.parametrize("name", LAYOUTS)
def test_elementwise_results_keep_torch_strides(name):
    t = LAYOUTS[name]
    d = db.from_dlpack(t)
    check(-d, -t)
    check(d.abs(), t.abs())
    check(d.exp(), t.exp())
    check(d + 1, t + 1)
    check(2 * d, 2 * t)
    check(d < 3, t < 3)
    check(d + d, t + t)
    check(d.to(db.int64) + d, t.to(torch.int64) + t)  # a cast operand
    if t.dim():
        c = torch.arange(t.shape[-1], dtype=torch.float32)  # broadcast on the right
        check(d + db.from_dlpack(c), t + c)
        check(db.from_dlpack(c) * d, c * t)
        full = torch.ones(t.shape)  # contiguous on the right: the left decides
        check(d - db.from_dlpack(full), t - full)
        check(db.from_dlpack(full) - d, full - t)
        check(db.maximum(d, db.from_dlpack(full)), torch.maximum(t, full))


def test_a_transposed_cast_is_one_contiguous_pass_over_its_memory():
    # The result's memory is the input's memory, cast in order.
    t = torch.arange(6.0).reshape(2, 3).T
    d = db.from_dlpack(t).to(db.float16)
    flat = torch.from_dlpack(d).as_strided((6,), (1,))
    assert flat.tolist() == t.as_strided((6,), (1,)).tolist()


# Pairs without a loop of their own in src/cpu/cast.rs: the generic
# element cast, split across threads past 2^16 elements.
GENERIC_PAIRS = [("bool", "float64"), ("uint8", "float32"), ("int8", "float16"), ("int16", "int64"),
                 ("float32", "uint8"), ("float64", "bool"), ("complex64", "complex128")]


@pytest.mark.parametrize("src,dst", GENERIC_PAIRS)
def test_long_casts_of_the_other_pairs_match_torch_in_every_piece(src, dst):
    # 2^16 * 3 + 7 elements, so the pieces and their ends differ; each
    # element its own value, so a piece written at the wrong place shows.
    n = (1 << 16) * 3 + 7
    t = (torch.arange(n, dtype=torch.float64) % 251 - 120).to(getattr(torch, src))
    for view in (t, t.reshape(5, -1).T):  # contiguous, and a transpose cast in its memory order
        got = torch.from_dlpack(db.from_dlpack(view).to(getattr(db, dst)))
        want = view.to(getattr(torch, dst))
        assert got.stride() == want.stride()
        assert torch.equal(got, want)


def test_negative_numpy_strides_give_a_dense_copy():
    # NumPy's reversed views have negative strides, which torch cannot hold:
    # the new tensor is dense, with the same values.
    a = np.arange(12.0).reshape(3, 4)[::-1, ::-1].T
    d = db.from_numpy(a)
    for got, want in [(d.clone(), a), (d.to(db.float32), a.astype(np.float32)), (d + 1, a + 1), (-d, -a)]:
        assert np.array_equal(got.numpy(), want)
        assert sorted(got.stride()) == [1, 3]
