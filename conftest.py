"""How the suite runs in parallel: pytest-xdist workers (``-n auto`` in pyproject.toml), each taking whole groups.

A test file is a group of its own (nbval's cells share one kernel, a module's fixtures run once), except files
whose tests share something machine-wide, which run in one worker, one after another:
- ``hub``: the workshop hub and the board (one hub prefix, one port), and the browser tests (one README venv under
  artifacts/, rebuilt when stale): each starts servers, kernels and Chromium, and the board's room of 20 attendees
  needs the machine's other cores to itself, so these run one after another while the unit tests run beside them;
- ``live``: the live-kernel tests (network namespaces, tracefs; `ip netns list` is compared before and after).
The groups are decided from the node id's file (xdist's own xdist_group marks are lost with pytest 9, whose node
ids are no longer assignable). tests/test_project.py checks that every file with a hub or live mark is listed.
"""

from __future__ import annotations

FILE_GROUPS = {
    "test_hub.py": "hub", "test_board.py": "hub",
    "test_live.py": "live", "test_live_userns.py": "live", "test_capture.py": "live", "test_udp.py": "live",
    "test_netdev.py": "live", "test_features.py": "live", "test_ethtool.py": "live",
    "test_browser.py": "hub", "test_browser_panels.py": "hub", "test_kernel_websocket.py": "hub",
    "test_project.py": "hub",
}


def group_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return FILE_GROUPS.get(path.rsplit("/", 1)[-1], path)


def pytest_xdist_make_scheduler(config: object, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return FileGroupScheduling(config, log)
