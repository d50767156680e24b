"""Run the README's open command, as whoever runs this script, until the Jupyter server it starts answers.

CI (``.ci/run``) runs it as root and as a throwaway ordinary user in that user's own copy of the clone, so the
README's promise is checked both ways. The command is read from README.md (the first ``sh`` block under
"## Set-up") and run verbatim with ``bash -c`` in a new session; the script waits until the server lists
itself (``jupyter server list --json``), asks ``/api/status`` and ``/api/contents`` with its token, then stops the
whole session. It prints when the server process appeared (install done) and when it answered.

    python3 tools/open_check.py [--timeout SECONDS]     # exit 0 when the server answered, 1 otherwise
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_NOTEBOOK = "00_welcome_and_map.ipynb"


def readme_commands(readme: Path = ROOT / "README.md") -> list[str]:
    """The README's set-up commands, in order: [open, test]."""
    setup = readme.read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, re.S)]


def _session_pids(sid: int) -> list[int]:
    """Processes in session ``sid`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid:  # field 6 of stat: session id (fields[0] is the state)
            pids.append(int(entry.name))
    return pids


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _servers(jupyter: Path, env: dict[str, str]) -> list[dict]:
    if not jupyter.exists():
        return []
    out = subprocess.run([str(jupyter), "server", "list", "--json"], capture_output=True, text=True, env=env,
                         timeout=30, stdin=subprocess.DEVNULL)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip().startswith("{")]


def _get(url: str, token: str) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.read()


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=900, help="seconds for install and start-up together")
    args = parser.parse_args(argv)

    command = readme_commands()[0]
    user = os.environ.get("USER") or str(os.getuid())
    print(f"[open-check] as {user} (uid {os.getuid()}) in {ROOT}: {command}", flush=True)
    log_path = ROOT / "artifacts" / f"open-check-uid{os.getuid()}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, BROWSER="true")  # no browser to open on a CI machine; `true` is a harmless no-op
    t0, last_list = time.monotonic(), 0.0
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["bash", "-c", command], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        installed_at = answered_at = None
        try:
            while time.monotonic() - t0 < args.timeout:
                if proc.poll() is not None:
                    print(f"[open-check] FAIL: the open command exited with {proc.returncode}; log: {log_path}")
                    print(log_path.read_text()[-3000:])
                    return 1
                session = _session_pids(proc.pid)
                # the install is done when jupyter runs (bash execs the last command of the chain, so the command's
                # own process turns into jupyter-lab)
                if installed_at is None and any(re.search(r"/jupyter(-lab)? ", _cmdline(p))
                                                and not _cmdline(p).startswith("bash ") for p in session):
                    installed_at = time.monotonic() - t0
                if installed_at is None or time.monotonic() - last_list < 1:
                    time.sleep(0.2)
                    continue
                last_list = time.monotonic()
                ours = [s for s in _servers(ROOT / ".venv" / "bin" / "jupyter", env) if s.get("pid") in session]
                if ours:
                    server = ours[0]
                    base = server["url"].rstrip("/")
                    try:
                        status, _ = _get(f"{base}/api/status", server["token"])
                        _, listing = _get(f"{base}/api/contents", server["token"])
                    except OSError:
                        time.sleep(0.5)
                        continue
                    names = {item["name"] for item in json.loads(listing)["content"]}
                    answered_at = time.monotonic() - t0
                    if status != 200 or FIRST_NOTEBOOK not in names:
                        print(f"[open-check] FAIL: {base} answered {status} and lists {sorted(names)}")
                        return 1
                    print(f"[open-check] OK: {base} root {server.get('root_dir')} answered /api/status; "
                          f"install {installed_at:.1f} s, server answering at {answered_at:.1f} s")
                    return 0
                time.sleep(0.5)
            print(f"[open-check] FAIL: no server answered within {args.timeout:.0f} s; log: {log_path}")
            print(log_path.read_text()[-3000:])
            return 1
        finally:
            _stop(proc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
