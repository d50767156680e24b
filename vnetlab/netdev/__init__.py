"""Network devices and how the kernel computes their features: one module per device family.

core (struct net_device, net/core/dev.c), veth, macvlan, vlan, bridge, bond, vxlan, nic (driver probes) and
namespace (creating and linking them). The names below are the package's public face.
"""

from vnetlab.errors import DeviceError, FixedFeatureError
from vnetlab.netdev.bond import Bond
from vnetlab.netdev.bridge import Bridge
from vnetlab.netdev.core import VLAN_MULTI_TAG_FEATURES, Device, Handoff, NetCore, StackedDevice
from vnetlab.netdev.macvlan import Macvlan
from vnetlab.netdev.namespace import IFNAMSIZ, Namespace
from vnetlab.netdev.nic import DRIVERS, Nic
from vnetlab.netdev.veth import Veth
from vnetlab.netdev.vlan import Vlan
from vnetlab.netdev.vxlan import VXLAN_HLEN, Vxlan

__all__ = ["Bond", "Bridge", "DRIVERS", "Device", "DeviceError", "FixedFeatureError", "Handoff", "IFNAMSIZ",
           "Macvlan", "Namespace", "NetCore", "Nic", "StackedDevice", "VLAN_MULTI_TAG_FEATURES", "VXLAN_HLEN", "Veth",
           "Vlan", "Vxlan"]
