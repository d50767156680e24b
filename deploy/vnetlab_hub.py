"""The workshop hub's parts: the room's login (a name is claimed by the first person who logs in with it), the
spawner (one system account per attendee, their own copy of the student notebooks, their own size-limited home file
system, private kernels and /tmp, and the per-attendee limits a local process can be held to), and the proxy's
supervision. Run as a script it is the instructor's command line (``deploy/hub.sh reset-password NAME``).

LocalProcessSpawner runs each single-user server as a system user, so every attendee gets a Unix account here
(``vnl-<name>``, made on first start; the prefix keeps a hub name from ever meaning root or an existing account).
Limits: RLIMIT_NPROC (per Unix user, so per attendee), RLIMIT_NOFILE and RLIMIT_AS (per process) from setrlimit, and
memory and CPU per attendee from a cgroup (v2 under /sys/fs/cgroup/vnetlab-hub, or the v1 memory and cpu
hierarchies below the hub's own cgroup) when the machine has one the hub may write; without one, memory and CPU are
not limited and the hub log says so once.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import hashlib
import hmac
import inspect
import os
import pwd
import resource
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from jupyterhub.proxy import ConfigurableHTTPProxy
from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from tornado import web
from traitlets import Bool, Float, Integer, Unicode, default

ACCOUNT_PREFIX = "vnl-"
# What JupyterHub accepts as an attendee's name: short, lower case, and a valid Debian user name once prefixed.
USERNAME_PATTERN = r"^[a-z][a-z0-9_-]{0,23}$"
CGROUP_NAME = "vnetlab-hub"


def account(hub_name: str) -> str:
    """The Unix account of a hub user."""
    return ACCOUNT_PREFIX + hub_name


# ------------------------------------------------------------------------------------------------------------
# The room's login: a name belongs to the first person who logs in with it (with the room's password), and from
# then on only to whoever knows the password that person chose.

# scrypt at n=2**14, r=8: 16 MiB and tens of milliseconds per check (run in a thread, off the hub's event loop)
SCRYPT = {"n": 1 << 14, "r": 8, "p": 1, "maxmem": 64 << 20, "dklen": 32}


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, **SCRYPT)
    return f"scrypt${SCRYPT['n']}${SCRYPT['r']}${SCRYPT['p']}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    _, n, r, p, salt, digest = stored.split("$")
    params = dict(SCRYPT, n=int(n), r=int(r), p=int(p))
    return hmac.compare_digest(hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), **params).hex(), digest)


class Claims:
    """Who holds which name: one row per claimed (normalized) name, in a SQLite file in the hub's state folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("CREATE TABLE IF NOT EXISTS claims (name TEXT PRIMARY KEY, hash TEXT NOT NULL, claimed REAL)")
        os.chmod(self.path, 0o600)
        return db

    def get(self, name: str) -> str | None:
        with self._db() as db:
            row = db.execute("SELECT hash FROM claims WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def claim(self, name: str, password: str) -> bool:
        """Record ``name`` as held by ``password``; False if someone holds it already (the first claim wins)."""
        try:
            with self._db() as db:
                db.execute("INSERT INTO claims VALUES (?, ?, ?)", (name, hash_password(password), time.time()))
            return True
        except sqlite3.IntegrityError:
            return False

    def release(self, name: str) -> bool:
        """Forget who holds ``name`` (a forgotten password): the next login with the room password claims it."""
        with self._db() as db:
            return db.execute("DELETE FROM claims WHERE name = ?", (name,)).rowcount > 0

    def names(self) -> list[str]:
        with self._db() as db:
            return [r[0] for r in db.execute("SELECT name FROM claims ORDER BY name")]


class RoomAuthenticator(SharedPasswordAuthenticator):
    """Attendees pick a name and their own password; the room's password (``user_password``) is needed only to
    claim a name nobody holds yet. Names are case-folded before anything (JupyterHub's normalize_username), so "Bob"
    is "bob" and meets bob's password. A failed login is answered after ``failed_login_delay`` seconds, and the
    attempts on one name are checked one at a time, so guessing costs that delay per guess while the rest of the
    room's logins go on. The instructor (``admin_users``) logs in with ``admin_password``."""

    claims_file = Unicode(help="The SQLite file of claimed names (in the hub's state folder).").tag(config=True)
    failed_login_delay = Float(1.0, help="Seconds before a failed login is answered.").tag(config=True)
    min_password_length = Integer(6, help="The shortest password an attendee may choose.").tag(config=True)

    @default("request_otp")
    def _default_request_otp(self) -> bool:
        return True  # the login form's third field: the room password, needed when claiming a name

    @default("otp_prompt")
    def _default_otp_prompt(self) -> str:
        return "Room password (only the first time you use a name):"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._queues: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @property
    def claims(self) -> Claims:
        return Claims(Path(self.claims_file))

    def _check(self, name: str, password: str, room: str) -> str | None:
        """None if ``password`` opens ``name`` (claiming it if free), else the reason to show."""
        stored = self.claims.get(name)
        if stored is not None:
            if password_matches(password, stored):
                return None
            return (f"The name '{name}' is taken (names ignore case), and that is not its password. If it is yours, "
                    "try again; if not, choose another name. A forgotten password: ask the instructor to reset it.")
        if not (self.user_password and hmac.compare_digest(room.encode(), self.user_password.encode())):
            return (f"'{name}' is a new name: to claim it, give the room password in the third field, and a "
                    "password of your own in the second.")
        if hmac.compare_digest(password.encode(), room.encode()):
            return "Choose a password of your own, not the room password (everyone in the room knows that one)."
        if len(password) < self.min_password_length:
            return f"Choose a password of at least {self.min_password_length} characters for '{name}'."
        if not self.claims.claim(name, password):
            return f"Someone claimed '{name}' a moment ago: choose another name."
        self.log.info("name %s claimed", name)
        return None

    async def authenticate(self, handler: object, data: dict) -> dict | None:
        name = self.normalize_username(data.get("username", ""))
        password, room = data.get("password", ""), data.get("otp", "")
        if not name:
            raise web.HTTPError(403, "Type a name.")
        if name in self.admin_users:
            ok = bool(self.admin_password) and hmac.compare_digest(password.encode(), self.admin_password.encode())
            why = None if ok else "Invalid username or password"
        elif not self.validate_username(name):
            raise web.HTTPError(403, "Not a name the hub accepts: a letter, then up to 23 lower-case letters, digits, "
                                     "'-' or '_'.")
        else:
            why = ""
        lock, waiting = self._queues.setdefault(name, (asyncio.Lock(), [0]))
        waiting[0] += 1
        try:
            async with lock:  # one attempt at a time per name: parallel guesses queue behind each other's delay
                if why == "":
                    why = await asyncio.to_thread(self._check, name, password, room)
                if why is None:
                    return {"name": name, "admin": name in self.admin_users, "groups": []}
                self.log.warning("failed login as %s", name)
                await asyncio.sleep(self.failed_login_delay)
        finally:
            waiting[0] -= 1
            if not waiting[0]:
                self._queues.pop(name, None)
        raise web.HTTPError(403, why)

    def delete_user(self, user: object) -> None:
        """The admin page's "delete user" frees the name too (the attendee's Unix account and files stay)."""
        self.claims.release(user.name)
        return super().delete_user(user)


# ------------------------------------------------------------------------------------------------------------
# The proxy: started by the hub and stopped with it


class WorkshopProxy(ConfigurableHTTPProxy):
    """configurable-http-proxy as JupyterHub runs it, with one fix: after the hub restarted a crashed proxy, the
    first proxy's health check kept running beside the new one's, and at shutdown it saw the stopped proxy and
    started another (jupyterhub/proxy.py, check_running and start, 6.1): that proxy outlived the hub."""

    _stopping = False

    async def start(self) -> None:
        if self._check_running_callback is not None:
            self._check_running_callback.stop()
        await super().start()

    def stop(self) -> None:
        self._stopping = True
        super().stop()

    async def check_running(self) -> None:
        if not self._stopping:
            await super().check_running()


def ensure_account(name: str, homes: Path) -> pwd.struct_passwd:
    """The attendee's Unix account, made (no password, no login shell) if missing; its home readable by it alone
    (useradd's mode follows login.defs, 0755 on some systems: attendees would read each other's answers)."""
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        homes.mkdir(parents=True, exist_ok=True)
        subprocess.run(["useradd", "--create-home", "--home-dir", str(homes / name), "--shell", "/usr/sbin/nologin",
                        "--user-group", "--comment", "vnetlab workshop attendee", name], check=True, timeout=30)
        pw = pwd.getpwnam(name)
    os.chmod(pw.pw_dir, 0o700)
    return pw


def copy_tree_once(src: Path, dest: Path, uid: int, gid: int) -> bool:
    """Copy ``src`` to ``dest`` if ``dest`` does not exist yet, owned by the attendee. True if it copied."""
    if dest.exists() or not src.is_dir():
        return False
    tmp = dest.with_name(dest.name + ".copying")
    shutil.rmtree(tmp, ignore_errors=True)
    # never the checkpoints JupyterLab left in the instructor's checkout: they are not the attendee's work
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in [tmp, *tmp.rglob("*")]:
        os.chown(path, uid, gid)
    tmp.rename(dest)  # atomic: a copy interrupted half-way is never mistaken for the attendee's work
    return True


def attendee_files(src: Path) -> list[Path]:
    """What an attendee gets of ``src`` (the repository's notebooks/): the attendees' copies ``NN_name.ipynb`` and
    the glossary they link; never ``solved/`` (the instructors' copies) nor any other folder."""
    return [*sorted(src.glob("[0-9][0-9]_*.ipynb")), *([src / "glossary.md"] if (src / "glossary.md").exists() else [])]


def copy_notebooks_once(src: Path, dest: Path, uid: int, gid: int) -> bool:
    """The attendees' notebooks of ``src`` (notebooks/) and the glossary beside them as ``dest/``, if ``dest`` does
    not exist yet; an existing copy is never touched (the attendee's work survives every restart). True if it
    copied."""
    if dest.exists():
        return False
    stage = dest.with_name(dest.name + ".staging")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    for path in attendee_files(src):
        shutil.copy(path, stage / path.name)
    try:
        return copy_tree_once(stage, dest, uid, gid)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------------
# An attendee's disk: their home is a file system of its own (an ext4 image, loop-mounted), so filling it fills
# nothing else; /tmp and /var/tmp are bind mounts of a folder in it, in the server's own mount namespace.

def parse_size(text: str) -> int:
    """'1G', '512M', '0' -> bytes (powers of 1024, as memory.max reads them)."""
    text = text.strip().upper().rstrip("B").rstrip("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def mount_home(image: Path, home: Path, size: int, uid: int, gid: int) -> str:
    """Mount the attendee's own ext4 file system of ``size`` bytes on ``home``, made on first use. Returns what it
    did; a home that already holds a copy of the notebooks but has no image (made before homes had their own file
    system) is left as it is, so nothing hides the attendee's work."""
    if os.path.ismount(home):
        return "already mounted"
    if not image.exists():
        if (home / "vnetlab").exists():
            return "not mounted: the home holds work from before homes had their own file system"
        image.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(image.parent, 0o700)
        tmp = image.with_name(image.name + ".new")
        with open(tmp, "wb") as f:
            f.truncate(size)  # sparse: the disk holds what the attendee writes, at most ``size``
        # -m 0: no blocks reserved for root (nobody but the attendee writes here); root_owner: the top folder's owner
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"root_owner={uid}:{gid}", str(tmp)],
                       check=True, timeout=120, capture_output=True)
        tmp.rename(image)
    subprocess.run(["mount", "-o", "loop,nodev,nosuid", str(image), str(home)], check=True, timeout=60,
                   capture_output=True)
    os.chmod(home, 0o700)
    return f"mounted {image} ({size >> 20} MiB)"


def unmount_home(home: Path) -> None:
    """Detach the home's file system (lazily: a process still in it keeps it until it exits)."""
    if os.path.ismount(home):
        subprocess.run(["umount", "--lazy", str(home)], timeout=60, capture_output=True)


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x00020000, 0x1000, 0x4000, 1 << 18  # <linux/sched.h>, <linux/mount.h>


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def private_tmp(folder: str, keep: tuple[str, ...] = ()) -> None:
    """In a new mount namespace (this process and its children only), bind ``folder`` over /tmp and /var/tmp;
    ``keep``: folders under /tmp the server itself needs (its environment in a checkout there), bound back in."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    held = [(k, os.open(k, os.O_PATH | os.O_DIRECTORY)) for k in keep]  # reachable once /tmp is covered
    _check(_libc.mount(folder.encode(), b"/tmp", None, MS_BIND, None), f"mount --bind {folder} /tmp")
    for k, fd in held:
        os.makedirs(k, exist_ok=True)
        _check(_libc.mount(f"/proc/self/fd/{fd}".encode(), k.encode(), None, MS_BIND | MS_REC, None),
               f"mount --bind {k} (kept visible under the private /tmp)")
        os.close(fd)
    if os.path.isdir("/var/tmp"):  # from /tmp: ``folder`` may itself lie under /tmp, hidden now
        _check(_libc.mount(b"/tmp", b"/var/tmp", None, MS_BIND, None), "mount --bind /tmp /var/tmp")


def can_private_tmp() -> bool:
    """Whether this machine lets the hub give a process its own mount namespace (a container may not)."""
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True, timeout=30).returncode == 0


class Cgroup:
    """One attendee's cgroup: memory and CPU limits, and the file a new process writes its pid to."""

    def __init__(self, procs_files: list[Path]) -> None:
        self.procs_files = procs_files

    def join(self, pid: int) -> None:
        for f in self.procs_files:
            f.write_text(str(pid))

    def remove(self) -> None:
        for f in self.procs_files:
            try:
                f.parent.rmdir()
            except OSError:
                pass  # a process still in it (or already gone): the next start reuses it


def _own_cgroup_v1(controller: str) -> str | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return None


def make_cgroup(name: str, mem_bytes: int, cpu_millicores: int) -> tuple[Cgroup | None, str]:
    """An attendee's cgroup with ``mem_bytes`` of memory and ``cpu_millicores`` of CPU, or None and why not."""
    period = 100_000
    quota = period * cpu_millicores // 1000
    v2 = Path("/sys/fs/cgroup")
    try:
        if (v2 / "cgroup.controllers").exists() and "memory" in (v2 / "cgroup.controllers").read_text().split():
            parent = v2 / CGROUP_NAME
            parent.mkdir(exist_ok=True)
            (v2 / "cgroup.subtree_control").write_text("+memory +cpu")
            (parent / "cgroup.subtree_control").write_text("+memory +cpu")
            group = parent / name
            group.mkdir(exist_ok=True)
            (group / "memory.max").write_text(str(mem_bytes))
            (group / "memory.swap.max").write_text("0")
            (group / "cpu.max").write_text(f"{quota} {period}")
            return Cgroup([group / "cgroup.procs"]), f"cgroup v2 {group}"
        mem_rel, cpu_rel = _own_cgroup_v1("memory"), _own_cgroup_v1("cpu")
        mem_root, cpu_root = v2 / "memory", v2 / "cpu"
        if mem_rel is None or cpu_rel is None or not (mem_root / "cgroup.procs").exists():
            return None, "no writable cgroup v2 memory controller or v1 memory and cpu hierarchies"
        mem = mem_root / mem_rel.lstrip("/") / CGROUP_NAME / name
        cpu = cpu_root / cpu_rel.lstrip("/") / CGROUP_NAME / name
        mem.mkdir(parents=True, exist_ok=True)
        cpu.mkdir(parents=True, exist_ok=True)
        (mem / "memory.limit_in_bytes").write_text(str(mem_bytes))
        (cpu / "cpu.cfs_period_us").write_text(str(period))
        (cpu / "cpu.cfs_quota_us").write_text(str(quota))
        return Cgroup([mem / "cgroup.procs", cpu / "cgroup.procs"]), f"cgroup v1 {mem} and {cpu}"
    except OSError as exc:
        return None, f"cgroups not writable here ({exc})"


class WorkshopSpawner(LocalProcessSpawner):
    """LocalProcessSpawner for workshop attendees: account, notebooks copied once, limits."""

    notebooks_src = Unicode(help="The folder of the attendees' notebooks every attendee starts from (copied once, "
                                 "without its solved/).").tag(config=True)
    mpl_cache = Unicode("", help="A prebuilt matplotlib cache copied to each new ~/.cache/matplotlib.").tag(
        config=True)
    workdir_name = Unicode("vnetlab", help="The copy's folder in the attendee's home.").tag(config=True)
    homes = Unicode("/home", help="Where attendees' home folders are made.").tag(config=True)
    max_processes = Integer(256, help="RLIMIT_NPROC for the attendee's Unix user (all their processes).").tag(
        config=True)
    max_open_files = Integer(4096, help="RLIMIT_NOFILE per process.").tag(config=True)
    max_address_space = Integer(8 << 30, help="RLIMIT_AS per process, bytes (0: none).").tag(config=True)
    home_size = Unicode("1G", help="Each home's own file system, e.g. 1G ('0': homes share the machine's).").tag(
        config=True)
    home_images = Unicode(help="Where the homes' file system images are kept (root only).").tag(config=True)
    private_tmp = Bool(True, help="/tmp and /var/tmp of each server: a folder in its home, in its own mount "
                                  "namespace (where the machine allows one).").tag(config=True)

    _cgroup_note_logged = False
    _private_tmp_ok: bool | None = None

    @property
    def account(self) -> str:
        return account(self.user.name)

    def _prepare(self) -> tuple[Path, bool]:
        pw = ensure_account(self.account, Path(self.homes))
        home = Path(pw.pw_dir)
        size = parse_size(self.home_size) if self.home_size else 0
        if size:
            self.log.info("%s's home: %s", self.account,
                          mount_home(Path(self.home_images) / f"{self.account}.ext4", home, size, pw.pw_uid,
                                     pw.pw_gid))
        if WorkshopSpawner._private_tmp_ok is None:
            WorkshopSpawner._private_tmp_ok = self.private_tmp and can_private_tmp()
            if self.private_tmp and not WorkshopSpawner._private_tmp_ok:
                self.log.warning("no mount namespaces here: attendees share the machine's /tmp")
        # a home under /tmp (a test's, a load test's) would vanish beneath its own /tmp: those keep the machine's;
        # the server's own environment under /tmp (a checkout there, as a CI clone) is bound back in (private_tmp)
        server = [Path(a).resolve() for a in self.cmd if a.startswith("/")]
        self._tmp_private = WorkshopSpawner._private_tmp_ok and not any(
            p.is_relative_to(t) for p in (home.resolve(), *server) for t in ("/var/tmp",)) \
            and not home.resolve().is_relative_to("/tmp")
        self._tmp_keep = tuple(sorted({"/tmp/" + p.relative_to("/tmp").parts[0] for p in server
                                       if p.is_relative_to("/tmp")}))
        for sub in (".tmp", ".tmp/jupyter-runtime"):
            (home / sub).mkdir(mode=0o700, exist_ok=True)
            os.chown(home / sub, pw.pw_uid, pw.pw_gid)
        if not self._tmp_private:
            # the kernels' ipc sockets then need a short path of their own (a unix socket's is at most 107 bytes)
            RUNTIME_FALLBACK.mkdir(mode=0o755, parents=True, exist_ok=True)
            own = RUNTIME_FALLBACK / self.account
            own.mkdir(mode=0o700, exist_ok=True)
            os.chown(own, pw.pw_uid, pw.pw_gid)
        work = home / self.workdir_name
        if self.mpl_cache:
            (Path(pw.pw_dir) / ".cache").mkdir(exist_ok=True)
            os.chown(Path(pw.pw_dir) / ".cache", pw.pw_uid, pw.pw_gid)
            copy_tree_once(Path(self.mpl_cache), Path(pw.pw_dir) / ".cache/matplotlib", pw.pw_uid, pw.pw_gid)
        return work, copy_notebooks_once(Path(self.notebooks_src), work, pw.pw_uid, pw.pw_gid)

    async def run_pre_spawn_hook(self) -> object:
        # useradd and the copy in a thread: the hub's event loop keeps serving the rest of the room meanwhile
        work, copied = await asyncio.to_thread(self._prepare)
        if copied:
            self.log.info("copied the attendees' notebooks to %s", work)
        self.notebook_dir = str(work)
        mem, millicores = self.mem_limit or 0, int((self.cpu_limit or 0) * 1000)
        self._cgroup, why = (make_cgroup(self.account, mem, millicores) if mem and millicores
                             else (None, "Spawner.mem_limit or cpu_limit unset"))
        if self._cgroup is None and not WorkshopSpawner._cgroup_note_logged:
            self.log.warning("attendees' memory and CPU are NOT limited: %s", why)
            WorkshopSpawner._cgroup_note_logged = True
        elif self._cgroup is not None:
            self.log.info("%s limited to %d MiB, %d millicores: %s", self.account, mem >> 20, millicores, why)
        result = super().run_pre_spawn_hook()
        return await result if inspect.isawaitable(result) else result

    def make_preexec_fn(self, name: str) -> object:
        setuid = set_user_setuid(self.account)
        cgroup = getattr(self, "_cgroup", None)
        limits = [(resource.RLIMIT_NPROC, self.max_processes), (resource.RLIMIT_NOFILE, self.max_open_files)]
        if self.max_address_space:
            limits.append((resource.RLIMIT_AS, self.max_address_space))

        tmp = str(Path(pwd.getpwnam(self.account).pw_dir) / ".tmp") if getattr(self, "_tmp_private", False) else None
        keep = getattr(self, "_tmp_keep", ())

        def preexec() -> None:
            if cgroup is not None:
                cgroup.join(os.getpid())  # as root, before setuid: the attendee cannot leave it
            for which, value in limits:
                resource.setrlimit(which, (value, value))
            if tmp is not None:
                private_tmp(tmp, keep)  # as root, before setuid: the server and its kernels see their own /tmp
            setuid()

        return preexec

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        cgroup = getattr(self, "_cgroup", None)
        if cgroup is not None:
            cgroup.remove()
        try:
            home = Path(pwd.getpwnam(self.account).pw_dir)
        except KeyError:
            return
        await asyncio.to_thread(unmount_home, home)  # mounted again at the next start

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        pw = pwd.getpwnam(self.account)
        env.update(USER=self.account, LOGNAME=self.account, HOME=pw.pw_dir, SHELL="/bin/sh")
        # the kernels' ZeroMQ sockets (--KernelManager.transport=ipc) and connection files: in the attendee's own
        # /tmp when it has one (a short path: a unix socket's is at most 107 bytes), else in their private home
        private = getattr(self, "_tmp_private", False)
        runtime = "/tmp/jupyter-runtime" if private else str(RUNTIME_FALLBACK / self.account)
        env.update(JUPYTER_RUNTIME_DIR=runtime, TMPDIR="/tmp" if private else f"{pw.pw_dir}/.tmp")
        return env


# Where an attendee without a private /tmp keeps the kernels' ipc sockets: a short path (sun_path is 108 bytes), a
# directory per account, mode 0700 (others cannot connect to its sockets)
RUNTIME_FALLBACK = Path("/run/vnetlab-hub")


# ------------------------------------------------------------------------------------------------------------
# The instructor's command line

def _pids_of(uid: int) -> list[int]:
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.stat(f"/proc/{p}").st_uid == uid:
                out.append(int(p))
        except OSError:
            pass
    return out


def _signal_and_wait(pids: list[int], grace_s: float) -> None:
    """SIGTERM, then SIGKILL whatever is still there after ``grace_s``."""
    for sig, wait in ((15, grace_s), (9, 5)):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.2)


def attendee_accounts(homes: Path) -> list[pwd.struct_passwd]:
    """The hub's attendee accounts: the prefix, and a home folder in ``homes``."""
    return [pw for pw in pwd.getpwall() if pw.pw_name.startswith(ACCOUNT_PREFIX)
            and Path(pw.pw_dir).parent == homes.resolve()]


def stop_everything(state: Path, homes: Path) -> int:
    """The hub (by its pid file; its proxy and culler end with it), then every process of every attendee account
    with a home in ``homes``, and their home file systems are unmounted. Files stay."""
    hub = None
    try:
        hub = int((state / "jupyterhub.pid").read_text())
        if b"jupyterhub" not in Path(f"/proc/{hub}/cmdline").read_bytes():
            hub = None  # a stale pid file: that number is some other process now
    except (OSError, ValueError):
        pass
    if hub:
        print(f"stopping the hub (pid {hub})")
        _signal_and_wait([hub], 30)
    for pw in attendee_accounts(homes):
        pids = _pids_of(pw.pw_uid)
        if pids:
            print(f"stopping {pw.pw_name}: {len(pids)} processes")
            _signal_and_wait(pids, 10)
        unmount_home(Path(pw.pw_dir))
    return 0

CLAIMS_FILE = "claims.sqlite"  # in the hub's state folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="The workshop hub's names (run as root: deploy/hub.sh NAME-COMMAND).")
    ap.add_argument("--state", default=os.environ.get("VNETLAB_HUB_STATE", "/opt/vnetlab-hub/state"),
                    help="the hub's state folder (VNETLAB_HUB_STATE)")
    sub = ap.add_subparsers(dest="command", required=True)
    reset = sub.add_parser("reset-password", help="free a name whose attendee forgot the password")
    reset.add_argument("name")
    sub.add_parser("names", help="list the claimed names")
    sub.add_parser("stop", help="stop the hub and every attendee's server and kernels (files stay)")
    args = ap.parse_args(argv)
    if args.command == "stop":
        return stop_everything(Path(args.state), Path(os.environ.get("VNETLAB_HUB_HOMES", "/home")))
    claims = Claims(Path(args.state) / CLAIMS_FILE)
    if args.command == "names":
        print("\n".join(claims.names()))
        return 0
    name = args.name.strip().lower()  # as the login folds it (Authenticator.normalize_username)
    if not claims.release(name):
        print(f"nobody holds the name '{name}' (claimed names: deploy/hub.sh names)", file=sys.stderr)
        return 1
    print(f"'{name}' is free again: its attendee logs in with that name, the room password in the third field and "
          "a new password of their own; their files are kept. Until then, anyone with the room password could "
          "claim it: tell them now.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
