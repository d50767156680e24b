"""Speed of the receive models against the simplest numpy expression of the build_skb rule, in one run.

Over the same 2,000,000 frames (a mix of small, mid and full-MTU frames in buffers carved from 32 KiB frags):
  - baseline: the build_skb rule alone, np.where((frame > 128) & (truesize - hdr_len - frame >= shinfo), 2, 1)
  - rx.classify: page_to_skb()'s complete decision (codes, tailroom, frags, bytes copied)
  - gro.simulate_stream: the same frames as one UDP flow to a UDP_GRO socket, receive + GRO
Goals: classify within 4x of the baseline; the stream at 20 M packets/s or more.
Each is timed RUNS times after a warm-up call; ratios and rates use the medians (the minimum in brackets).

Run: nice .venv/bin/python benchmarks/bench_rx_classify.py
"""

import os
import statistics
import time

import numpy as np

from vnetlab import gro, profiles, rx

N = 2_000_000
RUNS = 7


def frames_and_buffers(n: int = N) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    # small (ACK/DNS-like, copied whole), mid (1000-byte UDP, build_skb), full MTU (copy path but in 2048 buffers)
    frames = np.concatenate([rng.integers(60, 129, n // 4), rng.integers(129, 1205, n // 4), np.full(n - n // 2, 1514)])
    rng.shuffle(frames)
    # add_recvbuf_mergeable at MTU 1500: twenty 1536-byte buffers, then the hole-extended 2048 (docs/kernel/rx.md#a5)
    truesizes = np.resize(np.asarray(rx.mergeable_buf_lens(21), dtype=np.int64), n)
    return frames, truesizes


def baseline(frames: np.ndarray, truesizes: np.ndarray, hdr_len: int, shinfo: int) -> np.ndarray:
    return np.where((frames > rx.GOOD_COPY_LEN) & (truesizes - hdr_len - frames >= shinfo), 2, 1)


def timed(fn, runs: int = RUNS) -> tuple[float, float]:
    """(median, min) seconds of ``runs`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main() -> None:
    frames, truesizes = frames_and_buffers()
    k = profiles.DEFAULT_KERNEL
    shinfo = profiles.arch(profiles.DEFAULT_ARCH, k).shinfo_size
    hdr = rx.MRG_RXBUF_HDR_LEN
    payloads = frames - 42  # the frames as IPv4/UDP: 14 + 20 + 8 header bytes
    codes = rx.classify(frames, truesizes, kernel=k).codes
    assert np.array_equal(codes == 2, baseline(frames, truesizes, hdr, shinfo) == 2)  # same build_skb decisions

    def stream() -> gro.StreamStats:
        return gro.simulate_stream(payload_len=payloads, buf_lens=truesizes, l4="udp", udp_gro=True, kernel=k)

    load_before = os.getloadavg()[0]
    base, base_min = timed(lambda: baseline(frames, truesizes, hdr, shinfo))
    cls, cls_min = timed(lambda: rx.classify(frames, truesizes, kernel=k))
    st, st_min = timed(stream)
    load = os.getloadavg()
    print(f"frames: {N:,} (kernel {k}); median (min) of {RUNS} runs; load average {load_before:.2f} before, "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} after, on {os.cpu_count()} CPUs")
    print(f"  baseline build_skb rule  {base * 1e3:7.2f} ms ({base_min * 1e3:6.2f})  {N / base / 1e6:6.1f} M frames/s")
    print(f"  rx.classify              {cls * 1e3:7.2f} ms ({cls_min * 1e3:6.2f})  {N / cls / 1e6:6.1f} M frames/s   "
          f"ratio {cls / base:5.2f}x ({cls_min / base_min:5.2f}x) the baseline (goal <= 4x)")
    print(f"  gro.simulate_stream      {st * 1e3:7.2f} ms ({st_min * 1e3:6.2f})  {N / st / 1e6:6.1f} M packets/s "
          f"({N / st_min / 1e6:.1f})  ratio {st / base:5.2f}x ({st_min / base_min:5.2f}x) the baseline "
          f"(goal >= 20 M packets/s; {stream().gro_skbs:,} GRO skbs)")


if __name__ == "__main__":
    main()
