"""Parent and child processes taking turns over real multiprocessing channels, for the
tests of tensors sent between processes (test_shared_memory.py, gpu/test_ipc.py).

Every wait is bounded (TIMEOUT) and every child started through the `start` fixture is
joined, or killed and reported, at the end of its test; nothing sleeps to synchronise. A
child body wrapped in `reporting` sends its own failure back as ("error", traceback),
which `reply` raises in the parent, instead of leaving the parent to time out.
"""

import contextlib
import functools
import multiprocessing as mp
import os
import traceback

import pytest

from conftest import ASAN_RUNTIME

TIMEOUT = 60  # seconds any one wait may take (spawned children import numpy and dlbridge)


class QueueEnd:
    """One end of a two-way channel made of two multiprocessing queues."""

    def __init__(self, out, inp):
        self.out, self.inp = out, inp

    def send(self, x):
        self.out.put(x)

    def recv(self):
        return self.inp.get(timeout=TIMEOUT)


class PipeEnd:
    """One end of a duplex multiprocessing pipe, with bounded waits."""

    def __init__(self, conn):
        self.conn = conn

    def send(self, x):
        self.conn.send(x)

    def recv(self):
        if not self.conn.poll(TIMEOUT):
            raise TimeoutError(f"nothing arrived within {TIMEOUT} s")
        return self.conn.recv()


def channel(ctx, kind):
    """(parent end, child end) of a Queue or Pipe channel."""
    if kind == "queue":
        a, b = ctx.Queue(), ctx.Queue()
        return QueueEnd(a, b), QueueEnd(b, a)
    p, c = ctx.Pipe()
    return PipeEnd(p), PipeEnd(c)


@contextlib.contextmanager
def child_env():
    """Under `make test-asan` spawned interpreters need the ASan runtime preloaded
    (conftest takes it out of this process's environment)."""
    if not ASAN_RUNTIME:
        yield
        return
    old = os.environ.get("LD_PRELOAD")
    os.environ["LD_PRELOAD"] = ASAN_RUNTIME
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = old


@pytest.fixture
def start():
    """start(method, target, *args) -> a started Process; all are joined or killed after the test."""
    procs = []

    def run(method, target, *args):
        ctx = mp.get_context(method)
        p = ctx.Process(target=target, args=args, daemon=True)
        with child_env():
            p.start()
        procs.append(p)
        return p

    yield run
    for p in procs:
        p.join(TIMEOUT)
        if p.is_alive():
            p.kill()
            p.join(TIMEOUT)
            pytest.fail(f"child {p.pid} did not finish within {TIMEOUT} s")


def reply(end, ok=None):
    """What a child's answer was, raising the child's own traceback if it failed."""
    msg = end.recv()
    if isinstance(msg, tuple) and msg and msg[0] == "error":
        pytest.fail(f"the child failed:\n{msg[1]}")
    if ok is not None:
        assert msg[0] == ok, msg
    return msg


def reporting(body):
    """Runs a child's body; any failure goes back to the parent as ("error", traceback)."""

    @functools.wraps(body)  # picklable by name: spawned children look it up in this module
    def child(end, *args):
        try:
            body(end, *args)
        except BaseException:  # noqa: BLE001 - the parent reports it
            end.send(("error", traceback.format_exc()))

    return child
