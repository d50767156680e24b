"""C syntax for lab.probes: a kernel function parsed with tree-sitter's C grammar, its expressions compared by
structure (parentheses, casts, likely()/unlikely()/READ_ONCE(), operand order and spacing do not matter).

A probe asks what the code does: which condition guards which statement (``guards``), what a variable is assigned
(``assignments``), what a macro expands to (``macro_value``). Whatever it cannot read raises lab.probes.ProbeError
from the probe, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Kernel annotations the C grammar does not know (sparse and section attributes): blanked, columns kept.
_ANNOTATIONS = re.compile(r"\b(__force|__rcu|__user|__iomem|__percpu|__must_check|__always_inline|noinline|__cold|"
                          r"__init|__exit|__read_mostly|__maybe_unused|__always_unused|__latent_entropy|__bitwise|"
                          r"INDIRECT_CALLABLE_SCOPE|__packed|__randomize_layout)\b|\b__aligned\([^()]*\)")
# Wrappers that do not change the value an expression tests (include/linux/compiler.h, rwonce.h).
_TRANSPARENT = {"likely", "unlikely", "READ_ONCE", "data_race"}
_COMMUTATIVE = {"&", "|", "^", "&&", "||", "+", "*", "==", "!="}
_FLIP = {">": "<", ">=": "<="}


class SyntaxUnavailable(RuntimeError):
    """tree-sitter (and its C grammar) is not installed."""


@lru_cache(maxsize=1)
def _parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_c
    except ImportError as e:  # the lab extra: pip install -e '.[lab]'
        raise SyntaxUnavailable("lab.probes reads C with tree-sitter: pip install -e '.[lab]' (tree-sitter, "
                                f"tree-sitter-c) ({e})") from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_c.language()))


def sanitize(text: str) -> str:
    return _ANNOTATIONS.sub(lambda m: " " * len(m.group(0)), text)


@dataclass(frozen=True)
class Node:
    """A tree-sitter node of a parsed function, with the function's first line in its file."""

    n: Any
    first_line: int  # file line of the parsed text's line 1

    @property
    def type(self) -> str:
        return self.n.type

    @property
    def line(self) -> int:
        return self.first_line + self.n.start_point[0]

    @property
    def text(self) -> str:
        return self.n.text.decode(errors="replace")

    def field(self, name: str) -> Node | None:
        c = self.n.child_by_field_name(name)
        return None if c is None else Node(c, self.first_line)

    @property
    def children(self) -> list[Node]:
        return [Node(c, self.first_line) for c in self.n.named_children]

    def walk(self) -> Iterator[Node]:
        stack = [self.n]
        while stack:
            n = stack.pop()
            yield Node(n, self.first_line)
            stack.extend(reversed(n.named_children))

    @property
    def parent(self) -> Node | None:
        p = self.n.parent
        return None if p is None else Node(p, self.first_line)

    def has_error(self) -> bool:
        return self.n.has_error


def parse(text: str, first_line: int = 1) -> Node:
    """Parse C text (a function or a struct, comments already blanked) into its root node."""
    return Node(_parser().parse(sanitize(text).encode()).root_node, first_line)


def strip(n: Node) -> Node:
    """The expression under parentheses, casts and value-preserving wrappers (unlikely(x) -> x)."""
    while True:
        if n.type == "parenthesized_expression" and len(n.children) == 1:
            n = n.children[0]
        elif n.type == "cast_expression" and n.field("value") is not None:
            n = n.field("value")  # type: ignore[assignment]
        elif n.type == "call_expression" and _callee(n) in _TRANSPARENT and len(_args(n)) == 1:
            n = _args(n)[0]
        else:
            return n


def _callee(n: Node) -> str | None:
    f = n.field("function")
    return f.text if f is not None and f.type == "identifier" else None


def _args(n: Node) -> list[Node]:
    a = n.field("arguments")
    return [] if a is None else a.children


def _operator(n: Node) -> str:
    op = n.n.child_by_field_name("operator")
    return op.type if op is not None else ""


def _chain(n: Node, op: str) -> list[Node]:
    n = strip(n)
    if n.type == "binary_expression" and _operator(n) == op:
        return _chain(n.field("left"), op) + _chain(n.field("right"), op)  # type: ignore[arg-type]
    return [n]


def canon(n: Node | None) -> str:
    """A canonical text of an expression: equal for expressions that differ only in layout, parentheses, casts,
    transparent wrappers, operand order of commutative operators and the direction of a comparison."""
    if n is None:
        return ""
    n = strip(n)
    if n.type == "binary_expression":
        op = _operator(n)
        if op in ("==", "!=") and "0" in (canon(n.field("left")), canon(n.field("right"))):
            other = canon(n.field("right")) if canon(n.field("left")) == "0" else canon(n.field("left"))
            return f"!{other}" if op == "==" else other  # x == 0 is !x, x != 0 is x (as a condition)
        if op in _COMMUTATIVE:
            parts = sorted(canon(x) for x in _chain(n, op))
            return "(" + op.join(parts) + ")"
        left, right = canon(n.field("left")), canon(n.field("right"))
        if op in _FLIP:
            left, right, op = right, left, _FLIP[op]
        if op == "<":  # integers: a < N is a <= N - 1, N < b is N + 1 <= b
            if int_literal(right) is not None:
                return f"({left}<={int_literal(right) - 1})"  # type: ignore[operator]
            if int_literal(left) is not None:
                return f"({int_literal(left) + 1}<={right})"  # type: ignore[operator]
        return f"({left}{op}{right})"
    if n.type == "call_expression":
        name = _callee(n)
        args = [canon(a) for a in _args(n)]
        if name in ("min_t", "max_t") and len(args) >= 3:
            # min_t(type, a, b): the values compared are a and b (a two-word type parses as two arguments)
            name, args = name[:3], args[-2:]
        if name in ("min", "max"):
            args = sorted(args)
        return f"{name if name else canon(n.field('function'))}({','.join(args)})"
    if n.type == "sizeof_expression":
        inner = n.field("value") or n.field("type")
        return f"sizeof({canon(inner)})"
    if n.type == "unary_expression":
        return _operator_text(n) + canon(n.field("argument"))
    if n.type == "number_literal":
        return str(int_literal(n.text) if int_literal(n.text) is not None else n.text)
    if not n.children:
        return re.sub(r"\s+", "", n.text)
    return re.sub(r"\s+", "", n.text) if n.type in ("field_expression", "subscript_expression") and not any(
        c.type in ("parenthesized_expression", "cast_expression", "call_expression") for c in n.children) \
        else "".join(_tokens(n))


def _operator_text(n: Node) -> str:
    op = n.n.child_by_field_name("operator")
    return op.text.decode() if op is not None else n.text[:1]


def _tokens(n: Node) -> Iterator[str]:
    """Canonical tokens of a composite node: named children canonicalised, punctuation kept."""
    for c in n.n.children:
        if c.is_named:
            yield canon(Node(c, n.first_line))
        else:
            yield c.type


@lru_cache(maxsize=256)
def expr(text: str) -> str:
    """The canonical text of C expression ``text`` (write a probe's expected shape as C, compare canon to it)."""
    root = parse(f"void f(void) {{ x = {text}; }}")
    rhs = next(n for n in root.walk() if n.type == "assignment_expression").field("right")
    return canon(rhs)


def int_literal(text: str) -> int | None:
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", text.strip())
    return int(m.group(1), 0) if m else None


def disjuncts(cond: Node) -> list[Node]:
    """The terms of a condition joined by a top-level ||."""
    return _chain(cond, "||")


def conjuncts(cond: Node) -> list[Node]:
    """The terms of a condition joined by a top-level &&."""
    return _chain(cond, "&&")


def statements(body: Node | None) -> list[Node]:
    """The statements of a consequence: a compound statement's children, or the single statement."""
    if body is None:
        return []
    if body.type == "compound_statement":
        return [c for c in body.children if c.type != "comment"]
    return [body]


def ifs(fn: Node) -> Iterator[tuple[Node, Node, list[Node]]]:
    """(if statement, its condition, the statements it guards) for every if in ``fn``, in source order."""
    for n in fn.walk():
        if n.type == "if_statement":
            cond = n.field("condition")
            if cond is not None:
                yield n, cond, statements(n.field("consequence"))


def assignments(fn: Node) -> Iterator[tuple[Node, str, str, Node]]:
    """(assignment node, canonical left side, operator, right side) for every assignment in ``fn``."""
    for n in fn.walk():
        if n.type == "assignment_expression":
            op = n.n.child_by_field_name("operator")
            yield n, canon(n.field("left")), op.type if op is not None else "=", n.field("right")  # type: ignore


def guarded(fn: Node, effect: str) -> list[tuple[Node, list[Node]]]:
    """Every if in ``fn`` whose guarded statements include one of canonical text ``effect`` (a statement such as
    ``return-EMSGSIZE;`` or an assignment), with the condition's disjuncts: an if split in two is the union."""
    out = []
    for n, cond, body in ifs(fn):
        if any(stmt_canon(s) == effect for s in body):
            out.append((n, disjuncts(cond)))
    return out


def stmt_canon(s: Node) -> str:
    """A statement's canonical text: ``return<expr>;``, ``goto<label>;`` or the canonical expression."""
    if s.type == "return_statement":
        e = s.children[0] if s.children else None
        return f"return{canon(e)};"
    if s.type == "goto_statement":
        return f"goto{s.field('label').text if s.field('label') else ''};"
    if s.type == "expression_statement" and s.children:
        e = s.children[0]
        if e.type == "assignment_expression":
            op = e.n.child_by_field_name("operator")
            return f"{canon(e.field('left'))}{op.type if op else '='}{canon(e.field('right'))};"
        return canon(e) + ";"
    return re.sub(r"\s+", "", s.text)


def eval_int(expr: Node, macros: dict[str, str] | None = None, depth: int = 0) -> int | None:
    """The value of an integer constant expression (literals, << >> + - * | &, parentheses, casts, and macros
    from ``macros``: name -> replacement text), or None when it is not one."""
    if depth > 8:
        return None
    e = strip(expr)
    if e.type == "number_literal":
        return int_literal(e.text)
    if e.type == "identifier" and macros and e.text in macros:
        sub = parse(f"int x = {macros[e.text]};")
        init = next((n for n in sub.walk() if n.type == "init_declarator"), None)
        val = init.field("value") if init is not None else None
        return None if val is None else eval_int(val, macros, depth + 1)
    if e.type == "binary_expression":
        a, b = eval_int(e.field("left"), macros, depth), eval_int(e.field("right"), macros, depth)  # type: ignore
        if a is None or b is None:
            return None
        op = _operator(e)
        ops = {"<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
               "*": lambda: a * b, "|": lambda: a | b, "&": lambda: a & b}
        return ops[op]() if op in ops else None
    return None


def macros(text: str) -> dict[str, str]:
    """Object-like #defines of a file's text (continuation lines joined): name -> replacement."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?!\()[ \t]*((?:[^\n\\]|\\\n)*)", text, re.M):
        out.setdefault(m.group(1), m.group(2).replace("\\\n", " ").strip())
    return out


def comparisons(fn: Node) -> Iterator[tuple[Node, str, str, str]]:
    """(node, left, op, right) of every comparison in ``fn``, turned so the operator is < or <= (or == / !=)."""
    for n in fn.walk():
        if n.type == "binary_expression" and _operator(n) in ("<", "<=", ">", ">=", "==", "!="):
            op = _operator(n)
            left, right = canon(n.field("left")), canon(n.field("right"))
            if op in _FLIP:
                left, right, op = right, left, _FLIP[op]
            yield n, left, op, right


def siblings_in_and(n: Node) -> list[str]:
    """The canonical conjuncts beside ``n`` in the && chain that holds it (through parentheses)."""
    top = n
    while top.parent is not None and (top.parent.type == "parenthesized_expression" or (
            top.parent.type == "binary_expression" and _operator(top.parent) == "&&")):
        top = top.parent
    terms = conjuncts(top)
    return [canon(t) for t in terms if t.n != strip(n).n]
