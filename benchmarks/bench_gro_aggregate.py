"""Time per packet of vnetlab.gro.aggregate as one flow grows (a plain script, not a timed test).

The flow is the worst case for the frag_list: 8-byte TCP payloads in napi page-frag heads (kernel 6.18), so
skb_gro_receive fills p's frags (MAX_SKB_FRAGS) and then chains every further packet on p's frag_list, up to
gso_max_size: thousands of members in one GRO skb. Goal: the time per packet is flat from 64 to 16384 packets
(skb_gro_receive keeps p->len as it merges; the model once re-summed the whole frag_list on every merge).
Median (min) of RUNS runs.

Run: nice .venv/bin/python benchmarks/bench_gro_aggregate.py
"""

import copy
import os
import time

from vnetlab import gro, rx

RUNS = 5
SIZES = (64, 256, 1024, 4096, 16384)


def run(n: int, template) -> tuple[float, int]:
    skbs = [copy.deepcopy(template) for _ in range(n)]
    t = time.perf_counter()
    out = gro.aggregate(skbs, l4="tcp", kernel="6.18")
    return time.perf_counter() - t, max(len(s.frag_list) for s in out)


if __name__ == "__main__":
    template = rx.receive(8, l4="tcp", kernel="6.18").skb
    run(64, template)  # warm-up: tables, caches
    print(f"median (min) of {RUNS} runs; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for n in SIZES:
        times = []
        for _ in range(RUNS):
            t, members = run(n, template)
            times.append(t)
        times.sort()
        print(f"{n:6d} packets: {times[len(times) // 2] / n * 1e6:7.1f} us/packet ({times[0] / n * 1e6:7.1f}), "
              f"longest frag_list {members}")
