"""The kernel websocket the panels' PNGs travel on, with Nagle's algorithm off (TCP_NODELAY).

jupyter_server's kernel websocket leaves TCP_NODELAY unset (tornado's default: "small messages may be delayed and/or
combined", tornado.websocket.WebSocketHandler.set_nodelay). A slider step makes the kernel send a few small messages
(busy status, ipywidgets' echo and the readout) and then the image; with Nagle on, the server's TCP holds every
message after the first until the browser acknowledges it, and the browser's delayed ACK takes up to 40 ms on Linux
(TCP_DELACK_MIN). Measured in JupyterLab on this 2-core machine (tcpdump on lo beside
benchmarks/bench_browser_slider.py): jupyter_server handed the image to its socket 9-15 ms after the key press and the
bytes left the socket at 47-51 ms. The README's server config (jupyter-settings/jupyter_server_config.py), the
workshop hub (deploy/jupyterhub_config.py) and Binder's image (postBuild) select
:class:`NoDelayKernelWebsocketConnection`.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

__all__ = ["NoDelayKernelWebsocketConnection", "CLASS_PATH"]

CLASS_PATH = "vnetlab.widgets.server.NoDelayKernelWebsocketConnection"


class NoDelayKernelWebsocketConnection(ZMQChannelsWebsocketConnection):
    """jupyter_server's ZMQ channels connection, its websocket's TCP_NODELAY set as it connects."""

    def connect(self) -> Any:  # noqa: ANN401 (jupyter_server's own return: a Future or None)
        self.websocket_handler.set_nodelay(True)
        return super().connect()
