"""No import circle anywhere in vnetlab/ or lab/, counting imports inside functions too: a lazy import
that closes a circle is still a circle, only deferred."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The drawings and the panels over them: nothing else may import them (the models never draw).
DRAWING = ("vnetlab.viz", "vnetlab.widgets")


def _modules(root: Path = ROOT) -> dict[str, Path]:
    mods = {}
    for base in ("vnetlab", "lab"):
        for p in (root / base).rglob("*.py"):
            if "work" in p.relative_to(root).parts:
                continue  # lab/work/: build trees, not the lab's code
            name = ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            mods[name] = p
    return mods


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of vnetlab/lab it imports anywhere in its body (``from a import b`` counts a.b
    when b is a module)."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            graph[m] |= {t for t in targets if t in mods and t != m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def _circles_message(graph: dict[str, set[str]], found: list[list[str]]) -> str:
    return "import circles: " + "; ".join(
        " <-> ".join(f"{m} (imports {sorted(graph[m] & set(c))})" for m in c) for c in found)


def test_no_import_circle_in_vnetlab_or_lab():
    graph = import_graph()
    # the graph reads both trees, lazy imports included (vnetlab.viz.stacks imports vnetlab.stack at the top,
    # vnetlab.exercises imports vnetlab.stack inside its answer functions)
    assert "vnetlab.labkernels" in graph["lab.kernels"] and "vnetlab.stack" in graph["vnetlab.viz.stacks"]
    assert "vnetlab.stack" in graph["vnetlab.exercises"] and "vnetlab.stack" in graph["vnetlab.router"]
    found = cycles(graph)
    assert not found, _circles_message(graph, found)


# A lazy import planted in a copy of the tree that closes a circle: vnetlab (xmit imports skb) and lab (run
# imports util); the test of the real tree must see both.
PLANTED = [("vnetlab/skb.py", "vnetlab.skb", "vnetlab.xmit", "\n\ndef _planted():\n    from vnetlab import xmit\n"),
           ("lab/util.py", "lab.util", "lab.run", "\n\ndef _planted():\n    import lab.run\n")]


@pytest.mark.parametrize("path, module, other, code", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_circle_is_found(tmp_path, path, module, other, code):
    for src in _modules().values():  # the Python files only: the graph reads nothing else
        dst = tmp_path / src.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    assert set(_modules(tmp_path)) == set(_modules())
    assert module in import_graph(tmp_path)[other], f"{other} must import {module} for the plant to close a circle"
    with open(tmp_path / path, "a", encoding="utf-8") as f:
        f.write(code)
    found = cycles(import_graph(tmp_path))
    assert any({module, other} <= set(c) for c in found), _circles_message(import_graph(tmp_path), found)


def test_models_never_import_the_drawings():
    """The device-stack model lives in vnetlab.stack, not in the figure package; no module outside
    vnetlab.viz / vnetlab.widgets (models, exercises, router, live, lab) imports them, even through another."""
    graph = import_graph()

    def reached(m: str) -> set[str]:
        seen: set[str] = set()
        todo = [m]
        while todo:
            for w in graph[todo.pop()] - seen:
                seen.add(w)
                todo.append(w)
        return seen

    offenders = {m: sorted(w for w in reached(m) if w.startswith(DRAWING))
                 for m in graph if not m.startswith(DRAWING)}
    assert {m: w for m, w in offenders.items() if w} == {}
    assert "vnetlab.stack" in reached("vnetlab.viz.featuregrid")  # the check sees through the re-exports
