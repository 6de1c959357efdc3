"""Transfers between host and GPU: every spelling and dtype, non-contiguous sources and
views, empty and 0-d tensors, 100 MB copies, DLPack capsules with dl_device and copy."""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, NP_DTYPE
from dlpack_abi import IS_COPIED
from .conftest import (CPU, CUDA0, CUDA_VIEWS, DEV, assert_on_cuda, assert_values, capsule_info, cuda_from, diff,
                       rand_array, wide)


TO_CUDA = {
    "to('cuda:0')": lambda t: t.to("cuda:0"),
    "to('cuda')": lambda t: t.to("cuda"),
    "to(0)": lambda t: t.to(0),
    "to(device('cuda',0))": lambda t: t.to(db.device("cuda", 0)),
    "to(device='cuda')": lambda t: t.to(device="cuda"),
    "cuda()": lambda t: t.cuda(),
    "cuda(0)": lambda t: t.cuda(0),
    "from_dlpack(device='cuda')": lambda t: db.from_dlpack(t, device="cuda"),
    "from_dlpack(device=device)": lambda t: db.from_dlpack(t, device=CUDA0),
    "__dlpack__(dl_device)": lambda t: db.from_dlpack(t.__dlpack__(dl_device=(2, 0))),
    "__dlpack__(dl_device,copy)": lambda t: db.from_dlpack(t.__dlpack__(dl_device=(2, 0), copy=True)),
    "__dlpack__(versioned)": lambda t: db.from_dlpack(
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=True)),
}

TO_CPU = {
    "cpu()": lambda t: t.cpu(),
    "to('cpu')": lambda t: t.to("cpu"),
    "to(device('cpu'))": lambda t: t.to(CPU),
    "numpy(force=True)": lambda t: t.numpy(force=True),
    "from_dlpack(device='cpu')": lambda t: db.from_dlpack(t, device="cpu"),
    "__dlpack__(dl_device)": lambda t: db.from_dlpack(t.__dlpack__(dl_device=(1, 0))),
    "__dlpack__(versioned)": lambda t: db.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))),
    "np.from_dlpack(device='cpu')": lambda t: np.from_dlpack(t, device="cpu"),
}


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("form", TO_CUDA.values(), ids=TO_CUDA.keys())
def test_host_to_cuda_every_form_and_dtype(form, name, rng):
    a = rand_array(rng, name, (5, 7))
    keep = a.copy()
    t = db.from_numpy(a)
    r = form(t)
    assert_on_cuda(r)
    assert r.dtype is t.dtype and r.shape == (5, 7)
    assert r.data_ptr() != t.data_ptr()
    assert_values(r, keep)
    a[...] = a[::-1, ::-1]  # the source changes; the copy does not
    assert_values(r, keep)


@pytest.mark.parametrize("name", DTYPE_NAMES)
@pytest.mark.parametrize("form", TO_CPU.values(), ids=TO_CPU.keys())
def test_cuda_to_host_every_form_and_dtype(form, name, rng):
    if form is TO_CPU["np.from_dlpack(device='cpu')"] and name == "bfloat16":
        pytest.skip("NumPy has no bfloat16 to import")
    a = rand_array(rng, name, (5, 7))
    c = cuda_from(a)
    h = form(c)
    if isinstance(h, db.Tensor):
        assert h.device == CPU and not h.is_cuda and h.dtype is c.dtype
        host = h.numpy()
    else:
        assert isinstance(h, np.ndarray)
        host = h
    assert host.dtype == a.dtype and host.shape == (5, 7)
    assert host.__array_interface__["data"][0] != c.data_ptr()
    assert_values(host, a)
    if host.flags.writeable:  # a copy: writing it leaves the GPU data alone
        host[...] = host[::-1, ::-1]
        assert_values(c, a)


@pytest.mark.parametrize("producer", ["numpy", "torch"])
def test_from_dlpack_device_cuda_of_host_producers(producer, rng):
    a = rand_array(rng, "float32", (3, 4))
    src = a if producer == "numpy" else torch.from_numpy(a)
    for device in ("cuda", "cuda:0", CUDA0):
        r = db.from_dlpack(src, device=device)
        assert_on_cuda(r)
        assert_values(r, a)


HOST_LAYOUTS = {
    "transposed": lambda a: a.T,
    "stepped": lambda a: a[::2, 1::3],
    "negative_stride": lambda a: a[::-1],
    "negative_2d": lambda a: a[::-2, ::-1],
    "column": lambda a: a[:, 3],
    "offset": lambda a: a.reshape(-1)[5:37],
    "permuted_3d": lambda a: a.reshape(2, 6, 7).transpose(2, 0, 1),
}


@pytest.mark.parametrize("name", ["float32", "bfloat16", "int64", "bool", "uint16", "complex128"])
@pytest.mark.parametrize("layout", HOST_LAYOUTS.values(), ids=HOST_LAYOUTS.keys())
def test_non_contiguous_host_sources_to_cuda_and_back(layout, name, rng):
    a = rand_array(rng, name, (12, 7))
    v = layout(a)
    t = db.from_numpy(v)
    for to_cuda in (TO_CUDA["to('cuda')"], TO_CUDA["from_dlpack(device='cuda')"],
                    TO_CUDA["__dlpack__(dl_device,copy)"]):
        r = to_cuda(t)
        assert_on_cuda(r)
        assert r.shape == v.shape
        assert_values(r, v)
        assert_values(r.cpu(), v)
        assert_values(r.numpy(force=True), v)


@pytest.mark.parametrize("name", ["float64", "bfloat16", "int8", "bool", "uint64", "complex64"])
@pytest.mark.parametrize("view", CUDA_VIEWS.values(), ids=CUDA_VIEWS.keys())
def test_non_contiguous_cuda_views_to_host(view, name, rng):
    on_t, on_a = view
    a = rand_array(rng, name, (12, 8))
    v, expected = on_t(cuda_from(a)), on_a(a)
    assert_on_cuda(v)
    for form_name, form in TO_CPU.items():
        if form_name == "np.from_dlpack(device='cpu')" and name == "bfloat16":
            continue
        problem = diff(form(v), np.ascontiguousarray(expected))
        assert problem is None, (form_name, problem)


@pytest.mark.parametrize("name", ["float32", "int16", "bool", "complex64", "bfloat16"])
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)], ids=str)
def test_empty_tensors_both_ways(shape, name):
    a = np.zeros(shape, NP_DTYPE[name])
    for form in (TO_CUDA["to('cuda')"], TO_CUDA["from_dlpack(device='cuda')"], TO_CUDA["__dlpack__(versioned)"]):
        c = form(db.from_numpy(a))
        assert_on_cuda(c)
        assert c.shape == shape and c.numel() == 0
        assert c.cpu().shape == shape
        assert c.numpy(force=True).shape == shape
        assert db.from_dlpack(c, device="cpu").shape == shape
    e = db.empty(shape, dtype=getattr(db, name), device="cuda")
    assert e.shape == shape and e.cpu().numpy().shape == shape
    if name in ("float32", "int16"):
        assert (e + e).shape == shape and (e * 2).shape == shape
        assert e.sum().item() == 0
        e.fill_(3)  # nothing to write
        e.add_(1)
        assert e.clone().shape == shape and e.contiguous().shape == shape


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_zero_d_tensors_both_ways(name, rng):
    a = rand_array(rng, name, ())
    assert a.shape == ()
    c = db.from_numpy(a).to("cuda")
    assert_on_cuda(c)
    assert c.shape == () and c.ndim == 0
    assert_values(c, a)
    assert_values(c.numpy(force=True), a)
    expected = wide(a).item() if name == "bfloat16" else a.item()
    assert c.item() == expected
    assert c.tolist() == expected
    assert db.tensor(2.5, device="cuda").item() == 2.5


def test_large_100mb_transfers_are_exact(rng):
    n = 25_000_000  # 100 MB of float32
    a = rng.random(n, dtype=np.float32)
    for to_cuda in (TO_CUDA["to('cuda')"], TO_CUDA["from_dlpack(device='cuda')"]):
        c = to_cuda(db.from_numpy(a))
        assert_on_cuda(c)
        assert c.shape == (n,)
        back = c.cpu().numpy()
        assert np.array_equal(back, a)
        assert np.array_equal(c.numpy(force=True), a)
        del c
    sq = a.reshape(5000, 5000)
    ct = db.from_numpy(sq.T).to("cuda")  # a transposed 100 MB source
    assert np.array_equal(ct.cpu().numpy(), sq.T)
    assert np.array_equal(cuda_from(sq).T.cpu().numpy(), sq.T)  # a transposed 100 MB CUDA view


@pytest.mark.parametrize("n", [37, 3_000_001], ids=["small", "staged"])  # 12 MB: the pinned ring
def test_copy_across_devices_writes_into_the_destination_itself(n, rng, no_leak):
    """dst.copy_(src) between host and GPU, same dtype and shape, lands in dst's own memory
    (a NumPy array sees it; a contiguous view between sentinels takes exactly its part),
    both ways; a cast or a strided destination takes the general path, with the same values."""
    a = rng.random(n, dtype=np.float32)
    host = np.full(n + 10, -1.0, dtype=np.float32)
    h = db.from_numpy(host)
    c = cuda_from(a)
    h[5:n + 5].copy_(c)  # device -> a view of NumPy memory
    assert np.array_equal(host[5:n + 5], a) and (host[:5] == -1).all() and (host[n + 5:] == -1).all()
    d = db.full((n + 10,), -1.0, device=DEV)
    ptr = d.data_ptr()
    d[3:n + 3].copy_(db.from_numpy(a[::-1].copy()))  # host -> a view of device memory
    back = d.cpu().numpy()
    assert d.data_ptr() == ptr
    assert np.array_equal(back[3:n + 3], a[::-1]) and (back[:3] == -1).all() and (back[n + 3:] == -1).all()
    wide64 = db.empty(n, dtype=db.float64)
    wide64.copy_(c)  # a cast: the general path
    assert np.array_equal(wide64.numpy(), a.astype(np.float64))
    strided = db.zeros(2 * n, device=DEV)
    strided[::2].copy_(db.from_numpy(a))  # a strided destination: the general path
    assert np.array_equal(strided.cpu().numpy()[::2], a) and not strided.cpu().numpy()[1::2].any()
    del h, c, d, wide64, strided


def test_to_same_device_returns_the_tensor_and_copies_are_new_memory(rng):
    a = rand_array(rng, "float32", (4, 5))
    c = cuda_from(a)
    assert c.to("cuda") is c and c.to(DEV) is c and c.cuda() is c  # as torch: nothing to do
    assert c.to(db.float32) is c
    same = db.from_dlpack(c)
    assert same.data_ptr() == c.data_ptr()
    copies = [db.from_dlpack(c, copy=True), c.clone(), db.from_dlpack(c.__dlpack__(copy=True)),
              db.from_dlpack(c.__dlpack__(max_version=(1, 0), copy=True))]
    ptrs = {c.data_ptr()}
    for k in copies:
        assert_on_cuda(k)
        assert_values(k, a)
        assert k.data_ptr() not in ptrs
        ptrs.add(k.data_ptr())
    copies[0].fill_(0)
    assert_values(c, a)


def test_capsule_fields_of_cuda_exports(rng):
    a = rand_array(rng, "float32", (4, 5))
    c = cuda_from(a)
    info = capsule_info(c.__dlpack__(max_version=(1, 0)))
    assert info.versioned and info.device == (2, 0) and info.data == c.data_ptr() and info.flags == 0
    info = capsule_info(c.__dlpack__(max_version=(1, 0), dl_device=(2, 0)))
    assert info.device == (2, 0) and info.data == c.data_ptr() and info.flags == 0
    info = capsule_info(c.__dlpack__(max_version=(1, 0), copy=True))
    assert info.device == (2, 0) and info.data != c.data_ptr() and info.flags & IS_COPIED
    info = capsule_info(c.__dlpack__())
    assert not info.versioned and info.device == (2, 0) and info.data == c.data_ptr()
    v = c[1:, 2:]
    info = capsule_info(v.__dlpack__(max_version=(1, 0)))
    assert info.data == v.data_ptr() == c.data_ptr() + (5 + 2) * 4


def test_dlpack_dl_device_cpu_of_cuda_tensor_is_a_flagged_host_copy(rng):
    a = rand_array(rng, "int32", (3, 4))
    c = cuda_from(a)
    cap = c.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    info = capsule_info(cap)
    assert info.device == (1, 0) and info.flags & IS_COPIED and info.data != c.data_ptr()
    h = db.from_dlpack(cap)
    assert h.device == CPU
    assert_values(h, a)
    legacy = c.__dlpack__(dl_device=(1, 0))
    assert capsule_info(legacy).device == (1, 0)
    assert_values(db.from_dlpack(legacy), a)


def test_dlpack_dl_device_cuda_of_cpu_tensor_is_a_flagged_cuda_copy(rng):
    a = rand_array(rng, "float64", (3, 4))
    t = db.from_numpy(a)
    cap = t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=True)
    info = capsule_info(cap)
    assert info.device == (2, 0) and info.flags & IS_COPIED
    c = db.from_dlpack(cap)
    assert_on_cuda(c)
    assert c.data_ptr() == info.data
    assert_values(c, a)
    if torch.cuda.is_available():
        x = torch.from_dlpack(t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=True))
        assert x.is_cuda
        assert_values(x, a)


def test_copy_false_when_a_copy_is_needed_raises_buffer_error():
    c, h = db.ones(3, device="cuda"), db.ones(3)
    with pytest.raises(BufferError):
        c.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError):
        c.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError):
        h.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(BufferError):
        db.from_dlpack(c, device="cpu", copy=False)
    with pytest.raises(BufferError):
        db.from_dlpack(h, device="cuda", copy=False)
    assert db.from_dlpack(c, copy=False).data_ptr() == c.data_ptr()


def test_numpy_of_cuda_tensor_raises_like_torch():
    msg = ("can't convert cuda:0 device type tensor to numpy. "
           "Use Tensor.cpu() to copy the tensor to host memory first.")
    c = db.arange(4, device="cuda")
    with pytest.raises(TypeError) as e:
        c.numpy()
    assert str(e.value) == msg
    with pytest.raises(TypeError):
        c.numpy(force=False)
    assert c.numpy(force=True).tolist() == [0, 1, 2, 3]
    bf = db.tensor([1.5, -2.0], dtype=db.bfloat16, device="cuda").numpy(force=True)
    assert bf.dtype == NP_DTYPE["bfloat16"] and wide(bf).tolist() == [1.5, -2.0]
