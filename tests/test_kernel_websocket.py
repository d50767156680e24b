"""The kernel websocket the panels' PNGs travel on has TCP_NODELAY set (vnetlab/widgets/server.py).

Without it jupyter_server's TCP holds every small message after the first until the browser acknowledges, and the
browser's delayed ACK waits up to 40 ms (Linux TCP_DELACK_MIN, include/net/tcp.h): a slider step's image waited that
long (measured with tcpdump beside benchmarks/bench_browser_slider.py). The expected value comes from the socket
itself: the test asks the running server's own socket (pidfd_getfd, Linux 5.6) for TCP_NODELAY, in JupyterLab as
the README's open command configures it.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labharness  # noqa: E402

from vnetlab.widgets import server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SYS_PIDFD_GETFD = 438  # include/uapi/asm-generic/unistd.h, the same number on every architecture (Linux 5.6)


def test_every_server_the_workbook_starts_selects_it():
    """The README's open command (its --config file), the workshop hub's single-user servers and Binder's image."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT / "jupyter-settings")).load_config()
    assert config.ServerApp.kernel_websocket_connection_class == server.CLASS_PATH
    hub = (ROOT / "deploy" / "jupyterhub_config.py").read_text()
    assert f'NODELAY = "{server.CLASS_PATH}"' in hub
    assert 'c.Spawner.args = [f"--ServerApp.kernel_websocket_connection_class={NODELAY}"]' in hub
    post = (ROOT / "postBuild").read_text()
    assert json.dumps({"ServerApp": {"kernel_websocket_connection_class": server.CLASS_PATH}}) in post
    module, _, name = server.CLASS_PATH.rpartition(".")
    assert getattr(__import__(module, fromlist=[name]), name) is server.NoDelayKernelWebsocketConnection


def _socket_inode(local_port: int, remote_port: int) -> int | None:
    """The inode of the TCP socket 127.0.0.1:local_port <-> 127.0.0.1:remote_port (/proc/net/tcp, ESTABLISHED)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = (int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16), fields[3])
        if state == "01" and local == local_port and remote == remote_port:
            return int(fields[9])
    return None


def _owner(inode: int) -> tuple[int, int]:
    """(pid, fd) of the process holding socket ``inode``."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid), int(fd)
            except OSError:
                continue
    raise LookupError(f"no process holds socket inode {inode}")


def _their_nodelay(pid: int, fd: int) -> int:
    """TCP_NODELAY of another process's socket: a duplicate of it through pidfd_getfd(2)."""
    pidfd = os.pidfd_open(pid)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        dup = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if dup < 0:
            pytest.fail(f"pidfd_getfd on the server's socket: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(pidfd)
    with socket.socket(fileno=dup) as s:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_the_readme_server_sets_tcp_nodelay_on_kernel_websockets(tmp_path):
    import websocket  # websocket-client, in both locks (jupyter_server's own dependency)

    with labharness.jupyterlab(tmp_path / "home", ROOT, tmp_path / "jupyterlab.log") as lab:
        req = urllib.request.Request(f"{lab.url}/api/kernels", data=b"{}", method="POST",
                                     headers={"Authorization": f"token {lab.token}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            kernel = json.loads(resp.read())
        port = int(lab.url.rsplit(":", 1)[1])
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels"
                                         f"?session_id=nodelay-test&token={lab.token}", timeout=60)
        try:
            inode = _socket_inode(port, ws.sock.getsockname()[1])
            assert inode is not None, "the websocket's server-side socket is not in /proc/net/tcp"
            pid, fd = _owner(inode)
            deadline = time.monotonic() + 30  # set when the server connects the channels (after the handshake)
            while (nodelay := _their_nodelay(pid, fd)) == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert nodelay == 1, "the server's kernel websocket has Nagle's algorithm on (TCP_NODELAY unset)"
        finally:
            ws.close()
            lab.api(f"/api/kernels/{kernel['id']}", method="DELETE")
