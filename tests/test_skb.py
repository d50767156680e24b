"""Skb's own fields are checked where they are set: each holds what its sk_buff field can hold
(include/linux/skbuff.h), or the constructor names it."""

from __future__ import annotations

import pytest

from vnetlab.skb import Frag, Page, Skb

_BASE = dict(headlen=100, truesize=768, head_frag=False, end_offset=512)


def _skb(**kw) -> Skb:
    return Skb(**{**_BASE, **kw})


@pytest.mark.parametrize("kw, field", [
    ({"head_frag": 1}, "head_frag"),            # sk_buff head_frag:1, a bool in the model
    ({"head_frag": None}, "head_frag"),
    ({"encapsulation": "yes"}, "encapsulation"),
    ({"gso_type": "UDP_L4"}, "gso_type"),       # a name, not a set of names: frozenset("UDP_L4") would be letters
    ({"gso_type": 4}, "gso_type"),
    ({"gso_type": {"UDP_L5"}}, "gso_type"),
    ({"ip_summed": "CHECKSUM_MAYBE"}, "ip_summed"),
    ({"ip_summed": 1}, "ip_summed"),
    ({"vlan_tag": 4096}, "vlan_tag"),           # VLAN_VID_MASK 0x0fff (include/linux/if_vlan.h)
    ({"vlan_tag": -1}, "vlan_tag"),
    ({"vlan_tag": "10"}, "vlan_tag"),
    ({"gso_size": 65536}, "gso_size"),          # skb_shared_info: unsigned short gso_size (include/linux/skbuff.h)
    ({"gso_segs": 70000}, "gso_segs"),
    ({"frags": [Frag(Page(1), 0, -5)]}, "frag 0"),
    ({"frags": [Frag(Page(1), 0, 10.5)]}, "frag 0"),
    ({"frags": [Frag(Page(1, size=4096), 4000, 200)]}, "frag 0 ends at 4200"),  # skb_frag_t inside its page
    ({"frags": ["not a frag"]}, "frags\\[0\\]"),
])
def test_each_field_holds_what_its_sk_buff_field_can(kw, field):
    with pytest.raises(ValueError, match=field):
        _skb(**kw)


def test_what_the_kernel_can_hold_is_accepted():
    skb = _skb(head_frag=True, gso_type={"UDP_L4"}, gso_size=1400, gso_segs=3, vlan_tag=4095,
               ip_summed="CHECKSUM_PARTIAL", frags=[Frag(Page(1, size=4096), 4096 - 200, 200)], l4="udp")
    assert skb.gso_type == frozenset({"UDP_L4"}) and skb.len == _BASE["headlen"] + 200  # headlen + the frag


@pytest.mark.parametrize("vid", [4096, -1, True, "5", 5.0])
def test_a_vlan_tag_is_refused_alike_by_skb_and_gso_skb(vid):
    # include/linux/if_vlan.h VLAN_VID_MASK 0xfff: the 12-bit id a tag holds (__vlan_hwaccel_put_tag); Skb and
    # gso_skb (segment's, the contract's xmit.gso_skb) raise the same ArgumentError, parameter and range
    import dataclasses

    from vnetlab import xmit
    from vnetlab.checks import VLAN_TAG
    from vnetlab.errors import ArgumentError

    base = xmit.gso_skb(l4="udp", segs=2, gso_size=1000)
    errors = []
    for entry in (lambda: dataclasses.replace(base, vlan_tag=vid),
                  lambda: dataclasses.replace(base, vlan_inband=(vid,)),
                  lambda: xmit.gso_skb(l4="udp", segs=2, gso_size=1000, vlan_tag=vid)):
        with pytest.raises(ArgumentError) as err:
            entry()
        errors.append(err.value)
    assert [e.param for e in errors] == ["vlan_tag", "vlan_inband[0]", "vlan_tag"]
    rule = f"must be an int in 0..4095 ({VLAN_TAG.meaning})"  # 0..VLAN_VID_MASK
    assert all(rule in str(e) for e in errors), [str(e) for e in errors]
    assert dataclasses.replace(base, vlan_tag=4095, vlan_inband=(0, 4095)).vlan_tag == 4095  # the whole mask
