"""The tutorials in shared/seeds/*.txt, with ``torch`` replaced by ``dlbridge``.

Each snippet runs and prints what real torch prints (up to the ``dlbridge.`` prefix).
Where a tutorial's shown output differs from what torch really prints, the real output
is asserted and the difference noted. The CUDA lines run as the tutorials show where a CUDA
device is present (tests/gpu/run_on_gpu.sh runs this file on a GPU machine); without one,
each raises RuntimeError (no CUDA device or driver), as torch without CUDA does, and for
``.numpy()`` of a CUDA tensor, creating that tensor already raises.
rand() output is random: its format and range are checked, not its digits.
"""

import re

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import NO_CUDA

HAVE_CUDA = db.cuda.is_available()
CUDA0 = "device(type='cuda', index=0)"
# What torch (and dlbridge) says to .numpy() of a CUDA tensor, as seeds 003 and 004 print.
CUDA_NUMPY = re.escape("can't convert cuda:0 device type tensor to numpy. "
                       "Use Tensor.cpu() to copy the tensor to host memory first.")


def to_cuda(move):
    """move() with a CUDA device present (the tensor it returns, checked to be on cuda:0);
    without one, checks that it raises the no-CUDA RuntimeError and returns None."""
    if not HAVE_CUDA:
        with pytest.raises(RuntimeError, match=NO_CUDA):
            move()
        return None
    t = move()
    assert repr(t.device) == CUDA0 and t.is_cuda
    return t


def printed(x):
    """What print(x) shows."""
    return str(x)


def torch_str(t):
    """What torch prints for the same values and dtype, spelled dlbridge."""
    return str(torch.from_dlpack(t)).replace("torch.", "dlbridge.")


# ============================================================== 000: to(), cuda(), cpu(), from_numpy(), numpy()

# gpu_tensor = cpu_tensor.to(device=...) and cpu_tensor.cuda(device=...), as in the tutorial
CUDA_DEVICE_SPECS = {
    "'cuda:0'": lambda: "cuda:0",
    "'cuda'": lambda: "cuda",
    "0": lambda: 0,
    "device(device='cuda:0')": lambda: db.device(device="cuda:0"),
    "device(device='cuda')": lambda: db.device(device="cuda"),
    "device(device=0)": lambda: db.device(device=0),
    "device(type='cuda', index=0)": lambda: db.device(type="cuda", index=0),
    "device(type='cuda')": lambda: db.device(type="cuda"),
}


def test_seed000_cpu_tensor_device():
    cpu_tensor = db.tensor([0, 1, 2])
    assert repr(cpu_tensor.device) == "device(type='cpu')"


@pytest.mark.parametrize("spec", CUDA_DEVICE_SPECS.values(), ids=CUDA_DEVICE_SPECS.keys())
def test_seed000_to_cuda(spec):
    cpu_tensor = db.tensor([0, 1, 2])
    gpu_tensor = to_cuda(lambda: cpu_tensor.to(device=spec()))
    if gpu_tensor is not None:
        cpu_tensor = gpu_tensor.to(device="cpu")
        assert repr(cpu_tensor.device) == "device(type='cpu')" and cpu_tensor.tolist() == [0, 1, 2]


@pytest.mark.parametrize("spec", CUDA_DEVICE_SPECS.values(), ids=CUDA_DEVICE_SPECS.keys())
def test_seed000_cuda_method(spec):
    cpu_tensor = db.tensor([0, 1, 2])
    gpu_tensor = to_cuda(lambda: cpu_tensor.cuda(device=spec()))
    if gpu_tensor is not None:
        cpu_tensor = gpu_tensor.cpu()
        assert repr(cpu_tensor.device) == "device(type='cpu')" and cpu_tensor.tolist() == [0, 1, 2]


def test_seed000_the_cuda_devices_themselves_print_like_torch():
    # gpu_tensor.device  # device(type='cuda', index=0): the device objects need no GPU
    assert repr(db.device(device="cuda:0")) == "device(type='cuda', index=0)"
    assert repr(db.device(device=0)) == "device(type='cuda', index=0)"
    assert repr(db.device(type="cuda", index=0)) == "device(type='cuda', index=0)"


def test_seed000_back_to_cpu():
    # cpu_tensor = gpu_tensor.to(device='cpu') / gpu_tensor.cpu(device='cpu'), on a CPU tensor
    t = db.tensor([0, 1, 2])
    assert repr(t.to(device="cpu").device) == "device(type='cpu')"
    assert repr(t.cpu(device="cpu").device) == "device(type='cpu')"  # as written in the tutorial


def test_seed000_from_numpy():
    my_array = np.array([0.0, 1.0, 2.0])
    assert repr(my_array.dtype) == "dtype('float64')"
    my_tensor = db.from_numpy(my_array)
    assert repr(my_tensor) == "tensor([0., 1., 2.], dtype=dlbridge.float64)"


def test_seed000_from_numpy_takes_no_keyword():
    with pytest.raises(TypeError):
        db.from_numpy(ndarray=np.array([0.0]))


def test_seed000_numpy():
    my_tensor = db.tensor([0.0, 1.0, 2.0])
    assert repr(my_tensor.dtype) == "dlbridge.float32"
    my_array = my_tensor.numpy()
    assert repr(my_array) == "array([0., 1., 2.], dtype=float32)"


def test_seed000_numpy_force_on_cpu():
    assert repr(db.tensor([0.0, 1.0, 2.0]).numpy(force=True)) == "array([0., 1., 2.], dtype=float32)"


def test_seed000_cuda_tensor_numpy_force():
    # my_tensor = torch.tensor([0., 1., 2.], device='cuda:0'); my_tensor.numpy(force=True)
    my_tensor = to_cuda(lambda: db.tensor([0.0, 1.0, 2.0], device="cuda:0"))
    if my_tensor is not None:
        assert repr(my_tensor.numpy(force=True)) == "array([0., 1., 2.], dtype=float32)"
        for call in (my_tensor.numpy, lambda: my_tensor.numpy(force=False)):  # "# Error"
            with pytest.raises(TypeError, match=CUDA_NUMPY):
                call()


# ============================================================== 001: tensor <-> numpy share storage


def test_seed001_tensor_to_numpy_and_add_():
    a = db.zeros(5)
    assert printed(a) == "tensor([0., 0., 0., 0., 0.])"
    b = a.numpy()
    assert printed(b) == "[0. 0. 0. 0. 0.]"
    a.add_(1)
    assert printed(a) == "tensor([1., 1., 1., 1., 1.])"
    assert printed(b) == "[1. 1. 1. 1. 1.]"


def test_seed001_numpy_to_tensor_and_np_add_out():
    a = np.zeros(5)
    assert printed(a) == "[0. 0. 0. 0. 0.]"
    b = db.from_numpy(a)
    assert printed(b) == "tensor([0., 0., 0., 0., 0.], dtype=dlbridge.float64)"
    np.add(a, 2, out=a)
    assert printed(a) == "[2. 2. 2. 2. 2.]"
    assert printed(b) == "tensor([2., 2., 2., 2., 2.], dtype=dlbridge.float64)"


RAND_2x3 = re.compile(r"tensor\(\[\[0\.\d{4}, 0\.\d{4}, 0\.\d{4}\],\n        \[0\.\d{4}, 0\.\d{4}, 0\.\d{4}\]\]\)")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_seed001_rand_and_rand_like_print(seed):
    db.manual_seed(seed)
    x = db.rand(2, 3)
    y = db.rand_like(x)
    for t in (x, y):
        assert t.shape == (2, 3) and t.dtype is db.float32
        assert all(0.0 <= v < 1.0 for row in t.tolist() for v in row)
        assert printed(t) == torch_str(t)  # torch's formatting of the same numbers
        small = min(v for row in t.tolist() for v in row)
        if small >= 1e-3:  # (torch switches to scientific notation for a tiny value)
            assert RAND_2x3.fullmatch(printed(t)), printed(t)


def test_seed001_to_cuda():
    x = db.rand(2, 3)
    y = db.rand_like(x)
    on_gpu = to_cuda(lambda: x.to("cuda"))
    if on_gpu is not None:
        assert printed(on_gpu) == torch_str(on_gpu)  # tensor([[...]], device='cuda:0')
        assert printed(on_gpu).endswith("device='cuda:0')")
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, "
                           "but found at least two devices, cuda:0 and cpu!"):
            on_gpu + y
        assert on_gpu.to("cpu").tolist() == x.tolist()


def test_seed001_add_on_cpu():
    x = db.rand(2, 3)
    y = db.rand_like(x)
    x = x.to("cpu")
    z = x + y
    np.testing.assert_array_equal(z.numpy(), x.numpy() + y.numpy())
    assert printed(z) == torch_str(z)
    assert re.fullmatch(r"tensor\(\[\[\d\.\d{4}, \d\.\d{4}, \d\.\d{4}\],\n        \[\d\.\d{4}, \d\.\d{4}, \d\.\d{4}\]\]\)",
                        printed(z)) or min(z.numpy().ravel()) < 1e-3


# ============================================================== 002: PyTorch tensor to NumPy array and back

EYE3_F64 = ("tensor([[1., 0., 0.],\n"
            "        [0., 1., 0.],\n"
            "        [0., 0., 1.]], dtype=dlbridge.float64)")
EYE3 = ("tensor([[1., 0., 0.],\n"
        "        [0., 1., 0.],\n"
        "        [0., 0., 1.]])")
EYE3_ARRAY = ("array([[1., 0., 0.],\n"
              "       [0., 1., 0.],\n"
              "       [0., 0., 1.]], dtype=float32)")


def test_seed002_from_numpy_eye():
    x = np.eye(3)
    assert repr(db.from_numpy(x)) == EYE3_F64


def test_seed002_type_float32():
    # The tutorial shows integers here; real torch prints floats, as asserted.
    x = np.eye(3)
    out = db.from_numpy(x).type(db.float32)
    assert out.dtype is db.float32
    assert repr(out) == EYE3
    assert repr(torch.from_numpy(np.eye(3)).type(torch.float32)) == EYE3  # same as torch


def test_seed002_to_cuda():
    x = np.eye(3)
    on_gpu = to_cuda(lambda: db.from_numpy(x).to("cuda"))
    if on_gpu is not None:
        assert repr(on_gpu) == EYE3_F64.replace("]], dtype", "]], device='cuda:0', dtype")


def test_seed002_eye_numpy():
    x = db.eye(3)
    assert repr(x.numpy()) == EYE3_ARRAY


def test_seed002_requires_grad_detach_numpy():
    x = db.eye(3)
    x.requires_grad = True
    assert repr(x.detach().numpy()) == EYE3_ARRAY
    with pytest.raises(RuntimeError, match=re.escape("Use tensor.detach().numpy() instead.")):
        x.numpy()


def test_seed002_cuda_round_trip_then_cpu_numpy():
    x = db.eye(3)
    on_gpu = to_cuda(lambda: x.to("cuda"))
    if on_gpu is not None:
        x = on_gpu
    assert repr(x.to("cpu").numpy()) == EYE3_ARRAY


def test_seed002_detach_to_cpu_numpy_idempotent():
    x = db.eye(3)
    assert repr(x.detach().to("cpu").numpy()) == EYE3_ARRAY
    assert x.to("cpu") is x


# ============================================================== 003: CPU/GPU moves


@pytest.mark.parametrize("values", [[1, 2, 3.0], [0.52, 0.42, 0.53]], ids=str)
def test_seed003_cuda_tensor_numpy(values):
    # a_ten = torch.tensor([1,2,3.], device='cuda:0'); a_ten.numpy() -> can't convert cuda tensor
    # (without a CUDA device the tensor cannot be created at all).
    a_ten = to_cuda(lambda: db.tensor(values, device="cuda:0"))
    if a_ten is not None:
        with pytest.raises(TypeError, match=CUDA_NUMPY):
            a_ten.numpy()
        a_cpu = a_ten.to("cpu")
        assert a_cpu.tolist() == db.tensor(values).tolist() and repr(a_cpu.device) == "device(type='cpu')"


def test_seed003_cuda_shorthands_and_cpu_is_identity():
    ten = db.tensor([0.52, 0.42, 0.53])
    for ten_gpu in (to_cuda(ten.cuda), to_cuda(lambda: ten.cuda(0))):  # defaults to GPU index 0
        if ten_gpu is not None:
            ten_cpu = ten_gpu.cpu()
            assert ten_cpu.tolist() == ten.tolist() and ten_cpu.data_ptr() != ten.data_ptr()
    assert ten.cpu() is ten
    assert ten.to("cpu") is ten


# ============================================================== 004: numpy array <-> tensor, dtypes


def test_seed004_three_ways_int32_as_in_the_tutorial():
    np_array = np.array([5, 7, 1, 2, 4, 4], dtype=np.int32)  # the tutorial's platform default
    tensor_a = db.from_numpy(np_array)
    tensor_b = db.Tensor(np_array)
    tensor_c = db.tensor(np_array)
    assert repr(np_array.dtype) == "dtype('int32')"
    assert f"tensor_a: {tensor_a}\ntensor_b: {tensor_b}\ntensor_c: {tensor_c}" == (
        "tensor_a: tensor([5, 7, 1, 2, 4, 4], dtype=dlbridge.int32)\n"
        "tensor_b: tensor([5., 7., 1., 2., 4., 4.])\n"
        "tensor_c: tensor([5, 7, 1, 2, 4, 4], dtype=dlbridge.int32)"
    )
    assert [printed(t.dtype) for t in (tensor_a, tensor_b, tensor_c)] == \
        ["dlbridge.int32", "dlbridge.float32", "dlbridge.int32"]


def test_seed004_three_ways_platform_default():
    np_array = np.array([5, 7, 1, 2, 4, 4])
    a, b, c = db.from_numpy(np_array), db.Tensor(np_array), db.tensor(np_array)
    ta, tb, tc = torch.from_numpy(np_array), torch.Tensor(np_array), torch.tensor(np_array)
    for ours, theirs in ((a, ta), (b, tb), (c, tc)):
        assert printed(ours) == printed(theirs).replace("torch.", "dlbridge.")
        assert printed(ours.dtype) == printed(theirs.dtype).replace("torch.", "dlbridge.")


def test_seed004_tensor_with_dtype_and_float():
    np_array = np.array([5, 7, 1, 2, 4, 4])
    tensor_a = db.from_numpy(np_array)
    tensor_b = db.Tensor(np_array)
    tensor_c = db.tensor(np_array, dtype=db.int32)
    assert printed(tensor_c.dtype) == "dlbridge.int32"
    assert printed(tensor_b.dtype) == "dlbridge.float32"
    for t in (tensor_a, tensor_b, tensor_c):
        assert printed(t.float().dtype) == "dlbridge.float32"


def test_seed004_numpy_three_ways():
    tensor = db.tensor([1, 2, 3, 4, 5])
    np_a = tensor.numpy()
    np_b = tensor.detach().numpy()
    np_c = tensor.detach().cpu().numpy()
    for arr in (np_a, np_b, np_c):
        assert arr.dtype == np.int64
        # the tutorial shows "dtype=int64" (its platform's default int is int32); numpy omits it here
        assert repr(arr) == repr(np.array([1, 2, 3, 4, 5], dtype=np.int64))


def test_seed004_requires_grad():
    tensor = db.tensor([1, 2, 3, 4, 5], dtype=db.float32, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        tensor.numpy()
    assert str(e.value) == "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    assert repr(tensor.detach().numpy()) == "array([1., 2., 3., 4., 5.], dtype=float32)"


def test_seed004_gpu_tensor_numpy():
    # tensor = torch.tensor(..., requires_grad=True).cuda(); tensor.detach().numpy() -> TypeError
    tensor = db.tensor([1, 2, 3, 4, 5], dtype=db.float32, requires_grad=True)
    on_gpu = to_cuda(tensor.cuda)
    if on_gpu is not None:
        with pytest.raises(TypeError, match=CUDA_NUMPY):
            on_gpu.detach().numpy()
        assert repr(on_gpu.detach().cpu().numpy()) == "array([1., 2., 3., 4., 5.], dtype=float32)"
    assert repr(tensor.detach().cpu().numpy()) == "array([1., 2., 3., 4., 5.], dtype=float32)"
