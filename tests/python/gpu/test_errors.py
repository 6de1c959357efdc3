"""Errors: out of memory, invalid device ordinals, mixed devices, complex tensors."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import COMPLEX_NAMES
from .conftest import FILL, MIXED, assert_on_cuda, assert_values, cuda_from, rand_array


def test_out_of_memory_raises_with_the_size(no_leak):
    n = 2**45  # 32 TiB
    with pytest.raises(RuntimeError) as e:
        db.empty(n, dtype=db.uint8, device="cuda")
    msg = str(e.value)
    assert "out of memory" in msg.lower(), msg
    assert any(s in msg for s in (str(n), f"{n:,}", "32.00 TiB", "32.0 TiB", "32 TiB", "35.18 TB", "32768.00 GiB")), msg
    assert db.ones(10, device="cuda").sum().item() == 10  # the device is still usable


def test_invalid_device_ordinal():
    t = db.ones(2)
    for f in (lambda: t.to("cuda:99"), lambda: t.cuda(99), lambda: db.zeros(2, device="cuda:99"),
              lambda: db.tensor([1.0], device=db.device("cuda", 99))):
        with pytest.raises(RuntimeError, match="(?i)invalid device ordinal"):
            f()


def test_mixing_devices_in_an_op_raises():
    c, h = db.ones(3, device="cuda"), db.ones(3)
    for f in (lambda: c + h, lambda: h + c, lambda: c * h, lambda: h / c, lambda: c.add_(h),
              lambda: h.mul_(c), lambda: c.sub_(h)):
        with pytest.raises(RuntimeError, match=MIXED):
            f()
    assert c.tolist() == [1.0] * 3 and h.tolist() == [1.0] * 3


@pytest.mark.parametrize("name", COMPLEX_NAMES)
def test_complex_tensors_move_copy_and_fill_on_cuda(name, rng):
    a = rand_array(rng, name, (6, 8))
    c = cuda_from(a)
    assert_on_cuda(c)
    assert_values(c, a)
    assert_values(c.clone(), a)
    assert_values(c.T.contiguous(), np.ascontiguousarray(a.T))
    assert_values(c[::2, 1::3].cpu(), a[::2, 1::3])
    d = db.empty((6, 8), dtype=getattr(db, name), device="cuda")
    d.copy_(c)
    assert_values(d, a)
    d[:, ::2].fill_(FILL[name])
    expected = a.copy()
    expected[:, ::2] = FILL[name]
    assert_values(d, expected)
    if torch.cuda.is_available():
        x = torch.from_dlpack(c)
        assert x.data_ptr() == c.data_ptr()
        assert_values(x, a)


@pytest.mark.parametrize("name", COMPLEX_NAMES)
def test_complex_arithmetic_and_casts_on_cuda_raise_not_implemented(name):
    c = db.ones(4, dtype=getattr(db, name), device="cuda")
    r = db.ones(4, device="cuda")
    other = "complex128" if name == "complex64" else "complex64"
    for f in (lambda: c + c, lambda: c * 2, lambda: 2 - c, lambda: c / c, lambda: -c, lambda: c.sum(),
              lambda: c.mean(), lambda: c.add_(1), lambda: c.to(db.float32), lambda: c.to(getattr(db, other)),
              lambda: r.to(getattr(db, name)), lambda: r + 1j, lambda: r * c):
        with pytest.raises(NotImplementedError):
            f()
    assert c.tolist() == [1 + 0j] * 4
