"""Small helpers shared by the lab's modules: logging and bounded subprocess calls."""

from __future__ import annotations

import subprocess
import time


def log(msg: str) -> None:
    print(f"[lab {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd: list[str], *, timeout: float = 600, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Run a command with a timeout (every external call the lab makes is bounded)."""
    return subprocess.run(cmd, check=check, timeout=timeout, text=True, capture_output=True, **kw)
