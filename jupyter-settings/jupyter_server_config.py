# The README's open command passes this file (jupyter lab --config=jupyter-settings/jupyter_server_config.py):
# attendees land in their own copies, the whole repository is served so the files the notebooks cite (data/,
# lab/) open in JupyterLab, and the news/update toast stays off, whatever the user's home holds.
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

c = get_config()  # noqa: F821  (traitlets config files get get_config from their loader)
c.ServerApp.root_dir = str(REPO)
# Attendees start in their copy of notebook 00 (the printed URL and the opened browser tab both land there); the
# instructors' solved copies are notebooks/solved/NN_*-solved.ipynb, one folder down, opened on purpose.
c.LabApp.default_url = "/lab/tree/notebooks/00_welcome_and_map.ipynb"
# overrides.json next to this file sets JupyterLab's defaults: no news fetch, no update check (so no toast).
c.LabApp.app_settings_dir = str(HERE)
# The kernel websocket with TCP_NODELAY (vnetlab/widgets/server.py): without it the server's TCP held a slider step's
# image until the browser's delayed ACK, up to 40 ms (measured; benchmarks/bench_browser_slider.py).
c.ServerApp.kernel_websocket_connection_class = "vnetlab.widgets.server.NoDelayKernelWebsocketConnection"
