"""UDP sockets inside a lab's network namespace, as the live experiments and captures use them: open one, and
read what recvmsg() returns (each datagram's size and the UDP_GRO cmsg's gso_size)."""

from __future__ import annotations

import select
import socket
import struct
import time
from typing import Literal

from vnetlab.checks import public
from vnetlab.headers import SOL_UDP, UDP_GRO
from vnetlab.live.commands import in_netns

__all__ = ["drain", "udp_socket_in"]


@public
def udp_socket_in(netns: str, ip: Literal[4, 6]) -> socket.socket:
    """A UDP socket (AF_INET or AF_INET6) created in ``netns``: a socket keeps the namespace it was made in."""
    family = socket.AF_INET if ip == 4 else socket.AF_INET6
    return in_netns(netns, lambda: socket.socket(family, socket.SOCK_DGRAM))


@public
def drain(sock: socket.socket, want_bytes: int, timeout: float = 1.0) -> tuple[list[int], list[int | None]]:
    """recvmsg() until ``want_bytes`` arrived (then 50 ms more for stragglers) or ``timeout`` seconds passed: the
    size of each datagram read and its UDP_GRO cmsg (include/uapi/linux/udp.h: the gso_size), None without one."""
    sizes: list[int] = []
    gsos: list[int | None] = []
    got = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
        if not ready:
            if got >= want_bytes:
                break
            continue
        data, anc, _flags, _addr = sock.recvmsg(1 << 17, 64)
        gso = None
        for level, kind, value in anc:
            if level == SOL_UDP and kind == UDP_GRO:
                gso = struct.unpack("i", value[:4])[0]
        sizes.append(len(data))
        gsos.append(gso)
        got += len(data)
        if got >= want_bytes:
            deadline = min(deadline, time.monotonic() + 0.05)
    return sizes, gsos
