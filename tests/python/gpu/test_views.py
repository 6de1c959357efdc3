"""Views of CUDA tensors share memory; item() and tolist() on CUDA."""

import numpy as np
import pytest

from conftest import DTYPE_NAMES
from .conftest import assert_on_cuda, assert_values, cuda_from, diff, rand_array, wide


def test_views_of_cuda_tensors_share_memory(rng):
    a = rand_array(rng, "float64", (4, 6))
    t = cuda_from(a)
    base = t.data_ptr()
    cases = {  # name: (view, NumPy view, first element address, strides)
        "t[::2]": (t[::2], a[::2], base, (12, 1)),
        "t[:, 1]": (t[:, 1], a[:, 1], base + 8, (6,)),
        "t[1:, 2:5]": (t[1:, 2:5], a[1:, 2:5], base + 8 * 8, (6, 1)),
        "t.T": (t.T, a.T, base, (1, 6)),
        "t.t()": (t.t(), a.T, base, (1, 6)),
        "t.transpose(0, 1)": (t.transpose(0, 1), a.T, base, (1, 6)),
        "t.view(6, 4)": (t.view(6, 4), a.reshape(6, 4), base, (4, 1)),
        "t.reshape(3, 8)": (t.reshape(3, 8), a.reshape(3, 8), base, (8, 1)),
        "t.unsqueeze(1)": (t.unsqueeze(1), a[:, None], base, (6, 6, 1)),
        "t[:, :1].expand(4, 5)": (t[:, :1].expand(4, 5), np.broadcast_to(a[:, :1], (4, 5)), base, (6, 0)),
        "permute": (t.view(2, 2, 6).permute(2, 0, 1), a.reshape(2, 2, 6).transpose(2, 0, 1), base, (1, 12, 6)),
    }
    for name, (v, ref, addr, strides) in cases.items():
        assert_on_cuda(v)
        assert v.shape == ref.shape, name
        assert v.stride() == strides, name
        assert v.data_ptr() == addr, name
        assert v.is_contiguous() == ref.flags.c_contiguous, name
        problem = diff(v, np.ascontiguousarray(ref))
        assert problem is None, (name, problem)
    r = t.T.reshape(24)  # not viewable: a copy
    assert r.data_ptr() != base
    assert_values(r, a.T.reshape(24))
    assert t[1, 2].item() == a[1, 2]
    assert t.tolist() == a.tolist()
    assert t[:, 1].tolist() == a[:, 1].tolist()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_item_and_tolist_on_cuda(name, rng):
    a = rand_array(rng, name, (3, 4))
    c = cuda_from(a)
    ref = wide(a) if name == "bfloat16" else a
    assert c.tolist() == ref.tolist()
    assert c[2, 1].item() == ref[2, 1].item()
    assert c[:, 2].tolist() == ref[:, 2].tolist()
