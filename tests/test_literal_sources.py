"""Every literal expected value in a test names its source.

An ``assert`` (or an ``assert_*`` call) that compares with a numeric literal of 64 or more, or with a list, tuple,
set or dict holding one, is a number somebody took from somewhere: the kernel source (file and version), the
section of the kernel pages in the repository (docs/kernel/<page>.md#<section>), BTF / pahole, the QEMU lab's data
(data/lab/...) or a patch mail. The
place must be named in a comment on the assert's lines or the three lines above, in the enclosing function's
docstring, or in the comment block just above the enclosing ``def``. Smaller numbers (counts, flags, small
header sizes) and values computed from named constants (``ETH_HLEN + 1500``) are not checked: a name is its
own source. Literals fed to the model in the same test and compared back (an input echoed) are not expected
values either, so they pass too.
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# What a source comment looks like: a kernel file path (.c/.h), a docs/kernel page, BTF or pahole, the lab's data or
# files (data/lab/, lab/...), a patch mail or patch, a commit id, the kernel's excerpts kept in tests/data/ksrc, an
# RFC, or an explicit "source:" (for a number the workbook itself decides: say which file decides it).
SOURCE = re.compile(
    r"source:|\b[\w/.-]+\.[ch]\b|docs/kernel/[\w-]+\.md|\bBTF\b|pahole|data/lab\b|patch mail|\bmail\b"
    r"|\bcommit [0-9a-f]{7,}\b"
    r"|\b[0-9a-f]{12}\b|tests/data/|ksrc/|\blab/[\w/.-]+|\.patch\b|\bRFC ?\d+|bpftool",
    re.IGNORECASE)

THRESHOLD = 64  # below this a literal is a count or a small header size, read off the test itself

# Test files whose literals still need their sources named; empty when every file is checked.
# test_literal_sources.py::test_pending_files_still_need_sources fails when one of them is done (remove it then).
_PENDING: frozenset[str] = frozenset()  # every test file is checked


@dataclass(frozen=True)
class BareLiteral:
    path: str
    line: int
    value: object
    code: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.value!r} in `{self.code}` names no source"


def _number(node: ast.AST) -> float | None:
    """The value of a numeric literal, a negated one or arithmetic of literals only (``1500 - 28``); else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _number(node.operand)
        return None if v is None else -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        left, right = _number(node.left), _number(node.right)
        if left is None or right is None:
            return None
        try:
            return eval(compile(ast.Expression(node), "<literal>", "eval"), {"__builtins__": {}})  # noqa: S307
        except (ArithmeticError, TypeError, ValueError):
            return None
    return None


def _big_literals(node: ast.AST, *, text: bool = False) -> list[float]:
    """The literal numbers >= THRESHOLD that ``node`` is or holds (containers and pytest.approx(...) looked into;
    with ``text``, also the whole numbers written in a string: "build_skb for 87..1162")."""
    v = _number(node)
    if v is not None:
        return [v] if abs(v) >= THRESHOLD else []
    if text and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [int(t) for t in _NUMBER_IN_TEXT.findall(node.value) if int(t) >= THRESHOLD]
    if text and isinstance(node, ast.JoinedStr):
        return [x for part in node.values for x in _big_literals(part, text=True)]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [x for e in node.elts for x in _big_literals(e)]
    if isinstance(node, ast.Dict):
        return [x for e in (*node.keys, *node.values) if e is not None for x in _big_literals(e)]
    if isinstance(node, ast.Call) and _call_name(node) == "approx":
        return [x for a in node.args for x in _big_literals(a)]
    return []


# A whole number in text: not part of a dotted version or address (5.10, 127.0.0.1), an identifier, a hex id or a
# percentage (a CSS width, a share).
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])\d+(?![\w%]|\.\d)")


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _compared(node: ast.AST) -> list[ast.AST]:
    """The operands that ``node`` (an assert's test) compares with: both sides of every comparison in it."""
    out: list[ast.AST] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare):
            out += [sub.left, *sub.comparators]
    return out


def _inputs(func: ast.AST | None) -> set[float]:
    """Literal numbers the test passes to a call or assigns before asserting: inputs, not expected values."""
    if func is None:
        return set()
    seen: set[float] = set()
    for sub in ast.walk(func):
        if isinstance(sub, ast.Call) and not _call_name(sub).startswith("assert") and _call_name(sub) != "approx":
            for a in (*sub.args, *(k.value for k in sub.keywords)):
                seen.update(_big_literals(a))
        elif isinstance(sub, ast.Assign | ast.AnnAssign) and sub.value is not None:
            seen.update(_big_literals(sub.value))
        elif isinstance(sub, ast.For):
            seen.update(_big_literals(sub.iter))
    return seen


def _comments(src: str) -> dict[int, str]:
    """Line number -> the comment on that line (tokenised: a '#' inside a string is no comment)."""
    return {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(src).readline)
            if tok.type == tokenize.COMMENT}


def _sourced(comments: dict[int, str], node: ast.stmt, func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """A source named in a comment on the statement's lines or the three lines above, in an assert's message, in
    the enclosing function's docstring or in the comment block right above its def (decorators included)."""
    last = node.end_lineno or node.lineno
    if any(SOURCE.search(comments.get(n, "")) for n in range(max(1, node.lineno - 3), last + 1)):
        return True
    if isinstance(node, ast.Assert) and node.msg is not None and SOURCE.search(ast.unparse(node.msg)):
        return True
    if func is not None:
        if SOURCE.search(ast.get_docstring(func) or ""):
            return True
        # the comment block that opens the function's body counts as its docstring
        start, stmts = func.lineno, func.body
        if ast.get_docstring(func) is not None:
            start, stmts = stmts[0].end_lineno or start, stmts[1:]
        if stmts and any(SOURCE.search(comments.get(n, "")) for n in range(start, stmts[0].lineno)):
            return True
        n = min([func.lineno, *(d.lineno for d in func.decorator_list)]) - 1
        while n in comments:
            if SOURCE.search(comments[n]):
                return True
            n -= 1
    return False


def bare_literals(path: Path, *, name: str | None = None) -> list[BareLiteral]:
    """Every expected literal (>= THRESHOLD) in an assertion of ``path`` without a source comment."""
    src = path.read_text()
    lines = src.splitlines()
    tree = ast.parse(src)
    comments = _comments(src)
    found: list[BareLiteral] = []

    def visit(node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None, inputs: set[float]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child, _inputs(child) | inputs)
                continue
            values: list[float] = []
            if isinstance(child, ast.Assert):
                values = [v for op in _compared(child.test) for v in _big_literals(op, text=True)]
            elif isinstance(child, ast.Expr) and isinstance(child.value, ast.Call) \
                    and _call_name(child.value).startswith("assert"):
                values = [v for a in child.value.args for v in _big_literals(a)]
            values = [v for v in values if v not in inputs]
            if values and not _sourced(comments, child, func):
                found.append(BareLiteral(name or path.name, child.lineno, values[0],
                                         lines[child.lineno - 1].strip()[:100]))
            visit(child, func, inputs)

    visit(tree, None, set())
    return found


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.glob("*.py") if p.name != Path(__file__).name)


@pytest.mark.parametrize("path", [p for p in _test_files() if p.name not in _PENDING], ids=lambda p: p.name)
def test_every_expected_literal_names_its_source(path: Path) -> None:
    bare = bare_literals(path)
    assert not bare, "\n".join(map(str, bare))


def test_pending_files_still_need_sources() -> None:
    # A file whose every source is named leaves _PENDING, so the check covers it from then on.
    done = sorted(name for name in _PENDING if (TESTS / name).exists() and not bare_literals(TESTS / name))
    assert not done, f"every literal in {done} names its source: remove them from _PENDING"


def _check(tmp_path: Path, code: str) -> list[BareLiteral]:
    p = tmp_path / "test_planted.py"
    p.write_text(textwrap.dedent(code))
    return bare_literals(p)


def test_a_planted_bare_literal_is_found(tmp_path: Path) -> None:
    found = _check(tmp_path, """
        def test_x(r):
            assert r.truesize == 1792
            assert r.lens == [1536, 1536, 2048]
            assert r.ns == pytest.approx(956.5)
            np.testing.assert_array_equal(r.a, (0, 4096))
            assert 3744 in (r.a, r.b)
        """)
    assert [b.line for b in found] == [3, 4, 5, 6, 7]
    assert [b.value for b in found] == [1792, 1536, 956.5, 4096, 3744]


def test_a_named_source_a_small_number_a_named_constant_or_an_echoed_input_passes(tmp_path: Path) -> None:
    assert _check(tmp_path, """
        SHINFO = 320  # docs/kernel/arch.md#b1

        def test_sourced(r):
            # drivers/net/virtio_net.c (v5.13) page_to_skb: truesize of a 1536-byte buffer
            assert r.truesize == 1536
            assert r.tailroom == 482  # docs/kernel/rx.md#a5
            assert r.nr_frags == 17
            assert r.shinfo == SHINFO and r.len == SHINFO + 14 * 100

        def test_documented(r):
            \"\"\"Numbers from data/lab/6.1/mergeable.json.\"\"\"
            assert r.n == 1162

        def test_echo(rx):
            r = rx.receive(1000)
            assert r.payload_len == 1000
        """) == []


def test_a_comment_too_far_above_or_without_a_source_does_not_count(tmp_path: Path) -> None:
    found = _check(tmp_path, """
        def test_x(r):
            r.update()
            # docs/kernel/rx.md#a5
            a = 1
            b = 2
            c = 3
            assert r.truesize == 1792  # the usual value
        """)
    assert [(b.line, b.value) for b in found] == [(8, 1792)]


def test_the_opening_comment_block_of_a_test_is_its_docstring(tmp_path: Path) -> None:
    assert _check(tmp_path, """
        def test_x(r):
            \"\"\"What the panel shows.\"\"\"
            # docs/kernel/rx.md#a5: the 1536-byte buffer's window
            r.update()
            r.update()
            r.update()
            assert r.window == (87, 1162)
        """) == []


# --------------------------------------------------------------------------------------------------
# A cited page section must exist: the kernel pages under docs/kernel/ and the excerpts under tests/data/ksrc/

ROOT = TESTS.parent
CITED_DIRS = ("vnetlab", "tests", "tools", "benchmarks", "lab", "data", "docs")
DOC_CITE = re.compile(r"docs/kernel/([\w-]+\.md)(?:#([\w-]+))?")
KSRC_CITE = re.compile(r"tests/data/ksrc/([\w.-]+(?:/[\w.-]+)*)")
ANCHOR = re.compile(r'<a id="([\w-]+)"></a>')


def _cited_files() -> list[Path]:
    """The repository's files that may cite a page (this file's planted examples left out)."""
    out = []
    for d in CITED_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.is_file() and p.suffix in (".py", ".toml", ".md", ".json", ".j2") and "golden" not in p.parts \
                    and "work" not in p.relative_to(ROOT).parts and p.name != Path(__file__).name:
                out.append(p)
    return out


def dangling_citations(files: list[Path], root: Path = ROOT) -> list[str]:
    """Each citation of a docs/kernel page section or a tests/data/ksrc excerpt in ``files`` that names nothing in
    the repository under ``root``, as "path:line: citation"."""
    anchors: dict[str, set[str]] = {}
    bad = []
    for p in files:
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in DOC_CITE.finditer(line):
                page, section = m.group(1), m.group(2)
                doc = root / "docs" / "kernel" / page
                if page not in anchors:
                    anchors[page] = set(ANCHOR.findall(doc.read_text(encoding="utf-8"))) if doc.exists() else set()
                if not doc.exists() or (section is not None and section not in anchors[page]):
                    bad.append(f"{p.relative_to(root)}:{n}: {m.group(0)}")
            for m in KSRC_CITE.finditer(line):
                if not (root / "tests" / "data" / "ksrc" / m.group(1)).exists():
                    bad.append(f"{p.relative_to(root)}:{n}: {m.group(0)}")
    return bad


def test_every_cited_kernel_page_section_exists() -> None:
    files = _cited_files()
    assert sum("docs/kernel/" in p.read_text(encoding="utf-8", errors="replace") for p in files) > 20
    assert dangling_citations(files) == []


def test_no_citation_points_outside_the_repository() -> None:
    # the project's kernel facts live in docs/kernel/; a fact sheet outside the repository cannot be opened
    outside = [f"{p.relative_to(ROOT)}:{n}" for p in _cited_files()
               for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
               if "kernel-" + "facts" in line]
    assert outside == []


def test_a_citation_of_a_missing_section_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs" / "kernel").mkdir(parents=True)
    (tmp_path / "docs" / "kernel" / "gro.md").write_text('<a id="c3"></a>\n## C.3\n', encoding="utf-8")
    (tmp_path / "tests" / "data" / "ksrc" / "6.1.192").mkdir(parents=True)
    src = tmp_path / "test_cites.py"
    src.write_text("# docs/kernel/gro.md#c3 and tests/data/ksrc/6.1.192 exist\n"
                   "# docs/kernel/gro.md#c9, docs/kernel/nowhere.md and tests/data/ksrc/4.19 do not\n",
                   encoding="utf-8")
    assert dangling_citations([src], tmp_path) == ["test_cites.py:2: docs/kernel/gro.md#c9",
                                                   "test_cites.py:2: docs/kernel/nowhere.md",
                                                   "test_cites.py:2: tests/data/ksrc/4.19"]
