"""The CUDA backend on a machine without a GPU (CI): the same build imports,
reports no device, refuses every CUDA request with a clear RuntimeError, and
still compiles every kernel with NVRTC (which needs no GPU).

On a machine with a GPU the "no device" half skips; the NVRTC half runs anywhere.
"""

import ctypes.util
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import dlbridge as db
from conftest import NO_CUDA, run_python, without_cuda

KERNEL_FILES = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "kernels").glob("*.cu"))

no_gpu = without_cuda()


@no_gpu
def test_no_device_is_reported():
    assert db.cuda.is_available() is False
    assert db.cuda.device_count() == 0
    reason = db.cuda.unavailable_reason()
    assert isinstance(reason, str) and reason


CUDA_REQUESTS = {
    "to('cuda')": lambda t: t.to("cuda"),
    "to('cuda:0')": lambda t: t.to("cuda:0"),
    "to('cuda:3')": lambda t: t.to("cuda:3"),
    "to(0)": lambda t: t.to(0),
    "to(device('cuda', 0))": lambda t: t.to(db.device("cuda", 0)),
    "cuda()": lambda t: t.cuda(),
    "cuda(0)": lambda t: t.cuda(0),
    "to('cuda', float64)": lambda t: t.to("cuda", db.float64),
    "zeros(device='cuda')": lambda t: db.zeros(3, device="cuda"),
    "ones(device='cuda:0')": lambda t: db.ones(3, device="cuda:0"),
    "empty(device='cuda')": lambda t: db.empty(2, 2, device="cuda"),
    "full(device='cuda')": lambda t: db.full((2,), 1.5, device="cuda"),
    "rand(device='cuda')": lambda t: db.rand(4, device="cuda"),
    "arange(device='cuda')": lambda t: db.arange(4, device="cuda"),
    "eye(device='cuda')": lambda t: db.eye(2, device="cuda"),
    "tensor(device='cuda')": lambda t: db.tensor([1, 2], device="cuda"),
    "zeros_like(device='cuda')": lambda t: db.zeros_like(t, device="cuda"),
    "from_dlpack(device='cuda')": lambda t: db.from_dlpack(np.arange(3.0), device="cuda"),
    "synchronize()": lambda t: db.cuda.synchronize(),
    "synchronize(0)": lambda t: db.cuda.synchronize(0),
    "current_device()": lambda t: db.cuda.current_device(),
    "get_device_name()": lambda t: db.cuda.get_device_name(),
}


@no_gpu
@pytest.mark.parametrize("request_", list(CUDA_REQUESTS.values()), ids=list(CUDA_REQUESTS))
def test_cuda_requests_raise_runtime_error(request_):
    t = db.from_numpy(np.arange(6.0))
    with pytest.raises(RuntimeError, match=NO_CUDA):
        request_(t)
    # The source is untouched and still usable.
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0))


@no_gpu
def test_dlpack_export_to_cuda_raises_buffer_error():
    t = db.arange(3)
    with pytest.raises(BufferError, match=NO_CUDA):
        t.__dlpack__(dl_device=(2, 0), max_version=(1, 0))


def test_cpu_tensor_has_no_cuda_array_interface():
    t = db.arange(3)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="non-CUDA tensor"):
        t.__cuda_array_interface__


def test_cpu_dlpack_refuses_cuda_streams():
    t = db.arange(3)
    for stream in (1, 2, -1, 12345):
        with pytest.raises(ValueError, match="stream=None"):
            t.__dlpack__(stream=stream)
    with pytest.raises(TypeError, match="stream must be None or an int"):
        t.__dlpack__(stream="fast")


def test_is_cuda_is_false_on_the_cpu():
    t = db.zeros(2)
    assert t.is_cuda is False and t.is_cpu is True


# ----- NVRTC: needs the library (PyTorch's CUDA wheel ships it), no GPU -----

try:
    NVRTC = db.cuda.nvrtc_version()
except RuntimeError as e:  # pragma: no cover - the test venv always has it
    NVRTC = None
    NVRTC_ERROR = str(e)

needs_nvrtc = pytest.mark.skipif(NVRTC is None, reason="no libnvrtc in this environment")


@needs_nvrtc
def test_nvrtc_is_found_and_recent():
    major, minor = NVRTC
    assert major >= 12, NVRTC


@needs_nvrtc
def test_every_kernel_compiles_for_sm75_sm80_sm90():
    """Every kernel file compiles for each architecture. Under ASan for
    sm_90 alone: the same path through dlbridge's code, where NVRTC's three
    compiles took 3.6 minutes of the run (one takes 2; the plain run
    compiles all three)."""
    archs = ["sm_90"] if os.environ.get("DLBRIDGE_ASAN_RUNTIME") else ["sm_75", "sm_80", "sm_90"]
    with ThreadPoolExecutor(len(archs)) as pool:  # NVRTC runs without the GIL
        results = dict(zip(archs, pool.map(db.cuda.compile_kernels, archs)))
    for arch, sizes in results.items():
        assert sorted(sizes) == KERNEL_FILES, arch
        for name, size in sizes.items():
            assert size > 1000, (arch, name, size)


@needs_nvrtc
def test_unknown_architecture_is_a_clear_error():
    with pytest.raises(RuntimeError, match="NVRTC"):
        db.cuda.compile_kernels("sm_1")


def run_python_with(code, **env):
    """Runs code in a fresh interpreter; CUDA_PATH/CUDA_HOME/CUDA_ROOT only as given."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT")}
    return run_python(code, dict(full_env, **env))


@pytest.mark.skipif(
    ctypes.util.find_library("nvrtc") is not None, reason="a system libnvrtc is on the loader path"
)
def test_missing_nvrtc_is_a_runtime_error_not_a_crash():
    code = (
        "import dlbridge as db\n"
        "try:\n"
        "    db.cuda.compile_kernels('sm_80')\n"
        "except RuntimeError as e:\n"
        "    print('RuntimeError:', e)\n"
    )
    out = run_python_with(code, DLBRIDGE_NVRTC="/nonexistent/libnvrtc.so.13")
    assert out.returncode == 0, out.stderr
    assert "RuntimeError: NVRTC" in out.stdout and "not found" in out.stdout, out.stdout


@no_gpu
def test_import_works_with_no_cuda_libraries_at_all():
    # A fresh interpreter, no NVRTC, no driver: import and CPU work still fine.
    code = (
        "import numpy as np, dlbridge as db\n"
        "print(db.cuda.is_available(), (db.from_numpy(np.ones(3)) * 2).sum().item())\n"
    )
    out = run_python_with(code, DLBRIDGE_NVRTC="/nonexistent/libnvrtc.so.13")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "6.0"]


@needs_nvrtc
@pytest.mark.parametrize("variable", ["CUDA_PATH", "CUDA_HOME"])
def test_nvrtc_is_found_under_cuda_path_and_cuda_home_first(tmp_path, variable):
    # A toolkit named by CUDA_PATH/CUDA_HOME wins over the wheels on sys.path.
    found = run_python_with("import dlbridge as db; db.cuda.nvrtc_version(); print(db.cuda.nvrtc_path())")
    real = Path(found.stdout.strip())
    assert real.is_file(), found.stdout + found.stderr
    lib64 = tmp_path / "lib64"
    lib64.mkdir()
    for f in real.parent.glob("libnvrtc*.so*"):
        (lib64 / f.name).symlink_to(f)
    out = run_python_with(
        "import dlbridge as db; print(db.cuda.nvrtc_version()); print(db.cuda.nvrtc_path())",
        **{variable: str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].startswith(str(lib64)), out.stdout


@needs_nvrtc
def test_nvrtc_from_the_wheels_on_sys_path():
    out = run_python_with("import dlbridge as db; db.cuda.nvrtc_version(); print(db.cuda.nvrtc_path())")
    path = out.stdout.strip()
    if not path or "site-packages" not in path:
        pytest.skip(f"NVRTC came from elsewhere here: {path!r}")
    assert "/nvidia/" in path and Path(path).name.startswith("libnvrtc.so.")
