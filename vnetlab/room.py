"""Reports each ``exercises.check`` to the room board of a workshop hub (deploy/board/), and off a hub nothing.

On the workshop hub every attendee's kernel has the hub's token (``JUPYTERHUB_API_TOKEN``) and the board's address
(``VNETLAB_BOARD_URL``, set by deploy/board/hub_config.py). A check then appends one line (exercise, outcome, time,
notebook; never the answer) to a spool file in the attendee's home and wakes a background thread that posts the
spool to the board with the token; the board asks the hub whose token it is, so a kernel cannot report for another
attendee. The check itself never waits on the network and never fails because of the board: a board that is down or
slow keeps the lines in the spool until a later check sends them (each line has an id, so a line sent twice counts
once). Without both variables (a laptop, Binder, CI) nothing is written or sent.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vnetlab.checks import public
from vnetlab.errors import ArgumentError

BOARD_URL_ENV = "VNETLAB_BOARD_URL"
TOKEN_ENV = "JUPYTERHUB_API_TOKEN"
SPOOL_ENV = "VNETLAB_BOARD_SPOOL"
POST_TIMEOUT_S = 2.0  # a board that does not answer within this is treated as down; the lines stay in the spool
SPOOL_MAX_LINES = 2000  # bounded: a board that never comes back cannot fill the attendee's disk
OUTCOMES = ("right", "hint", "kind", "unanswered")


@public
def outcome(verdict: Any) -> str:
    """What a Verdict of exercises.check said: right, hint (a wrong value: the exercise's hint), kind (the wrong
    kind of answer, e.g. text for a number) or unanswered (``answer`` still None)."""
    if not (hasattr(verdict, "ok") and hasattr(verdict, "answered") and hasattr(verdict, "message")):
        raise ArgumentError(f"verdict must be what exercises.check returned (a Verdict), got {verdict!r}",
                            param="verdict")
    if verdict.ok:
        return "right"
    if not verdict.answered:
        return "unanswered"
    return "hint" if "Hint:" in verdict.message else "kind"


def enabled() -> bool:
    """True in a kernel the workshop hub started with a board."""
    return bool(os.environ.get(BOARD_URL_ENV)) and bool(os.environ.get(TOKEN_ENV))


def spool_path() -> Path:
    return Path(os.environ.get(SPOOL_ENV) or Path.home() / ".cache" / "vnetlab" / "board-spool.jsonl")


@public
def reported(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` that also reports its verdict to the room board, when there is one; the verdict is unchanged."""

    @functools.wraps(check)
    def wrapper(key: str, answer: Any) -> Any:
        verdict = check(key, answer)
        if enabled():
            try:
                report(key, outcome(verdict))
            except Exception:  # noqa: BLE001 - a check never fails because of the board
                pass
        return verdict

    return wrapper


@public
def report(key: str, what: str) -> None:
    """Queue one check's outcome for the board and wake the sender; returns at once."""
    notebook = os.path.basename(os.environ.get("JPY_SESSION_NAME", ""))  # jupyter_server names the kernel's notebook
    line = json.dumps({"id": uuid.uuid4().hex, "key": key, "outcome": what, "t": round(time.time(), 3),
                       "notebook": notebook})
    _SENDER.add(line)


class _Sender:
    """One daemon thread per kernel that posts the spool's lines to the board."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.memory: list[str] = []  # lines that could not be written to the spool (a full or unwritable home)
        self.thread: threading.Thread | None = None
        self.sent = 0
        self.failed = 0

    def add(self, line: str) -> None:
        try:
            path = spool_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:  # O_APPEND: lines of two kernels never interleave
                f.write(line + "\n")
        except OSError:
            with self.lock:
                self.memory = (self.memory + [line])[-SPOOL_MAX_LINES:]
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="vnetlab-board", daemon=True)
            self.thread.start()
        self.wake.set()

    def _run(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            self.flush()

    def _claim(self) -> list[str]:
        """The spool's lines, taken by renaming the file (another kernel of the same attendee may flush too)."""
        with self.lock:
            lines, self.memory = self.memory, []
        path = spool_path()
        claimed = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            os.rename(path, claimed)
        except OSError:
            return lines
        try:
            lines += [x for x in claimed.read_text(encoding="utf-8").splitlines() if x.strip()]
        finally:
            claimed.unlink(missing_ok=True)
        return lines[-SPOOL_MAX_LINES:]

    def _give_back(self, lines: list[str]) -> None:
        try:
            path = spool_path()
            with open(path, "a", encoding="utf-8") as f:
                f.write("".join(x + "\n" for x in lines))
        except OSError:
            with self.lock:
                self.memory = (lines + self.memory)[-SPOOL_MAX_LINES:]

    def flush(self) -> bool:
        """Post every spooled line to the board; True if it took them (otherwise they go back to the spool)."""
        import urllib.request

        lines = self._claim()
        if not lines:
            return True
        events = []
        for x in lines:
            try:
                events.append(json.loads(x))
            except ValueError:
                continue  # a line cut short (a kernel killed mid-write): drop it rather than block the rest
        body = json.dumps({"events": events}).encode()
        req = urllib.request.Request(os.environ.get(BOARD_URL_ENV, ""), data=body, method="POST", headers={
            "Authorization": f"token {os.environ.get(TOKEN_ENV, '')}", "Content-Type": "application/json"})
        import urllib.error

        try:
            with urllib.request.urlopen(req, timeout=POST_TIMEOUT_S) as resp:
                ok = "accepted" in json.loads(resp.read(4096) or b"{}")  # not a login page the proxy sent
        except urllib.error.HTTPError as exc:
            # the board refused these lines for good (a token it does not know, a malformed line): drop them
            ok = None if 400 <= exc.code < 500 and exc.code not in (408, 429) else False
        except Exception:  # noqa: BLE001 - down, slow, refused: keep the lines for the next check
            ok = False
        if ok:
            self.sent += len(events)
        elif ok is False:
            self._give_back(lines)
            self.failed += 1
        return bool(ok)


_SENDER = _Sender()
