"""The files of src/python/ depend on each other without a cycle.

Each file's dependencies are the sibling modules it names through `super::x`
(also `super::{x::.., y}` and `crate::python::x`); naming anything else of
the parent (`super::_core`, `super::*`) is a dependency on mod.rs, which
itself depends on every module it declares (`mod x;`). The graph must be
acyclic, so the layer can be read top-down (mod.rs's doc draws the order).

Needs no built extension (like test_formatting.py).
"""

import pathlib
import re

import pytest

PYTHON_SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "python"

_PATH = re.compile(r"\b(?:super|crate::python)::(\{|\*|\w+)")
_MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def _strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def _top_level_names(group):
    """`a::b, c, d::{e, f}` -> ['a', 'c', 'd'] (the first segment of each path)."""
    names, depth, start = [], 0, 0
    for i, ch in enumerate(group + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            item = group[start:i].strip()
            if item:
                names.append(re.split(r"\W", item, maxsplit=1)[0] or item)
            start = i + 1
    return names


def _braced(text, open_at):
    """The text between the brace at `open_at` and its match."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_at + 1 : i]
    raise ValueError("unbalanced braces")


def dependencies(files):
    """{module: set of modules it uses} for {file name: Rust source}."""
    modules = {name[: -len(".rs")] for name in files}
    graph = {}
    for name, text in files.items():
        me = name[: -len(".rs")]
        code = _strip_comments(text)
        deps = set()
        if me == "mod":
            deps.update(_MOD_DECL.findall(code))
        else:
            for m in _PATH.finditer(code):
                first = m.group(1)
                used = _top_level_names(_braced(code, m.start(1))) if first == "{" else [first]
                deps.update(u if u in modules else "mod" for u in used)
        deps.discard(me)
        graph[me] = deps
    return graph


def find_cycle(graph):
    """A list of modules forming a cycle (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep) :] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _read_tree():
    return {p.name: p.read_text() for p in sorted(PYTHON_SRC.glob("*.rs"))}


def test_src_python_has_no_import_cycle():
    graph = dependencies(_read_tree())
    assert len(graph) > 10 and graph["mod"], "src/python was not read"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in src/python: " + " -> ".join(cycle)


def test_every_module_is_declared_and_documented():
    files = _read_tree()
    declared = set(_MOD_DECL.findall(_strip_comments(files["mod.rs"])))
    assert declared == {n[:-3] for n in files} - {"mod"}
    undocumented = [n for n, text in files.items() if not text.startswith("//!")]
    assert not undocumented, f"no module doc comment (//!) at the top of {undocumented}"


# ----- the checker itself, on synthetic trees -----


def test_the_parser_reads_every_form_of_path():
    files = {
        "mod.rs": "mod a;\npub(crate) mod b;\nmod c;\nuse a::X; // super::c in a comment\n",
        "a.rs": "use super::{b::Y, c};\nfn f() { crate::python::b::g(); }\n/* super::mod */\n",
        "b.rs": "use super::errors_not_a_module::E;\n",
        "c.rs": "use super::*;\nuse std::ffi::CStr;\n",
    }
    assert dependencies(files) == {
        "mod": {"a", "b", "c"},
        "a": {"b", "c"},
        "b": {"mod"},
        "c": {"mod"},
    }


@pytest.mark.parametrize(
    "files,cycle",
    [
        ({"mod.rs": "mod a;\nmod b;\n", "a.rs": "use super::b::X;\n", "b.rs": "use super::a::Y;\n"},
         ["a", "b", "a"]),
        ({"mod.rs": "mod a;\nmod b;\nmod c;\n", "a.rs": "use super::{b::X, c};\n",
          "b.rs": "", "c.rs": "fn f() { crate::python::a::g() }\n"},
         ["a", "c", "a"]),
        ({"mod.rs": "mod a;\n", "a.rs": "use super::_core;\n"}, ["a", "mod", "a"]),
    ],
    ids=["super", "grouped and crate::python", "a child using mod.rs"],
)
def test_the_checker_finds_a_cycle(files, cycle):
    assert find_cycle(dependencies(files)) == cycle


def test_the_checker_passes_a_layered_tree():
    files = {
        "mod.rs": "mod a;\nmod b;\nmod c;\n",
        "a.rs": "",
        "b.rs": "use super::a::X;\n",
        "c.rs": "use super::{a, b::Y};\n",
    }
    assert find_cycle(dependencies(files)) is None
