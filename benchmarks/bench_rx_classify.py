"""Benchmark: page_to_skb()'s decision over 1,000,000 frames of mixed sizes (goal: >= 1,000,000 frames/s).

Run: .venv/bin/python benchmarks/bench_rx_classify.py
"""

import statistics
import time

import numpy as np

from vnetlab import rx

N = 1_000_000


def main() -> None:
    rng = np.random.default_rng(0)
    # A mix: small (ACK/DNS-like), mid (1000-byte UDP), full MTU; buffers as carved from 32 KiB frags.
    frames = np.concatenate([rng.integers(60, 129, N // 4), rng.integers(129, 1205, N // 4),
                             np.full(N // 2, 1514)])
    rng.shuffle(frames)
    truesizes = np.where(np.arange(N) % 21 == 20, 2048, 1536)
    runs = []
    for kernel in ("6.1",) * 5 + ("5.10", "6.18"):
        t0 = time.perf_counter()
        codes, *_ = rx.classify(frames, truesizes, kernel=kernel)
        runs.append((kernel, time.perf_counter() - t0, np.bincount(codes, minlength=3)))
    best = statistics.median(t for k, t, _ in runs if k == "6.1")
    print(f"frames: {N:,}  median time (6.1, 5 runs): {best * 1e3:.1f} ms  ->  {N / best:,.0f} frames/s")
    for kernel, t, counts in runs[-3:]:
        print(f"  kernel {kernel}: {t * 1e3:.1f} ms; copy {counts[0]:,}, copy+frag {counts[1]:,}, build_skb {counts[2]:,}")


if __name__ == "__main__":
    main()
