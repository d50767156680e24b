# The room board as a service of the workshop hub (loaded by deploy/jupyterhub_config.py; deploy/board/app.py).
# A subconfig: lists and dicts are extended (append, update), never replaced, so the main file's services, roles and
# spawner environment stay. Every value comes from the environment deploy/hub.sh exports, as in the main file.
import os
from pathlib import Path
from urllib.parse import urlparse

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

HERE = Path(__file__).resolve().parent
PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", "/opt/vnetlab-hub"))
STATE = Path(os.environ.get("VNETLAB_HUB_STATE", PREFIX / "state"))
ENV = PREFIX / "env"  # the attendees' environment: it has jupyterhub (services.auth), tornado and vnetlab
BOARD = os.environ.get("VNETLAB_BOARD_INTERNAL", "http://127.0.0.1:8082")  # the service's own loopback address

c.JupyterHub.services.append({
    "name": "board",
    "url": BOARD,
    "command": [str(ENV / "bin/python"), str(HERE / "app.py")],
    "environment": {"VNETLAB_BOARD_DB": str(STATE / "board.sqlite"),
                    "VNETLAB_BOARD_ADMINS": os.environ.get("VNETLAB_HUB_ADMIN", "instructor"),
                    "VNETLAB_BOARD_STUCK_S": os.environ.get("VNETLAB_BOARD_STUCK_S", "600"),
                    "PATH": "/usr/bin:/bin"},
    "oauth_no_confirm": True,  # the instructor is not asked to confirm access to the hub's own service
    "display": True,  # in the hub's Services menu, for those who may open it
})
# Its own token lists the attendees and whether their servers run; who may OPEN the board is the access scope
# access:services!service=board, which the hub's admin role has (access:services) and the user role does not.
c.JupyterHub.load_roles.append({"name": "board", "scopes": ["list:users", "read:users", "read:servers"],
                                "services": ["board"]})

# Where kernels post their checks (vnetlab/room.py): the hub's public port on loopback, through the proxy; with the
# hub's own TLS certificate (issued for a name, not 127.0.0.1) the service's loopback address instead.
bind = urlparse(os.environ.get("VNETLAB_HUB_BIND", "http://:8000"))
if bind.scheme == "https":
    events = f"{BOARD.rstrip('/')}/services/board/api/events"
else:
    host = bind.hostname if bind.hostname not in (None, "", "0.0.0.0", "::") else "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    events = f"http://{host}:{bind.port or 80}/services/board/api/events"
c.Spawner.environment.update({"VNETLAB_BOARD_URL": events})
