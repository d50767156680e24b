"""Cut the functions, structs and macros a probe reads out of a kernel tree into tests/data/ksrc/<version>/.

``python -m lab.excerpt TREE DEST FILE:NAME [FILE:NAME ...]`` appends, to DEST/FILE, each NAME (a function,
``struct x``, or ``#define X``) exactly as the tree has it, after a header naming the package, file and lines:
``/* excerpt: Debian linux-source-6.12 (6.12.117-1~deb12u1) net/ipv4/udp.c lines 960-1040 (udp_send_skb) */``.
A NAME already excerpted in DEST/FILE is skipped. Only what tests/test_probes.py needs is cut: the trees are
GPL-2.0 source, quoted function by function.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lab.probes import ProbeError, Tree


def cut(tree: Tree, file: str, name: str) -> tuple[int, int, str]:
    """(first line, last line, raw text) of ``name`` in ``file``."""
    start, lines = tree.body(file, name)
    end = start + len(lines) - 1
    raw = (tree.root / file).read_text(errors="replace").split("\n")[start - 1:end]
    return start, end, "\n".join(raw)


def append(tree: Tree, dest: Path, file: str, name: str) -> bool:
    out = dest / file
    start, end, text = cut(tree, file, name)
    header = f"/* excerpt: {tree.label} {file} lines {start}-{end} ({name}) */"
    have = out.read_text() if out.exists() else ""
    if f"({name}) */" in have:
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(have + ("\n" if have and not have.endswith("\n\n") else "") + header + "\n" + text + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.excerpt", description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path, help="an unpacked kernel source tree (python -m lab profile unpacks one)")
    ap.add_argument("dest", type=Path, help="the excerpt directory, e.g. tests/data/ksrc/6.12.117")
    ap.add_argument("items", nargs="+", metavar="FILE:NAME")
    a = ap.parse_args(argv)
    try:
        tree = Tree(a.tree)
        for item in a.items:
            file, sep, name = item.partition(":")
            if not sep or not name:
                ap.error(f"{item!r}: expected FILE:NAME (e.g. net/ipv4/udp.c:udp_send_skb)")
            print(("cut " if append(tree, a.dest, file, name) else "have ") + item)
    except ProbeError as e:
        print(f"python -m lab.excerpt: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
