#!/usr/bin/env python
"""The benchmark pictures in docs/img/ (matplotlib), and the ops table.

    python bench/plot.py [--only exchange|ops|table] [--out docs/img] [--table docs/ops_table.md]

exchange_cost.png: the cost of each exchange (`from_dlpack`, `__dlpack__`,
`from_numpy`, `numpy()`) against the tensor's size, from 1 element to 1 GiB,
for dlbridge, torch and NumPy: flat lines, the cost does not depend on the
size. op_ratios.png: dlbridge's time over the faster peer's, per op (the
geometric mean over dtypes and sizes of bench/results/ops.json, written by
bench_ops.py), with the 1.0 target. docs/ops_table.md: every row of that
run as a table, the short ones first, and its memory rows.
"""
import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from _timing import load_impl, per_call_ns  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OPS_JSON = ROOT / "bench" / "results" / "ops.json"


def exchange(out: Path):
    db = load_impl("dlbridge", None)
    big = np.empty(2**28, np.float32)  # 1 GiB, never touched: only views of it are exchanged
    sizes = [4**k for k in range(15)] + [2**28]
    cases = {  # name: library -> statement over `a` (ndarray), `t` (dlbridge), `tt` (torch)
        "from_dlpack(ndarray)": {"dlbridge": "db.from_dlpack(a)", "torch": "torch.from_dlpack(a)",
                                 "NumPy": "np.from_dlpack(a)"},
        "x.__dlpack__()": {"dlbridge": "t.__dlpack__()", "torch": "tt.__dlpack__()", "NumPy": "a.__dlpack__()"},
        "from_numpy(ndarray)": {"dlbridge": "db.from_numpy(a)", "torch": "torch.from_numpy(a)",
                                "NumPy": "np.asarray(a)"},
        "x.numpy()": {"dlbridge": "t.numpy()", "torch": "tt.numpy()", "NumPy": "a.view()"},
    }
    fig, axes = plt.subplots(1, len(cases), figsize=(4 * len(cases), 3.4), sharey=True)
    for ax, (name, libs) in zip(axes, cases.items()):
        series = {lib: [] for lib in libs}
        for n in sizes:
            a = big[:n]
            ns = dict(db=db, np=np, torch=torch, a=a, t=db.from_numpy(a), tt=torch.from_numpy(a))
            times = per_call_ns([(stmt, ns) for stmt in libs.values()], loops=500, samples=7)
            for lib, v in zip(libs, times):
                series[lib].append(v)
        for lib, ys in series.items():
            ax.plot([n * 4 for n in sizes], ys, marker=".", label=lib)
        ax.set_xscale("log", base=2)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("tensor size (bytes, 4 B to 1 GiB)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("ns per call (median, log)")
    axes[0].set_yscale("log")
    axes[-1].legend()
    fig.suptitle("Exchange cost against tensor size: O(1) for every library")
    fig.tight_layout()
    fig.savefig(out / "exchange_cost.png", dpi=80)
    print(f"wrote {out / 'exchange_cost.png'}")


def ops(out: Path):
    if not OPS_JSON.exists():
        sys.exit(f"{OPS_JSON} is missing: run bench/bench_ops.py first")
    data = json.loads(OPS_JSON.read_text())
    by_op = {}
    for r in data["rows"]:
        if "ratio" in r:
            key = r["op"] if not r["op"].startswith("cast") else "cast (all pairs)"
            by_op.setdefault(key, []).append(r)
    names = list(by_op)
    gm = [math.exp(statistics.fmean(math.log(r["ratio"]) for r in by_op[k])) for k in names]
    worst = [max(r["ratio"] for r in by_op[k]) for k in names]
    met = [all(r["met"] for r in by_op[k]) for k in names]
    fig, ax = plt.subplots(figsize=(8, 0.26 * len(names) + 1.5))
    y = np.arange(len(names))
    ax.barh(y, gm, color=["tab:green" if m else "tab:orange" for m in met], label="geometric mean over dtypes, sizes")
    ax.scatter(worst, y, color="black", marker="|", s=60, label="worst row", zorder=3)
    ax.axvline(1.0, color="red", lw=1, label="target (1.0; 1.5 at 10^3)")
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("dlbridge time / faster of NumPy and torch (log scale; < 1 is faster)")
    ax.set_title(f"CPU ops: {data['met']} of {data['timed']} rows within target, geometric mean "
                 f"{data['geomean']:.2f} ({data['machine']['threads']} threads)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "op_ratios.png", dpi=80)
    print(f"wrote {out / 'op_ratios.png'}")


def fmt_ns(ns):
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} µs" if ns >= 1e3 else f"{ns:.0f} ns"


def table(out: Path):
    """docs/ops_table.md: every row of the last full bench_ops.py run, the
    short ones first, and its memory rows."""
    if not OPS_JSON.exists():
        sys.exit(f"{OPS_JSON} is missing: run bench/bench_ops.py first")
    data = json.loads(OPS_JSON.read_text())
    m = data["machine"]
    timed = [r for r in data["rows"] if "ratio" in r]
    lines = [
        "# Every CPU op against the faster peer",
        "",
        "Written by `bench/plot.py` (`make bench`) from the last full run of",
        "`bench/bench_ops.py` (`bench/results/ops.json`); how the rows are timed is in",
        "[bench/README.md](../bench/README.md#bench_opspy-cpu-ops-against-numpy-and-torch),",
        "what the figures mean in [benchmarks.md](benchmarks.md#ops-on-the-cpu).",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['threads']} threads a side; NumPy {m['numpy']},",
        f"torch {m['torch']}.",
        "",
        f"**{data['met']} of {data['timed']} rows within target, geometric mean {data['geomean']:.2f}.**",
        "Ratio: dlbridge's median time over the faster peer's; target 1.0, 1.5 at",
        "10^3 elements.",
        "",
    ]

    def rows(rs):
        out = ["| op | dtype | size | dlbridge | faster peer | ratio | target |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in rs:
            mark = "" if r["met"] else " **short**"
            out.append(f"| `{r['op']}` | {r['dtype']} | {r['size']} | {fmt_ns(r['db'])} | "
                       f"{fmt_ns(r['peer_ns'])} ({r['peer']}) | {r['ratio']:.2f}{mark} | {r['target']} |")
        return out

    short = [r for r in timed if not r["met"]]
    lines += [f"## The {len(short)} rows short of target", "", *rows(short), ""]
    if data.get("memory"):
        lines += ["## Memory: the peak an op adds beyond its output", "",
                  "Each side in a fresh process that resets its peak resident size before the op;",
                  "target: no temporary larger than the output (1 MiB of slack).", "",
                  "| op | output | dlbridge | torch | NumPy | met |", "| --- | ---: | ---: | ---: | ---: | --- |"]
        mib = lambda v: "-" if v is None else f"{v / 2**20:.1f} MiB"  # noqa: E731
        for r in data["memory"]:
            lines.append(f"| {r['op']} | {mib(r['out_bytes'])} | {mib(r['db'])} | {mib(r['torch'])} | "
                         f"{mib(r['np'])} | {'yes' if r['met'] else 'no'} |")
        lines.append("")
    lines += ["## Every row", "", *rows(timed), ""]
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=["exchange", "ops", "table"])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    p.add_argument("--table", type=Path, default=ROOT / "docs" / "ops_table.md")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "exchange"):
        exchange(args.out)
    if args.only in (None, "ops"):
        ops(args.out)
    if args.only in (None, "table"):
        table(args.table)


if __name__ == "__main__":
    main()
