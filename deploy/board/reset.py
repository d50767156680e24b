#!/usr/bin/env python3
"""Give one attendee a fresh student copy of one notebook, keeping the edited one beside it (never deleted).

    sudo deploy/board/reset.py ana 10_receive_buffers_and_memory_layout

(the board's Reset button does the same). ``~vnl-ana/vnetlab/10_….ipynb`` is kept as
``10_….edited-<UTC time>.ipynb`` in the same folder and a fresh copy of ``notebooks/10_….ipynb`` takes its
name. It works while the attendee's server runs: the notebook's path never disappears (the edited file is linked to
its new name before the fresh copy replaces it), and JupyterLab, on its next save of a tab still open on the old
copy, says the file changed on disk; the attendee chooses Revert (or reopens it) to see the fresh copy. The files are
written by a child process running as the attendee, so a symbolic link the attendee put in their home can never make
root write elsewhere. Standard library only (runs with Debian's python3).
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STUDENT = REPO / "notebooks"  # the attendees' copies, NN_name.ipynb (never solved/)
ACCOUNT_PREFIX = "vnl-"  # deploy/vnetlab_hub.py account(): attendee ana runs as vnl-ana
USERNAME_PATTERN = r"^[a-z][a-z0-9_-]{0,23}$"  # deploy/vnetlab_hub.py USERNAME_PATTERN
COPY = Path("vnetlab")  # deploy/vnetlab_hub.py: the copy's folder in the attendee's home

# Runs as the attendee: the fresh notebook arrives on stdin. os.link fails rather than overwrite a kept copy.
_AS_ATTENDEE = r"""
import os, sys
folder, name, kept = sys.argv[1:4]
fresh = sys.stdin.buffer.read()
os.chdir(folder)
tmp = f".{name}.fresh-{os.getpid()}"
with open(tmp, "xb") as f:
    f.write(fresh)
    f.flush()
    os.fsync(f.fileno())
if os.path.lexists(name):
    os.link(name, kept, follow_symlinks=False)
os.replace(tmp, name)
print(kept if os.path.lexists(kept) else "")
"""


class ResetError(Exception):
    """Why a reset could not be done (the attendee, the notebook or their copy)."""


def notebooks() -> list[str]:
    """The student notebooks an attendee can be given afresh (names without .ipynb)."""
    return sorted(p.stem for p in STUDENT.glob("[0-9][0-9]_*.ipynb"))


def reset_notebook(name: str, notebook: str, *, stamp: str | None = None) -> dict:
    """Reset ``notebook`` of hub user ``name``; returns the paths of the fresh copy and of the kept one."""
    if not isinstance(name, str) or not re.fullmatch(USERNAME_PATTERN, name):
        raise ResetError(f"attendee {name!r}: not a hub name (pattern {USERNAME_PATTERN})")
    notebook = notebook.removesuffix(".ipynb") if isinstance(notebook, str) else notebook
    if notebook not in notebooks():
        raise ResetError(f"notebook {notebook!r}: one of {', '.join(notebooks())}")
    try:
        pw = pwd.getpwnam(ACCOUNT_PREFIX + name)
    except KeyError:
        raise ResetError(f"attendee {name!r} has no account yet (their server never started)") from None
    folder = Path(pw.pw_dir) / COPY
    if not folder.is_dir():
        raise ResetError(f"{folder} does not exist: the attendee's copy is made when their server first starts")
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    fresh = (STUDENT / f"{notebook}.ipynb").read_bytes()
    for n in range(1, 100):
        kept = f"{notebook}.edited-{stamp}{'' if n == 1 else f'-{n}'}.ipynb"
        if not os.path.lexists(folder / kept):
            break
    else:
        raise ResetError(f"{folder}: too many kept copies stamped {stamp}")
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable  # one the attendee may run
    out = subprocess.run([python, "-I", "-c", _AS_ATTENDEE, str(folder), f"{notebook}.ipynb", kept],
                         input=fresh, capture_output=True, timeout=60, user=pw.pw_uid, group=pw.pw_gid,
                         extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir})
    if out.returncode != 0:
        raise ResetError(f"writing as {pw.pw_name} failed: {out.stderr.decode(errors='replace').strip()[-300:]}")
    kept_name = out.stdout.decode().strip()
    return {"attendee": name, "notebook": str(folder / f"{notebook}.ipynb"),
            "kept": str(folder / kept_name) if kept_name else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("attendee", help="the attendee's hub name (ana, not vnl-ana)")
    ap.add_argument("notebook", help="e.g. 10_receive_buffers_and_memory_layout (.ipynb optional)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        ap.error("run as root (it writes as the attendee's account)")
    try:
        done = reset_notebook(args.attendee, args.notebook)
    except ResetError as exc:
        print(f"reset: {exc}", file=sys.stderr)
        return 1
    print(f"{done['notebook']}: a fresh copy; the edited one is kept as {done['kept'] or '(there was none)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
