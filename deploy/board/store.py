"""The room board's events and counts (standard library only, so tests and the admin command import it anywhere).

Every check an attendee's kernel reports is one row of ``events`` in a SQLite file in the hub's state folder; the
counts are rebuilt from those rows when the board starts, so a restarted board shows what it showed before. The
counts are per attendee, never per event: an attendee who runs a check ten times, or restarts the kernel and runs it
again, is one attendee who tried, and one who got it right if any of their answers was right.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

OUTCOMES = ("right", "hint", "kind", "unanswered")  # vnetlab/room.py outcome()
ANSWERED = ("right", "hint", "kind")
MAX_EVENTS_PER_POST = 500
SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,      -- made by the kernel: a line sent twice (a retry after a timeout) counts once
    user TEXT NOT NULL,       -- the hub's name for the token's owner, never a name the kernel sent
    key TEXT NOT NULL,        -- the exercise, e.g. 10.1
    outcome TEXT NOT NULL,    -- right, hint, kind or unanswered
    notebook TEXT NOT NULL,
    t REAL NOT NULL,          -- when the check ran (the kernel's clock, the hub's machine)
    received REAL NOT NULL    -- when the board stored it
)"""


class EventError(ValueError):
    """A reported event the board does not take (an unknown exercise or outcome, a malformed field)."""


@dataclass
class Attempt:
    """One attendee on one exercise."""

    first_t: float
    last_t: float
    checks: int = 0
    answered: int = 0
    hints: int = 0
    kinds: int = 0
    ever_right: bool = False
    latest: str = ""
    latest_t: float = 0.0


@dataclass
class Room:
    """The counts, from events applied in any order (a spooled event may arrive after a later one)."""

    attempts: dict[tuple[str, str], Attempt] = field(default_factory=dict)
    last: dict[str, tuple[float, str, str]] = field(default_factory=dict)  # user -> (t, key, notebook) of the latest

    def apply(self, user: str, key: str, outcome: str, notebook: str, t: float) -> None:
        a = self.attempts.get((user, key))
        if a is None:
            a = self.attempts[(user, key)] = Attempt(first_t=t, last_t=t)
        a.first_t, a.last_t = min(a.first_t, t), max(a.last_t, t)
        a.checks += 1
        if outcome in ANSWERED:
            a.answered += 1
        a.hints += outcome == "hint"
        a.kinds += outcome == "kind"
        a.ever_right |= outcome == "right"
        if t >= a.latest_t:
            a.latest, a.latest_t = outcome, t
        if t >= self.last.get(user, (0.0, "", ""))[0]:
            self.last[user] = (t, key, notebook)

    def exercises(self, known: dict[str, dict]) -> list[dict]:
        """Per exercise: attendees who answered, got it right (ever, and with their latest answer), got its hint."""
        rows = []
        for key, meta in known.items():
            mine = [a for (u, k), a in self.attempts.items() if k == key]
            rows.append({
                "key": key, "question": meta.get("question", ""), "hint": meta.get("hint", ""),
                "opened": len(mine),
                "tried": sum(a.answered > 0 for a in mine),
                "right": sum(a.ever_right for a in mine),
                "right_latest": sum(a.latest == "right" for a in mine),
                "hint_attendees": sum(a.hints > 0 for a in mine),
                "hint_times": sum(a.hints for a in mine),
                "hint_then_right": sum(a.hints > 0 and a.ever_right for a in mine),
                "kind_attendees": sum(a.kinds > 0 for a in mine),
            })
        return rows

    def attendees(self, names: list[str], now: float, stuck_after_s: float) -> list[dict]:
        """Per attendee: the exercise they checked last, since when they are on it without a right answer."""
        rows = []
        for name in sorted(set(names) | set(self.last)):
            last = self.last.get(name)
            mine = {k: a for (u, k), a in self.attempts.items() if u == name}
            row = {"name": name, "checks": sum(a.checks for a in mine.values()),
                   "right": sum(a.ever_right for a in mine.values()), "tried": sum(a.answered > 0 for a in
                                                                                   mine.values()),
                   "last_t": last[0] if last else None, "current": last[1] if last else None,
                   "notebook": last[2] if last else None, "on_it_s": None, "stuck": False}
            if last and not mine[last[1]].ever_right:
                row["on_it_s"] = round(now - mine[last[1]].first_t, 1)
                row["stuck"] = row["on_it_s"] >= stuck_after_s
            rows.append(row)
        return rows


def summary(room: Room, known: dict[str, dict], hub_users: list[dict], now: float, stuck_after_s: float) -> dict:
    """What the board page shows: the exercises, the hints that fired most, who has not started, who is stuck."""
    names = [u["name"] for u in hub_users]
    people = room.attendees(names, now, stuck_after_s)
    server = {u["name"]: u for u in hub_users}
    for p in people:
        p["server"] = server.get(p["name"], {}).get("server", "unknown")
    exercises = room.exercises(known)
    hints = sorted((e for e in exercises if e["hint_attendees"]), key=lambda e: (-e["hint_attendees"],
                                                                                -e["hint_times"], e["key"]))
    return {
        "now": now, "stuck_after_s": stuck_after_s, "attendees": len(set(names) | set(room.last)),
        "exercises": exercises,
        "hints": [{k: e[k] for k in ("key", "hint", "hint_attendees", "hint_times", "hint_then_right")}
                  for e in hints],
        "not_started": [p for p in people if p["checks"] == 0],
        "stuck": sorted((p for p in people if p["stuck"]), key=lambda p: -p["on_it_s"]),
        "people": people,
        "events": sum(a.checks for a in room.attempts.values()),
    }


class Store:
    """The events table and the Room rebuilt from it; safe to call from the board's threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.lock = threading.Lock()
        self.db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(SCHEMA)
        self.room = Room()
        for user, key, outcome, notebook, t in self.db.execute(
                "SELECT user, key, outcome, notebook, t FROM events ORDER BY t"):
            self.room.apply(user, key, outcome, notebook, t)
        self.loaded = sum(a.checks for a in self.room.attempts.values())

    def add(self, user: str, events: list[dict], known: set[str], now: float | None = None) -> int:
        """Store a kernel's reported events for ``user`` (the hub's name for the token); returns how many were
        new. Raises EventError, storing none of them, if one is malformed."""
        now = time.time() if now is None else now
        if not isinstance(events, list) or len(events) > MAX_EVENTS_PER_POST:
            raise EventError(f"events must be a list of at most {MAX_EVENTS_PER_POST}")
        rows = []
        for ev in events:
            if not isinstance(ev, dict):
                raise EventError("each event must be an object")
            eid, key, outcome = ev.get("id"), ev.get("key"), ev.get("outcome")
            notebook, t = ev.get("notebook", ""), ev.get("t")
            if not isinstance(eid, str) or not 8 <= len(eid) <= 64:
                raise EventError("id must be a string of 8 to 64 characters")
            if key not in known:
                raise EventError(f"unknown exercise {key!r}")
            if outcome not in OUTCOMES:
                raise EventError(f"outcome must be one of {', '.join(OUTCOMES)}")
            if not isinstance(notebook, str) or len(notebook) > 200:
                raise EventError("notebook must be a string of at most 200 characters")
            if not isinstance(t, (int, float)) or isinstance(t, bool):
                raise EventError("t must be a number (seconds since the epoch)")
            rows.append((eid, user, key, outcome, notebook, min(float(t), now), now))  # no check from the future
        new = 0
        with self.lock:
            self.db.execute("BEGIN")
            try:
                for row in rows:
                    if self.db.execute("INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", row).rowcount:
                        new += 1
                        self.room.apply(row[1], row[2], row[3], row[4], row[5])
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return new

    def summary(self, known: dict[str, dict], hub_users: list[dict], stuck_after_s: float,
                now: float | None = None) -> dict:
        with self.lock:
            return summary(self.room, known, hub_users, time.time() if now is None else now, stuck_after_s)

    def counts(self) -> Counter:
        """Events per outcome, as stored."""
        with self.lock:
            return Counter(dict(self.db.execute("SELECT outcome, COUNT(*) FROM events GROUP BY outcome")))
