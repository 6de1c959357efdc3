"""The doctor's plain-text report: a heading, then one block per peer (printed
as each peer finishes), then the footer. Notes wrap; nothing is cut."""

import shutil
import textwrap

SHORT = {"bool": "bool", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "int8": "i8",
         "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16", "bfloat16": "bf16",
         "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}
MARK = {"zero-copy": "Z", "copied": "C", "refused": "R", "wrong-dtype": "W", "wrong-values": "V",
        "absent": "-", "crashed": "!"}
LEGEND = "Z zero-copy, C copied, R refused, W wrong dtype, V wrong values, - the peer lacks the dtype"
# How a summary says each result, for a list of dtypes.
SAYS = {"zero-copy": "zero-copy", "copied": "copied", "refused": "refused", "wrong-dtype": "arrives as another dtype",
        "wrong-values": "arrives with wrong values", "absent": "the peer lacks", "crashed": "crashed"}
READ_ONLY_INTO = {"ignored": "{D} ignores READ_ONLY (it writes into a read-only dlbridge tensor)",
                  "honoured": "{D} honours READ_ONLY", "refused": "{D} refuses read-only dlbridge tensors",
                  "copied": "{D} copies read-only dlbridge tensors",
                  "no-writes": "{D} has no in-place writes (READ_ONLY cannot matter)"}
READ_ONLY_FROM = {"read-only": "its read-only tensors stay read-only",
                  "writable": "its read-only tensors arrive writable",
                  "refused": "dlbridge refuses its read-only tensors"}


def width():
    return max(60, min(120, shutil.get_terminal_size((100, 24)).columns))


def wrap(text, indent, more=2):
    """`text` wrapped to the terminal, first line at `indent`, the rest `more` further in."""
    return textwrap.fill(text, width=width(), initial_indent=" " * indent, subsequent_indent=" " * (indent + more),
                         break_long_words=False, break_on_hyphens=False)


def _names(dtypes, all_dtypes):
    if len(dtypes) == len(all_dtypes):
        return f"all {len(all_dtypes)} dtypes"
    if len(dtypes) > 4:
        return f"{len(dtypes)} dtypes"
    return ", ".join(dtypes)


def _direction(cells, all_dtypes):
    """'zero-copy for 13 dtypes; refused: complex64, complex128' for one direction."""
    groups = {}
    for t in all_dtypes:
        groups.setdefault(cells.get(t, {}).get("result", "?"), []).append(t)
    parts = []
    for result, dtypes in sorted(groups.items(), key=lambda g: -len(g[1])):
        says = SAYS.get(result, result)
        if result == "absent":
            parts.append(f"lacks {', '.join(dtypes)}")
        elif not parts:
            parts.append(f"{says} for {_names(dtypes, all_dtypes)}")
        else:
            parts.append(f"{says}: {', '.join(dtypes)}")
    return ", ".join(parts)


def device_summary(display, rep, all_dtypes):
    """One plain sentence for one device's exchange with a peer."""
    into, out = rep["into_peer"], rep["from_peer"]
    if all(c.get("result") == "zero-copy" for c in [*into.values(), *out.values()]):
        parts = [f"zero-copy both ways, all {len(all_dtypes)} dtypes"]
    else:
        a, b = _direction(into, all_dtypes), _direction(out, all_dtypes)
        parts = [f"both ways: {a}"] if a == b else [f"to {display}: {a}", f"from {display}: {b}"]
    ro = rep.get("read_only", {})
    into_ro = READ_ONLY_INTO.get(ro.get("into_peer", {}).get("result"))
    if into_ro:
        parts.append(into_ro.format(D=display))
    from_ro = READ_ONLY_FROM.get(ro.get("from_peer", {}).get("result"))
    if from_ro:
        parts.append(from_ro)
    return "; ".join(parts)


def summary(p, all_dtypes):
    """The peer's one summary line: '{display}: ...'."""
    if p["status"] != "ok":
        return f"{p['display']}: {p['status']}: {p['error']}"
    said = []
    for device, rep in p["devices"].items():
        if rep and "skipped" not in rep:
            text = device_summary(p["display"], rep, all_dtypes)
            said.append(text if device == "cpu" else f"on {device}: {text}")
    return f"{p['display']}: " + (" | ".join(said) if said else "no exchange tried (" + "; ".join(
        r["skipped"] for r in p["devices"].values() if r and "skipped" in r) + ")")


def format_head(report):
    d = report["dlbridge"]
    cuda = d["cuda"] if not d["cuda_available"] else "available, " + d["cuda"]
    return "\n".join([wrap(f"dlbridge {d['version']} doctor  (Python {report['python']}, CUDA: {cuda})", 0, 4),
                      "", wrap(f"Per dtype: {LEGEND}.", 0, 4), ""])


def format_peer(p, all_dtypes):
    """One peer's block: its summary, then per device its rows, read-only, paths and notes."""
    imp = f"{p['import_s']:.2f} s" if p["import_s"] is not None else "-"
    prb = f"{p['probe_s']:.2f} s" if p["probe_s"] is not None else "-"
    lines = [wrap(summary(p, all_dtypes), 0, 4),
             f"    {p['display']} {p['version'] or '?'}; import {imp}, probe {prb}; status {p['status']}"
             + (f": {p['error']}" if p["error"] else "")]
    D = p["display"]
    for device, r in p["devices"].items():
        if not r:
            continue
        if "skipped" in r:
            lines.append(wrap(f"on {device}: not tried: {r['skipped']}", 4, 4))
            continue
        labels = [f"dlbridge -> {D}", f"{D} -> dlbridge"]
        lw = max(len(x) for x in labels) + 6
        lines.append(f"{'    on ' + device:<{lw}}  " + " ".join(f"{SHORT[t]:>4}" for t in all_dtypes))
        for direction, label in zip(("into_peer", "from_peer"), labels):
            cells = [MARK.get(r[direction].get(t, {}).get("result"), "?") for t in all_dtypes]
            lines.append(f"{'      ' + label:<{lw}}  " + " ".join(f"{c:>4}" for c in cells))
        ro, pr = r["read_only"], r["protocol"]
        lines.append(wrap(f"read-only dlbridge -> {D}: {ro['into_peer']['result']} ({ro['into_peer']['detail']})",
                          6, 4))
        lines.append(wrap(f"read-only {D} -> dlbridge: {ro['from_peer']['result']} ({ro['from_peer']['detail']})",
                          6, 4))
        lines.append(wrap(f"path dlbridge -> {D}: {pr['into_peer']}; keywords it passes to a producer's "
                          f"__dlpack__: {pr['keywords']}", 6, 4))
        lines.append(wrap(f"path {D} -> dlbridge: {pr['from_peer']}", 6, 4))
        lines.append(wrap(f"stream: {r['stream']}", 6, 4))
        for direction, label in zip(("into_peer", "from_peer"), labels):
            for t in all_dtypes:
                c = r[direction].get(t, {})
                if c.get("result") not in ("zero-copy", None) or c.get("note"):
                    why = "; ".join(x for x in (c.get("error"), c.get("note")) if x)
                    lines.append(wrap(f"{label} {t}: {c.get('result')}" + (f": {why}" if why else ""), 6, 4))
    return "\n".join(lines) + "\n"


def format_foot(report):
    lines = []
    if not report["peers"]:
        lines.append("No DLPack library the doctor knows is installed.")
    others = report.get("other_dlpack_distributions") or []
    if others:
        lines.append(wrap("Also installed, mention DLPack, not probed: "
                          + ", ".join(f"{o['name']} {o['version']}" for o in others), 0, 4))
    lines.append(f"Done in {report['elapsed_s']:.1f} s.")
    return "\n".join(lines)


def format_table(report):
    """The whole report as plain text (what the doctor prints, peer by peer)."""
    return "\n".join([format_head(report), *(format_peer(p, report["dtypes"]) for p in report["peers"]),
                      format_foot(report)])
