"""include/dlbridge.h with every official DLPack 1.x dlpack.h, in both include orders.

A C or C++ program may include an official dlpack.h (TensorFlow ships DLPack 1.1's,
tvm-ffi and PyTorch ship 1.3's) before dlbridge.h or after it. tests/c/header_compat.c
is built against each header, in both orders, as C11 and as C++17 with warnings as
errors, linked to libdlbridge.so and run: it prints the version it saw and the layout of
the DLPack types (which must equal dlbridge's own), imports tensors made with the
official types and exports them.

The headers: the official texts at tags v1.0, v1.1 and v1.3, checked in with their
licence under tests/c/dlpack-official/ (always tested), plus each dlpack.h that an
installed package ships, plus any listed in DLB_DLPACK_HEADERS (paths separated by
os.pathsep).

Official first: its declarations are used and the program sees its version. dlbridge.h
first: dlbridge.h declares DLPack 1.3 (the official 1.3 text under the official include
guard), the official header after it is skipped, and the program sees 1.3.
"""

import os
import re
import site
import sysconfig
from pathlib import Path

import pytest
from test_capi import ROOT, C_DIR, _compile, _output, _run, _tool, build_dir, capi_lib  # noqa: F401 (fixtures)

SOURCE = C_DIR / "header_compat.c"
WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]

# Packages known to ship a DLPack header (or to have shipped one): a case each, skipped
# with the reason when the package is not installed or ships no official dlpack.h.
KNOWN_PACKAGES = ["tensorflow", "tvm_ffi", "torch", "jaxlib", "paddle", "cupy"]
OFFICIAL = ROOT / "tests" / "c" / "dlpack-official"
OFFICIAL_TAGS = ["v1.0", "v1.1", "v1.3"]

_MAJOR = re.compile(r"^\s*#\s*define\s+DLPACK_MAJOR_VERSION\s+(\d+)", re.M)
_MINOR = re.compile(r"^\s*#\s*define\s+DLPACK_MINOR_VERSION\s+(\d+)", re.M)
_GUARD = re.compile(r"^\s*#\s*define\s+DLPACK_DLPACK_H_\b", re.M)


def _site_dirs():
    dirs = []
    for d in [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]:
        p = Path(d)
        if p.is_dir() and p.resolve() not in [x.resolve() for x in dirs]:
            dirs.append(p)
    return dirs


def _version(path):
    """(major, minor) of an official DLPack 1.x-style header, or None for any other dlpack.h."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    major, minor = _MAJOR.search(text), _MINOR.search(text)
    if not (major and minor and _GUARD.search(text)):
        return None  # e.g. TensorFlow's C API header tensorflow/c/eager/dlpack.h
    return int(major.group(1)), int(minor.group(1))


def _discover():
    """[(case id, path or None, version or None, skip reason or None)]."""
    cases, seen = [], set()
    found_in = {}
    for tag in OFFICIAL_TAGS:
        path = OFFICIAL / tag / "dlpack" / "dlpack.h"
        version = _version(path)
        assert version == tuple(int(x) for x in tag[1:].split(".")), f"{path} is not DLPack {tag}"
        seen.add(path.resolve())
        cases.append((f"official-{tag}", path, version, None))
    for base in _site_dirs():
        for path in sorted(base.rglob("dlpack.h")):
            version = _version(path)
            package = path.relative_to(base).parts[0]
            if version is None or path.resolve() in seen:
                continue
            seen.add(path.resolve())
            found_in.setdefault(package, []).append(path)
            cases.append((f"{path.relative_to(base)}@{version[0]}.{version[1]}", path, version, None))
    for extra in filter(None, os.environ.get("DLB_DLPACK_HEADERS", "").split(os.pathsep)):
        path = Path(extra).resolve()
        version = _version(path) if path.is_file() else None
        reason = None if version else f"DLB_DLPACK_HEADERS: {extra} is not an official DLPack 1.x dlpack.h"
        tag = f"{version[0]}.{version[1]}" if version else "?"
        cases.append((f"DLB_DLPACK_HEADERS:{extra}@{tag}", path if version else None, version, reason))
    for package in KNOWN_PACKAGES:
        if package in found_in:
            continue
        installed = any((base / package).is_dir() for base in _site_dirs())
        reason = (f"{package} ships no official dlpack.h" if installed
                  else f"{package} is not installed")
        cases.append((f"{package}:none", None, None, reason))
    return cases


CASES = _discover()
HEADERS = [pytest.param(path, version, id=case_id, marks=[pytest.mark.skip(reason=reason)] if reason else [])
           for case_id, path, version, reason in CASES]
LANGUAGES = {
    "c11": ("cc", ["-std=c11"]),
    "c++17": ("c++", ["-std=c++17", "-x", "c++"]),
}


def _flags(header):
    """Compiler flags that make `#include DLB_DLPACK_H` include `header` (a system header,
    so that its own warnings are not ours)."""
    return ["-isystem", header.parent, f"-DDLB_DLPACK_H=<{header.name}>"]


def _build_and_run(capi_lib, build_dir, lang, name, extra):
    compiler, std = LANGUAGES[lang]
    if _tool(compiler) is None:
        pytest.skip(f"no {compiler} on PATH")
    exe = build_dir / f"header_compat_{name}_{lang}"
    _compile([compiler, *std, *WARNINGS, "-g", "-I", ROOT / "include", *extra, SOURCE, "-x", "none",
              f"-L{capi_lib}", "-ldlbridge", f"-Wl,-rpath,{capi_lib.resolve()}", "-o", exe])
    r = _run([exe])
    assert r.returncode == 0, f"header_compat ({lang}, {name}) failed:\n" + _output(r)
    assert re.search(r"^\d+ checks passed$", r.stdout, re.M), _output(r)
    return r.stdout


def _line(stdout, prefix):
    m = re.search(rf"^{prefix} (.*)$", stdout, re.M)
    assert m, f"no '{prefix}' line in:\n{stdout}"
    return m.group(1)


@pytest.fixture(scope="module")
def reference_layout(capi_lib, build_dir):
    """The layout line of dlbridge_dlpack.h's own declarations, per language."""
    return {lang: _line(_build_and_run(capi_lib, build_dir, lang, "own", []), "layout:") for lang in LANGUAGES}


@pytest.mark.parametrize("lang", list(LANGUAGES))
@pytest.mark.parametrize("header,version", HEADERS)
def test_dlbridge_h_after_official_dlpack_h(header, version, lang, capi_lib, build_dir, reference_layout):
    print(f"{header}: DLPack {version[0]}.{version[1]} ({lang})")
    name = re.sub(r"[^A-Za-z0-9]+", "_", str(header))[-60:]
    out = _build_and_run(capi_lib, build_dir, lang, name, _flags(header))
    assert _line(out, "dlpack") == f"{version[0]}.{version[1]}"  # the program saw this header
    assert _line(out, "layout:") == reference_layout[lang], (
        f"{header} declares another DLPack ABI than include/dlbridge_dlpack.h")


@pytest.mark.parametrize("lang", list(LANGUAGES))
@pytest.mark.parametrize("header,version", HEADERS)
def test_official_dlpack_h_after_dlbridge_h(header, version, lang, capi_lib, build_dir, reference_layout):
    """dlbridge.h first declares DLPack 1.3 under the official include guard: the official
    header after it is skipped, and the program sees (and may use) all of 1.3."""
    name = "after_" + re.sub(r"[^A-Za-z0-9]+", "_", str(header))[-54:]
    out = _build_and_run(capi_lib, build_dir, lang, name, [*_flags(header), "-DDLB_DLPACK_H_AFTER"])
    assert _line(out, "dlpack") == "1.3"
    assert _line(out, "layout:") == reference_layout[lang]


def test_dlbridge_h_alone_declares_what_its_version_says(capi_lib, build_dir):
    """Alone, dlbridge.h says DLPack 1.3 and declares all of 1.3 (the program uses the
    float8/float6/float4 codes and DLPackExchangeAPI when the macro says 1.3)."""
    for lang in LANGUAGES:
        out = _build_and_run(capi_lib, build_dir, lang, "alone", [])
        assert _line(out, "dlpack") == "1.3"
        assert "1.3 declarations used" in out, out


def test_dlpack_1x_versions_covered():
    """The checked-in official headers cover DLPack 1.0, 1.1 and 1.3 (1.2's is not checked
    in; an installed package or DLB_DLPACK_HEADERS may add it)."""
    covered = sorted({v for _, path, v, _ in CASES if path is not None})
    print("DLPack versions covered:", ", ".join(f"{a}.{b}" for a, b in covered))
    assert {(1, 0), (1, 1), (1, 3)} <= set(covered)
