"""vnetlab.checks: what @public and check_* admit and refuse, and the messages a user reads.

The rules (bool is True/False only; int takes numpy integers but no
float, str or bool; float is finite; Literal lists its names; In names the range and its kernel meaning). The
sample ranges are the kernel's: virtio_net_hdr is 10 bytes, or 12 with VIRTIO_NET_F_MRG_RXBUF / VERSION_1
(include/uapi/linux/virtio_net.h, struct virtio_net_hdr_mrg_rxbuf); IP_MAX_MTU 65535 (include/net/ip.h).
"""

from __future__ import annotations

import inspect
import math
from typing import Annotated, Literal

import numpy as np
import pytest

from vnetlab.checks import In, check_bool, check_choice, check_float, check_int, checked_params, is_public, public
from vnetlab.errors import ArgumentError
from vnetlab.profiles import Kernel, kernel

HDR = "virtio_net_hdr size: 10, or 12 with MRG_RXBUF/VERSION_1"


def _receive(payload_len: Annotated[int, In(0, 65535, "L4 payload bytes")], *, xdp: bool = False,
            hdr_len: Annotated[int, In(10, 12, HDR)] = 12, kernel: str | Kernel = "6.1",
            mode: Literal["small", "big", "mergeable"] = "mergeable", weight: float | None = None,
            rate: Annotated[float, In(0, None, "link rate, bit/s", lo_excluded=True)] = 1e9,
            ip: Literal[4, 6] = 4) -> tuple:
    return payload_len, xdp, hdr_len, kernel, mode, weight, rate, ip


_receive.__module__ = "vnetlab.rx"  # messages name module.function as for the package's own functions
_receive.__qualname__ = "receive"
receive = public(_receive)


def _message(call) -> ArgumentError:
    with pytest.raises(ArgumentError) as info:
        call()
    return info.value


def test_messages_name_function_parameter_range_and_meaning():
    # Two messages a user reads, verbatim.
    assert str(_message(lambda: receive(100, xdp="no"))) == "rx.receive: xdp must be a bool (True/False), got 'no'"
    err = _message(lambda: receive(100, hdr_len=12.0))
    assert str(err) == f"rx.receive: hdr_len must be an int in 10..12 ({HDR}), got 12.0"
    assert (err.function, err.param) == ("rx.receive", "hdr_len")


def test_argument_error_is_value_and_type_error():
    err = _message(lambda: receive(-1))
    assert isinstance(err, ValueError) and isinstance(err, TypeError)
    assert err.param == "payload_len" and "0..65535 (L4 payload bytes)" in str(err)


@pytest.mark.parametrize("bad", ["no", "yes", 0, 1, None, 1.0, np.int64(1)])
def test_bool_refuses_everything_but_true_false(bad):
    assert _message(lambda: receive(100, xdp=bad)).param == "xdp"


def test_bool_accepts_numpy_bool_as_a_python_bool():
    got = receive(100, xdp=np.True_)[1]
    assert got is True


@pytest.mark.parametrize("bad", [12.0, "12", True, False, np.float64(12), None, [12], 13, 9])
def test_int_refuses_float_str_bool_and_out_of_range(bad):
    assert _message(lambda: receive(100, hdr_len=bad)).param == "hdr_len"


@pytest.mark.parametrize("good", [np.int64(10), np.int32(11), np.uint8(12), 10])
def test_int_accepts_numpy_integers_and_passes_a_python_int(good):
    got = receive(100, hdr_len=good)[2]
    assert got == int(good) and type(got) is int


def test_range_bounds_are_inclusive():
    assert receive(0)[0] == 0 and receive(65535)[0] == 65535
    for bad in (-1, 65536):
        assert _message(lambda bad=bad: receive(bad)).param == "payload_len"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan"), True, "1.0", np.True_])
def test_float_refuses_nan_inf_bool_str(bad):
    assert _message(lambda: receive(100, weight=bad)).param == "weight"


def test_float_accepts_int_float_numpy_and_none():
    for good in (1, 1.5, np.float64(2.5), np.int64(3), None):
        assert receive(100, weight=good)[5] == good


def test_excluded_lower_bound():
    assert receive(100, rate=1e-3)[6] == 1e-3
    err = _message(lambda: receive(100, rate=0.0))
    assert "rate must be a number > 0 (link rate, bit/s)" in str(err)
    assert _message(lambda: receive(100, rate=math.inf)).param == "rate"


def test_str_or_kernel():
    k = kernel("6.1")
    assert receive(100, kernel=k)[3] is k and receive(100, kernel="5.10")[3] == "5.10"
    err = _message(lambda: receive(100, kernel=5.10))
    assert "kernel must be a str or a Kernel, got 5.1" in str(err)


def test_literal_lists_the_names():
    err = _message(lambda: receive(100, mode="merge"))
    assert "mode must be one of 'small', 'big', 'mergeable', got 'merge'" in str(err)
    assert _message(lambda: receive(100, mode=["small"])).param == "mode"  # unhashable: still our error


def test_literal_ints_are_ints():
    assert receive(100, ip=np.int64(6))[7] == 6
    for bad in (4.0, True, "4", 5):
        assert _message(lambda bad=bad: receive(100, ip=bad)).param == "ip"


def test_wrapper_keeps_signature_defaults_and_positional_rules():
    assert inspect.signature(receive).parameters["hdr_len"].default == 12
    # source: the defaults of _receive at the top of this file, echoed back (1e9 is its own rate default)
    assert receive(5) == (5, False, 12, "6.1", "mergeable", None, 1e9, 4)
    with pytest.raises(TypeError):
        receive(5, True)  # xdp is keyword-only, as in the undecorated function
    assert is_public(receive) and receive.__wrapped__ is not receive
    assert set(checked_params(receive)) == {"payload_len", "xdp", "hdr_len", "kernel", "mode", "weight", "rate",
                                            "ip"}


def test_varargs_kwargs_methods_and_forward_references():
    @public
    def many(*sizes: int, **flags: bool) -> tuple:
        return sizes, flags

    assert many(np.int64(1), 2, on=True) == ((1, 2), {"on": True})
    assert _message(lambda: many(1, 2.0)).param == "sizes"
    assert _message(lambda: many(on="off")).param == "on"

    class Dev:
        @public
        def set_mtu(self, mtu: Annotated[int, In(68, 65535, "ETH_MIN_MTU..IP_MAX_MTU")]) -> int:
            return mtu

        @classmethod
        @public
        def make(cls, name: Later) -> str:  # noqa: F821 - defined below, read at the first call
            return name.text

    assert Dev().set_mtu(1500) == 1500
    assert "set_mtu: mtu must be an int in 68..65535" in str(_message(lambda: Dev().set_mtu(28)))
    assert Dev.make(Later()) == "later"
    assert _message(lambda: Dev.make("x")).param == "name"


class Later:
    text = "later"


def test_unresolvable_and_any_annotations_are_not_checked():
    @public
    def f(a: ArrayLikeOnlyUnderTypeChecking, b: object, c=3) -> object:  # noqa: F821
        return a, b, c

    assert f("anything", None) == ("anything", None, 3) and checked_params(f) == ()


def test_check_int_float_bool_choice():
    assert check_int("mtu", np.int64(1500), 68, 65535, "device MTU") == 1500
    err = _message(lambda: check_int("mtu", 28, 68, 65535, "device MTU", function="netdev.set_mtu"))
    assert str(err) == "netdev.set_mtu: mtu must be an int in 68..65535 (device MTU), got 28"
    assert str(_message(lambda: check_int("segs", True, 1))) == "segs must be an int >= 1, got True"
    assert check_float("hz", 1, 0, None, "CPU clock", lo_excluded=True) == 1.0
    assert _message(lambda: check_float("hz", 0, 0, None, "CPU clock", lo_excluded=True)).param == "hz"
    assert _message(lambda: check_float("w", math.nan)).param == "w"
    assert check_bool("xdp", np.False_) is False
    assert "xdp must be a bool (True/False), got 'no'" in str(_message(lambda: check_bool("xdp", "no")))
    assert check_choice("ip", np.int64(6), (4, 6)) == 6
    assert "ip must be one of 4, 6, got 4.0" in str(_message(lambda: check_choice("ip", 4.0, (4, 6))))
    # True == 1 in Python; a flag given where a 0/1 code is asked is refused, not read as 1.
    assert _message(lambda: check_choice("dir", True, (0, 1))).param == "dir"
    assert check_choice("dir", 1, (0, 1)) == 1


def test_in_rejects_an_empty_range():
    with pytest.raises(ValueError):
        In(12, 10)



def test_public_over_lru_cache_reads_annotations_through_wrapped():
    # functools.lru_cache's wrapper has no __globals__: the string annotation (this module's `In`) must resolve
    # through __wrapped__, else it falls back to Any and nothing is checked (viz.thresholds.marked_buffers).
    import functools

    @public
    @functools.lru_cache(maxsize=8)
    def cached(n: Annotated[int, In(0, 10, "ten")]) -> int:
        return n * 2

    assert cached(3) == 6 and cached(3) == 6
    with pytest.raises(ArgumentError, match=r"n must be an int in 0\.\.10 \(ten\)"):
        cached(11)
    with pytest.raises(ArgumentError):
        cached(3.0)
    assert checked_params(cached) == ("n",)


def test_vlan_and_vxlan_constructors_refuse_ids_the_kernel_refuses():
    # net/8021q/vlan_netlink.c vlan_validate: vid < VLAN_VID_MASK (0xfff); vxlan_core.c vxlan_validate (6.1):
    # vni < VXLAN_N_VID (1 << 24). The constructors check it too, not only Namespace.vlan/vxlan.
    from vnetlab.netdev import Namespace, Vlan, Vxlan

    ns = Namespace("6.1")
    assert Vlan(ns, "v0", 4094).vid == 4094 and Vxlan(ns, "x0", (1 << 24) - 1, 4, None).vni == (1 << 24) - 1
    with pytest.raises(ArgumentError, match=r"vid .*0\.\.4094"):
        Vlan(ns, "v1", 4095)
    with pytest.raises(ArgumentError, match=r"vni .*0\.\.16777215"):
        Vxlan(ns, "x1", 1 << 24, 4, None)
