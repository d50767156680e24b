"""Packets per second of vnetlab.gro.simulate_stream per scenario (a plain script, not a timed test).

Each rate is also given as a ratio to the simplest numpy expression of the build_skb rule over as many frames
(bench_rx_classify.baseline). Goal (issue 14): 20 M packets/s or more.

Run: nice .venv/bin/python benchmarks/bench_gro_stream.py
"""

import os
import statistics
import time

from bench_rx_classify import baseline, frames_and_buffers

from vnetlab import gro, profiles, rx

N = 1_000_000
CASES = [
    ("TCP 1448 B, 6.1", dict(payload_len=1448, kernel="6.1")),
    ("TCP 1000 B, 6.1", dict(payload_len=1000, kernel="6.1")),
    ("UDP 1000 B, UDP_GRO, 6.1", dict(payload_len=1000, l4="udp", udp_gro=True, kernel="6.1")),
    ("UDP 1472 B, rx-gro-list, 6.18", dict(payload_len=1472, l4="udp", kernel="6.18",
                                           features={"GRO", "GRO_FRAGLIST"})),
    ("TCP mix 100/1000/1448, 5.10", dict(payload_len={100: 1, 1000: 2, 1448: 3}, kernel="5.10")),
    ("UDP mix 100/1000/1472, UDP_GRO, 5.11", dict(payload_len={100: 1, 1000: 2, 1472: 3}, l4="udp", udp_gro=True,
                                                  kernel="5.11")),
]


def median_time(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


if __name__ == "__main__":
    frames, truesizes = frames_and_buffers(N)
    shinfo = profiles.arch(profiles.DEFAULT_ARCH, profiles.DEFAULT_KERNEL).shinfo_size
    t_base = median_time(lambda: baseline(frames, truesizes, rx.MRG_RXBUF_HDR_LEN, shinfo), runs=7)
    gro.simulate_stream(1000, 1448)
    load = os.getloadavg()
    print(f"{N:,} packets per case, median of 5 runs; baseline build_skb rule {t_base * 1e3:.2f} ms; "
          f"load average {load[0]:.2f} on {os.cpu_count()} CPUs")
    for name, kw in CASES:
        t = median_time(lambda kw=kw: gro.simulate_stream(N, **kw))
        stats = gro.simulate_stream(N, **kw)
        print(f"{name:38s} {N / t / 1e6:7.1f} M packets/s  ({t * 1e3:6.1f} ms, {t / t_base:5.2f}x the baseline; "
              f"{stats.gro_skbs:,} GRO skbs)")
