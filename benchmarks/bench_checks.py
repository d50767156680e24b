"""Cost of checking arguments at the public boundary: vnetlab.checks.public against beartype, per call.

One function with rx.receive's kind of signature (an int in a range, two bools, an int range, str | Kernel, a
Literal name), called with all six arguments, timed three ways:
  - plain: undecorated
  - public: @vnetlab.checks.public (annotations + In ranges)
  - beartype: @beartype(conf=BeartypeConf(violation_param_type=ArgumentError)), ranges as Annotated[int, Is[...]]
    (only if beartype is importable: PYTHONPATH=/tmp/btlib after `pip install --target /tmp/btlib beartype`)
and what each does with the awkward inputs (True and np.int64 for an int, NaN for a float).
Then the hot paths, rx.classify and gro.simulate_stream over 1,000,000 frames: one checked call each, so the
boundary adds the per-call cost once (benchmarks/bench_rx_classify.py times them in full).

Measured 2026-12-01 (2 shared cores, nice 15, Python 3.11):
  per call: plain 0.12-0.23 us, public +0.22 us, beartype +2.6..3.7 us (the decision: vnetlab.checks docstring)
  beartype: accepts True for int, refuses np.int64 for int, accepts NaN for float.

Run: nice .venv/bin/python benchmarks/bench_checks.py
"""

from __future__ import annotations

import math
import timeit
from typing import Annotated, Literal

import numpy as np

from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import Kernel

N = 200_000


def plain(payload_len: int, *, xdp: bool = False, guest_gso: bool = True, hdr_len: int = 12,
          kernel: str | Kernel = "6.1", mode: str = "mergeable") -> int:
    return payload_len


@public
def checked(payload_len: Annotated[int, In(0, 65535, "L4 payload bytes")], *, xdp: bool = False,
            guest_gso: bool = True, hdr_len: Annotated[int, In(10, 12, "virtio_net_hdr size")] = 12,
            kernel: str | Kernel = "6.1", mode: Literal["small", "big", "mergeable"] = "mergeable") -> int:
    return payload_len


def _beartyped():
    try:
        from beartype import BeartypeConf, beartype
        from beartype.vale import Is
    except ImportError:
        return None
    conf = BeartypeConf(violation_param_type=ArgumentError)

    @beartype(conf=conf)
    def bt(payload_len: Annotated[int, Is[lambda v: 0 <= v <= 65535]], *, xdp: bool = False,
           guest_gso: bool = True, hdr_len: Annotated[int, Is[lambda v: 10 <= v <= 12]] = 12,
           kernel: str | Kernel = "6.1", mode: Literal["small", "big", "mergeable"] = "mergeable") -> int:
        return payload_len

    @beartype(conf=conf)
    def bt_float(w: float) -> float:
        return w

    return bt, bt_float


def per_call_us(fn) -> float:
    call = lambda: fn(1000, xdp=False, guest_gso=True, hdr_len=12, kernel="6.1", mode="big")  # noqa: E731
    return min(timeit.repeat(call, number=N, repeat=5)) / N * 1e6


def accepts(fn, *args, **kwargs) -> bool:
    try:
        fn(*args, **kwargs)
    except (ArgumentError, TypeError, ValueError):
        return False
    return True


def hot_paths() -> None:
    import statistics
    import time

    from bench_rx_classify import frames_and_buffers

    from vnetlab import gro, rx
    frames, truesizes = frames_and_buffers()
    for name, call in (("rx.classify", lambda: rx.classify(frames, truesizes)),
                       ("gro.simulate_stream", lambda: gro.simulate_stream(len(frames), 1448, l4="udp",
                                                                           udp_gro=True))):
        call()
        times = []
        for _ in range(5):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        print(f"{name}: median {statistics.median(times) * 1e3:.1f} ms over 1,000,000 frames")


def main() -> None:
    base = per_call_us(plain)
    print(f"plain     {base:.2f} us/call")
    print(f"public   +{per_call_us(checked) - base:.2f} us/call")
    bt = _beartyped()
    if bt is None:
        print("beartype not importable: skipped")
    else:
        print(f"beartype +{per_call_us(bt[0]) - base:.2f} us/call")
        print(f"beartype: int accepts True: {accepts(bt[0], True)}, accepts np.int64: {accepts(bt[0], np.int64(5))}, "
              f"float accepts NaN: {accepts(bt[1], math.nan)}")
    print(f"public:   int accepts True: {accepts(checked, True)}, accepts np.int64: {accepts(checked, np.int64(5))}")
    hot_paths()


if __name__ == "__main__":
    main()
