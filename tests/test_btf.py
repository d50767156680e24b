"""live.btf_layout: the running kernel's struct layout read from its BTF in Python, checked against pahole.

Expected values come from pahole (Debian's dwarves) reading the same /sys/kernel/btf/vmlinux, run by the test
itself, as root and as an ordinary user; a small BTF blob built here by hand (include/uapi/linux/btf.h) checks
the parser where the machine has no BTF or no pahole.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from vnetlab import live
from vnetlab.errors import ArgumentError, LiveUnavailable
from vnetlab.live import btf

HAVE_BTF = os.path.exists(btf.BTF_PATH)
needs_btf = pytest.mark.skipif(not HAVE_BTF, reason=f"{btf.BTF_PATH} missing: kernel without CONFIG_DEBUG_INFO_BTF")
needs_pahole = pytest.mark.skipif(shutil.which("pahole") is None, reason="pahole missing (Debian package dwarves)")
ROOT = Path(__file__).resolve().parent.parent
USER = "vnetlab-dev"


def pahole(struct_name: str) -> tuple[int, dict[str, tuple[int, str]]]:
    """pahole -C STRUCT on the running kernel's BTF: (size, {member: (offset, declaration)})."""
    out = subprocess.run(["pahole", "-C", struct_name, btf.BTF_PATH], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    size = int(re.search(r"/\* size: (\d+),", out)[1])
    members = {}
    for m in re.finditer(r"^\s+(.+?)\s+\**(\w+)(\[\d+\])?;\s+/\*\s+(\d+)\s+\d+\s+\*/", out, re.M):
        members.setdefault(m[2], (int(m[4]), m[0]))
    return size, members


@needs_btf
@needs_pahole
def test_sizes_and_offsets_equal_paholes():
    """sizeof and member offsets equal pahole's for the same BTF file."""
    layout = live.btf_layout()
    size, members = pahole("sk_buff")
    assert layout.sizeof_sk_buff == size
    for name in btf.SK_BUFF_FIELDS:
        if name in members and name != "head_frag":  # head_frag is a bitfield: pahole prints its bit
            assert layout.offsets[f"sk_buff.{name}"] == members[name][0], name
    size, members = pahole("skb_shared_info")
    assert layout.sizeof_skb_shared_info == size
    frags = re.search(r"frags\[(\d+)\]", members["frags"][1])
    assert layout.max_skb_frags == int(frags[1])
    for name in btf.SHINFO_FIELDS:
        assert layout.offsets[f"skb_shared_info.{name}"] == members[name][0], name
    frag_size, _ = pahole("skb_frag")
    assert layout.sizeof_skb_frag == frag_size


@needs_btf
def test_running_kernel_is_named_by_uname():
    assert live.btf_layout().kernel == os.uname().release


def _user_ready() -> str | None:
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "needs root and runuser to run as an ordinary user"
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        return f"no user {USER} (useradd -m {USER})"
    return None


@needs_btf
@needs_pahole
def test_an_ordinary_user_reads_the_same_layout_as_pahole():
    """btf_layout() in a process of an ordinary user (runuser -u vnetlab-dev) gives pahole's sizes."""
    why = _user_ready()
    if why:
        pytest.skip(why)
    code = ("import json, dataclasses; from vnetlab import live; l = live.btf_layout(); "
            "print(json.dumps([l.sizeof_sk_buff, l.sizeof_skb_shared_info, l.max_skb_frags, l.kernel]))")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp"}
    python = sys.executable
    if subprocess.run(["runuser", "-u", USER, "--", python, "-c", "pass"], capture_output=True).returncode != 0:
        # this venv's interpreter lives where the user cannot read (/root): the module needs nothing but the stdlib
        python, env["PYTHONPATH"] = "/usr/bin/python3", str(ROOT)
        if not os.path.exists(python):
            pytest.skip(f"{sys.executable} is not readable by {USER} and there is no /usr/bin/python3")
    done = subprocess.run(["runuser", "-u", USER, "--", python, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd="/", env=env)
    assert done.returncode == 0, done.stderr
    sk, sh, frags, kernel = json.loads(done.stdout)
    assert sk == pahole("sk_buff")[0]
    assert sh == pahole("skb_shared_info")[0]
    assert frags == int(re.search(r"frags\[(\d+)\]", pahole("skb_shared_info")[1]["frags"][1])[1])
    assert kernel == os.uname().release


@needs_btf
def test_compare_with_the_profile_says_both_values():
    layout = live.btf_layout()
    rows = layout.compare()
    text = layout.table()
    names = [r.name for r in rows]
    assert "sizeof(struct sk_buff)" in names and "sizeof(struct skb_shared_info)" in names
    for r in rows:
        assert f"your kernel says {r.kernel}, the profile says {r.profile}" in text
    # the build_skb threshold is SKB_DATA_ALIGN of the BTF size with the profile's cache line
    a = layout.profile_arch()
    thr = next(r for r in rows if r.name.startswith("build_skb tailroom"))
    assert thr.kernel == -(-layout.sizeof_skb_shared_info // a.l1_cache_bytes) * a.l1_cache_bytes


def test_a_layout_that_differs_is_flagged():
    """A kernel with CONFIG_MAX_SKB_FRAGS=45 (net/Kconfig's maximum): the frags row and the sizes built on it
    differ from the 6.18 profile (its default 17)."""
    fake = _blob(max_skb_frags=45)
    layout = _layout_of(fake)
    rows = {r.name: r for r in layout.compare("6.18", "x86_64")}
    assert not rows["MAX_SKB_FRAGS (skb_shared_info.frags[])"].agrees
    assert rows["MAX_SKB_FRAGS (skb_shared_info.frags[])"].kernel == 45
    assert "DIFFER" in layout.table("6.18", "x86_64")
    # skb_shared_info: 48 bytes before frags[] plus 45 frags of 16 bytes (include/linux/skbuff.h, pahole 6.18)
    assert layout.sizeof_skb_shared_info == 48 + 45 * 16


# ---------------------------------------------------------------------------------------------------------
# A BTF blob built by hand, laid out as include/uapi/linux/btf.h says
# ---------------------------------------------------------------------------------------------------------

def _blob(*, max_skb_frags: int = 17, big_endian: bool = False, with_page_small: bool = False) -> bytes:
    e = ">" if big_endian else "<"
    strings = bytearray(b"\0")

    def s(text: str) -> int:
        off = len(strings)
        strings.extend(text.encode() + b"\0")
        return off

    types = bytearray()

    def t(name: str, kind: int, vlen: int, size_or_type: int, extra: bytes = b"", kind_flag: bool = False) -> int:
        types.extend(struct.pack(e + "III", s(name) if name else 0, (kind << 24) | vlen | (kind_flag << 31),
                                 size_or_type) + extra)
        return len(_ids) + 1

    _ids: list[int] = []

    def add(*a, **kw) -> int:
        tid = t(*a, **kw)
        _ids.append(tid)
        return tid

    def members(*ms: tuple[str, int, int]) -> bytes:
        return b"".join(struct.pack(e + "III", s(n) if n else 0, ty, bits) for n, ty, bits in ms)

    u32 = add("unsigned int", 1, 0, 4, struct.pack(e + "I", 32))
    long_ = add("long int", 1, 0, 8, struct.pack(e + "I", (1 << 24) | 64))
    ptr = add("", 2, 0, 0)  # void *
    add("colour", 6, 2, 4, struct.pack(e + "Ii", s("RED"), 0) + struct.pack(e + "Ii", s("BLUE"), 1))  # an enum
    frag = add("skb_frag", 4, 3, 16, members(("netmem", long_, 0), ("len", u32, 64), ("offset", u32, 96)))
    frag_t = add("skb_frag_t", 8, 0, frag)
    arr = add("", 3, 0, 0, struct.pack(e + "III", frag_t, u32, max_skb_frags))
    inner = add("", 4, 2, 8, members(("len", u32, 0), ("data_len", u32, 32)))  # an anonymous struct
    shinfo_size = 48 + 16 * max_skb_frags
    add("skb_shared_info", 4, 4, shinfo_size,
        members(("nr_frags", u32, 2 * 8 | (8 << 24)), ("gso_size", u32, 4 * 8 | (16 << 24)),
                ("frag_list", ptr, 8 * 8), ("frags", arr, 48 * 8)), kind_flag=True)
    add("sk_buff", 4, 3, 224, members(("", inner, 112 * 8), ("truesize", u32, 208 * 8), ("head", ptr, 192 * 8)))
    if with_page_small:
        add("napi_alloc_cache", 4, 1, 8, members(("page_small", long_, 0)))
    hdr = struct.pack(e + "HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return hdr + bytes(types) + bytes(strings)


def _layout_of(data: bytes, tmp: Path | None = None):  # noqa: ANN202
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".btf", delete=False) as fh:
        fh.write(data)
    try:
        return live.btf_layout(fh.name, release="test")
    finally:
        os.unlink(fh.name)


@pytest.mark.parametrize("big_endian", [False, True])
def test_parser_reads_a_hand_built_blob(big_endian):
    layout = _layout_of(_blob(max_skb_frags=17, big_endian=big_endian))
    assert layout.kernel == "test"
    # source: _blob above (BTF laid out by hand)
    assert layout.sizeof_sk_buff == 224 and layout.sizeof_skb_shared_info == 48 + 17 * 16
    assert layout.max_skb_frags == 17 and layout.sizeof_skb_frag == 16
    assert layout.pointer_bytes == 8
    # members of an anonymous struct at 112: their offsets add up; a bitfield member's offset has its size masked
    # source: _blob (BTF by hand)
    assert layout.offsets["sk_buff.len"] == 112 and layout.offsets["sk_buff.data_len"] == 116
    assert layout.offsets["skb_shared_info.nr_frags"] == 2 and layout.offsets["skb_shared_info.gso_size"] == 4
    assert layout.offsets["skb_shared_info.frags"] == 48
    assert not layout.napi_page_small
    assert _layout_of(_blob(with_page_small=True)).napi_page_small


def test_not_btf_truncated_and_missing_files_get_clear_errors(tmp_path, monkeypatch):
    notbtf = tmp_path / "notes.txt"
    notbtf.write_text("this is not BTF at all\n")
    with pytest.raises(ArgumentError, match="not BTF") as exc:
        live.btf_layout(str(notbtf))
    assert exc.value.param == "path"
    cut = tmp_path / "cut.btf"
    cut.write_bytes(_blob()[:200])
    with pytest.raises(ArgumentError, match="truncated") as exc:
        live.btf_layout(str(cut))
    assert exc.value.param == "path"
    tiny = tmp_path / "tiny.btf"
    tiny.write_bytes(b"\x9f\xeb")
    with pytest.raises(ArgumentError, match="truncated.*shorter than a BTF header"):
        live.btf_layout(str(tiny))
    with pytest.raises(ArgumentError, match="does not exist"):
        live.btf_layout(str(tmp_path / "nothing"))
    with pytest.raises(ArgumentError, match="directory"):
        live.btf_layout(str(tmp_path))
    # a kernel without BTF: the default path is missing
    monkeypatch.setattr(btf, "BTF_PATH", str(tmp_path / "vmlinux"))
    with pytest.raises(LiveUnavailable, match="CONFIG_DEBUG_INFO_BTF"):
        live.btf_layout(str(tmp_path / "vmlinux"))
    with pytest.raises(ArgumentError) as exc:
        live.btf_layout(42)
    assert exc.value.param == "path"


def test_btf_without_sk_buff_is_refused(tmp_path):
    e = "<"
    strings = b"\0unsigned int\0"
    types = struct.pack(e + "III", 1, 1 << 24, 4) + struct.pack(e + "I", 32)
    path = tmp_path / "module.btf"
    path.write_bytes(struct.pack(e + "HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
                     + types + strings)
    with pytest.raises(ArgumentError, match="not a kernel's vmlinux BTF"):
        live.btf_layout(str(path))
