"""The room board (deploy/board/) and the kernels' reporting client (vnetlab/room.py).

Without a hub: a check off a hub sends and writes nothing; a check whose board does not answer returns at once and
keeps its line until a later check delivers it; the board counts attendees, not events (a re-run check, a second
kernel, an event delivered late), and a board opened again on its database shows the same counts. As root with the
installed hub (tests/test_hub.py's conditions), on loopback: the real hub starts the board as its service; an
attendee gets nothing from the board's page or API, the instructor does; checks run in real kernels reach the board
within seconds; re-runs and a kernel restart keep the counts; a stopped board does not slow a check and a restarted
one rebuilds its counts; a notebook reset keeps the edited copy; and the load test's simulated attendees (N >= 20)
answer exercises, some right, some wrong, and the board's counts equal what their kernels showed them.
"""

from __future__ import annotations

import http.server
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "deploy" / "board"))

import store  # noqa: E402

from vnetlab import exercises, room  # noqa: E402

KNOWN = {k: {"question": e.question, "hint": e.hint} for k, e in exercises.EXERCISES.items()}


@pytest.fixture
def on_hub(tmp_path, monkeypatch):
    """A kernel's environment on the hub: a token, the board's address (set per test), a spool in tmp_path."""
    monkeypatch.setenv(room.TOKEN_ENV, "a-token")
    monkeypatch.setenv(room.SPOOL_ENV, str(tmp_path / "spool.jsonl"))
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/x/vnetlab/student/00_welcome_and_map.ipynb")
    return tmp_path / "spool.jsonl"


def wait_for(cond, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


# ------------------------------------------------------------------------------------------------------------
# The client


def test_outcome_of_each_verdict():
    right = exercises.solution("20.1")
    assert room.outcome(exercises.check("20.1", right)) == "right"
    assert room.outcome(exercises.check("20.1", right + 1)) == "hint"
    assert room.outcome(exercises.check("20.1", "a few hundred")) == "kind"
    assert room.outcome(exercises.check("20.1", None)) == "unanswered"


def test_off_a_hub_check_reports_nothing(tmp_path, monkeypatch):
    for var in (room.BOARD_URL_ENV, room.TOKEN_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(room.SPOOL_ENV, str(tmp_path / "spool.jsonl"))
    sent_before = room._SENDER.sent + room._SENDER.failed
    assert exercises.check("20.1", exercises.solution("20.1"))
    assert not (tmp_path / "spool.jsonl").exists()
    assert room._SENDER.sent + room._SENDER.failed == sent_before
    monkeypatch.setenv(room.BOARD_URL_ENV, "http://127.0.0.1:9/x")  # a board address alone, no token: still nothing
    exercises.check("20.1", 1)
    assert not (tmp_path / "spool.jsonl").exists()


class _Board(http.server.BaseHTTPRequestHandler):
    """A stand-in for the board's events endpoint that records what it got (the real one is tested on the hub)."""

    got: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).got.append({"auth": self.headers["Authorization"], **body})
        out = json.dumps({"accepted": len(body["events"])}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def test_check_never_waits_on_a_board_that_does_not_answer(on_hub, monkeypatch):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections (the kernel's connect succeeds) and never answers
    monkeypatch.setenv(room.BOARD_URL_ENV, f"http://127.0.0.1:{silent.getsockname()[1]}/services/board/api/events")
    failed = room._SENDER.failed
    try:
        with monkeypatch.context() as off:  # the same check off a hub, warm: what it costs without a board
            off.delenv(room.TOKEN_ENV)
            exercises.check("20.1", 1)
            t0 = time.perf_counter()
            exercises.check("20.1", 1)
            alone = time.perf_counter() - t0
        t0 = time.perf_counter()
        verdict = exercises.check("20.1", 1)
        took = time.perf_counter() - t0
        assert not verdict and "Hint:" in verdict.message
        # the post waits up to room.POST_TIMEOUT_S (2 s) on its own thread; the check adds a spool line only
        assert took < alone + 0.1, f"check took {took:.3f} s with the board silent, {alone:.3f} s off a hub"
        assert wait_for(lambda: room._SENDER.failed > failed, room.POST_TIMEOUT_S + 5)
        lines = on_hub.read_text().splitlines()
        assert [json.loads(x)["outcome"] for x in lines] == ["hint"]  # kept for a later check
    finally:
        silent.close()
    # The board is back: the next check delivers both lines, with the kernel's token, and empties the spool.
    _Board.got = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Board)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(room.BOARD_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}/events")
        exercises.check("20.1", exercises.solution("20.1"))
        assert wait_for(lambda: sum(len(g["events"]) for g in _Board.got) == 2)
    finally:
        server.shutdown()
    events = [e for g in _Board.got for e in g["events"]]
    assert [e["outcome"] for e in events] == ["hint", "right"] and {e["key"] for e in events} == {"20.1"}
    assert {g["auth"] for g in _Board.got} == {"token a-token"}
    assert events[0]["notebook"] == "00_welcome_and_map.ipynb"
    assert "answer" not in events[0] and len({e["id"] for e in events}) == 2
    assert wait_for(lambda: not on_hub.exists() or not on_hub.read_text().strip())


def test_a_board_that_refuses_the_lines_for_good_does_not_keep_them(on_hub, monkeypatch):
    class Refuse(_Board):
        def do_POST(self):  # noqa: N802
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(room.BOARD_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}/events")
        failed = room._SENDER.failed
        exercises.check("20.1", 1)
        assert wait_for(lambda: not on_hub.exists())
        time.sleep(0.5)
        assert not on_hub.exists() and room._SENDER.failed == failed  # dropped, not given back for a retry
    finally:
        server.shutdown()


# ------------------------------------------------------------------------------------------------------------
# The counts


def ev(i: int, key: str, outcome: str, t: float, notebook: str = "20_tailroom_thresholds.ipynb") -> dict:
    return {"id": f"event-{i:04d}", "key": key, "outcome": outcome, "t": t, "notebook": notebook}


def test_counts_are_attendees_not_events(tmp_path):
    s = store.Store(tmp_path / "board.sqlite")
    # ana: wrong twice (re-ran the check), then right after a kernel restart (another kernel, the same name)
    s.add("ana", [ev(1, "20.1", "hint", 100), ev(2, "20.1", "hint", 110)], set(KNOWN), now=1000)
    s.add("ana", [ev(3, "20.1", "right", 200)], set(KNOWN), now=1000)
    # bob: right, then a wrong answer after it (right ever, not with his latest); a re-sent line counts once
    s.add("bob", [ev(4, "20.1", "right", 120), ev(5, "20.1", "kind", 130)], set(KNOWN), now=1000)
    assert s.add("bob", [ev(5, "20.1", "kind", 130)], set(KNOWN), now=1000) == 0
    # cy: only ran the check with answer = None, and a late line (spooled while the board was down) for 20.2
    s.add("cy", [ev(6, "20.1", "unanswered", 140), ev(7, "20.2", "hint", 90)], set(KNOWN), now=1000)
    users = [{"name": n, "server": "ready"} for n in ("ana", "bob", "cy", "dee")]
    out = s.summary(KNOWN, users, stuck_after_s=600, now=1000)
    e201 = next(e for e in out["exercises"] if e["key"] == "20.1")
    assert (e201["opened"], e201["tried"], e201["right"], e201["right_latest"]) == (3, 2, 2, 1)
    assert (e201["hint_attendees"], e201["hint_times"], e201["hint_then_right"], e201["kind_attendees"]) == (
        1, 2, 1, 1)
    assert [h["key"] for h in out["hints"]] == ["20.1", "20.2"]  # one attendee each; 20.1's fired twice
    assert out["hints"][0]["hint"] == KNOWN[out["hints"][0]["key"]]["hint"]
    assert [p["name"] for p in out["not_started"]] == ["dee"]
    # cy is on 20.1 (the latest check by time, though 20.2's line arrived later) since t=140, not right: stuck
    cy = next(p for p in out["people"] if p["name"] == "cy")
    assert cy["current"] == "20.1" and cy["on_it_s"] == 1000 - 140 and cy["stuck"]  # source: now and t above
    assert [p["name"] for p in out["stuck"]] == ["cy"]
    # a board opened again on the same file shows the same counts
    again = store.Store(tmp_path / "board.sqlite")
    assert again.summary(KNOWN, users, stuck_after_s=600, now=1000) == out


def test_bad_events_are_refused_whole(tmp_path):
    s = store.Store(tmp_path / "board.sqlite")
    good = ev(1, "20.1", "right", 100)
    for bad in (dict(good, key="99.9"), dict(good, outcome="great"), dict(good, id="x"), dict(good, t="now"),
                dict(good, notebook=7)):
        with pytest.raises(store.EventError):
            s.add("ana", [ev(2, "20.2", "right", 100), bad], set(KNOWN), now=1000)
    with pytest.raises(store.EventError):
        s.add("ana", [good] * (store.MAX_EVENTS_PER_POST + 1), set(KNOWN), now=1000)
    assert s.counts() == {} and s.summary(KNOWN, [], 600, now=1000)["events"] == 0
    # a check "from the future" (a wrong clock) is stored at the time it arrived
    s.add("ana", [ev(3, "20.1", "hint", 5000)], set(KNOWN), now=1000)
    assert next(p for p in s.summary(KNOWN, [], 600, now=1000)["people"])["last_t"] == 1000
