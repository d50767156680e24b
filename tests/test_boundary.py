"""The public boundary: every public callable of vnetlab is wrapped by @public, and every checked
parameter refuses wrong types and out-of-range values with an ArgumentError naming it.

Public callables: the names in each module's ``__all__`` (a module without one: its own names without a
leading underscore), and the methods of those classes (``__init__`` where the class writes its own). The bad
inputs are generated from each function's own annotations, not listed by hand; the expectations come from the
rules in vnetlab/checks.py's docstring, written again here as an independent oracle.
"""

from __future__ import annotations

import collections.abc as cabc
import importlib
import inspect
import math
import pkgutil
import types
import typing
from typing import Any

import pytest

import vnetlab
from vnetlab.checks import In, is_public, param_annotations
from vnetlab.errors import ArgumentError

# Modules not walked yet (a module still to be decorated goes here until it is); the test then covers them too.
_PENDING: set[str] = set()  # every module is walked

# Callables that are not checked by @public, each with why.
_EXEMPT = {
    # Exceptions: raised by the package with the message it builds, not called with user input.
    "vnetlab.errors",
    # The kernel's size macros (SKB_DATA_ALIGN, SKB_TRUESIZE, ...): element-wise over an int or a numpy array
    # (rx.classify passes whole arrays), called per packet inside the models; there is no range to check.
    "vnetlab.profiles.Arch.skb_data_align", "vnetlab.profiles.Arch.skb_truesize",
    "vnetlab.profiles.Arch.skb_with_overhead", "vnetlab.profiles.Arch.skb_head_align",
    # The decorator and its own helpers: they take functions and values to check, anything is valid input.
    "vnetlab.checks",
    # matplotlib's own Artist.set, inherited by the figure class (not vnetlab's API); wrap_px takes width_px=inf
    # for "no wrapping" from the drawings, which the float rule (finite only) would refuse.
    "vnetlab.viz.style.ShownFigure.set", "vnetlab.viz.style.wrap_px",
    # The set operators' own constructor (|, &, -, ^ and every netdev fix-up): bits already checked against the
    # kernel's table, called on every feature computation; a check here would re-check what was checked.
    "vnetlab.features.FeatureSet.of_checked_bits",
}


def _pending(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _PENDING)


def _exempt(qualname: str) -> bool:
    return any(qualname == e or qualname.startswith(e + ".") for e in _EXEMPT)


def _modules() -> list[str]:  # __main__ (`python -m vnetlab.live`) reads sys.argv and runs on import: not walked
    return sorted(m.name for m in pkgutil.walk_packages(vnetlab.__path__, "vnetlab.")
                  if m.name.rsplit(".", 1)[-1] not in ("__main__",))


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, o in vars(module).items() if not n.startswith("_") and callable(o)
                 and getattr(o, "__module__", None) == module.__name__]
    return [n for n in names if callable(getattr(module, n, None)) and not inspect.ismodule(getattr(module, n))]


def _takes_arguments(fn: Any) -> bool:
    params = list(inspect.signature(fn).parameters.values())
    return any(p.name not in ("self", "cls") for p in params)


def _generated_init(cls: type) -> bool:
    """A dataclass's or NamedTuple's own __init__: written by Python from the fields (a record the package
    builds and returns; classes users build check their fields in __post_init__)."""
    init = vars(cls).get("__init__")
    return init is None or getattr(getattr(init, "__code__", None), "co_filename", "") == "<string>"


def public_callables() -> list[tuple[str, Any, type | None]]:
    """(qualified name, function, owning class or None) for every public callable that takes arguments."""
    found: dict[str, tuple[str, Any, type | None]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for attr in _public_names(module):
            obj = getattr(module, attr)
            home = getattr(obj, "__module__", name)
            if not isinstance(home, str) or not home.startswith("vnetlab"):
                continue  # re-exported from outside the package (typing, dataclasses)
            if inspect.isclass(obj):
                for meth, raw in vars(obj).items():
                    if isinstance(raw, property) or (meth.startswith("_") and meth != "__init__"):
                        continue
                    fn = getattr(raw, "__func__", raw)
                    if not inspect.isfunction(fn) or (meth == "__init__" and _generated_init(obj)):
                        continue
                    if _takes_arguments(fn):
                        qual = f"{obj.__module__}.{obj.__qualname__}.{meth}"
                        found.setdefault(qual, (qual, fn, obj))
            elif callable(obj) and _takes_arguments(obj):
                qual = f"{home}.{getattr(obj, '__qualname__', attr)}"
                found.setdefault(qual, (qual, obj, None))
    return sorted(found.values(), key=lambda t: t[0])


def _covered() -> list[tuple[str, Any, type | None]]:
    return [c for c in public_callables() if not _exempt(c[0]) and not _pending(c[0].rsplit(".", 1)[0])
            and not _pending(_module_of(c[0]))]


def _module_of(qual: str) -> str:
    parts = qual.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in _ALL_MODULES:
            return ".".join(parts[:i])
    return qual


_ALL_MODULES = set(_modules())


def test_every_public_callable_is_wrapped_by_public():
    missing = [q for q, fn, _ in _covered() if not is_public(fn)]
    assert not missing, f"{len(missing)} public callables without @public: {missing}"


def test_pending_and_exempt_name_real_modules():
    # A typo here would exempt nothing and hide it.
    callables = {q for q, _, _ in public_callables()}
    for name in (_PENDING | _EXEMPT) - {"vnetlab.stack"}:
        assert name in callables or any(m == name or m.startswith(name + ".") for m in _ALL_MODULES), name


# -- the bad-input sweep ------------------------------------------------------------------------------------

class _Unbuildable(Exception):
    pass


def _members(tp: Any) -> tuple[Any, ...]:
    return typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)


def _ranges(tp: Any) -> tuple[Any, list[In]]:
    if typing.get_origin(tp) is typing.Annotated:
        return typing.get_args(tp)[0], [m for m in tp.__metadata__ if isinstance(m, In)]
    return tp, []


def _good(tp: Any) -> Any:
    """A value the annotation admits (the body never runs in the sweep: another argument is bad)."""
    members = _members(tp)
    if type(None) in members or None in members:
        return None
    base, ranges = _ranges(members[0])
    if base is typing.Any or base is object:
        return None
    if base is bool:
        return False
    if base in (int, float):
        lo = max([r.lo for r in ranges if r.lo is not None], default=0)
        return base(lo) + (1 if any(r.lo_excluded for r in ranges) else 0)
    if base is str:
        return "x"
    origin = typing.get_origin(base)
    if origin is typing.Literal:
        return typing.get_args(base)[0]
    if origin in (tuple, cabc.Sequence, cabc.Iterable, cabc.Collection) or base in (tuple, cabc.Sequence):
        return ()
    if origin in (list,) or base is list:
        return []
    if origin in (dict, cabc.Mapping) or base in (dict, cabc.Mapping):
        return {}
    if origin in (set, frozenset, cabc.Set):
        return frozenset()
    if origin is cabc.Callable or base is cabc.Callable:
        return print
    if base is type:
        return int
    if inspect.isclass(base):
        return _instance(base)
    raise _Unbuildable(base)


def _instance(cls: type) -> Any:
    """A bare instance: isinstance holds, and no field is read before the body (which the sweep never reaches)."""
    for maker in [object] + [b for b in cls.__mro__ if b in (str, int, float, tuple, frozenset)]:
        try:
            return maker.__new__(cls)
        except TypeError:
            continue
    raise _Unbuildable(cls)


def _bad(tp: Any) -> list[Any]:
    """Values every member of the annotation refuses, by those rules."""
    members = _members(tp)
    allows_none = type(None) in members or None in members
    kinds = []
    for m in members:
        base, ranges = _ranges(m)
        if base in (typing.Any, object):
            return []
        kinds.append((base, ranges))
    candidates: list[Any] = [object(), math.nan, "no-such-name", b"bytes"]
    if not allows_none:
        candidates.append(None)
    for base, ranges in kinds:
        if base is bool:
            candidates += ["no", 1, 0]
        if base is int:
            candidates += [1.0, "1", True]
        if base is float:
            candidates += [math.inf, "1.5", True]
        for r in ranges:
            if r.lo is not None:
                candidates.append(base(r.lo) - (0 if r.lo_excluded else 1))
            if r.hi is not None:
                candidates.append(base(r.hi) + 1)
    return [c for c in candidates if not any(_admits(base, ranges, c) for base, ranges in kinds)
            and not (c is None and allows_none)]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or type(v).__name__.startswith(("int", "uint"))


def _admits(base: Any, ranges: list[In], v: Any) -> bool:
    """The oracle: does an annotation admit v (those rules, independent of vnetlab.checks' code)."""
    if base is bool:
        return v is True or v is False
    if base is int:
        return _is_int(v) and all(v in r for r in ranges)
    if base is float:
        return (_is_int(v) or isinstance(v, float)) and math.isfinite(v) and all(v in r for r in ranges)
    if base is str:
        return isinstance(v, str)
    origin = typing.get_origin(base)
    if origin is typing.Literal:
        return any(type(v) is type(a) and v == a for a in typing.get_args(base))
    cls = origin or base
    if cls in (cabc.Sequence, cabc.Iterable, cabc.Collection):
        return hasattr(type(v), "__iter__") and not isinstance(v, (str, bytes))
    if cls is cabc.Callable:
        return callable(v)
    if inspect.isclass(cls):
        return isinstance(v, cls)
    return True


def _sweep_cases() -> list[tuple[str, Any, type | None, str, Any]]:
    cases = []
    for qual, fn, owner in _covered():
        if not is_public(fn):
            continue
        for pname, tp in param_annotations(fn).items():
            cases.append((qual, fn, owner, pname, tp))
    return cases


_CASES = _sweep_cases()


def _call(fn: Any, owner: type | None, bad_name: str, bad_value: Any) -> str:
    """Call with ``bad_value`` for ``bad_name``; returns the name the error should give (a **kwargs key)."""
    sig = inspect.signature(fn)
    hints = param_annotations(fn)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    blamed = bad_name
    for i, p in enumerate(sig.parameters.values()):
        if i == 0 and owner is not None and p.name in ("self", "cls"):
            args.append(owner if p.name == "cls" else _instance(owner))
            continue
        if p.name == bad_name:
            value = bad_value
        elif p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        else:
            value = _good(hints.get(p.name, typing.Any))
        if p.kind is p.VAR_POSITIONAL:
            args += list(kwargs.values())  # the parameters before *args must then be positional
            kwargs.clear()
            args.append(value)
        elif p.kind is p.VAR_KEYWORD:
            kwargs["some_keyword"] = value
            blamed = "some_keyword"
        elif p.kind is p.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[p.name] = value
    fn(*args, **kwargs)
    return blamed


@pytest.mark.parametrize(("qual", "fn", "owner", "pname", "tp"), _CASES,
                         ids=[f"{c[0]}:{c[3]}" for c in _CASES])
def test_bad_inputs_are_refused_naming_the_parameter(qual, fn, owner, pname, tp):
    try:
        bads = _bad(tp)
        [_good(tp)]  # the sweep builds the others from the same rules; one that cannot be built is skipped
    except _Unbuildable as e:
        pytest.skip(f"cannot build a value of {e}")
    holes = []
    kind = inspect.signature(fn).parameters[pname].kind
    expected = "some_keyword" if kind is inspect.Parameter.VAR_KEYWORD else pname
    for bad in bads:
        try:
            _call(fn, owner, pname, bad)
        except _Unbuildable as e:
            pytest.skip(f"cannot build a value of {e}")
        except ArgumentError as e:
            if e.param != expected:
                holes.append(f"{bad!r}: blamed {e.param}")
            continue
        except Exception as e:  # noqa: BLE001 - anything but ArgumentError is a hole, reported below
            holes.append(f"{bad!r}: {type(e).__name__}: {e}")
            continue
        holes.append(f"{bad!r}: accepted")
    assert not holes, f"{qual}({pname}: {tp}): " + "; ".join(holes)


# -- the holes found in profiles, labdata, exercises, router and live ---------------------------------

def test_lab_data_names_come_from_the_catalogue_not_the_path():
    from vnetlab import labdata
    # "6.1/../5.10" would read data/lab/5.10/mergeable.json if joined as a path.
    err = pytest.raises(ArgumentError, labdata.load, "mergeable", "6.1/../5.10").value
    assert err.param == "kernel" and "'5.10', '6.1'" in str(err)
    assert pytest.raises(ArgumentError, labdata.load, "../5.10/mergeable", "6.1").value.param == "name"
    assert pytest.raises(ArgumentError, labdata.configs, "6.1/../5.10").value.param == "kernel"
    assert labdata.load("mergeable", "6.1")["kernel"]["release"] == "6.1.0-57-amd64"  # data/lab/6.1/mergeable.json


def test_exercise_check_takes_numpy_answers():
    import numpy as np

    from vnetlab import exercises
    # 10.1's answer is an int (a tailroom in bytes, exercises.py); a numpy expression gives np.int64.
    right = exercises.solution("10.1")
    assert exercises.check("10.1", np.int64(right)) and exercises.check("10.1", np.float64(right))
    assert not exercises.check("10.1", np.int64(right + 1))
    assert pytest.raises(ArgumentError, exercises.check, "99.9", 1).value.param == "key"


def test_router_costs_zero_nan_inf_and_divisors():
    import math

    from vnetlab import router
    # cpu_hz and link_bps divide (router_throughput: cpu_hz / cycles per packet, link_bps / bits per frame).
    for name, bad in (("cpu_hz", 0), ("link_bps", 0), ("link_bps", math.nan), ("link_bps", math.inf),
                      ("rx_per_packet", -1), ("rx_per_packet", math.nan), ("rx_per_packet", "1")):
        err = pytest.raises(ArgumentError, router.RouterCosts.from_table, **{name: bad}).value
        assert err.param == name
    assert pytest.raises(ArgumentError, router.RouterCosts.from_table().with_, cpu_hz=0).value.param == "cpu_hz"
    assert pytest.raises(ArgumentError, router.RouterCosts, {"cpu_hz": 1e9}).value.param == "values"
    # Every per-operation cost 0: the CPU is free and the link is the bound (a documented meaning, not an error).
    free = router.RouterCosts.from_table(**{n: 0 for n in router.RouterCosts.from_table().values
                                             if n not in ("cpu_hz", "link_bps")})
    t = router.router_throughput(router.router_scenario(kernel="5.11"), free)
    assert t.bound == "link" and t.cpu_pps == math.inf and 0 < t.goodput_bps < 1e9


def test_router_gap_with_nothing_forwarded_before_is_a_clear_error():
    from vnetlab import router
    before = router.router_scenario(kernel="5.10")
    after = router.router_scenario(kernel="5.11")
    # drop_untranslated with a before that NATs nothing would divide by a zero goodput.
    object.__setattr__(before, "nat_translated", 0)
    err = pytest.raises(ArgumentError, router.router_gap, before, after, drop_untranslated=True).value
    assert err.param == "before" and "goodput 0" in str(err)


def test_unknown_kernel_and_arch_list_the_known_ones():
    from vnetlab import profiles
    from vnetlab.errors import UnknownArchError, UnknownKernelError
    err = pytest.raises(UnknownKernelError, profiles.kernel, "9.9").value
    assert isinstance(err, ArgumentError) and err.param == "kernel" and "5.10, 5.10.223" in str(err)
    err = pytest.raises(UnknownArchError, profiles.arch, "sparc").value
    assert err.param == "arch" and "x86_64, arm64" in str(err)
    # CONFIG_MAX_SKB_FRAGS: net/Kconfig range 17..45 (6.3+).
    assert pytest.raises(ArgumentError, profiles.arch, "x86_64", "6.18", max_skb_frags=46).value.param == \
        "max_skb_frags"


def test_running_profile_inputs():
    from vnetlab import live
    assert live.running_profile("5.10.223") == "5.10.223"  # a lab profile of its own (data/kernels.toml)
    assert pytest.raises(ArgumentError, live.running_profile, 5.10).value.param == "release"
    assert pytest.raises(ArgumentError, live.running_profile, "linux").value.param == "release"


# -- checks inside bodies: the same ArgumentError as the annotations (tools/probe_inputs.py's first round) ---------

def _skb_with(**changes):
    from vnetlab import segment
    return segment.gso_skb(segs=2, gso_size=1000).copy(**changes)


_BODY_CASES = [
    # (what, call, the parameter the error must name)
    ("hdr_len the kernel cannot negotiate", lambda: __import__("vnetlab.rx").rx.receive(1000, hdr_len=0), "hdr_len"),
    ("struct virtio_net_hdr with mergeable buffers",
     lambda: __import__("vnetlab.rx").rx.receive(1000, hdr_len=10), "hdr_len"),
    ("frame_lens of non-whole floats",
     lambda: __import__("vnetlab.rx_classify").rx_classify.classify([100.5], [2048]), "frame_lens"),
    ("truesizes of strings", lambda: __import__("vnetlab.rx_classify").rx_classify.classify([100], ["a"]),
     "truesizes"),
    ("a 2-D frame_lens", lambda: __import__("vnetlab.rx_classify").rx_classify.classify([[100]], [2048]),
     "frame_lens"),
    ("gso_size on a packet that fits the MTU",
     lambda: __import__("vnetlab.rx").rx.receive(1000, gso_size=500), "gso_size"),
    ("Skb.vlan_tag past VLAN_VID_MASK", lambda: _skb_with(vlan_tag=4096), "vlan_tag"),
    ("Skb.gso_type as a str", lambda: _skb_with(gso_type="UDP_L4"), "gso_type"),
    ("Skb.ip_summed unknown", lambda: _skb_with(ip_summed="CHECKSUM_MAYBE"), "ip_summed"),
    ("tcp_flags past the 8 flag bits",
     lambda: __import__("vnetlab.gro_stream").gro_stream.simulate_stream(8, 1000, tcp_flags=[256] * 8), "tcp_flags"),
    ("an unknown lab kernel", lambda: __import__("vnetlab.labkernels").labkernels.lab_kernel("9.9"), "kernel"),
]


@pytest.mark.parametrize(("what", "call", "param"), _BODY_CASES, ids=[c[0] for c in _BODY_CASES])
def test_body_checks_raise_argument_error_naming_the_parameter(what, call, param):
    # A check inside a body (a range that depends on the kernel, a field of the skb) raises what @public raises.
    err = pytest.raises(ArgumentError, call).value
    assert err.param == param, f"{what}: {err.param!r}: {err}"


# -- the second round: names, str choices, containers and the receive-buffer helpers' ranges ----------------------

def _k():
    return vnetlab.kernel("6.1")


def _a():
    return vnetlab.arch("x86_64")


_ROUND2_CASES = [
    # a table name is one of data/'s files, never a path: Kernel.table, load_table, kernel_section, table_kernels
    ("a table that does not exist", lambda: _k().table("GRO"), "table"),
    ("a table given as a path", lambda: vnetlab.profiles.kernel_section("../kernels", "6.1"), "table"),
    ("load_table of an unknown name", lambda: vnetlab.tables.load_table("nosuch"), "name"),
    # a kernel passed under another name is blamed under that name, not as rx_cost's "kernel"
    ("breakdown's base kernel unknown",
     lambda: vnetlab.cost.breakdown(vnetlab.cost.mix({1000: 1}), "9.9", "5.13"), "base"),
    ("packet_op_counts' truesizes of strings",
     lambda: vnetlab.cost.packet_op_counts([1042], ["x"], kernel="6.1", headers=28), "buf_truesizes"),
    ("packet_op_counts' frame_lens of strings",
     lambda: vnetlab.cost.packet_op_counts(["x"], [2048], kernel="6.1", headers=28), "frame_lens"),
    ("an unknown rx cost operation", lambda: vnetlab.cost.rx_cost(vnetlab.cost.mix({1000: 1}), "6.1",
                                                                  {"no_such_op": 1.0}), "costs"),
    # str parameters with a fixed set of values: the set is in the annotation
    ("mix's l4 in capitals", lambda: vnetlab.cost.mix({1000: 1}, l4="UDP"), "l4"),
    ("mix's destination unknown", lambda: vnetlab.cost.mix({1000: 1}, destination="sock"), "destination"),
    ("a router NIC profile unknown", lambda: vnetlab.stack.build_stack(nic="e1000"), "nic"),
    ("build_skb_tailroom in small mode", lambda: vnetlab.rx.build_skb_tailroom(
        1042, 2048, mode="small", hdr_len=12, headroom=0, k=_k(), a=_a()), "mode"),
    ("encapsulate with an unknown SKB_GSO tunnel",
     lambda: vnetlab.segment.gso_skb(segs=2, gso_size=1000).encapsulate(50, "GRE"), "gso_tunnel"),
    ("encapsulate with a VNI past 24 bits",
     lambda: vnetlab.segment.gso_skb(segs=2, gso_size=1000).encapsulate(50, "UDP_TUNNEL", vni=1 << 24), "vni"),
    ("an unhashable ip", lambda: vnetlab.segment.check_ip([4]), "ip"),
    # features: a str or a mapping answers 'in' and silently meant "GRO off"
    ("features as a str", lambda: vnetlab.gro.aggregate(vnetlab.gro.receive_flow(1000, 2, l4="udp"), l4="udp",
                                                        features="GRO"), "features"),
    ("features as an ethtool mapping", lambda: vnetlab.gro.aggregate(
        vnetlab.gro.receive_flow(1000, 2, l4="udp"), l4="udp", features={"GRO": False}), "features"),
    # the receive-buffer helpers: bytes of one buffer (MRG_CTX_HEADER_SHIFT 22), header sizes, XDP headroom
    ("a negative frag_size", lambda: vnetlab.rx.receive(1000, frag_size=-1), "frag_size"),
    ("a zero frag_size", lambda: vnetlab.rx.RxQueue(frag_size=0), "frag_size"),
    ("build_skb_tailroom of a negative frame", lambda: vnetlab.rx.build_skb_tailroom(
        -1, 2048, mode="mergeable", hdr_len=12, headroom=0, k=_k(), a=_a()), "frame_len"),
    ("build_skb_tailroom with 100 bytes of headroom", lambda: vnetlab.rx.build_skb_tailroom(
        1042, 2048, mode="mergeable", hdr_len=12, headroom=100, k=_k(), a=_a()), "headroom"),
    ("a negative EWMA sample", lambda: vnetlab.rxbuf.Ewma().add(-1), "sample"),
    ("a page frag of 0 bytes", lambda: vnetlab.rxbuf.PageFrag(0, _a()), "frag_size"),
    ("a page_pool page of 2**31 bytes", lambda: vnetlab.rxbuf.PagePool(2 ** 31, _a()), "page_bytes"),
    ("a big-mode chain of 0 pages", lambda: vnetlab.rxbuf.receive_big_max_frame(0, 12, _k(), _a()), "pages"),
    ("big_pages with a mergeable buffer", lambda: vnetlab.rx.page_to_skb(1042, 2048, big_pages=5), "big_pages"),
    ("get_mergeable_buf_len with a 2-byte header", lambda: vnetlab.rxbuf.get_mergeable_buf_len(
        1500, min_buf_len=1536, hdr_len=2, room=0, a=_a()), "hdr_len"),
    ("an skb head of -1 bytes", lambda: vnetlab.skbuff.alloc_skb_head(-1, _k(), _a()), "size"),
    ("build_skb of a buffer smaller than its shinfo", lambda: vnetlab.skbuff.build_skb_truesize(100, _a()),
     "frag_size"),
]


@pytest.mark.parametrize(("what", "call", "param"), _ROUND2_CASES, ids=[c[0] for c in _ROUND2_CASES])
def test_round2_bad_inputs_name_their_parameter(what, call, param):
    for module in ("rxbuf", "skbuff", "tables"):  # not among vnetlab's lazy attributes: imported for the calls
        importlib.import_module(f"vnetlab.{module}")
    err = pytest.raises(ArgumentError, call).value
    assert err.param == param, f"{what}: {err.param!r}: {err}"


def test_round2_values_that_stay_valid():
    # What the new bounds must keep: a frag smaller than PAGE_SIZE is one page (skb_page_frag_refill), the XDP
    # headroom is VIRTIO_XDP_HEADROOM (drivers/net/virtio_net.c), an empty feature set is GRO off.
    assert vnetlab.rx.receive(1000, frag_size=1536).path == vnetlab.rx.receive(1000, frag_size=4096).path
    assert vnetlab.rx.build_skb_tailroom(1042, 4096, mode="mergeable", hdr_len=12,
                                         headroom=vnetlab.rx.VIRTIO_XDP_HEADROOM, k=_k(), a=_a()) is not None
    flow = vnetlab.gro.receive_flow(1000, 4, l4="udp")
    assert len(vnetlab.gro.aggregate(flow, l4="udp", features=set())) == 4


# -- the third round: the kernel's refusals of device operations, skbs, lab files and verdicts --------------------

def _ns():
    return vnetlab.netdev.Namespace(kernel="6.1")


_ROUND3_CASES = [
    # net/core/dev.c dev_valid_name: a veth's second name is refused as b, not as "name"
    ("a veth peer name with a space", lambda: _ns().veth("v0", "v 1"), "b"),
    ("a bridge name of IFNAMSIZ bytes", lambda: _ns().bridge("b" * 16), "name"),
    ("a vlan on a device of another namespace", lambda: _ns().vlan("v0.10", lower=_ns().veth("x0", "x1")[0],
                                                                   vid=10), "lower"),
    # dev_validate_mtu and do_setlink's gso_max_size: -EINVAL for the argument
    ("an MTU below ETH_MIN_MTU", lambda: _ns().veth("m0", "m1")[0].set_mtu(10), "mtu"),
    ("gso_max_segs past GSO_MAX_SEGS", lambda: _ns().veth("g0", "g1")[0].set_gso_max(segs=1 << 16), "segs"),
    ("a bridge with no port sends", lambda: vnetlab.netdev.core.port_of(_ns().bridge("br0"), None), "master"),
    # GRO's input skbs and the stream's buffers
    ("a None among GRO's skbs", lambda: vnetlab.gro.aggregate([None]), "skbs"),
    ("buffers smaller than a frame's header",
     lambda: vnetlab.gro_stream.simulate_stream(64, 1448, buf_lens=1), "buf_lens"),
    # the lab files: a kernel id by its own parameter, a document that is not a lab file
    ("a lab pair with an unknown after", lambda: vnetlab.labdata.rate_table(after="6.1-nope"), "after"),
    ("an empty mapping as a lab file", lambda: vnetlab.labdata.hdr_len({}), "doc"),
    ("a lab file without its qemu section", lambda: vnetlab.labdata.mtu({"schema": 1}), "doc"),
    # a device's kernel, a verdict
    ("the kernel of None", lambda: vnetlab.profiles.device_kernel(None), "dev"),
    ("an int as a verdict", lambda: vnetlab.room.outcome(1), "verdict"),
]


@pytest.mark.parametrize(("what", "call", "param"), _ROUND3_CASES, ids=[c[0] for c in _ROUND3_CASES])
def test_round3_bad_inputs_name_their_parameter(what, call, param):
    for module in ("netdev.core", "gro_stream", "labdata", "room"):  # not among vnetlab's lazy attributes
        importlib.import_module(f"vnetlab.{module}")
    err = pytest.raises(ArgumentError, call).value
    assert err.param == param, f"{what}: {err.param!r}: {err}"


# -- the fourth round: what a device is handed, feature bits of another kernel, GRO trace indexes -----------------

def _veth():
    return vnetlab.netdev.Namespace(kernel="6.1").veth("f0", "f1")[0]


_ROUND4_CASES = [
    ("a None handed to a veth's ndo_start_xmit", lambda: _veth().start_xmit([None]), "skbs"),
    ("a str handed to a bond", lambda: _bonded().start_xmit(["skb"]), "skbs"),
    # include/linux/netdev_features.h: netdev_features_t is a u64
    ("negative feature bits", lambda: _veth().fix_features(-1), "features"),
    ("feature bits past 64", lambda: _veth().fix_features(1 << 64), "features"),
    # 5.10's NETIF_F bit numbers are not 6.1's (data/netdev_features.toml): a set must be of the device's kernel
    ("a 5.10 FeatureSet on a 6.1 device", lambda: _veth().features_check(
        vnetlab.segment.gso_skb(segs=2, gso_size=1000),
        vnetlab.features.FeatureSet.from_names(["SG"], kernel="5.10")), "features"),
    ("a list of ints as features", lambda: vnetlab.gro.aggregate(vnetlab.gro.receive_flow(1000, 2, l4="udp"),
                                                                 l4="udp", features=[1]), "features"),
    ("a GRO skb index past the last", lambda: vnetlab.gro.aggregate_trace(
        vnetlab.gro.receive_flow(1000, 2, l4="udp"), l4="udp").packets_in_first_skb(5), "gro_skb"),
    ("a negative GRO skb index", lambda: vnetlab.gro.aggregate_trace(
        vnetlab.gro.receive_flow(1000, 2, l4="udp"), l4="udp").packets_in_first_skb(-1), "gro_skb"),
    ("a None among the kernels predicted", lambda: vnetlab.cost.predictions(kernels=[None]), "kernels"),
    ("a case that is no Traffic", lambda: vnetlab.cost.predictions(cases={"x": True}), "cases"),
]


def _bonded():
    ns = vnetlab.netdev.Namespace(kernel="6.1")
    bond = ns.bond("bond0")
    ns.set_master(ns.veth("b0", "b1")[0], bond)
    return bond


@pytest.mark.parametrize(("what", "call", "param"), _ROUND4_CASES, ids=[c[0] for c in _ROUND4_CASES])
def test_round4_bad_inputs_name_their_parameter(what, call, param):
    err = pytest.raises(ArgumentError, call).value
    assert err.param == param, f"{what}: {err.param!r}: {err}"


def test_round4_a_device_still_takes_its_own_kernels_sets():
    import vnetlab.segment
    dev = _veth()
    skb = vnetlab.segment.gso_skb(segs=2, gso_size=1000)
    own = vnetlab.features.FeatureSet.from_names(["SG"], kernel="6.1")
    assert dev.features_check(skb, own) == own
    assert dev.start_xmit([skb]).skbs == (skb,)


def test_the_last_bad_inputs_of_the_probe_round_name_their_parameter():
    """What tools/probe_inputs.py still found in vxlan, udp, xmit and features: each is now an ArgumentError that
    names its parameter (before: AttributeError, ValueError, KeyError, a ValueError that was no ArgumentError)."""
    from vnetlab import features, netdev, udp
    from vnetlab.errors import ArgumentError

    net = netdev.Namespace("6.1")
    v0, _ = net.veth("a0", "b0")
    vx = net.vxlan("vx0", vni=42, underlay=v0)
    cases = [
        (lambda: vx.start_xmit([None]), "skbs"),  # ndo_start_xmit is handed skbs (was AttributeError)
        (lambda: udp.udp_sendmsg(v0, -1), "length"),
        (lambda: udp.udp_sendmsg(v0, 100, gso_size="1400"), "gso_size"),
        (lambda: udp.udp_sendmsg(v0, 100).tx.hop("nope"), "name"),  # no such hop (was KeyError)
        (lambda: features.bit("NO_SUCH_FEATURE", "6.1"), "name"),  # UnknownFeatureError is an ArgumentError
    ]
    for call, param in cases:
        with pytest.raises(ArgumentError) as err:
            call()
        assert err.value.param == param, (param, err.value)
