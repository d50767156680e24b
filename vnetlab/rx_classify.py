"""page_to_skb()'s decision for arrays of frames, with numpy (the benchmark and the threshold maps).

The same rules as vnetlab.rx.page_to_skb (tests cross-check them), as whole-array passes. Kept apart so that
the per-skb receive model imports no numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from vnetlab.checks import check_choice, int_array, public
from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_HLEN
from vnetlab.profiles import DEFAULT_ARCH, DEFAULT_KERNEL, Arch, Kernel, resolve
from vnetlab.rxbuf import big_max_frame, big_pages_range, mergeable_truesize_max
from vnetlab.skbuff import napi_alloc_skb
from vnetlab.virtio import GOOD_COPY_LEN, MRG_RXBUF_HDR_LEN, VIRTIO_XDP_HEADROOM, check_hdr_len, hdr_padded_len

if TYPE_CHECKING:  # int_array checks these arguments; @public leaves a TYPE_CHECKING-only annotation unchecked
    from numpy.typing import ArrayLike


class Classification(NamedTuple):
    """page_to_skb()'s decision for an array of frames (see :func:`classify`)."""

    codes: np.ndarray  # int8 PATH_CODES
    tailroom: np.ndarray  # the tailroom page_to_skb tests (-1 where the kernel has no build_skb branch)
    frags: np.ndarray  # int32 frag slots the skb uses
    copied: np.ndarray  # bytes copied into the napi_alloc_skb head (0 on the build_skb path)


@public
def classify(frame_lens: ArrayLike, truesizes: ArrayLike, *, mode: str = "mergeable",
             hdr_len: int = MRG_RXBUF_HDR_LEN, headroom: int = 0, kernel: str | Kernel = DEFAULT_KERNEL,
             arch: str | Arch = DEFAULT_ARCH) -> Classification:
    """page_to_skb()'s decision for arrays of single-buffer frames: (path codes, tailroom, frags, copied).

    Codes follow PATH_CODES. Same rules as :func:`page_to_skb` (tests cross-check them), written as a few
    whole-array passes: the build_skb test, the copy test against the napi head's tailroom, and the codes.
    """
    k, a = resolve(kernel, arch)
    check_choice("mode", mode, ("mergeable", "big"), "page_to_skb() runs in mergeable and big mode")
    check_hdr_len(hdr_len, k)
    check_choice("headroom", headroom, (0, VIRTIO_XDP_HEADROOM) if mode == "mergeable" else (0,),
                  "0, or VIRTIO_XDP_HEADROOM (256) for a mergeable buffer with an XDP program")
    frames = int_array("frame_lens", frame_lens, "frame lengths in bytes", ndim=1)
    trues = int_array("truesizes", truesizes, "buffer truesizes in bytes, one int or one per frame")
    if trues.ndim and trues.shape != frames.shape:
        raise ArgumentError(f"truesizes must be one int or one per frame ({frames.size}), got shape {trues.shape}",
                            param="truesizes")
    if trues.size:
        if mode == "big":
            t_lo = t_hi = a.page_size
            t_why = f"receive_big passes truesize = PAGE_SIZE ({a.page_size} on {a.name})"
        else:
            t_lo, (t_hi, t_why) = 1, mergeable_truesize_max(headroom, k, a)
        t_min, t_max = int(trues.min()), int(trues.max())
        if t_min < t_lo or t_max > t_hi:
            raise ArgumentError(f"truesizes has {t_min if t_min < t_lo else t_max}, out of range {t_lo}..{t_hi}: "
                                f"{t_why}",
                                param="truesizes")
    padded = hdr_padded_len(mode, hdr_len, k)
    head = napi_alloc_skb(GOOD_COPY_LEN, kernel=k, arch=a)
    has_build = k.rule("page_to_skb") == "build_skb"
    # page_to_skb (5.13-6.2): a buffer with XDP headroom is taken as PAGE_SIZE long.
    xdp_page = bool(headroom) and k.rule("xdp_truesize") == "page_size"
    # tailroom = truesize - headroom - hdr_padded_len - len (page_to_skb, 5.13+ with 1a8024239dac).
    tail = np.subtract((a.page_size if xdp_page else trues) - (headroom + padded), frames)
    if frames.size:
        lo = int(frames.min())
        if lo < ETH_HLEN:
            raise ArgumentError(f"frame_lens has {lo}: receive_buf drops frames shorter than ETH_HLEN ({ETH_HLEN})",
                                param="frame_lens")
        if mode == "mergeable":
            # receive_mergeable: a frame longer than its buffer (len > truesize) is a length error.
            slack = tail if not xdp_page else np.subtract(trues - (headroom + padded), frames)
            if int(slack.min()) < hdr_len - (headroom + padded):
                i = int(np.argmax(slack < hdr_len - (headroom + padded)))
                t = int(trues if trues.ndim == 0 else trues[i])
                raise ArgumentError(f"frame_lens[{i}]={int(frames[i])} is longer than its buffer (truesize {t} "
                                    f"with a {hdr_len}-byte header): a length error in receive_mergeable",
                                    param="frame_lens")
        else:
            max_frame, why = big_max_frame(big_pages_range(a)[1], hdr_len, k, a)
            if int(frames.max()) > max_frame:
                raise ArgumentError(f"frame_lens has {int(frames.max())}: kernel {k.version} on {a.name} makes an skb "
                                    f"of a big-mode frame up to {max_frame} bytes: {why}", param="frame_lens")
    if has_build and a.net_ip_align == 0:
        # page_to_skb (5.13+): !NET_IP_ALIGN && len > GOOD_COPY_LEN && tailroom >= SKB_DATA_ALIGN(shinfo).
        build = frames > GOOD_COPY_LEN
        np.logical_and(build, tail >= a.shinfo_size, out=build)
    else:
        build = np.zeros(frames.shape, dtype=bool)
    if not has_build:
        tail.fill(-1)
    # Codes and copies without np.where/np.putmask, each of which costs as much as the whole build_skb rule.
    big = frames > head.tailroom  # the frame does not fit the napi head's tailroom
    codes = np.maximum(big.view(np.int8), build.view(np.int8) * np.int8(2))
    if k.rule("page_to_skb") == "copy128":
        # page_to_skb (<= 5.11): copy = min(len, skb_tailroom(skb)); the rest is the frag.
        copied = np.minimum(frames, head.tailroom)
        frag = big
    else:
        # page_to_skb (0f6925b3e8da, 5.12+): the whole frame if it fits skb_tailroom, else ETH_HLEN + 1 frag.
        frag = codes == 1
        copied = frames * (codes == 0)
        copied += frag.view(np.int8) * np.int8(ETH_HLEN)
    if mode == "mergeable":
        frags = frag.astype(np.int32)
    else:
        # receive_big: the rest of the frame spreads over page-sized frags along the page chain.
        rest = frames - copied
        first = a.page_size - padded - copied
        frags = np.where(frag, 1 + np.maximum(0, -(-(rest - first) // a.page_size)), 0).astype(np.int32)
    return Classification(codes, tail, frags, copied)
