"""The running kernel's own struct layout, read from its BTF without root (:func:`btf_layout`).

``/sys/kernel/btf/vmlinux`` (mode 0444 wherever CONFIG_DEBUG_INFO_BTF is set) is the kernel's type information in
the BTF format of include/uapi/linux/btf.h: a header, a type section and a string section. It is parsed here in
Python (no compiler, no bpftool), and the sizes the models rest on are read from it: sizeof(struct sk_buff),
sizeof(struct skb_shared_info), the length of skb_shared_info.frags[] (MAX_SKB_FRAGS), the offsets of the fields
the tracepoints and the drawings use, and whether the NAPI allocation cache still slices 1 KiB heads
(``page_small``, gone in 6.14). :meth:`BtfLayout.compare` puts them beside the profile
:func:`vnetlab.live.running_profile` chose: "your kernel says X, the profile says Y".
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated

from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError, LiveUnavailable
from vnetlab.profiles import Arch

__all__ = ["BTF_PATH", "BtfLayout", "BtfTypes", "LayoutRow", "btf_layout", "profile_arch_name"]

BTF_PATH = "/sys/kernel/btf/vmlinux"

# include/uapi/linux/btf.h
_BTF_MAGIC = 0xEB9F
_HEADER = struct.Struct("<HBBIIIII")  # magic, version, flags, hdr_len, type_off, type_len, str_off, str_len
(_INT, _PTR, _ARRAY, _STRUCT, _UNION, _ENUM, _FWD, _TYPEDEF, _VOLATILE, _CONST, _RESTRICT, _FUNC, _FUNC_PROTO,
 _VAR, _DATASEC, _FLOAT, _DECL_TAG, _TYPE_TAG, _ENUM64) = range(1, 20)
# Bytes that follow struct btf_type (12 bytes) for each kind: a fixed part and a part per vlen entry.
_EXTRA = {_INT: (4, 0), _PTR: (0, 0), _ARRAY: (12, 0), _STRUCT: (0, 12), _UNION: (0, 12), _ENUM: (0, 8),
          _FWD: (0, 0), _TYPEDEF: (0, 0), _VOLATILE: (0, 0), _CONST: (0, 0), _RESTRICT: (0, 0), _FUNC: (0, 0),
          _FUNC_PROTO: (0, 8), _VAR: (4, 0), _DATASEC: (0, 12), _FLOAT: (0, 0), _DECL_TAG: (4, 0),
          _TYPE_TAG: (0, 0), _ENUM64: (0, 12)}
_MODIFIERS = (_TYPEDEF, _VOLATILE, _CONST, _RESTRICT, _TYPE_TAG)


class BtfTypes:
    """The types of one BTF blob: structs by name, their sizes, members and member offsets.

    Only what the layout needs is decoded eagerly (each type's position and the names of structs, unions and
    typedefs); members are read when asked for.
    """

    @public
    def __init__(self, data: bytes, *, source: str = "BTF") -> None:
        self.source = source
        magic = struct.unpack_from("<H", data)[0] if len(data) >= 2 else None
        if magic == _BTF_MAGIC:
            self._end = "<"
        elif magic == struct.unpack("<H", struct.pack(">H", _BTF_MAGIC))[0]:
            self._end = ">"
        else:
            start = "nothing" if magic is None else f"0x{magic:04x}"
            raise ArgumentError(f"path: {source} is not BTF: it starts with {start}, not the BTF magic "
                                f"0x{_BTF_MAGIC:04x} (include/uapi/linux/btf.h BTF_MAGIC)",
                                function="live.btf_layout", param="path")
        if len(data) < _HEADER.size:
            raise ArgumentError(f"path: {source} is truncated: {len(data)} bytes, shorter than a BTF header "
                                f"({_HEADER.size} bytes, include/uapi/linux/btf.h struct btf_header)",
                                function="live.btf_layout", param="path")
        (_m, self.version, _flags, hdr_len, type_off, type_len, str_off, str_len) = struct.unpack_from(
            self._end + "HBBIIIII", data)
        types_at, strings_at = hdr_len + type_off, hdr_len + str_off
        if strings_at + str_len > len(data) or types_at + type_len > len(data):
            raise ArgumentError(f"path: {source} is truncated: its BTF header announces {strings_at + str_len} "
                                f"bytes, the file has {len(data)}", function="live.btf_layout", param="path")
        self._data = data
        self._strings = data[strings_at:strings_at + str_len]
        self._u32 = struct.Struct(self._end + "I")
        self._type = struct.Struct(self._end + "III")
        self._offsets = [0]  # type id 0 is void
        self._ptr: int | None = None
        self._names: dict[tuple[int, str], int] = {}
        pos, end = types_at, types_at + type_len
        unpack = self._type.unpack_from
        while pos < end:
            name_off, info, _size = unpack(data, pos)
            kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
            extra = _EXTRA.get(kind)
            if extra is None:
                raise ArgumentError(f"path: {source}: type {len(self._offsets)} has BTF kind {kind}, unknown to "
                                    "include/uapi/linux/btf.h up to BTF_KIND_ENUM64 (19)",
                                    function="live.btf_layout", param="path")
            self._offsets.append(pos)
            if kind in (_STRUCT, _UNION, _TYPEDEF) and name_off:
                self._names.setdefault((kind, self._string(name_off)), len(self._offsets) - 1)
            pos += 12 + extra[0] + extra[1] * vlen
        if pos != end:
            raise ArgumentError(f"path: {source}: the type section ends inside a type (at byte {pos}, not {end})",
                                function="live.btf_layout", param="path")

    def _string(self, off: int) -> str:
        end = self._strings.index(b"\0", off)
        return self._strings[off:end].decode("utf-8", "replace")

    def _header(self, tid: int) -> tuple[int, int, int, int, bool]:
        """(name_off, kind, vlen, size_or_type, kind_flag) of type ``tid``."""
        name_off, info, size = self._type.unpack_from(self._data, self._offsets[tid])
        return name_off, (info >> 24) & 0x1F, info & 0xFFFF, size, bool(info >> 31)

    @public
    def struct_id(self, name: str) -> int:
        """The type id of ``struct name`` (a typedef of a struct also answers, as skb_frag_t does)."""
        tid = self._names.get((_STRUCT, name)) or self._names.get((_UNION, name))
        if tid is None and (_TYPEDEF, name) in self._names:
            tid = self._resolve(self._names[(_TYPEDEF, name)])
        if tid is None:
            raise LookupError(f"{self.source} has no struct {name}")
        return tid

    def _resolve(self, tid: int) -> int:
        while tid and self._header(tid)[1] in _MODIFIERS:
            tid = self._header(tid)[3]
        return tid

    @public
    def sizeof(self, tid: int) -> int:
        """sizeof() of type ``tid`` as the compiler laid it out (typedefs and qualifiers followed)."""
        tid = self._resolve(tid)
        if tid == 0:
            raise LookupError("sizeof(void)")
        _n, kind, _v, size, _f = self._header(tid)
        if kind == _PTR:
            return self._pointer_size()
        if kind == _ARRAY:
            elem, _index, nelems = struct.unpack_from(self._end + "III", self._data, self._offsets[tid] + 12)
            return nelems * self.sizeof(elem)
        return size

    def _pointer_size(self) -> int:
        # BTF has no pointer size of its own: it is the size of the kernel's `long` (LP64 or ILP32).
        if self._ptr is None:
            self._ptr = 8
            for tid in range(1, len(self._offsets)):
                n, kind, _v, size, _f = self._header(tid)
                if kind == _INT and n and self._string(n) in ("long int", "long unsigned int"):
                    self._ptr = size
                    break
        return self._ptr

    @public
    def members(self, tid: int) -> list[tuple[str, int, int]]:
        """(name, type id, bit offset) of each member of struct/union ``tid`` ("" for an anonymous one)."""
        tid = self._resolve(tid)
        _n, kind, vlen, _s, kind_flag = self._header(tid)
        if kind not in (_STRUCT, _UNION):
            raise LookupError(f"type {tid} is not a struct or union")
        out = []
        base = self._offsets[tid] + 12
        for i in range(vlen):
            name_off, mtype, offset = struct.unpack_from(self._end + "III", self._data, base + 12 * i)
            out.append((self._string(name_off) if name_off else "", mtype,
                        offset & 0xFFFFFF if kind_flag else offset))
        return out

    @public
    def member(self, struct_name: str, path: str) -> tuple[int, int]:
        """(byte offset, type id) of ``path`` ("gso_size", "frags") in ``struct struct_name``, looking through
        the anonymous unions and structs the kernel nests fields in (struct sk_buff's headers group)."""
        tid = self.struct_id(struct_name)
        offset = 0
        for part in path.split("."):
            found = self._find(tid, part)
            if found is None:
                raise LookupError(f"struct {struct_name} in {self.source} has no member {path}")
            bits, tid = found
            offset += bits
        return offset // 8, tid

    def _find(self, tid: int, name: str) -> tuple[int, int] | None:
        for mname, mtype, bits in self.members(tid):
            if mname == name:
                return bits, mtype
            if not mname and self._header(self._resolve(mtype))[1] in (_STRUCT, _UNION):
                inner = self._find(self._resolve(mtype), name)
                if inner is not None:
                    return bits + inner[0], inner[1]
        return None

    @public
    def array_len(self, tid: int) -> int:
        """The number of elements of array type ``tid``."""
        tid = self._resolve(tid)
        if self._header(tid)[1] != _ARRAY:
            raise LookupError(f"type {tid} is not an array")
        return struct.unpack_from(self._end + "III", self._data, self._offsets[tid] + 12)[2]

    @public
    def enum_with(self, constant: str) -> dict[str, int]:
        """{name: value} of the enum that defines ``constant`` (e.g. "SKB_GSO_TCPV4": enum skb_gso_type)."""
        for tid in range(1, len(self._offsets)):
            _n, kind, vlen, _s, kind_flag = self._header(tid)
            if kind not in (_ENUM, _ENUM64):
                continue
            step = 8 if kind == _ENUM else 12
            base = self._offsets[tid] + 12
            names = [self._string(self._u32.unpack_from(self._data, base + step * i)[0]) for i in range(vlen)]
            if constant in names:
                out = {}
                for i, name in enumerate(names):
                    lo = struct.unpack_from(self._end + ("i" if kind_flag else "I"), self._data, base + step * i + 4)[0]
                    hi = struct.unpack_from(self._end + "I", self._data, base + step * i + 8)[0] if step == 12 else 0
                    out[name] = (hi << 32 | lo & 0xFFFFFFFF) if step == 12 else lo & 0xFFFFFFFF
                return out
        raise LookupError(f"{self.source} has no enum with {constant}")

    @public
    def has_member(self, struct_name: str, path: str) -> bool:
        try:
            self.member(struct_name, path)
        except LookupError:
            return False
        return True


@dataclass(frozen=True)
class LayoutRow:
    """One quantity: what this kernel's BTF says, what the model's profile says, and where the rule is."""

    name: str
    kernel: int | str | None
    profile: int | str | None
    rule: str

    @property
    def agrees(self) -> bool:
        return self.kernel == self.profile

    def __str__(self) -> str:
        mark = "agree " if self.agrees else "DIFFER"
        return f"{mark} {self.name}: your kernel says {self.kernel}, the profile says {self.profile}"


# Fields whose offsets the tracepoints (include/trace/events/net.h) and the drawings read.
SK_BUFF_FIELDS = ("len", "data_len", "truesize", "head", "data", "tail", "end", "head_frag", "protocol")
SHINFO_FIELDS = ("nr_frags", "gso_size", "gso_segs", "frag_list", "gso_type", "dataref", "frags")


@dataclass(frozen=True)
class BtfLayout:
    """The layout one kernel's BTF describes.

    ``kernel`` is the release it describes (``uname -r`` for the running kernel's /sys/kernel/btf/vmlinux);
    ``offsets`` maps "sk_buff.len", "skb_shared_info.frags", ... to byte offsets; ``napi_page_small``: whether
    struct napi_alloc_cache has the ``page_small`` 1 KiB frag cache (net/core/skbuff.c, dbae2b062824 in 6.1 until
    its revert in 6.14), which decides where napi_alloc_skb() takes a small head from.
    """

    kernel: str | None
    path: str
    sizeof_sk_buff: int
    sizeof_skb_shared_info: int
    max_skb_frags: int
    sizeof_skb_frag: int
    pointer_bytes: int
    napi_page_small: bool
    offsets: Mapping[str, int] = field(default_factory=dict)
    small_head_object_size: int | None = None  # /sys/kernel/slab/skbuff_small_head/object_size (root only)

    @public
    def arch(self, profile: str | None = None, arch: str | None = None) -> Arch:
        """The model's :class:`vnetlab.profiles.Arch` for ``profile`` (default: the running kernel's) with this
        kernel's sizes put in: the models then compute with your kernel's sk_buff, skb_shared_info and
        MAX_SKB_FRAGS, and the profile's page size and cache line."""
        base = self.profile_arch(profile, arch)
        return dataclasses.replace(
            base, sk_buff_size=self.sizeof_sk_buff, skb_shared_info_size=self.sizeof_skb_shared_info,
            shinfo_size=base.skb_data_align(self.sizeof_skb_shared_info), max_skb_frags=self.max_skb_frags,
            skb_frag_size=self.sizeof_skb_frag, description=f"{base.name} with the sizes of {self.path}")

    @public
    def profile_arch(self, profile: str | None = None, arch: str | None = None) -> Arch:
        """The model's own :class:`vnetlab.profiles.Arch` for ``profile`` (default: running_profile()) and
        ``arch`` (default: this machine's, :func:`profile_arch_name`)."""
        from vnetlab import profiles
        from vnetlab.live.profile import running_profile

        return profiles.arch(arch or profile_arch_name(), profile or running_profile())

    @public
    def compare(self, profile: str | None = None, arch: str | None = None) -> list[LayoutRow]:
        """This layout beside the profile ``profile`` (default :func:`running_profile`): one :class:`LayoutRow`
        per size or threshold the models use. Thresholds use the profile's cache line (SMP_CACHE_BYTES)."""
        from vnetlab import profiles

        a = self.profile_arch(profile, arch)
        k = profiles.kernel(a.kernel)
        mine = self.arch(a.kernel, a.name)
        rule_head = str(k.rule("napi_head"))
        rows = [
            LayoutRow("sizeof(struct sk_buff)", self.sizeof_sk_buff, a.sk_buff_size,
                      "include/linux/skbuff.h struct sk_buff"),
            LayoutRow("SKB_DATA_ALIGN(sizeof(struct sk_buff))", mine.skb_data_align(self.sizeof_sk_buff),
                      a.skb_data_align(a.sk_buff_size), "include/linux/skbuff.h SKB_TRUESIZE"),
            LayoutRow("sizeof(struct skb_shared_info)", self.sizeof_skb_shared_info, a.skb_shared_info_size,
                      "include/linux/skbuff.h struct skb_shared_info"),
            LayoutRow("MAX_SKB_FRAGS (skb_shared_info.frags[])", self.max_skb_frags, a.max_skb_frags,
                      "include/linux/skbuff.h MAX_SKB_FRAGS"),
            LayoutRow("sizeof(skb_frag_t)", self.sizeof_skb_frag, a.skb_frag_size, "include/linux/skbuff.h"),
            LayoutRow("build_skb tailroom: SKB_DATA_ALIGN(shinfo)",
                      mine.shinfo_size, a.shinfo_size, "drivers/net/virtio_net.c page_to_skb (v5.13+)"),
            LayoutRow("SKB_TRUESIZE(0) (sk_buff + shinfo)",
                      mine.skb_truesize(0), a.skb_truesize(0), "include/linux/skbuff.h SKB_TRUESIZE"),
            LayoutRow("SKB_WITH_OVERHEAD(1024) (napi small head)",
                      mine.skb_with_overhead(1024), a.skb_with_overhead(1024),
                      "net/core/skbuff.c __napi_alloc_skb, 3226b158e67c"),
            LayoutRow("napi_alloc_cache.page_small (1 KiB heads)",
                      "yes" if self.napi_page_small else "no", "yes" if rule_head == "page_frag_1k" else "no",
                      "net/core/skbuff.c struct napi_alloc_cache page_small (dbae2b062824, reverted in 6.14)"),
        ]
        return rows

    @public
    def table(self, profile: str | None = None, arch: str | None = None) -> str:
        """:meth:`compare` as lines: agree or DIFFER, then "your kernel says X, the profile says Y"."""
        rows = self.compare(profile, arch)
        a = self.profile_arch(profile, arch)
        name = self.kernel or "an unnamed kernel"
        head = f"BTF of {name} ({self.path}) beside the model profile {a.kernel}, {a.name}"
        info = ([f"(the running kernel's skbuff_small_head objects: {self.small_head_object_size} B, "
                 "/sys/kernel/slab, readable by root only)"] if self.small_head_object_size else [])
        return "\n".join([head] + [str(r) for r in rows] + info +
                          [f"{sum(r.agrees for r in rows)} of {len(rows)} agree"])


@public
def profile_arch_name(machine: str | None = None, page_size: Annotated[int, In(4096, 65536, "bytes")] | None = None
                      ) -> str:
    """The model's arch name for ``uname -m`` and the page size (default: this machine's)."""
    machine = machine or os.uname().machine
    page_size = page_size or os.sysconf("SC_PAGE_SIZE")
    if machine == "x86_64":
        return "x86_64"
    if machine == "aarch64":
        return "arm64-64k" if page_size == 65536 else "arm64"
    if machine == "ppc64le":
        return "ppc64le-4k" if page_size == 4096 else "ppc64le"
    if machine.startswith("mips"):
        return "mips32"
    raise ArgumentError(f"machine: {machine!r} has no architecture profile (x86_64, aarch64, ppc64le, mips)",
                        function="live.profile_arch_name", param="machine")


@public
def btf_layout(path: str = BTF_PATH, *, release: str | None = None) -> BtfLayout:
    """The struct layout the BTF at ``path`` describes, read in Python without root.

    ``release`` names the kernel a BTF file other than the running kernel's describes (the running kernel's
    own /sys/kernel/btf/vmlinux is named by ``uname -r``). A kernel without BTF (no CONFIG_DEBUG_INFO_BTF)
    raises LiveUnavailable; a file that is not BTF, or is truncated, raises ArgumentError naming ``path``.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"live.btf_layout: path must be a file name, got {path!r}", function="live.btf_layout",
                            param="path")
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        if path == BTF_PATH:
            raise LiveUnavailable(f"this kernel has no BTF: {BTF_PATH} does not exist (the kernel was built "
                                  "without CONFIG_DEBUG_INFO_BTF); the model's profile is all there is") from None
        raise ArgumentError(f"live.btf_layout: path {path!r} does not exist", function="live.btf_layout",
                            param="path") from None
    except IsADirectoryError:
        raise ArgumentError(f"live.btf_layout: path {path!r} is a directory, not a BTF file",
                            function="live.btf_layout", param="path") from None
    except PermissionError as exc:
        raise LiveUnavailable(f"cannot read {path}: {exc.strerror}") from None
    types = BtfTypes(data, source=path)
    try:
        sk_buff = types.struct_id("sk_buff")
        shinfo = types.struct_id("skb_shared_info")
        _off, frags_type = types.member("skb_shared_info", "frags")
    except LookupError as exc:
        raise ArgumentError(f"live.btf_layout: path {path!r} is BTF but not a kernel's vmlinux BTF ({exc})",
                            function="live.btf_layout", param="path") from None
    offsets = {}
    for struct_name, names in (("sk_buff", SK_BUFF_FIELDS), ("skb_shared_info", SHINFO_FIELDS)):
        for name in names:
            if types.has_member(struct_name, name):
                offsets[f"{struct_name}.{name}"] = types.member(struct_name, name)[0]
    frag_size = types.sizeof(frags_type) // max(1, types.array_len(frags_type))
    if release is None and os.path.realpath(path) == BTF_PATH:
        release = os.uname().release
    small_head = None
    try:
        with open("/sys/kernel/slab/skbuff_small_head/object_size") as fh:
            small_head = int(fh.read())
    except (OSError, ValueError):
        pass
    return BtfLayout(
        kernel=release, path=path, sizeof_sk_buff=types.sizeof(sk_buff), sizeof_skb_shared_info=types.sizeof(shinfo),
        max_skb_frags=types.array_len(frags_type), sizeof_skb_frag=frag_size, pointer_bytes=types._pointer_size(),
        napi_page_small=types.has_member("napi_alloc_cache", "page_small"), offsets=offsets,
        small_head_object_size=small_head if release == os.uname().release else None)
