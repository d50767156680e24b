"""Run a tool with the repository's ``.venv`` python, which the README's open command makes.

The tools need the workbook's packages (nbformat, vnetlab), and the README's commands may be typed with another
python (the system's ``python3``). Standard library only: it runs before any of those packages can be imported.
A tool calls it first thing when run as a script, where its own folder is ``sys.path[0]``::

    if __name__ == "__main__":
        import _venv
        _venv.reexec(__file__)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
# Set on the re-run, so a tool never re-executes twice; a caller sets it to "1" to keep the interpreter it chose.
SWITCH = "VNETLAB_TOOL_REEXEC"


def venv_python(root: Path = ROOT) -> Path | None:
    """The repository's .venv interpreter (POSIX or Windows layout), if there is one."""
    for rel in ("bin/python", "Scripts/python.exe"):
        if os.path.lexists(root / ".venv" / rel):  # lexists: a link to a python this user cannot reach still counts
            return root / ".venv" / rel
    return None


def reexec(script: str) -> None:
    """Replace this process by ``.venv``'s python running ``script`` with the same arguments; nothing when this is
    already that python, the switch is set, or there is no .venv (the tool's imports then say what is missing)."""
    if os.environ.get(SWITCH) == "1":
        return
    python = venv_python()
    if python is None or Path(sys.prefix).resolve() == VENV.resolve():
        return
    if not os.access(python, os.X_OK):
        raise SystemExit(f"{python} cannot be run by this user (the python it links to lies where this user cannot "
                         "read): make a venv as this user with the README's open command, or run the tool as its "
                         "owner")
    os.environ[SWITCH] = "1"
    os.execv(str(python), [str(python), str(Path(script).resolve()), *sys.argv[1:]])
