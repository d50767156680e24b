"""Speed of the receive models against the simplest numpy expression of the build_skb rule, in one run.

Over the same 1,000,000 frames (a mix of small, mid and full-MTU frames in buffers carved from 32 KiB frags):
  - baseline: the build_skb rule alone, np.where((frame > 128) & (truesize - hdr_len - frame >= shinfo), 2, 1)
  - rx.classify: page_to_skb()'s complete decision (codes, tailroom, frags, bytes copied)
  - gro.simulate_stream: the same frames as one UDP flow to a UDP_GRO socket, receive + GRO
Goals (issue 14): classify within 4x of the baseline; the stream at 20 M packets/s or more.

Run: nice .venv/bin/python benchmarks/bench_rx_classify.py
"""

import os
import statistics
import time

import numpy as np

from vnetlab import gro, profiles, rx

N = 1_000_000
RUNS = 7


def frames_and_buffers(n: int = N) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    # small (ACK/DNS-like, copied whole), mid (1000-byte UDP, build_skb), full MTU (copy path but in 2048 buffers)
    frames = np.concatenate([rng.integers(60, 129, n // 4), rng.integers(129, 1205, n // 4), np.full(n - n // 2, 1514)])
    rng.shuffle(frames)
    # add_recvbuf_mergeable at MTU 1500: twenty 1536-byte buffers, then the hole-extended 2048 (kernel-facts A.5)
    truesizes = np.resize(np.asarray(rx.mergeable_buf_lens(21), dtype=np.int64), n)
    return frames, truesizes


def baseline(frames: np.ndarray, truesizes: np.ndarray, hdr_len: int, shinfo: int) -> np.ndarray:
    return np.where((frames > rx.GOOD_COPY_LEN) & (truesizes - hdr_len - frames >= shinfo), 2, 1)


def timed(fn, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    frames, truesizes = frames_and_buffers()
    k = profiles.DEFAULT_KERNEL
    shinfo = profiles.arch(profiles.DEFAULT_ARCH, k).shinfo_size
    hdr = rx.MRG_RXBUF_HDR_LEN
    payloads = frames - 42  # the frames as IPv4/UDP: 14 + 20 + 8 header bytes
    codes = rx.classify(frames, truesizes, kernel=k).codes
    assert np.array_equal(codes == 2, baseline(frames, truesizes, hdr, shinfo) == 2)  # same build_skb decisions
    gro.simulate_stream(payload_len=payloads[:1000], buf_lens=truesizes[:1000], l4="udp", udp_gro=True, kernel=k)
    t_base = timed(lambda: baseline(frames, truesizes, hdr, shinfo))
    t_cls = timed(lambda: rx.classify(frames, truesizes, kernel=k))
    t_stream = timed(lambda: gro.simulate_stream(payload_len=payloads, buf_lens=truesizes, l4="udp", udp_gro=True,
                                                 kernel=k), runs=5)
    load = os.getloadavg()
    print(f"frames: {N:,} (kernel {k}); median of {RUNS} runs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          f" on {os.cpu_count()} CPUs")
    print(f"  baseline build_skb rule  {t_base * 1e3:8.2f} ms  {N / t_base / 1e6:7.1f} M frames/s")
    print(f"  rx.classify              {t_cls * 1e3:8.2f} ms  {N / t_cls / 1e6:7.1f} M frames/s  "
          f"ratio {t_cls / t_base:5.2f}x the baseline (goal <= 4x)")
    print(f"  gro.simulate_stream      {t_stream * 1e3:8.2f} ms  {N / t_stream / 1e6:7.1f} M packets/s  "
          f"ratio {t_stream / t_base:5.2f}x the baseline (goal >= 20 M packets/s)")


if __name__ == "__main__":
    main()
