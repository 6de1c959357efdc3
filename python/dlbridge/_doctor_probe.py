"""The doctor's probe of one peer, run in a child process of its own
(``python -m dlbridge._doctor_probe NAME``): it imports the peer, tries every
exchange (see ``dlbridge._doctor`` for what is reported) and writes one JSON
event per line to stdout, so the parent knows the step it was at if the peer
crashes or hangs.
"""

import ctypes
import json
import os
import re
import sys
import time

DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Versioned(ctypes.Structure):  # DLManagedTensorVersioned, up to dl_tensor
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_GET_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_DL_NAMES = {(6, 8): "bool", (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
             (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64", (2, 16): "float16",
             (4, 16): "bfloat16", (2, 32): "float32", (2, 64): "float64", (5, 64): "complex64",
             (5, 128): "complex128"}
READ_ONLY = 1


def describe(x):
    """(data pointer, dtype name, READ_ONLY flag or None) of a peer tensor, read from
    the capsule its own ``__dlpack__`` gives (left unconsumed: its destructor frees it)."""
    try:
        cap = x.__dlpack__(max_version=(1, 3))
    except TypeError:  # a producer that predates max_version
        cap = x.__dlpack__()
    if '"dltensor_versioned"' in repr(cap):
        m = _Versioned.from_address(_GET_POINTER(cap, b"dltensor_versioned"))
        dl, flags = m.dl_tensor, m.flags & READ_ONLY
    else:
        dl, flags = _DLTensor.from_address(_GET_POINTER(cap, b"dltensor")), None
    name = _DL_NAMES.get((dl.dtype.code, dl.dtype.bits), f"code {dl.dtype.code}, {dl.dtype.bits} bits")
    return (dl.data or 0) + dl.byte_offset, name, flags


def _short(e):
    """'Type: message', the message's first two lines (never cut mid-text); a C++ source location
    and function signature in front of it (ONNX Runtime's) left out."""
    msg = " ".join(line.strip() for line in str(e).strip().splitlines()[:2])
    if msg.startswith("/") and re.match(r"^\S+\.(cc|cpp|cu|h|hpp):\d+ ", msg) and ") " in msg:
        msg = msg.rsplit(") ", 1)[1]
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def sample(name):
    """(2, 3) values of a dtype as a nested list (bfloat16: float values)."""
    vals = []
    for i in range(6):
        if name == "bool":
            vals.append(i % 3 == 0)
        elif name.startswith("complex"):
            vals.append(complex(i % 7 + 1, i % 5 - 2))
        elif name.startswith(("float", "bfloat")):
            vals.append(float(i % 7 + 1))
        else:
            vals.append(i % 7 + 1)
    return [vals[:3], vals[3:]]


def _numpy_sample(name):
    import numpy as np

    return np.array(sample(name), dtype="float32" if name == "bfloat16" else name)


def _bf16_bits(a):
    """bfloat16 bit patterns of float32 values that bfloat16 holds exactly."""
    import numpy as np

    return (np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


class Lacks(Exception):
    """The peer has no tensors of this dtype (the message says so in plain words)."""


class Peer:
    """How the doctor reaches one library. ``make(name, a, device)`` gets NumPy values
    (float32 for bfloat16) and returns a tensor of the peer's own."""

    takes_capsules = False  # its from_dlpack wants a capsule: the caller calls __dlpack__()
    lacks = {}  # dtype name -> why the peer has no such tensors (or has them only with an extra package)
    cpu = True  # None: it has no CPU tensors (the reason is cpu_note)
    cpu_note = ""

    def load(self):
        raise NotImplementedError

    def version(self):
        return getattr(self.m, "__version__", None)

    def cuda(self):
        """Whether the peer can hold CUDA tensors here."""
        return False

    def to_peer(self, t):
        """The peer's tensor over dlbridge tensor t (the array API's spelling)."""
        return self.m.from_dlpack(t)

    def make(self, name, a, device):
        raise NotImplementedError

    def write(self, x):
        """Writes 7 into float32 peer tensor x in place; None: no in-place writes."""
        return None

    def data_ptr(self, x):
        """The address of x's first element through the peer's own API, for a tensor its
        ``__dlpack__`` refuses to export (None: no such API)."""
        return None

    def read_only(self):
        """A read-only float32 tensor of the peer's (on the CPU), or None."""
        return None


class NumPy(Peer):
    def load(self):
        import numpy

        self.m = numpy

    # NumPy has no bfloat16 of its own; ml_dtypes (optional) adds one.
    lacks = {"bfloat16": "NumPy has no bfloat16 of its own"}

    def make(self, name, a, device):
        if name == "bfloat16":
            try:
                import ml_dtypes
            except ImportError:
                raise Lacks(self.lacks[name] + "; ml_dtypes, which adds one, is not installed") from None
            return a.astype(ml_dtypes.bfloat16)
        return a

    def write(self, x):
        x[...] = 7

    def data_ptr(self, x):
        return x.__array_interface__["data"][0]

    def read_only(self):
        a = self.m.arange(4, dtype="float32")
        a.flags.writeable = False
        return a


class Torch(Peer):
    def load(self):
        import torch

        self.m = torch

    def cuda(self):
        return self.m.cuda.is_available()

    def make(self, name, a, device):
        x = self.m.from_numpy(a.copy())
        if name == "bfloat16":
            x = x.to(self.m.bfloat16)
        return x.to(device)

    def write(self, x):
        x.fill_(7)


class Jax(Peer):
    def load(self):
        import jax

        jax.config.update("jax_enable_x64", True)  # keep 64-bit dtypes
        import jax.dlpack
        import jax.numpy as jnp

        self.m, self.jnp = jax, jnp

    def _gpu(self):
        try:
            return [d for d in self.m.devices() if d.platform in ("gpu", "cuda")]
        except RuntimeError:
            return []

    def cuda(self):
        return bool(self._gpu())

    def to_peer(self, t):
        return self.m.dlpack.from_dlpack(t)

    def make(self, name, a, device):
        x = self.jnp.asarray(a)
        if name == "bfloat16":
            x = x.astype(self.jnp.bfloat16)
        return self.m.device_put(x, self._gpu()[0]) if device == "cuda" else x

    def read_only(self):
        return self.jnp.arange(4, dtype="float32")


class CuPy(Peer):
    cpu = None
    cpu_note = "CuPy holds CUDA memory only"

    def load(self):
        import cupy

        self.m = cupy

    def cuda(self):
        try:
            return self.m.cuda.runtime.getDeviceCount() > 0
        except Exception:  # noqa: BLE001 - no driver
            return False

    def make(self, name, a, device):
        if name == "bfloat16":
            raise Lacks("CuPy has no bfloat16")
        return self.m.asarray(a)

    def write(self, x):
        x.fill(7)


class TensorFlow(Peer):
    takes_capsules = True

    def load(self):
        import tensorflow

        self.m = tensorflow

    def cuda(self):
        return bool(self.m.config.list_physical_devices("GPU"))

    def to_peer(self, t):
        return self.m.experimental.dlpack.from_dlpack(t.__dlpack__())

    def make(self, name, a, device):
        with self.m.device("GPU:0" if device == "cuda" else "CPU:0"):
            x = self.m.constant(a)
            return self.m.cast(x, self.m.bfloat16) if name == "bfloat16" else self.m.identity(x)

    def read_only(self):
        return self.m.constant([0.0, 1.0, 2.0, 3.0])


class Paddle(Peer):
    def load(self):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "No ccache found"
            import paddle
        self.m = paddle

    def cuda(self):
        try:
            return self.m.device.is_compiled_with_cuda() and self.m.device.cuda.device_count() > 0
        except Exception:  # noqa: BLE001
            return False

    def make(self, name, a, device):
        place = self.m.CUDAPlace(0) if device == "cuda" else self.m.CPUPlace()
        x = self.m.to_tensor(a, place=place)
        return x.astype("bfloat16") if name == "bfloat16" else x

    def write(self, x):
        x.fill_(7.0)


class OnnxRuntime(Peer):
    def load(self):
        import onnxruntime

        self.m = onnxruntime

    def cuda(self):
        return "CUDAExecutionProvider" in self.m.get_available_providers()

    def to_peer(self, t):
        return self.m.OrtValue.from_dlpack(t)

    def make(self, name, a, device):
        import numpy as np

        ov = self.m.OrtValue
        a = np.array(a, order="C")
        if name == "bfloat16":
            x = ov.ortvalue_from_shape_and_type(list(a.shape), 16, "cuda" if device == "cuda" else "cpu", 0)
            x.update_inplace(_bf16_bits(a))
            return x
        # memory ONNX Runtime owns (ortvalue_from_numpy would borrow the array's)
        x = ov.ortvalue_from_shape_and_type(list(a.shape), a.dtype.type, "cuda" if device == "cuda" else "cpu", 0)
        x.update_inplace(a)
        return x

    def write(self, x):
        import numpy as np

        x.update_inplace(np.full(x.shape(), 7, dtype=np.float32))

    def read_only(self):
        import numpy as np

        a = np.arange(4, dtype=np.float32)
        a.flags.writeable = False
        self._keep = a  # an OrtValue from NumPy does not keep its array alive
        return self.m.OrtValue.ortvalue_from_numpy(a)


class Warp(Peer):
    def load(self):
        import warp

        warp.config.quiet = True  # Warp < 1.10
        warp.config.log_level = getattr(warp, "LOG_WARNING", 30)
        warp.init()
        self.m = warp

    def version(self):
        return self.m.config.version

    def cuda(self):
        return self.m.is_cuda_available()

    def make(self, name, a, device):
        if name == "bfloat16":
            return self.m.array(_bf16_bits(a), dtype=self.m.bfloat16, device="cuda:0" if device == "cuda" else "cpu")
        return self.m.array(a, device="cuda:0" if device == "cuda" else "cpu")

    def write(self, x):
        x.fill_(7.0)


class TvmFfi(Peer):
    def load(self):
        import tvm_ffi

        self.m = tvm_ffi

    def cuda(self):
        return True  # it allocates nothing: it wraps what it is given, on any device

    def make(self, name, a, device):
        # tvm-ffi allocates nothing from Python: it wraps another producer's memory
        # (NumPy's on the CPU; a dlbridge tensor for bfloat16, which NumPy cannot
        # export, and on CUDA).
        import dlbridge as db

        if name == "bfloat16" or device == "cuda":
            return self.m.from_dlpack(db.tensor(a.tolist(), dtype=getattr(db, name), device=device))
        return self.m.from_dlpack(a.copy())


PEER_CLASSES = {"numpy": NumPy, "torch": Torch, "jax": Jax, "cupy": CuPy, "tensorflow": TensorFlow,
                "paddle": Paddle, "onnxruntime": OnnxRuntime, "warp": Warp, "tvm_ffi": TvmFfi}


class _Spy:
    """A producer that records the keywords a consumer passes to ``__dlpack__``."""

    def __init__(self, t):
        self.t, self.calls = t, []

    def __dlpack__(self, *args, **kwargs):
        self.calls.append(kwargs)
        return self.t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def _into_peer(peer, db, name, device):
    want = sample(name)
    t = db.tensor(want, dtype=getattr(db, name), device=device)
    try:
        x = peer.to_peer(t)
    except Exception as e:  # noqa: BLE001
        return {"result": "refused", "error": _short(e), "note": peer.lacks.get(name)}
    try:
        ptr, got_dtype, _ = describe(x)
    except Exception as e:  # noqa: BLE001
        return {"result": "copied", "error": None,
                "note": f"the peer's own __dlpack__ failed ({_short(e)}), so whether memory is shared is unknown"}
    if got_dtype != name:
        return {"result": "wrong-dtype", "error": None, "note": f"arrived as {got_dtype}"}
    note = None
    try:
        if db.from_dlpack(x).cpu().tolist() != want:
            return {"result": "wrong-values", "error": None, "note": "values differ"}
    except Exception as e:  # noqa: BLE001
        note = f"values not checked: dlbridge could not read the peer's tensor back ({_short(e)})"
    return {"result": "zero-copy" if ptr == t.data_ptr() else "copied", "error": None, "note": note}


def _from_peer(peer, db, name, device):
    want = sample(name)
    note = first = None
    try:
        x = peer.make(name, _numpy_sample(name), device)
    except Exception as e:  # noqa: BLE001
        x, first = None, e
    made = ptr = None
    if x is not None:
        try:
            ptr, made, _ = describe(x)
        except Exception as e:  # noqa: BLE001 - its export refuses: dlbridge's import will say how
            made = name
            ptr = peer.data_ptr(x)
            if ptr is None:
                note = f"the peer's own __dlpack__ failed ({_short(e)}), so whether memory is shared is unknown"
    if made != name and device == "cpu" and not peer.takes_capsules:
        # The peer may hold the dtype but not make it from NumPy: its from_dlpack may.
        try:
            src = db.tensor(want, dtype=getattr(db, name))
            y = peer.to_peer(src if name == "bfloat16" else src.numpy())
            yptr, ydt, _ = describe(y)
            if ydt == name:
                note = (f"made with the peer's from_dlpack: its own constructor gives "
                        f"{made or _short(first)}")
                x, made, ptr = y, name, yptr
        except Exception:  # noqa: BLE001
            pass
    if x is None:
        if isinstance(first, Lacks):
            return {"result": "absent", "error": None, "note": str(first)}
        return {"result": "absent", "error": _short(first), "note": None}
    if made != name:
        return {"result": "absent", "error": None, "note": f"the peer makes {made} from {name} data"}
    try:
        u = db.from_dlpack(x)
    except Exception as e:  # noqa: BLE001
        return {"result": "refused", "error": _short(e), "note": None if ptr is None else note}
    if str(u.dtype) != f"dlbridge.{name}":
        return {"result": "wrong-dtype", "error": None, "note": f"arrived as {u.dtype}"}
    if u.cpu().tolist() != want:
        return {"result": "wrong-values", "error": None, "note": "values differ"}
    if ptr is None:
        return {"result": "copied", "error": None, "note": note}
    if name in peer.lacks and note is None:
        note = peer.lacks[name] + ": this one came through an extra package (ml_dtypes)"
    return {"result": "zero-copy" if u.data_ptr() == ptr else "copied", "error": None, "note": note}


def _read_only(peer, db):
    import numpy as np

    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    r = db.from_numpy(a)
    try:
        x = peer.to_peer(r)
    except Exception as e:  # noqa: BLE001
        into = {"result": "refused", "detail": _short(e)}
    else:
        try:
            ptr, _, flag = describe(x)
        except Exception:  # noqa: BLE001
            ptr, flag = None, None
        kept = {None: "its export has no flags", 0: "its own export drops READ_ONLY",
                1: "its own export keeps READ_ONLY"}[flag]
        if ptr != r.data_ptr():
            into = {"result": "copied", "detail": "the peer made a copy"}
        elif type(peer).write is Peer.write:
            into = {"result": "no-writes", "detail": f"imported zero-copy; the peer has no in-place writes; {kept}"}
        else:
            try:
                peer.write(x)
            except Exception as e:  # noqa: BLE001
                into = {"result": "honoured", "detail": f"imported zero-copy; writes refused ({_short(e)})"}
            else:
                into = ({"result": "ignored", "detail": "imported zero-copy, and the peer wrote into it"}
                        if a[0] == 7 else {"result": "honoured", "detail": "the write did not reach the memory"})
    try:
        y = peer.read_only()
    except Exception as e:  # noqa: BLE001
        y, why = None, _short(e)
    else:
        why = "the peer has no read-only tensors"
    if y is None:
        out = {"result": "n/a", "detail": why}
    else:
        try:
            u = db.from_dlpack(y)
        except Exception as e:  # noqa: BLE001
            out = {"result": "refused", "detail": _short(e)}
        else:
            out = ({"result": "read-only", "detail": "dlbridge's import is read-only"} if u.is_read_only else
                   {"result": "writable", "detail": "the peer's capsule does not say read-only"})
    return {"into_peer": into, "from_peer": out}


def _protocol(peer, db, device):
    counts = db._core.exchange_api_counts
    t = db.tensor(sample("float32"), dtype=db.float32, device=device)
    out = {"into_peer": "?", "from_peer": "?", "keywords": "?"}
    try:
        before = counts()
        peer.to_peer(t)
        after = counts()
        if after[1] > before[1]:
            out["into_peer"] = "dlbridge's DLPack C exchange table"
        elif peer.takes_capsules:
            out["into_peer"] = "a capsule: the caller calls __dlpack__()"
        else:
            out["into_peer"] = "__dlpack__"
    except Exception as e:  # noqa: BLE001
        out["into_peer"] = f"refused ({_short(e)})"
    try:
        x = peer.make("float32", _numpy_sample("float32"), device)
        before = counts()
        db.from_dlpack(x)
        out["from_peer"] = ("the peer's DLPack C exchange table" if counts()[0] > before[0] else "__dlpack__")
    except Exception as e:  # noqa: BLE001
        out["from_peer"] = f"refused ({_short(e)})"
    spy = _Spy(t)
    if peer.takes_capsules:
        out["keywords"] = "n/a (takes capsules)"
    else:
        try:
            peer.to_peer(spy)
            out["keywords"] = "; ".join(
                "(" + ", ".join(f"{k}={v!r}" for k, v in c.items()) + ")" for c in spy.calls) or "not called"
        except Exception as e:  # noqa: BLE001
            out["keywords"] = f"refused ({_short(e)})"
    stream = "n/a (CPU tensors)"
    if device == "cuda" and peer.takes_capsules:
        stream = "n/a (it takes capsules: the caller passes stream= to __dlpack__)"
    elif device == "cuda":
        streams = [c["stream"] for c in spy.calls if "stream" in c]
        stream = (f"stream={streams[-1]!r}" if streams else
                  "no stream keyword" if spy.calls else "n/a (the peer did not call __dlpack__)")
    return out, stream


def probe(name, emit):
    """Probes one peer, reporting through emit(event dict)."""
    start = time.perf_counter()
    peer = PEER_CLASSES[name]()
    emit({"event": "step", "what": "import"})
    try:
        peer.load()
    except BaseException as e:  # noqa: BLE001 - SystemExit from a broken peer included
        emit({"event": "import-error", "error": _short(e), "import_s": round(time.perf_counter() - start, 3)})
        return
    import dlbridge as db

    emit({"event": "imported", "version": str(peer.version()), "import_s": round(time.perf_counter() - start, 3)})
    probe_start = time.perf_counter()
    devices = ["cpu", "cuda"]
    no_cuda = "no CUDA: dlbridge.cuda.is_available() is False"
    for device in devices:
        if device == "cpu" and peer.cpu is None:
            emit({"event": "device", "device": "cpu", "report": {"skipped": peer.cpu_note}})
            continue
        if device == "cuda":
            if not db.cuda.is_available():
                emit({"event": "device", "device": "cuda", "report": {"skipped": no_cuda}})
                continue
            emit({"event": "step", "what": "cuda availability"})
            try:
                has = peer.cuda()
            except Exception:  # noqa: BLE001
                has = False
            if not has:
                emit({"event": "device", "device": "cuda", "report": {"skipped": "the peer has no CUDA here"}})
                continue
        rep = {"into_peer": {}, "from_peer": {}}
        for direction, fn in (("into_peer", _into_peer), ("from_peer", _from_peer)):
            for dt in DTYPES:
                emit({"event": "step", "what": f"{direction} {dt} on {device}"})
                try:
                    rep[direction][dt] = fn(peer, db, dt, device)
                except Exception as e:  # noqa: BLE001 - the probe's own failure, reported
                    rep[direction][dt] = {"result": "refused", "error": _short(e), "note": "the doctor's own check failed"}
        if device == "cpu":
            emit({"event": "step", "what": "read-only on cpu"})
            rep["read_only"] = _read_only(peer, db)
        else:
            na = {"result": "n/a", "detail": "checked on the CPU"}
            rep["read_only"] = {"into_peer": na, "from_peer": na}
        emit({"event": "step", "what": f"protocol on {device}"})
        rep["protocol"], rep["stream"] = _protocol(peer, db, device)
        if device == "cpu" and not db.cuda.is_available():
            rep["stream"] = "n/a (no CUDA)"
        emit({"event": "device", "device": device, "report": rep})
    emit({"event": "done", "probe_s": round(time.perf_counter() - probe_start, 3)})


def _probe_main(name):
    # The peer's own output (banners, warnings) goes to stderr; the events to the real stdout.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def emit(ev):
        out.write(json.dumps(ev, default=str) + "\n")
        out.flush()

    try:
        probe(name, emit)
    except BaseException as e:  # noqa: BLE001
        emit({"event": "error", "error": _short(e)})
    out.flush()
    os._exit(0)  # skip the peers' own shutdown (some crash at exit)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PEER_CLASSES:
        sys.exit("usage: python -m dlbridge._doctor_probe NAME  (" + ", ".join(sorted(PEER_CLASSES)) + ")")
    _probe_main(sys.argv[1])
