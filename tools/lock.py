"""Write requirements.lock and requirements-test.lock from pyproject.toml: exact versions with hashes.

    python3 tools/lock.py            # re-resolve both lock files (needs PyPI)
    python3 tools/lock.py --check    # exit 1 if the lock files are not what pyproject.toml resolves to today

One universal resolution (``uv pip compile --universal``) for every platform a workshop room brings: Linux,
macOS and Windows, Python 3.11 and newer; platform-only packages carry their environment marker (pyroute2 on
Linux, appnope on macOS, pywinpty on Windows). Each lock also pins [build-system] requires (setuptools, wheel),
so ``pip install --no-index --find-links wheelhouse/ -e .`` can build the package offline. The workbook's lock
(the default dependencies) is resolved inside the test lock (``-c``), so the two never disagree on a version:
the versions the test suite passes with are the versions attendees install.

uv comes from PATH, or is installed once into artifacts/lock-tools/ (pinned below).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UV_VERSION = "0.13.9"
PYTHON_MIN = "3.11"  # pyproject.toml's requires-python; the universal lock covers every newer Python by markers
LOCKS = {"requirements-test.lock": ["--extra", "test"], "requirements.lock": ["-c", "requirements-test.lock"]}
COMMAND = "python3 tools/lock.py"


def uv() -> str:
    """A uv executable: the one on PATH, or one installed into artifacts/lock-tools/."""
    found = shutil.which("uv")
    if found:
        return found
    venv = ROOT / "artifacts" / "lock-tools"
    exe = venv / ("Scripts" if os.name == "nt" else "bin") / "uv"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = venv / ("Scripts" if os.name == "nt" else "bin") / "pip"
        subprocess.run([str(pip), "install", "-q", f"uv=={UV_VERSION}"], check=True)
    return str(exe)


def build_requires() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]


def compile_lock(name: str, out: Path) -> None:
    """Resolve pyproject.toml (and the build requires, read from stdin) into ``out``."""
    cmd = [uv(), "pip", "compile", "--quiet", "--universal", "--python-version", PYTHON_MIN, "--generate-hashes",
           "--custom-compile-command", COMMAND, "--no-header", *LOCKS[name], "pyproject.toml", "-", "-o", str(out)]
    subprocess.run(cmd, cwd=ROOT, input="\n".join(build_requires()) + "\n", text=True, check=True, timeout=600)
    body = out.read_text()
    header = (f"# Written by `{COMMAND}` from pyproject.toml (do not edit): every platform, Python >= {PYTHON_MIN}.\n"
              f"# Online:  pip install -r {name} && pip install --no-deps -e .\n"
              f"# Offline: pip install --no-index --find-links wheelhouse/ -r {name} && "
              f"pip install --no-index --find-links wheelhouse/ --no-deps -e .\n")
    out.write_text(header + body)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with a fresh resolution, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name in LOCKS:  # the test lock first: the workbook's lock is constrained by it
        target = ROOT / name
        out = target.with_suffix(".lock.new") if args.check else target
        compile_lock(name, out)
        if args.check:
            if out.read_text() != target.read_text():
                stale.append(name)
            out.unlink()
    if stale:
        print(f"stale: {', '.join(stale)}; run `{COMMAND}`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
