"""Network devices and how the kernel computes their features (net/core/dev.c and each driver).

``Namespace(kernel=...)`` creates devices the way their rtnl_link_ops / probe functions do, registers
them (register_netdevice), links uppers to lowers, and recomputes features exactly along the kernel's
paths: __netdev_update_features = the device type's ndo_fix_features, then netdev_fix_features, then
netdev_sync_upper_features; a change fires NETDEV_FEAT_CHANGE, which each upper type handles as its
notifier does (vlan_transfer_features, macvlan_device_event, br_device_event, bond_slave_netdev_event).
Each device also has an MTU (dev_set_mtu and the uppers' NETDEV_CHANGEMTU handling), which the transmit
path (vnetlab.xmit) honours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from vnetlab import ethtool
from vnetlab import features as F
from vnetlab.checks import In, public
from vnetlab.errors import DeviceError, FixedFeatureError, TableError
from vnetlab.features import FeatureSet, add_tso_bits, increment_bits, intersect_bits
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, GSO_MAX_SEGS, GSO_MAX_SIZE, IP_HLEN, UDP_HLEN, VLAN_HLEN
from vnetlab.profiles import DEFAULT_KERNEL, Kernel
from vnetlab.skb import Skb

# include/uapi/linux/if_ether.h ETH_MIN_MTU / ETH_MAX_MTU: ether_setup's default MTU range.
ETH_MIN_MTU = 68
ETH_MAX_MTU = 65535
VXLAN_HLEN = 8  # struct vxlanhdr (include/net/vxlan.h)
IFNAMSIZ = 16  # include/uapi/linux/if.h: names are at most IFNAMSIZ - 1 characters
# include/linux/if_vlan.h vlan_features_check: the direct mask for multi-tagged skbs (5.x..6.18)
VLAN_MULTI_TAG_FEATURES = ("SG", "HIGHDMA", "HW_CSUM", "FRAGLIST", "HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")


@dataclass(frozen=True)
class Handoff:
    """What a device's ndo_start_xmit did with the skbs validate_xmit_skb left it (vnetlab.xmit.send's loop).

    ``to``: "lower" (dev_queue_xmit on ``lower``: the real device, slave, port or underlay), "peer" (veth_xmit:
    ``lower`` is the peer that receives them), "wire" (the driver sends them; hardware segments a GSO skb) or
    "drop" (nothing left). ``dropped``: (device, reason) per skb freed here; ``action`` names what was done for
    the hop; ``op``: the operation counter it adds its skbs to."""

    skbs: tuple[Skb, ...]
    to: str
    lower: Device | None = None
    action: str = ""
    op: str = ""
    dropped: tuple[tuple[str, str], ...] = ()


def _is_skb_forwardable(dev: Device, skb: Skb) -> bool:
    # include/linux/netdevice.h __is_skb_forwardable (6.1): len <= mtu + hard_header_len + VLAN_HLEN, or GSO
    return skb.is_gso() or skb.len <= dev.mtu + ETH_HLEN + VLAN_HLEN


class Device:
    """One struct net_device: the five feature words ethtool and the stack look at, plus its links."""

    kind = "generic"

    @public
    def __init__(self, ns: Namespace, name: str) -> None:
        self.ns = ns
        self.name = name
        # net/ethernet/eth.c ether_setup (5.10..6.18): mtu ETH_DATA_LEN, min_mtu ETH_MIN_MTU, max_mtu ETH_DATA_LEN;
        # each driver below widens max_mtu as its setup does.
        self.mtu = ETH_DATA_LEN
        self.min_mtu = ETH_MIN_MTU
        self.max_mtu = ETH_DATA_LEN
        self._features = 0
        self._hw_features = 0
        self._wanted_features = 0
        self._vlan_features = 0
        self._hw_enc_features = 0
        self._mpls_features = 0
        self.gso_partial_features = 0
        # include/linux/netdevice.h: dev->gso_max_size (GSO_LEGACY_MAX_SIZE) and dev->gso_max_segs defaults
        self.gso_max_size = GSO_MAX_SIZE
        self.gso_max_segs = GSO_MAX_SEGS
        self.loopback = False
        self.uppers: list[Device] = []
        self.lowers: list[Device] = []
        self.master: Device | None = None

    # -- FeatureSet views ----------------------------------------------------------------------
    def _fs(self, bits: int) -> FeatureSet:
        return FeatureSet._of(bits, self.ns._empty)

    features = property(lambda self: self._fs(self._features))
    hw_features = property(lambda self: self._fs(self._hw_features))
    wanted_features = property(lambda self: self._fs(self._wanted_features))
    vlan_features = property(lambda self: self._fs(self._vlan_features))
    hw_enc_features = property(lambda self: self._fs(self._hw_enc_features))
    mpls_features = property(lambda self: self._fs(self._mpls_features))

    @property
    def lower(self) -> Device | None:
        """The lower device of a stacked device (vlan, macvlan), else None."""
        return self.lowers[0] if self.lowers and self.kind in ("vlan", "macvlan") else None

    # -- driver hooks --------------------------------------------------------------------------
    def init(self) -> None:
        """ndo_init: runs inside register_netdevice before the generic feature setup."""

    @public
    def fix_features(self, features: int) -> int:
        """ndo_fix_features; the identity for drivers that have none."""
        return features

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        """This device's NETDEV_FEAT_CHANGE notifier for a lower device."""

    # -- ethtool -------------------------------------------------------------------------------
    def ethtool_k(self) -> ethtool.EthtoolK:
        """What ``ethtool -k`` shows, {kernel feature string: FeatureState}; each state unpacks as (on, fixed).

        net/ethtool/features.c features_prepare_data (6.x) reports hw_features, wanted_features, features and
        NETIF_F_NEVER_CHANGE; ethtool's dump_feature prints "[fixed]" outside hw_features or in NEVER_CHANGE,
        else "[requested on|off]" where wanted and features differ. ``print(dev.ethtool_k())`` prints it all."""
        t = self.ns._table
        named = ((t.ethtool[name], 1 << t.bits[name]) for name in sorted(t.ethtool, key=t.bits.get))
        states = ethtool.device_states(named, self._features, self._wanted_features,
                                       self._hw_features & ~t.masks["NEVER_CHANGE"])
        return ethtool.EthtoolK(device=self.name, states=states)

    @public
    def ethtool_K(self, settings: Mapping[str, bool]) -> Device:  # noqa: N802 (ethtool's own spelling)
        """ethtool -K: set wanted features and recompute this device and every device stacked on it.

        Keys are what ethtool -K accepts for this kernel (vnetlab.ethtool.expand): a kernel feature string
        ("rx-gro"), or a legacy short or long name ("gro", "generic-receive-offload", "sg", "tso", ...) that
        stands for every feature its pattern matches ("ufo" matches none in any modelled kernel: a no-op).
        net/ethtool/features.c ethnl_set_features (6.x): wanted = (wanted & ~req_mask) | (req & req_mask),
        applied only within hw_features. A kernel feature string naming a fixed feature that would change is
        refused with :class:`FixedFeatureError` (ethtool reports it as not changed); a legacy name changes its
        changeable members and is refused only when all the members it would change are fixed ("Could not
        change any device features").
        """
        t = self.ns._table
        changeable = self._hw_features & ~t.masks["NEVER_CHANGE"]
        strings = ethtool.feature_strings(self.ns.kernel)
        req_mask = req_on = 0
        for key, on in settings.items():
            if not isinstance(on, bool):
                raise ValueError(f"settings[{key!r}] must be True or False, got {on!r}")
            members = ethtool.expand(key, strings)
            fixed: list[str] = []
            applied = 0
            for eth in members:
                b = 1 << t.bits[t.from_ethtool[eth]]
                if not changeable & b:
                    if bool(self._features & b) != on:
                        fixed.append(eth)
                    continue
                req_mask |= b
                req_on = (req_on | b) if on else (req_on & ~b)
                applied += 1
            if fixed and (len(members) == 1 or not applied):
                kept = ", ".join(f"{e} stays {'off' if on else 'on'}" for e in fixed)
                raise FixedFeatureError(self.name, fixed, f"not in hw_features: {kept}")
        new_wanted = (self._wanted_features & ~req_mask) | (req_on & req_mask)
        if new_wanted != self._wanted_features:
            self._wanted_features = new_wanted
            # ethnl_set_features: __netdev_update_features then netdev_features_change (NETDEV_FEAT_CHANGE).
            self.ns._update(self)
            self.ns._features_change(self)
        return self

    # -- transmit ------------------------------------------------------------------------------
    passthru_features_check = False  # ndo_features_check = passthru_features_check (else dflt_features_check)

    @public
    def features_check(self, skb: Skb, features: FeatureSet, inband_vlan_tags: int = 0) -> FeatureSet:
        """ndo_features_check: passthru_features_check leaves the features; dflt_features_check ->
        include/linux/if_vlan.h vlan_features_check (6.1) keeps only a direct mask for a multi-tagged skb."""
        tags = len(skb.vlan_inband) + inband_vlan_tags + (1 if skb.vlan_tag is not None else 0)
        if self.passthru_features_check or tags < 2:
            return features
        return features & set(VLAN_MULTI_TAG_FEATURES)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """ndo_start_xmit: a device without a lower device is a driver putting the skbs on the wire."""
        gso = any(s.is_gso() for s in skbs)
        return Handoff(tuple(skbs), "wire", None, "segmented by hardware" if gso else "", "driver_xmit_skbs")

    @public
    def set_mtu(self, mtu: int) -> Device:
        """ip link set dev NAME mtu MTU: net/core/dev.c dev_validate_mtu (min_mtu..max_mtu), the driver's
        ndo_change_mtu limits, then NETDEV_CHANGEMTU to every upper device (which may lower its own)."""
        lo, hi = self.min_mtu, self.mtu_limit()
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not lo <= mtu <= hi:
            raise DeviceError(f"mtu={mtu!r} is outside {lo}..{hi} for {self.kind} {self.name} "
                              "(dev_validate_mtu / ndo_change_mtu: -EINVAL)")
        if mtu != self.mtu:
            self.mtu = mtu
            for upper in list(self.uppers):
                upper.on_lower_mtu_change(self)
        return self

    @public
    def set_gso_max(self, *, size: int | None = None, segs: int | None = None) -> Device:
        """ip link set dev NAME gso_max_size SIZE gso_max_segs SEGS (net/core/rtnetlink.c do_setlink, 6.1:
        at most GSO_MAX_SIZE and GSO_MAX_SEGS, else -EINVAL)."""
        for name, value, hi in (("size", size, GSO_MAX_SIZE), ("segs", segs, GSO_MAX_SEGS)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= hi):
                raise DeviceError(f"{name}={value!r} must be an int in 0..{hi} (gso_max_{name}: -EINVAL)")
        if size is not None:
            self.gso_max_size = size
        if segs is not None:
            self.gso_max_segs = segs
        return self

    def mtu_limit(self) -> int:
        """The largest MTU set_mtu accepts: dev->max_mtu, or less where ndo_change_mtu says so."""
        return self.max_mtu

    @public
    def on_lower_mtu_change(self, lower: Device) -> None:
        """This device's NETDEV_CHANGEMTU notifier for a lower device."""

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name} kernel={self.ns.kernel.label}>"


# --- device types ----------------------------------------------------------------------------------

class Veth(Device):
    """drivers/net/veth.c: veth_setup, veth_fix_features, veth_xdp_set; veth_xmit hands each skb to the peer."""

    kind = "veth"
    passthru_features_check = True  # veth_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        # drivers/net/veth.c veth_xmit (5.10..6.18): the peer receives each skb as it is, GSO or not
        return Handoff(tuple(skbs), "peer", self.peer, "handed to peer", "veth_xmit")

    @public
    def __init__(self, ns: Namespace, name: str) -> None:
        super().__init__(ns, name)
        self.peer: Veth | None = None
        self.xdp = False
        k = ns
        veth_features = k.m("SG", "FRAGLIST", "HW_CSUM", "RXCSUM", "SCTP_CRC", "HIGHDMA", "HW_VLAN_CTAG_TX",
                            "HW_VLAN_CTAG_RX", "HW_VLAN_STAG_TX", "HW_VLAN_STAG_RX") | k.mask("GSO_SOFTWARE") \
            | k.mask("GSO_ENCAP_ALL")
        # drivers/net/veth.c, veth_setup, 5.10..6.18: features |= LLTX (6.18: dev->lltx, no bit) | VETH_FEATURES.
        self._features |= k.m_opt("LLTX") | veth_features
        # drivers/net/veth.c, veth_setup: vlan_features = features & ~(CTAG_TX|STAG_TX|CTAG_RX|STAG_RX).
        self._vlan_features = self._features & ~k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX", "HW_VLAN_CTAG_RX",
                                                     "HW_VLAN_STAG_RX")
        self._hw_features = veth_features
        self._hw_enc_features = veth_features
        self._mpls_features = k.m("HW_CSUM") | k.mask("GSO_SOFTWARE")
        self.max_mtu = ETH_MAX_MTU  # drivers/net/veth.c veth_setup (5.10..6.18)

    @public
    def fix_features(self, features: int) -> int:
        # drivers/net/veth.c, veth_fix_features, 5.10..6.18: an XDP program on the peer removes GSO_SOFTWARE.
        if self.peer is not None and self.peer.xdp:
            features &= ~self.ns.mask("GSO_SOFTWARE")
        return features

    @public
    def set_xdp(self, attached: bool) -> Veth:
        """Attach (True) or remove (False) an XDP program on this veth (ip link set dev NAME xdp ...)."""
        if bool(attached) == self.xdp:
            return self
        self.xdp = bool(attached)
        peer = self.peer
        assert peer is not None
        k = self.ns
        gso_sw = k.mask("GSO_SOFTWARE")
        # drivers/net/veth.c, veth_xdp_set, 6.1: the peer loses (and later regains) GSO_SOFTWARE in hw_features.
        if attached:
            peer._hw_features &= ~gso_sw
        else:
            peer._hw_features |= gso_sw
        if k.rule("veth_xdp_toggles_gro"):
            # drivers/net/veth.c veth_xdp_set (kernel rule veth_xdp_toggles_gro: 5.13, d3256efd8e8b): XDP switches
            # GRO on when the user did not request it, and off again on removal, until d7db7775ea2e (v6.9, 6.1.y).
            gro = k.m("GRO")
            if attached and not self._wanted_features & gro:
                self._features |= gro
                self._wanted_features |= gro
                self._xdp_set_gro = True
            elif not attached and getattr(self, "_xdp_set_gro", False):
                self._features &= ~gro
                self._wanted_features &= ~gro
                self._xdp_set_gro = False
            k._features_change(self)
        k._update_and_notify(peer)
        return self


class _StackedDevice(Device):
    """An upper device whose MTU its lower device bounds: macvlan and vlan do the same here (6.1).

    ndo_change_mtu refuses more than the lower's mtu (drivers/net/macvlan.c macvlan_change_mtu: -EINVAL;
    net/8021q/vlan_dev.c vlan_dev_change_mtu: -ERANGE), and their NETDEV_CHANGEMTU notifiers
    (macvlan_device_event, vlan_device_event) bring an upper above the lower's new mtu down to it.
    """

    def mtu_limit(self) -> int:
        return min(self.max_mtu, self.lowers[0].mtu)

    def on_lower_mtu_change(self, lower: Device) -> None:
        if self.mtu > lower.mtu:
            self.set_mtu(lower.mtu)


class Macvlan(_StackedDevice):
    """drivers/net/macvlan.c: macvlan_init, macvlan_fix_features, macvlan_device_event."""

    kind = "macvlan"
    passthru_features_check = True  # macvlan_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        # drivers/net/macvlan.c macvlan_start_xmit -> macvlan_queue_xmit: dev_queue_xmit_accel on the lower
        return Handoff(tuple(skbs), "lower", self.lowers[0], "", "macvlan_start_xmit")

    def _macros(self) -> tuple[int, int, int]:
        k = self.ns
        always_on_offloads = k.m("SG", "HW_CSUM", "GSO_ROBUST") | k.mask("GSO_SOFTWARE") | k.mask("GSO_ENCAP_ALL")
        # drivers/net/macvlan.c, ALWAYS_ON_FEATURES, 6.1: ALWAYS_ON_OFFLOADS | LLTX (6.18: dev->lltx instead).
        always_on_features = always_on_offloads | k.m_opt("LLTX")
        # drivers/net/macvlan.c, MACVLAN_FEATURES, 5.10..6.18.
        macvlan_features = k.m("SG", "HW_CSUM", "HIGHDMA", "FRAGLIST", "GSO", "TSO", "LRO", "TSO_ECN", "TSO6",
                               "GRO", "RXCSUM", "HW_VLAN_CTAG_FILTER", "HW_VLAN_STAG_FILTER")
        return always_on_offloads, always_on_features, macvlan_features

    def init(self) -> None:
        lower = self.lowers[0]
        on_off, on_feat, mv = self._macros()
        # drivers/net/macvlan.c, macvlan_init, 6.1: features from the lower, plus the always-on ones.
        self._features = (lower._features & mv) | on_feat
        self._hw_features |= self.ns.m("LRO")
        self._vlan_features = (lower._vlan_features & mv) | on_off
        self._hw_enc_features |= self._features
        # drivers/net/macvlan.c macvlan_setup: max_mtu ETH_MAX_MTU; macvlan_common_newlink: mtu = lowerdev->mtu.
        self.max_mtu = ETH_MAX_MTU
        self.mtu = lower.mtu

    @public
    def fix_features(self, features: int) -> int:
        k = self.ns
        on_off, on_feat, mv = self._macros()
        lower = self.lowers[0]._features
        # drivers/net/macvlan.c, macvlan_fix_features, 6.1 (vlan->set_features = MACVLAN_FEATURES).
        features |= k.mask("ALL_FOR_ALL")
        set_features = mv  # macvlan_common_newlink: vlan->set_features = MACVLAN_FEATURES
        features &= set_features | ~mv
        mask_ = features
        lower &= features | ~k.m("LRO")
        features = increment_bits(lower, features, mask_, k._table)
        features |= on_feat
        features &= on_feat | mv
        return features

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # drivers/net/macvlan.c, macvlan_device_event NETDEV_FEAT_CHANGE: netdev_update_features(vlan->dev).
        self.ns._update_and_notify(self)



# net/8021q/vlan_netlink.c vlan_validate (5.10..6.18): id >= VLAN_VID_MASK (0xfff) is -ERANGE
_Vid = Annotated[int, In(0, 4094, "802.1Q VLAN id (VLAN_VID_MASK - 1)")]
# drivers/net/vxlan/vxlan_core.c vxlan_validate (6.1): id >= VXLAN_N_VID (1 << 24) is -ERANGE
_Vni = Annotated[int, In(0, (1 << 24) - 1, "VXLAN network identifier (24 bits, VXLAN_N_VID - 1)")]


class Vlan(_StackedDevice):
    """net/8021q: vlan_dev_init, vlan_dev_fix_features, vlan_transfer_features."""

    kind = "vlan"

    @public
    def __init__(self, ns: Namespace, name: str, vid: _Vid) -> None:
        super().__init__(ns, name)
        self.vid = vid

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        # net/8021q/vlan_dev.c vlan_dev_hard_start_xmit (6.1): REORDER_HDR -> __vlan_hwaccel_put_tag, then
        # dev_queue_xmit on the real device; a tag still hwaccel (QinQ below a device with CTAG_TX) goes in-band
        out = tuple((s if s.vlan_tag is None else s.vlan_push_inside()).copy(vlan_tag=self.vid) for s in skbs)
        return Handoff(out, "lower", self.lowers[0], "tag set (hwaccel)", "vlan_start_xmit")

    def _tnl_features(self) -> int:
        k = self.ns
        real = self.lowers[0]
        csum = k.mask("CSUM_MASK")
        encap = k.mask("GSO_ENCAP_ALL")
        # net/8021q/vlan.h, vlan_tnl_features, 6.1: only with an encap bit and a csum bit, in HW_CSUM form.
        ret = real._hw_enc_features & (csum | k.mask("GSO_SOFTWARE") | encap)
        if ret & encap and ret & csum:
            return (ret & ~csum) | k.m("HW_CSUM")
        return 0

    def init(self) -> None:
        k = self.ns
        real = self.lowers[0]
        if k.has("FCOE_MTU"):
            fcoe = k.mask("ALL_FCOE")
        else:
            fcoe = k.m("FCOE_CRC", "FSO")
        # net/8021q/vlan_dev.c, vlan_dev_init, 6.1 (6.12, 6.18: FCOE_CRC|FSO, FCOE_MTU is gone).
        self._hw_features = k.m("HW_CSUM", "SG", "FRAGLIST", "HIGHDMA", "SCTP_CRC") | k.mask("GSO_SOFTWARE") \
            | k.mask("GSO_ENCAP_ALL") | fcoe
        if k.rule("vlan_hw_macsec") and real._vlan_features & k.m("HW_MACSEC"):
            # vlan_dev_init (kernel rule vlan_hw_macsec, 6.12 and 6.18): MACsec offload when the real device has it.
            self._hw_features |= k.m("HW_MACSEC")
        self._features |= self._hw_features | k.m_opt("LLTX")
        self._vlan_features = real._vlan_features & ~fcoe
        self._hw_enc_features = self._tnl_features()
        self._mpls_features = real._mpls_features
        # net/8021q/vlan_dev.c vlan_setup: max_mtu ETH_MAX_MTU; vlan_newlink / register_vlan_device: mtu = real mtu.
        self.max_mtu = ETH_MAX_MTU
        self.mtu = real.mtu

    @public
    def fix_features(self, features: int) -> int:
        k = self.ns
        real = self.lowers[0]
        old = features
        # net/8021q/vlan_dev.c, vlan_dev_fix_features, 5.10..6.18: intersect with what the real device does
        # for tagged frames, but keep SOFT_FEATURES and GSO_SOFTWARE whatever the real device has.
        lower = intersect_bits(real._vlan_features | k.m("RXCSUM"), real._features, k._table)
        if lower & k.m("IP_CSUM", "IPV6_CSUM"):
            lower |= k.m("HW_CSUM")
        features = intersect_bits(features, lower, k._table)
        features |= old & (k.mask("SOFT_FEATURES") | k.mask("GSO_SOFTWARE"))
        features |= k.m_opt("LLTX")
        return features

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # net/8021q/vlan.c, vlan_device_event NETDEV_FEAT_CHANGE -> vlan_transfer_features, 6.1.
        self._hw_enc_features = self._tnl_features()
        self.ns._update_and_notify(self)


class Bridge(Device):
    """net/bridge: br_dev_setup, br_fix_features -> br_features_recompute, br_device_event."""

    kind = "bridge"
    passthru_features_check = True  # br_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """net/bridge/br_device.c br_dev_xmit -> br_forward.c br_forward to the port the FDB names (``port``,
        default the first), br_dev_queue_push_xmit: is_skb_forwardable on it; br_flood to no port frees them."""
        if not self.lowers:
            why = "no port to forward or flood to (br_dev_xmit -> br_flood: kfree_skb)"
            return Handoff((), "drop", None, "dropped", "bridge_start_xmit", tuple((self.name, why) for _ in skbs))
        out = _port_of(self, port)
        kept = tuple(s for s in skbs if _is_skb_forwardable(out, s))
        why = "longer than the port's MTU (is_skb_forwardable)"
        return Handoff(kept, "lower", out, "", "bridge_start_xmit",
                       tuple((out.name, why) for _ in range(len(skbs) - len(kept))))

    @public
    def __init__(self, ns: Namespace, name: str) -> None:
        super().__init__(ns, name)
        k = ns
        common = k.m("SG", "FRAGLIST", "HIGHDMA", "HW_CSUM") | k.mask("GSO_MASK")
        # net/bridge/br_device.c, br_dev_setup, 6.1 (6.18: LLTX and NETNS_LOCAL became dev->lltx/netns_local).
        self._features = common | k.m_opt("LLTX") | k.m_opt("NETNS_LOCAL") | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
        self._hw_features = common | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
        self._vlan_features = common
        self.max_mtu = ETH_MAX_MTU  # net/bridge/br_device.c br_dev_setup
        self.mtu_set_by_user = False

    @public
    def fix_features(self, features: int) -> int:
        k = self.ns
        ports = self.lowers
        # net/bridge/br_if.c, br_features_recompute, 5.10..6.18: no ports -> features unchanged.
        if not ports:
            return features
        mask_ = features
        # net/bridge/br_if.c, br_features_recompute: clear ONE_FOR_ALL, re-add what some port has, add TSO.
        features &= ~k.mask("ONE_FOR_ALL")
        for p in ports:
            features = increment_bits(features, p._features, mask_, k._table)
        return add_tso_bits(features, mask_, k._table)

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # net/bridge/br.c, br_device_event NETDEV_FEAT_CHANGE: netdev_update_features(br->dev).
        self.ns._update_and_notify(self)

    @public
    def set_mtu(self, mtu: int) -> Device:
        # net/bridge/br_device.c br_change_mtu (6.1): the user's value sticks (BROPT_MTU_SET_BY_USER).
        super().set_mtu(mtu)
        self.mtu_set_by_user = True
        return self

    def auto_mtu(self) -> None:
        """net/bridge/br_if.c br_mtu_auto_adjust (6.1): the smallest port MTU, unless the user set one."""
        if self.lowers and not self.mtu_set_by_user:
            self.mtu = min(p.mtu for p in self.lowers)

    @public
    def on_lower_mtu_change(self, lower: Device) -> None:
        # net/bridge/br.c br_device_event NETDEV_CHANGEMTU -> br_mtu_auto_adjust (6.1).
        self.auto_mtu()


class Bond(Device):
    """drivers/net/bonding/bond_main.c: bond_setup, bond_fix_features, bond_compute_features (mode balance-rr).

    Three kernel rules shape it: ``bond_gso_software`` (ecb8fed408b6, v5.11: BOND_*_FEATURES name
    NETIF_F_GSO_SOFTWARE instead of ALL_TSO + GSO_UDP_L4), ``bond_gso_partial`` ("bonding: Correctly support
    GSO ESP offload": GSO_PARTIAL on the bond, GSO_ESP as a partial feature) and ``bond_compute`` (how the
    vlan/enc/mpls features start before each slave is folded in; see :meth:`compute_features`).
    """

    kind = "bond"
    passthru_features_check = True  # bond_netdev_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """drivers/net/bonding/bond_main.c bond_start_xmit: with no slave bond_tx_drop; else the slave
        bond_xmit_roundrobin picks (``port``, default the first) gets dev_queue_xmit (bond_dev_queue_xmit)."""
        if not self.lowers:
            why = "no slave (bond_start_xmit -> bond_tx_drop)"
            return Handoff((), "drop", None, "dropped", "bond_start_xmit", tuple((self.name, why) for _ in skbs))
        return Handoff(tuple(skbs), "lower", _port_of(self, port), "", "bond_start_xmit")

    def _macros(self) -> tuple[int, int, int]:
        """BOND_VLAN_FEATURES, BOND_ENC_FEATURES, BOND_MPLS_FEATURES (6.12: MASTER_UPPER_DEV_*_FEATURES)."""
        k = self.ns
        if k.rule("bond_gso_software"):
            # bond_main.c (6.1) / netdev_features.h (6.12): GSO_SOFTWARE; GSO_ENCAP_ALL in the VLAN set from
            # 77b11c8bf3a2 (v6.13, 6.1.121): no effect where vlan_features start from X & ALL_FOR_ALL.
            soft = k.mask("GSO_SOFTWARE")
            vlan = k.m("HW_CSUM", "SG", "FRAGLIST", "HIGHDMA", "LRO") | soft | k.mask("GSO_ENCAP_ALL")
        else:
            # drivers/net/bonding/bond_main.c, BOND_*_FEATURES before ecb8fed408b6 (5.10.223:1352-1360): ALL_TSO.
            soft = k.mask("ALL_TSO")
            vlan = k.m("HW_CSUM", "SG", "FRAGLIST", "HIGHDMA", "LRO") | soft
        enc = k.m("HW_CSUM", "SG", "RXCSUM") | soft
        if k.rule("bond_gso_partial"):
            enc |= k.m("GSO_PARTIAL")  # 6.12.95 include/linux/netdev_features.h:262-264 (ENC with GSO_PARTIAL)
        mpls = k.m("HW_CSUM", "SG") | soft
        return vlan, enc, mpls

    @public
    def __init__(self, ns: Namespace, name: str) -> None:
        super().__init__(ns, name)
        k = ns
        vlan, _, _ = self._macros()
        # drivers/net/bonding/bond_main.c, bond_setup, 6.1: LLTX, NETNS_LOCAL (6.12, 6.18: device flags, no bits).
        self._features |= k.m_opt("LLTX") | k.m_opt("NETNS_LOCAL")
        self._hw_features = vlan | k.m("HW_VLAN_CTAG_RX", "HW_VLAN_CTAG_FILTER", "HW_VLAN_STAG_RX",
                                       "HW_VLAN_STAG_FILTER")
        # drivers/net/bonding/bond_main.c, bond_setup: hw_features |= GSO_ENCAP_ALL (v5.10: | GSO_UDP_L4).
        self._hw_features |= k.mask("GSO_ENCAP_ALL") | (0 if k.rule("bond_gso_software") else k.m("GSO_UDP_L4"))
        self._features |= self._hw_features | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX")
        if k.rule("bond_gso_partial"):
            # bond_setup (6.12.95 bond_main.c:6110): features |= GSO_PARTIAL, outside hw_features: "on [fixed]".
            self._features |= k.m("GSO_PARTIAL")
        # drivers/net/bonding/bond_main.c, bond_setup, CONFIG_XFRM_OFFLOAD: XFRM bits changeable, on only in
        # active-backup (not the default balance-rr).
        self._hw_features |= self._xfrm_features()
        self.max_mtu = ETH_MAX_MTU  # drivers/net/bonding/bond_main.c bond_setup

    def _xfrm_features(self) -> int:
        """include/net/bonding.h BOND_XFRM_FEATURES (6.12: MASTER_UPPER_DEV_XFRM_FEATURES), CONFIG_XFRM_OFFLOAD=y."""
        return self.ns.m("HW_ESP", "HW_ESP_TX_CSUM", "GSO_ESP")

    @public
    def fix_features(self, features: int) -> int:
        k = self.ns
        # drivers/net/bonding/bond_main.c, bond_fix_features (5.10..6.18): netdev_base_features (clear ONE_FOR_ALL,
        # set ALL_FOR_ALL), fold each slave's features, add TSO. 6.1's BOND_TLS_FEATURES step is not modelled:
        # TLS bits are in no bond's hw_features, so balance-rr never has them to clear.
        mask_ = features
        features &= ~k.mask("ONE_FOR_ALL")
        features |= k.mask("ALL_FOR_ALL")
        for s in self.lowers:
            features = increment_bits(features, s._features, mask_, k._table)
        return add_tso_bits(features, mask_, k._table)

    def compute_features(self) -> None:
        """bond_compute_features (6.12.95: netdev_compute_master_upper_features), then netdev_change_features.

        Kernel rule ``bond_compute``, how vlan/mpls (and enc) features start before each slave is folded in:
        "all_for_all" (5.10 .. 6.1.192 bond_main.c:1496-1497): with slaves, X & NETIF_F_ALL_FOR_ALL, so only
        one-for-all and checksum bits of the slaves come back; "base_features" (≈6.18): with slaves,
        netdev_base_features(X), which keeps the bond's own bits such as GSO_ENCAP_ALL and LRO; "master_upper"
        (6.12.95 net/core/dev.c:11897-11899): netdev_base_features() for vlan, mpls and enc alike, with or
        without slaves. enc otherwise starts from the whole BOND_ENC_FEATURES.
        """
        k = self.ns
        vlan_m, enc_m, mpls_m = self._macros()
        scheme = k.choice("bond_compute", ("all_for_all", "base_features", "master_upper"))
        one_for_all, all_for_all = k.mask("ONE_FOR_ALL"), k.mask("ALL_FOR_ALL")

        def base(f: int) -> int:
            # include/linux/netdev_features.h netdev_base_features (6.12.95 :274-279)
            return (f & ~one_for_all) | all_for_all

        vlan, enc, mpls = vlan_m, enc_m, mpls_m
        if scheme == "master_upper":
            vlan, enc, mpls = base(vlan), base(enc), base(mpls)
        elif self.lowers and scheme == "base_features":
            vlan, mpls = base(vlan), base(mpls)
        elif self.lowers:
            vlan, mpls = vlan & all_for_all, mpls & all_for_all
        gso_partial = k.m("GSO_ESP") if k.rule("bond_gso_partial") else 0
        xfrm = self._xfrm_features()
        for s in self.lowers:
            vlan = increment_bits(vlan, s._vlan_features, vlan_m, k._table)
            enc = increment_bits(enc, s._hw_enc_features, enc_m, k._table)
            xfrm = increment_bits(xfrm, s._hw_enc_features, self._xfrm_features(), k._table)
            if gso_partial:
                gso_partial = increment_bits(gso_partial, s.gso_partial_features, k.m("GSO_ESP"), k._table)
            mpls = increment_bits(mpls, s._mpls_features, mpls_m, k._table)
        self._vlan_features = vlan
        # bond_compute_features: hw_enc_features = enc | ENCAP_ALL | VLAN tx tags (v5.10: | GSO_UDP_L4), and
        # with CONFIG_XFRM_OFFLOAD | xfrm_features (5.10.223 bond_main.c:1419, 6.1.192 :1532, 6.12.95 dev.c:11941).
        self._hw_enc_features = enc | k.mask("GSO_ENCAP_ALL") | k.m("HW_VLAN_CTAG_TX", "HW_VLAN_STAG_TX") \
            | (0 if k.rule("bond_gso_software") else k.m("GSO_UDP_L4")) | xfrm
        self._mpls_features = mpls
        if k.rule("bond_gso_partial"):
            # 6.12.95 net/core/dev.c:11935 (≈6.18 bond_compute_features): dev->gso_partial_features
            self.gso_partial_features = gso_partial
        # netdev_change_features: update and always notify.
        k._update(self)
        k._features_change(self)

    @public
    def on_lower_feat_change(self, lower: Device) -> None:
        # drivers/net/bonding/bond_main.c, bond_slave_netdev_event NETDEV_FEAT_CHANGE -> bond_compute_features.
        self.compute_features()

    @public
    def set_mtu(self, mtu: int) -> Device:
        # drivers/net/bonding/bond_main.c bond_change_mtu (6.1): every slave is set to the new mtu first.
        for slave in self.lowers:
            slave.set_mtu(mtu)
        return super().set_mtu(mtu)


class Vxlan(Device):
    """drivers/net/vxlan/vxlan_core.c (6.1; drivers/net/vxlan.c before 5.18): vxlan_setup, vxlan_dev_configure.

    A vxlan device advertises GSO_SOFTWARE, so from 5.11 a UDP_L4 or fraglist GSO skb passes it whole; its
    xmit (vxlan_xmit_one -> vxlan_build_skb -> iptunnel_handle_offloads) marks the skb encapsulated with
    SKB_GSO_UDP_TUNNEL[_CSUM] and sends it out of the underlay route device, whose validate_xmit_skb looks
    at hw_enc_features (see vnetlab.xmit).
    """

    kind = "vxlan"
    passthru_features_check = True  # vxlan_netdev_ether_ops .ndo_features_check (6.1)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """vxlan_xmit_one -> vxlan_build_skb -> iptunnel_handle_offloads (6.1): outer headers pushed,
        skb->encapsulation set, gso_type |= SKB_GSO_UDP_TUNNEL (UDP_TUNNEL_CSUM when the outer UDP checksum is
        on: the IPv6 default, udp6zerocsumtx off; IPv4 vxlan defaults to no outer checksum); then out of the
        underlay (without one the route's device is not modelled: the frames leave as they are)."""
        tunnel = "UDP_TUNNEL_CSUM" if self.ip == 6 else "UDP_TUNNEL"
        out = tuple(s.encapsulate(self.headroom(), tunnel) for s in skbs)
        to = "lower" if self.underlay is not None else "wire"
        return Handoff(out, to, self.underlay, "encapsulated (vxlan_xmit_one)", "vxlan_xmit")

    @public
    def __init__(self, ns: Namespace, name: str, vni: _Vni, ip: int, underlay: Device | None) -> None:
        super().__init__(ns, name)
        self.vni = vni
        self.ip = ip
        # the device its encapsulated packets leave through (ip link add ... type vxlan dev UNDERLAY); vxlan
        # makes no upper/lower link to it, so its feature changes do not reach the vxlan device.
        self.underlay = underlay
        k = ns
        # vxlan_setup (6.1): LLTX (6.18: dev->lltx), SG | HW_CSUM | FRAGLIST, RXCSUM, GSO_SOFTWARE; FRAGLIST
        # from cb2c57112432 ("vxlan: add NETIF_F_FRAGLIST flag for dev features", v5.12; kernel rule vxlan_fraglist).
        fraglist = k.m("FRAGLIST") if k.rule("vxlan_fraglist") else 0
        self._features = k.m_opt("LLTX") | k.m("SG", "HW_CSUM", "RXCSUM") | fraglist | k.mask("GSO_SOFTWARE")
        self._vlan_features = self._features
        self._hw_features = k.m("SG", "HW_CSUM", "RXCSUM") | fraglist | k.mask("GSO_SOFTWARE")
        self.max_mtu = ETH_MAX_MTU

    def headroom(self) -> int:
        """include/net/vxlan.h vxlan_headroom: outer IP + UDP + VXLAN header + the inner Ethernet header."""
        return IP_HLEN[self.ip] + UDP_HLEN + VXLAN_HLEN + ETH_HLEN

    def init(self) -> None:
        if self.underlay is not None:
            # vxlan_dev_configure (6.1): with a lower device, mtu = max_mtu = lowerdev->mtu - vxlan_headroom.
            self.mtu = max(ETH_MIN_MTU, self.underlay.mtu - self.headroom())

    def mtu_limit(self) -> int:
        # vxlan_change_mtu (6.1): with a lower device, at most lowerdev->mtu - vxlan_headroom.
        if self.underlay is not None:
            return min(self.max_mtu, self.underlay.mtu - self.headroom())
        return self.max_mtu


class Nic(Device):
    """A physical or paravirtual NIC whose probe function set its features (see DRIVERS)."""

    kind = "nic"

    @public
    def __init__(self, ns: Namespace, name: str, driver: str, params: Mapping[str, object]) -> None:
        super().__init__(ns, name)
        self.driver = driver
        self.params = dict(params)
        # drivers/net/virtio_net.c virtnet_netdev .ndo_features_check = passthru_features_check (6.1)
        self.passthru_features_check = driver == "virtio_net"


def _port_of(master: Device, port: Device | None) -> Device:
    if port is None:
        return master.lowers[0]
    if port not in master.lowers:
        raise DeviceError(f"port={getattr(port, 'name', port)!r} is not a port of {master.kind} {master.name} "
                          f"(ports: {', '.join(p.name for p in master.lowers)})")
    return port


@public  # the driver parameters a user passes to Namespace.nic
def _probe_virtio_net(dev: Nic, csum: bool = True, gso: bool = True, host_tso4: bool = True,
                      host_tso6: bool = True, host_ecn: bool = True, host_uso: bool = False,
                      guest_tso: bool = True, ctrl_guest_offloads: bool = True, rss: bool = False,
                      ctrl_vlan: bool = True) -> None:
    """drivers/net/virtio_net.c virtnet_probe: the offloads follow the negotiated VIRTIO_NET_F_* bits.

    The defaults are what QEMU's virtio-net-pci offers (CTRL_VQ and CTRL_VLAN included)."""
    k = dev.ns
    # virtnet_probe: max_mtu = MAX_MTU (65535) unless VIRTIO_NET_F_MTU, which QEMU does not offer by default.
    dev.max_mtu = ETH_MAX_MTU
    if host_uso and not k.rule("virtio_host_uso"):
        # kernel rule virtio_host_uso: VIRTIO_NET_F_HOST_USO arrived with 418044e1de30 (v6.2)
        raise ValueError(f"host_uso=True: virtio_net of kernel {k.kernel} has no USO (VIRTIO_NET_F_HOST_USO, "
                         "418044e1de30, v6.2)")
    # drivers/net/virtio_net.c, virtnet_probe, 6.1 and ≈6.18: HIGHDMA always.
    dev._features = k.m("HIGHDMA")
    if csum:
        # virtnet_probe: VIRTIO_NET_F_CSUM -> hw HW_CSUM|SG, and features too with the csum module param.
        dev._hw_features |= k.m("HW_CSUM", "SG")
        dev._features |= k.m("HW_CSUM", "SG")
        if host_tso4:
            dev._hw_features |= k.m("TSO")
        if host_tso6:
            dev._hw_features |= k.m("TSO6")
        if host_ecn:
            dev._hw_features |= k.m("TSO_ECN")
        if host_uso:
            # drivers/net/virtio_net.c, virtnet_probe, 6.2+ (6.12.95, ≈6.18 read): HOST_USO -> hw GSO_UDP_L4.
            dev._hw_features |= k.m("GSO_UDP_L4")
        dev._features |= k.m("GSO_ROBUST")
        if gso:
            # virtnet_probe (kernel rule virtio_gso_features): features |= hw_features & ALL_TSO up to 6.12.95, so
            # USO starts off; ≈6.18 (virtio_net UDP tunnel GSO, 2025): features |= hw_features.
            tso_only = k.choice("virtio_gso_features", ("all_tso", "hw_features")) == "all_tso"
            dev._features |= dev._hw_features & k.mask("ALL_TSO") if tso_only else dev._hw_features
    dev._features |= k.m("RXCSUM")
    if guest_tso:
        # virtnet_probe: GUEST_TSO4/6 -> GRO_HW in features.
        dev._features |= k.m("GRO_HW")
    if ctrl_guest_offloads and (guest_tso or not k.rule("virtio_gro_hw_needs_guest_gso")):
        # virtnet_probe: CTRL_GUEST_OFFLOADS makes GRO_HW changeable; 7.x (rule virtio_gro_hw_needs_guest_gso)
        # only with a guest offload of GUEST_OFFLOAD_GRO_HW_MASK negotiated (guest_tso here), else "off [fixed]".
        dev._hw_features |= k.m("GRO_HW")
    # virtnet_probe: vlan_features = features, copied once here (never FRAGLIST / GSO_FRAGLIST).
    dev._vlan_features = dev._features
    if ctrl_vlan:
        # virtnet_find_vqs (6.1), from virtnet_probe after vlan_features: has_cvq && CTRL_VLAN ->
        # features |= HW_VLAN_CTAG_FILTER, not in hw_features, so "on [fixed]" (checked in the QEMU lab).
        dev._features |= k.m("HW_VLAN_CTAG_FILTER")
    if rss:
        dev._hw_features |= k.m("RXHASH")


@public  # the driver parameters a user passes to Namespace.nic
def _probe_ixgbe(dev: Nic, mac_82599: bool = True, rsc: bool = True) -> None:
    """drivers/net/ethernet/intel/ixgbe/ixgbe_main.c ixgbe_probe (82599 and later, no IPsec/FCoE)."""
    k = dev.ns
    # ixgbe_probe: max_mtu = IXGBE_MAX_JUMBO_FRAME_SIZE (9728) - (ETH_HLEN + ETH_FCS_LEN).
    dev.max_mtu = 9728 - (ETH_HLEN + 4)
    partial = k.mask("GSO_ENCAP_ALL")
    # ixgbe_probe: SG|TSO|TSO6|RXHASH|RXCSUM|HW_CSUM, GSO_PARTIAL with the tunnel types as partial features.
    dev._features = k.m("SG", "TSO", "TSO6", "RXHASH", "RXCSUM", "HW_CSUM", "GSO_PARTIAL") | partial
    dev.gso_partial_features = partial
    if mac_82599:
        # ixgbe_probe: 82599+ -> SCTP_CRC | GSO_UDP_L4 (USO support, ~v5.6, "ixgbe: add UDP segmentation offload").
        dev._features |= k.m("SCTP_CRC", "GSO_UDP_L4")
    dev._hw_features |= dev._features | k.m("HW_VLAN_CTAG_FILTER", "HW_VLAN_CTAG_RX", "HW_VLAN_CTAG_TX",
                                            "RXALL", "HW_L2FW_DOFFLOAD")
    if mac_82599:
        dev._hw_features |= k.m("NTUPLE", "HW_TC")
    dev._features |= k.m("HIGHDMA")
    # ixgbe_probe: vlan_features = features | TSO_MANGLEID; hw_enc_features = vlan_features.
    dev._vlan_features |= dev._features | k.m("TSO_MANGLEID")
    dev._hw_enc_features |= dev._vlan_features
    dev._mpls_features |= k.m("SG", "TSO", "TSO6", "HW_CSUM") | partial
    # ixgbe_probe: VLAN offloads last, they cannot be part of vlan_features.
    dev._features |= k.m("HW_VLAN_CTAG_FILTER", "HW_VLAN_CTAG_RX", "HW_VLAN_CTAG_TX")
    if rsc:
        dev._hw_features |= k.m("LRO")
        dev._features |= k.m("LRO")


@public  # the driver parameters a user passes to Namespace.nic
def _probe_router(dev: Nic, gso_udp_l4: bool = True, gso_fraglist: bool = True, fraglist: bool = True,
                  vlan_offload: bool = False) -> None:
    """A router SoC NIC like the patch author's WIP MIPS32 driver (2e4ef10f5850 commit text): SG, HW_CSUM,
    TSO, and optionally UDP L4 / fraglist GSO and NETIF_F_FRAGLIST. Not a mainline driver: a parameterised
    profile to show what "a driver that supports and advertises this" means."""
    k = dev.ns
    dev.max_mtu = ETH_MAX_MTU  # a hypothetical profile: no hardware limit is modelled
    f = k.m("SG", "HW_CSUM", "HIGHDMA", "RXCSUM", "TSO", "TSO6")
    if gso_udp_l4:
        f |= k.m("GSO_UDP_L4")
    if gso_fraglist:
        f |= k.m("GSO_FRAGLIST")
    if fraglist:
        f |= k.m("FRAGLIST")
    dev._features = f
    dev._hw_features = f
    dev._vlan_features = f
    if vlan_offload:
        dev._features |= k.m("HW_VLAN_CTAG_TX", "HW_VLAN_CTAG_RX")
        dev._hw_features |= k.m("HW_VLAN_CTAG_TX", "HW_VLAN_CTAG_RX")


DRIVERS = {"virtio_net": _probe_virtio_net, "ixgbe": _probe_ixgbe, "router": _probe_router}


# --- the namespace ---------------------------------------------------------------------------------

class Namespace:
    """A network namespace of one kernel holding the devices created in it.

    ``kernel`` is a version string or a resolved :class:`~vnetlab.profiles.Kernel` (a lab kernel of
    vnetlab.labkernels keeps its patch's rules); it is resolved once, here, and every device asks it."""

    @public
    def __init__(self, kernel: str | Kernel = DEFAULT_KERNEL) -> None:
        self.kernel: Kernel = F.resolve(kernel)
        self._table = F.table(self.kernel)
        self._empty = FeatureSet(0, self.kernel)
        self.devices: dict[str, Device] = {}

    @property
    def profile(self) -> Kernel:
        """The kernel (an alias of :attr:`kernel`, kept for callers of the earlier name)."""
        return self.kernel

    # -- helpers on this kernel's table ----------------------------------------------------------
    @public
    def m(self, *names: str) -> int:
        out = 0
        for n in names:
            out |= 1 << self._table.bits[n]
        return out

    @public
    def m_opt(self, name: str) -> int:
        """The bit of ``name`` if this kernel has it (LLTX, NETNS_LOCAL before 6.18), else 0."""
        return 1 << self._table.bits[name] if name in self._table.bits else 0

    @public
    def has(self, name: str) -> bool:
        return name in self._table.bits

    @public
    def mask(self, name: str) -> int:
        return self._table.masks[name]

    @public
    def rule(self, name: str) -> Any:
        """This kernel's rule ``name`` (data/kernels.toml): how its driver or core code differs from others."""
        return self.kernel.rule(name)

    @public
    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        """The rule ``name``, checked to be one of ``allowed`` (a malformed table is a TableError)."""
        value = self.rule(name)
        if value not in allowed:
            raise TableError(f"data/kernels.toml: [{self.kernel.version}].{name} must be one of {allowed}, "
                             f"got {value!r}")
        return str(value)

    def __getitem__(self, name: str) -> Device:
        return self.devices[name]

    # -- core ------------------------------------------------------------------------------------
    def _new_name(self, name: str) -> None:
        # net/core/dev.c dev_valid_name (5.10..6.18): not empty, shorter than IFNAMSIZ bytes, not "." or "..",
        # no '/', ':' or whitespace (isspace, which in lib/ctype.c includes 0xa0)
        if not isinstance(name, str):
            raise DeviceError(f"name={name!r} must be a str (an interface name)")
        bad = [c for c in name if c in "/:" or c.isspace() or c == "\xa0"]
        size = len(name.encode())
        if not name or size >= IFNAMSIZ or name in (".", "..") or bad:
            why = ("empty" if not name else f"{size} bytes, at most IFNAMSIZ - 1 = {IFNAMSIZ - 1}" if size >= IFNAMSIZ
                   else f"{name!r} is reserved" if name in (".", "..") else f"contains {bad[0]!r}")
            raise DeviceError(f"name={name!r} is not a valid interface name ({why}; dev_valid_name: -EINVAL)")
        if name in self.devices:
            raise DeviceError(f"name={name!r} already exists in this namespace (-EEXIST)")

    def _register(self, dev: Device) -> Device:
        """net/core/dev.c register_netdevice: ndo_init, the generic feature setup, __netdev_update_features."""
        dev.init()
        # register_netdevice, 5.10..6.18: SOFT_FEATURES changeable and on, SOFT_FEATURES_OFF changeable.
        dev._hw_features |= self.mask("SOFT_FEATURES") | self.mask("SOFT_FEATURES_OFF")
        dev._features |= self.mask("SOFT_FEATURES")
        dev._wanted_features = dev._features & dev._hw_features
        if not dev.loopback:
            dev._hw_features |= self.m("NOCACHE_COPY")
        tso, mangle = self.m("TSO"), self.m("TSO_MANGLEID")
        # register_netdevice: TSO_MANGLEID becomes available wherever TSO is.
        for attr in ("_hw_features", "_vlan_features", "_mpls_features", "_hw_enc_features"):
            if getattr(dev, attr) & tso:
                setattr(dev, attr, getattr(dev, attr) | mangle)
        dev._vlan_features |= self.m("HIGHDMA")
        dev._hw_enc_features |= self.m("SG", "GSO_PARTIAL")
        dev._mpls_features |= self.m("SG")
        self.devices[dev.name] = dev
        self._update(dev)
        return dev

    def _fix(self, dev: Device, features: int) -> int:
        """net/core/dev.c netdev_fix_features of this kernel: every generic rule, in order."""
        m = self.m
        hw, ipc, ip6c, sg = m("HW_CSUM"), m("IP_CSUM"), m("IPV6_CSUM"), m("SG")
        all_tso = self.mask("ALL_TSO")
        # netdev_fix_features (5.10..6.18): HW_CSUM with IP/IPV6_CSUM -> drop IP_CSUM and IPV6_CSUM.
        if features & hw and features & (ipc | ip6c):
            features &= ~(ipc | ip6c)
        # netdev_fix_features: any ALL_TSO bit without SG -> drop ALL_TSO.
        if features & all_tso and not features & sg:
            features &= ~all_tso
        # netdev_fix_features: TSO without HW_CSUM and IP_CSUM -> drop TSO and TSO_ECN.
        if features & m("TSO") and not features & (hw | ipc):
            features &= ~m("TSO", "TSO_ECN")
        # netdev_fix_features: TSO6 without HW_CSUM and IPV6_CSUM -> drop TSO6.
        if features & m("TSO6") and not features & (hw | ip6c):
            features &= ~m("TSO6")
        # netdev_fix_features: TSO_MANGLEID without TSO -> drop it.
        if features & m("TSO_MANGLEID") and not features & m("TSO"):
            features &= ~m("TSO_MANGLEID")
        # netdev_fix_features: TSO_ECN as the only ALL_TSO bit -> drop it.
        if features & all_tso == m("TSO_ECN"):
            features &= ~m("TSO_ECN")
        # netdev_fix_features: software GSO depends on SG.
        if features & m("GSO") and not features & sg:
            features &= ~m("GSO")
        # netdev_fix_features: gso_partial_features need GSO_PARTIAL.
        if features & dev.gso_partial_features and not features & m("GSO_PARTIAL"):
            features &= ~dev.gso_partial_features
        # netdev_fix_features: GRO_HW needs RXCSUM.
        if not features & m("RXCSUM") and features & m("GRO_HW"):
            features &= ~m("GRO_HW")
        # netdev_fix_features: RXFCS excludes LRO and GRO_HW.
        if features & m("RXFCS"):
            features &= ~m("LRO", "GRO_HW")
        # netdev_fix_features: GRO_HW wins over LRO.
        if features & m("GRO_HW") and features & m("LRO"):
            features &= ~m("LRO")
        ip_or_hw = (features & (ipc | ip6c)) == (ipc | ip6c) or bool(features & hw)
        # netdev_fix_features: HW_TLS_TX needs IP_CSUM+IPV6_CSUM or HW_CSUM.
        if features & m("HW_TLS_TX") and not ip_or_hw:
            features &= ~m("HW_TLS_TX")
        # netdev_fix_features: HW_TLS_RX needs RXCSUM.
        if features & m("HW_TLS_RX") and not features & m("RXCSUM"):
            features &= ~m("HW_TLS_RX")
        # netdev_fix_features (2b2bc3bab158, v6.11; kernel rule uso_needs_csum): USO needs a checksum offload.
        if self.kernel.rule("uso_needs_csum") and features & m("GSO_UDP_L4") and not ip_or_hw:
            features &= ~m("GSO_UDP_L4")
        return features

    def _update(self, dev: Device) -> bool:
        """net/core/dev.c __netdev_update_features; True when dev.features changed."""
        upper_disables = self.mask("UPPER_DISABLES")
        # netdev_get_wanted_features: (features & ~hw_features) | wanted_features.
        features = (dev._features & ~dev._hw_features) | dev._wanted_features
        features = dev.fix_features(features)
        features = self._fix(dev, features)
        # netdev_sync_upper_features: LRO cannot be on if an upper device has it off in wanted_features.
        for upper in dev.uppers:
            features &= ~(upper_disables & ~upper._wanted_features)
        changed = features != dev._features
        dev._features = features
        # netdev_sync_lower_features: disable on each lower what this device has off (LRO).
        for lower in dev.lowers:
            off = upper_disables & ~features & lower._features
            if off:
                lower._wanted_features &= ~off
                self._update(lower)
                self._features_change(lower)
        return changed

    def _features_change(self, dev: Device) -> None:
        """netdev_features_change: NETDEV_FEAT_CHANGE to every upper device's notifier."""
        for upper in list(dev.uppers):
            upper.on_lower_feat_change(dev)

    def _update_and_notify(self, dev: Device) -> None:
        """net/core/dev.c netdev_update_features."""
        if self._update(dev):
            self._features_change(dev)

    def _disable_lro(self, dev: Device) -> None:
        """net/core/dev.c dev_disable_lro: clear LRO in wanted_features, here and on every lower."""
        dev._wanted_features &= ~self.m("LRO")
        self._update_and_notify(dev)
        for lower in dev.lowers:
            self._disable_lro(lower)

    @staticmethod
    def _link(lower: Device, upper: Device) -> None:
        lower.uppers.append(upper)
        upper.lowers.append(lower)

    # -- public constructors ---------------------------------------------------------------------
    @public
    def veth(self, a: str, b: str) -> tuple[Veth, Veth]:
        """ip link add a type veth peer name b (drivers/net/veth.c veth_newlink)."""
        self._new_name(a)
        self._new_name(b)
        if a == b:
            raise DeviceError(f"b={b!r} must differ from a")
        dev_a, dev_b = Veth(self, a), Veth(self, b)
        dev_a.peer, dev_b.peer = dev_b, dev_a
        for d in (dev_b, dev_a):
            self._register(d)
            if self.rule("veth_gro_off_by_default"):
                # drivers/net/veth.c, veth_newlink -> veth_disable_gro (d3256efd8e8b, v5.13): GRO off by default.
                d._features &= ~self.m("GRO")
                d._wanted_features &= ~self.m("GRO")
                self._update_and_notify(d)
        return dev_a, dev_b

    @public
    def macvlan(self, name: str, *, lower: Device | str) -> Macvlan:
        """ip link add name link lower type macvlan (macvlan_common_newlink)."""
        self._new_name(name)
        lower = self._device(lower, "lower")
        dev = Macvlan(self, name)
        dev.lowers.append(lower)
        self._register(dev)
        # macvlan_common_newlink: netdev_upper_dev_link(lowerdev, dev) after register_netdevice.
        lower.uppers.append(dev)
        return dev

    @public
    def vlan(self, name: str, *, lower: Device | str, vid: int) -> Vlan:
        """ip link add name link lower type vlan id vid (net/8021q/vlan.c register_vlan_dev)."""
        self._new_name(name)
        lower = self._device(lower, "lower")
        if isinstance(vid, bool) or not isinstance(vid, int) or not 0 <= vid < 4095:
            raise DeviceError(f"vid={vid!r} must be an int in 0..4094 (VLAN_VID_MASK)")
        if any(isinstance(u, Vlan) and u.vid == vid for u in lower.uppers):
            # net/8021q/vlan.c vlan_check_real_dev: vlan_find_dev(real_dev, ETH_P_8021Q, vid) -> -EEXIST
            raise DeviceError(f"vid={vid} already has a VLAN device on {lower.name} (vlan_check_real_dev: -EEXIST)")
        if lower._features & self.m("VLAN_CHALLENGED"):
            # net/8021q/vlan.c, vlan_check_real_dev: VLAN challenged devices refuse VLANs.
            raise DeviceError(f"lower={lower.name!r} is VLAN challenged")
        dev = Vlan(self, name, vid)
        dev.lowers.append(lower)
        self._register(dev)
        lower.uppers.append(dev)
        return dev

    @public
    def bridge(self, name: str) -> Bridge:
        self._new_name(name)
        return self._register(Bridge(self, name))  # type: ignore[return-value]

    @public
    def vxlan(self, name: str, *, vni: int, underlay: Device | str | None = None, ip: int = 4) -> Vxlan:
        """ip link add name type vxlan id vni [dev underlay] (drivers/net/vxlan/vxlan_core.c vxlan_newlink);
        ``ip``: the outer IP version (remote/local address family)."""
        self._new_name(name)
        if isinstance(vni, bool) or not isinstance(vni, int) or not 0 <= vni < 1 << 24:
            raise DeviceError(f"vni={vni!r} must be an int in 0..16777215 (24-bit VXLAN network identifier)")
        if ip not in IP_HLEN:
            raise DeviceError(f"ip={ip!r} must be 4 or 6 (the outer header's IP version)")
        under = None if underlay is None else self._device(underlay, "underlay")
        return self._register(Vxlan(self, name, vni, ip, under))  # type: ignore[return-value]

    @public
    def bond(self, name: str) -> Bond:
        self._new_name(name)
        return self._register(Bond(self, name))  # type: ignore[return-value]

    @public
    def nic(self, name: str, *, driver: str = "virtio_net", **params: object) -> Nic:
        """A NIC as its driver's probe leaves it; ``params`` are the driver's negotiated offloads."""
        self._new_name(name)
        if driver not in DRIVERS:
            raise DeviceError(f"driver={driver!r} is not a modelled driver; valid: {', '.join(DRIVERS)}")
        dev = Nic(self, name, driver, params)
        try:
            DRIVERS[driver](dev, **params)  # type: ignore[arg-type]
        except TypeError as exc:
            raise DeviceError(f"driver={driver!r}: {exc}") from None
        return self._register(dev)  # type: ignore[return-value]

    @public
    def set_master(self, port: Device | str, master: Device | str) -> None:
        """ip link set port master master: br_add_if or bond_enslave."""
        port = self._device(port, "port")
        master = self._device(master, "master")
        if port.master is not None:
            raise DeviceError(f"port={port.name!r} already has master {port.master.name!r}")
        if port is master:
            raise DeviceError("port and master must be different devices")
        if isinstance(master, Bridge) and isinstance(port, Bridge):
            # net/bridge/br_if.c br_add_if (5.10..6.18): "Can not enslave a bridge to a bridge" -> -ELOOP
            raise DeviceError(f"port={port.name!r} is a bridge: a bridge cannot be a bridge port (br_add_if: -ELOOP)")
        above: list[Device] = list(master.uppers)
        while above:
            d = above.pop()
            if d is port:
                # net/core/dev.c __netdev_upper_dev_link: the master already sits on the port -> -EBUSY
                raise DeviceError(f"port={port.name!r} is stacked above master={master.name!r}: linking them "
                                  "would make a loop (__netdev_upper_dev_link: -EBUSY)")
            above.extend(d.uppers)
        if isinstance(master, Bridge):
            # net/bridge/br_if.c, br_add_if: link, dev_disable_lro(port), then netdev_update_features(br).
            self._link(port, master)
            port.master = master
            self._disable_lro(port)
            self._update_and_notify(master)
            master.auto_mtu()  # br_add_if -> br_mtu_auto_adjust
        elif isinstance(master, Bond):
            # drivers/net/bonding/bond_main.c, bond_enslave: LRO off unless the bond has it, link, compute.
            if not master._features & self.m("LRO"):
                self._disable_lro(port)
            # bond_enslave (6.1): dev_set_mtu(slave_dev, bond->dev->mtu) (an Ethernet slave takes the bond's)
            port.set_mtu(master.mtu)
            self._link(port, master)
            port.master = master
            master.compute_features()
        else:
            raise DeviceError(f"master={master.name!r} is a {master.kind}; only bridge and bond take ports")

    def _device(self, dev: Device | str, param: str) -> Device:
        if isinstance(dev, str):
            if dev not in self.devices:
                raise DeviceError(f"{param}={dev!r} is not a device of this namespace; have: {', '.join(self.devices)}")
            return self.devices[dev]
        if not isinstance(dev, Device) or dev.ns is not self:
            raise DeviceError(f"{param}={dev!r} is not a device of this namespace")
        return dev

    def walk(self) -> Iterable[Device]:
        return iter(self.devices.values())
