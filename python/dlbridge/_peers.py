"""The DLPack peers dlbridge knows: one registry, read by the doctor
(``python -m dlbridge doctor``) and by the peer tests (tests/python/), so a new
peer is one row here, one probe in ``_doctor_probe.py`` and one test module.

Nothing here imports a peer: finding them reads package metadata only.
"""

from typing import List, NamedTuple, Optional, Tuple


class PeerInfo(NamedTuple):
    name: str  # the doctor's --peer NAME and the key of its JSON report
    display: str  # how people spell it
    module: str  # what `import` takes
    distributions: Tuple[str, ...]  # PyPI names; the first installed one gives the version
    test_module: str  # the file under tests/python (no .py) that checks exchange with it
    import_after: Tuple[str, ...] = ()  # modules that must be imported first in one interpreter


PEERS: Tuple[PeerInfo, ...] = (
    PeerInfo("numpy", "NumPy", "numpy", ("numpy",), "test_numpy_bridge"),
    PeerInfo("torch", "PyTorch", "torch", ("torch",), "test_torch_interop"),
    PeerInfo("jax", "JAX", "jax", ("jax",), "test_jax_interop"),
    PeerInfo("cupy", "CuPy", "cupy",
             ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy-rocm-6-0"), "gpu/test_cupy_exchange"),
    # Importing TensorFlow before PaddlePaddle crashes the interpreter (a segfault while
    # paddle loads): tests/python/conftest.py imports paddle first.
    PeerInfo("tensorflow", "TensorFlow", "tensorflow",
             ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tf-nightly-cpu",
              "tensorflow-macos"), "test_peer_tensorflow", import_after=("paddle",)),
    PeerInfo("paddle", "PaddlePaddle", "paddle", ("paddlepaddle", "paddlepaddle-gpu"), "test_peer_paddle"),
    PeerInfo("onnxruntime", "ONNX Runtime", "onnxruntime",
             ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino", "ort-nightly"),
             "test_peer_onnxruntime"),
    PeerInfo("warp", "Warp", "warp", ("warp-lang",), "test_peer_warp"),
    PeerInfo("tvm_ffi", "tvm-ffi", "tvm_ffi", ("apache-tvm-ffi",), "test_peer_tvm_ffi"),
)
BY_NAME = {p.name: p for p in PEERS}
KNOWN_DISTRIBUTIONS = {d for p in PEERS for d in p.distributions} | {"dlbridge", "jaxlib"}


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def installed_version(peer: PeerInfo) -> Tuple[Optional[str], Optional[str]]:
    """(distribution, version) of the first of the peer's distributions that is
    installed, or (None, None)."""
    import importlib.metadata as md

    for d in peer.distributions:
        try:
            return d, md.version(d)
        except md.PackageNotFoundError:
            continue
    return None, None


def find_peers() -> List[Tuple[str, str, str, Optional[str], Optional[str]]]:
    """The known peers that are installed: (name, display, module, distribution, version)."""
    import importlib.util

    found = []
    for p in PEERS:
        dist, version = installed_version(p)
        if dist is None:
            try:
                if importlib.util.find_spec(p.module) is None:
                    continue
            except (ImportError, ValueError):
                continue
        found.append((p.name, p.display, p.module, dist, version))
    return found


def other_dlpack_distributions() -> List[dict]:
    """Installed distributions not in the registry whose metadata mentions DLPack
    (read from their METADATA files; nothing is imported)."""
    import importlib.metadata as md

    seen, out = set(), []
    for dist in md.distributions():
        try:
            name = dist.metadata["Name"] or ""
            if not name or _canonical(name) in KNOWN_DISTRIBUTIONS or _canonical(name) in seen:
                continue
            text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
        except Exception:  # noqa: BLE001 - a broken distribution is skipped
            continue
        if "dlpack" in text.lower():
            seen.add(_canonical(name))
            out.append({"name": name, "version": dist.version})
    return sorted(out, key=lambda d: d["name"].lower())
