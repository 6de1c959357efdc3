"""The type stubs (python/dlbridge/_core.pyi, return_types.pyi, __init__.py) are exact:
`mypy --strict` accepts tests/typing/tour_typed.py, which uses docs/tour.md's API the ways
the runtime accepts (shapes as ints or as one sequence, `to` with a device, a dtype or a
tensor, `shape` as a `Size`), and the same script runs. mypy is pinned in
requirements-dev.txt."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import python_env

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "tests" / "typing" / "tour_typed.py"


def _mypy(*paths):
    pytest.importorskip("mypy", reason="mypy is not installed (requirements-dev.txt pins it)")
    cache = ROOT / "target" / "mypy-cache"
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), *map(str, paths)],
                          capture_output=True, text=True, timeout=600, env=python_env(), cwd=ROOT)


def test_tour_script_runs():
    r = subprocess.run([sys.executable, str(TOUR)], capture_output=True, text=True, timeout=120,
                       env=python_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every call accepted" in r.stdout


def test_mypy_strict_accepts_the_tour(tmp_path):
    r = _mypy(TOUR)
    assert r.returncode == 0, r.stdout + r.stderr
    # ...and rejects what the runtime refuses (so the check cannot pass on Any).
    bad = tmp_path / "bad.py"
    bad.write_text("import dlbridge as db\n"
                   "t = db.zeros(2, 3)\n"
                   "t.reshape('a')\n"
                   "t.to(3.5)\n"
                   "n: str = t.shape\n"
                   "v: str = t.max(0).values\n")
    r = _mypy(bad)
    assert r.returncode == 1, r.stdout + r.stderr
    for line in (3, 4, 5, 6):
        assert f"bad.py:{line}: error" in r.stdout, r.stdout
