"""Shared helpers for the dlbridge test suite.

Everything here uses the real numpy / torch / ml_dtypes; nothing is mocked.
dlbridge itself is imported by the test modules, not here, so that
test_formatting.py keeps running when the extension is not built.
"""

import gc
import os

# On a GPU machine JAX would otherwise take 75% of the GPU's memory at start-up,
# starving the CUDA tests of dlbridge, PyTorch and CuPy.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# PaddlePaddle must be imported before TensorFlow in one interpreter: the
# other order crashes the interpreter (a segfault while paddle loads). The
# registry of peers (dlbridge/_peers.py, read by the doctor too) says which
# peer needs which first (`import_after`). Importing paddle takes seconds, so
# it is not imported up front: a one-shot import hook imports it (when
# installed) just before the first `import tensorflow`, so a run that never
# imports TensorFlow pays nothing.
import importlib.util
import sys


def _peer_registry():
    """dlbridge._peers, loaded from its file without importing dlbridge (see above)."""
    spec = importlib.util.find_spec("dlbridge")
    if spec is None or not spec.submodule_search_locations:
        return ()
    path = os.path.join(list(spec.submodule_search_locations)[0], "_peers.py")
    if not os.path.isfile(path):
        return ()
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("_dlbridge_peers", path))
    module.__spec__.loader.exec_module(module)
    return module.PEERS


IMPORT_FIRST = {p.module: p.import_after for p in _peer_registry() if p.import_after}


def import_paddle():
    """Imports paddle if it is installed and works (None otherwise), without its
    start-up warning about ccache."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="No ccache found")
        try:
            import paddle
        except Exception:  # noqa: BLE001 - a missing or broken paddle: its tests skip
            return None
    return paddle


def import_first(module):
    """Imports, when installed, what the registry says must come before `module`."""
    for first in IMPORT_FIRST.get(module, ()):
        if first not in sys.modules and importlib.util.find_spec(first) is not None:
            if first == "paddle":
                import_paddle()
            else:
                importlib.import_module(first)


class _ImportFirst:
    def find_spec(self, name, path=None, target=None):
        if name in IMPORT_FIRST:
            IMPORT_FIRST_PENDING.discard(name)
            if not IMPORT_FIRST_PENDING:
                sys.meta_path.remove(self)
            import_first(name)
        return None  # the ordinary finders do the import


IMPORT_FIRST_PENDING = {m for m in IMPORT_FIRST if m not in sys.modules}
if IMPORT_FIRST_PENDING:
    sys.meta_path.insert(0, _ImportFirst())

# TensorFlow's C++ logging (oneDNN's start-up notice included) off, unless asked for.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Under `make test-asan` this interpreter runs with the AddressSanitizer
# runtime preloaded (for the instrumented extension). The tools the suite
# spawns (gcc, cargo, valgrind, the C suite with its own ASan) must not
# inherit it; Python children that import dlbridge get it back in run_python().
# (Dropped in pytest_configure, once this process is known not to be
# pytest-xdist's controller, whose workers need the runtime too.)
ASAN_RUNTIME = os.environ.get("DLBRIDGE_ASAN_RUNTIME")


# The terminal's stderr, kept by pytest_configure (when pytest's capture is
# suspended): a hang backstop (test_engines.bounded) writes there, since what
# a captured test writes is lost when the run is ended.
TERMINAL_FD = 2


def pytest_configure(config):
    global TERMINAL_FD
    TERMINAL_FD = os.dup(2)
    xdist_controller = not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
    if ASAN_RUNTIME and not xdist_controller:
        os.environ.pop("LD_PRELOAD", None)


def python_env(env=None):
    """The environment for a child Python that imports dlbridge (`env`, default this
    one's): under `make test-asan` it gets the ASan runtime back."""
    env = dict(os.environ if env is None else env)
    if ASAN_RUNTIME:
        env["LD_PRELOAD"] = ASAN_RUNTIME
    return env


def run_python(code, env=None):
    """Runs code in a fresh interpreter (with `env`, default this one's environment)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=python_env(env),
                          timeout=120)

import ml_dtypes
import numpy as np
import pytest

# Every CUDA request on a machine without a CUDA device must say this.
NO_CUDA = r"(?i)no CUDA device or driver"


def without_cuda():
    """Marks a test of what dlbridge does without a CUDA device: skipped where one is present
    (tests/python/gpu checks the device)."""
    import dlbridge

    return pytest.mark.skipif(dlbridge.cuda.is_available(), reason="a CUDA device is present")


def cuda_or_no_cuda_error(make):
    """make() asks for a CUDA tensor: where a CUDA device is present it must give one on
    cuda:0, where none is it must raise the no-CUDA RuntimeError."""
    import dlbridge

    if dlbridge.cuda.is_available():
        t = make()
        assert isinstance(t, dlbridge.Tensor) and t.device == dlbridge.device("cuda", 0), t
    else:
        with pytest.raises(RuntimeError, match=NO_CUDA):
            make()


def jax_on_cpu():
    """A context in which JAX puts new arrays on its CPU client: its default device is a GPU
    where one is present, and the tests outside tests/python/gpu are about the CPU exchange."""
    import jax

    return jax.default_device(jax.devices("cpu")[0])


# (name, numpy dtype). The name is both the dlbridge and the torch attribute.
DTYPES = [
    ("bool", np.dtype(np.bool_)),
    ("uint8", np.dtype(np.uint8)),
    ("int8", np.dtype(np.int8)),
    ("int16", np.dtype(np.int16)),
    ("int32", np.dtype(np.int32)),
    ("int64", np.dtype(np.int64)),
    ("uint16", np.dtype(np.uint16)),
    ("uint32", np.dtype(np.uint32)),
    ("uint64", np.dtype(np.uint64)),
    ("float16", np.dtype(np.float16)),
    ("float32", np.dtype(np.float32)),
    ("float64", np.dtype(np.float64)),
    ("complex64", np.dtype(np.complex64)),
    ("complex128", np.dtype(np.complex128)),
    ("bfloat16", np.dtype(ml_dtypes.bfloat16)),
]
DTYPE_NAMES = [name for name, _ in DTYPES]
NP_DTYPE = dict(DTYPES)
FLOAT_NAMES = ["float16", "bfloat16", "float32", "float64"]
COMPLEX_NAMES = ["complex64", "complex128"]
INT_NAMES = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]


class OldStyleProducer:
    """A producer predating DLPack 1.0: its `__dlpack__` takes no `max_version` (as ONNX
    Runtime's OrtValue), so consumers must retry without it, as the spec says."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, stream=None):
        return self.x.__dlpack__()

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


@pytest.fixture(scope="session")
def ext():
    """examples/pyo3-scale's module (`dlbridge_scale`), which `make test` builds
    (`make example-pyo3`); without it the tests that use it fail with that hint, since
    they are what shows the pyo3 layer works from another crate."""
    try:
        import dlbridge_scale
    except ImportError:
        pytest.fail("dlbridge_scale is not installed: `make example-pyo3` builds it (make test does)")
    return dlbridge_scale


def sample(name, shape=(2, 3)):
    """A small array of the given dtype name with distinct, exactly representable values."""
    dt = NP_DTYPE[name]
    n = int(np.prod(shape, dtype=np.int64))
    base = np.arange(n)
    if name == "bool":
        vals = base % 3 == 0
    elif name in COMPLEX_NAMES:
        vals = (base % 7 + 1) + 1j * (base % 5 - 2)
    else:
        vals = base % 7 + 1
    return np.asarray(vals).astype(dt).reshape(shape)


def other_value(name):
    """A scalar of that dtype that `sample` never produces."""
    if name == "bool":
        return False  # sample()[0] is True
    if name in COMPLEX_NAMES:
        return 9 - 3j
    return 9


def ptr(a):
    """Address of the first element of a numpy array."""
    return a.__array_interface__["data"][0]


def is_capsule(c, name):
    """c is a PyCapsule named `name` (e.g. "dltensor", "dltensor_versioned")."""
    return type(c).__name__ == "PyCapsule" and f'"{name}"' in repr(c)


def collect():
    for _ in range(2):
        gc.collect()


def hammer(counts, step, seconds=3.0):
    """Runs step() in a loop on one thread per row of `counts` for `seconds`; each
    round also adds 1 to the thread's own row. Fails on any thread's error, and on
    a row whose count is not exactly its thread's number of rounds (a lost or
    doubled in-place update)."""
    import threading
    import time

    rows = counts.shape[0]
    errors, rounds = [], [0] * rows
    deadline = time.monotonic() + seconds

    def work(i):
        try:
            mine = counts[i]
            while time.monotonic() < deadline:
                mine.add_(1)
                step()
                rounds[i] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(rows)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert all(n > 0 for n in rounds), rounds
    got = counts.cpu().numpy()
    for i in range(rows):
        assert (got[i] == rounds[i]).all(), f"row {i}: lost or doubled in-place updates"


def rss_kib():
    """This process's resident memory in KiB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.fixture
def no_leak():
    """Yields dlbridge's live storage count and asserts the test left it unchanged.

    Objects alive before the test are frozen (gc.freeze) for its duration, so that the
    many gc.collect() calls of the lifetime tests scan only what the test made.
    """
    import dlbridge as db  # imported here so test_formatting.py runs without a built dlbridge

    gc.collect()
    gc.freeze()
    try:
        base = db._core.live_storages()
        yield base
        collect()
        assert db._core.live_storages() == base, "storages leaked (or freed too often)"
    finally:
        gc.unfreeze()
