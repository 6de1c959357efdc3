"""`python -m dlbridge doctor [--json]` against the real installed peers, run as a
subprocess as a user would; and its robustness against peers that crash, raise
or hang on import (fake modules put first on the path)."""

import importlib.machinery
import importlib.metadata
import json
import os
import subprocess
import sys

import pytest

from conftest import ASAN_RUNTIME, python_env
from dlbridge import _doctor, _peers

DTYPES = _doctor.DTYPES
RESULTS = {"zero-copy", "copied", "refused", "wrong-dtype", "wrong-values", "absent", "crashed"}


def doctor(*args, env=None):
    return subprocess.Popen([sys.executable, "-m", "dlbridge", "doctor", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=python_env(env))


@pytest.fixture(scope="module")
def runs():
    """(JSON report, its plain-text table): one run against every installed peer."""
    run = doctor("--json")
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    report = json.loads(out)
    return report, _doctor.format_table(report)


def peer(report, name):
    found = [p for p in report["peers"] if p["name"] == name]
    assert found, f"{name} not found"
    return found[0]


def test_json_shape(runs):
    report, _ = runs
    assert report["doctor"] == 1
    assert set(report) >= {"dlbridge", "python", "platform", "dtypes", "elapsed_s", "peers",
                           "other_dlpack_distributions"}
    assert report["dtypes"] == DTYPES and len(DTYPES) == 15
    assert set(report["dlbridge"]) >= {"version", "path", "cuda_available", "cuda"}
    for p in report["peers"]:
        assert set(p) >= {"name", "display", "module", "distribution", "version", "status", "error",
                          "import_s", "probe_s", "wall_s", "devices"}
        assert p["status"] == "ok", (p["name"], p["error"])
        assert p["import_s"] >= 0 and p["probe_s"] >= 0 and p["wall_s"] > 0
        assert set(p["devices"]) == {"cpu", "cuda"}
        for device, rep in p["devices"].items():
            if "skipped" in rep:
                assert rep["skipped"]
                continue
            assert set(rep) >= {"into_peer", "from_peer", "read_only", "protocol", "stream"}
            for direction in ("into_peer", "from_peer"):
                assert list(rep[direction]) == DTYPES
                for cell in rep[direction].values():
                    assert set(cell) == {"result", "error", "note"}
                    assert cell["result"] in RESULTS
                    if cell["result"] == "refused":
                        assert cell["error"]
                    elif cell["result"] == "absent":
                        assert cell["error"] or cell["note"]
                    else:
                        assert cell["error"] is None
            assert set(rep["read_only"]) == {"into_peer", "from_peer"}
            assert set(rep["protocol"]) == {"into_peer", "from_peer", "keywords"}
    if not report["dlbridge"]["cuda_available"]:
        for p in report["peers"]:
            assert "skipped" in p["devices"]["cuda"]
            cpu = p["devices"]["cpu"]
            assert "skipped" in cpu or cpu["stream"] == "n/a (no CUDA)"


def test_finds_every_installed_known_peer_with_its_version(runs):
    report, _ = runs
    names = {p["name"] for p in report["peers"]}
    for name, _display, module, dists, *_ in _peers.PEERS:
        # PathFinder: not conftest's hook, which imports paddle on any look-up of tensorflow
        installed = importlib.machinery.PathFinder.find_spec(module) is not None
        assert (name in names) == installed, name
        if installed:
            p = peer(report, name)
            for d in dists:
                try:
                    assert p["version"].startswith(importlib.metadata.version(d).split("+")[0])
                    break
                except importlib.metadata.PackageNotFoundError:
                    continue
    assert "dlbridge" not in {d["name"] for d in report["other_dlpack_distributions"]}


def test_numpy_and_torch_are_zero_copy_both_ways_for_float32(runs):
    report, _ = runs
    for name in ("numpy", "torch"):
        cpu = peer(report, name)["devices"]["cpu"]
        assert cpu["into_peer"]["float32"]["result"] == "zero-copy"
        assert cpu["from_peer"]["float32"]["result"] == "zero-copy"
    # and what dlbridge's own tests prove for torch: every dtype, both ways
    torch_cpu = peer(report, "torch")["devices"]["cpu"]
    assert {c["result"] for c in torch_cpu["into_peer"].values()} == {"zero-copy"}
    assert {c["result"] for c in torch_cpu["from_peer"].values()} == {"zero-copy"}


def test_refused_dtypes_are_reported_with_the_reason(runs):
    report, _ = runs
    np_cpu = peer(report, "numpy")["devices"]["cpu"]
    cell = np_cpu["into_peer"]["bfloat16"]  # NumPy has no bfloat16 DLPack import
    assert cell["result"] == "refused"
    assert cell["error"].startswith("RuntimeError: ") and "dtype" in cell["error"]
    names = {p["name"] for p in report["peers"]}
    if "warp" in names:
        cell = peer(report, "warp")["devices"]["cpu"]["into_peer"]["complex64"]
        assert cell == {"result": "refused", "error": "RuntimeError: Warp does not support complex types",
                        "note": None}
    if "onnxruntime" in names:
        cpu = peer(report, "onnxruntime")["devices"]["cpu"]
        assert cpu["into_peer"]["complex128"]["result"] == "refused"
        assert "Unsupported DLPack data type: code 5, bits 128" in cpu["into_peer"]["complex128"]["error"]
        assert cpu["from_peer"]["complex64"]["result"] == "absent"


def test_read_only_and_paths_match_what_the_peer_tests_prove(runs):
    report, _ = runs
    np_cpu = peer(report, "numpy")["devices"]["cpu"]
    assert np_cpu["read_only"]["into_peer"]["result"] == "honoured"
    assert np_cpu["read_only"]["from_peer"]["result"] == "read-only"
    assert peer(report, "torch")["devices"]["cpu"]["read_only"]["into_peer"]["result"] == "ignored"
    names = {p["name"] for p in report["peers"]}
    if "jax" in names:
        assert peer(report, "jax")["devices"]["cpu"]["read_only"]["from_peer"]["result"] == "read-only"
    if "tvm_ffi" in names:
        tvm = peer(report, "tvm_ffi")["devices"]["cpu"]
        assert tvm["protocol"]["into_peer"] == "dlbridge's DLPack C exchange table"
        assert tvm["read_only"]["into_peer"]["result"] == "no-writes"
    if "paddle" in names:
        assert peer(report, "paddle")["devices"]["cpu"]["protocol"]["from_peer"] == \
            "the peer's DLPack C exchange table"


def test_table_mentions_every_found_peer(runs):
    report, text = runs
    assert report["peers"]
    for p in report["peers"]:
        assert p["display"] in text
        assert f"dlbridge -> {p['display']}" in text or p["devices"]["cpu"].get("skipped")
    assert "Z zero-copy" in text and "Done in" in text
    assert "PyTorch: zero-copy both ways, all 15 dtypes; PyTorch ignores READ_ONLY" in text
    assert text == text.encode("ascii", "replace").decode()  # plain text


def test_plain_text_run_prints_the_table():
    run = doctor("--peer", "numpy", "--peer", "torch")
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    assert "NumPy" in out and "PyTorch" in out and "dlbridge -> PyTorch" in out
    assert not out.lstrip().startswith("{")


def test_doctor_is_fast(runs):
    if ASAN_RUNTIME:
        pytest.skip("under AddressSanitizer every peer runs several times slower: no time bound")
    report, _ = runs
    assert report["elapsed_s"] < 120
    for p in report["peers"]:
        assert p["probe_s"] < 30, p["name"]


FAKES = {
    "warp": "import ctypes\nctypes.string_at(0)\n",  # a segfault on import
    "tvm_ffi": "raise ImportError('this fake tvm_ffi is broken')\n",
    "onnxruntime": "import time\ntime.sleep(60)\n",  # a hang
}


def test_a_peer_that_crashes_raises_or_hangs_is_reported_not_fatal(tmp_path):
    for name, code in FAKES.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    # The time limit lets NumPy's probe finish on a loaded 2-core machine
    # (under AddressSanitizer 5 s was too short there) and stops the fake
    # hang (60 s) well before it ends.
    timeout = "30" if ASAN_RUNTIME else "10"
    args = ["--json", "--timeout", timeout, "--jobs", "4", "--peer", "numpy", *(a for n in FAKES for a in ("--peer", n))]
    run = doctor(*args, env=env)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err[-2000:]
    report = json.loads(out)
    status = {p["name"]: (p["status"], p["error"]) for p in report["peers"]}
    assert status["numpy"] == ("ok", None)
    # A segfault (under AddressSanitizer: its SEGV report and SIGABRT).
    assert status["warp"][0] == "crashed" and "SEGV" in status["warp"][1] and "import" in status["warp"][1]
    assert status["tvm_ffi"] == ("import-error", "ImportError: this fake tvm_ffi is broken")
    assert status["onnxruntime"][0] == "timed-out"
    table = _doctor.format_table(report)
    assert f"crashed: killed by {'SIGABRT' if ASAN_RUNTIME else 'SIGSEGV'}" in table and "timed-out" in table


def test_usage_without_a_command():
    run = subprocess.run([sys.executable, "-m", "dlbridge"], capture_output=True, text=True, timeout=60,
                         env=python_env())
    assert run.returncode == 2 and "python -m dlbridge doctor" in run.stderr


def test_notes_and_errors_are_never_cut(runs):
    """Every note and error of the JSON report is in the table whole (wrapped, not cut)."""
    report, text = runs
    flat = " ".join(text.split())
    for p in report["peers"]:
        for rep in p["devices"].values():
            for direction in ("into_peer", "from_peer"):
                for cell in rep.get(direction, {}).values():
                    for said in (cell["error"], cell["note"]):
                        if said:
                            assert " ".join(said.split()) in flat, said
            for side in rep.get("read_only", {}).values():
                assert " ".join(side["detail"].split()) in flat
    assert "pointer unread" not in text and "zero-copy not shown" not in text  # plain words


def test_each_peer_has_one_summary_line(runs):
    report, text = runs
    for p in report["peers"]:
        lines = [x for x in text.splitlines() if x.startswith(p["display"] + ": ")]
        assert len(lines) == 1, (p["display"], lines)


def test_rows_stream_as_each_peer_finishes_with_progress_on_stderr(tmp_path):
    """NumPy's block is on stdout while a hanging peer still runs; stderr says which
    peers run and which are done."""
    (tmp_path / "onnxruntime").mkdir()
    (tmp_path / "onnxruntime" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    run = doctor("--peer", "numpy", "--peer", "onnxruntime", "--timeout", "40", env=env)
    seen_while_running = False
    for line in run.stdout:
        if line.startswith("NumPy: "):
            seen_while_running = run.poll() is None
            break
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err[-2000:]
    assert seen_while_running, "NumPy's rows came only at the end"
    assert "doctor: probing NumPy..." in err and "doctor: NumPy done in" in err
    assert "ONNX Runtime: timed-out" in out


def _numpy_bfloat16(env=None):
    run = doctor("--json", "--peer", "numpy", env=env)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    cpu = json.loads(out)["peers"][0]["devices"]["cpu"]
    return cpu["into_peer"]["bfloat16"], cpu["from_peer"]["bfloat16"]


def test_a_dtype_numpy_lacks_reads_the_same_with_or_without_ml_dtypes(tmp_path):
    """NumPy has no bfloat16 of its own: the doctor says so in both directions, whether
    ml_dtypes (which adds one) is installed or not (a fake that fails to import)."""
    into, out = _numpy_bfloat16()
    (tmp_path / "ml_dtypes").mkdir()
    (tmp_path / "ml_dtypes" / "__init__.py").write_text("raise ImportError('no ml_dtypes here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    into_without, out_without = _numpy_bfloat16(env)
    lacks = "NumPy has no bfloat16 of its own"
    assert into["result"] == into_without["result"] == "refused"
    assert into["note"] == into_without["note"] == lacks
    assert out["result"] == "zero-copy" and out["note"].startswith(lacks) and "ml_dtypes" in out["note"]
    assert out_without == {"result": "absent", "error": None,
                           "note": lacks + "; ml_dtypes, which adds one, is not installed"}


def test_one_registry_for_the_doctor_and_the_peer_tests():
    """Every peer of dlbridge._peers has its test module, every test_peer_*.py is a
    registry peer's, and the doctor probes exactly the registry's peers."""
    here = os.path.dirname(os.path.abspath(__file__))
    for p in _peers.PEERS:
        assert os.path.isfile(os.path.join(here, p.test_module + ".py")), p
    in_registry = {p.test_module for p in _peers.PEERS}
    for f in os.listdir(here):
        if f.startswith("test_peer_") and f.endswith(".py"):
            assert f[:-3] in in_registry, f
    from dlbridge import _doctor_probe

    assert set(_doctor_probe.PEER_CLASSES) == set(_peers.BY_NAME)
