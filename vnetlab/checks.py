"""Argument checks at the public boundary: ``@public`` enforces a function's annotations when it is called.

    from vnetlab.checks import In, public

    @public
    def receive(payload_len: Annotated[int, In(0, IP_MAX_MTU, "L4 payload bytes")], *, xdp: bool = False,
                kernel: str | Kernel = DEFAULT_KERNEL, mode: Literal["small", "big", "mergeable"] = "mergeable"): ...

A call with a wrong type, a value outside an ``In(lo, hi, meaning)`` range or a name outside a ``Literal`` raises
:class:`vnetlab.errors.ArgumentError` (a ValueError and a TypeError) naming the function, the parameter, what is
allowed and its kernel meaning: ``rx.receive: hdr_len must be an int in 10..12 (virtio_net_hdr size: 10, or 12
with MRG_RXBUF/VERSION_1), got 12.0``.

What each annotation admits (the rules a user meets, the same everywhere):
  - ``bool``: True or False only (numpy's np.True_/np.False_ too); "no", 0, 1 and None are refused.
  - ``int``: int and numpy integers (np.int64 is an int to a user; it reaches the body as a Python int, so no
    model does int64 arithmetic); bool, float (12.0 too), str and np.float64 are refused.
  - ``float``: int, float and numpy numbers, finite only (NaN and inf are refused); bool refused.
  - ``str``, classes (``Kernel``, ``Skb``, ...), ``X | Y``, ``X | None``: isinstance, any member.
  - ``Literal["a", "b"]``: one of those values; the message lists them.
  - ``Annotated[int | float, In(lo, hi, meaning)]``: the type, then lo <= value <= hi (None: unbounded;
    ``lo_excluded=True`` for "> lo"). Other metadata is ignored.
  - Containers (``Sequence[int]``, ``Mapping[str, int]``, ``list[...]``, ``Callable``): the container's kind
    only; elements are the body's business (an array of a million frames is not walked per call).
    ``Sequence``/``Iterable`` accept any iterable but a str (numpy arrays included).
  - ``Any``, ``object``, TypeVars and names that exist only under TYPE_CHECKING (``ArrayLike``): unchecked.
Defaults are not checked (they are the author's); annotations are read once, at the first call, so forward
references and classes defined later in the module resolve.

``IpVersion``, ``UdpPayloadLen`` and ``DeviceMtu`` annotate the quantities several modules take, once.

Inside bodies, :func:`check_int`, :func:`check_float`, :func:`check_bool` and :func:`check_choice` give the same
message for values the signature cannot describe (a range that depends on the kernel, a field of a table).

Decision: our own annotation reader, not beartype 0.23.1. Measured with benchmarks/bench_checks.py
(2 shared cores, nice 15, Python 3.11), a 6-parameter function (int range, two bools, int range, str | Kernel,
Literal) called with all six: undecorated 0.12-0.23 us; @public +0.22 us (each argument is first tested by an
inlined guard, ``type(x) is int and 10 <= x <= 12``, and only a miss calls the full matcher); beartype with
BeartypeConf(violation_param_type=ArgumentError) and the ranges as Annotated[int, Is[...]] +2.6..3.7 us.
beartype's semantics also differ from what a workbook user needs: for these annotations it accepts True for
``int`` (bool is an int subclass), refuses np.int64 for ``int`` and accepts NaN for ``float``, and its messages
name the PEP 484 hint, not the kernel range and meaning; each rule above would become an ``Is[...]`` rewrite of
the package's annotations, and the workshop lock would gain a dependency. The hot paths take whole arrays, so
a check costs once per call, not per frame. Measured on the shared machine (load 6.8 on 2 cores, so absolute
times move; compare ratios): rx.classify over 1,000,000 frames plain / under @public in one process 76.5 / 68.0
ms, gro.simulate_stream 39.0 / 40.8 ms (noise either way); benchmarks/bench_gro_stream.py, each case's time over
the numpy baseline, main -> this branch (profiles' Kernel methods now @public): 6.25 -> 6.53, 10.79 -> 9.89,
2.90 -> 2.31, 1.94 -> 1.89, 2.55 -> 1.96, 2.72 -> 1.73, 10.18 -> 8.51, 6.27 -> 7.73: no systematic change.
"""

from __future__ import annotations

import collections.abc as cabc
import functools
import inspect
import math
import numbers
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from vnetlab.errors import ArgumentError
from vnetlab.headers import ETH_MAX_MTU, ETH_MIN_MTU, IP_HLEN, IP_MAX_MTU, UDP_HLEN, VLAN_VID_MASK, VXLAN_N_VID

__all__ = ["In", "public", "is_public", "checked_params", "param_annotations", "function_name",
           "check_int", "check_float", "check_bool", "check_choice", "int_array", "IpVersion", "UdpPayloadLen",
           "DeviceMtu", "VlanId", "VLAN_TAG", "VlanTag", "VxlanVni"]


class In:
    """Range metadata for ``Annotated[int, In(lo, hi, "kernel meaning")]``: lo <= value <= hi, None unbounded."""

    __slots__ = ("lo", "hi", "meaning", "lo_excluded")

    def __init__(self, lo: float | None, hi: float | None, meaning: str = "", *, lo_excluded: bool = False) -> None:
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"In: lo {lo!r} is above hi {hi!r}")
        self.lo, self.hi, self.meaning, self.lo_excluded = lo, hi, meaning, lo_excluded

    def __contains__(self, value: Any) -> bool:
        lo, hi = self.lo, self.hi
        if lo is not None and (value <= lo if self.lo_excluded else value < lo):
            return False
        return hi is None or value <= hi

    def text(self) -> str:
        """'10..12', '>= 0', '> 0', '<= 9000' or '0 < x <= 1' as the message shows it."""
        lo, hi = self.lo, self.hi
        if lo is None and hi is None:
            return "any value"
        if hi is None:
            return f"{'>' if self.lo_excluded else '>='} {lo}"
        if lo is None:
            return f"<= {hi}"
        return f"{lo} < x <= {hi}" if self.lo_excluded else f"{lo}..{hi}"

    def phrase(self) -> str:
        """'in 10..12' for a closed range, '> 0' or '>= 1' for one bound: what follows "an int" in a message."""
        text = self.text()
        return f"in {text}" if self.lo is not None and self.hi is not None and not self.lo_excluded else text

    def __repr__(self) -> str:
        extra = ", lo_excluded=True" if self.lo_excluded else ""
        return f"In({self.lo!r}, {self.hi!r}, {self.meaning!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, In) and (self.lo, self.hi, self.meaning, self.lo_excluded) == (
            other.lo, other.hi, other.meaning, other.lo_excluded)

    def __hash__(self) -> int:
        return hash((self.lo, self.hi, self.meaning, self.lo_excluded))


# Quantities several modules take, annotated once (the numbers: vnetlab.headers, which cites the kernel).
IpVersion = typing.Literal[4, 6]
UdpPayloadLen = typing.Annotated[int, In(1, IP_MAX_MTU - IP_HLEN[4] - UDP_HLEN,
                                         "UDP payload bytes per datagram: IP_MAX_MTU - iphdr - udphdr")]
DeviceMtu = typing.Annotated[int, In(ETH_MIN_MTU, ETH_MAX_MTU, "dev->mtu: ETH_MIN_MTU..ETH_MAX_MTU")]
# net/8021q/vlan_netlink.c vlan_validate (5.10..6.18): a VLAN device's id >= VLAN_VID_MASK is -ERANGE
VlanId = typing.Annotated[int, In(0, VLAN_VID_MASK - 1, "802.1Q VLAN id of a VLAN device (VLAN_VID_MASK - 1)")]
# include/linux/if_vlan.h: the 12 id bits a tag carries (__vlan_hwaccel_put_tag stores any of them in vlan_tci)
VLAN_TAG = In(0, VLAN_VID_MASK, "a 12-bit VLAN id in a tag (VLAN_VID_MASK)")
VlanTag = typing.Annotated[int, VLAN_TAG]
# drivers/net/vxlan/vxlan_core.c vxlan_validate (6.1): id >= VXLAN_N_VID is -ERANGE
VxlanVni = typing.Annotated[int, In(0, VXLAN_N_VID - 1, "VXLAN network identifier (24 bits, VXLAN_N_VID - 1)")]


class _Mismatch(Exception):
    """Raised by a matcher; the parameter's checker turns it into an ArgumentError with the whole description."""


_MISMATCH = _Mismatch()
Matcher = Callable[[Any], Any]  # value -> value (numpy ints as int), or raises _Mismatch


def _is_numpy(value: Any) -> bool:
    return type(value).__module__ == "numpy"


def _as_int(value: Any) -> int:
    """An int or numpy integer as a Python int; anything else (bool, float, str, np.float64) is a mismatch."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _MISMATCH
    return int(value)


def _as_float(value: Any) -> Any:
    """A finite int, float or numpy number, unchanged; bool, str, NaN and inf are mismatches."""
    if type(value) is not float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or (
                _is_numpy(value) and type(value).__name__.startswith("bool")):
            raise _MISMATCH
    if not math.isfinite(value):
        raise _MISMATCH
    return value


def _as_bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    if _is_numpy(value) and type(value).__name__.startswith("bool"):
        return bool(value)
    raise _MISMATCH


def _article(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


def _ranged(base: Matcher, rng: In) -> Matcher:
    def match(value: Any) -> Any:
        value = base(value)
        if value not in rng:
            raise _MISMATCH
        return value
    return match


def _isinstance_matcher(cls: type) -> Matcher:
    def match(value: Any) -> Any:
        if not isinstance(value, cls):
            raise _MISMATCH
        return value
    return match


def _iterable_matcher(value: Any) -> Any:
    if isinstance(value, (str, bytes)) or not hasattr(type(value), "__iter__"):
        raise _MISMATCH
    return value


def _callable_matcher(value: Any) -> Any:
    if not callable(value):
        raise _MISMATCH
    return value


def _none_matcher(value: Any) -> Any:
    if value is not None:
        raise _MISMATCH
    return value


def _literal(values: tuple[Any, ...]) -> tuple[Matcher, str]:
    allowed = frozenset(values)
    has_bool = any(isinstance(v, bool) for v in values)

    def match(value: Any) -> Any:
        if isinstance(value, bool) and not has_bool:
            raise _MISMATCH  # True == 1: a bool is not the int 1 of Literal[0, 1]
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
        elif isinstance(value, float) and not has_bool:
            raise _MISMATCH  # 4.0 == 4: Literal[4, 6] means the int
        try:
            ok = value in allowed
        except TypeError:  # unhashable
            ok = False
        if not ok:
            raise _MISMATCH
        return value
    return match, "one of " + ", ".join(repr(v) for v in values)


def _union(members: Iterable[Any]) -> tuple[Matcher | None, str]:
    parts = [_compile(m) for m in members]
    if any(m is None for m, _ in parts):
        return None, "anything"
    matchers = tuple(m for m, _ in parts)
    desc = " or ".join(d for _, d in parts)

    def match(value: Any) -> Any:
        for m in matchers:
            try:
                return m(value)
            except _Mismatch:
                pass
        raise _MISMATCH
    return match, desc


_ABC_ITERABLE = (cabc.Iterable, cabc.Collection, cabc.Sequence, cabc.Reversible)


def _compile(tp: Any) -> tuple[Matcher | None, str]:
    """A matcher and its description ("an int in 10..12 (meaning)") for one annotation; None: not checked."""
    if tp is Any or tp is object or isinstance(tp, (typing.TypeVar, typing.ParamSpec)):
        return None, "anything"
    if tp is None or tp is type(None):
        return _none_matcher, "None"
    if tp is bool:
        return _as_bool, "a bool (True/False)"
    if tp is int:
        return _as_int, "an int"
    if tp is float:
        return _as_float, "a finite number"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        base, desc = _compile(args[0])
        ranges = [a for a in tp.__metadata__ if isinstance(a, In)]
        if base is None or not ranges:
            return base, desc
        for rng in ranges:
            base = _ranged(base, rng)
            noun = "an int" if args[0] is int else "a number" if args[0] is float else desc
            desc = f"{noun} {rng.phrase()}" + (f" ({rng.meaning})" if rng.meaning else "")
        return base, desc
    if origin is typing.Union or origin is types.UnionType:
        return _union(args)
    if origin is typing.Literal:
        return _literal(args)
    if origin is not None:
        if origin in _ABC_ITERABLE:
            return _iterable_matcher, f"an iterable ({_name(tp)})"
        if origin is cabc.Callable:
            return _callable_matcher, "a callable"
        if isinstance(origin, type):
            return _isinstance_matcher(origin), _article(_name(tp))
        return None, "anything"
    if tp in _ABC_ITERABLE:
        return _iterable_matcher, f"an iterable ({tp.__name__})"
    if tp is cabc.Callable:
        return _callable_matcher, "a callable"
    if isinstance(tp, type):
        try:
            isinstance(None, tp)
        except TypeError:  # a non-runtime Protocol
            return None, "anything"
        return _isinstance_matcher(tp), _article(tp.__name__)
    return None, "anything"


def _guard(tp: Any, n: str, ns: dict[str, Any]) -> str | None:
    """A Python expression, true only for values of ``tp`` the matcher would accept unchanged (the common case,
    inlined in the wrapper so a good argument costs a comparison, not a call); None: always call the matcher."""
    def const(value: Any) -> str:
        key = f"_pub_k{len(ns)}"
        ns[key] = value
        return key
    if tp is None or tp is type(None):
        return f"{n} is None"
    if tp is bool:
        return f"{n} is True or {n} is False"
    if tp is int:
        return f"type({n}) is int"
    if tp is str:
        return f"type({n}) is str"
    if tp is float:
        return f"type({n}) is float and -{const(math.inf)} < {n} < {const(math.inf)}"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        ranges = [a for a in tp.__metadata__ if isinstance(a, In)]
        if not ranges:
            return _guard(args[0], n, ns)
        if len(ranges) > 1 or args[0] not in (int, float):
            return None
        rng = ranges[0]
        parts = [f"type({n}) is {args[0].__name__}"]
        if rng.lo is not None:
            parts.append(f"{n} {'>' if rng.lo_excluded else '>='} {const(rng.lo)}")
        elif args[0] is float:
            parts.append(f"{n} > -{const(math.inf)}")
        if rng.hi is not None:
            parts.append(f"{n} <= {const(rng.hi)}")
        elif args[0] is float:
            parts.append(f"{n} < {const(math.inf)}")
        return " and ".join(parts)
    if origin is typing.Union or origin is types.UnionType:
        guards = [g for g in (_guard(a, n, ns) for a in args) if g]
        return " or ".join(f"({g})" for g in guards) if guards else None
    if origin is typing.Literal:
        if all(type(v) is str for v in args):
            return f"type({n}) is str and {n} in {const(frozenset(args))}"
        if all(type(v) is int for v in args):
            return f"type({n}) is int and {n} in {const(frozenset(args))}"
        return None
    if origin is None and isinstance(tp, type) and tp not in _ABC_ITERABLE and tp is not cabc.Callable:
        try:
            isinstance(None, tp)
        except TypeError:
            return None
        return f"isinstance({n}, {const(tp)})"
    return None


def _name(tp: Any) -> str:
    text = repr(tp)
    for prefix in ("collections.abc.", "typing.", "vnetlab."):
        text = text.replace(prefix, "")
    return text


def _resolve(annotation: Any, fn: Callable[..., Any]) -> Any:
    """The annotation object; a string is evaluated in the function's module, a TYPE_CHECKING-only name -> Any."""
    if not isinstance(annotation, str):
        return annotation
    namespace = dict(vars(typing))
    namespace.update(getattr(inspect.unwrap(fn), "__globals__", {}))
    try:
        return eval(annotation, namespace)  # noqa: S307 - the package's own annotation text
    except NameError:
        return Any


def function_name(fn: Callable[..., Any]) -> str:
    """'rx.receive' for vnetlab.rx.receive, 'netdev.Device.set_mtu' for a method: the prefix of every message."""
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("vnetlab."):
        module = module[len("vnetlab."):]
    return f"{module}.{fn.__qualname__}" if module else fn.__qualname__


def _param_checker(fname: str, pname: str, annotation: Any) -> Matcher | None:
    match, desc = _compile(annotation)
    if match is None:
        return None

    def check(value: Any, key: str = pname) -> Any:  # key: the keyword's own name for a **kwargs value
        try:
            return match(value)
        except _Mismatch:
            raise ArgumentError(f"{fname}: {key} must be {desc}, got {value!r}", function=fname,
                                param=key) from None
    check.description = desc  # type: ignore[attr-defined]
    return check


_P = inspect.Parameter


def _wrapper_source(params: list[inspect.Parameter], checked: dict[str, str | None], lazy: bool) -> str:
    """def wrapper(<the same signature>): check each argument (skipping one left at its default), call _pub_fn."""
    sig, call, body = [], [], []
    star_done = False
    for i, p in enumerate(params):
        default = "" if p.default is _P.empty else f"=_pub_d{i}"
        if p.kind is _P.VAR_POSITIONAL:
            sig.append(f"*{p.name}")
            call.append(f"*{p.name}")
            star_done = True
            if p.name in checked:
                body.append(f"    {p.name} = tuple(map(_pub_c{i}, {p.name}))")
            continue
        if p.kind is _P.VAR_KEYWORD:
            sig.append(f"**{p.name}")
            call.append(f"**{p.name}")
            if p.name in checked:
                body.append(f"    {p.name} = {{k: _pub_c{i}(v, k) for k, v in {p.name}.items()}}")
            continue
        if p.kind is _P.KEYWORD_ONLY and not star_done:
            sig.append("*")
            star_done = True
        sig.append(p.name + default)
        call.append(f"{p.name}={p.name}" if p.kind is _P.KEYWORD_ONLY else p.name)
        if p.kind is _P.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind is not _P.POSITIONAL_ONLY):
            sig.append("/")
        if p.name in checked:
            line = f"{p.name} = _pub_c{i}({p.name})"
            conds = ([f"{p.name} is not _pub_d{i}"] if default else []) + (
                [f"not ({checked[p.name]})"] if checked[p.name] else [])
            body.append(f"    if {' and '.join(conds)}: {line}" if conds else f"    {line}")
    if lazy:
        body = ["    _pub_resolve()"]
        target = "_pub_self"
    else:
        target = "_pub_fn"
    body.append(f"    return {target}({', '.join(call)})")
    return f"def _pub_wrapper({', '.join(sig)}):\n" + "\n".join(body) + "\n"


def public(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Enforce ``fn``'s parameter annotations (and ``In`` ranges) at every call; see the module docstring.

    The wrapper has fn's own signature (generated code, no ``inspect.bind`` per call); annotations are read at the
    first call. ``@public`` goes under ``@classmethod``/``@staticmethod`` and over ``@functools.cache``-like
    decorators only if they keep ``__wrapped__`` (the signature is read through it).
    """
    if is_public(fn):
        return fn
    params = list(inspect.signature(fn).parameters.values())
    if any(p.name.startswith("_pub_") for p in params):
        raise ValueError(f"public: {fn.__qualname__} has a parameter named _pub_*, reserved by the wrapper")
    fname = function_name(fn)
    ns: dict[str, Any] = {"_pub_fn": fn}
    for i, p in enumerate(params):
        if p.default is not _P.empty:
            ns[f"_pub_d{i}"] = p.default

    def resolve() -> None:
        checked: dict[str, str | None] = {}  # name -> its inline guard
        for i, p in enumerate(params):
            if p.annotation is _P.empty:
                continue
            annotation = _resolve(p.annotation, fn)
            check = _param_checker(fname, p.name, annotation)
            if check is not None:
                ns[f"_pub_c{i}"] = check
                simple = p.kind not in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)
                checked[p.name] = _guard(annotation, p.name, ns) if simple else None
        final: dict[str, Any] = {}
        code = compile(_wrapper_source(params, checked, lazy=False), f"<@public {fname}>", "exec")
        exec(code, ns, final)  # noqa: S102 - generated from fn's signature
        wrapper.__code__ = final["_pub_wrapper"].__code__
        wrapper.__vnetlab_checked__ = tuple(sorted(checked))  # type: ignore[attr-defined]

    ns["_pub_resolve"] = resolve
    first: dict[str, Any] = {}
    code = compile(_wrapper_source(params, {}, lazy=True), f"<@public {fname}>", "exec")
    exec(code, ns, first)  # noqa: S102 - generated from fn's signature
    wrapper = first["_pub_wrapper"]
    ns["_pub_self"] = wrapper
    functools.update_wrapper(wrapper, fn)
    wrapper.__vnetlab_public__ = True  # type: ignore[attr-defined]
    wrapper.__vnetlab_resolve__ = resolve  # type: ignore[attr-defined]
    return wrapper


def is_public(fn: Any) -> bool:
    """True if ``fn`` (or the function under a classmethod/staticmethod) is wrapped by :func:`public`."""
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__vnetlab_public__", False) is True


def checked_params(fn: Any) -> tuple[str, ...]:
    """The parameters ``@public`` checks on ``fn`` (resolving its annotations now if no call has yet)."""
    fn = getattr(fn, "__func__", fn)
    if not hasattr(fn, "__vnetlab_checked__"):
        fn.__vnetlab_resolve__()
    return fn.__vnetlab_checked__


def param_annotations(fn: Any) -> dict[str, Any]:
    """Each annotated parameter of ``fn`` (under a @public wrapper too) and its annotation as @public reads it."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    return {p.name: _resolve(p.annotation, fn) for p in inspect.signature(fn).parameters.values()
            if p.annotation is not _P.empty}


# -- checks inside bodies: the same rules and messages as the annotations -------------------------------------

def _fail(name: str, desc: str, value: Any, function: str | None) -> ArgumentError:
    prefix = f"{function}: " if function else ""
    return ArgumentError(f"{prefix}{name} must be {desc}, got {value!r}", function=function, param=name)


def _range_desc(noun: str, lo: float | None, hi: float | None, meaning: str) -> str:
    if lo is None and hi is None:
        return noun + (f" ({meaning})" if meaning else "")
    return f"{noun} {In(lo, hi).phrase()}" + (f" ({meaning})" if meaning else "")


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None, meaning: str = "", *,
              function: str | None = None) -> int:
    """``value`` as an int if it is an int or numpy integer in lo..hi (None: unbounded), else ArgumentError:
    "<function>: <name> must be an int in lo..hi (<meaning>), got <value>"."""
    try:
        v = _as_int(value)
    except _Mismatch:
        raise _fail(name, _range_desc("an int", lo, hi, meaning), value, function) from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _fail(name, _range_desc("an int", lo, hi, meaning), value, function)
    return v


def check_float(name: str, value: Any, lo: float | None = None, hi: float | None = None, meaning: str = "", *,
                lo_excluded: bool = False, function: str | None = None) -> float:
    """``value`` as a float if it is a finite number in lo..hi (``lo_excluded``: above lo), else ArgumentError."""
    rng = In(lo, hi, meaning, lo_excluded=lo_excluded)
    try:
        v = _as_float(value)
    except _Mismatch:
        v = None
    if v is None or v not in rng:
        noun = "a finite number" if lo is None and hi is None else "a number"
        desc = noun if lo is None and hi is None else f"{noun} {rng.phrase()}"
        raise _fail(name, desc + (f" ({meaning})" if meaning else ""), value, function)
    return float(v)


def check_bool(name: str, value: Any, meaning: str = "", *, function: str | None = None) -> bool:
    """``value`` if it is True or False (np.bool_ too), else ArgumentError ("no", 0, 1 and None are refused)."""
    try:
        return _as_bool(value)
    except _Mismatch:
        raise _fail(name, "a bool (True/False)" + (f" ({meaning})" if meaning else ""), value, function) from None


def check_choice(name: str, value: Any, choices: Iterable[Any], meaning: str = "", *,
                 function: str | None = None) -> Any:
    """``value`` if it is one of ``choices`` (ints compared as ints, never as bool or float), else ArgumentError
    listing them."""
    choices = tuple(choices)
    match, desc = _literal(choices)
    try:
        return match(value)
    except _Mismatch:
        raise _fail(name, desc + (f" ({meaning})" if meaning else ""), value, function) from None


@public
def int_array(name: str, values: object, meaning: str, *, ndim: int | None = None) -> Any:
    """``values`` as an int64 array of byte counts (or one int), refusing what numpy would silently cast: bools,
    strings, objects, non-whole or non-finite floats (an ArgumentError naming ``name``). ``ndim``: the number of
    dimensions it must have."""
    import numpy as np

    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as e:  # ragged nested lists
        raise ArgumentError(f"{name} must be an array of ints ({meaning}): {e}", param=name) from None
    kind = arr.dtype.kind
    if kind == "f" and arr.size:
        whole = np.isfinite(arr).all() and (np.floor(arr) == arr).all()
        if not whole:
            raise ArgumentError(f"{name} must hold whole numbers ({meaning}), got {arr.dtype} values such as "
                                f"{arr.flat[int(np.argmax(~np.isfinite(arr) | (np.floor(arr) != arr)))]!r}",
                                param=name)
    elif kind not in "iuf":
        raise ArgumentError(f"{name} must be ints ({meaning}), got {arr.dtype} values"
                            + (f" such as {arr.flat[0]!r}" if arr.size else ""), param=name)
    if ndim is not None and arr.ndim != ndim:
        raise ArgumentError(f"{name} must be a {ndim}-D array ({meaning}), got shape {arr.shape}", param=name)
    return arr if kind in "iu" else arr.astype(np.int64)

