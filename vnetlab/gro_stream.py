"""GRO over a whole flow at once, with numpy: the rules of vnetlab.gro for millions of packets.

:func:`simulate_stream` runs a flow through virtio-net's mergeable page_to_skb() (vnetlab.rx_classify) and
GRO as numpy passes over blocks of NAPI polls; the tests cross-check every statistic with gro.aggregate_trace.
Kept apart so that the per-skb GRO model imports no numpy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vnetlab.checks import check_int, int_array, public
from vnetlab.errors import ArgumentError
from vnetlab.groflow import FINAL_FLUSH, TCP_FLAG_BIT, FlowParams, cmp_mask, cwr_flush_mask, flow_params
from vnetlab.headers import (
    ETH_HLEN,
    GRO_LEGACY_MAX_SIZE,
    TCP_FRAGLIST_CNT_MAX,
    TCP_HLEN_TS,
    UDP_GRO_CNT_MAX,
)
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel
from vnetlab.rx_classify import classify
from vnetlab.rxbuf import mergeable_buf_lens
from vnetlab.skbuff import napi_alloc_skb
from vnetlab.virtio import GOOD_COPY_LEN, L4, MRG_RXBUF_HDR_LEN, NAPI_POLL_WEIGHT, PATH_CODES, IpVersion, PayloadLen

_PAYLOAD = PayloadLen.__metadata__[0]  # virtio.PayloadLen: one range for a payload, whichever way it is given


@dataclass
class StreamStats:
    """One flow of packets through the receive model and GRO (see :func:`simulate_stream`)."""

    packets: int
    path_counts: dict[str, int]
    gro_skbs: int
    segs_per_skb: np.ndarray  # packets in each skb handed up, in order
    first_skb_packets: np.ndarray  # packets in the first sk_buff of each skb handed up
    sk_buffs_per_skb: np.ndarray  # sk_buffs (p + frag_list members) of each skb handed up
    frags_per_skb: np.ndarray  # frags over p and its frag_list members
    len_per_skb: np.ndarray  # p->len (from the network header)
    truesize_per_skb: np.ndarray
    payload_bytes: int
    rx_truesize: int  # truesize of the skbs page_to_skb built

    @property
    def mean_segs(self) -> float:
        return float(self.segs_per_skb.mean()) if self.gro_skbs else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "packets": self.packets, "paths": dict(self.path_counts), "gro_skbs": self.gro_skbs,
            "mean_packets_per_gro_skb": round(self.mean_segs, 3), "frags": int(self.frags_per_skb.sum()),
            "frag_list_members": int((self.sk_buffs_per_skb - 1).sum()), "payload_bytes": self.payload_bytes,
            "truesize": int(self.truesize_per_skb.sum()),
        }


def _next_change(x: np.ndarray) -> np.ndarray:
    """For each i, the first j > i with x[j] != x[i] (len(x) if none)."""
    n = x.size
    starts = np.flatnonzero(x[1:] != x[:-1]) + 1
    bounds = np.concatenate(([0], starts, [n]))
    return np.repeat(bounds[1:], np.diff(bounds))


def _next_true(mask: np.ndarray) -> np.ndarray:
    """For each i, the first j > i with mask[j] (len(mask) if none)."""
    n = mask.size
    pos = np.flatnonzero(mask)
    bounds = np.concatenate(([0], pos, [n]))
    return np.repeat(np.append(pos, n), np.diff(bounds))


# add_recvbuf_mergeable's carving repeats every 21 buffers per 32 KiB frag (docs/kernel/rx.md#a5); 32 frags of it
# also cover the 64 KiB-page arches (42 buffers per frag).
_BUF_PERIOD = 32 * 21
# packets per block of NAPI polls in simulate_stream: its temporaries stay in the CPU caches
_BLOCK = 1 << 16
# simulate_stream's longest flow: a few seconds and a few hundred MiB for a payload mix on one core (its
# per-GRO-skb arrays grow with the flow; tests/test_gro.py runs the maximum under memory and CPU-time limits).
MAX_STREAM_PACKETS = 1 << 22
_STREAM_N_MEANING = f"packets in the flow (at most {MAX_STREAM_PACKETS}: the per-skb arrays are kept in memory)"
_BUF_MEANING = "the mergeable buffer truesize per packet (ctx holds it in 22 bits)"


@dataclass(frozen=True)
class _Shapes:
    """What page_to_skb built for each (buffer, payload) entry and what skb_gro_receive does with it."""

    code: np.ndarray  # PATH_CODES
    truesize: np.ndarray  # truesize page_to_skb charged
    slots: np.ndarray  # frag slots the packet takes in lp when merged; MAX_SKB_FRAGS + 1 = never fits (case 3)
    delta: np.ndarray  # truesize p (and lp) gain when the packet is merged by case 1 or 2
    own_frags: np.ndarray  # frags of the packet's own skb (when it is p or a chained sk_buff)
    unfit: np.ndarray | None = None  # entries whose frame does not fit the buffer (no packet may use them)


def _shapes(frames: np.ndarray, bufs: np.ndarray, fp: FlowParams, hdr_len: int) -> _Shapes:
    k, a = fp.kernel, fp.arch
    # receive_mergeable: len > truesize is a length error; a table entry no packet has may be such a pair, so it
    # is classified as a stand-in frame and refused only if a packet uses it (_check_fit).
    unfit = frames + hdr_len > bufs
    if unfit.any():  # the stand-in must fit a buffer too (one shorter than ETH_HLEN + header is no buffer at all)
        frames = np.where(unfit, ETH_HLEN, frames)
        bufs = np.where(unfit, np.maximum(bufs, ETH_HLEN + hdr_len), bufs)
    else:
        unfit = None
    cls = classify(frames, bufs, hdr_len=hdr_len, kernel=k, arch=a)
    build = cls.codes == PATH_CODES["build_skb"]
    own_frags = cls.frags.astype(np.int64)
    head = napi_alloc_skb(GOOD_COPY_LEN, kernel=k, arch=a)
    off, most = fp.offset, fp.max_skb_frags
    # page_to_skb: build_skb(buf, truesize) -> SKB_TRUESIZE(truesize - shinfo); else head + the buffer as a frag.
    truesize = np.where(build, bufs - a.shinfo_size + a.skb_truesize(0),
                        head.truesize + np.where(own_frags > 0, bufs, 0))
    end = np.where(build, bufs - a.shinfo_size, head.end_offset)
    headlen = np.where(build, frames, cls.copied) - ETH_HLEN
    in_frags = headlen <= off
    # skb_gro_receive (6.1): slots in lp: case 1 nr_frags, case 2 (head_frag) 1 + nr_frags, case 3 never.
    slots = np.where(in_frags, own_frags, np.where(build | bool(head.head_frag), 1 + own_frags, most + 1))
    slots = np.where(in_frags & (own_frags == 0), most + 1, slots)
    # skb_gro_receive (6.1): case 1 keeps SKB_TRUESIZE(skb_end_offset), case 2 SKB_DATA_ALIGN(sizeof(sk_buff)).
    delta = np.where(in_frags, truesize - a.skb_truesize(end), truesize - a.skb_data_align(a.sk_buff_size))
    return _Shapes(cls.codes, truesize.astype(np.int64), slots.astype(np.int64), delta.astype(np.int64), own_frags,
                   unfit)


def _check_fit(sh: _Shapes, flat: np.ndarray, first: int, payload: Callable[[int], int],
               buf: Callable[[int], int], hdr_len: int) -> None:
    """Refuse the first packet of a block (``flat``: its entries; ``first``: its first packet) whose frame and
    virtio-net header do not fit its buffer: receive_mergeable's length error (single-buffer packets only)."""
    if sh.unfit is None:
        return
    bad = sh.unfit[flat]
    if bad.any():
        i = first + int(np.argmax(bad))
        raise ArgumentError(f"packet {i}: payload_len {payload(i)} with its headers and the {hdr_len}-byte "
                            f"virtio-net header does not fit its {buf(i)}-byte buffer (buf_lens): a length error in "
                            "receive_mergeable; simulate_stream takes single-buffer packets only", param="buf_lens")


def _few_values(x: np.ndarray, block: int, lo: int, hi: int, most: int = 16
                ) -> tuple[int, np.ndarray, np.ndarray] | None:
    """(lo, lut, values) when x (whose min and max are lo and hi) holds at most ``most`` distinct ints in a short
    range, with lut[v - lo] the index of v in the sorted distinct values; None otherwise. Avoids sorting x (and
    temporaries as large as x)."""
    if hi - lo > 1 << 16:
        return None
    present = np.zeros(hi - lo + 1, dtype=bool)
    for s in range(0, x.size, block):
        present[x[s:s + block] - lo] = True
    vals = np.flatnonzero(present)
    if vals.size > most:
        return None
    lut = np.zeros(hi - lo + 1, dtype=np.intp)
    lut[vals] = np.arange(vals.size)
    return lo, lut, vals + lo


@functools.lru_cache(maxsize=64)
def _carved_period(k: Kernel, a: Arch, hdr_len: int) -> tuple[int, ...]:
    """add_recvbuf_mergeable's buffer truesizes at the EWMA floor, one carving period (rx.mergeable_buf_lens)."""
    return tuple(mergeable_buf_lens(_BUF_PERIOD, kernel=k, arch=a, hdr_len=hdr_len))


def _cumsum0(x: np.ndarray) -> np.ndarray:
    """[0, x0, x0 + x1, ...] in one pass."""
    out = np.empty(x.size + 1, dtype=np.int64)
    out[0] = 0
    np.cumsum(x, out=out[1:])
    return out


def _uniform(x: np.ndarray, used: np.ndarray) -> int | None:
    """The one value x takes over the used entries, or None."""
    vals = x[used]
    lo = int(vals.min())
    return lo if lo == int(vals.max()) else None


@public
def simulate_stream(n_packets: int | None = None, payload_len: Any = 1448, *, l4: L4 = "tcp", ip: IpVersion = 4,
                    vlan: bool = False, tcp_hdr_len: int = TCP_HLEN_TS, udp_gro: bool = False, features: Any = None,
                    local_socket: bool | None = None, udp_encap_needed: bool | None = None,
                    kernel: str | Kernel = DEFAULT_KERNEL, arch: str | Arch = DEFAULT_ARCH,
                    gro_max_size: int = GRO_LEGACY_MAX_SIZE, napi_budget: int | None = NAPI_POLL_WEIGHT,
                    buf_lens: Any = None, hdr_len: int = MRG_RXBUF_HDR_LEN, tcp_flags: Any = None,
                    seed: int | None = 0) -> StreamStats:
    """A flow of ``n_packets`` through virtio-net's mergeable page_to_skb() and GRO, with numpy.

    ``payload_len``: one size, an array of sizes (one per packet), or a dict {size: weight} drawn with
    ``seed``. ``buf_lens``: buffer truesize per packet (default: rx.mergeable_buf_lens carving, repeated).
    ``tcp_flags``: optional int array of TCP flag bits (gro.TCP_FLAG_BIT). Single-buffer packets only: a packet whose
    frame and header do not fit its buffer is refused by its index. At most MAX_STREAM_PACKETS (4,194,304) packets.

    The same rules as :func:`aggregate_trace` (the tests cross-check every statistic), as numpy passes over
    blocks of NAPI polls: Python loops only over the blocks, and over the k-th GRO skb of all polls of a block
    at once, never over packets.
    """
    fp = flow_params(l4=l4, ip=ip, vlan=vlan, tcp_hdr_len=tcp_hdr_len, udp_gro=udp_gro, local_socket=local_socket,
                     udp_encap_needed=udp_encap_needed, features=features, kernel=kernel, arch=arch,
                     gro_max_size=gro_max_size)
    k, a = fp.kernel, fp.arch
    # ---- the payload of every packet
    const_p: int | None = None
    cols: np.ndarray | None = None  # the payload sizes the table has a column for
    col: np.ndarray | None = None  # each packet's column
    if seed is not None:
        check_int("seed", seed, 0, 2**63 - 1, "the numpy.random.default_rng seed of the payload draws")
    if isinstance(payload_len, dict):
        n = check_int("n_packets", n_packets, 1, MAX_STREAM_PACKETS, _STREAM_N_MEANING)
        if not payload_len:
            raise ArgumentError("payload_len must not be an empty dict: give {payload bytes: weight}",
                                param="payload_len")
        for p, wt in payload_len.items():
            check_int("payload_len key", p, _PAYLOAD.lo, _PAYLOAD.hi, _PAYLOAD.meaning)
            if isinstance(wt, bool) or not isinstance(wt, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(wt) or wt < 0:
                raise ArgumentError(f"payload_len[{p}]={wt!r}: a weight must be a finite number >= 0",
                                    param="payload_len")
        cols = np.fromiter(payload_len.keys(), dtype=np.int64)
        weights = np.asarray(list(payload_len.values()), dtype=float)
        if weights.sum() <= 0:
            raise ArgumentError("payload_len weights must be non-negative with a positive sum", param="payload_len")
        cdf = np.cumsum(weights / weights.sum())
        cdf /= cdf[-1]  # numpy Generator.choice(p=...): the same draws as before
        draws = np.random.default_rng(seed).random(n)
        if cols.size <= 16:
            # how many cdf values are <= u, as searchsorted(side="right") counts them, in a few passes
            col = np.zeros(n, dtype=np.intp)
            for c in cdf[:-1]:
                col += draws >= c
        else:
            col = np.minimum(np.searchsorted(cdf, draws, side="right"), cols.size - 1)
        payloads = cols[col]
        pmin, pmax = int(cols.min()), int(cols.max())
    elif np.ndim(payload_len) == 0:
        n = check_int("n_packets", n_packets, 1, MAX_STREAM_PACKETS, _STREAM_N_MEANING)
        const_p = check_int("payload_len", payload_len, _PAYLOAD.lo, _PAYLOAD.hi, _PAYLOAD.meaning)
        payloads = None
    else:
        payloads = int_array("payload_len", payload_len, "L4 payload bytes, one per packet", ndim=1).astype(np.int64,
                                                                                                       copy=False)
        n = payloads.size
        if n_packets is not None and n_packets != n:
            raise ArgumentError(f"n_packets ({n_packets}) must match len(payload_len) ({n})", param="n_packets")
        if n == 0:
            raise ArgumentError("payload_len must not be empty", param="payload_len")
        check_int("len(payload_len)", n, 1, MAX_STREAM_PACKETS, _STREAM_N_MEANING)
    if payloads is not None and cols is None:
        pmin, pmax = int(payloads.min()), int(payloads.max())
        if pmin < _PAYLOAD.lo or pmax > _PAYLOAD.hi:
            raise ArgumentError(f"payload_len must be in {_PAYLOAD.lo}..{_PAYLOAD.hi} ({_PAYLOAD.meaning})",
                                param="payload_len")
        cols = np.arange(pmin, pmax + 1, dtype=np.int64)
    if payloads is not None and pmin == pmax:
        const_p, payloads, cols, col = pmin, None, None, None
    if napi_budget is not None:
        check_int("napi_budget", napi_budget, 1, 1 << 30, "packets per NAPI poll")
    budget = n if napi_budget is None else min(int(napi_budget), n)
    flags = None
    if tcp_flags is not None:
        if l4 != "tcp":
            raise ArgumentError("tcp_flags is only meaningful with l4='tcp'", param="tcp_flags")
        flags = int_array("tcp_flags", tcp_flags, "TCP flag bits per packet (gro.TCP_FLAGS, bit i = TCP_FLAGS[i])")
        if flags.shape != (n,):
            raise ArgumentError(f"tcp_flags must be an int array with one entry per packet ({n})", param="tcp_flags")
        if n and (int(flags.min()) < 0 or int(flags.max()) > 0xFF):
            raise ArgumentError(f"tcp_flags has {int(flags.min()) if flags.min() < 0 else int(flags.max())}: the 8 "
                                "flag "
                                "bits of "
                                "the TCP header (FIN..CWR) are 0..255", param="tcp_flags")
        flags = flags.astype(np.int64, copy=False)
    off = fp.offset
    hdrs = ETH_HLEN + off
    # net/core/dev.c napi_complete_done (6.1): napi_gro_flush() at every poll end (gro_flush_timeout 0), so polls
    # are independent: the flow goes through in blocks of whole polls that stay in the CPU caches (one block
    # without a budget)
    block = n if napi_budget is None else budget * max(1, _BLOCK // budget)
    # ---- what page_to_skb built: a table per (buffer, payload), or per packet when buffers are given per packet
    cols_ = np.asarray([const_p], dtype=np.int64) if cols is None else cols
    width = cols_.size
    # a packet's table entry is row * width + its payload's column (col, or payloads - pmin when given per packet)
    base = pmin if (payloads is not None and col is None) else 0
    rows: Callable[[int, int], np.ndarray] | None = None  # row * width - base of packets s..e-1; None: per packet
    if buf_lens is None or np.ndim(buf_lens) == 0:
        if buf_lens is None:
            period = np.asarray(_carved_period(k, a, hdr_len), dtype=np.int64)
        else:
            period = np.asarray([check_int("buf_lens", buf_lens, 1, 1 << 22, _BUF_MEANING)], dtype=np.int64)
        bufs_in = period

        def buf_of(i: int) -> int:
            return int(bufs_in[i % bufs_in.size])

        bvals, per_idx = np.unique(period, return_inverse=True)
        sh = _shapes(np.tile(cols_ + hdrs, bvals.size), np.repeat(bvals, width), fp, hdr_len)
        tiled = np.resize(per_idx.astype(np.intp) * width - base, min(n, block + period.size))

        def carved_rows(s: int, e: int) -> np.ndarray:
            return tiled[s % period.size:][:e - s].copy()

        rows = carved_rows

    else:
        bufs = int_array("buf_lens", buf_lens, _BUF_MEANING).astype(np.int64, copy=False)
        if bufs.shape != (n,):
            raise ArgumentError(f"buf_lens must be one int or one per packet ({n})", param="buf_lens")
        b_lo, b_hi = int(bufs.min()), int(bufs.max())
        if b_lo < 1 or b_hi > 1 << 22:
            raise ArgumentError(f"buf_lens has {b_lo if b_lo < 1 else b_hi}, out of range 1..{1 << 22}: {_BUF_MEANING}",
                                param="buf_lens")

        def buf_of(i: int) -> int:
            return int(bufs[i])

        few = _few_values(bufs, block, b_lo, b_hi)
        if few is not None and few[2].size * width <= max(4096, n // 4):
            # a few buffer sizes (the carving gives 2 or 3): one table entry per (buffer, payload)
            lo, lut, bvals = few
            sh = _shapes(np.tile(cols_ + hdrs, bvals.size), np.repeat(bvals, width), fp, hdr_len)
            lut = lut * width - base

            def given_rows(s: int, e: int) -> np.ndarray:
                return lut[bufs[s:e] - lo]

            rows = given_rows

        else:
            sh = _shapes((np.full(n, const_p, np.int64) if payloads is None else payloads) + hdrs, bufs, fp, hdr_len)

    def payload_of(i: int) -> int:
        return int(const_p if payloads is None else payloads[i])

    counts = np.zeros(sh.code.size, dtype=np.int64) if rows is not None else np.ones(n, dtype=np.int64)
    pieces = []
    for s in range(0, n, block):
        e = min(n, s + block)
        if rows is not None:
            flat = rows(s, e)
            if width > 1:
                flat += payloads[s:e] if col is None else col[s:e]
            _check_fit(sh, flat, s, payload_of, buf_of, hdr_len)
            per_entry = np.bincount(flat, minlength=sh.code.size)
            counts += per_entry
            sh_b = sh
        else:
            _check_fit(sh, np.arange(s, e), s, payload_of, buf_of, hdr_len)
            flat, per_entry = np.arange(e - s), np.ones(e - s, dtype=np.int64)
            sh_b = _Shapes(*(x[s:e] for x in (sh.code, sh.truesize, sh.slots, sh.delta, sh.own_frags)))
        pieces.append(_stream_block(fp, e - s, budget, const_p, None if payloads is None else payloads[s:e],
                                    None if flags is None else flags[s:e], sh_b, per_entry, flat))
    # the six per-skb arrays in one buffer: one allocation, which the allocator can hand back call after call
    out = np.empty((6, sum(p[0].size for p in pieces)), dtype=np.int64)
    for row, parts in zip(out, zip(*pieces)):
        np.concatenate(parts, out=row)
    path_counts = {name: int(counts[sh.code == c].sum()) for name, c in PATH_CODES.items()}
    return StreamStats(packets=n, path_counts=path_counts, gro_skbs=int(out[0].size), segs_per_skb=out[0],
                       first_skb_packets=out[1], sk_buffs_per_skb=out[2], frags_per_skb=out[3], len_per_skb=out[4],
                       truesize_per_skb=out[5],
                       payload_bytes=n * const_p if payloads is None else int(payloads.sum(dtype=np.int64)),
                       rx_truesize=int((counts * sh.truesize).sum()))


def _stream_block(fp: FlowParams, n: int, budget: int, const_p: int | None, payloads: np.ndarray | None,
                  flags: np.ndarray | None, sh: _Shapes, counts: np.ndarray,
                  flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """A block of whole NAPI polls through GRO: (packets, packets in the first sk_buff, sk_buffs, frags, len,
    truesize) of each skb handed up, in order. ``flat``: each packet's entry in ``sh``; ``counts``: the block's
    packets per entry."""
    off = fp.offset
    if not fp.aggregates:
        ones = np.ones(n, dtype=np.int64)
        return (ones, ones, ones, sh.own_frags[flat].astype(np.int64),
                (np.full(n, const_p, np.int64) if payloads is None else payloads) + off, sh.truesize[flat])
    if fp.l4 != "udp" or payloads is None or payloads.min() > 0:
        return _gro_skb_stats(fp, _stream_groups(fp, n, budget, const_p, payloads, flags, None), sh, counts, flat)
    # udp_gro_receive_segment (6.1): uh->len <= sizeof(*uh) is flushed without completing p, so 0-byte
    # datagrams go up alone while the held skb stays: group the others, then put them back in order.
    zeros = np.flatnonzero(payloads == 0)
    ones = np.ones(zeros.size, np.int64)
    alone = (ones, ones, ones, sh.own_frags[flat[zeros]].astype(np.int64), ones * off, sh.truesize[flat[zeros]])
    if zeros.size == n:
        return alone
    orig = np.flatnonzero(payloads)
    groups = _stream_groups(fp, n, budget, const_p, payloads, flags, orig)
    st = _gro_skb_stats(fp, groups, sh, counts, flat[orig])
    order = np.argsort(np.concatenate((groups.times, zeros.astype(float))), kind="stable")
    return tuple(np.concatenate((g, z))[order] for g, z in zip(st, alone))


@dataclass(frozen=True)
class _Groups:
    starts: np.ndarray  # first packet of each GRO skb, in the order they go up
    ends: np.ndarray  # one past its last packet
    segs: np.ndarray  # its packets
    payload: np.ndarray  # its payload bytes
    times: np.ndarray  # when it goes up, in packet indices of the uncompressed flow (only with 0-byte UDP)


def _stream_groups(fp: FlowParams, n: int, budget: int, const_p: int | None, payloads: np.ndarray | None,
                   flags: np.ndarray | None, orig: np.ndarray | None) -> _Groups:
    """The GRO skbs of the flow: the rules of aggregate_trace (tcp_gro_receive / udp_gro_receive_segment, the
    size cap, UDP_GRO_CNT_MAX, napi_complete_done at every poll end). Where a GRO skb that begins at a packet
    ends follows from the payloads and flags alone, for every packet at once; the GRO skbs are then chained
    from each poll's first packet, all polls together."""
    l4, off = fp.l4, fp.offset
    # skb_gro_receive: refused once p->len + len >= cap; skb_gro_receive_list: p->len + skb->len >= 65536.
    cap_room = (GRO_LEGACY_MAX_SIZE - 2 * off) if fp.is_flist else (fp.cap_limit - off)
    # udp_gro_receive_segment: UDP_GRO_CNT_MAX; tcp_gro_receive (6.10+): a fraglist flow completes at 64.
    cnt_max = UDP_GRO_CNT_MAX if l4 == "udp" else (TCP_FRAGLIST_CNT_MAX if fp.is_flist else n)
    if payloads is None and flags is None:
        # constant payload: every GRO skb holds what the cap and the count allow, or what is left of the poll
        # (tcp_gro_receive and udp_gro_receive_segment merge no 0-byte payload)
        per = 1 if const_p == 0 else min(max(1, -(-cap_room // const_p) - 1), cnt_max)
        polls = np.arange(0, n, budget)
        lens = np.minimum(budget, n - polls)
        reps = -(-lens // per)
        g_s = np.repeat(polls, reps) + (np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)) * per
        g_e = np.minimum(g_s + per, np.repeat(polls + lens, reps))
        segs = g_e - g_s
        return _Groups(g_s, g_e, segs, segs * const_p, np.zeros(0))
    if payloads is None:
        payloads = np.full(n, const_p, dtype=np.int64)
    if orig is not None:
        payloads = payloads[orig]
    n_kept = payloads.size
    first = np.arange(0, n, budget)
    if orig is not None:
        first = np.searchsorted(orig, first)
    poll_start = np.zeros(n_kept + 1, dtype=bool)  # each poll's first packet, and n_kept
    poll_start[first] = True
    poll_start[n_kept] = True
    # ---- end[i]: one past the last packet of a GRO skb that begins at packet i. It takes the rest of its run
    # of equal payloads (runs are cut at poll starts), and the next packet too if that one is shorter:
    # tcp_gro_receive (6.1): payload > mss (or 0) is refused; a shorter one merges, then flushes.
    # udp_gro_receive_segment (6.1): a longer datagram is refused; a shorter one merges, then completes p.
    new_run = poll_start[:n_kept].copy()
    np.logical_or(new_run[1:], payloads[1:] != payloads[:-1], out=new_run[1:])
    run_starts = np.flatnonzero(new_run)
    run_payload = payloads[run_starts]
    shorter = np.append(run_payload[1:] < run_payload[:-1], False)
    shorter[:-1] &= ~poll_start[run_starts[1:]]
    if l4 == "tcp":
        shorter[:-1] &= run_payload[1:] != 0
    run_end = np.append(run_starts[1:], n_kept) + shorter
    # the size cap can only cut into a run whose payloads from its first packet to run_end reach cap_room
    capped = (run_end - run_starts) * run_payload >= cap_room
    run = np.cumsum(new_run)
    run -= 1
    end = run_end[run]
    if l4 == "tcp":
        alone = payloads == 0
        if flags is not None:
            # tcp_gro_receive (6.1): CWR (up to 6.18) and a flag mismatch refuse; PSH|FIN merge then flush;
            # URG|PSH|RST|SYN|FIN at the head of a group (nothing to merge into) go up alone (out_check_final).
            alone |= (flags & FINAL_FLUSH) != 0
            refs = [_next_change(flags & cmp_mask(fp)), _next_true((flags & cwr_flush_mask(fp)) != 0)]
            if fp.is_flist:
                refs.append(_next_change(flags))  # tcp_gro_receive (6.18): fraglist flows need equal flags
            is_close = shorter[run]
            ref_all = np.where(is_close, n_kept, end)
            np.minimum(ref_all, np.minimum.reduce(refs), out=ref_all)
            close_all = np.where(is_close, end, n_kept + 1)
            psh_fin = TCP_FLAG_BIT["PSH"] | TCP_FLAG_BIT["FIN"]
            np.minimum(close_all, _next_true((flags & psh_fin) != 0) + 1, out=close_all)
            end = np.minimum(ref_all, close_all)
        single = np.flatnonzero(alone)
        end[single] = single + 1
    if cnt_max < budget:  # (a poll of at most cnt_max packets never reaches the count)
        np.minimum(end, np.arange(cnt_max, n_kept + cnt_max), out=end)
    if capped.any():
        # skb_gro_receive (6.1): refused, the first packet that takes the payload from i to cap_room or more
        big = np.flatnonzero(capped[run])
        payload_cum = _cumsum0(payloads)
        cut = np.searchsorted(payload_cum, payload_cum[big] + cap_room, side="left") - 1
        end[big] = np.minimum(end[big], np.maximum(cut, big + 1))
    # ---- chain the GRO skbs from each poll's first packet; a chain stops at the next poll's first packet
    pos = np.flatnonzero(poll_start[:n_kept])
    free = ~poll_start  # packets no GRO skb begins at yet
    while pos.size:
        pos = end[pos]
        pos = pos[free[pos]]
        free[pos] = False
    g_s = np.flatnonzero(~free[:n_kept])
    g_e = np.append(g_s[1:], n_kept)
    segs = g_e - g_s
    # every packet of a GRO skb has its first packet's payload, but the last, which may be shorter
    last = payloads[g_e - 1]
    payload = segs - 1
    payload *= payloads[g_s]
    payload += last
    times = np.zeros(0)
    if orig is not None:
        # when the GRO skb goes up: right after merging its last datagram (a shorter one, or the 64th),
        # else just before the refused one, else at the poll end
        after = (last < payloads[g_s]) | (segs == cnt_max)
        poll_end = np.minimum((orig[g_s] // budget + 1) * budget, n)
        refused = np.minimum(np.append(orig, n)[g_e], poll_end)
        times = np.where(after, orig[g_e - 1] + 0.5, refused - 0.5)
    return _Groups(g_s, g_e, segs, payload, times)


@dataclass(frozen=True)
class _SkBuffs:
    per_group: np.ndarray  # sk_buffs (p and its frag_list members) of each group
    first: np.ndarray  # packets in each group's first sk_buff
    chained: np.ndarray | None  # first packet of every sk_buff chained on a frag_list; None: every packet's own
    group: np.ndarray | None  # the group of each chained sk_buff


def _stream_sk_buffs(fp: FlowParams, g_s: np.ndarray, g_e: np.ndarray, segs: np.ndarray, ent: np.ndarray,
                     sh: _Shapes, counts: np.ndarray, flat: np.ndarray) -> _SkBuffs:
    """Where each GRO skb's sk_buffs begin: skb_gro_receive fills lp's frags (next fit) and chains a new
    sk_buff on frag_list (case 3) when a packet does not fit; fraglist GRO chains every packet.
    ``ent``: the table entry of each group's first packet."""
    n_groups = g_s.size
    most = fp.max_skb_frags
    if fp.is_flist or n_groups == flat.size:
        # skb_gro_receive_list chains every packet whole
        return _SkBuffs(segs, np.ones(n_groups, np.int64), None, None)
    used = counts > 0
    # the frag slots a merged packet takes (those a GRO skb took after its first; not those of a packet that
    # only ever goes up alone, a 0-byte TCP segment)
    slots_u = _uniform(sh.slots, used)
    if slots_u is None:
        slots_u = _uniform(sh.slots, counts > np.bincount(ent, minlength=counts.size))
    if slots_u is not None and slots_u > most:
        # case 3 for every packet: each packet is an sk_buff of its own
        return _SkBuffs(segs, np.ones(n_groups, np.int64), None, None)
    own_frags_u = _uniform(sh.own_frags, used)
    if slots_u is not None and own_frags_u is not None:
        # the same shape for every packet: every sk_buff holds 1 + (MAX_SKB_FRAGS - own_frags) // slots packets
        per = 1 + max(most - own_frags_u, 0) // slots_u
        reps = -(-segs // per)
        multi = np.flatnonzero(reps > 1)
        more = reps[multi] - 1  # the sk_buffs chained on those groups' frag_list
        group = np.repeat(multi, more)
        k = np.arange(1, group.size + 1) - np.repeat(np.cumsum(more) - more, more)  # 1, 2, .. in each group
        return _SkBuffs(reps, np.minimum(per, segs), g_s[group] + k * per, group)
    room = most - sh.own_frags  # frag slots left in an sk_buff after its first packet, per table entry
    slots_cum = _cumsum0(sh.slots[flat]) if slots_u is None else None
    take = None if slots_u is None else 1 + np.maximum(room, 0) // slots_u  # packets per sk_buff

    def sk_buff_end(pos: np.ndarray, entry: np.ndarray, end: np.ndarray) -> np.ndarray:
        """One past the last packet of the sk_buff that begins at each of pos (table entry ``entry``)."""
        if take is not None:
            nxt = pos + take[entry]
        else:
            nxt = np.searchsorted(slots_cum, slots_cum[pos + 1] + room[entry], side="right") - 1
            np.maximum(nxt, pos + 1, out=nxt)
        return np.minimum(nxt, end, out=nxt)

    first = sk_buff_end(g_s, ent, g_e)
    gid = np.flatnonzero(first < g_e)
    first -= g_s
    pos, end = g_s[gid] + first[gid], g_e[gid]
    s_pos, s_gid = [], []
    while pos.size:
        s_pos.append(pos)
        s_gid.append(gid)
        nxt = sk_buff_end(pos, flat[pos], end)
        keep = nxt < end
        pos, gid, end = nxt[keep], gid[keep], end[keep]
    chained = np.concatenate(s_pos) if s_pos else np.zeros(0, np.intp)
    group = np.concatenate(s_gid) if s_gid else np.zeros(0, np.intp)
    per_group = np.bincount(group, minlength=n_groups)
    per_group += 1
    return _SkBuffs(per_group, first, chained, group)


def _gro_skb_stats(fp: FlowParams, groups: _Groups, sh: _Shapes, counts: np.ndarray,
                   flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """(packets, packets in the first sk_buff, sk_buffs, frags, len, truesize) of each GRO skb."""
    g_s, g_e, segs = groups.starts, groups.ends, groups.segs
    n_groups = g_s.size
    ent = flat[g_s]  # the table entry of each group's first packet
    sk = _stream_sk_buffs(fp, g_s, g_e, segs, ent, sh, counts, flat)
    used = counts > 0

    def group_sum(x: np.ndarray) -> np.ndarray:
        """Per group sum of a per-table-entry quantity over the group's packets (groups tile the flow)."""
        same = _uniform(x, used)
        if same is not None:
            return segs * same
        c = _cumsum0(x[flat])
        return c[g_e] - c[g_s]

    if sk.chained is None:
        # every packet an sk_buff of its own: its frags and its whole truesize
        frags = group_sum(sh.own_frags)
        truesize = group_sum(sh.truesize)
    else:
        # an sk_buff's first packet brings its own frags and whole truesize; the others d slots and delta
        corr_f = sh.own_frags - sh.slots
        corr_t = sh.truesize - sh.delta
        frags = group_sum(sh.slots)
        frags += corr_f[ent]
        truesize = group_sum(sh.delta)
        truesize += corr_t[ent]
        if sk.chained.size:
            ent = flat[sk.chained]
            frags += np.bincount(sk.group, weights=corr_f[ent], minlength=n_groups).astype(np.int64)
            truesize += np.bincount(sk.group, weights=corr_t[ent], minlength=n_groups).astype(np.int64)
    lens = groups.payload
    lens += fp.offset
    return segs, sk.first, sk.per_group, frags, lens, truesize
