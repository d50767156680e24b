"""Packets per second of vnetlab.gro.simulate_stream (a plain script, not a timed test)."""

import time

from vnetlab import gro

CASES = [
    ("TCP 1448 B, 6.1", dict(payload_len=1448, kernel="6.1")),
    ("TCP 1000 B, 6.1", dict(payload_len=1000, kernel="6.1")),
    ("UDP 1000 B, UDP_GRO, 6.1", dict(payload_len=1000, l4="udp", udp_gro=True, kernel="6.1")),
    ("TCP mix 100/1000/1448, 5.10", dict(payload_len={100: 1, 1000: 2, 1448: 3}, kernel="5.10")),
]

if __name__ == "__main__":
    n = 1_000_000
    gro.simulate_stream(1000, 1448)
    for name, kw in CASES:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            stats = gro.simulate_stream(n, **kw)
            times.append(time.perf_counter() - t0)
        t = min(times)
        print(f"{name:32s} {n / t:12,.0f} packets/s  ({t:.3f} s for {n:,}; {stats.gro_skbs:,} GRO skbs)")
