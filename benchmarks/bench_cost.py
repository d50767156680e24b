"""Speed of vnetlab.cost: per-packet operation counts over 1,000,000 mixed frames, and a full calibration.

Run: .venv/bin/python benchmarks/bench_cost.py
"""

import time

import numpy as np

from vnetlab import cost, rx

N = 1_000_000


def main() -> None:
    rng = np.random.default_rng(0)
    frames = rng.choice(np.asarray(cost.imix().frame_lens), size=N)
    bufs = np.resize(np.asarray(rx.mergeable_buf_lens(21 * 32, kernel="5.13")), N)
    prior = cost.load_costs()
    for kernel in ("5.11", "5.13", "6.18"):
        t0 = time.perf_counter()
        counts, _codes = cost.packet_op_counts(frames, bufs, kernel=kernel, headers=28)
        ns = sum(counts[op] * prior[op] for op in counts)
        dt = time.perf_counter() - t0
        print(f"packet_op_counts {kernel:5s}: {N / dt:12,.0f} frames/s ({dt:.3f} s), mean {ns.mean():.1f} ns/packet "
              "without GRO and stack")
    t0 = time.perf_counter()
    cost._op_counts.cache_clear()
    cost.calibrate()
    print(f"calibrate() from cold caches: {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
