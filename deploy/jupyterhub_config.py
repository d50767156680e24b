# JupyterHub for a vnetlab workshop on one VM (started by deploy/hub.sh; see deploy/README.md).
# Every setting comes from the environment hub.sh exports, so the test and the load test start the same file.
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from vnetlab_hub import USERNAME_PATTERN  # noqa: E402

PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", "/opt/vnetlab-hub"))
STATE = Path(os.environ.get("VNETLAB_HUB_STATE", PREFIX / "state"))
ENV = PREFIX / "env"  # the attendees' environment: the lock file's pins, vnetlab, jupyterhub-singleuser

# Network: attendees reach only the proxy's public port; the proxy's API, the hub's internal API and every
# single-user server listen on loopback.
c.JupyterHub.bind_url = os.environ.get("VNETLAB_HUB_BIND", "http://:8000")
c.JupyterHub.hub_bind_url = os.environ.get("VNETLAB_HUB_INTERNAL", "http://127.0.0.1:8081")
c.ConfigurableHTTPProxy.api_url = os.environ.get("VNETLAB_HUB_PROXY_API", "http://127.0.0.1:8001")
c.ConfigurableHTTPProxy.command = [str(PREFIX / "proxy/node_modules/.bin/configurable-http-proxy")]
c.Spawner.ip = "127.0.0.1"
if os.environ.get("VNETLAB_HUB_SSL_CERT"):
    c.JupyterHub.ssl_cert = os.environ["VNETLAB_HUB_SSL_CERT"]
    c.JupyterHub.ssl_key = os.environ["VNETLAB_HUB_SSL_KEY"]

c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.cleanup_servers = True  # a hub restart stops the attendees' servers it started
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")

# Accounts: one shared password for the room (JupyterHub's own SharedPasswordAuthenticator, maintained with the hub,
# no extra package); any name matching the pattern logs in and keeps its work under that name. The instructor logs
# in as an admin with a separate, longer password.
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["VNETLAB_HUB_PASSWORD"]
ADMIN = os.environ.get("VNETLAB_HUB_ADMIN", "instructor")
c.Authenticator.admin_users = {ADMIN}
c.SharedPasswordAuthenticator.admin_password = os.environ["VNETLAB_HUB_ADMIN_PASSWORD"]
c.Authenticator.allow_all = True
c.Authenticator.username_pattern = USERNAME_PATTERN

# Each attendee: their own Unix account, their own copy of notebooks/student/ (copied once, as ~/vnetlab/student/
# with the glossary beside it), JupyterLab from ENV.
c.JupyterHub.spawner_class = "vnetlab_hub.WorkshopSpawner"
c.WorkshopSpawner.notebooks_src = str(REPO / "notebooks/student")
c.WorkshopSpawner.homes = os.environ.get("VNETLAB_HUB_HOMES", "/home")
c.Spawner.cmd = [str(ENV / "bin/jupyterhub-singleuser")]
# The kernel websocket with TCP_NODELAY, as the README's server config selects it (vnetlab/widgets/server.py: without
# it a slider step's image waited up to 40 ms for the browser's delayed ACK).
NODELAY = "vnetlab.widgets.server.NoDelayKernelWebsocketConnection"  # ENV has vnetlab; the hub's venv does not
c.Spawner.args = [f"--ServerApp.kernel_websocket_connection_class={NODELAY}"]
c.Spawner.default_url = "/lab/tree/student/00_welcome_and_map.ipynb"
c.WorkshopSpawner.mpl_cache = str(ENV / "share/vnetlab-hub/matplotlib")  # built by hub.sh
# ENV's bin first, so the kernel and its subprocesses use the pinned environment; nothing else leaks in.
c.Spawner.environment = {"PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin", "MPLBACKEND": "Agg",
                         "VNETLAB_HOSTED": "jupyterhub"}
c.LocalProcessSpawner.env_keep = ["LANG", "LC_ALL", "TZ"]
# Generous: on a saturated machine a server's start (imports of jupyter_server and its extensions) took minutes in
# the load test, and the hub kills a server that misses its timeout (deploy/README.md).
c.Spawner.start_timeout = int(os.environ.get("VNETLAB_HUB_START_TIMEOUT", "300"))
c.Spawner.http_timeout = int(os.environ.get("VNETLAB_HUB_START_TIMEOUT", "300"))
# Per attendee (enforced through a cgroup where the machine has one: see vnetlab_hub.py and deploy/README.md).
c.Spawner.mem_limit = os.environ.get("VNETLAB_HUB_MEM_LIMIT", "1G")
c.Spawner.cpu_limit = float(os.environ.get("VNETLAB_HUB_CPU_LIMIT", "1"))
# A room arrives at once: start servers a few at a time rather than all of them fighting for the CPU.
c.JupyterHub.concurrent_spawn_limit = int(os.environ.get("VNETLAB_HUB_SPAWN_LIMIT", "10"))

# Idle culler: stop a server after an hour without activity (its files stay; the next login starts it again).
CULL_TIMEOUT = os.environ.get("VNETLAB_HUB_CULL_TIMEOUT", "3600")
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL_TIMEOUT}", "--cull-every=300"],
}]

# The room board (deploy/board/): the instructor's live view of the room's exercise checks, a hub service.
load_subconfig(str(HERE / "board" / "hub_config.py"))  # noqa: F821 (JupyterHub's config loader defines it)
