"""Notebook 60's labs without root: a child process in its own user, network and mount namespaces.

These run as any user on a Linux kernel that allows unprivileged user namespaces, and skip with the reason
elsewhere; with VNETLAB_EXPECT_USERNS=1 (.ci/run's ordinary-user run) a skip is a failure. The comparison with the
root path needs root (marker ``live``). Expected values come from the kernel itself (the root path, the child's
namespace inodes, /proc) and from the recorded run data/live/6.18.44-fc-v1045.json.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vnetlab import live
from vnetlab.errors import LabTimeout, LiveUnavailable
from vnetlab.live import userns

EXPECT = os.environ.get("VNETLAB_EXPECT_USERNS", "") == "1"


def _need_userns() -> None:
    why = userns.userns_error()
    if why is not None:
        if EXPECT:
            pytest.fail(f"VNETLAB_EXPECT_USERNS=1 but the labs cannot run in user namespaces here: {why}")
        pytest.skip(f"no unprivileged user namespaces here: {why}")


# ---------------------------------------------------------------------------------------------------------------
# why not: the one line naming the sysctl or policy
# ---------------------------------------------------------------------------------------------------------------


def test_explain_names_the_sysctl_or_policy():
    """The switches that refuse unprivileged user namespaces: Debian's kernel.unprivileged_userns_clone
    (debian/patches/debian/add-sysctl-to-disallow-unprivileged-CLONE_NEWUSER-by-default.patch),
    user.max_user_namespaces (kernel/ucount.c), Ubuntu's kernel.apparmor_restrict_unprivileged_userns."""
    none = {"unprivileged_userns_clone": None, "max_user_namespaces": "15000", "apparmor_restrict": None}
    assert "kernel.unprivileged_userns_clone is 0" in userns.explain(
        "unshare", 1, sysctls={**none, "unprivileged_userns_clone": "0"})
    assert "user.max_user_namespaces is 0" in userns.explain("unshare", 28, sysctls={**none,
                                                                                     "max_user_namespaces": "0"})
    assert "AppArmor" in userns.explain("ip netns add", 1, sysctls={**none, "apparmor_restrict": "1"})
    assert "seccomp" in userns.explain("unshare", 1, sysctls=none)
    assert "ENOSPC" in userns.explain("unshare", 28, sysctls=none)
    for text in (userns.explain("unshare", 1, sysctls=none), userns.explain("mount tmpfs on /run", 13, sysctls=none)):
        assert "\n" not in text  # one line


def test_fallback_when_user_namespaces_are_refused_is_labelled():
    """user.max_user_namespaces = 0 set inside a user namespace of this test's own (the limit is per user
    namespace, kernel/ucount.c; the machine's own sysctl is not touched): the session falls back to the recorded
    run, says which sysctl refused, and every table starts with "recorded on Linux RELEASE, DATE"."""
    import shutil

    _need_userns()
    if shutil.which("unshare") is None:
        pytest.skip("util-linux's unshare is not installed")
    ref = live.reference()
    code = ("from vnetlab import live\n"
            "s = live.session()\n"
            "print(s.mode)\n"
            "print(s.why)\n"
            "print(s.table('vxlan').splitlines()[0])\n"
            "print(s.bridge().splitlines()[0])\n")
    script = f"echo 0 > /proc/sys/user/max_user_namespaces && exec {sys.executable} -c \"$0\""
    done = subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c", script, code], capture_output=True,
                          text=True, timeout=120, env=userns._env())
    assert done.returncode == 0, done.stderr
    mode, why, first, bridge = done.stdout.splitlines()[:4]
    assert mode == "recorded"
    assert "user.max_user_namespaces is 0" in why
    # source: data/live/6.18.44-fc-v1045.json kernel.release and recorded
    label = f"[recorded on Linux {ref.release}, {ref.recorded[:10]}, as root; not this machine's kernel]"
    assert first == label and bridge == label


# ---------------------------------------------------------------------------------------------------------------
# the labs in user namespaces
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def userns_session():
    _need_userns()
    run = live.session(mode="userns")
    assert run.mode == "userns" and run.live and "user and network namespaces" in run.why
    return run


def test_userns_labs_agree_with_the_model(userns_session):
    run = userns_session
    rows = run.mirror()
    assert len(rows) == len(live.MIRROR_STEPS) * len(live.MIRROR_DEVICES)
    assert all(r.agrees for r in rows), live.mirror_table(rows)
    for name in ("udp_segment", "veth_gro", "veth_gro_plain", "vxlan"):
        got = run.transfers(name)
        assert got and all(r.agrees for r in got), live.transfer_table(got)
    # XDP needs CAP_BPF in the initial user namespace (kernel/bpf/syscall.c bpf_prog_load): left out here
    xdp = tuple(label for label, c in live.VETH_GRO_CONFIGS if c.get("xdp"))
    assert run.not_run("veth_gro") == xdp
    assert [r.label for r in run.transfers("veth_gro")] == [label for label, c in live.VETH_GRO_CONFIGS
                                                              if not c.get("xdp")]


def test_userns_tables_name_their_source(userns_session):
    run, ref = userns_session, live.reference()
    here = f"[this kernel, Linux {os.uname().release}, run now as uid {os.getuid()} in user and network namespaces]"
    for text in (run.table("mirror"), run.table("udp_segment"), run.table("vxlan"), run.bridge(),
                 run.features(("tx-scatter-gather",), device="v0", step="v0 scatter-gather off")):
        assert text.splitlines()[0] == here
    veth = run.table("veth_gro", by="receiver").splitlines()
    rows = [line for line in veth if line.startswith(("agree ", "DIFFER"))]
    xdp = [line for line in rows if "XDP_PASS" in line]
    assert len(xdp) == 2 and all(" * " in line for line in xdp), veth  # VETH_GRO_CONFIGS: two with XDP
    assert not [line for line in rows if " * " in line and "XDP_PASS" not in line]
    # source: data/live/6.18.44-fc-v1045.json: the rows that need root come from the recorded run, labelled so
    note = " ".join(line for line in veth if line.startswith("*") or line.startswith("  "))
    assert f"* recorded on Linux {ref.release}, {ref.recorded[:10]}, as root" in note and "CAP_BPF" in note


def _proc_net_refs() -> dict[int, set[int]]:
    """{netns inode: pids} of every namespace a visible process is in or holds open (ns/net, fds)."""
    refs: dict[int, set[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        links = [f"/proc/{pid}/ns/net"]
        try:
            links += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            pass
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target.startswith("net:["):
                refs.setdefault(int(target[5:-1]), set()).add(int(pid))
    return refs


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "(gone)"


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _descendants() -> list[int]:
    parent: dict[int, int] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        parent[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [os.getpid()]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def test_userns_leaves_no_namespace_or_device(userns_session):
    """The child reports the inode of every namespace it made (stat of /run/netns/NAME in its mount namespace);
    once it has exited, no process holds any of them, no child of this process is left, and this namespace's
    devices and /run/netns are what they were."""
    before_links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10).stdout
    doc = userns.run_experiments(["vxlan"])
    made = set(doc["netns_inodes"])
    assert len(made) >= 2 and len(doc["netns_names"]) == len(made)  # vxlan_lab: sender's and receiver's netns
    assert not made & set(_proc_net_refs())
    assert not _descendants()
    names = lambda text: sorted(line.split(":")[1].strip().split("@")[0] for line in text.splitlines())  # noqa: E731
    after_links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10).stdout
    lab_names = {"v0", "v1", "vx0", "vx1"}  # vxlan_lab's devices (vnetlab/live/experiments.py _vxlan_config)
    assert not (set(names(after_links)) - set(names(before_links))) & lab_names
    # the child's names lived in its own tmpfs: none reached this mount namespace's /run/netns
    assert not set(doc["netns_names"]) & set(os.listdir("/run/netns") if os.path.isdir("/run/netns") else [])


def test_userns_child_killed_mid_lab_leaves_nothing():
    """SIGKILL to the child while its labs are up (the harshest interrupt: no cleanup code runs): its
    namespaces, read through /proc/PID/root/run/netns while it runs, are held by nobody afterwards; and a
    timeout kills the child the same way (LabTimeout)."""
    _need_userns()
    child = subprocess.Popen([sys.executable, "-m", "vnetlab.live.userns", "--run", "mirror"], env=userns._env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        mine = os.readlink("/proc/self/ns/mnt")
        while time.monotonic() < deadline and not seen and child.poll() is None:
            try:
                # only once the child is in its own mount namespace is its /run its tmpfs
                if os.readlink(f"/proc/{child.pid}/ns/mnt") != mine:
                    root = f"/proc/{child.pid}/root/run/netns"
                    seen = {os.stat(os.path.join(root, n)).st_ino for n in os.listdir(root)}
            except OSError:
                pass
            time.sleep(0.05)
        own = os.readlink(f"/proc/{child.pid}/ns/net")
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    assert seen, "the child made no namespace within 60 s"
    # The `ip -n NS ...` the child was running when killed dies with it (PR_SET_PDEATHSIG), but its death is the
    # kernel's to finish, a moment after the child's is reported: allow 5 s, far more than it takes.
    gone = time.monotonic() + 5
    while True:
        refs = _proc_net_refs()
        held = (seen | {int(own[5:-1])}) & set(refs)
        if not held or time.monotonic() > gone:
            break
        time.sleep(0.05)
    assert not held, {i: {p: _cmdline(p) for p in refs[i]} for i in held}
    assert not _descendants()
    with pytest.raises(LabTimeout, match="killed"):
        userns.run_child(["--run", "mirror"], timeout=1.0)
    assert not _descendants()


def test_a_command_the_child_runs_dies_with_it():
    """A command running when the child is SIGKILL'd (here `sleep 30`, standing for an `ip -n NS ...` caught
    mid-run) is killed with it: it was started under PR_SET_PDEATHSIG, so it cannot keep a namespace alive."""
    _need_userns()
    code = ("from vnetlab.live import commands, userns; userns.enter(); "
            "commands.run(['sleep', '30'], timeout=60)")
    child = subprocess.Popen([sys.executable, "-c", code], env=userns._env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sleeper = None
    try:
        deadline = time.monotonic() + 30
        while sleeper is None and time.monotonic() < deadline and child.poll() is None:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                if _cmdline(int(pid)).endswith("sleep 30") and _ppid(int(pid)) == child.pid:
                    sleeper = int(pid)
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=30)
    assert sleeper is not None, f"the child never ran its command: {err.decode()[-500:]}"
    deadline = time.monotonic() + 5
    while Path(f"/proc/{sleeper}").exists() and _cmdline(sleeper).endswith("sleep 30"):
        assert time.monotonic() < deadline, "the child's `sleep 30` outlived it"
        time.sleep(0.05)


def test_session_mode_can_be_forced_and_says_why_not():
    with pytest.raises(ValueError, match="mode='sudo'"):
        live.session(mode="sudo")
    rec = live.session(mode="recorded")
    assert rec.mode == "recorded" and not rec.live and rec.source().startswith("[recorded on Linux ")
    if os.geteuid() != 0:
        with pytest.raises(LiveUnavailable, match="mode='root'"):
            live.session(mode="root")
        if userns.userns_error() is None:  # an ordinary user gets the user namespaces without asking
            assert live.session().mode == "userns"


def test_child_refuses_bad_arguments():
    done = subprocess.run([sys.executable, "-m", "vnetlab.live.userns", "--fly"], capture_output=True, text=True,
                          timeout=60, env=userns._env())
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode != 0 and not answer["ok"]
    if answer["stage"] == "arguments":  # where user namespaces are refused the child stops before reading them
        assert "usage" in answer["detail"]


# ---------------------------------------------------------------------------------------------------------------
# the same experiment as root and in user namespaces (root only)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.live
def test_root_and_userns_give_the_same_answers(userns_session):
    """The kernel's side of each experiment, as root and from the user-namespace child, on this same kernel: every
    feature state after every step, every UDP_SEGMENT send, every veth GRO configuration both can run, vxlan."""
    cap = live.available(labs=True)
    if not cap or os.geteuid() != 0:
        pytest.skip(cap.reason if not cap else "the root path needs root")
    root, user = live.session(mode="root"), userns_session
    assert root.mode == "root"
    by_root = {(r.step, r.device): dict(r.kernel_k) for r in root.mirror()}
    by_user = {(r.step, r.device): dict(r.kernel_k) for r in user.mirror()}
    assert by_root == by_user
    for name in ("udp_segment", "veth_gro", "veth_gro_plain", "vxlan"):
        mine = {(r.label, r.length, r.gso_size): r.kernel.key() for r in root.transfers(name)}
        theirs = {(r.label, r.length, r.gso_size): r.kernel.key() for r in user.transfers(name)}
        assert theirs and set(theirs) <= set(mine), name
        assert {k: mine[k] for k in theirs} == theirs, name


# ---------------------------------------------------------------------------------------------------------------
# notebook 60 as a reader without live labs sees it
# ---------------------------------------------------------------------------------------------------------------


def test_notebook_60_labels_every_recorded_table(monkeypatch, capsys):
    """Notebook 60's own code cells, run with the recorded session (what a reader gets where neither root nor
    user namespaces work): every table a cell prints from the session has its own source line above it, "[recorded
    on Linux RELEASE, DATE" (data/live/6.18.44-fc-v1045.json), and every result line sits under one."""
    import nbformat

    real = live.session
    monkeypatch.setattr(live, "session", lambda mode=None: real(mode="recorded"))
    ref = live.reference()
    label = f"[recorded on Linux {ref.release}, {ref.recorded[:10]}"
    here = f"[this kernel, Linux {os.uname().release}, read now]"  # lo's features, read without root
    nb = nbformat.read(Path(__file__).parents[1] / "notebooks" / "60_check_your_own_kernel.ipynb", as_version=4)
    scope: dict = {}
    shown = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        exec(compile(cell.source, "<notebook 60>", "exec"), scope)  # noqa: S102 (the notebook's own cells)
        out = capsys.readouterr().out
        calls = sum(cell.source.count(f"RUN.{m}(") for m in ("table", "features", "bridge", "send"))
        if not calls:
            continue
        lines = out.splitlines()
        labels = [i for i, line in enumerate(lines) if line.startswith((label, here))]
        assert len(labels) == calls, (cell.source, out)
        lo_only = "RUN.features(" in cell.source and "step=" not in cell.source
        assert labels[0] == 0 and all(lines[i].startswith(label) or (lo_only and lines[i] == here)
                                      for i in labels), out
        results = [i for i, line in enumerate(lines) if line.startswith(("agree", "DIFFER", "ethtool -K"))]
        assert all(any(j < i for j in labels) for i in results)
        shown += calls
    assert shown >= 7  # sections 2-6: lo, the steps, br0/mv1, UDP_SEGMENT, veth GRO twice, vxlan


def test_interrupt_kills_the_child_and_its_namespaces():
    """Jupyter's interrupt is SIGINT to the kernel process only, and the kernel lives on: the KeyboardInterrupt
    inside subprocess.run kills the user-namespace child (Popen's context manager) while the parent is still
    alive, and with the child every namespace it made."""
    _need_userns()
    code = ("import sys, time\nfrom vnetlab import live\ntry:\n    live.session(mode='userns').mirror()\n"
            "except KeyboardInterrupt:\n    print('interrupted', flush=True)\n    time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], env=userns._env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    child = None
    deadline = time.monotonic() + 60
    try:
        while child is None and time.monotonic() < deadline and parent.poll() is None:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == parent.pid and b"--run" in cmd:
                    child = int(pid)
            time.sleep(0.05)
        assert child is not None, "the session started no user-namespace child within 60 s"
        time.sleep(1.0)  # the child is building its labs now
        parent.send_signal(signal.SIGINT)
        assert parent.stdout is not None and parent.stdout.readline() == b"interrupted\n"
        assert parent.poll() is None  # the "kernel" lives on, as Jupyter's does after an interrupt
        assert not os.path.exists(f"/proc/{child}")
    finally:
        parent.kill()
        parent.communicate(timeout=60)


def test_session_layout_says_your_kernel_and_the_profile(monkeypatch):
    """Notebook 60 section 7: the running kernel's BTF beside the profile section 1 chose (live.btf_layout, read
    without root), under a source line; a kernel without BTF gets that line with the reason instead."""
    import os as _os

    from vnetlab.live import btf

    run = live.session(mode="recorded")
    if not _os.path.exists(btf.BTF_PATH):
        assert run.layout().startswith("[this kernel") and "no BTF" in run.layout()
        return
    text = run.layout().splitlines()
    assert text[0] == f"[this kernel, Linux {_os.uname().release}, its BTF read now]"
    assert text[1:] == live.btf_layout().table(str(live.running_profile())).splitlines()
    assert any("your kernel says" in line and "the profile says" in line for line in text)

    def no_btf(*_a, **_k):
        raise LiveUnavailable("this kernel has no BTF: /sys/kernel/btf/vmlinux does not exist")

    monkeypatch.setattr(btf, "btf_layout", no_btf)
    assert run.layout() == (f"[this kernel, Linux {_os.uname().release}: this kernel has no BTF: "
                            "/sys/kernel/btf/vmlinux does not exist]")
