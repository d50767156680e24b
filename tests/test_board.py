"""The room board (deploy/board/) and the kernels' reporting client (vnetlab/room.py).

Without a hub: a check off a hub sends and writes nothing; a check whose board does not answer returns at once and
keeps its line until a later check delivers it; the board counts attendees, not events (a re-run check, a second
kernel, an event delivered late), and a board opened again on its database shows the same counts. As root with the
installed hub (tests/test_hub.py's conditions), on loopback: the real hub starts the board as its service; an
attendee gets nothing from the board's page or API, the instructor does; checks run in real kernels reach the board
within seconds; re-runs and a kernel restart keep the counts; a stopped board does not slow a check and a restarted
one rebuilds its counts; a notebook reset keeps the edited copy; and the load test's simulated attendees (N >= 20)
answer exercises, some right, some wrong, and the board's counts equal what their kernels showed them; and in
Chromium the page's script fills its tables and posts a reset with its xsrf token. As root without the hub: the
reset command keeps the edited notebook and cannot be redirected by a link in the attendee's home.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import pwd
import re
import shutil
import signal
import socket
import sys
import tempfile
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
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/x/vnetlab/00_welcome_and_map.ipynb")
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


# ------------------------------------------------------------------------------------------------------------
# On the real hub (loopback), as tests/test_hub.py starts it

HUB_PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", REPO / ".hub"))


def hub_or_skip():
    """loadtest and vnetlab_hub with the hub's packages, or a skip (fail where CI can run it) with the reason."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("board on the hub: needs root (the hub makes one Unix account per attendee)")
    if not shutil.which("node"):
        pytest.skip("board on the hub: node is missing (apt-get install nodejs npm)")
    missing = [p for p in ("hub/bin/jupyterhub", "env/bin/jupyterhub-singleuser") if not (HUB_PREFIX / p).exists()]
    if missing:
        pytest.fail(f"board on the hub: {HUB_PREFIX} lacks {missing}: run `VNETLAB_HUB_PREFIX={HUB_PREFIX} "
                    "deploy/hub.sh install`")
    site = next((HUB_PREFIX / "hub/lib").glob("python3*/site-packages"))
    if str(site) not in sys.path:
        sys.path.append(str(site))
    sys.path.insert(0, str(REPO / "deploy"))
    import loadtest

    return loadtest


def board_pid(hub, loadtest) -> int | None:
    for p in hub.pids().get("services", []):
        try:
            if b"board/app.py" in Path(f"/proc/{p}/cmdline").read_bytes():
                return p
        except OSError:
            continue
    return None


async def until(cond, timeout_s: float, every_s: float = 0.25):
    """Poll the coroutine function ``cond`` until it returns something true; that value, or the last one."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = await cond()
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(every_s)


def exercise_row(state: dict, key: str) -> dict:
    return next(e for e in state["exercises"] if e["key"] == key)


@pytest.mark.hub
def test_board_on_the_hub():
    """One attendee and the instructor on the real hub: access, counts through re-runs and a kernel restart, a
    stopped board, a killed board rebuilt by the hub, and a reset."""
    loadtest = hub_or_skip()
    existed = loadtest.existing_accounts()
    name = "citest-board"
    workdir = Path(tempfile.mkdtemp(prefix="vnetlab-boardtest-", dir="/var/lib"))  # not /tmp: see loadtest
    hub = None
    try:
        hub = loadtest.Hub.start(HUB_PREFIX, workdir)
        asyncio.run(asyncio.wait_for(_board_on_the_hub(hub, name, loadtest), 400))
    finally:
        if hub is not None:
            hub.stop()
        loadtest.remove_accounts([name], existed)
        shutil.rmtree(workdir, ignore_errors=True)


# HTTP status codes: source: RFC 9110 (200 OK, 403 Forbidden)
async def _board_on_the_hub(hub, name, loadtest):
    att = loadtest.Attendee(hub, name, think_s=(0, 0), stop_at=time.monotonic() + 400, notebooks=[])
    watcher = loadtest.BoardWatcher(hub)
    try:
        await att.login(hub.password)
        await watcher.start()
        # The instructor opens the page as a browser does (the hub's session cookie, the OAuth round).
        page = await browse(watcher.admin, "/services/board/", loadtest)
        assert page.code == 200 and b"Room board" in page.body, page.code
        # ... and its script reads the API as a browser's fetch() does: the page's xsrf token, the cookies only
        xsrf = re.search(rb'const XSRF = "([^"]+)"', page.body).group(1).decode()
        assert (await page_fetch(watcher.admin, "/services/board/api/state", xsrf, loadtest)).code == 200
        assert (await page_fetch(watcher.admin, "/services/board/api/state", "", loadtest)).code == 403
        # An attendee gets nothing: not the page (the hub refuses the OAuth round), not the API, not a reset.
        with pytest.raises(loadtest.AttendeeError) as refused:
            await browse(att, "/services/board/", loadtest)
        assert refused.value.code == 403, str(refused.value)
        for path, method in (("/services/board/api/state", "GET"), ("/services/board/api/reset", "POST")):
            with pytest.raises(loadtest.AttendeeError) as refused:
                await att.fetch(path, method, {"attendee": name, "notebook": "00_welcome_and_map"}
                                if method == "POST" else None)
            assert refused.value.code == 403, (path, str(refused.value))
        await att.start_server(150)
        kernel, session_id = await att.open_kernel("00_welcome_and_map")

        async def run(code):
            out, _, _ = await att.execute(kernel, code, "test cell")
            assert not out["error"], out
            return out["text"]

        # ... nor with the token the hub gave the attendee's server (the one the kernel reports with)
        token = (await run("import os; os.environ['JUPYTERHUB_API_TOKEN']")).strip("'")
        plain = loadtest.Attendee(hub, name, think_s=(0, 0), stop_at=0, notebooks=[])
        plain.token = token
        with pytest.raises(loadtest.AttendeeError) as refused:
            await plain.fetch("/services/board/api/state")
        assert refused.value.code == 403
        plain.http.close()

        await run("from vnetlab import exercises")
        t_check = time.time()
        await run('exercises.check("00.1", 3)')
        await run('exercises.check("00.1", 3)')  # re-run: still one attendee who got the hint, twice
        state = await board_when(watcher, lambda s: exercise_row(s, "00.1")["hint_times"] == 2, 30)
        arrived = time.time() - t_check
        row = exercise_row(state, "00.1")
        assert (row["tried"], row["right"], row["hint_attendees"], row["hint_times"]) == (1, 0, 1, 2)
        assert arrived < 10, f"two checks took {arrived:.1f} s to reach the board"
        # a kernel restart, then the right answer: still one attendee, now right
        sess = json.loads((await att.fetch(f"/user/{name}/api/sessions/{session_id}")).body)
        await att.fetch(f"/user/{name}/api/kernels/{sess['kernel']['id']}/restart", "POST")
        await run('from vnetlab import exercises; exercises.check("00.1", exercises.solution("00.1"))')
        state = await board_when(watcher, lambda s: exercise_row(s, "00.1")["right"] == 1, 30)
        row = exercise_row(state, "00.1")
        assert (row["tried"], row["right"], row["right_latest"], row["hint_then_right"]) == (1, 1, 1, 1)
        assert [p["name"] for p in state["people"]] == [name] and state["events"] == 3

        # The instructor's own checks (a demonstration on the projector) are not the room's.
        ev = {"id": "instructor-demo-1", "key": "00.1", "outcome": "right", "t": time.time(), "notebook": ""}
        resp = await watcher.admin.fetch("/services/board/api/events", "POST", {"events": [ev]})
        assert json.loads(resp.body) == {"accepted": 0}
        assert (await watcher.state())["events"] == 3

        # The board stopped (SIGSTOP: its socket accepts, it never answers): a check returns at once.
        pid = board_pid(hub, loadtest)
        assert pid, "the hub did not start the board"
        os.kill(pid, signal.SIGSTOP)
        try:
            took = float(await run('import time; t0 = time.perf_counter(); exercises.check("10.1", 5); '
                                   'time.perf_counter() - t0'))
        finally:
            os.kill(pid, signal.SIGCONT)
        assert took < 0.5, f"a check took {took:.2f} s with the board stopped"
        await asyncio.sleep(0.5)
        await run('exercises.check("00.3", None)')  # the next check delivers the spooled line too
        state = await board_when(watcher, lambda s: s["events"] == 5, 30)
        assert exercise_row(state, "10.1")["hint_attendees"] == 1 and exercise_row(state, "00.3")["tried"] == 0

        # The board killed: the hub starts it again and it rebuilds the same counts from its database.
        before = {k: v for k, v in state.items() if k in ("exercises", "hints", "events")}
        os.kill(pid, signal.SIGKILL)
        after = await board_when(watcher, lambda s: (board_pid(hub, loadtest) or pid) != pid, 120)
        assert (board_pid(hub, loadtest) or pid) != pid, "the hub did not restart the board"
        assert {k: v for k, v in after.items() if k in before} == before

        # Reset: the instructor gives the attendee a fresh notebook 00 while the server runs; the edit is kept.
        home = Path(os.path.expanduser(f"~{loadtest.account(name)}")) / "vnetlab"
        nb = home / "00_welcome_and_map.ipynb"
        edited = nb.read_bytes().replace(b"answer = None", b"answer = 42", 1)
        nb.write_bytes(edited)
        resp = await watcher.admin.fetch("/services/board/api/reset", "POST",
                                         {"attendee": name, "notebook": "00_welcome_and_map"})
        done = json.loads(resp.body)
        assert nb.read_bytes() == (REPO / "notebooks/00_welcome_and_map.ipynb").read_bytes()
        assert Path(done["kept"]).read_bytes() == edited and Path(done["kept"]).parent == home
        assert Path(done["kept"]).stat().st_uid == nb.stat().st_uid == pwd.getpwnam(loadtest.account(name)).pw_uid
        user = json.loads((await att.fetch(f"/hub/api/users/{name}")).body)
        assert user["servers"][""]["ready"], "the reset stopped the attendee's server"
        kernel.close()
    finally:
        watcher.stop()
        att.http.close()


async def board_when(watcher, pred, timeout_s: float) -> dict:
    """The board's state once ``pred`` holds (or the last state seen after ``timeout_s``), as the instructor reads
    it; a board not answering for a moment (being restarted) is polled again."""
    deadline = time.monotonic() + timeout_s
    state = None
    while time.monotonic() < deadline:
        try:
            state = await watcher.state()
            if pred(state):
                return state
        except Exception:  # noqa: BLE001 - restarting: the proxy answers 503 for a moment
            pass
        await asyncio.sleep(0.25)
    assert state is not None, "the board never answered"
    return state


async def page_fetch(att, path: str, xsrf: str, loadtest):
    """GET ``path`` as the board page's script does (fetch(): cookies, Sec-Fetch-Mode cors, its xsrf header)."""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in att.cookies.items()), "Sec-Fetch-Mode": "cors",
               "Sec-Fetch-Site": "same-origin"}
    if xsrf:
        headers["X-XSRFToken"] = xsrf
    return await att.http.fetch(loadtest.HTTPRequest(att.hub.url + path, headers=headers, follow_redirects=False),
                                raise_error=False)


async def browse(att, path: str, loadtest):
    """GET ``path`` as a browser does: cookies only (no token), redirects followed by hand so that each hop's
    cookies (the OAuth state, the service's own) go with the next."""
    for _ in range(10):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in att.cookies.items())}
        resp = await att.http.fetch(loadtest.HTTPRequest(att.hub.url + path, headers=headers, follow_redirects=False),
                                    raise_error=False)
        for value in resp.headers.get_list("Set-Cookie"):
            k, v = value.split(";", 1)[0].split("=", 1)
            att.cookies[k.strip()] = v.strip()
        if resp.code in (301, 302, 303, 307):
            loc = resp.headers["Location"]
            path = loc[len(att.hub.url):] if loc.startswith(att.hub.url) else loc
            continue
        if resp.code >= 400:
            raise loadtest.AttendeeError(f"GET {path}: HTTP {resp.code}", resp.code)
        return resp
    raise loadtest.AttendeeError(f"GET {path}: too many redirects")


ROOM_N = 20  # the bar: a room of at least 20 simulated attendees


@pytest.mark.hub
def test_load_test_room_answers_match_the_board():
    """ROOM_N load-test attendees arrive within a minute, each answers notebook 00's exercises in a real kernel by
    its plan (right, wrong, wrong then right, or the check run unanswered); the board's counts per exercise equal
    what the attendees' own kernels showed them, and every check reached it. An attendee whose server the hub did
    not start in time (a machine shared with other work) answered nothing and is counted as such; at least half the
    room must have answered for the comparison to mean anything."""
    loadtest = hub_or_skip()
    existed = loadtest.existing_accounts()
    names = [f"citest-r{i:02d}" for i in range(ROOM_N)]
    workdir = Path(tempfile.mkdtemp(prefix="vnetlab-boardroom-", dir="/var/lib"))  # not /tmp: see loadtest
    hub = None
    try:
        hub = loadtest.Hub.start(HUB_PREFIX, workdir, start_timeout_s=600)

        async def room():
            watcher = loadtest.BoardWatcher(hub)
            await watcher.start()
            try:
                stats, _, _ = await loadtest.run_room(
                    hub, names, duration_s=240, ramp_s=60, think_s=(0.5, 1.5), spawn_timeout_s=600,
                    notebooks=["00_welcome_and_map"], answers=True, exercises_only=True)
                checks = sum(len(s.checks) for s in stats)
                state = await board_when(watcher, lambda s: s["events"] >= checks, 60)
                return stats, state, watcher.latencies([t for s in stats for _, _, t in s.checks])
            finally:
                watcher.stop()

        stats, state, latencies = asyncio.run(asyncio.wait_for(room(), 1200))
    finally:
        if hub is not None:
            hub.stop()
        loadtest.remove_accounts(names, existed)
        shutil.rmtree(workdir, ignore_errors=True)
    problems = [f"{n}: {x}" for n, s in zip(names, stats) for x in s.failures + s.timeouts]
    assert not [p for p in problems if "spawn" not in p], problems  # once running, nothing may fail
    seen = {(n, key): [v for k, v, _ in s.checks if k == key] for n, s in zip(names, stats) for key, _, _ in s.checks}
    assert {v for vs in seen.values() for v in vs} >= {"right", "hint", "unanswered"}, "the plans gave one kind"
    answered = len({n for n, _ in seen})
    assert answered >= ROOM_N // 2, f"only {answered} of {ROOM_N} answered: {problems}"
    assert answered + len(problems) >= ROOM_N
    for key in ("00.1", "00.2", "00.3"):
        mine = [vs for (n, k), vs in seen.items() if k == key]
        want = {"opened": len(mine), "tried": sum(any(v != "unanswered" for v in vs) for vs in mine),
                "right": sum("right" in vs for vs in mine), "right_latest": sum(vs[-1] == "right" for vs in mine),
                "hint_attendees": sum("hint" in vs for vs in mine), "hint_times": sum(vs.count("hint") for vs in mine),
                "kind_attendees": sum("kind" in vs for vs in mine)}
        got = {k: exercise_row(state, key)[k] for k in want}
        assert got == want, key
    assert state["events"] == sum(len(s.checks) for s in stats)
    assert len(latencies) == state["events"]
    print(f"{answered} of {ROOM_N} answered ({len(problems)} servers not started: {problems[:2]}); "
          f"check to board (polled every 0.5 s): p50 {loadtest.pct(latencies, 50)} s, "
          f"p95 {loadtest.pct(latencies, 95)} s, max {max(latencies)} s over {len(latencies)} checks")


# ------------------------------------------------------------------------------------------------------------
# The reset command (root: it writes as the attendee's account)


@pytest.fixture
def attendee_account():
    """A throwaway attendee account with a student copy, as the hub's spawner makes it."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("reset: needs root and useradd (it writes as the attendee's account)")
    import subprocess

    import reset

    name = "citest-reset"
    acct = reset.ACCOUNT_PREFIX + name
    home = Path(tempfile.mkdtemp(prefix="vnetlab-reset-")) / acct
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/usr/sbin/nologin",
                    "--user-group", acct], check=True, timeout=30)
    try:
        pw = pwd.getpwnam(acct)
        os.chmod(home.parent, 0o755)
        student = home / "vnetlab"
        student.mkdir()
        for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"):  # the attendees' copies, as the hub copies them
            shutil.copy(p, student / p.name)
        for p in [home / "vnetlab", *(home / "vnetlab").rglob("*")]:
            os.chown(p, pw.pw_uid, pw.pw_gid)
        yield name, student
    finally:
        subprocess.run(["userdel", "--remove", acct], capture_output=True, timeout=30)
        shutil.rmtree(home.parent, ignore_errors=True)


def test_reset_keeps_the_edited_notebook(attendee_account):
    import reset

    name, student = attendee_account
    nb = student / "20_tailroom_thresholds.ipynb"
    fresh = (REPO / "notebooks/20_tailroom_thresholds.ipynb").read_bytes()
    edited = fresh.replace(b"answer = None", b"answer = 1472", 1)
    nb.write_bytes(edited)
    first = reset.reset_notebook(name, "20_tailroom_thresholds", stamp="20261203T120000Z")
    second = reset.reset_notebook(name, "20_tailroom_thresholds.ipynb", stamp="20261203T120000Z")
    assert nb.read_bytes() == fresh
    assert Path(first["kept"]).read_bytes() == edited  # never deleted
    assert Path(first["kept"]).name == "20_tailroom_thresholds.edited-20261203T120000Z.ipynb"
    assert Path(second["kept"]).name == "20_tailroom_thresholds.edited-20261203T120000Z-2.ipynb"  # no overwrite
    owner = pwd.getpwnam(reset.ACCOUNT_PREFIX + name).pw_uid
    assert {p.stat().st_uid for p in student.iterdir()} == {owner}
    assert not [p for p in student.iterdir() if p.name.startswith(".")], "a temporary file was left behind"
    for bad in (("Root", "20_tailroom_thresholds"), (name, "../../etc/passwd"), (name, "99_nothing")):
        with pytest.raises(reset.ResetError):
            reset.reset_notebook(*bad)


def test_reset_cannot_be_redirected_by_a_link(attendee_account, tmp_path):
    import reset

    name, student = attendee_account
    target = tmp_path / "root-only"
    target.mkdir(mode=0o700)  # root's: the attendee cannot write here
    shutil.rmtree(student)
    student.symlink_to(target)
    with pytest.raises(reset.ResetError):
        reset.reset_notebook(name, "20_tailroom_thresholds")
    assert list(target.iterdir()) == []


@pytest.mark.hub
def test_board_page_in_a_browser(tmp_path):
    """The instructor's view as Chromium shows it: the hub's login form, the board's page, its script filling the
    tables from the API (an attendee's reported check, its hint), and the reset form posting with the page's xsrf
    token (refused with the reason, 400, for an attendee whose server never started: not 403)."""
    loadtest = hub_or_skip()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import labharness

    labharness.chromium_or_skip()
    existed = loadtest.existing_accounts()
    name = "citest-page"
    workdir = Path(tempfile.mkdtemp(prefix="vnetlab-boardpage-", dir="/var/lib"))  # not /tmp: see loadtest
    hub = None
    try:
        hub = loadtest.Hub.start(HUB_PREFIX, workdir)

        async def report():
            att = loadtest.Attendee(hub, name, think_s=(0, 0), stop_at=0, notebooks=[])
            try:
                await att.login(hub.password)  # an attendee's own hub token, as a kernel has one
                ev = {"id": "browser-test-1", "key": "20.1", "outcome": "hint", "t": time.time(), "notebook": "x"}
                return json.loads((await att.fetch("/services/board/api/events", "POST", {"events": [ev]})).body)
            finally:
                att.http.close()

        assert asyncio.run(report()) == {"accepted": 1}
        with labharness.chromium(tmp_path / "profile") as context:
            page = context.new_page()
            page.goto(hub.url + "/hub/login")
            page.fill("input[name=username]", loadtest.ADMIN)
            page.fill("input[name=password]", hub.admin_password)
            page.click("[type=submit]")
            page.wait_for_url("**/hub/**")
            page.goto(hub.url + "/services/board/")
            page.wait_for_function("document.querySelector('#exercises tbody').innerText.includes('20.1')")
            row = page.inner_text("#exercises tbody")
            assert row.split() == ["20.1", "1", "1", "0", "0", "1", "0"], row
            assert exercises.EXERCISES["20.1"].hint[:60] in page.inner_text("#hints")
            assert name in page.inner_text("#attendee") and "stale" not in page.get_attribute("#status", "class")
            page.on("dialog", lambda d: d.accept())
            page.select_option("#attendee", name)
            page.click("#reset button")
            page.wait_for_function("document.querySelector('#resetout').innerText.length > 0")
            assert page.inner_text("#resetout").startswith("refused: 400"), page.inner_text("#resetout")
    finally:
        if hub is not None:
            hub.stop()
        loadtest.remove_accounts([name], existed)
        shutil.rmtree(workdir, ignore_errors=True)
