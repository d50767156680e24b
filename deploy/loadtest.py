"""Load test of the workshop hub: a room of N simulated attendees on one machine (a benchmark, run by hand, as root).

    sudo /opt/vnetlab-hub/hub/bin/python deploy/loadtest.py --attendees 40      # the day before, on the rented VM

For each N it starts the hub (deploy/hub.sh's configuration, on 127.0.0.1 only, state in a temporary folder) and
plays the room stepping together (--scenario room, the default): everyone arrives within --arrive seconds (login
through the hub's form, server started through its REST API, notebook 00 run over the kernel's websocket, as
JupyterLab does, to its first figure); when all have, everyone runs the same figure cell within --step seconds and
answers the notebook's first exercise (right, wrong or not at all: the check reports to the room board); then
everyone opens the next notebook within --step seconds. Beside them one attendee opens every notebook in order and
closes none (the kernel budget). --scenario steady is the earlier model (each at their own pace through notebooks
00-50, one panel control moved after each panel). Measured per phase: round trips, CPU-seconds of every process of
the attendees' accounts, the hub's and the board's, the machine's steal and the other processes' CPU; per attendee
the memory peak (PSS, cgroup); the board's latency, CPU and memory. Bounded (timeouts on every request, cell and
start; at most 120 attendees); everything it started is stopped by process id and the accounts and homes it made are
removed. Results: deploy/results/loadtest-<time>.json; deploy/sizing.py turns them into the VM sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pwd
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from vnetlab_hub import CGROUP_NAME, _own_cgroup_v1, account  # noqa: E402

NOTEBOOKS = ["00_welcome_and_map", "05_primer_skb_gro_gso", "10_receive_buffers_and_memory_layout",
             "20_tailroom_thresholds", "30_gro_frag_savings", "40_gso_features",
             "50_vlan_forwarding_resegmentation"]
MAX_ATTENDEES = 120  # a room of 100 can be rehearsed on its VM
HTTP_TIMEOUT_S = 60
CELL_TIMEOUT_S = 180
WIDGET_TIMEOUT_S = 60
CONTROL_MODELS = ("IntSliderModel", "FloatSliderModel", "CheckboxModel", "DropdownModel", "ToggleButtonsModel")
ADMIN = "instructor"


def pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (nearest rank), or None for no values."""
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))], 3)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------------------------
# The hub: started from deploy/hub.sh's configuration, stopped by process id


@dataclass
class Hub:
    prefix: Path
    state: Path
    homes: Path
    url: str
    password: str
    admin_password: str
    proc: subprocess.Popen | None = None
    log_path: Path | None = None

    @classmethod
    def start(cls, prefix: Path, workdir: Path, *, mem_limit: str = "1G", cpu_limit: float = 1.0,
              spawn_limit: int = 10, start_timeout_s: int = 300, timeout_s: float = 90) -> Hub:
        port, internal, api, board = free_port(), free_port(), free_port(), free_port()
        hub = cls(prefix=prefix, state=workdir / "state", homes=workdir / "homes", url=f"http://127.0.0.1:{port}",
                  password=secrets.token_urlsafe(9), admin_password=secrets.token_urlsafe(30))
        hub.homes.mkdir(parents=True, exist_ok=True)
        os.chmod(workdir, 0o755)
        os.chmod(hub.homes, 0o755)
        env = dict(os.environ, VNETLAB_HUB_PREFIX=str(prefix), VNETLAB_HUB_STATE=str(hub.state),
                   VNETLAB_HUB_BIND=hub.url, VNETLAB_HUB_INTERNAL=f"http://127.0.0.1:{internal}",
                   VNETLAB_HUB_PROXY_API=f"http://127.0.0.1:{api}", VNETLAB_HUB_HOMES=str(hub.homes),
                   VNETLAB_BOARD_INTERNAL=f"http://127.0.0.1:{board}",
                   VNETLAB_HUB_PASSWORD=hub.password, VNETLAB_HUB_ADMIN_PASSWORD=hub.admin_password,
                   VNETLAB_HUB_ADMIN=ADMIN, VNETLAB_HUB_MEM_LIMIT=mem_limit, VNETLAB_HUB_CPU_LIMIT=str(cpu_limit),
                   VNETLAB_HUB_SPAWN_LIMIT=str(spawn_limit), VNETLAB_HUB_START_TIMEOUT=str(start_timeout_s))
        hub.log_path = workdir / "hub.log"
        with open(hub.log_path, "w") as log:
            hub.proc = subprocess.Popen([str(HERE / "hub.sh")], env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            hub.wait_up(port, timeout_s)
        except BaseException:
            hub.stop()  # interrupted or failed while starting: nothing left behind
            raise
        return hub

    def wait_up(self, port: int, timeout_s: float) -> None:
        hub = self
        deadline = time.monotonic() + timeout_s
        while True:
            if hub.proc.poll() is not None:
                raise RuntimeError(f"the hub exited with {hub.proc.returncode}: {hub.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    pass
                import urllib.request
                urllib.request.urlopen(f"{hub.url}/hub/api/", timeout=5).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the hub did not answer within {timeout_s} s: {hub.log_tail()}") from None
                time.sleep(0.5)

    def log_tail(self, n: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def pids(self) -> dict[str, list[int]]:
        """The hub's own processes: the hub, the proxy and the culler (the hub's children running as root)."""
        if self.proc is None or self.proc.poll() is not None:
            return {}
        hub_pid = self.proc.pid
        children = [p for p in all_pids() if ppid(p) == hub_pid]
        proxy = read_pid(self.state / "jupyterhub-proxy.pid")
        return {"hub": [hub_pid], "proxy": [proxy] if proxy else [],
                "services": [p for p in children if p != proxy and uid_of(p) == 0]}

    def stop(self) -> None:
        """SIGTERM to the hub (it stops the proxy and the servers it started), then by pid whatever is left."""
        proxy = read_pid(self.state / "jupyterhub-proxy.pid")
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if proxy:
            stop_pids([proxy])


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def stop_pids(pids: list[int], grace_s: float = 10) -> None:
    """SIGTERM each pid, then SIGKILL those still there after ``grace_s``."""
    for p in pids:
        with_suppress(os.kill, p, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.2)
    for p in pids:
        with_suppress(os.kill, p, signal.SIGKILL)


def with_suppress(fn: object, *args: object) -> None:
    try:
        fn(*args)
    except (ProcessLookupError, PermissionError):
        pass


def proc_mem(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in bytes, 0 if it is gone."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def proc_times(pid: int) -> tuple[float, float]:
    """(utime + stime, cutime + cstime) of a process in seconds: its own CPU, and that of the children it has
    waited for (JupyterLab's node call at start, a kernel the server shut down); (0, 0) if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        hz = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / hz, (int(fields[13]) + int(fields[14])) / hz
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0


def proc_cpu_s(pid: int) -> float:
    return proc_times(pid)[0]


def proc_kind(pid: int) -> str:
    """server (jupyterhub-singleuser), kernel (ipykernel) or other (JupyterLab's node/yarn call at start)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return "other"
    return "server" if "jupyterhub-singleuser" in cmd else "kernel" if "ipykernel" in cmd else "other"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def machine_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts) - idle, sum(parts)


def machine_jiffies() -> dict[str, int]:
    """The machine's CPU time so far, /proc/stat's first line (busy without steal, steal, idle), in jiffies."""
    p = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = p[:8]
    return {"busy": user + nice + system + irq + softirq, "steal": steal, "idle": idle + iowait, "total": sum(p[:8])}


def account_memory_peak(name: str) -> int | None:
    """The peak memory of the attendee's cgroup (everything the account ran, page cache included), if it has one."""
    v2 = Path("/sys/fs/cgroup") / CGROUP_NAME / account(name) / "memory.peak"
    rel = _own_cgroup_v1("memory") if not v2.parent.exists() else None
    path = v2 if rel is None else (Path("/sys/fs/cgroup/memory") / rel.lstrip("/") / CGROUP_NAME / account(name)
                                   / "memory.max_usage_in_bytes")
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()


# ------------------------------------------------------------------------------------------------------------
# One attendee: the hub's login and API, then the kernel protocol over the single-user server's websocket


@dataclass
class Stats:
    spawn_s: float | None = None
    first_figure_s: float | None = None
    cells: list[float] = field(default_factory=list)
    widgets: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    timeouts: list[str] = field(default_factory=list)
    spawn_retries: int = 0
    notebooks_done: int = 0
    cells_done: int = 0
    current: str = ""
    checks: list[tuple[str, str, float]] = field(default_factory=list)  # (exercise, verdict shown, time.time())
    phases: dict[str, list[float]] = field(default_factory=dict)  # a room phase's round trips (run_phased)


class AttendeeError(Exception):
    def __init__(self, text: str, code: int = 0) -> None:
        super().__init__(text)
        self.code = code


class Kernel:
    """A kernel session over the single-user server's websocket (the legacy JSON/binary frames JupyterLab 4 falls
    back to without a subprotocol), with the widget models it has opened."""

    def __init__(self, ws: object, session: str) -> None:
        self.ws = ws
        self.session = session
        self.queue: asyncio.Queue = asyncio.Queue()
        self.models: dict[str, dict] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            raw = await self.ws.read_message()
            if raw is None:
                await self.queue.put(None)
                return
            msg = decode(raw)
            if msg.get("msg_type") == "comm_open" or msg["header"].get("msg_type") == "comm_open":
                content = msg["content"]
                if content.get("target_name") == "jupyter.widget":
                    state = content["data"].get("state", {})
                    self.models[content["comm_id"]] = dict(state, _parent=msg["parent_header"].get("msg_id"))
            await self.queue.put(msg)

    def send(self, channel: str, msg_type: str, content: dict) -> str:
        msg_id = uuid.uuid4().hex
        msg = {"header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "loadtest",
                          "version": "5.3", "date": ""},
               "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": []}
        self.ws.write_message(json.dumps(msg))
        return msg_id

    async def until_idle(self, msg_id: str, timeout_s: float, *, want_image_of: set[str] | None = None) -> dict:
        """Messages answering ``msg_id`` until the kernel is idle again: error, outputs seen, and (for a widget
        change) the first time a new image arrived for one of ``want_image_of``."""
        out = {"error": None, "figure": False, "widget_view": False, "image_at": None, "stderr": "", "text": ""}
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            msg = await asyncio.wait_for(self.queue.get(), left)
            if msg is None:
                raise AttendeeError("the kernel's websocket closed")
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind in ("display_data", "execute_result"):
                data = content.get("data", {})
                out["text"] += data.get("text/plain", "") if kind == "execute_result" else ""
                out["figure"] |= "image/png" in data
                out["widget_view"] |= "application/vnd.jupyter.widget-view+json" in data
            elif kind == "error" or (kind == "execute_reply" and content.get("status") == "error"):
                out["error"] = out["error"] or f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "stream" and content.get("name") == "stderr":
                out["stderr"] += content.get("text", "")
            elif kind == "comm_msg" and want_image_of and content.get("comm_id") in want_image_of:
                data = content.get("data", {})
                if data.get("method") == "update" and ["value"] in data.get("buffer_paths", []):
                    out["image_at"] = out["image_at"] or time.monotonic()
            elif kind == "status" and content.get("execution_state") == "idle":
                return out

    def close(self) -> None:
        self.reader.cancel()
        self.ws.close()


def decode(raw: str | bytes) -> dict:
    """A websocket frame from jupyter_server: JSON text, or the binary form (count, offsets, JSON, buffers)."""
    if isinstance(raw, str):
        return json.loads(raw)
    nbufs = struct.unpack("!I", raw[:4])[0]
    offsets = list(struct.unpack("!" + "I" * nbufs, raw[4:4 * (nbufs + 1)])) + [len(raw)]
    msg = json.loads(raw[offsets[0]:offsets[1]].decode())
    msg["buffers"] = [raw[a:b] for a, b in zip(offsets[1:-1], offsets[2:])]
    return msg


def pick_control(models: dict[str, dict], created_by: str) -> tuple[str, dict] | None:
    """The first control a cell's panel made, and the state change a person would make to it (one step)."""
    for comm_id, st in models.items():
        if st.get("_parent") != created_by or st.get("_model_name") not in CONTROL_MODELS or st.get("disabled"):
            continue
        name = st["_model_name"]
        if name in ("IntSliderModel", "FloatSliderModel"):
            step = st.get("step") or 1
            value = st["value"] + step if st["value"] + step <= st["max"] else st["value"] - step
            return comm_id, {"value": round(value, 6) if name == "FloatSliderModel" else int(value)}
        if name == "CheckboxModel":
            return comm_id, {"value": not st["value"]}
        labels = st.get("_options_labels") or []
        if len(labels) > 1:
            return comm_id, {"index": (st.get("index") or 0) + 1 if (st.get("index") or 0) + 1 < len(labels) else 0}
    return None


CHECK_CELL = re.compile(r'exercises\.check\("([0-9]+\.[0-9]+)"')


def verdict_of(text: str) -> str:
    """What a check cell showed, from its Verdict's text (vnetlab/exercises.py Verdict messages)."""
    t = text.strip()
    if t.startswith("\u2713"):
        return "right"
    if t.startswith("\u2026"):
        return "unanswered"
    if t.startswith("\u2717"):
        return "hint" if "Hint:" in t else "kind"
    return "other"


def answer_code(key: str, right: bool) -> str:
    """An exercise cell as an attendee fills it: the model's answer, or a wrong one of the right kind."""
    if right:
        return f'answer = exercises.solution("{key}")'
    return (f'_s = exercises.solution("{key}")\n'
            'answer = (not _s) if isinstance(_s, bool) else _s + 1 if isinstance(_s, (int, float)) else "no"')


def answer_plan(name: str, seed: int = 0) -> Callable[[str], str]:
    """Each simulated attendee's way with each exercise (fixed by name): right at once, wrong, wrong and then
    right (the check run twice), or not answered (the check run with None)."""
    def plan(key: str) -> str:
        return random.Random(f"{seed}:{name}:{key}").choice(["right", "wrong", "wrong_then_right", "skip"])

    return plan


class Attendee:
    def __init__(self, hub: Hub, name: str, *, think_s: tuple[float, float], stop_at: float,
                 notebooks: list[str], keep_kernels: bool = False, first_figure_only: bool = False,
                 answers: Callable[[str], str] | None = None, exercises_only: bool = False) -> None:
        self.hub, self.name = hub, name
        self.think_s, self.stop_at = think_s, stop_at
        self.work_s = float("inf")
        self.notebooks, self.keep_kernels, self.first_figure_only = notebooks, keep_kernels, first_figure_only
        self.answers, self.exercises_only = answers, exercises_only
        self.http = AsyncHTTPClient(force_instance=True, defaults={"request_timeout": HTTP_TIMEOUT_S,
                                                                  "connect_timeout": HTTP_TIMEOUT_S})
        self.cookies: dict[str, str] = {}
        self.token = ""
        self.stats = Stats()
        self.t0 = 0.0

    async def fetch(self, path: str, method: str = "GET", body: object = None, *, form: bool = False,
                    auth: bool = True, follow: bool = False) -> object:
        headers = {}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if auth and self.token:
            headers["Authorization"] = f"token {self.token}"
        if "_xsrf" in self.cookies:
            headers["X-XSRFToken"] = self.cookies["_xsrf"]
        if body is not None:
            body = urlencode(body) if form else json.dumps(body)
            headers["Content-Type"] = "application/x-www-form-urlencoded" if form else "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            body = ""
        req = HTTPRequest(self.hub.url + path, method=method, body=body, headers=headers, follow_redirects=follow)
        resp = await self.http.fetch(req, raise_error=False)
        for value in resp.headers.get_list("Set-Cookie"):
            k, v = value.split(";", 1)[0].split("=", 1)
            self.cookies[k.strip()] = v.strip()
        if resp.code >= 400 and resp.code != 599 or resp.code == 599:
            raise AttendeeError(f"{method} {path}: HTTP {resp.code} {resp.error or ''} "
                                f"{(resp.body or b'')[:200]!r}", resp.code)
        return resp

    async def login(self, password: str) -> None:
        """The hub's login form (as a browser posts it), then a token from the hub's REST API."""
        await self.fetch("/hub/login", auth=False)
        # RoomAuthenticator (vnetlab_hub.py): the instructor with the admin password; an attendee with their own
        # password, and the room password in the form's third field the first time, when the name is claimed
        if password == getattr(self.hub, "admin_password", None):
            fields = {"username": self.name, "password": password}
        else:
            fields = {"username": self.name, "password": own_password(self.name), "otp": password}
        resp = await self.fetch("/hub/login?next=", "POST", {**fields, "_xsrf": self.cookies.get("_xsrf", "")},
                                form=True, auth=False)
        if resp.code != 302 or not any(k.startswith("jupyterhub-session") for k in self.cookies):
            raise AttendeeError(f"login as {self.name} refused (HTTP {resp.code})")
        resp = await self.fetch(f"/hub/api/users/{self.name}/tokens", "POST",
                                {"note": "loadtest", "expires_in": 3600}, auth=False)
        self.token = json.loads(resp.body)["token"]

    async def start_server(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                await self.fetch(f"/hub/api/users/{self.name}/server", "POST")
                break
            except AttendeeError as exc:
                # 429: the hub's concurrent_spawn_limit; a person reloads the page a little later
                if exc.code != 429 or time.monotonic() > deadline:
                    raise
                self.stats.spawn_retries += 1
                await asyncio.sleep(random.uniform(5, 10))
        while time.monotonic() < deadline:
            user = json.loads((await self.fetch(f"/hub/api/users/{self.name}")).body)
            server = user.get("servers", {}).get("")
            if server and server.get("ready"):
                return
            if not user.get("pending") and not server:
                raise AttendeeError(f"{self.name}'s server failed to start (see the hub log)")
            await asyncio.sleep(2)  # the spawn page's progress stream, approximated: a request every 2 s
        raise TimeoutError(f"{self.name}'s server not ready within {timeout_s} s")

    async def open_kernel(self, notebook: str) -> tuple[Kernel, str]:
        base = f"/user/{self.name}"
        resp = await self.fetch(f"{base}/api/sessions", "POST",
                                {"path": f"{notebook}.ipynb", "name": f"{notebook}.ipynb", "type": "notebook",
                                 "kernel": {"name": "python3"}})
        session = json.loads(resp.body)
        kid = session["kernel"]["id"]
        url = self.hub.url.replace("http", "ws", 1) + f"{base}/api/kernels/{kid}/channels?session_id={uuid.uuid4()}"
        ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {self.token}"},
                                                 request_timeout=HTTP_TIMEOUT_S, connect_timeout=HTTP_TIMEOUT_S),
                                     max_message_size=256 << 20)
        return Kernel(ws, uuid.uuid4().hex), session["id"]

    async def think(self) -> None:
        await asyncio.sleep(random.uniform(*self.think_s))

    def time_left(self) -> float:
        return self.stop_at - time.monotonic()

    async def run(self, password: str, spawn_timeout_s: float) -> Stats:
        st = self.stats
        self.t0 = time.monotonic()
        try:
            st.current = "login"
            await self.login(password)
            st.current = "spawn"
            await self.start_server(spawn_timeout_s)
            st.spawn_s = round(time.monotonic() - self.t0, 3)
            self.stop_at = min(self.stop_at, time.monotonic() + self.work_s)  # each gets the same work time
            for nb in self.notebooks:
                if self.time_left() <= 0:
                    break
                st.current = nb
                await self.work_through(nb)
                if st.first_figure_s is not None and self.first_figure_only:
                    break
        except TimeoutError as exc:
            st.timeouts.append(f"{st.current}: {exc or 'timed out'}")
        except (AttendeeError, HTTPClientError, OSError, KeyError, ValueError) as exc:
            st.failures.append(f"{st.current}: {type(exc).__name__}: {exc}")
        return st

    async def cells_of(self, notebook: str) -> list[dict]:
        nb = json.loads((await self.fetch(f"/user/{self.name}/api/contents/{notebook}.ipynb?content=1")).body)
        return [c for c in nb["content"]["cells"] if c["cell_type"] == "code"]

    async def execute(self, kernel: Kernel, code: str, where: str) -> tuple[dict, str, float]:
        """Run one cell as JupyterLab does; (its outputs, its message id, its round trip in seconds)."""
        start = time.monotonic()
        msg_id = kernel.send("shell", "execute_request",
                             {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                              "allow_stdin": False, "stop_on_error": True})
        try:
            out = await kernel.until_idle(msg_id, CELL_TIMEOUT_S)
        except TimeoutError:
            raise TimeoutError(f"{where} took over {CELL_TIMEOUT_S} s") from None
        took = round(time.monotonic() - start, 3)
        self.stats.cells.append(took)
        self.stats.cells_done += 1
        return out, msg_id, took

    async def work_through(self, notebook: str, *, upto_first_figure: bool = False,
                           kernel_session: tuple[Kernel, str] | None = None) -> tuple[Kernel, str] | None:
        """Run the notebook's code cells in order (with answers in exercise cells when the attendee has a plan).
        ``upto_first_figure``: stop after the first figure and return the kernel, kept open."""
        st = self.stats
        cells = await self.cells_of(notebook)
        kernel, session_id = kernel_session or await self.open_kernel(notebook)
        keep = upto_first_figure
        try:
            plan = None
            for i, cell in enumerate(cells):
                if self.time_left() <= 0:
                    return None
                code = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                exercise = "exercise" in cell.get("metadata", {}).get("tags", [])
                check = CHECK_CELL.search(code)
                if self.exercises_only and i > 0 and not exercise and not check:
                    continue  # the imports (cell 0), the exercise cells and their checks only
                if exercise and self.answers is not None:
                    nxt = CHECK_CELL.search("".join(cells[i + 1]["source"])) if i + 1 < len(cells) else None
                    plan = self.answers(nxt.group(1)) if nxt else None
                    if plan in ("right", "wrong", "wrong_then_right"):
                        code = answer_code(nxt.group(1), plan == "right")
                out, msg_id, _ = await self.execute(kernel, code, f"cell {i} of {notebook}")
                if out["error"]:
                    st.failures.append(f"{notebook} cell {i}: {out['error']}")
                    return None
                if check:
                    st.checks.append((check.group(1), verdict_of(out["text"]), time.time()))
                    if plan == "wrong_then_right":  # a second go: the right answer, the same check again
                        await self.think()
                        await self.execute(kernel, answer_code(check.group(1), True), f"{notebook} answer again")
                        out, _, _ = await self.execute(kernel, code, f"cell {i} of {notebook} again")
                        st.checks.append((check.group(1), verdict_of(out["text"]), time.time()))
                    plan = None
                if (out["figure"] or out["widget_view"]) and st.first_figure_s is None:
                    st.first_figure_s = round(time.monotonic() - self.t0, 3)
                    if self.first_figure_only and not out["widget_view"]:
                        continue
                if (out["figure"] or out["widget_view"]) and upto_first_figure:
                    return kernel, session_id
                if out["widget_view"]:
                    await self.think()
                    await self.move_control(kernel, msg_id, f"{notebook} cell {i}")
                    if self.first_figure_only:
                        return None
                await self.think()
            st.notebooks_done += 1
            keep = False
            return None
        finally:
            if not keep:
                kernel.close()
                if not self.keep_kernels:
                    await self.fetch(f"/user/{self.name}/api/sessions/{session_id}", "DELETE")

    async def move_control(self, kernel: Kernel, cell_msg: str, where: str) -> None:
        """One control of the panel the cell made moved by one step, as the browser's widget manager sends it; the
        round trip ends when the panel's new image arrives."""
        choice = pick_control(kernel.models, cell_msg)
        images = {cid for cid, s in kernel.models.items()
                  if s.get("_parent") == cell_msg and s.get("_model_name") == "ImageModel"}
        if choice is None or not images:
            return  # a widget without a control and an image (a plain output widget): nothing to move
        comm_id, state = choice
        start = time.monotonic()
        msg_id = kernel.send("shell", "comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": state,
                                                                                "buffer_paths": []}})
        try:
            out = await kernel.until_idle(msg_id, WIDGET_TIMEOUT_S, want_image_of=images)
        except TimeoutError:
            raise TimeoutError(f"{where}: no new image within {WIDGET_TIMEOUT_S} s of moving a control") from None
        if out["error"] or out["image_at"] is None:
            self.stats.failures.append(f"{where}: moving {state} gave {out['error'] or 'no new image'}")
            return
        self.stats.widgets.append(round(out["image_at"] - start, 3))
        kernel.models[comm_id].update(state)


# ------------------------------------------------------------------------------------------------------------
# The room board (deploy/board/), as the instructor sees it


class BoardWatcher:
    """The instructor's view of the room board: its state polled every ``every_s`` through the hub's proxy with the
    instructor's token, and when each count of reported checks was first seen (for the check-to-board latency)."""

    def __init__(self, hub: Hub, every_s: float = 0.5, names: set[str] | None = None) -> None:
        self.admin = Attendee(hub, ADMIN, think_s=(0, 0), stop_at=0, notebooks=[])
        self.hub, self.every_s, self.names = hub, every_s, names
        self.seen: list[tuple[float, int]] = []  # (time.time(), events the board had counted)
        self.errors: list[str] = []
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.admin.login(self.hub.admin_password)
        self.task = asyncio.ensure_future(self._loop())

    async def state(self) -> dict:
        return json.loads((await self.admin.fetch("/services/board/api/state")).body)

    async def _loop(self) -> None:
        while True:
            try:
                state = await self.state()
                n = (state["events"] if self.names is None else
                     sum(p["checks"] for p in state["people"] if p["name"] in self.names))
                if not self.seen or n != self.seen[-1][1]:
                    self.seen.append((time.time(), n))
            except (AttendeeError, OSError, ValueError) as exc:
                self.errors.append(str(exc)[:200])
            await asyncio.sleep(self.every_s)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.admin.http.close()

    def latencies(self, check_times: list[float], before: int = 0) -> list[float]:
        """Seconds from the k-th check (by the time its cell returned) to the first poll that counted k events
        beyond ``before``; a check never counted is left out (the count of those is len(check_times) minus these)."""
        out = []
        for k, t in enumerate(sorted(check_times), start=1):
            first = next((ts for ts, n in self.seen if n - before >= k), None)
            if first is not None:
                out.append(round(max(0.0, first - t), 3))
        return out


# ------------------------------------------------------------------------------------------------------------
# One run with N attendees, and its measurements


class Sampler:
    """Memory and CPU of the hub's processes and of each attendee's account, every ``every_s`` seconds."""

    def __init__(self, hub: Hub, uids: dict[str, int], every_s: float = 5) -> None:
        self.hub, self.uids, self.every_s = hub, uids, every_s
        self.per_attendee_pss: dict[str, int] = {}
        self.per_attendee_rss: dict[str, int] = {}
        self.hub_rss = 0
        self.cpu_s: dict[int, float] = {}  # per process of the accounts: own CPU (see account_cpu for the rest)
        self.child_s: dict[int, float] = {}  # per process: CPU of its children it waited for
        self.parent: dict[int, int | None] = {}
        self.owner: dict[int, str] = {}  # process -> the attendee whose account runs it
        self.gone: set[int] = set()
        self.board_pids: set[int] = set()
        self.board_rss = 0
        self.account_peak: dict[str, int] = {}  # the accounts' cgroup memory peaks (bytes), where they have one
        self.kind: dict[int, str] = {}
        self.errors: list[str] = []
        self.hub_cpu_s: dict[int, float] = {}
        self.min_available = None
        self.task: asyncio.Task | None = None

    def sample(self) -> None:
        by_uid: dict[int, list[int]] = {}
        for p in all_pids():
            u = uid_of(p)
            if u is not None:
                by_uid.setdefault(u, []).append(p)
        alive = {p for ps in by_uid.values() for p in ps}
        self.gone |= {p for p in self.cpu_s if p not in alive}
        for name, uid in list(self.uids.items()):  # a copy: attendees arriving add to it meanwhile
            rss = pss = 0
            for p in by_uid.get(uid, []):
                r, s = proc_mem(p)
                rss, pss = rss + r, pss + s
                own_s, children_s = proc_times(p)
                self.cpu_s[p] = max(self.cpu_s.get(p, 0.0), own_s)
                self.child_s[p] = max(self.child_s.get(p, 0.0), children_s)
                if p not in self.kind:
                    self.kind[p] = proc_kind(p)
                    self.parent[p] = ppid(p)
                    self.owner[p] = name
            self.per_attendee_pss[name] = max(self.per_attendee_pss.get(name, 0), pss)
            self.per_attendee_rss[name] = max(self.per_attendee_rss.get(name, 0), rss)
            peak = account_memory_peak(name)
            if peak is not None:
                self.account_peak[name] = max(self.account_peak.get(name, 0), peak)
        own = [p for ps in self.hub.pids().values() for p in ps]
        self.hub_rss = max(self.hub_rss, sum(proc_mem(p)[0] for p in own))
        for p in own:
            self.hub_cpu_s[p] = max(self.hub_cpu_s.get(p, 0.0), proc_cpu_s(p))
            if p not in self.board_pids and b"board/app.py" in _cmdline(p):
                self.board_pids.add(p)
        self.board_rss = max(self.board_rss, sum(proc_mem(p)[0] for p in self.board_pids))
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                self.min_available = avail if self.min_available is None else min(self.min_available, avail)

    def account_cpu(self) -> dict[int, float]:
        """CPU seconds per process of the accounts: its own, plus what its children used that no sample saw (a
        child that exited between samples, or before the first: the parent's cutime holds it)."""
        seen_in_children: dict[int, float] = {}
        for k in self.gone:
            parent = self.parent.get(k)
            if parent is not None:
                seen_in_children[parent] = seen_in_children.get(parent, 0.0) + self.cpu_s[k] + self.child_s[k]
        return {p: own + max(0.0, self.child_s.get(p, 0.0) - seen_in_children.get(p, 0.0))
                for p, own in self.cpu_s.items()}

    def totals(self, names: set[str] | None = None) -> dict[str, float]:
        """CPU seconds so far: the accounts' (of ``names`` only, if given; the others' under "others"), the hub's
        processes' (the board's among them), the board's."""
        per_pid = self.account_cpu()
        mine = sum(c for p, c in per_pid.items() if names is None or self.owner.get(p) in names)
        return {"accounts": mine, "others": sum(per_pid.values()) - mine, "hub": sum(self.hub_cpu_s.values()),
                "board": sum(self.hub_cpu_s.get(p, 0.0) for p in self.board_pids)}

    async def loop(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.sample)
            except (OSError, ValueError, RuntimeError) as exc:  # one bad sample must not end the sampling
                self.errors.append(repr(exc))
            await asyncio.sleep(self.every_s)


async def run_room(hub: Hub, names: list[str], *, duration_s: float, ramp_s: float, think_s: tuple[float, float],
                   spawn_timeout_s: float, notebooks: list[str], first_figure_only: bool = False,
                   keep_kernels: bool = False, answers: bool = False,
                   exercises_only: bool = False) -> tuple[list[Stats], Sampler, dict]:
    start = time.monotonic()
    stop_at = start + ramp_s + spawn_timeout_s + duration_s
    uids: dict[str, int] = {}
    attendees = [Attendee(hub, n, think_s=think_s, stop_at=stop_at, notebooks=notebooks,
                          first_figure_only=first_figure_only, keep_kernels=keep_kernels,
                          answers=answer_plan(n) if answers else None, exercises_only=exercises_only) for n in names]
    for a in attendees:
        a.work_s = duration_s
    sampler = Sampler(hub, uids)

    async def arrive(i: int, a: Attendee) -> Stats:
        await asyncio.sleep(ramp_s * i / max(1, len(attendees)))
        task = asyncio.ensure_future(a.run(hub.password, spawn_timeout_s))
        while not task.done():
            with_account = account(a.name)
            try:
                uids.setdefault(a.name, pwd.getpwnam(with_account).pw_uid)
            except KeyError:
                pass
            await asyncio.wait([task], timeout=1)
        return task.result()

    cpu0, t0 = machine_cpu(), time.monotonic()
    sampler.task = asyncio.ensure_future(sampler.loop())
    hard_limit = duration_s + ramp_s + spawn_timeout_s + CELL_TIMEOUT_S + 30
    try:
        stats = await asyncio.wait_for(asyncio.gather(*(arrive(i, a) for i, a in enumerate(attendees))), hard_limit)
    finally:
        sampler.task.cancel()
        await asyncio.to_thread(sampler.sample)
        for a in attendees:
            a.http.close()
    cpu1, t1 = machine_cpu(), time.monotonic()
    machine = {"busy_fraction": round((cpu1[0] - cpu0[0]) / max(1, cpu1[1] - cpu0[1]), 3),
               "wall_s": round(t1 - t0, 1), "cores": os.cpu_count()}
    return stats, sampler, machine


def summarise(n: int, stats: list[Stats], sampler: Sampler, machine: dict) -> dict:
    cells = [c for s in stats for c in s.cells]
    widgets = [w for s in stats for w in s.widgets]
    first = [s.first_figure_s for s in stats if s.first_figure_s is not None]
    spawn = [s.spawn_s for s in stats if s.spawn_s is not None]
    pss = list(sampler.per_attendee_pss.values())
    rss = list(sampler.per_attendee_rss.values())
    per_pid = sampler.account_cpu()
    attendee_cpu = sum(per_pid.values())
    mib = 1 << 20
    return {
        "attendees": n,
        "servers_started": len(spawn),
        "spawn_s": {"p50": pct(spawn, 50), "p95": pct(spawn, 95)},
        "spawn_retries_429": sum(s.spawn_retries for s in stats),
        "first_figure_s": {"p50": pct(first, 50), "p95": pct(first, 95), "count": len(first)},
        "cell_round_trip_s": {"p50": pct(cells, 50), "p95": pct(cells, 95), "count": len(cells)},
        "widget_round_trip_s": {"p50": pct(widgets, 50), "p95": pct(widgets, 95), "count": len(widgets)},
        "failures": [f"{a}: {f}" for a, s in zip(range(n), stats) for f in s.failures],
        "timeouts": [f"{a}: {t}" for a, s in zip(range(n), stats) for t in s.timeouts],
        "notebooks_done": [s.notebooks_done for s in stats],
        "cells_done": sum(s.cells_done for s in stats),
        "memory_per_attendee_mib": {"pss_peak_p50": round(statistics.median(pss) / mib, 1) if pss else None,
                                    "pss_peak_max": round(max(pss) / mib, 1) if pss else None,
                                    "rss_peak_p50": round(statistics.median(rss) / mib, 1) if rss else None,
                                    "rss_peak_max": round(max(rss) / mib, 1) if rss else None},
        "memory_hub_rss_peak_mib": round(sampler.hub_rss / mib, 1),
        "sampler_errors": sampler.errors[:5],
        "memory_min_available_mib": round((sampler.min_available or 0) / mib),
        "cpu": {"machine_busy_fraction": machine["busy_fraction"], "cores": machine["cores"],
                "attendees_cpu_s": round(attendee_cpu, 1), "hub_cpu_s": round(sum(sampler.hub_cpu_s.values()), 1),
                "attendees_cpu_s_by_kind": {k: round(sum(c for p, c in per_pid.items()
                                                         if sampler.kind.get(p) == k), 1)
                                            for k in ("server", "kernel", "other")},
                "wall_s": machine["wall_s"],
                "attendee_cores_used": round(attendee_cpu / max(1.0, machine["wall_s"]), 3)},
    }


# ------------------------------------------------------------------------------------------------------------
# The room stepping together: arrival, the same cell, the next notebook


PHASES = ("arrive", "same_cell", "next_notebook")


class Phases:
    """CPU and the machine at each phase boundary, so that each phase gets its own CPU seconds and load."""

    def __init__(self, sampler: Sampler, names: set[str]) -> None:
        self.sampler, self.names = sampler, names
        self.marks: dict[str, dict] = {}

    async def mark(self, label: str) -> None:
        await asyncio.to_thread(self.sampler.sample)
        self.marks[label] = {"t": time.monotonic(), "cpu": self.sampler.totals(self.names),
                             "machine": machine_jiffies()}

    def between(self, a: str, b: str, attendees: int) -> dict:
        m0, m1 = self.marks[a], self.marks[b]
        hz = os.sysconf("SC_CLK_TCK")
        wall = m1["t"] - m0["t"]
        cpu = {k: m1["cpu"][k] - m0["cpu"][k] for k in m0["cpu"]}
        mach = {k: (m1["machine"][k] - m0["machine"][k]) / hz for k in m0["machine"]}
        ours = cpu["accounts"] + cpu["others"] + cpu["hub"]
        return {"wall_s": round(wall, 1), "attendees_cpu_s": round(cpu["accounts"], 1),
                "per_attendee_cpu_s": round(cpu["accounts"] / max(1, attendees), 2),
                "hub_cpu_s": round(cpu["hub"], 1), "board_cpu_s": round(cpu["board"], 2),
                "reader_cpu_s": round(cpu["others"], 1),
                "machine": {"cores": os.cpu_count(), "busy_cpu_s": round(mach["busy"], 1),
                            "steal_s": round(mach["steal"], 1), "idle_s": round(mach["idle"], 1),
                            # what else the machine ran meanwhile: busy time that was neither ours nor the hub's
                            "other_cpu_s": round(mach["busy"] - ours, 1),
                            "other_cores": round((mach["busy"] - ours) / max(1.0, wall), 2)}}


async def attendee_phases(a: Attendee, password: str, spawn_timeout_s: float, arrive_at: float,
                          step_s: float, gates: dict[str, asyncio.Event], notebooks: tuple[str, str]) -> None:
    """One attendee of the room: arrives at ``arrive_at`` and runs the first notebook to its first figure; when
    everyone has, runs that figure cell again within ``step_s`` and answers the notebook's first exercise; when
    everyone has, within ``step_s`` leaves the notebook (its kernel shut down) and opens the next to its figure."""
    st = a.stats
    st.phases = {p: [] for p in PHASES}
    first, second = notebooks
    kernel_session = None
    try:
        await asyncio.sleep(max(0.0, arrive_at - time.monotonic()))
        a.t0 = time.monotonic()
        st.current = "login"
        await a.login(password)
        st.current = "spawn"
        await a.start_server(spawn_timeout_s)
        st.spawn_s = round(time.monotonic() - a.t0, 3)
        st.current = first
        kernel_session = await a.work_through(first, upto_first_figure=True)
        if kernel_session is None:
            raise AttendeeError(f"no figure in {first}")
        st.phases["arrive"].append(round(time.monotonic() - a.t0, 3))
    except (TimeoutError, AttendeeError, HTTPClientError, OSError, KeyError, ValueError) as exc:
        (st.timeouts if isinstance(exc, TimeoutError) else st.failures).append(f"{st.current}: {exc}")
        kernel_session = None
    finally:
        a.arrived = True
        gates["arrived"].set() if all(x.arrived for x in a.room) else None
    await gates["arrived"].wait()
    if kernel_session is None:
        return
    kernel, session_id = kernel_session
    try:
        await asyncio.sleep(random.uniform(0, step_s))
        st.current = "same cell"
        out, _, took = await a.execute(kernel, a.figure_cell, f"{first}: the same cell")
        st.phases["same_cell"].append(took)
        cells = await a.cells_of(first)
        ex = next((i for i, c in enumerate(cells) if "exercise" in c.get("metadata", {}).get("tags", [])), None)
        if ex is not None and a.answers is not None:
            check = "".join(cells[ex + 1]["source"])
            key = CHECK_CELL.search(check).group(1)
            plan = a.answers(key)
            await a.execute(kernel, answer_code(key, plan == "right") if plan != "skip" else "answer = None",
                            f"{first}: exercise {key}")
            out, _, _ = await a.execute(kernel, check, f"{first}: check {key}")
            st.checks.append((key, verdict_of(out["text"]), time.time()))
    except (TimeoutError, AttendeeError, HTTPClientError, OSError, KeyError, ValueError) as exc:
        (st.timeouts if isinstance(exc, TimeoutError) else st.failures).append(f"{st.current}: {exc}")
    finally:
        a.stepped = True
        gates["stepped"].set() if all(x.stepped or not x.stats.phases.get("arrive") for x in a.room) else None
    await gates["stepped"].wait()
    try:
        await asyncio.sleep(random.uniform(0, step_s))
        st.current = second
        kernel.close()
        await a.fetch(f"/user/{a.name}/api/sessions/{session_id}", "DELETE")
        t = time.monotonic()
        nxt = await a.work_through(second, upto_first_figure=True)
        if nxt is None:
            raise AttendeeError(f"no figure in {second}")
        st.phases["next_notebook"].append(round(time.monotonic() - t, 3))
        nxt[0].close()
    except (TimeoutError, AttendeeError, HTTPClientError, OSError, KeyError, ValueError) as exc:
        (st.timeouts if isinstance(exc, TimeoutError) else st.failures).append(f"{st.current}: {exc}")


async def reader_walk(a: Attendee, password: str, spawn_timeout_s: float) -> dict:
    """The attendee who follows the notebooks' links: opens every notebook in order, each to its first figure,
    and never closes one (its kernels stay unless the hub's kernel budget shuts them down)."""
    out = {"name": a.name, "opened": [], "kernel_lost": [], "kernels_running_at_end": None}
    try:
        await a.login(password)
        await a.start_server(spawn_timeout_s)
        for nb in [*NOTEBOOKS, "60_check_your_own_kernel"]:
            t = time.monotonic()
            try:
                ks = await a.work_through(nb, upto_first_figure=True)
            except AttendeeError as exc:  # the kernel's websocket closed: the account's memory limit killed it
                out["kernel_lost"].append(f"{nb}: {exc}")
                continue
            out["opened"].append({"notebook": nb, "first_figure_s": round(time.monotonic() - t, 2),
                                  "figure": ks is not None})
            if ks is not None:
                ks[0].close()  # the tab stays open (the session and its kernel are not shut down)
            await a.think()
        kernels = json.loads((await a.fetch(f"/user/{a.name}/api/kernels")).body)
        out["kernels_running_at_end"] = len(kernels)
    except (TimeoutError, AttendeeError, HTTPClientError, OSError, KeyError, ValueError) as exc:
        out["kernel_lost"].append(f"{type(exc).__name__}: {exc}")
    out["failures"] = a.stats.failures + a.stats.timeouts
    return out


async def run_phased(hub: Hub, names: list[str], *, arrive_s: float, step_s: float, spawn_timeout_s: float,
                     think_s: tuple[float, float], notebooks: tuple[str, str], reader: bool,
                     answers: bool = True) -> dict:
    """The room stepping together (see attendee_phases), the reader beside it, the board watched throughout."""
    uids: dict[str, int] = {}
    sampler = Sampler(hub, uids, every_s=2)
    phases = Phases(sampler, set(names))
    room = [Attendee(hub, n, think_s=think_s, stop_at=time.monotonic() + 24 * 3600, notebooks=[],
                     answers=answer_plan(n) if answers else None) for n in names]
    figure_cell = await figure_cell_of(notebooks[0])
    for a in room:
        a.room, a.arrived, a.stepped, a.figure_cell = room, False, False, figure_cell
    gates = {"arrived": asyncio.Event(), "stepped": asyncio.Event()}
    walker = Attendee(hub, reader_name(names), think_s=think_s, stop_at=time.monotonic() + 24 * 3600,
                      notebooks=[], keep_kernels=True) if reader else None
    everyone = room + ([walker] if walker else [])

    async def track() -> None:
        while True:
            for a in everyone:
                try:
                    uids.setdefault(a.name, pwd.getpwnam(account(a.name)).pw_uid)
                except KeyError:
                    pass
            await asyncio.sleep(1)

    watcher = BoardWatcher(hub, names=set(names))  # the room's checks, not the reader's (notebook 60 has some)
    await watcher.start()
    tracker = asyncio.ensure_future(track())
    sampler.task = asyncio.ensure_future(sampler.loop())
    await phases.mark("start")
    t0 = time.monotonic()
    tasks = [asyncio.ensure_future(attendee_phases(a, hub.password, spawn_timeout_s, t0 + arrive_s * i / len(room),
                                                   step_s, gates, notebooks)) for i, a in enumerate(room)]
    walk = asyncio.ensure_future(reader_walk(walker, hub.password, spawn_timeout_s)) if walker else None
    try:
        await gates["arrived"].wait()
        await phases.mark("arrived")
        await gates["stepped"].wait()
        await phases.mark("stepped")
        await asyncio.gather(*tasks)
        await phases.mark("end")
        walked = await walk if walk else None
        checks = [t for a in room for _, _, t in a.stats.checks]
        await asyncio.sleep(3)  # the last checks' posts
    finally:
        for t in [*tasks, *([walk] if walk else [])]:
            t.cancel()
        tracker.cancel()
        sampler.task.cancel()
        watcher.stop()
        for a in everyone:
            a.http.close()
    await asyncio.to_thread(sampler.sample)
    n = len(room)
    stats = [a.stats for a in room]
    mib = 1 << 20
    pss = [v for k, v in sampler.per_attendee_pss.items() if k in names]
    peaks = [v for k, v in sampler.account_peak.items() if k in names]
    latencies = watcher.latencies(checks)
    result = {
        "scenario": "room", "attendees": n, "arrive_s": arrive_s, "step_s": step_s, "notebooks": list(notebooks),
        "figure_cell": figure_cell[:200],
        "servers_started": sum(s.spawn_s is not None for s in stats),
        "spawn_retries_429": sum(s.spawn_retries for s in stats),
        "phases": {},
        "failures": [f"{a.name}: {f}" for a in room for f in a.stats.failures],
        "timeouts": [f"{a.name}: {f}" for a in room for f in a.stats.timeouts],
        "memory_per_attendee_mib": {
            "pss_peak_p50": round(statistics.median(pss) / mib, 1) if pss else None,
            "pss_peak_max": round(max(pss) / mib, 1) if pss else None,
            "cgroup_peak_p50": round(statistics.median(peaks) / mib, 1) if peaks else None,
            "cgroup_peak_max": round(max(peaks) / mib, 1) if peaks else None},
        "memory_hub_rss_peak_mib": round(sampler.hub_rss / mib, 1),
        "memory_min_available_mib": round((sampler.min_available or 0) / mib),
        "board": {"checks": len(checks), "counted": watcher.seen[-1][1] if watcher.seen else 0,
                  "latency_s": {"p50": pct(latencies, 50), "p95": pct(latencies, 95),
                                "max": max(latencies) if latencies else None, "poll_s": watcher.every_s},
                  "rss_peak_mib": round(sampler.board_rss / mib, 1), "watch_errors": watcher.errors[:3]},
        "reader": walked and dict(walked, **{
            "kernels_opened": len(walked["opened"]),
            "pss_peak_mib": round(sampler.per_attendee_pss.get(walked["name"], 0) / mib, 1),
            "cgroup_peak_mib": round((sampler.account_peak.get(walked["name"]) or 0) / mib, 1)}),
        "sampler_errors": sampler.errors[:5],
    }
    for phase, (a, b) in zip(PHASES, (("start", "arrived"), ("arrived", "stepped"), ("stepped", "end"))):
        times = [x for s in stats for x in s.phases.get(phase, [])]
        result["phases"][phase] = {"round_trip_s": {"p50": pct(times, 50), "p95": pct(times, 95),
                                                    "max": max(times) if times else None, "count": len(times)},
                                   **phases.between(a, b, n)}
    result["board"]["cpu_s"] = round(sum(result["phases"][p]["board_cpu_s"] for p in PHASES), 2)
    return result


def reader_name(names: list[str]) -> str:
    return f"{names[0][:-2]}rd"


async def figure_cell_of(notebook: str) -> str:
    """The code of the notebook's first cell that draws (an image or a panel), from the repository's student copy:
    the cell the whole room runs again together."""
    cells = [c for c in json.loads((REPO / "notebooks" / f"{notebook}.ipynb").read_text())["cells"]
             if c["cell_type"] == "code"]
    for c in cells:
        src = "".join(c["source"])
        if re.search(r"\bdraw_|_panel\(|\.plot|figure", src):
            return src
    raise ValueError(f"{notebook}: no figure cell found")


def own_password(name: str) -> str:
    """A simulated attendee's own password (RoomAuthenticator: at least 6 characters, not the room password)."""
    return f"{name}-own-secret"


def remove_accounts(names: list[str], existed: set[str]) -> None:
    """Stop every process of the accounts this run made (by pid), unmount their homes' file systems, then delete
    the accounts and their homes."""
    from vnetlab_hub import unmount_home

    for name in names:
        acct = account(name)
        if acct in existed:
            continue
        try:
            entry = pwd.getpwnam(acct)
        except KeyError:
            continue
        stop_pids([p for p in all_pids() if uid_of(p) == entry.pw_uid], grace_s=5)
        unmount_home(Path(entry.pw_dir))
        subprocess.run(["userdel", "--remove", acct], capture_output=True, timeout=60)


def existing_accounts() -> set[str]:
    return {p.pw_name for p in pwd.getpwall()}


async def delete_hub_users(hub: Hub, names: list[str]) -> None:
    admin = Attendee(hub, ADMIN, think_s=(0, 0), stop_at=0, notebooks=[])
    try:
        await admin.login(hub.admin_password)
        for n in names:
            try:
                await admin.fetch(f"/hub/api/users/{n}/server", "DELETE")
            except AttendeeError:
                pass
            try:
                await admin.fetch(f"/hub/api/users/{n}", "DELETE")
            except AttendeeError:
                pass
    except (AttendeeError, OSError):
        pass
    finally:
        admin.http.close()


def one_run(prefix: Path, n: int, args: argparse.Namespace) -> dict:
    existed = existing_accounts()
    # not under /tmp: each server gets its own /tmp (vnetlab_hub), which would hide homes kept there and leave
    # the kernels' ipc sockets a path too long for a unix socket
    workdir = Path(tempfile.mkdtemp(prefix=f"vnetlab-loadtest-{n}-", dir="/var/lib"))
    names = [f"lt{n}x{i:02d}" for i in range(n)]
    made = names + [reader_name(names)]  # the room scenario's reader too
    notebooks = [nb for nb in NOTEBOOKS if nb[:2] >= args.start_at]
    before = uptime()
    hub = None
    try:
        hub = Hub.start(prefix, workdir, mem_limit=args.mem_limit, cpu_limit=args.cpu_limit,
                        spawn_limit=args.spawn_limit, start_timeout_s=int(args.spawn_timeout))
        if args.scenario == "room":
            result = asyncio.run(run_phased(
                hub, names, arrive_s=args.arrive, step_s=args.step, spawn_timeout_s=args.spawn_timeout,
                think_s=(args.think_min, args.think_max), notebooks=(args.first, args.second),
                reader=not args.no_reader))
        else:
            stats, sampler, machine = asyncio.run(run_room(
                hub, names, duration_s=args.duration, ramp_s=args.ramp, think_s=(args.think_min, args.think_max),
                spawn_timeout_s=args.spawn_timeout, notebooks=notebooks, answers=True))
            result = summarise(n, stats, sampler, machine)
        asyncio.run(delete_hub_users(hub, made))
    finally:
        if hub is not None:
            hub.stop()
        remove_accounts(made, existed)
        left = [p for p in all_pids() if uid_of(p) in {u.pw_uid for u in pwd.getpwall()
                                                       if u.pw_name in {account(x) for x in made}}]
        if hub is not None and hub.log_path is not None and hub.log_path.exists():
            (args.out / "logs").mkdir(parents=True, exist_ok=True)
            shutil.copy(hub.log_path, args.out / "logs" / f"hub-{n}.log")
        shutil.rmtree(workdir, ignore_errors=True)
    result["uptime_before"], result["uptime_after"] = before, uptime()
    result["left_running"] = left
    result["settings"] = {"scenario": args.scenario, "duration_s": args.duration, "ramp_s": args.ramp,
                          "think_s": [args.think_min, args.think_max],
                          "mem_limit": args.mem_limit, "cpu_limit": args.cpu_limit,
                          "spawn_limit": args.spawn_limit, "spawn_timeout_s": args.spawn_timeout,
                          "notebooks": notebooks}
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attendees", type=int, nargs="+", default=[40])
    ap.add_argument("--scenario", choices=["room", "steady"], default="room",
                    help="room: arrive within --arrive s, everyone runs the same cell within --step s, then everyone "
                    "opens the next notebook within --step s (and one attendee opens every notebook, keeping its "
                    "kernels); steady: each works through the notebooks at their own pace for --duration s")
    ap.add_argument("--arrive", type=float, default=300, help="room: everyone arrives within this many seconds")
    ap.add_argument("--step", type=float, default=60, help="room: everyone takes each step within this many seconds")
    ap.add_argument("--first", default=NOTEBOOKS[0], choices=NOTEBOOKS, help="room: the notebook they arrive on")
    ap.add_argument("--second", default=NOTEBOOKS[1], choices=NOTEBOOKS, help="room: the notebook they open next")
    ap.add_argument("--no-reader", action="store_true", help="room: without the attendee who opens every notebook")
    ap.add_argument("--duration", type=float, default=240,
                    help="seconds of work per attendee, counted from their server being ready")
    ap.add_argument("--ramp", type=float, default=30, help="attendees arrive spread over this many seconds")
    ap.add_argument("--think-min", type=float, default=2)
    ap.add_argument("--think-max", type=float, default=4)
    ap.add_argument("--spawn-timeout", type=float, default=300, help="the hub's start timeout too")
    ap.add_argument("--mem-limit", default="1G")
    ap.add_argument("--cpu-limit", type=float, default=1.0)
    ap.add_argument("--spawn-limit", type=int, default=10, help="the hub's concurrent_spawn_limit")
    ap.add_argument("--start-at", default="00", choices=[nb[:2] for nb in NOTEBOOKS],
                    help="the first notebook (a room that starts after the break); later ones follow in order")
    ap.add_argument("--prefix", type=Path, default=Path(os.environ.get("VNETLAB_HUB_PREFIX", "/opt/vnetlab-hub")))
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        ap.error("run as root: the hub makes one Unix account per attendee")
    if any(n < 1 or n > MAX_ATTENDEES for n in args.attendees):
        ap.error(f"--attendees: each N must be 1..{MAX_ATTENDEES}")
    if not (0 < args.duration <= 3600):
        ap.error("--duration must be in (0, 3600] seconds")
    if not (0 <= args.arrive <= 1800 and 0 <= args.step <= 600):
        ap.error("--arrive must be in [0, 1800] and --step in [0, 600] seconds")
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))  # clean up as on Ctrl-C
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.out / f"loadtest-{stamp}.json"
    runs = []
    for n in args.attendees:
        print(f"[loadtest] N={n}: {uptime()}", flush=True)
        result = one_run(args.prefix, n, args)
        runs.append(result)
        print(json.dumps({k: result[k] for k in ("attendees", "servers_started", "first_figure_s", "phases",
                                                 "cell_round_trip_s", "widget_round_trip_s", "board", "reader",
                                                 "memory_per_attendee_mib", "cpu") if k in result}), flush=True)
        if result["failures"] or result["timeouts"]:
            print(f"[loadtest]   failures {len(result['failures'])}, timeouts {len(result['timeouts'])}: "
                  f"{(result['failures'] + result['timeouts'])[:3]}", flush=True)
        write(out, runs)
    print(f"[loadtest] wrote {out}")
    return 0


def write(out: Path, runs: list[dict]) -> None:
    """The results so far (after each N, so an interrupted series keeps what it measured)."""
    out.write_text(json.dumps({"machine": {"cores": os.cpu_count(), "mem_total_mib": mem_total_mib(),
                                           "kernel": os.uname().release, "nice": os.nice(0),
                                           "note": "other work shares this machine: see uptime_before/after"},
                               "runs": runs}, indent=1) + "\n")


def mem_total_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 0


if __name__ == "__main__":
    sys.exit(main())
