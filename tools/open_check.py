"""Run the README's open command, as whoever runs this script, until the Jupyter server it starts answers.

CI (``.ci/run``) runs it as root and as a throwaway ordinary user in that user's own copy of the clone, so the
README's promise is checked both ways. The command is read from README.md (the first ``sh`` block under
"## Set-up") and run verbatim with ``bash -c`` in a new session; the script waits until the server lists
itself (``jupyter server list --json``), then checks with its token what an attendee gets: ``/api/status``
answers; the served root is the repository (``notebooks/``, ``data/``, ``lab/`` listed, so cited files open);
the start page (``/`` redirects there, as the printed URL does) is the student copy of notebook 00; and
JupyterLab's notification settings, as the server hands them to the page, fetch no news and check for no update
(no toast over the notebook). Then it stops the whole session. It prints when the server process appeared
(install done) and when it answered.

    python3 tools/open_check.py [--timeout SECONDS]     # exit 0 when the server answered, 1 otherwise
    python3 tools/open_check.py --keep-venv artifacts/readme-venv   # and keep a copy of the venv it made

``--keep-venv`` (CI, as root) copies the ``.venv`` the README's command just made, before the test command adds the
test lock to it, with :func:`install_stamp`: tests/labharness.py serves the browser tests from that copy instead
of running the same install again (the venv is the README's own, made by its command verbatim).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Attendees land in their own copy (exercises as placeholders), never in notebooks/solved/.
START_NOTEBOOK = "notebooks/00_welcome_and_map.ipynb"
SERVED = ("notebooks", "data", "lab")  # the repository root: the notebooks cite files in data/ and lab/
NOTIFICATION_SETTINGS = "@jupyterlab/apputils-extension:notification"
NO_TOAST = {"fetchNews": "false", "checkForUpdates": False}  # JupyterLab 4's news and update toasts


def readme_commands(readme: Path = ROOT / "README.md") -> list[str]:
    """The README's set-up commands, in order: [open, test]."""
    setup = readme.read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, re.S)]


STAMP_NAME = "vnetlab-readme-install.sha256"  # in a venv made by the open command's install (labharness reads it)


def readme_install(root: Path = ROOT) -> str:
    """The open command's venv and pip part: every step of its ``&&`` chain before ``jupyter lab``."""
    steps = readme_commands(root / "README.md")[0].split(" && ")
    return " && ".join(step for step in steps if not re.search(r"\bjupyter lab\b", step))


def install_stamp(root: Path = ROOT) -> str:
    """What a venv made by the README's install was made from: the install command, requirements.lock and
    pyproject.toml (a venv whose stamp differs is stale)."""
    return hashlib.sha256("\0".join([readme_install(root), (root / "requirements.lock").read_text(),
                                      (root / "pyproject.toml").read_text()]).encode()).hexdigest()


def keep_venv(root: Path, dest: Path) -> None:
    """Copy ``root/.venv`` (as the README's install left it) to ``dest``, stamped with :func:`install_stamp`.

    pip writes the venv's absolute path into its scripts (``#!.../.venv/bin/python``) and activate files; in the
    copy they name the copy, so that nothing run from it reaches back into ``.venv``, which the test command then
    fills with the test lock."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = root / ".venv"
    shutil.copytree(src, dest, symlinks=True)
    old, new = str(src.resolve()).encode(), str(dest.resolve()).encode()
    for f in (dest / "bin").iterdir():
        if f.is_file() and not f.is_symlink():
            data = f.read_bytes()
            if old in data and b"\0" not in data:  # text only (scripts, activate), never a binary
                f.write_bytes(data.replace(old, new))
    (dest / STAMP_NAME).write_text(install_stamp(root))


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
    try:
        out = subprocess.run([str(jupyter), "server", "list", "--json"], capture_output=True, text=True, env=env,
                             timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:  # a busy machine: ask again on the next round, within the overall timeout
        return []
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip().startswith("{")]


def _get(url: str, token: str) -> tuple[int, bytes]:
    status, body, _ = _get_final(url, token)
    return status, body


def _get_final(url: str, token: str) -> tuple[int, bytes, str]:
    """Status, body and the URL reached after redirects."""
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.read(), resp.geturl()


def attendee_view_problems(base: str, token: str) -> list[str]:
    """What is wrong with what an attendee gets from the server at ``base`` (empty: lands right, no toast)."""
    problems = []
    _, listing = _get(f"{base}/api/contents", token)
    names = {item["name"] for item in json.loads(listing)["content"]}
    if missing := [n for n in SERVED if n not in names]:
        problems.append(f"the served root lacks {missing} (lists {sorted(names)}): serve the repository root")
    try:
        _get(f"{base}/api/contents/{START_NOTEBOOK}?content=0", token)
    except OSError as exc:
        problems.append(f"{START_NOTEBOOK} is not served: {exc}")
    _, _, landed = _get_final(f"{base}/", token)
    if not landed.split("?", 1)[0].endswith(f"/lab/tree/{START_NOTEBOOK}"):
        problems.append(f"the start page is {landed}, not the student copy {START_NOTEBOOK}")
    _, body = _get(f"{base}/lab/api/settings/{NOTIFICATION_SETTINGS}", token)
    got = json.loads(body)
    schema = got.get("schema", {}).get("properties", {})
    effective = {k: got.get("settings", {}).get(k, schema.get(k, {}).get("default")) for k in NO_TOAST}
    if effective != NO_TOAST:
        problems.append(f"JupyterLab's {NOTIFICATION_SETTINGS} is {effective}, not {NO_TOAST}: the news toast shows")
    return problems


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


class OpenFailed(RuntimeError):
    """The open command exited, or no server answered in time; the message carries the end of its log."""


class Opened:
    """A running open command: its process (a session of its own), the server it started, and when."""

    def __init__(self, proc: subprocess.Popen, url: str, token: str, root_dir: str, installed_s: float,
                 answered_s: float) -> None:
        self.proc, self.url, self.token, self.root_dir = proc, url, token, root_dir
        self.installed_s, self.answered_s = installed_s, answered_s

    def stop(self) -> None:
        _stop(self.proc)


def open_workbook(root: Path, log_path: Path, *, timeout: float, env: dict[str, str] | None = None) -> Opened:
    """Run the README's open command in ``root`` until its server answers; fail unless it lands an attendee on the
    student copy of notebook 00, serves the repository root and shows no news toast."""
    command = readme_commands(root / "README.md")[0]
    env = dict(os.environ if env is None else env, BROWSER="true")  # no browser to open here; `true` is a no-op
    t0, last_list = time.monotonic(), 0.0
    log = open(log_path, "w")
    proc = subprocess.Popen(["bash", "-c", command], cwd=root, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    log.close()
    installed_at = None
    try:
        while time.monotonic() - t0 < timeout:
            if proc.poll() is not None:
                raise OpenFailed(f"the open command exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            session = _session_pids(proc.pid)
            # the install is done when jupyter runs (bash execs the last command of the chain, so the command's own
            # process turns into jupyter-lab)
            if installed_at is None and any(re.search(r"/jupyter(-lab)? ", _cmdline(p))
                                            and not _cmdline(p).startswith("bash ") for p in session):
                installed_at = time.monotonic() - t0
            if installed_at is None or time.monotonic() - last_list < 1:
                time.sleep(0.2)
                continue
            last_list = time.monotonic()
            ours = [s for s in _servers(root / ".venv" / "bin" / "jupyter", env) if s.get("pid") in session]
            if not ours:
                continue
            server = ours[0]
            base = server["url"].rstrip("/")
            try:
                status, _ = _get(f"{base}/api/status", server["token"])
            except OSError:
                continue
            problems = [f"/api/status answered {status}"] if status != 200 else []
            problems += attendee_view_problems(base, server["token"])
            if problems:
                raise OpenFailed(f"{base}: " + "; ".join(problems))
            return Opened(proc, base, server["token"], server.get("root_dir", ""), installed_at,
                          time.monotonic() - t0)
        raise OpenFailed(f"no server answered within {timeout:.0f} s:\n{log_path.read_text()[-3000:]}")
    except BaseException:
        _stop(proc)
        raise


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=900, help="seconds for install and start-up together")
    parser.add_argument("--keep-venv", type=Path, default=None,
                        help="after a pass, copy the .venv the command made here, stamped (tests/labharness.py)")
    args = parser.parse_args(argv)

    user = os.environ.get("USER") or str(os.getuid())
    print(f"[open-check] as {user} (uid {os.getuid()}) in {ROOT}: {readme_commands()[0]}", flush=True)
    log_path = ROOT / "artifacts" / f"open-check-uid{os.getuid()}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        opened = open_workbook(ROOT, log_path, timeout=args.timeout)
    except OpenFailed as exc:
        print(f"[open-check] FAIL: {exc}")
        return 1
    opened.stop()
    print(f"[open-check] OK: {opened.url} root {opened.root_dir} lands on {START_NOTEBOOK}, no news toast; "
          f"install {opened.installed_s:.1f} s, server answering at {opened.answered_s:.1f} s")
    if args.keep_venv is not None:
        dest = args.keep_venv if args.keep_venv.is_absolute() else ROOT / args.keep_venv
        t0 = time.monotonic()
        keep_venv(ROOT, dest)
        print(f"[open-check] the venv it made, copied to {dest} in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
