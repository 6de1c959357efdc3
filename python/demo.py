"""dlbridge demo: the tutorials' flows, then a zero-copy round trip with every
framework installed, each proving that the buffer is shared (same address, and
an in-place edit on one side shows on the other)."""

import numpy as np

import dlbridge as db


def section(title: str) -> None:
    print(f"\n=== {title} ===")


section("NumPy -> dlbridge shares memory (from_numpy)")
a = np.zeros(5)
t = db.from_numpy(a)
print(t)  # tensor([0., 0., 0., 0., 0.], dtype=dlbridge.float64)
np.add(a, 2, out=a)
print(a, "->", t)

section("dlbridge -> NumPy shares memory (numpy)")
x = db.zeros(5)
b = x.numpy()
x.add_(1)
print(x, "->", b)

section("dtypes are kept; tensor() copies; Tensor() is float32")
arr = np.array([5, 7, 1, 2, 4, 4], dtype=np.int32)
print(db.from_numpy(arr), db.Tensor(arr), db.tensor(arr), sep="\n")
print(db.from_numpy(np.eye(3)).type(db.float32))

section("errors read like PyTorch's")
g = db.tensor([1.0, 2.0, 3.0], requires_grad=True)
for attempt in (g.numpy, lambda: db.zeros(3).to("cuda")):
    try:
        attempt()
    except RuntimeError as e:
        print("RuntimeError:", e)
print(g.detach().numpy())
print("cuda available:", db.cuda.is_available())


def shared(name: str, ours: "db.Tensor", theirs, edit) -> None:
    """Edits `theirs` in place and shows that `ours` sees it."""
    before = ours.tolist()
    edit(theirs)
    print(f"{name:>6}: data_ptr {ours.data_ptr():#x}, {before} -> {ours.tolist()}")


section("zero-copy round trips (same buffer on both sides)")
base = db.arange(4, dtype=db.float32)
print(f"dlbridge buffer at {base.data_ptr():#x}")
npv = np.from_dlpack(base)
assert npv.ctypes.data == base.data_ptr()
shared("numpy", base, npv, lambda v: v.__iadd__(1))

try:
    import torch
except ImportError:
    print(" torch: not installed")
else:
    tv = torch.from_dlpack(base)
    assert tv.data_ptr() == base.data_ptr()
    shared("torch", base, tv, lambda v: v.mul_(2))
    back = db.from_dlpack(tv)
    assert back.data_ptr() == base.data_ptr()
    print(f"{'':>6}  torch -> dlbridge again: data_ptr {back.data_ptr():#x}")

try:
    import jax.dlpack
except ImportError:
    print("   jax: not installed")
else:
    jv = jax.dlpack.from_dlpack(base)
    same = jv.unsafe_buffer_pointer() == base.data_ptr()
    print(f"{'jax':>6}: data_ptr {jv.unsafe_buffer_pointer():#x} shared={same} values={jv.tolist()}")
    jb = db.from_dlpack(jv)
    print(f"{'':>6}  jax -> dlbridge: shared={jb.data_ptr() == jv.unsafe_buffer_pointer()} read-only={jb.is_read_only}")
