"""Download every file a lock file pins into wheelhouse/, hash-checked, for an install with no network.

    python3 tools/wheelhouse.py                 # this machine's platform and Python, requirements.lock
    python3 tools/wheelhouse.py --target all    # Linux, macOS (Intel, Apple) and Windows laptops, Python 3.11
    python3 tools/wheelhouse.py --target macos-arm64,windows-amd64 --python 3.12 --lock requirements-test.lock

(any Python >= 3.11 with pip runs it: python3, or .venv/bin/python)

then, on each laptop (no network needed; a USB stick or the room's file share is enough):

    python3 -m venv .venv
    .venv/bin/pip install --no-index --find-links wheelhouse/ -r requirements.lock
    .venv/bin/pip install --no-index --find-links wheelhouse/ --no-deps -e .

Each target gets a requirements file filtered by its own environment markers (pip download would evaluate the
lock's markers on this machine, so a Linux host would skip macOS's appnope or Windows's pywinpty), and pip
downloads binary wheels only, checked against the lock's hashes (--require-hashes). Prints the wheelhouse's size.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

try:
    from packaging.markers import Marker
except ImportError:  # a bare venv: pip carries its own copy
    from pip._vendor.packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[1]
# target -> (pip --platform tags, the marker environment of such a laptop)
TARGETS = {
    "linux-x86_64": (["manylinux_2_28_x86_64", "manylinux2014_x86_64", "linux_x86_64"],
                     {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                      "platform_machine": "x86_64"}),
    "linux-aarch64": (["manylinux_2_28_aarch64", "manylinux2014_aarch64", "linux_aarch64"],
                      {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                       "platform_machine": "aarch64"}),
    "macos-x86_64": (["macosx_12_0_x86_64", "macosx_10_9_universal2"],
                     {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix",
                      "platform_machine": "x86_64"}),
    "macos-arm64": (["macosx_12_0_arm64", "macosx_10_9_universal2"],
                    {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix",
                     "platform_machine": "arm64"}),
    "windows-amd64": (["win_amd64"],
                      {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt",
                       "platform_machine": "AMD64"}),
}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*==\S+)(?: ; (.+?))? \\\n((?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)",
                 re.M)


def pins_for(lock_text: str, environment: dict[str, str], python_full: str) -> str:
    """The lock's pins (with their hashes) whose markers hold on ``environment`` with Python ``python_full``."""
    env = dict(environment, python_version=".".join(python_full.split(".")[:2]), python_full_version=python_full,
               implementation_name="cpython", platform_python_implementation="CPython")
    return "".join(f"{pin} \\\n{hashes}" for pin, marker, hashes in PIN.findall(lock_text)
                   if not marker or Marker(marker).evaluate(env))


def host_target() -> tuple[list[str], dict[str, str]]:
    return [sysconfig.get_platform().replace("-", "_").replace(".", "_")], {
        "sys_platform": sys.platform, "platform_system": platform.system(), "os_name": __import__("os").name,
        "platform_machine": platform.machine()}


def download(lock: Path, dest: Path, target: str, python: str) -> list[str]:
    """Download the target's files; returns the pins with no binary wheel for it (pip could only build them)."""
    tags, environment = host_target() if target == "host" else TARGETS[target]
    # a pin split at a micro release (soupsieve at 3.11.5) needs both files: one pip run per distinct set
    done, missing = set(), []
    for micro in (0, 99):
        requirements = pins_for(lock.read_text(), environment, f"{python}.{micro}")
        if requirements not in done:
            done.add(requirements)
            missing += [m for m in _download(requirements, dest, target, tags, f"{python}.{micro}")
                        if m not in missing]
    return missing


def _download(requirements: str, dest: Path, target: str, tags: list[str], python: str) -> list[str]:
    """pip download for one target; ``python`` is X.Y.Z, as Requires-Python (soupsieve: >=3.11.5) checks it.
    A pin with no wheel for the target is left out and returned (pip stops at the first one, so it retries)."""
    missing: list[str] = []
    while True:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(requirements)
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--require-hashes", "--no-deps", "-r", f.name,
               "-d", str(dest)]
        if target != "host":
            abi = "cp" + "".join(python.split(".")[:2])
            cmd += ["--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--abi", abi,
                    "--abi", "abi3", "--abi", "none", *(f"--platform={t}" for t in tags)]
        print(f"[wheelhouse] {target} (Python {python}): {requirements.count('==')} pins", flush=True)
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        finally:
            Path(f.name).unlink()
        if run.returncode == 0:
            return missing
        no_wheel = re.search(r"No matching distribution found for (\S+==\S+)", run.stderr)
        if target == "host" or not no_wheel:
            sys.stderr.write(run.stderr)
            raise SystemExit(f"[wheelhouse] pip download failed for {target} (exit {run.returncode})")
        missing.append(no_wheel[1])
        print(f"[wheelhouse] {target}: no wheel for {no_wheel[1]}; left out", flush=True)
        requirements = "".join(block for block in re.split(r"(?m)^(?=\S)", requirements)
                               if not block.lower().startswith(no_wheel[1].lower() + " "))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.lock")
    parser.add_argument("--dest", type=Path, default=ROOT / "wheelhouse")
    parser.add_argument("--target", default="host", help=f"host, all, or a comma list of {', '.join(TARGETS)}")
    parser.add_argument("--python", default=f"{sys.version_info.major}.{sys.version_info.minor}",
                        help="the laptops' Python (X.Y, at least 3.11); default: this one")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.(1[1-9]|[2-9]\d)", args.python):
        raise ValueError(f"--python must be X.Y with X.Y >= 3.11 (pyproject's requires-python), not {args.python!r}")
    targets = list(TARGETS) if args.target == "all" else args.target.split(",")
    unknown = [t for t in targets if t != "host" and t not in TARGETS]
    if unknown:
        raise ValueError(f"--target: unknown {unknown}; choose host, all or among {list(TARGETS)}")
    args.dest.mkdir(parents=True, exist_ok=True)
    missing = {target: download(args.lock, args.dest, target, args.python) for target in targets}
    files = list(args.dest.iterdir())
    size = sum(p.stat().st_size for p in files)
    print(f"[wheelhouse] {args.dest}: {len(files)} files, {size / 1e6:.0f} MB")
    gaps = {t: m for t, m in missing.items() if m}
    for target, pins in gaps.items():
        print(f"[wheelhouse] {target}: no wheel on PyPI for {', '.join(pins)}: those laptops build it from source "
              "(network and a C compiler), so they cannot install offline")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
