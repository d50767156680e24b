"""The live labs without root: a child process in new user, network and mount namespaces of its own.

``unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS)`` (kernel/fork.c ksys_unshare) gives an ordinary user's
process every capability over the namespaces it creates (user_namespaces(7)): it maps itself to uid 0 there
(/proc/self/uid_map, gid_map after "deny" in setgroups), mounts a tmpfs on /run in its own mount namespace so
that ``ip netns add`` can bind its namespaces under /run/netns, and then runs the same labs as root does
(:class:`~vnetlab.live.lab.Lab`). Those namespaces are reachable only through the child's mounts and processes,
so they all go when it exits, however it exits (an error, a timeout, Jupyter's interrupt, SIGKILL); the child also
asks to be killed when its parent dies (prctl PR_SET_PDEATHSIG).

What the kernel keeps for the initial user namespace stays refused: loading an XDP program needs CAP_BPF there
(kernel/bpf/syscall.c bpf_prog_load: bpf_token_capable(token, CAP_BPF)), so the XDP configurations of
:func:`~vnetlab.live.experiments.veth_gro_lab` are left out and shown from the recorded run.

The parent (a notebook's kernel) never unshares: unshare(CLONE_NEWUSER) refuses a multi-threaded process (EINVAL),
and the namespaces must not outlive the experiment. Run as ``python -m vnetlab.live.userns --probe`` or
``--run mirror,udp_segment,...``; the child prints one JSON document on its last stdout line.
"""

from __future__ import annotations

import errno as _errno
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from typing import Any

from vnetlab.checks import public

# include/uapi/linux/sched.h
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
# include/uapi/linux/mount.h
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x4000, 1 << 18
# include/uapi/linux/prctl.h
_PR_SET_PDEATHSIG = 1

#: Seconds one child may take (building every lab of notebook 60 takes about 10 s on a quiet machine).
CHILD_TIMEOUT = 300.0
#: Seconds the probe may take.
PROBE_TIMEOUT = 30.0

_SYSCTLS = {
    "unprivileged_userns_clone": "/proc/sys/kernel/unprivileged_userns_clone",
    "max_user_namespaces": "/proc/sys/user/max_user_namespaces",
    "apparmor_restrict": "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
}


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


@public
def explain(stage: str, err: int | None, detail: str = "", sysctls: dict[str, str | None] | None = None) -> str:
    """One line: why an ordinary user cannot build the labs in user namespaces here, naming the sysctl or policy.

    ``stage`` is what failed ("unshare", "uid_map", "mount", "ip netns add", ...), ``err`` its errno;
    ``sysctls`` the values read (default: this machine's, as this user namespace sees them)."""
    if sysctls is None:
        sysctls = {k: _read(p) for k, p in _SYSCTLS.items()}
    if sysctls.get("unprivileged_userns_clone") == "0":
        return ("kernel.unprivileged_userns_clone is 0 (Debian's switch for unprivileged user namespaces; as root, "
                "sysctl -w kernel.unprivileged_userns_clone=1 allows them)")
    if sysctls.get("max_user_namespaces") == "0":
        return ("user.max_user_namespaces is 0: no user namespace may be created (as root, "
                "sysctl -w user.max_user_namespaces=15000 allows them)")
    if sysctls.get("apparmor_restrict") == "1":
        return ("Ubuntu's AppArmor policy restricts unprivileged user namespaces "
                "(kernel.apparmor_restrict_unprivileged_userns = 1: the new namespace gets no capabilities; an "
                "AppArmor profile with `userns,` for this python, or that sysctl set to 0 as root, allows them)")
    name = _errno.errorcode.get(err, str(err)) if err else ""
    if err == _errno.ENOSPC:
        return (f"{stage} failed with ENOSPC: the limit on user namespaces is reached (user.max_user_namespaces = "
                f"{sysctls.get('max_user_namespaces')})")
    if stage == "unshare" and err in (_errno.EPERM, _errno.EACCES):
        return (f"unshare(CLONE_NEWUSER) failed with {name}: a container's seccomp profile or a security module "
                "refuses user namespaces here")
    what = f"{stage} failed" + (f" with {name}" if name else "") + (f": {detail}" if detail else "")
    return what


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _fail(stage: str, err: int, detail: str = "") -> None:
    print(json.dumps({"ok": False, "stage": stage, "errno": err, "detail": detail}))
    sys.stdout.flush()
    os._exit(3)


def _write(path: str, text: str, stage: str) -> None:
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
    except FileNotFoundError:
        if not path.endswith("setgroups"):  # no setgroups file before Linux 3.19: nothing to deny
            raise
    except OSError as exc:
        _fail(stage, exc.errno or 0, str(exc))


def enter() -> None:
    """In the child, before any thread starts: new user, network and mount namespaces, uid and gid 0 mapped to
    the caller's, a private tmpfs on /run with /run/netns for ``ip netns``."""
    import ctypes

    libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the parent, and the namespaces with us
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0:
        _fail("unshare", ctypes.get_errno())
    _write("/proc/self/setgroups", "deny", "setgroups")
    _write("/proc/self/uid_map", f"0 {uid} 1", "uid_map")
    _write("/proc/self/gid_map", f"0 {gid} 1", "gid_map")
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    # nothing mounted here may reach the parent's mount namespace
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        _fail("mount --make-rprivate /", ctypes.get_errno())
    if libc.mount(b"tmpfs", b"/run", b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755") != 0:
        _fail("mount tmpfs on /run", ctypes.get_errno())
    os.mkdir("/run/netns")
    import vnetlab.live.commands as commands

    commands.DIE_WITH_PARENT = True  # the `ip` and `ethtool` it runs die with it, and release its namespaces


def _namespace_inodes() -> list[int]:
    return sorted(os.stat(os.path.join("/run/netns", n)).st_ino for n in os.listdir("/run/netns"))


def _child(argv: list[str]) -> None:
    enter()
    from vnetlab.live.commands import COMMAND_TIMEOUT, run

    if argv[:1] == ["--probe"]:
        from vnetlab.errors import LiveError

        try:
            run(["ip", "netns", "add", "vnlive-probe"], timeout=COMMAND_TIMEOUT)
            run(["ip", "-n", "vnlive-probe", "link", "add", "p0", "type", "veth", "peer", "name", "p1"],
                timeout=COMMAND_TIMEOUT)
        except LiveError as exc:
            _fail("ip netns add / ip link add veth", 0, str(exc))
        print(json.dumps({"ok": True, "inodes": _namespace_inodes()}))
        return
    if argv[:1] != ["--run"] or len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--cases"):
        _fail("arguments", _errno.EINVAL, "usage: python -m vnetlab.live.userns --probe | --run NAME[,NAME...] "
              "[--cases JSON]")
    cases = [tuple(c) for c in json.loads(argv[3])] if len(argv) == 4 else None
    from vnetlab.live.measure import kernel_doc
    from vnetlab.live.xdp import load_xdp_pass

    try:
        os.close(load_xdp_pass())
        no_xdp = None
    except Exception as exc:  # the reason is shown beside the rows left out
        no_xdp = str(exc)
    from vnetlab.live.lab import CREATED_NETNS

    doc = kernel_doc(argv[1].split(","), xdp=no_xdp is None, privilege="userns", cases=cases)
    doc["no_xdp"] = no_xdp
    doc["netns_inodes"] = sorted(inode for _name, inode in CREATED_NETNS)
    doc["netns_names"] = sorted(name for name, _inode in CREATED_NETNS)
    print(json.dumps({"ok": True, "doc": doc}))


# --------------------------------------------------------------------------------------------------------------
# The parent's side
# --------------------------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    import vnetlab

    env = dict(os.environ)
    # the child imports this very vnetlab, whether it came from an install or from the working directory
    root = os.path.dirname(os.path.dirname(os.path.abspath(vnetlab.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), root) if p)
    # an ordinary user's PATH often lacks the sbin directories, where Debian puts sysctl and ethtool
    path = env.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    env["PATH"] = os.pathsep.join(path + [d for d in ("/usr/sbin", "/sbin") if d not in path])
    return env


@public
def run_child(args: list[str], *, timeout: float = CHILD_TIMEOUT) -> dict[str, Any]:
    """Run ``python -m vnetlab.live.userns ARGS`` and return its JSON answer; the child, and with it every
    namespace it made, is gone when this returns or raises (killed and reaped on any exception, a timeout and
    KeyboardInterrupt included)."""
    from vnetlab.errors import LabTimeout, LiveError

    argv = [sys.executable, "-m", "vnetlab.live.userns", *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as exc:  # a timeout, or Jupyter's interrupt (KeyboardInterrupt): the kernel lives on
        proc.kill()
        proc.communicate()  # reaped now: no zombie and no namespace outlives the call
        if isinstance(exc, subprocess.TimeoutExpired):
            raise LabTimeout(f"the user-namespace lab ran past {timeout:.0f} s and was killed, its namespaces "
                             "with it") from None
        raise
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise LiveError(f"the user-namespace lab exited {done.returncode} without an answer: {tail}")
    return answer


_PROBE: dict[str, str | None] = {}
_PROBE_LOCK = threading.Lock()


@public
def userns_error(*, refresh: bool = False) -> str | None:
    """None when an ordinary user's labs can run here in user namespaces, else one line naming what refuses it
    (a sysctl, a policy, a missing program). Probed once per process by a child that builds a veth pair."""
    import shutil

    from vnetlab.errors import LiveError

    with _PROBE_LOCK:
        if not refresh and "error" in _PROBE:
            return _PROBE["error"]
        if not sys.platform.startswith("linux"):
            why: str | None = f"user namespaces are a Linux feature, and this is {sys.platform}"
        elif shutil.which("ip") is None:
            why = "the `ip` program (iproute2) is not on PATH; apt-get install iproute2"
        else:
            try:
                answer = run_child(["--probe"], timeout=PROBE_TIMEOUT)
            except LiveError as exc:
                why = f"the user-namespace probe failed: {exc}"
            else:
                why = None if answer.get("ok") else explain(str(answer.get("stage")), answer.get("errno"),
                                                             str(answer.get("detail", "")))
        _PROBE["error"] = why
        return why


@public
def run_experiments(names: Iterable[str], *, timeout: float = CHILD_TIMEOUT,
                    cases: Iterable[tuple[int, int]] | None = None) -> dict[str, Any]:
    """The kernel's side of notebook 60's experiments (``mirror`` and :data:`~vnetlab.live.measure.TRANSFERS`),
    measured by a child in user namespaces: a document like data/live/*.json, with ``no_xdp`` (why the XDP
    configurations were left out, None if they ran) and ``netns_inodes`` (the namespaces it made, all gone now);
    ``cases``: the (length, gso_size) sends of "udp_segment" (default: the selftest's)."""
    from vnetlab.errors import LiveError, LiveUnavailable

    names = list(names)
    why = userns_error()
    if why is not None:
        raise LiveUnavailable(f"the labs cannot run in user namespaces here: {why}")
    extra = [] if cases is None else ["--cases", json.dumps([[int(n), int(g)] for n, g in cases])]
    answer = run_child(["--run", ",".join(names), *extra], timeout=timeout)
    if not answer.get("ok"):
        raise LiveError("the user-namespace lab failed: " + explain(str(answer.get("stage")), answer.get("errno"),
                                                                    str(answer.get("detail", ""))))
    return answer["doc"]


if __name__ == "__main__":
    try:
        _child(sys.argv[1:])
    except Exception as exc:  # one line for the parent, whatever went wrong
        _fail(type(exc).__name__, getattr(exc, "errno", 0) or 0, str(exc))
