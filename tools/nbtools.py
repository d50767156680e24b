"""Notebook housekeeping for the workbook: one policy, enforced by tests and CI.

Policy (style.md rule 7): notebooks are committed without outputs, except golden text cells tagged
``nbval-check-output`` whose text output nbval (``--nbval-lax``) compares on every run. Each notebook has
the Python 3 kernelspec and generated navigation cells (tag ``nav``).

    python tools/nbtools.py refresh [NOTEBOOK...]   # execute, keep golden outputs only, normalise
    python tools/nbtools.py check                   # report policy violations (exit 1 if any)
    python tools/nbtools.py student                 # write the student copies (exercise cells cleared)
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
STUDENT = ROOT / "notebooks" / "student"
GOLDEN = "nbval-check-output"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
STUDENT_PLACEHOLDER = "# Your answer here: write code, run it, then check it with the cell below.\n"


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _title(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "nav" not in cell.metadata.get("tags", []):
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def nav_source(path: Path, all_paths: list[Path]) -> str:
    """The generated navigation line: previous, contents (00), next."""
    i = all_paths.index(path)
    parts = []
    if i > 0:
        parts.append(f"← [{_title(all_paths[i - 1])}]({all_paths[i - 1].name})")
    if path != all_paths[0]:
        parts.append(f"[Contents]({all_paths[0].name})")
    if i + 1 < len(all_paths):
        parts.append(f"[{_title(all_paths[i + 1])}]({all_paths[i + 1].name}) →")
    return " | ".join(parts)


def normalise(nb, path: Path, all_paths: list[Path]):
    """Kernelspec, no run metadata, outputs only in golden cells, navigation cells first and last."""
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    cells = [c for c in nb.cells if "nav" not in c.metadata.get("tags", [])]
    for cell in cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("collapsed", None)
        cell.metadata.pop("scrolled", None)
        cell.pop("id", None)
        if cell.cell_type == "code" and GOLDEN not in cell.metadata.get("tags", []):
            cell.outputs = []
            cell.execution_count = None
    nav = nav_source(path, all_paths)
    make = lambda: nbformat.v4.new_markdown_cell(nav, metadata={"tags": ["nav"]})  # noqa: E731
    nb.cells = [make(), *cells, make()]
    nb.nbformat, nb.nbformat_minor = 4, 5
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{path.stem[:2]}-{i:03d}"
    return nb


def refresh(paths: list[Path]) -> None:
    """Execute each notebook in a fresh kernel and keep the golden outputs."""
    from nbclient import NotebookClient

    all_paths = notebooks()
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
        for cell in nb.cells:
            if cell.cell_type == "code" and GOLDEN in cell.metadata.get("tags", []):
                cell.outputs = [o for o in cell.outputs if o.get("output_type") == "stream" or "text/plain" in o.get("data", {})]
                for o in cell.outputs:
                    if "data" in o:
                        o["data"] = {"text/plain": o["data"]["text/plain"]}
                        o["metadata"] = {}
        nbformat.write(normalise(nb, path, all_paths), path)
        print(f"refreshed {path.relative_to(ROOT)}")


def problems(path: Path, all_paths: list[Path] | None = None) -> list[str]:
    """Every way ``path`` breaks the policy (empty when it follows it)."""
    all_paths = all_paths or notebooks()
    nb = nbformat.read(path, as_version=4)
    found = []
    if nb.metadata.get("kernelspec") != KERNELSPEC:
        found.append("kernelspec is not python3")
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code":
            continue
        if GOLDEN in tags:
            if not cell.outputs:
                found.append(f"cell {i}: golden cell without a stored output (run tools/nbtools.py refresh)")
            for o in cell.outputs:
                if o.get("output_type") not in ("stream", "execute_result") or set(o.get("data", {})) - {"text/plain"}:
                    found.append(f"cell {i}: golden cell output must be text only")
        elif cell.outputs or cell.execution_count is not None:
            found.append(f"cell {i}: stored output in a cell not tagged {GOLDEN}")
        if "sys.path" in cell.source:
            found.append(f"cell {i}: edits sys.path (import the installed vnetlab instead)")
    navs = [c for c in nb.cells if "nav" in c.metadata.get("tags", [])]
    want = nav_source(path, all_paths)
    if len(navs) != 2 or any(c.source != want for c in navs) or nb.cells[0] is not navs[0] or nb.cells[-1] is not navs[-1]:
        found.append("navigation cells are missing or stale (run tools/nbtools.py refresh)")
    return found


def student_copy(nb):
    """Exercise cells (tag ``exercise``) cleared; everything else kept (fastbook's exercise copies)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and "exercise" in cell.metadata.get("tags", []):
            cell.source = STUDENT_PLACEHOLDER
            cell.outputs = []
            cell.execution_count = None
            tags = [t for t in cell.metadata.get("tags", []) if t != GOLDEN]
            cell.metadata["tags"] = tags + (["raises-exception"] if "raises-exception" in tags else [])
    return nb


def student_path(path: Path) -> Path:
    return STUDENT / path.name


def write_students() -> None:
    STUDENT.mkdir(exist_ok=True)
    for path in notebooks():
        nbformat.write(student_copy(nbformat.read(path, as_version=4)), student_path(path))
        print(f"wrote {student_path(path).relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("refresh", "check", "student"):
        print(__doc__)
        return 2
    if argv[0] == "refresh":
        paths = [Path(p).resolve() for p in argv[1:]] or notebooks()
        refresh(paths)
        write_students()
        return 0
    if argv[0] == "student":
        write_students()
        return 0
    bad = 0
    for path in notebooks():
        for problem in problems(path):
            print(f"{path.name}: {problem}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
