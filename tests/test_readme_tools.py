"""Every tool command the README writes (`... tools/NAME.py ...` in backticks) runs as written from a fresh shell
(no venv activated, a bare PATH) in a clone whose `.venv` the open or test command made.

Commands that rewrite the repository or fetch from the network are run in a form that does neither, and the
table says which: `refresh` rewrites the golden and student copies (its interpreter and imports are those of
`check` and `html`, which run), `html` and the projector write to a temporary folder instead of `site/`, the
projector runs one notebook, `lock.py` and `wheelhouse.py` answer `--help` (they resolve against or download from
the package index)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

# command as the README writes it -> (what this test runs instead, or None for as written; seconds allowed)
RUN = {
    ".venv/bin/python tools/plan.py": (None, 300),
    ".venv/bin/python tools/nbtools.py check": (None, 300),
    ".venv/bin/python tools/nbtools.py refresh": (".venv/bin/python tools/nbtools.py check", 300),
    ".venv/bin/python tools/nbtools.py html": (".venv/bin/python tools/nbtools.py html --out {tmp}/site", 900),
    ".venv/bin/python tools/projector.py": (".venv/bin/python tools/projector.py 00 --out {tmp}/projector", 600),
    "python3 tools/lock.py": ("python3 tools/lock.py --help", 120),
    "python3 tools/wheelhouse.py --target all": ("python3 tools/wheelhouse.py --help", 120),
}


def readme_tool_commands() -> list[str]:
    """The runnable tool commands in the README: backticked text that starts with an interpreter."""
    found = re.findall(r"`((?:\S*python3?|\.venv/bin/python)\s+tools/[a-z_]+\.py[^`]*)`", README.read_text())
    return sorted(set(found))


def test_every_readme_tool_command_is_known():
    """A command added to the README gets a row in RUN (and so a run below); none uses a bare `python`."""
    commands = readme_tool_commands()
    assert commands, "the README names no tool command"
    assert set(commands) <= set(RUN), set(commands) - set(RUN)
    assert not [c for c in commands if c.startswith("python ")], "a bare `python` is the system one"


@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="the repository's .venv (the README's open or test command)")
@pytest.mark.parametrize("command", sorted(RUN))
def test_readme_tool_command_runs_from_a_fresh_shell(command, tmp_path):
    if command not in readme_tool_commands():
        pytest.skip("not in the README any more")
    run, timeout = RUN[command]
    line = (run or command).format(tmp=tmp_path)
    # a login shell's PATH (Debian's /etc/profile; root's has the sbin folders notebook 60 needs: ip, sysctl)
    path = "/usr/local/bin:/usr/bin:/bin"
    if os.geteuid() == 0:
        path = "/usr/local/sbin:/usr/sbin:/sbin:" + path
    env = {"PATH": path, "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for keep in ("PIP_CONFIG_FILE", "PIP_INDEX_URL", "PIP_FIND_LINKS", "TMPDIR"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", line], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"{line}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}"
    assert "ModuleNotFoundError" not in r.stderr
