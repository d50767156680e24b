"""The workshop hub's spawner: one system account per attendee, their own copy of the student notebooks, and the
per-attendee limits a local process can be held to.

LocalProcessSpawner runs each single-user server as a system user, so every attendee gets a Unix account here
(``vnl-<name>``, made on first start; the prefix keeps a hub name from ever meaning root or an existing account).
Limits: RLIMIT_NPROC (per Unix user, so per attendee), RLIMIT_NOFILE and RLIMIT_AS (per process) from setrlimit, and
memory and CPU per attendee from a cgroup (v2 under /sys/fs/cgroup/vnetlab-hub, or the v1 memory and cpu
hierarchies below the hub's own cgroup) when the machine has one the hub may write; without one, memory and CPU are
not limited and the hub log says so once.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import pwd
import resource
import shutil
import subprocess
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Integer, Unicode

ACCOUNT_PREFIX = "vnl-"
# What JupyterHub accepts as an attendee's name: short, lower case, and a valid Debian user name once prefixed.
USERNAME_PATTERN = r"^[a-z][a-z0-9_-]{0,23}$"
CGROUP_NAME = "vnetlab-hub"


def account(hub_name: str) -> str:
    """The Unix account of a hub user."""
    return ACCOUNT_PREFIX + hub_name


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
    shutil.copytree(src, tmp)
    for path in [tmp, *tmp.rglob("*")]:
        os.chown(path, uid, gid)
    tmp.rename(dest)  # atomic: a copy interrupted half-way is never mistaken for the attendee's work
    return True


def copy_notebooks_once(src: Path, dest: Path, uid: int, gid: int) -> bool:
    """The student notebooks as ``dest/student/`` with the glossary beside them (their ``../glossary.md`` links),
    if ``dest`` does not exist yet; an existing copy is never touched (the attendee's work survives every
    restart). True if it copied."""
    if dest.exists():
        return False
    stage = dest.with_name(dest.name + ".staging")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    shutil.copytree(src, stage / "student")
    if (src.parent / "glossary.md").exists():
        shutil.copy(src.parent / "glossary.md", stage / "glossary.md")
    try:
        return copy_tree_once(stage, dest, uid, gid)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


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

    notebooks_src = Unicode(help="The student notebooks every attendee starts from (copied once).").tag(config=True)
    mpl_cache = Unicode("", help="A prebuilt matplotlib cache copied to each new ~/.cache/matplotlib.").tag(
        config=True)
    workdir_name = Unicode("vnetlab", help="The copy's folder in the attendee's home.").tag(config=True)
    homes = Unicode("/home", help="Where attendees' home folders are made.").tag(config=True)
    max_processes = Integer(256, help="RLIMIT_NPROC for the attendee's Unix user (all their processes).").tag(
        config=True)
    max_open_files = Integer(4096, help="RLIMIT_NOFILE per process.").tag(config=True)
    max_address_space = Integer(8 << 30, help="RLIMIT_AS per process, bytes (0: none).").tag(config=True)

    _cgroup_note_logged = False

    @property
    def account(self) -> str:
        return account(self.user.name)

    def _prepare(self) -> tuple[Path, bool]:
        pw = ensure_account(self.account, Path(self.homes))
        work = Path(pw.pw_dir) / self.workdir_name
        if self.mpl_cache:
            (Path(pw.pw_dir) / ".cache").mkdir(exist_ok=True)
            os.chown(Path(pw.pw_dir) / ".cache", pw.pw_uid, pw.pw_gid)
            copy_tree_once(Path(self.mpl_cache), Path(pw.pw_dir) / ".cache/matplotlib", pw.pw_uid, pw.pw_gid)
        return work, copy_notebooks_once(Path(self.notebooks_src), work, pw.pw_uid, pw.pw_gid)

    async def run_pre_spawn_hook(self) -> object:
        # useradd and the copy in a thread: the hub's event loop keeps serving the rest of the room meanwhile
        work, copied = await asyncio.to_thread(self._prepare)
        if copied:
            self.log.info("copied the student notebooks to %s", work)
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

        def preexec() -> None:
            if cgroup is not None:
                cgroup.join(os.getpid())  # as root, before setuid: the attendee cannot leave it
            for which, value in limits:
                resource.setrlimit(which, (value, value))
            setuid()

        return preexec

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        cgroup = getattr(self, "_cgroup", None)
        if cgroup is not None:
            cgroup.remove()

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        pw = pwd.getpwnam(self.account)
        env.update(USER=self.account, LOGNAME=self.account, HOME=pw.pw_dir, SHELL="/bin/sh")
        return env
