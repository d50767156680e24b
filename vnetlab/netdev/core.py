"""struct net_device and net/core/dev.c: the generic device and how the kernel computes its features.

:class:`Device` is one net_device (the five feature words, MTU, links to uppers and lowers, the ethtool view,
ndo hooks each driver family overrides in its own module). :class:`NetCore` is one network namespace's kernel
with the generic feature rules along the kernel's paths: register_netdevice, __netdev_update_features = the
device type's ndo_fix_features, then netdev_fix_features, then netdev_sync_upper/lower_features; a change fires
NETDEV_FEAT_CHANGE (netdev_features_change), which each upper type handles as its notifier does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from vnetlab import ethtool
from vnetlab import features as F
from vnetlab.checks import In, public
from vnetlab.errors import ArgumentError, DeviceError, FixedFeatureError, TableError
from vnetlab.features import FeatureSet
from vnetlab.headers import ETH_DATA_LEN, ETH_HLEN, ETH_MIN_MTU, GSO_MAX_SEGS, GSO_MAX_SIZE, VLAN_HLEN
from vnetlab.profiles import DEFAULT_KERNEL, Kernel
from vnetlab.skb import Skb

# include/linux/netdev_features.h: netdev_features_t is a u64 of NETIF_F bits (as FeatureSet.from_bits takes it)
NetdevFeatures = Annotated[int, In(0, 2 ** 64 - 1, "netdev_features_t, a u64 of NETIF_F bits")]

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


@public
def is_skb_forwardable(dev: Device, skb: Skb) -> bool:
    # include/linux/netdevice.h __is_skb_forwardable (6.1): len <= mtu + hard_header_len + VLAN_HLEN, or GSO
    return skb.is_gso() or skb.len <= dev.mtu + ETH_HLEN + VLAN_HLEN


class Device:
    """One struct net_device: the five feature words ethtool and the stack look at, plus its links."""

    kind = "generic"

    @public
    def __init__(self, ns: NetCore, name: str) -> None:
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
        return FeatureSet.of_checked_bits(bits, self.ns.empty)

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
    def fix_features(self, features: NetdevFeatures) -> int:
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
        t = self.ns.table
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
        t = self.ns.table
        changeable = self._hw_features & ~t.masks["NEVER_CHANGE"]
        strings = ethtool.feature_strings(self.ns.kernel)
        req_mask = req_on = 0
        for key, on in settings.items():
            if not isinstance(on, bool):
                raise ArgumentError(f"settings[{key!r}] must be True or False, got {on!r}", param="settings")
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
            self.ns.update_features(self)
            self.ns.netdev_features_change(self)
        return self

    # -- transmit ------------------------------------------------------------------------------
    passthru_features_check = False  # ndo_features_check = passthru_features_check (else dflt_features_check)

    @public
    def features_check(self, skb: Skb, features: FeatureSet, inband_vlan_tags: int = 0) -> FeatureSet:
        """ndo_features_check: passthru_features_check leaves the features; dflt_features_check ->
        include/linux/if_vlan.h vlan_features_check (6.1) keeps only a direct mask for a multi-tagged skb."""
        if features.table.kernel != F.table(self.ns.kernel).kernel:  # another kernel's bit numbers
            raise ArgumentError(f"features are of kernel {features.table.kernel}, {self.name} is a kernel "
                                f"{self.ns.kernel.version} device", param="features")
        tags = len(skb.vlan_inband) + inband_vlan_tags + (1 if skb.vlan_tag is not None else 0)
        if self.passthru_features_check or tags < 2:
            return features
        return features & set(VLAN_MULTI_TAG_FEATURES)

    @public
    def start_xmit(self, skbs: Sequence[Skb], *, port: Device | None = None) -> Handoff:
        """ndo_start_xmit: a device without a lower device is a driver putting the skbs on the wire."""
        check_skbs(skbs)
        gso = any(s.is_gso() for s in skbs)
        return Handoff(tuple(skbs), "wire", None, "segmented by hardware" if gso else "", "driver_xmit_skbs")

    @public
    def set_mtu(self, mtu: int) -> Device:
        """ip link set dev NAME mtu MTU: net/core/dev.c dev_validate_mtu (min_mtu..max_mtu), the driver's
        ndo_change_mtu limits, then NETDEV_CHANGEMTU to every upper device (which may lower its own)."""
        lo, hi = self.min_mtu, self.mtu_limit()
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not lo <= mtu <= hi:
            raise DeviceError(f"mtu={mtu!r} is outside {lo}..{hi} for {self.kind} {self.name} "
                              "(dev_validate_mtu / ndo_change_mtu: -EINVAL)", param="mtu")
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
                raise DeviceError(f"{name}={value!r} must be an int in 0..{hi} (gso_max_{name}: -EINVAL)", param=name)
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


class StackedDevice(Device):
    """An upper device whose MTU its lower device bounds: macvlan and vlan do the same here (6.1).

    ndo_change_mtu refuses more than the lower's mtu (drivers/net/macvlan.c macvlan_change_mtu: -EINVAL;
    net/8021q/vlan_dev.c vlan_dev_change_mtu: -ERANGE), and their NETDEV_CHANGEMTU notifiers
    (macvlan_device_event, vlan_device_event) bring an upper above the lower's new mtu down to it.
    """

    def mtu_limit(self) -> int:
        return min(self.max_mtu, self.lowers[0].mtu)

    @public
    def on_lower_mtu_change(self, lower: Device) -> None:
        if self.mtu > lower.mtu:
            self.set_mtu(lower.mtu)


@public
def check_skbs(skbs: Sequence[object], param: str = "skbs") -> None:
    """Each of ``skbs`` is an Skb (what ndo_start_xmit is handed): the one check every device's start_xmit makes."""
    for i, s in enumerate(skbs):
        if not isinstance(s, Skb):
            raise ArgumentError(f"{param}[{i}] must be a vnetlab.skb.Skb, got {type(s).__name__}", param=param)


@public
def port_of(master: Device, port: Device | None) -> Device:
    """The port of ``master`` a frame leaves through: ``port``, or the first one when None."""
    if not master.lowers:  # a bridge or bond with no port has nowhere to send (the kernel drops the frame)
        raise DeviceError(f"master={master.name!r} has no ports ({master.kind} with nothing enslaved): set_master "
                          "a port first", param="master")
    if port is None:
        return master.lowers[0]
    if port not in master.lowers:
        raise DeviceError(f"port={getattr(port, 'name', port)!r} is not a port of {master.kind} {master.name} "
                          f"(ports: {', '.join(p.name for p in master.lowers)})", param="port")
    return port


class NetCore:
    """One network namespace's kernel and its devices, with net/core/dev.c's generic feature rules.

    ``kernel`` is a version string or a resolved :class:`~vnetlab.profiles.Kernel` (a lab kernel of
    vnetlab.labkernels keeps its patch's rules); it is resolved once, here, and every device asks it."""

    @public
    def __init__(self, kernel: str | Kernel = DEFAULT_KERNEL) -> None:
        self.kernel: Kernel = F.resolve(kernel)
        self.table = F.table(self.kernel)
        self.empty = FeatureSet(0, self.kernel)
        self.devices: dict[str, Device] = {}

    # -- helpers on this kernel's table ----------------------------------------------------------
    @public
    def m(self, *names: str) -> int:
        out = 0
        for n in names:
            out |= 1 << self.table.bits[n]
        return out

    @public
    def m_opt(self, name: str) -> int:
        """The bit of ``name`` if this kernel has it (LLTX, NETNS_LOCAL before 6.18), else 0."""
        return 1 << self.table.bits[name] if name in self.table.bits else 0

    @public
    def has(self, name: str) -> bool:
        return name in self.table.bits

    @public
    def mask(self, name: str) -> int:
        return self.table.masks[name]

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

    # -- net/core/dev.c ------------------------------------------------------------------------------
    @public
    def register_netdevice(self, dev: Device) -> Device:
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
        self.update_features(dev)
        return dev

    @public
    def netdev_fix_features(self, dev: Device, features: NetdevFeatures) -> int:
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

    @public
    def update_features(self, dev: Device) -> bool:
        """net/core/dev.c __netdev_update_features; True when dev.features changed."""
        upper_disables = self.mask("UPPER_DISABLES")
        # netdev_get_wanted_features: (features & ~hw_features) | wanted_features.
        features = (dev._features & ~dev._hw_features) | dev._wanted_features
        features = dev.fix_features(features)
        features = self.netdev_fix_features(dev, features)
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
                self.update_features(lower)
                self.netdev_features_change(lower)
        return changed

    @public
    def netdev_features_change(self, dev: Device) -> None:
        """netdev_features_change: NETDEV_FEAT_CHANGE to every upper device's notifier."""
        for upper in list(dev.uppers):
            upper.on_lower_feat_change(dev)

    @public
    def netdev_update_features(self, dev: Device) -> None:
        """net/core/dev.c netdev_update_features."""
        if self.update_features(dev):
            self.netdev_features_change(dev)

    @public
    def dev_disable_lro(self, dev: Device) -> None:
        """net/core/dev.c dev_disable_lro: clear LRO in wanted_features, here and on every lower."""
        dev._wanted_features &= ~self.m("LRO")
        self.netdev_update_features(dev)
        for lower in dev.lowers:
            self.dev_disable_lro(lower)
