"""An XDP_PASS program without a compiler: loaded with bpf(), attached over rtnetlink."""

from __future__ import annotations

import os

from vnetlab.checks import public
from vnetlab.errors import ArgumentError, LiveError, LiveUnavailable
from vnetlab.live.commands import COMMAND_TIMEOUT, in_netns
from vnetlab.live.netlink import pyroute2_error

# arch/*/include/uapi/asm/unistd*.h __NR_bpf
_NR_BPF = {"x86_64": 321, "aarch64": 280, "ppc64le": 361, "s390x": 351, "riscv64": 280}
_BPF_PROG_LOAD = 5  # include/uapi/linux/bpf.h enum bpf_cmd
_BPF_PROG_TYPE_XDP = 6  # include/uapi/linux/bpf.h enum bpf_prog_type
_XDP_PASS = 2  # include/uapi/linux/bpf.h enum xdp_action


def load_xdp_pass() -> int:
    """bpf(BPF_PROG_LOAD) of "r0 = XDP_PASS; exit" (BPF_MOV64_IMM 0xb7, BPF_EXIT 0x95) as an XDP program;
    returns its fd. Needs CAP_BPF (root); raises LiveUnavailable where the syscall is refused."""
    import ctypes
    import struct

    nr = _NR_BPF.get(os.uname().machine)
    if nr is None:
        raise LiveUnavailable(f"no bpf() syscall number known for {os.uname().machine}")
    code = struct.pack("<BBhi", 0xB7, 0, 0, _XDP_PASS) + struct.pack("<BBhi", 0x95, 0, 0, 0)
    insns = ctypes.create_string_buffer(code)
    license_ = ctypes.create_string_buffer(b"GPL")
    # union bpf_attr, BPF_PROG_LOAD: prog_type, insn_cnt, insns, license, log_level, log_size, log_buf,
    # kern_version, prog_flags, prog_name[16]
    attr = ctypes.create_string_buffer(struct.pack(
        "<IIQQIIQII16s", _BPF_PROG_TYPE_XDP, 2, ctypes.addressof(insns), ctypes.addressof(license_), 0, 0, 0, 0, 0,
        b"vnetlab_pass"), 128)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(nr, _BPF_PROG_LOAD, attr, 128)
    if fd < 0:
        err = ctypes.get_errno()
        raise LiveUnavailable(f"bpf(BPF_PROG_LOAD) of an XDP_PASS program failed: {os.strerror(err)}")
    return int(fd)


# include/uapi/linux/rtnetlink.h, netlink.h, if_link.h
_RTM_SETLINK = 19
_NLM_F_REQUEST, _NLM_F_ACK = 0x1, 0x4
_NLMSG_ERROR = 2
_NLA_F_NESTED = 1 << 15
_IFLA_XDP, _IFLA_XDP_FD = 43, 1


def _nla(kind: int, payload: bytes) -> bytes:
    import struct

    body = struct.pack("=HH", 4 + len(payload), kind) + payload
    return body + bytes(-len(body) % 4)  # NLA_ALIGN


def _attach_rtnetlink(ifname: str, fd: int) -> None:
    """RTM_SETLINK with IFLA_XDP { IFLA_XDP_FD } for ``ifname`` (net/core/rtnetlink.c do_setlink), built here so
    that no pyroute2 is needed; runs in the thread's network namespace."""
    import socket
    import struct

    try:
        index = socket.if_nametoindex(ifname)
    except OSError:
        raise LiveError(f"attaching XDP: no device {ifname!r} in this network namespace") from None
    # struct ifinfomsg: family, pad, type, index, flags, change
    body = struct.pack("=BBHiII", socket.AF_UNSPEC, 0, 0, index, 0, 0)
    body += _nla(_IFLA_XDP | _NLA_F_NESTED, _nla(_IFLA_XDP_FD, struct.pack("=i", fd)))
    msg = struct.pack("=IHHII", 16 + len(body), _RTM_SETLINK, _NLM_F_REQUEST | _NLM_F_ACK, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.settimeout(COMMAND_TIMEOUT)
        sock.send(msg)
        reply = sock.recv(65536)
    _length, kind = struct.unpack_from("=IH", reply)
    if kind == _NLMSG_ERROR:
        (error,) = struct.unpack_from("=i", reply, 16)  # struct nlmsgerr: int error, then the request
        if error:
            raise LiveError(f"attaching XDP to {ifname}: RTM_SETLINK failed: {os.strerror(-error)}")


def _attach_pyroute2(ifname: str, fd: int) -> None:
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        index = ipr.link_lookup(ifname=ifname)[0]
        ipr.link("set", index=index, xdp_fd=fd)


@public
def attach_xdp_pass(ifname: str, netns: str | None, *, backend: str = "auto") -> None:
    """Attach an XDP_PASS program (:func:`load_xdp_pass`) to ``ifname`` in ``netns``; it lives as long as the
    device does. ``backend``: "pyroute2", "rtnetlink" (the message built here) or "auto" (pyroute2 when it
    imports, else rtnetlink)."""
    if backend not in ("auto", "pyroute2", "rtnetlink"):
        raise ArgumentError(f"backend must be 'auto', 'pyroute2' or 'rtnetlink', got {backend!r}", param="backend")
    if backend == "auto":
        backend = "rtnetlink" if pyroute2_error() else "pyroute2"
    attach = _attach_pyroute2 if backend == "pyroute2" else _attach_rtnetlink
    fd = load_xdp_pass()
    try:
        in_netns(netns, lambda: attach(ifname, fd))
    finally:
        os.close(fd)  # the attached program holds its own reference
