"""Both ways the pinned staging ring stores (DLBRIDGE_CUDA_PAGEABLE: `streamed`, the default,
with non-temporal stores into resident memory; `staged`, ordinary stores) copy every byte
to and from the GPU: at odd offsets and lengths, into fresh and existing host memory, from
read-only and from already pinned memory, over many 8 MiB chunks. Each mode runs in a child
process (the mode is read once)."""

import os
import subprocess
import sys

import pytest

CHILD = r"""
import numpy as np, torch, dlbridge as db
rng = np.random.default_rng(7)
MiB = 1 << 20
for n in (MiB + 1, 3 * MiB + 5, 70 * MiB + 3):
    a = rng.integers(0, 256, n + 1, dtype=np.uint8)
    for src in (a[1:], a[:-1]):  # odd and even start
        g = db.from_numpy(src).to("cuda")
        assert np.array_equal(g.cpu().numpy(), src), ("round trip", n)
        assert np.array_equal(g.numpy(force=True), src), ("numpy(force=True)", n)
        out = np.zeros(n + 1, dtype=np.uint8)
        db.from_numpy(out[1:]).copy_(g)  # into an existing array at an odd address
        assert out[0] == 0 and np.array_equal(out[1:], src), ("into existing", n)
        x = db.zeros(n, dtype=db.uint8, device="cuda")
        x.copy_(db.from_numpy(src))
        assert np.array_equal(x.cpu().numpy(), src), ("copy_ into cuda", n)
ro = np.frombuffer(bytes(range(256)) * (8 * 4096 + 1), dtype=np.uint8)  # read-only memory
assert not ro.flags.writeable
assert np.array_equal(db.from_numpy(ro).cuda().cpu().numpy(), ro), "read-only source"
pinned = torch.arange(5 * MiB, dtype=torch.uint8).pin_memory()
back = db.from_dlpack(pinned).cuda().cpu().numpy()
assert np.array_equal(back, pinned.numpy()), "pinned source"
print("ok")
"""


@pytest.mark.parametrize("mode", ["staged", None], ids=["staged", "default"])
def test_every_pageable_mode_copies_every_byte(mode):
    # Every value but `staged` is the default, so the default (unset) is the other mode.
    env = {k: v for k, v in os.environ.items() if k != "DLBRIDGE_CUDA_PAGEABLE"}
    if mode is not None:
        env["DLBRIDGE_CUDA_PAGEABLE"] = mode
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
