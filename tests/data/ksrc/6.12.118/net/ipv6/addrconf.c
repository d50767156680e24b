/* excerpt: Debian linux-source-6.12 (6.12.118-1~deb12u1) net/ipv6/addrconf.c lines 3713-3718 (addrconf_notify, NETDEV_CHANGEMTU) */
	case NETDEV_CHANGEMTU:
		/* if MTU under IPV6_MIN_MTU stop IPv6 on this interface. */
		if (dev->mtu < IPV6_MIN_MTU) {
			addrconf_ifdown(dev, dev != net->loopback_dev);
			break;
		}
