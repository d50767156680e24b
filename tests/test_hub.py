"""The workshop hub (deploy/): started as deploy/hub.sh starts it, on loopback, with two attendees who each log in,
start their server, run notebook 10 of their own student copy to its first figure and first panel, and move one of
the panel's controls until its new image arrives; then everything is stopped by process id and the accounts are
removed. Needs root (one Unix account per attendee), node and the installed hub (`deploy/hub.sh install`, which
.ci/run runs with VNETLAB_HUB_PREFIX=.hub); skips with the reason otherwise, and conftest's CI rule fails that skip
where the machine can run it."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "deploy"))

PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", REPO / ".hub"))
NOTEBOOK = "10_receive_buffers_and_memory_layout"  # its first panel comes after its first figure


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


@pytest.mark.hub
def test_copy_notebooks_once_never_overwrites(tmp_path):
    hub_or_skip()
    _, vnetlab_hub = hub_modules()
    dest = tmp_path / "home" / "vnetlab"
    dest.parent.mkdir()
    uid, gid = os.getuid(), os.getgid()
    assert vnetlab_hub.copy_notebooks_once(REPO / "notebooks/student", dest, uid, gid)
    assert sorted(p.name for p in (dest / "student").glob("*.ipynb")) == sorted(
        p.name for p in (REPO / "notebooks/student").glob("*.ipynb"))
    assert (dest / "glossary.md").read_text() == (REPO / "notebooks/glossary.md").read_text()  # ../glossary.md links
    work = dest / "student" / f"{NOTEBOOK}.ipynb"
    work.write_text("the attendee's work")
    assert not vnetlab_hub.copy_notebooks_once(REPO / "notebooks/student", dest, uid, gid)
    assert work.read_text() == "the attendee's work"


@pytest.mark.hub
def test_two_attendees_reach_a_figure_and_move_a_control():
    hub_or_skip()
    loadtest, vnetlab_hub = hub_modules()
    existed = loadtest.existing_accounts()
    names = ["citest-a", "citest-b"]
    workdir = Path(tempfile.mkdtemp(prefix="vnetlab-hubtest-"))
    hub = None
    try:
        hub = loadtest.Hub.start(PREFIX, workdir)

        async def room():
            attendees = [loadtest.Attendee(hub, n, think_s=(0.2, 0.5), stop_at=loadtest.time.monotonic() + 150,
                                           notebooks=[NOTEBOOK], first_figure_only=True) for n in names]
            try:
                return await asyncio.wait_for(asyncio.gather(*(a.run(hub.password, 90) for a in attendees)), 170)
            finally:
                for a in attendees:
                    a.http.close()

        stats = asyncio.run(room())
        listening = listeners(hub, names, loadtest)
        for name, st in zip(names, stats):
            assert not st.failures and not st.timeouts, f"{name}: {st.failures + st.timeouts}\n{hub.log_tail()}"
            assert st.spawn_s is not None, f"{name}'s server did not start"
            assert st.first_figure_s is not None, f"{name} saw no figure in {NOTEBOOK}"
            assert len(st.widgets) == 1, f"{name}: moving a control gave no new image"
            home = Path(pwd.getpwnam(vnetlab_hub.account(name)).pw_dir)
            assert home.stat().st_mode & 0o077 == 0, f"{home} is open to other attendees"
            assert (home / "vnetlab/student" / f"{NOTEBOOK}.ipynb").stat().st_uid == pwd.getpwnam(
                vnetlab_hub.account(name)).pw_uid
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
    finally:
        if hub is not None:
            hub.stop()
        loadtest.remove_accounts(names, existed)
        shutil.rmtree(workdir, ignore_errors=True)
    left = {n for n in names if vnetlab_hub.account(n) in loadtest.existing_accounts()}
    assert not left, f"accounts left behind: {left}"


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
