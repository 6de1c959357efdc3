"""The C ABI (include/dlbridge.h), driven from pytest.

* tests/c/test_capi.c exercises every function and every documented error of
  the header from C; it is built against libdlbridge.a under AddressSanitizer
  + UndefinedBehaviorSanitizer (leak checking on), against libdlbridge.so
  under valgrind, and as C++17 (the header must work from C++).
* tests/c/torch_edit.c is a small C consumer (a shared library linked to
  libdlbridge.so) that takes DLPack tensors PyTorch produced, through a
  `__dlpack__` capsule and through PyTorch's DLPack C exchange API, and
  doubles them in place: the edit must be visible from Python.

The C ABI is built with `cargo build -p dlbridge-capi` (target/debug). The
tests skip only when `cargo` or a C compiler is missing. `DLB_CAPI_LIB_DIR`
names a folder with a prebuilt `libdlbridge.so` (and optionally `libdlbridge.a`)
instead: the GPU machine has no Rust (tests/gpu/run_on_gpu.sh). Without the
static library there, the C++ build links the shared one and the ASan run,
which needs the static one, skips with that reason.
"""

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from dlpack_abi import DLManagedTensorVersioned, ExchangeAPI, capsule_pointer

ROOT = Path(__file__).resolve().parents[2]
C_DIR = ROOT / "tests" / "c"
LIB_DIR = ROOT / "target" / "debug"
HEADER = ROOT / "include" / "dlbridge.h"
TEST_C = C_DIR / "test_capi.c"

# What Rust's static library needs from the system, from
# `cargo rustc -p dlbridge-capi --lib --crate-type staticlib -- --print native-static-libs`
# (on glibc >= 2.34 rt, util, pthread and dl are part of libc; naming them is harmless).
NATIVE_STATIC_LIBS = ["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s"]
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]

RUN_TIMEOUT = 120


def _tool(name):
    return shutil.which(name)


def _run(cmd, *, env=None, timeout=RUN_TIMEOUT, cwd=ROOT):
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _output(r):
    return f"exit status {r.returncode}\n--- stdout ---\n{r.stdout[-20000:]}\n--- stderr ---\n{r.stderr[-20000:]}"


def _compile(cmd):
    r = _run(cmd)
    assert r.returncode == 0, "compilation failed:\n" + " ".join(map(str, cmd)) + "\n" + _output(r)


def _test_env(*, hide_gpu=False, **extra):
    """The environment for test_capi: whether CUDA requests must fail or work.

    With `hide_gpu` (the sanitizer and valgrind runs, which check dlbridge's host code and
    would otherwise also check the NVIDIA driver's), no device is visible, so every CUDA
    request must fail with DLB_ERR_NO_CUDA even on a GPU machine.
    """
    env = dict(os.environ)
    env.pop("DLB_TEST_KNOWN_BUGS", None)
    env.setdefault("RUST_BACKTRACE", "1")
    if hide_gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["DLB_TEST_HAVE_CUDA"] = "0"
    elif "DLB_TEST_HAVE_CUDA" not in env:
        try:
            import torch

            if torch.version.cuda is not None:  # a CUDA build of torch knows whether there is a GPU
                env["DLB_TEST_HAVE_CUDA"] = "1" if torch.cuda.is_available() else "0"
        except ImportError:
            pass  # unset: test_capi accepts either answer
    env.update(extra)
    return env


# ----- building ---------------------------------------------------------------------------------


def _link(lib_dir):
    """How to link test_capi.c to the C ABI: the static library where there is one."""
    static = lib_dir / "libdlbridge.a"
    if static.is_file():
        return [static, *NATIVE_STATIC_LIBS]
    return [f"-L{lib_dir}", "-ldlbridge", f"-Wl,-rpath,{lib_dir.resolve()}", "-lpthread"]


@pytest.fixture(scope="session")
def capi_lib():
    """Builds the C ABI once per session; returns target/debug (or DLB_CAPI_LIB_DIR)."""
    prebuilt = os.environ.get("DLB_CAPI_LIB_DIR")
    if prebuilt:
        lib_dir = Path(prebuilt).resolve()
        assert (lib_dir / "libdlbridge.so").is_file(), f"DLB_CAPI_LIB_DIR={prebuilt} has no libdlbridge.so"
        if _tool("cc") is None:
            pytest.skip("no C compiler (`cc`) on PATH: cannot build the C tests of the C ABI")
        return lib_dir
    cargo, cc = _tool("cargo"), _tool("cc")
    if cargo is None:
        pytest.skip("`cargo` is not on PATH: cannot build the C ABI (cargo build -p dlbridge-capi)")
    if cc is None:
        pytest.skip("no C compiler (`cc`) on PATH: cannot build the C tests of the C ABI")
    env = dict(os.environ, CARGO_TERM_COLOR="never")
    r = _run([cargo, "build", "-p", "dlbridge-capi"], env=env, timeout=1800)
    assert r.returncode == 0, "cargo build -p dlbridge-capi failed:\n" + _output(r)
    for name in ("libdlbridge.a", "libdlbridge.so"):
        assert (LIB_DIR / name).is_file(), f"cargo build -p dlbridge-capi did not produce {LIB_DIR / name}"
    return LIB_DIR


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("capi")


@pytest.fixture(scope="session")
def asan_exe(capi_lib, build_dir):
    """test_capi.c against the static library, with ASan + UBSan."""
    exe = build_dir / "test_capi_asan"
    if not (capi_lib / "libdlbridge.a").is_file():
        pytest.skip(f"no libdlbridge.a in {capi_lib}: the ASan build links the static library")
    _compile(["cc", "-std=c11", *WARNINGS, "-g", *SANITIZE, "-Iinclude", TEST_C,
              capi_lib / "libdlbridge.a", *NATIVE_STATIC_LIBS, "-o", exe])
    return exe


@pytest.fixture(scope="session")
def plain_exe(capi_lib, build_dir):
    """test_capi.c against the shared library, no sanitizers (for valgrind)."""
    exe = build_dir / "test_capi"
    _compile(["cc", "-std=c11", *WARNINGS, "-g", "-Iinclude", TEST_C,
              f"-L{capi_lib}", "-ldlbridge", f"-Wl,-rpath,{capi_lib.resolve()}", "-lpthread", "-o", exe])
    return exe


ASAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}


# ----- the C test program ------------------------------------------------------------------------


def test_every_header_function_is_exercised():
    """test_capi.c calls each function the header declares (a guard for new ones)."""
    declared = set(re.findall(r"\b(dlb_\w+)\s*\(", HEADER.read_text()))
    assert len(declared) >= 27, declared
    source = TEST_C.read_text()
    called = set(re.findall(r"\b(dlb_\w+)\s*\(", source))
    assert declared - called == set(), f"functions of dlbridge.h that test_capi.c never calls: {declared - called}"


def test_c_abi_under_asan_and_ubsan(asan_exe):
    r = _run([asan_exe], env=_test_env(hide_gpu=True, **ASAN_ENV))
    assert r.returncode == 0, "test_capi (ASan + UBSan) failed:\n" + _output(r)
    assert re.search(r"^\d+ checks passed$", r.stdout, re.M), _output(r)


def test_c_abi_under_valgrind(plain_exe):
    valgrind = _tool("valgrind")
    if valgrind is None:
        pytest.skip("valgrind is not installed")
    r = _run([valgrind, "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
              "--error-exitcode=1", plain_exe], env=_test_env(hide_gpu=True))
    assert r.returncode == 0, "test_capi under valgrind failed:\n" + _output(r)
    assert re.search(r"^\d+ checks passed$", r.stdout, re.M), _output(r)
    assert "ERROR SUMMARY: 0 errors" in r.stderr, _output(r)


def test_c_abi_from_cpp(capi_lib, build_dir):
    """The header (and the whole test) compiles as C++17, and runs (with the GPU, if any)."""
    cxx = _tool("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (`c++`) on PATH")
    exe = build_dir / "test_capi_cpp"
    _compile([cxx, "-std=c++17", *WARNINGS, "-g", "-Iinclude", "-x", "c++", TEST_C, "-x", "none",
              *_link(capi_lib), "-o", exe])
    r = _run([exe], env=_test_env())
    assert r.returncode == 0, "test_capi built as C++ failed:\n" + _output(r)


# ----- a C consumer of PyTorch's DLPack tensors ----------------------------------------------------


# int managed_tensor_from_py_object_no_sync(PyObject* obj, DLManagedTensorVersioned** out),
# called with the GIL held (PYFUNCTYPE keeps it and raises the Python error a failure sets).
_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))

# A private prototype, so that the shared ctypes.pythonapi function keeps its settings.
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))


@pytest.fixture(scope="session")
def torch_edit(capi_lib, build_dir):
    """tests/c/torch_edit.c as a shared library linked to libdlbridge.so, loaded with ctypes."""
    so = build_dir / "libtorch_edit.so"
    _compile(["cc", "-shared", "-fPIC", "-std=c11", *WARNINGS, "-g", "-Iinclude", C_DIR / "torch_edit.c",
              f"-L{capi_lib}", "-ldlbridge", f"-Wl,-rpath,{capi_lib.resolve()}", "-o", so])
    lib = ctypes.CDLL(str(so))
    for name in ("double_in_place", "import_status"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p]  # DLManagedTensorVersioned*
        fn.restype = ctypes.c_int  # a dlb_status
    lib.torch_edit_last_error.argtypes = []
    lib.torch_edit_last_error.restype = ctypes.c_char_p
    return lib


def _hand_over(capsule):
    """The DLManagedTensorVersioned* of a `__dlpack__` capsule, whose ownership moves to C
    (the capsule is renamed "used_dltensor_versioned", so its destructor leaves it alone)."""
    ptr = capsule_pointer(capsule, b"dltensor_versioned")
    assert ptr
    assert _capsule_set_name(capsule, b"used_dltensor_versioned") == 0
    return ptr


def _status(lib, status):
    return f"dlb_status {status}: {lib.torch_edit_last_error().decode()}"


def test_c_consumer_edits_torch_tensor_through_capsule(torch_edit):
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.int64)
    cap = x.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    assert x._use_count() == 2  # the capsule's tensor holds x's TensorImpl
    s = torch_edit.double_in_place(_hand_over(cap))
    assert s == 0, _status(torch_edit, s)
    assert torch.equal(x, torch.arange(6, dtype=torch.int64) * 2)  # the edit is visible
    assert x._use_count() == 1  # dlbridge ran torch's deleter, once
    del cap  # a used capsule's destructor does nothing

    # A transposed (strided) view: only the viewed elements, in the base's memory.
    base = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    t = base.t()
    s = torch_edit.double_in_place(_hand_over(t.__dlpack__(max_version=(1, 0))))
    assert s == 0, _status(torch_edit, s)
    assert torch.equal(base, torch.arange(12, dtype=torch.int32).reshape(3, 4) * 2)
    assert t._use_count() == 1

    # A failing import still releases torch's tensor: here one whose descriptor says four
    # lanes, a vector dtype dlbridge refuses.
    v = torch.zeros(3, dtype=torch.float32)
    managed = _hand_over(v.__dlpack__(max_version=(1, 0)))
    DLManagedTensorVersioned.from_address(managed).dl_tensor.dtype.lanes = 4
    assert torch_edit.import_status(managed) == 4  # DLB_ERR_UNSUPPORTED_DTYPE
    assert "unsupported DLPack dtype" in torch_edit.torch_edit_last_error().decode()
    assert v._use_count() == 1


def test_c_consumer_edits_torch_tensor_through_exchange_api(torch_edit):
    torch = pytest.importorskip("torch")
    api_capsule = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)
    if api_capsule is None:
        pytest.skip("this torch has no DLPack C exchange API (torch.Tensor.__dlpack_c_exchange_api__)")
    table = capsule_pointer(api_capsule, b"dlpack_exchange_api")
    assert table
    api = ExchangeAPI.from_address(table)
    assert api.header.major == 1
    assert api.managed_tensor_from_py_object_no_sync
    from_py = _FROM_PY(api.managed_tensor_from_py_object_no_sync)

    x = torch.arange(6, dtype=torch.int64)
    managed = ctypes.c_void_p()
    assert from_py(x, ctypes.byref(managed)) == 0
    assert managed.value
    assert x._use_count() == 2
    s = torch_edit.double_in_place(managed.value)  # ownership moves to C
    assert s == 0, _status(torch_edit, s)
    assert torch.equal(x, torch.arange(6, dtype=torch.int64) * 2)
    assert x._use_count() == 1

    # 0-d and float tensors too.
    y = torch.tensor(1.25, dtype=torch.float64)
    assert from_py(y, ctypes.byref(managed)) == 0
    s = torch_edit.double_in_place(managed.value)
    assert s == 0, _status(torch_edit, s)
    assert y.item() == 2.5
