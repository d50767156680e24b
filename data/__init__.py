"""Kernel tables read by vnetlab (installed as the package ``vnetlab.data``)."""
