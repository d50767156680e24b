"""The workshop hub (deploy/), started as deploy/hub.sh starts it, on loopback, and used as a room uses it (and as a
hostile or clumsy attendee would): names claimed once and guarded by their own password, failed logins slowed, a
forgotten password reset by the instructor's command; two attendees who each reach a figure and move a panel's
control; kernels no other attendee can reach; a full home that stops nobody else; Secure cookies behind a TLS
front; and hub restarts in every way it can stop, that keep the attendees' servers and kernels and leave nothing
behind. Everything is stopped by process id and the accounts are removed. Needs root (one Unix account per
attendee), node and the installed hub (`deploy/hub.sh install`, which .ci/run runs with VNETLAB_HUB_PREFIX=.hub);
skips with the reason otherwise, and conftest's CI rule fails that skip where the machine can run it."""

from __future__ import annotations

import asyncio
import html
import http.client
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "deploy"))

PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", REPO / ".hub"))
NOTEBOOK = "10_receive_buffers_and_memory_layout"  # its first panel comes after its first figure
HOME_SIZE_MIB = 64  # the test hub's homes (VNETLAB_HUB_HOME_SIZE): small, so filling one is quick
LOGIN_DELAY_S = 1.0  # source: deploy/jupyterhub_config.py, VNETLAB_HUB_LOGIN_DELAY's default
SPAWN_S = 240  # a server's start: 6.5 CPU-seconds alone (deploy/README.md), minutes on a machine shared with others
LOGGED_IN, REFUSED = HTTPStatus.FOUND, HTTPStatus.FORBIDDEN  # the login form's answers (a redirect, or the form again)


def hub_or_skip() -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("hub test: needs root (the hub makes one Unix account per attendee)")
    if not shutil.which("node"):
        pytest.skip("hub test: node is missing (apt-get install nodejs npm)")
    missing = [p for p in ("hub/bin/jupyterhub", "env/bin/jupyterhub-singleuser",
                           "proxy/node_modules/.bin/configurable-http-proxy") if not (PREFIX / p).exists()]
    if missing:
        pytest.fail(f"hub test: {PREFIX} lacks {missing}: run `VNETLAB_HUB_PREFIX={PREFIX} deploy/hub.sh install` "
                    "(.ci/run does)")
    # The attendees run the environment as their own users: every folder above it must let them through.
    for parent in [PREFIX / "env", *(PREFIX / "env").parents]:
        if not os.stat(parent).st_mode & 0o001:
            pytest.fail(f"hub test: {parent} is not searchable by other users, so attendees cannot run {PREFIX}/env")


def hub_modules():
    """deploy/loadtest.py and vnetlab_hub, importable with the hub's own packages (jupyterhub is not a test
    dependency of the workbook)."""
    site = next((PREFIX / "hub/lib").glob("python3*/site-packages"))
    if str(site) not in sys.path:
        sys.path.append(str(site))
    import loadtest
    import vnetlab_hub

    return loadtest, vnetlab_hub


# ------------------------------------------------------------------------------------------------------------
# A browser's view: the login form, cookies by hand (so a Secure cookie is seen as the server set it)


def request(url: str, path: str, method: str = "GET", form: dict | None = None, cookies: dict | None = None,
            headers: dict | None = None) -> tuple[int, str, list[str]]:
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    h = dict(headers or {})
    if cookies:
        h["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    body = None
    if form is not None:
        body = urlencode(form)
        h["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        text, set_cookie = r.read().decode(errors="replace"), r.headers.get_all("Set-Cookie") or []
    finally:
        conn.close()
    if cookies is not None:
        for c in set_cookie:
            k, v = c.split(";", 1)[0].split("=", 1)
            cookies[k.strip()] = v.strip()
    return r.status, html.unescape(text), set_cookie


def login(url: str, name: str, password: str, room: str = "", headers: dict | None = None):
    """The hub's login form as a browser fills it: (HTTP status, page, Set-Cookie headers of both answers)."""
    cookies: dict[str, str] = {}
    _, _, first = request(url, "/hub/login", cookies=cookies, headers=headers)
    code, page, second = request(url, "/hub/login?next=", "POST", {"_xsrf": cookies.get("_xsrf", ""),
                                                                  "username": name, "password": password,
                                                                  "otp": room}, cookies=cookies, headers=headers)
    return code, page, first + second


def own_password(name: str) -> str:
    return f"{name}-own-secret"


def claimant(loadtest):
    """loadtest's attendee, logging in as a room does now: their own password, and the room password the first
    time (the form's third field)."""

    class Claimant(loadtest.Attendee):
        async def login(self, password: str) -> None:
            await self.fetch("/hub/login", auth=False)
            resp = await self.fetch("/hub/login?next=", "POST",
                                    {"username": self.name, "password": own_password(self.name), "otp": password,
                                     "_xsrf": self.cookies.get("_xsrf", "")}, form=True, auth=False)
            if resp.code != LOGGED_IN:
                raise loadtest.AttendeeError(f"login as {self.name} refused (HTTP {resp.code})")
            resp = await self.fetch(f"/hub/api/users/{self.name}/tokens", "POST",
                                    {"note": "hub test", "expires_in": 3600}, auth=False)
            self.token = json.loads(resp.body)["token"]

        async def ensure_server(self, timeout_s: float) -> None:
            user = json.loads((await self.fetch(f"/hub/api/users/{self.name}")).body)
            if not (user.get("servers", {}).get("") or {}).get("ready"):
                await self.start_server(timeout_s)

        async def kernel(self, kernel_id: str):
            """A websocket to one of this attendee's kernels, through the proxy (as JupyterLab opens it)."""
            from tornado.httpclient import HTTPRequest
            from tornado.websocket import websocket_connect

            url = (self.hub.url.replace("http", "ws", 1)
                   + f"/user/{self.name}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4()}")
            ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {self.token}"},
                                                     request_timeout=60, connect_timeout=60))
            return loadtest.Kernel(ws, uuid.uuid4().hex)

        async def run_code(self, kernel_id: str, code: str) -> dict:
            k = await self.kernel(kernel_id)
            try:
                return await k.until_idle(k.send("shell", "execute_request", {
                    "code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}), 60)
            finally:
                k.close()

    return Claimant


def kernel_pids(uid: int, loadtest) -> list[int]:
    return [p for p in loadtest.all_pids() if loadtest.uid_of(p) == uid and loadtest.proc_kind(p) == "kernel"]


# ------------------------------------------------------------------------------------------------------------
# One hub for the room's tests (names, figures, kernels, disk, cookies)


@pytest.fixture(scope="module")
def room():
    hub_or_skip()
    loadtest, vnetlab_hub = hub_modules()
    existed = loadtest.existing_accounts()
    names = ["citest-a", "citest-b"]
    # not under /tmp: each server gets its own /tmp, which would hide homes kept there
    workdir = Path(tempfile.mkdtemp(prefix="vnetlab-hubtest-", dir="/var/lib"))
    saved = {k: os.environ.get(k) for k in ("VNETLAB_HUB_HOME_SIZE", "VNETLAB_HUB_LOGIN_DELAY")}
    os.environ.update(VNETLAB_HUB_HOME_SIZE=f"{HOME_SIZE_MIB}M", VNETLAB_HUB_LOGIN_DELAY=str(LOGIN_DELAY_S))
    hub = None
    try:
        hub = loadtest.Hub.start(PREFIX, workdir)
        yield hub, names, loadtest, vnetlab_hub
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        if hub is not None:
            hub.stop()
        release_accounts(names, existed, workdir, loadtest, vnetlab_hub)
    left = {n for n in names if vnetlab_hub.account(n) in loadtest.existing_accounts()}
    assert not left, f"accounts left behind: {left}"


def release_accounts(names, existed, workdir, loadtest, vnetlab_hub) -> None:
    """Every process of the test's accounts stopped by pid, their home file systems unmounted, accounts removed."""
    for n in names:
        try:
            home = Path(pwd.getpwnam(vnetlab_hub.account(n)).pw_dir)
            uid = pwd.getpwnam(vnetlab_hub.account(n)).pw_uid
        except KeyError:
            continue
        loadtest.stop_pids([p for p in loadtest.all_pids() if loadtest.uid_of(p) == uid], grace_s=5)
        vnetlab_hub.unmount_home(home)
    loadtest.remove_accounts(names, existed)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.hub
def test_copy_notebooks_once_never_overwrites(tmp_path):
    hub_or_skip()
    _, vnetlab_hub = hub_modules()
    dest = tmp_path / "home" / "vnetlab"
    dest.parent.mkdir()
    uid, gid = os.getuid(), os.getgid()
    assert vnetlab_hub.copy_notebooks_once(REPO / "notebooks", dest, uid, gid)
    assert sorted(p.name for p in dest.glob("*.ipynb")) == sorted(
        p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert (dest / "glossary.md").read_text() == (REPO / "notebooks/glossary.md").read_text()  # glossary.md links
    assert not [p for p in dest.rglob("*") if "solved" in p.name], "the instructors' solved copies reached a home"
    work = dest / f"{NOTEBOOK}.ipynb"
    work.write_text("the attendee's work")
    assert not vnetlab_hub.copy_notebooks_once(REPO / "notebooks", dest, uid, gid)
    assert work.read_text() == "the attendee's work"


@pytest.mark.hub
def test_a_name_is_claimed_once_and_only_its_password_opens_it(room):
    hub, _, _, _ = room
    url, pw = hub.url, hub.password
    code, page, _ = login(url, "ana", own_password("ana"), pw)
    assert code == LOGGED_IN, page[-2000:]  # the first login claims the name
    # B knows the room password and ana's name (getent passwd lists it): neither opens ana's account
    for password, room_pw in ((pw, pw), (pw, ""), ("guessed-pass", pw)):
        code, page, _ = login(url, "ana", password, room_pw)
        assert code == REFUSED and "is taken" in page, page[-2000:]
    assert login(url, "ana", own_password("ana"))[0] == LOGGED_IN  # the claimant, later, without the room password
    # "Ana" is ana (JupyterHub folds case before anything): the same rule, so only ana's password opens it
    assert login(url, "Ana", own_password("ana"))[0] == LOGGED_IN
    code, page, _ = login(url, "ANA", "bob-secret", pw)
    assert code == REFUSED and "'ana' is taken (names ignore case)" in page
    # a new name needs the room password, and a password of the attendee's own (never the room's)
    code, page, _ = login(url, "bea", "bea-secret")
    assert code == REFUSED and "room password in the third field" in page
    code, page, _ = login(url, "bea", pw, pw)
    assert code == REFUSED and "not the room password" in page
    # two people claiming one new name at the same moment: exactly one gets it
    results = [None] * 4

    def claim(i):
        results[i] = login(url, "cleo", f"cleo-secret-{i}", pw)[0]

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [LOGGED_IN, REFUSED, REFUSED, REFUSED], results
    winner = results.index(LOGGED_IN)
    assert login(url, "cleo", f"cleo-secret-{winner}")[0] == LOGGED_IN


@pytest.mark.hub
def test_failed_logins_are_slowed_and_the_room_is_not(room):
    """Wrong passwords for one name are checked one at a time, each answered after the delay; meanwhile another
    attendee logs in at once (the delay is an await, not a blocked hub)."""
    hub, _, _, _ = room
    url, pw = hub.url, hub.password
    assert login(url, "dora", own_password("dora"), pw)[0] == LOGGED_IN
    assert login(url, "eve", own_password("eve"), pw)[0] == LOGGED_IN
    guesses = 8
    codes: list[int] = []
    start = time.monotonic()
    threads = [threading.Thread(target=lambda: codes.append(login(url, "dora", "wrong-guess", pw)[0]))
               for _ in range(guesses)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    other = login(url, "eve", own_password("eve"))[0]
    other_s = time.monotonic() - t0
    for t in threads:
        t.join()
    took = time.monotonic() - start
    assert codes == [REFUSED] * guesses
    assert took >= guesses * LOGIN_DELAY_S * 0.95, f"{guesses} wrong passwords took {took:.2f} s"
    # not queued behind the guesses (8 s or more), nor behind a blocked hub; a loaded machine's slack allowed
    assert other == LOGGED_IN and other_s < 3 * LOGIN_DELAY_S, f"eve's login took {other_s:.2f} s beside the guesses"


@pytest.mark.hub
def test_the_instructor_resets_a_forgotten_password(room):
    hub, _, _, _ = room
    url, pw = hub.url, hub.password
    assert login(url, "finn", own_password("finn"), pw)[0] == LOGGED_IN
    env = dict(os.environ, VNETLAB_HUB_PREFIX=str(PREFIX), VNETLAB_HUB_STATE=str(hub.state))
    out = subprocess.run([str(REPO / "deploy/hub.sh"), "reset-password", "Finn"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "'finn' is free again" in out.stdout, out.stdout + out.stderr
    assert login(url, "finn", own_password("finn"))[0] == REFUSED  # the old password opens nothing now
    assert login(url, "finn", "finn-new-secret", pw)[0] == LOGGED_IN  # the attendee claims it again
    assert login(url, "finn", "finn-new-secret")[0] == LOGGED_IN
    names = subprocess.run([str(REPO / "deploy/hub.sh"), "names"], env=env, capture_output=True, text=True,
                           timeout=60).stdout.split()
    assert "finn" in names and "ana" in names
    out = subprocess.run([str(REPO / "deploy/hub.sh"), "reset-password", "nobody-here"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "nobody holds" in out.stderr


@pytest.mark.hub
def test_two_attendees_reach_a_figure_and_move_a_control(room):
    hub, names, loadtest, vnetlab_hub = room
    Claimant = claimant(loadtest)

    async def work():
        attendees = [Claimant(hub, n, think_s=(0.2, 0.5), stop_at=loadtest.time.monotonic() + SPAWN_S + 60,
                              notebooks=[NOTEBOOK], first_figure_only=True) for n in names]
        try:
            return await asyncio.wait_for(asyncio.gather(*(a.run(hub.password, SPAWN_S) for a in attendees)),
                                          SPAWN_S + 120)
        finally:
            for a in attendees:
                a.http.close()

    stats = asyncio.run(work())
    listening = listeners(hub, names, loadtest)
    for name, st in zip(names, stats):
        assert not st.failures and not st.timeouts, f"{name}: {st.failures + st.timeouts}\n{hub.log_tail()}"
        assert st.spawn_s is not None, f"{name}'s server did not start"
        assert st.first_figure_s is not None, f"{name} saw no figure in {NOTEBOOK}"
        assert len(st.widgets) == 1, f"{name}: moving a control gave no new image"
        home = Path(pwd.getpwnam(vnetlab_hub.account(name)).pw_dir)
        assert home.stat().st_mode & 0o077 == 0, f"{home} is open to other attendees"
        assert (home / "vnetlab" / f"{NOTEBOOK}.ipynb").stat().st_uid == pwd.getpwnam(
            vnetlab_hub.account(name)).pw_uid
        assert os.path.ismount(home), f"{home} is not a file system of its own"
    # Each attendee's server runs with the kernel websocket the README's server config selects (TCP_NODELAY:
    # vnetlab/widgets/server.py; tests/test_kernel_websocket.py asks a running server's socket).
    from vnetlab.widgets import server
    arg = f"--ServerApp.kernel_websocket_connection_class={server.CLASS_PATH}".encode()
    servers = [c for c in attendee_cmdlines(names, loadtest) if any(b"jupyterhub-singleuser" in a for a in c)]
    assert len(servers) == len(names) and all(arg in c for c in servers), servers
    # Beyond the hub's public port (here on loopback too) nothing listens anywhere but on 127.0.0.1.
    assert listening, "found no listening sockets of the hub's processes"
    public = [line for line in listening if not line[0].startswith("127.0.0.1:")]
    assert not public, f"listening beyond loopback: {public}"


@pytest.mark.hub
def test_an_attendee_cannot_reach_another_attendees_kernel(room):
    """B's kernel (started as JupyterLab starts one) listens on no TCP port; its ZeroMQ sockets are unix sockets in
    B's private runtime folder, which A's account cannot connect to (B's own account can: the paths are right);
    and B's kernel still runs code."""
    hub, names, loadtest, vnetlab_hub = room
    a, b = names
    Claimant = claimant(loadtest)

    async def start_kernel():
        other = Claimant(hub, a, think_s=(0, 0), stop_at=time.monotonic() + 120, notebooks=[])
        att = Claimant(hub, b, think_s=(0, 0), stop_at=time.monotonic() + 120, notebooks=[])
        try:
            await asyncio.gather(other.login(hub.password), att.login(hub.password))
            await asyncio.gather(other.ensure_server(SPAWN_S), att.ensure_server(SPAWN_S))
            kid = json.loads((await att.fetch(f"/user/{b}/api/kernels", "POST", {"name": "python3"})).body)["id"]
            # the one TCP port ipykernel opens whatever the transport: its IOPub pipe, a PULL socket for the output of
            # forked children, which forwards only messages that start with a 16-byte random key (ipykernel/
            # iostream.py, IOPubThread._setup_pipe_in, 7.x): a stranger can push into it, never read from it
            out = await att.run_code(kid, "import os, vnetlab\nfrom ipykernel.kernelapp import IPKernelApp\n"
                                          "open(os.path.expanduser('~/.iopub-pipe-port'), 'w').write("
                                          "str(IPKernelApp.instance().iopub_thread._pipe_port))")
            return kid, out
        finally:
            att.http.close()
            other.http.close()

    kid, out = asyncio.run(start_kernel())
    assert out["error"] is None, out
    b_pw = pwd.getpwnam(vnetlab_hub.account(b))
    kernels = kernel_pids(b_pw.pw_uid, loadtest)
    assert kernels, "B's kernel process was not found"
    tcp = subprocess.run(["ss", "-Htlnp"], capture_output=True, text=True, timeout=10).stdout
    ports = {line.split()[3].rsplit(":", 1)[1] for line in tcp.splitlines() if any(f"pid={p}," in line
                                                                                   for p in kernels)}
    pipe = (Path(b_pw.pw_dir) / ".iopub-pipe-port").read_text()
    assert ports == {pipe}, f"B's kernel listens on TCP ports {ports}, beyond its IOPub pipe {pipe}: any local " \
                            "user can connect to them"
    conn = next((Path(b_pw.pw_dir) / ".tmp/jupyter-runtime").glob(f"kernel-{kid}.json"))
    info = json.loads(conn.read_text())
    assert info["transport"] == "ipc", info
    # the paths as B's server sees them (/tmp is its home's .tmp), as root and the other accounts find them
    paths = [str(Path(b_pw.pw_dir) / ".tmp" / Path(f"{info['ip']}-{info[k]}").relative_to("/tmp"))
             for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
    # from inside the folder: a unix socket's path is at most 107 bytes, and the test's homes are deep
    probe = ("import os, socket, sys\nfor p in sys.argv[1:]:\n    s = socket.socket(socket.AF_UNIX)\n"
             "    try:\n        os.chdir(os.path.dirname(p)); s.connect(os.path.basename(p)); print('connected', p)\n"
             "    except OSError as e:\n        print('refused', p, e.strerror)\n")
    as_a = subprocess.run(["runuser", "-u", vnetlab_hub.account(a), "--", "/usr/bin/python3", "-c", probe, *paths],
                          capture_output=True, text=True, timeout=30, cwd="/")
    assert as_a.stdout.count("Permission denied") == len(paths) and "connected" not in as_a.stdout, \
        as_a.stdout + as_a.stderr
    as_b = subprocess.run(["runuser", "-u", vnetlab_hub.account(b), "--", "/usr/bin/python3", "-c", probe, *paths],
                          capture_output=True, text=True, timeout=30, cwd="/")
    assert as_b.stdout.count("connected") == len(paths), as_b.stdout + as_b.stderr


@pytest.mark.hub
def test_a_full_home_stops_nobody_else(room):
    """A fills their home (through their own server's /tmp too); the hub, the other attendee and the machine's
    /tmp are untouched: B logs in and saves a file."""
    hub, names, loadtest, vnetlab_hub = room
    a, b = names
    Claimant = claimant(loadtest)

    async def servers():
        atts = [Claimant(hub, n, think_s=(0, 0), stop_at=time.monotonic() + 120, notebooks=[]) for n in names]
        try:
            await asyncio.gather(*(x.login(hub.password) for x in atts))
            await asyncio.gather(*(x.ensure_server(SPAWN_S) for x in atts))
        finally:
            for x in atts:
                x.http.close()

    asyncio.run(servers())
    a_pw = pwd.getpwnam(vnetlab_hub.account(a))
    server = next(p for p in loadtest.all_pids() if loadtest.uid_of(p) == a_pw.pw_uid
                  and loadtest.proc_kind(p) == "server")
    want = 4 * HOME_SIZE_MIB
    # inside A's server's mount namespace, as A: /tmp there is A's home's .tmp
    fill = subprocess.run(["nsenter", "-t", str(server), "-m", "runuser", "-u", a_pw.pw_name, "--", "sh", "-c",
                           f"head -c {want}M /dev/zero > /tmp/fill; echo rc=$?; df -m /tmp | tail -1"],
                          capture_output=True, text=True, timeout=120)
    assert "No space left" in fill.stderr, fill.stdout + fill.stderr
    written = (Path(a_pw.pw_dir) / ".tmp/fill").stat().st_size
    assert written <= HOME_SIZE_MIB << 20, f"A wrote {written >> 20} MiB into a {HOME_SIZE_MIB} MiB home"
    assert not Path("/tmp/fill").exists(), "A's /tmp was the machine's"

    async def b_saves():
        att = Claimant(hub, b, think_s=(0, 0), stop_at=time.monotonic() + 120, notebooks=[])
        try:
            await att.login(hub.password)
            await att.fetch(f"/user/{b}/api/contents/after-a-filled.txt", "PUT",
                            {"type": "file", "format": "text", "content": "still here"})
            return json.loads((await att.fetch(f"/user/{b}/api/contents/after-a-filled.txt")).body)["content"]
        finally:
            att.http.close()

    assert asyncio.run(b_saves()) == "still here"
    # the hub's database takes a new claim (a write) while A's home is full
    assert login(hub.url, "gus", own_password("gus"), hub.password)[0] == LOGGED_IN
    (Path(a_pw.pw_dir) / ".tmp/fill").unlink()


@pytest.mark.hub
def test_cookies_are_secure_behind_a_tls_front(room):
    """A TLS reverse proxy in front (nginx, Caddy) tells the hub "X-Forwarded-Proto: https"; the hub's cookies must
    then be Secure, though configurable-http-proxy sits between them. Plain HTTP on loopback: not Secure (a browser
    would drop them)."""
    hub, _, _, _ = room
    tls = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.7"}
    code, _, cookies = login(hub.url, "hana", own_password("hana"), hub.password, headers=tls)
    assert code == LOGGED_IN
    secure = {c.split("=", 1)[0] for c in cookies if "; secure" in c.lower()}
    # the login's credentials; the _xsrf token (no credential) is Secure with VNETLAB_HUB_PUBLIC_URL=https://...
    # (test_restarts_keep_the_room_and_leave_nothing_behind starts its hub so)
    assert {"jupyterhub-session-id", "jupyterhub-hub-login"} <= secure, cookies
    code, _, cookies = login(hub.url, "hana", own_password("hana"))
    assert code == LOGGED_IN and cookies and not any("; secure" in c.lower() for c in cookies), cookies


def attendee_cmdlines(names, loadtest):
    """The argument vectors of the attendees' processes."""
    uids = {pwd.getpwnam(loadtest.account(n)).pw_uid for n in names}
    out = []
    for p in loadtest.all_pids():
        try:
            if loadtest.uid_of(p) in uids:
                out.append(Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0"))
        except OSError:
            continue  # exited meanwhile
    return out


def listeners(hub, names, loadtest):
    """(local address, process) of every TCP socket listening in the hub's or the attendees' processes."""
    uids = {pwd.getpwnam(loadtest.account(n)).pw_uid for n in names}
    pids = {p for ps in hub.pids().values() for p in ps} | {p for p in loadtest.all_pids() if loadtest.uid_of(p)
                                                            in uids}
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, timeout=10).stdout
    found = []
    for line in out.splitlines():
        cols = line.split()
        if any(f"pid={p}," in line for p in pids):
            found.append((cols[3], cols[-1]))
    return found


@pytest.mark.hub
def test_the_hub_listens_on_loopback_unless_told(monkeypatch):
    """deploy/jupyterhub_config.py as the hub reads it, with none of the address settings given: every address is a
    loopback one, so a fresh hub is not open to the network before the instructor says so."""
    hub_or_skip()
    hub_modules()
    from traitlets.config import Config

    for k in ("VNETLAB_HUB_BIND", "VNETLAB_HUB_INTERNAL", "VNETLAB_HUB_PROXY_API", "VNETLAB_HUB_PUBLIC_URL",
              "VNETLAB_HUB_SSL_CERT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("VNETLAB_HUB_PASSWORD", "room-password")
    monkeypatch.setenv("VNETLAB_HUB_ADMIN_PASSWORD", "a" * 32)
    c = Config()
    path = REPO / "deploy/jupyterhub_config.py"
    def load_subconfig(sub: str) -> None:  # what traitlets' config loader gives a config file (the board's part)
        exec(compile(Path(sub).read_text(), sub, "exec"), {"get_config": lambda: c, "__file__": sub})  # noqa: S102

    exec(compile(path.read_text(), str(path), "exec"),  # noqa: S102
         {"get_config": lambda: c, "__file__": str(path), "load_subconfig": load_subconfig})
    for url in (c.JupyterHub.bind_url, c.JupyterHub.hub_bind_url, c.ConfigurableHTTPProxy.api_url):
        assert urlparse(url).hostname == "127.0.0.1", url
    assert c.Spawner.ip == "127.0.0.1"
    assert "secure" not in c.JupyterHub.get("tornado_settings", {}).get("cookie_options", {})  # plain HTTP here


@pytest.mark.hub
def test_a_stopped_proxy_is_never_started_again(monkeypatch):
    """JupyterHub (proxy.py, 6.1) restarts a crashed proxy from a periodic health check, and a restart made a new
    check without stopping the old one; at the hub's shutdown the old one saw the stopped proxy and started another,
    which outlived the hub. WorkshopProxy stops the old check on a restart and never restarts once stopped."""
    hub_or_skip()
    _, vnetlab_hub = hub_modules()
    from jupyterhub import proxy

    starts = []

    async def start(self):
        starts.append(self)

    monkeypatch.setattr(proxy.ConfigurableHTTPProxy, "start", start)

    class Process:
        pid, returncode = 1, None

        def poll(self):
            return self.returncode

        def terminate(self):
            self.returncode = -signal.SIGTERM

    class Check:
        stopped = False

        def stop(self):
            self.stopped = True

    px = vnetlab_hub.WorkshopProxy(auth_token="test", pid_file="")
    px.proxy_process, first = Process(), Check()
    px._check_running_callback = first
    asyncio.run(px.start())  # the restart after a crash
    assert first.stopped, "the crashed proxy's health check kept running"
    px._check_running_callback = Check()
    px.stop()  # the hub's shutdown
    asyncio.run(px.check_running())  # a health check that fires after it
    assert len(starts) == 1, "a proxy was started after the hub stopped it"


# ------------------------------------------------------------------------------------------------------------
# Restarts: one hub, stopped every way it can be, started again by deploy/hub.sh each time


class RestartableHub:
    """deploy/hub.sh with one state folder and fixed ports, so it can be started again as an instructor would."""

    def __init__(self, loadtest, workdir: Path, **env: str) -> None:
        import secrets

        self.loadtest = loadtest
        self.port, internal, api = loadtest.free_port(), loadtest.free_port(), loadtest.free_port()
        self.internal = internal
        self.api = api
        self.hub = loadtest.Hub(prefix=PREFIX, state=workdir / "state", homes=workdir / "homes",
                                url=f"http://127.0.0.1:{self.port}", password=secrets.token_urlsafe(9),
                                admin_password=secrets.token_urlsafe(30), log_path=workdir / "hub.log")
        self.hub.homes.mkdir(parents=True)
        os.chmod(workdir, 0o755)
        os.chmod(self.hub.homes, 0o755)
        self.env = dict(os.environ, VNETLAB_HUB_PREFIX=str(PREFIX), VNETLAB_HUB_STATE=str(self.hub.state),
                        VNETLAB_HUB_BIND=self.hub.url, VNETLAB_HUB_INTERNAL=f"http://127.0.0.1:{internal}",
                        VNETLAB_HUB_PROXY_API=f"http://127.0.0.1:{api}", VNETLAB_HUB_HOMES=str(self.hub.homes),
                        VNETLAB_HUB_PASSWORD=self.hub.password,
                        VNETLAB_HUB_ADMIN_PASSWORD=self.hub.admin_password, VNETLAB_HUB_HOME_SIZE="64M", **env)

    def launch(self) -> float:
        """Start deploy/hub.sh (in its own process group, as a terminal runs it); seconds until the hub answered."""
        t0 = time.monotonic()
        with open(self.hub.log_path, "a") as log:
            self.hub.proc = subprocess.Popen([str(REPO / "deploy/hub.sh")], env=self.env, stdout=log,
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
        self.hub.wait_up(self.port, 120)
        return time.monotonic() - t0

    def wait_exit(self, timeout_s: float = 40) -> int:
        return self.hub.proc.wait(timeout=timeout_s)

    def proxies(self) -> list[int]:
        """configurable-http-proxy processes serving this hub's public port (orphans included)."""
        return [p for p in self.loadtest.all_pids() if f"--port\0{self.port}\0".encode() in cmdline(p)]

    def cullers(self) -> list[int]:
        """idle cullers talking to this hub's API (orphans included)."""
        url = f"JUPYTERHUB_API_URL=http://127.0.0.1:{self.internal}/hub/api".encode()
        return [p for p in self.loadtest.all_pids() if b"jupyterhub_idle_culler" in cmdline(p) and url in environ(p)]

    def listening(self) -> list[str]:
        """Sockets listening on any of this hub's ports."""
        out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, timeout=10).stdout
        ports = {f":{p}" for p in (self.port, self.internal, self.api)}
        return [line for line in out.splitlines() if any(line.split()[3].endswith(p) for p in ports)]


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() + b"\0"
    except OSError:
        return b""


def environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"not within {timeout_s} s: {what}")


@pytest.mark.hub
def test_restarts_keep_the_room_and_leave_nothing_behind():
    """Ctrl-C, SIGKILL of the hub, a proxy crash then SIGTERM, and `deploy/hub.sh stop`: after each the hub's own
    processes (proxy, culler) are gone and nothing listens on its ports; deploy/hub.sh again finds the attendee's
    server and kernel still running, with the variable set before; there is exactly one culler; `stop` ends the
    attendee's processes too. The hub runs with VNETLAB_HUB_PUBLIC_URL=https://... as behind a TLS front: every
    cookie it sets is Secure."""
    hub_or_skip()
    loadtest, vnetlab_hub = hub_modules()
    existed = loadtest.existing_accounts()
    name = "citest-r"
    workdir = Path(tempfile.mkdtemp(prefix="vnetlab-hubtest-", dir="/var/lib"))
    room = RestartableHub(loadtest, workdir, VNETLAB_HUB_PUBLIC_URL="https://hub.invalid/")
    hub = room.hub
    Claimant = claimant(loadtest)
    timings = {}

    async def attendee(code: str, start: bool = False, kid: str | None = None):
        att = Claimant(hub, name, think_s=(0, 0), stop_at=time.monotonic() + 120, notebooks=[])
        try:
            await att.login(hub.password)
            if start:
                await att.ensure_server(SPAWN_S)
            if kid is None:
                kid = json.loads((await att.fetch(f"/user/{name}/api/kernels", "POST",
                                                  {"name": "python3"})).body)["id"]
            return kid, await att.run_code(kid, code)
        finally:
            att.http.close()

    def still_there(kid: str) -> None:
        t0 = time.monotonic()
        _, out = asyncio.run(attendee("assert x == 42, x", kid=kid))
        assert out["error"] is None, f"the kernel lost its variable: {out}\n{hub.log_tail()}"
        timings.setdefault("kernel_again_s", []).append(round(time.monotonic() - t0, 2))

    try:
        room.launch()
        _, _, cookies = login(hub.url, "rita", own_password("rita"), hub.password)
        assert cookies and all("; secure" in c.lower() for c in cookies), cookies  # _xsrf included
        kid, out = asyncio.run(attendee("x = 6 * 7", start=True))
        assert out["error"] is None, out
        uid = pwd.getpwnam(vnetlab_hub.account(name)).pw_uid
        server = next(p for p in loadtest.all_pids() if loadtest.uid_of(p) == uid
                      and loadtest.proc_kind(p) == "server")
        kernel = kernel_pids(uid, loadtest)
        assert len(room.cullers()) == 1 and len(room.proxies()) == 1

        # 1. Ctrl-C in the hub's terminal: SIGINT to its foreground process group
        proxy, culler = room.proxies(), room.cullers()
        os.killpg(hub.proc.pid, signal.SIGINT)
        room.wait_exit()
        assert not [p for p in proxy + culler if alive(p)], "Ctrl-C left the proxy or the culler running"
        assert not room.listening(), room.listening()
        assert alive(server) and all(alive(k) for k in kernel), "Ctrl-C stopped the attendee's server or kernel"
        timings["restart_s"] = round(room.launch(), 2)
        still_there(kid)
        assert len(room.cullers()) == 1

        # 2. the hub killed outright (the OOM killer, kill -9): no cleanup of its own runs
        proxy, culler = room.proxies(), room.cullers()
        os.kill(hub.proc.pid, signal.SIGKILL)
        room.wait_exit()
        wait_for(lambda: not [p for p in proxy + culler if alive(p)], 10, "the proxy and culler end with the hub")
        assert not room.listening(), room.listening()
        assert alive(server), "the attendee's server died with the hub"
        room.launch()
        still_there(kid)
        assert len(room.cullers()) == 1, f"cullers: {room.cullers()}"

        # 3. the proxy crashes, the hub starts another; then SIGTERM (systemd, kill)
        first = room.proxies()
        os.kill(first[0], signal.SIGKILL)
        second = wait_for(lambda: [p for p in room.proxies() if p not in first and alive(p)], 30,
                          "the hub starts a new proxy")
        wait_for(lambda: any(line.split()[3].endswith(f":{room.port}") for line in room.listening()), 30,
                 "the new proxy listens")
        time.sleep(2)  # the hub gives it the routes right after (JupyterHub proxy.py, check_running)
        still_there(kid)
        hub.proc.send_signal(signal.SIGTERM)
        room.wait_exit()
        time.sleep(6)  # a health check left running would start a proxy within its 5 s (check_running_interval)
        assert not [p for p in room.proxies() if alive(p)], f"a proxy outlived the hub: {room.proxies()}"
        assert not room.cullers() and not room.listening(), (room.cullers(), room.listening())
        assert not alive(second[0])

        # 4. `deploy/hub.sh stop`: the hub and every attendee's process, the home's file system unmounted
        room.launch()
        still_there(kid)
        stop = subprocess.run([str(REPO / "deploy/hub.sh"), "stop"], env=room.env, capture_output=True, text=True,
                              timeout=120)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        room.wait_exit()
        assert not [p for p in loadtest.all_pids() if loadtest.uid_of(p) == uid], "attendee processes left"
        assert not room.proxies() and not room.cullers() and not room.listening()
        assert not os.path.ismount(pwd.getpwnam(vnetlab_hub.account(name)).pw_dir)
        print(f"hub restart timings: {timings}")
    finally:
        if hub.proc is not None and hub.proc.poll() is None:
            hub.proc.kill()
        loadtest.stop_pids(room.proxies() + room.cullers())
        release_accounts([name], existed, workdir, loadtest, vnetlab_hub)
