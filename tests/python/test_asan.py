"""Proof that `make test-asan` really runs the suite under AddressSanitizer.

tests/asan/python_suite.sh builds the extension with -Zsanitizer=address and
preloads the ASan runtime. A silent fallback to the release build (or a
runtime that was not loaded) would make that run pass without checking
anything, so these tests fail it instead. Outside that run they skip.
"""

import ctypes
import os
from pathlib import Path

import pytest

import dlbridge as db
from conftest import ASAN_RUNTIME, run_python

pytestmark = pytest.mark.skipif(
    not ASAN_RUNTIME, reason="not the AddressSanitizer run (make test-asan runs these)"
)


def test_the_asan_runtime_is_loaded_in_this_process():
    # dlsym in the global scope: the preloaded runtime defines it.
    assert hasattr(ctypes.CDLL(None), "__asan_init")


def test_the_extension_is_the_instrumented_build():
    core = Path(db._core.__file__).resolve()
    assert core == Path(os.environ["DLBRIDGE_ASAN_CORE"]).resolve()
    # Instrumented code reports bad accesses through these runtime entry points.
    assert b"__asan_report_load8" in core.read_bytes()


@pytest.mark.parametrize("numel", [4, 1 << 19], ids=["16 bytes", "2 MiB (mmap outside ASan builds)"])
def test_a_read_past_a_dlbridge_buffer_is_reported(numel):
    """A tensor read 48 bytes past its end must stop the process with an ASan report."""
    code = (
        "import ctypes, dlbridge as db\n"
        f"t = db.zeros({numel}, dtype=db.float32)\n"
        f"ctypes.string_at(t.data_ptr(), {numel * 4 + 48})\n"
        "print('not caught')\n"
    )
    r = run_python(code)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "heap-buffer-overflow" in r.stderr, r.stderr
    assert "not caught" not in r.stdout


@pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="no NVIDIA device node here")
def test_cuda_still_starts_under_asan():
    """With ASan's shadow gap protected the CUDA driver cannot start, and the GPU
    suite would skip instead of running under ASan (python_suite.sh sets
    protect_shadow_gap=0)."""
    assert db.cuda.is_available(), db.cuda.unavailable_reason()
