"""Packets per second of vnetlab.gro.simulate_stream per scenario (a plain script, not a timed test).

Each rate is also given as a ratio to the simplest numpy expression of the build_skb rule over as many frames
(bench_rx_classify.baseline). Goal: 20 M packets/s or more. Median (min) of RUNS runs after a warm-up.

Run: nice .venv/bin/python benchmarks/bench_gro_stream.py
"""

import os

from bench_rx_classify import baseline, frames_and_buffers, timed

from vnetlab import gro, profiles, rx

N = 1_000_000
RUNS = 5
FRAMES, TRUESIZES = frames_and_buffers(N)
CASES = [
    ("UDP mixed frames (bench_rx_classify), 6.1", dict(payload_len=FRAMES - 42, buf_lens=TRUESIZES, l4="udp",
                                                       udp_gro=True, kernel="6.1")),
    ("TCP mixed frames (bench_rx_classify), 6.1", dict(payload_len=(FRAMES - 66).clip(0), buf_lens=TRUESIZES,
                                                       kernel="6.1")),
    ("TCP 1448 B, 6.1", dict(payload_len=1448, kernel="6.1")),
    ("TCP 1000 B, 6.1", dict(payload_len=1000, kernel="6.1")),
    ("UDP 1000 B, UDP_GRO, 6.1", dict(payload_len=1000, l4="udp", udp_gro=True, kernel="6.1")),
    ("UDP 1472 B, rx-gro-list, 6.18", dict(payload_len=1472, l4="udp", kernel="6.18",
                                           features={"GRO", "GRO_FRAGLIST"})),
    ("TCP mix 100/1000/1448, 5.10", dict(payload_len={100: 1, 1000: 2, 1448: 3}, kernel="5.10")),
    ("UDP mix 100/1000/1472, UDP_GRO, 5.11", dict(payload_len={100: 1, 1000: 2, 1472: 3}, l4="udp", udp_gro=True,
                                                  kernel="5.11")),
]


if __name__ == "__main__":
    shinfo = profiles.arch(profiles.DEFAULT_ARCH, profiles.DEFAULT_KERNEL).shinfo_size
    t_base, t_base_min = timed(lambda: baseline(FRAMES, TRUESIZES, rx.MRG_RXBUF_HDR_LEN, shinfo))
    load = os.getloadavg()[0]
    print(f"{N:,} packets per case, median (min) of {RUNS} runs; baseline build_skb rule {t_base * 1e3:.2f} ms "
          f"({t_base_min * 1e3:.2f}); load average {load:.2f} on {os.cpu_count()} CPUs")
    for name, kw in CASES:
        n = None if "buf_lens" in kw else N
        t, t_min = timed(lambda kw=kw, n=n: gro.simulate_stream(n, **kw), runs=RUNS)
        stats = gro.simulate_stream(n, **kw)
        print(f"{name:42s} {N / t / 1e6:6.1f} M packets/s ({N / t_min / 1e6:6.1f})  {t * 1e3:6.1f} ms, "
              f"{t / t_base:5.2f}x the baseline; {stats.gro_skbs:,} GRO skbs")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
