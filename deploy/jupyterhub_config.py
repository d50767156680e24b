# JupyterHub for a vnetlab workshop on one VM (started by deploy/hub.sh; see deploy/README.md).
# Every setting comes from the environment hub.sh exports, so the test and the load test start the same file.
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from vnetlab_hub import CLAIMS_FILE, USERNAME_PATTERN  # noqa: E402

PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", "/opt/vnetlab-hub"))
STATE = Path(os.environ.get("VNETLAB_HUB_STATE", PREFIX / "state"))
ENV = PREFIX / "env"  # the attendees' environment: the lock file's pins, vnetlab, jupyterhub-singleuser

# Network: the proxy's public port on loopback unless VNETLAB_HUB_BIND opens it (http://0.0.0.0:8000 for the room);
# the proxy's API, the hub's internal API and every single-user server listen on loopback.
c.JupyterHub.bind_url = os.environ.get("VNETLAB_HUB_BIND", "http://127.0.0.1:8000")
c.JupyterHub.hub_bind_url = os.environ.get("VNETLAB_HUB_INTERNAL", "http://127.0.0.1:8081")
c.ConfigurableHTTPProxy.api_url = os.environ.get("VNETLAB_HUB_PROXY_API", "http://127.0.0.1:8001")
# The proxy lives and dies with the hub (die_with_hub.py: even a SIGKILL'd hub leaves no proxy behind); the
# attendees' servers do not (below), and the next hub gives them their routes again.
HUB_PID = str(os.getpid())  # this file is read by the hub's own process
CHP = [sys.executable, str(HERE / "die_with_hub.py"), HUB_PID,
       str(PREFIX / "proxy/node_modules/.bin/configurable-http-proxy")]
c.JupyterHub.proxy_class = "vnetlab_hub.WorkshopProxy"
c.Spawner.ip = "127.0.0.1"
if os.environ.get("VNETLAB_HUB_SSL_CERT"):
    # the proxy speaks TLS itself and tells the hub and the servers so (X-Forwarded-Proto: https): Secure cookies
    c.JupyterHub.ssl_cert = os.environ["VNETLAB_HUB_SSL_CERT"]
    c.JupyterHub.ssl_key = os.environ["VNETLAB_HUB_SSL_KEY"]
    c.ConfigurableHTTPProxy.command = CHP
else:
    # Behind a TLS reverse proxy the proxy would append its own "X-Forwarded-Proto: http" to the front's "https",
    # and tornado reads the last entry (HTTPServer xheaders, 6.x): the hub's and the servers' cookies then lacked
    # Secure. Passed through untouched, the front's header decides (a client that forges it only changes the
    # cookies of its own answer).
    c.ConfigurableHTTPProxy.command = [*CHP, "--no-x-forward"]
# The address attendees type, when a TLS front serves the room (https://hub.example.org/): JupyterHub then marks
# its session cookies Secure by that URL, and cookie_options marks every other cookie Secure too (the _xsrf one is
# set from cookie_options alone, whatever the request said: jupyterhub/_xsrf_utils.py, 6.1).
PUBLIC_URL = os.environ.get("VNETLAB_HUB_PUBLIC_URL", "")
if PUBLIC_URL:
    c.JupyterHub.public_url = PUBLIC_URL
if PUBLIC_URL.startswith("https:") or os.environ.get("VNETLAB_HUB_SSL_CERT"):
    c.JupyterHub.tornado_settings = {"cookie_options": {"secure": True}}

c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
# A hub restart (Ctrl-C and deploy/hub.sh again, a crash) keeps every attendee's server and kernels running: their
# variables and running cells survive, and the new hub finds them by pid. `deploy/hub.sh stop` stops them too.
c.JupyterHub.cleanup_servers = False
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")

# Accounts: the first person to log in with a name (and the room's password) claims it with a password of their
# own; from then on only that password opens it (vnetlab_hub.RoomAuthenticator). The instructor logs in as an admin
# with a separate, longer password.
c.JupyterHub.authenticator_class = "vnetlab_hub.RoomAuthenticator"
c.RoomAuthenticator.user_password = os.environ["VNETLAB_HUB_PASSWORD"]
ADMIN = os.environ.get("VNETLAB_HUB_ADMIN", "instructor")
c.Authenticator.admin_users = {ADMIN}
c.RoomAuthenticator.admin_password = os.environ["VNETLAB_HUB_ADMIN_PASSWORD"]
c.RoomAuthenticator.claims_file = str(STATE / CLAIMS_FILE)
c.RoomAuthenticator.failed_login_delay = float(os.environ.get("VNETLAB_HUB_LOGIN_DELAY", "1"))
c.Authenticator.allow_all = True
c.Authenticator.username_pattern = USERNAME_PATTERN

# Each attendee: their own Unix account, their own copy of the attendees' notebooks (notebooks/NN_*.ipynb and the
# glossary, copied once as ~/vnetlab/; never notebooks/solved/), JupyterLab from ENV.
c.JupyterHub.spawner_class = "vnetlab_hub.WorkshopSpawner"
c.WorkshopSpawner.notebooks_src = str(REPO / "notebooks")
c.WorkshopSpawner.homes = os.environ.get("VNETLAB_HUB_HOMES", "/home")
c.Spawner.cmd = [str(ENV / "bin/jupyterhub-singleuser")]
# The kernel websocket with TCP_NODELAY, as the README's server config selects it (vnetlab/widgets/server.py: without
# it a slider step's image waited up to 40 ms for the browser's delayed ACK).
NODELAY = "vnetlab.widgets.server.NoDelayKernelWebsocketConnection"  # ENV has vnetlab; the hub's venv does not
# Kernels talk ZeroMQ over unix sockets in the attendee's private runtime folder (vnetlab_hub.user_env), never on
# loopback TCP, where any local user could connect to them and read the code and output.
# A kernel idle for VNETLAB_HUB_KERNEL_IDLE_TIMEOUT seconds is shut down, open in a tab or not (jupyter_server's
# MappingKernelManager culling): a reader who follows the notebooks in order keeps only the recent ones' kernels.
KERNEL_IDLE = int(os.environ.get("VNETLAB_HUB_KERNEL_IDLE_TIMEOUT", "1200"))
c.Spawner.args = [f"--ServerApp.kernel_websocket_connection_class={NODELAY}"]
c.Spawner.args += ["--KernelManager.transport=ipc", f"--MappingKernelManager.cull_idle_timeout={KERNEL_IDLE}",
                   f"--MappingKernelManager.cull_interval={min(300, max(10, KERNEL_IDLE // 4))}",
                   "--MappingKernelManager.cull_connected=True"]
c.Spawner.default_url = "/lab/tree/00_welcome_and_map.ipynb"
c.WorkshopSpawner.mpl_cache = str(ENV / "share/vnetlab-hub/matplotlib")  # built by hub.sh
# Each home its own file system of this size (an ext4 image in the state folder): a full home fills nothing else.
c.WorkshopSpawner.home_size = os.environ.get("VNETLAB_HUB_HOME_SIZE", "1G")
c.WorkshopSpawner.home_images = str(STATE / "homes")
# ENV's bin first, so the kernel and its subprocesses use the pinned environment; nothing else leaks in.
c.Spawner.environment = {"PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin", "MPLBACKEND": "Agg",
                         "VNETLAB_HOSTED": "jupyterhub"}
c.LocalProcessSpawner.env_keep = ["LANG", "LC_ALL", "TZ"]
# Generous: on a saturated machine a server's start (imports of jupyter_server and its extensions) took minutes in
# the load test, and the hub kills a server that misses its timeout (deploy/README.md).
c.Spawner.start_timeout = int(os.environ.get("VNETLAB_HUB_START_TIMEOUT", "300"))
c.Spawner.http_timeout = int(os.environ.get("VNETLAB_HUB_START_TIMEOUT", "300"))
# Per attendee (enforced through a cgroup where the machine has one: see vnetlab_hub.py and deploy/README.md).
# 1.5 GiB: a server (145 MiB RSS) and a kernel per notebook, each 100-111 MiB after its first figure, came to 885 MiB
# for notebooks 00-50 (measured on this hub, deploy/README.md); an eighth kernel and a figure's peak stay inside.
c.Spawner.mem_limit = os.environ.get("VNETLAB_HUB_MEM_LIMIT", "1536M")
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
    "command": [sys.executable, str(HERE / "die_with_hub.py"), HUB_PID,  # one culler: it ends with its hub
                sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL_TIMEOUT}", "--cull-every=300"],
}]

# The room board (deploy/board/): the instructor's live view of the room's exercise checks, a hub service.
load_subconfig(str(HERE / "board" / "hub_config.py"))  # noqa: F821 (JupyterHub's config loader defines it)
