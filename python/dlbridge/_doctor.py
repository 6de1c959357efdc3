"""``python -m dlbridge doctor [--json]``: which DLPack libraries are installed,
and what exchanging tensors with each of them gives, both ways, dtype by dtype.

For every known peer that is installed (NumPy, PyTorch, JAX, CuPy, TensorFlow,
PaddlePaddle, ONNX Runtime, Warp, tvm-ffi) the doctor imports it and tries, on
the CPU (and on CUDA when ``dlbridge.cuda.is_available()`` and the peer has
CUDA), for each of dlbridge's 15 dtypes:

- ``into_peer``: the peer's own ``from_dlpack`` of a dlbridge tensor;
- ``from_peer``: ``dlbridge.from_dlpack`` of a tensor the peer made;

and reports each as ``zero-copy`` (the same memory, the same dtype and values),
``copied`` (right dtype and values, other memory), ``refused`` (the import
raised: ``error`` has the exception type and a short message),
``wrong-dtype`` / ``wrong-values`` (``note`` says what arrived), or, for
``from_peer``, ``absent`` (the peer cannot make a tensor of that dtype). Data
pointers and dtypes of peer tensors are read from the DLPack capsule the peer
itself exports (with ctypes), not through dlbridge. It also reports whether
READ_ONLY is honoured each way, which path and keywords each direction uses
(the DLPack C exchange table or ``__dlpack__``), which ``stream`` keyword the
peer passes on CUDA, and the time each peer takes to import and to probe.
Installed distributions whose metadata mentions DLPack but that the doctor
does not know are listed, never imported.

The peers are those of the registry ``dlbridge._peers`` (which the peer tests
read too). Each is probed in a child process of its own (``python -m
dlbridge._doctor_probe NAME``, ``dlbridge._doctor_probe``), because a peer can take the whole
interpreter down: importing TensorFlow before PaddlePaddle crashes it, and a
native exchange can segfault. A crash, a failed import, an exception or a hang
(``--timeout``) is reported for that peer, with the step it was at, and never
stops the doctor. Children run in parallel (``--jobs``). The plain-text report
(``dlbridge._doctor_text``) prints each peer's block as soon as that peer is
done, opening with one summary line in plain words; a progress line says which
peers are still running (on stderr: rewritten in place on a terminal, a line
per event otherwise).

JSON document (``--json``; the keys are stable, new ones may be added)::

    {
      "doctor": 1,                       # version of this format
      "dlbridge": {"version": str, "path": str,
                   "cuda_available": bool, "cuda": str},   # "cuda": why not, or the device count
      "python": str, "platform": str,
      "dtypes": [str, ...],              # dlbridge's dtype names, in table order
      "elapsed_s": float,
      "peers": [{
        "name": str,                     # numpy, torch, jax, cupy, tensorflow, paddle,
                                         # onnxruntime, warp, tvm_ffi
        "display": str, "module": str, "distribution": str | null,
        "version": str | null,
        "status": "ok" | "import-error" | "probe-error" | "crashed" | "timed-out",
        "error": str | null,             # what went wrong, for any status but "ok"
        "import_s": float | null, "probe_s": float | null, "wall_s": float,
        "devices": {
          "cpu" | "cuda": {              # or {"skipped": reason}
            "into_peer": {dtype: CELL}, "from_peer": {dtype: CELL},
            "read_only": {
              "into_peer": {"result": "refused" | "copied" | "honoured" | "ignored" | "no-writes"
                                      | "n/a", "detail": str},
              "from_peer": {"result": "read-only" | "writable" | "refused" | "n/a", "detail": str}},
            "protocol": {"into_peer": str, "from_peer": str, "keywords": str},
            "stream": str                # CUDA: the stream keyword the peer passes; else "n/a (...)"
          }
        }
      }],
      "other_dlpack_distributions": [{"name": str, "version": str}]
    }

    CELL = {"result": "zero-copy" | "copied" | "refused" | "wrong-dtype" | "wrong-values"
                      | "absent" | "crashed",
            "error": str | null, "note": str | null}

``read_only.into_peer``: a read-only dlbridge tensor given to the peer is
``refused``, ``copied``, imported with writes then refused (``honoured``),
written into (``ignored``), or imported by a peer without in-place writes
(``no-writes``; ``detail`` says whether the peer's own export still says
READ_ONLY). ``read_only.from_peer``: dlbridge's import of a read-only peer
tensor (a non-writeable NumPy array, a JAX array, a TensorFlow tensor, an
OrtValue over a non-writeable array), ``n/a`` for peers without any.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from ._doctor_probe import DTYPES, PEER_CLASSES
from ._doctor_text import format_foot, format_head, format_peer, format_table
from ._peers import BY_NAME, PEERS, find_peers, other_dlpack_distributions

__all__ = ["DTYPES", "PEERS", "diagnose", "format_table", "main"]


# ---------------------------------------------------------------- running the probes

def _child_env():
    import dlbridge

    env = dict(os.environ)
    # The child must import this very dlbridge: from a source tree or an
    # editable install its directory goes first. An installed one is in the
    # child's own site-packages already; put first, that directory would
    # shadow the user's PYTHONPATH (a peer installed there as well as in
    # PYTHONPATH was probed from site-packages).
    import site

    root = os.path.dirname(os.path.dirname(os.path.abspath(dlbridge.__file__)))
    installed = {os.path.abspath(p) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if root not in installed:
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's C++ logging
    env.setdefault("GLOG_minloglevel", "2")  # Paddle's
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX must not take the GPU's memory
    return env


def run_probe(peer, timeout, env):
    """Runs one peer's probe in a child process; returns its report (never raises)."""
    name, display, module, dist, version = peer
    report = {"name": name, "display": display, "module": module, "distribution": dist, "version": version,
              "status": "ok", "error": None, "import_s": None, "probe_s": None, "wall_s": 0.0,
              "devices": {}}
    cmd = [sys.executable, "-m", "dlbridge._doctor_probe", name]
    start = time.perf_counter()
    stdout, stderr, code = b"", b"", None
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env)
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as e:
        stdout, stderr = e.stdout or b"", e.stderr or b""
        report["status"], report["error"] = "timed-out", f"no answer within {timeout:g} s"
    except OSError as e:
        report["status"], report["error"] = "probe-error", f"could not start {sys.executable}: {e}"
    report["wall_s"] = round(time.perf_counter() - start, 3)
    last_step, finished = None, False
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        kind = ev.pop("event", None)
        if kind == "imported":
            report["version"] = ev.get("version") or report["version"]
            report["import_s"] = ev.get("import_s")
        elif kind == "import-error":
            report["status"], report["error"] = "import-error", ev.get("error")
            report["import_s"] = ev.get("import_s")
        elif kind == "step":
            last_step = ev.get("what")
        elif kind == "device":
            report["devices"][ev["device"]] = ev["report"]
        elif kind == "done":
            report["probe_s"], finished = ev.get("probe_s"), True
        elif kind == "error":
            report["status"], report["error"] = "probe-error", ev.get("error")
    if report["status"] == "ok" and not finished:
        if code is not None and code < 0:
            import signal

            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = str(-code)
            report["status"], report["error"] = "crashed", f"killed by {sig}"
        else:
            report["status"], report["error"] = "probe-error", f"exited with status {code}"
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        if tail:
            report["error"] += ": " + " | ".join(t.strip() for t in tail)
    if report["status"] in ("crashed", "timed-out", "probe-error") and last_step and not finished:
        report["error"] = f"{report['error']} (while: {last_step})"
    return report


class Progress:
    """The line that says which peers are still being probed, on stderr: rewritten in
    place on a terminal (every half second, with the seconds each has run), a line per
    start and finish otherwise."""

    def __init__(self, total, stream=sys.stderr):
        self.total, self.stream, self.done = total, stream, 0
        self.tty = stream.isatty()
        self.running = {}  # display -> start time
        self.lock = threading.Lock()
        self.stop = threading.Event()
        if self.tty and total:
            threading.Thread(target=self._tick, daemon=True).start()

    def _line(self):
        now = time.perf_counter()
        running = ", ".join(f"{d} {now - s:.0f} s" for d, s in self.running.items())
        return f"doctor: {self.done} of {self.total} peers done" + (f"; probing {running}" if running else "")

    def _tick(self):
        while not self.stop.wait(0.5):
            with self.lock:
                self.stream.write("\r\x1b[K" + self._line())
                self.stream.flush()

    def clear(self):
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def started(self, display):
        with self.lock:
            self.running[display] = time.perf_counter()
            if not self.tty:
                self.stream.write(f"doctor: probing {display}...\n")
                self.stream.flush()

    def finished(self, display, wall_s, write_block=None):
        with self.lock:
            self.running.pop(display, None)
            self.done += 1
            self.clear()
            if write_block:
                write_block()
            if self.tty:
                self.stream.write(self._line())
            else:
                self.stream.write(f"doctor: {display} done in {wall_s:.1f} s ({self.done} of {self.total})\n")
            self.stream.flush()

    def close(self):
        self.stop.set()
        with self.lock:
            self.clear()


def _dlbridge_info():
    import dlbridge

    cuda_ok = dlbridge.cuda.is_available()
    if cuda_ok:
        cuda = f"{dlbridge.cuda.device_count()} device(s)"
    else:
        try:
            dlbridge.zeros(1, device="cuda")
            cuda = "not available"
        except Exception as e:  # noqa: BLE001 - its message says why
            cuda = str(e).split("\n")[0]
    return {"version": dlbridge.__version__, "path": os.path.dirname(dlbridge.__file__),
            "cuda_available": cuda_ok, "cuda": cuda}


def diagnose(only=None, timeout=120.0, jobs=None, on_start=None, on_done=None, progress=None):
    """The whole report as a dict (the JSON document). ``on_start(report)`` is called
    before the probes (the report without peers), ``on_done(peer_report)`` as each peer
    finishes; ``progress`` (a Progress) is told of each start and finish."""
    start = time.perf_counter()
    peers = find_peers()
    if only:
        wanted = set(only)
        peers = [p for p in peers if p[0] in wanted]
    report = {
        "doctor": 1,
        "dlbridge": _dlbridge_info(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dtypes": DTYPES,
        "elapsed_s": 0.0,
        "peers": [],
        "other_dlpack_distributions": [],
    }
    if on_start:
        on_start(report)
    env = _child_env()
    jobs = jobs or max(1, min(4, os.cpu_count() or 1))

    def one(peer):
        if progress:
            progress.started(peer[1])
        return run_probe(peer, timeout, env)

    reports = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(one, p): p[0] for p in peers}
        for f in as_completed(futures):
            r = reports[futures[f]] = f.result()
            block = (lambda r=r: on_done(r)) if on_done else None
            if progress:
                progress.finished(r["display"], r["wall_s"], block)
            elif block:
                block()
    report["peers"] = [reports[p[0]] for p in peers]  # registry order
    report["other_dlpack_distributions"] = other_dlpack_distributions()
    report["elapsed_s"] = round(time.perf_counter() - start, 3)
    return report


# ---------------------------------------------------------------- command line

def main(argv=None):
    names = sorted(p.name for p in PEERS)
    parser = argparse.ArgumentParser(
        prog="python -m dlbridge doctor",
        description="Finds the installed DLPack libraries and tries exchanging tensors with each, both ways, "
                    "per dtype (each library in a child process of its own).")
    parser.add_argument("--json", action="store_true", help="print a JSON document (keys: see the module docstring)")
    parser.add_argument("--peer", action="append", metavar="NAME", choices=names,
                        help="probe only this peer (repeatable): " + ", ".join(names))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per peer (default 120)")
    parser.add_argument("--jobs", type=int, default=None, help="peers probed at once (default: up to 4)")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    args = parser.parse_args(argv)
    total = len([p for p in find_peers() if not args.peer or p[0] in args.peer])
    progress = None if args.quiet else Progress(total)
    try:
        if args.json:
            report = diagnose(args.peer, args.timeout, args.jobs, progress=progress)
            print(json.dumps(report, indent=2))
            return 0

        def out(text):
            print(text, flush=True)

        report = diagnose(args.peer, args.timeout, args.jobs, progress=progress,
                          on_start=lambda r: out(format_head(r)),
                          on_done=lambda p: out(format_peer(p, DTYPES)))
    finally:
        if progress:
            progress.close()
    out(format_foot(report))
    return 0


assert set(PEER_CLASSES) == set(BY_NAME), "every registry peer has a probe (dlbridge._doctor_probe)"

if __name__ == "__main__":
    sys.exit(main())
