"""The GPU batch scripts (tests/gpu/), as far as a machine without a GPU can check them:
run_on_gpu.sh runs its steps under their time limits and always leaves its one-page
summary and full logs; the GPU suite inside it skips with its reason; the sanitizer
workload's own checks are right (run on the host). On a GPU machine the batch itself is the
test, so these skip there.
"""

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import dlbridge as db
from conftest import python_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "gpu" / "run_on_gpu.sh"
WORKLOAD = ROOT / "tests" / "gpu" / "sanitizer_workload.py"

pytestmark = pytest.mark.skipif(
    db.cuda.is_available(), reason="a CUDA device is present: tests/gpu/run_on_gpu.sh is run for real there")


def run_batch(out, steps, *, seconds=500, wheels="no-such-folder", installed=True,
              k="share_memory_is_a_no_op or test_nothing_else"):
    # -k: the batch's pytest steps run one test each here (the main run covers the rest).
    env = python_env(dict(os.environ, OUT=str(out), PYTHON=sys.executable, GPU_BATCH_STEPS=steps,
               GPU_BATCH_SECONDS=str(seconds), GPU_BATCH_K=k))  # the ASan runtime under make test-asan
    env.pop("GPU_BATCH_USE_INSTALLED", None)
    if installed:
        env["GPU_BATCH_USE_INSTALLED"] = "1"
    return subprocess.run(["bash", str(SCRIPT), wheels], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=seconds + 60)


def summary_rows(out):
    text = (out / "summary.md").read_text()
    return text, {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}


def test_the_batch_without_a_gpu_skips_the_suite_with_its_reason_and_writes_the_summary(tmp_path):
    r = run_batch(tmp_path, "env gpu sanitizer bench")
    text, rows = summary_rows(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr + text
    # -k left one test, and it skipped (pytest-xdist's summary has no "deselected").
    assert re.search(r"\b1 skipped\b", rows["gpu"]) and "passed" not in rows["gpu"], text
    assert "no CUDA device" in text and "the GPU suite needs one" in text, text
    assert "cuda available: False" in text  # the env step's versions head the page
    assert "compute-sanitizer" in rows["memcheck" if "memcheck" in rows else "sanitizer"]
    assert "bench/bench_cuda.py" in text
    with tarfile.open(tmp_path / "logs.tar.gz") as logs:
        names = {Path(n).name for n in logs.getnames()}
    assert {"env.log", "gpu.log", "bench.log"} <= names, names


def test_a_spent_budget_still_leaves_a_summary_naming_the_steps_not_run(tmp_path):
    r = run_batch(tmp_path, "gpu seeds", seconds=5)
    text, rows = summary_rows(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not run" in rows["gpu"] and "not run" in rows["seeds"], text


def test_a_failing_step_fails_the_batch_and_shows_its_last_lines(tmp_path):
    # The C suite pointed at a folder with no prebuilt library fails (prepare.sh was not run).
    r = run_batch(tmp_path, "capi nonsense", k="test_c_abi_from_cpp")
    text, rows = summary_rows(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr + text
    assert "unknown step" in rows["nonsense"], text
    assert "## capi: last lines" in text and "has no libdlbridge.so" in text, text


def test_without_a_wheel_the_batch_says_to_run_prepare(tmp_path):
    r = run_batch(tmp_path, "env", installed=False)
    text, rows = summary_rows(tmp_path)
    assert r.returncode == 1 and "run tests/gpu/prepare.sh first" in rows["install"], text


def test_the_sanitizer_workload_is_right_on_the_host():
    r = subprocess.run([sys.executable, str(WORKLOAD), "--device", "cpu"], cwd=ROOT, env=python_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "0 failures" in r.stdout, r.stdout + r.stderr
