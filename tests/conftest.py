"""Shared test settings: hypothesis profiles (CI runs a fixed, derandomised profile), and the rule that a
test marked ``live`` or ``btf`` may not skip in CI on a machine that can run it."""

import os
import shutil

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

BTF = "/sys/kernel/btf/vmlinux"


def pytest_configure(config):
    config.addinivalue_line("markers", "btf: reads the running kernel's BTF (bpftool and /sys/kernel/btf/vmlinux)")
    config.addinivalue_line("markers", "hub: starts the workshop hub (deploy/); needs root and node")


def _machine_can(kind: str) -> bool:
    """Root with network namespaces (live), or bpftool and the kernel's BTF (btf): the machine can run it."""
    if not hasattr(os, "geteuid") or not os.uname().sysname == "Linux":
        return False
    if kind == "btf":
        return bool(shutil.which("bpftool")) and os.path.exists(BTF)
    if kind == "hub":
        return os.geteuid() == 0 and bool(shutil.which("node"))
    from vnetlab import live

    return os.geteuid() == 0 and bool(live.available(labs=True))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    if hasattr(report, "wasxfail"):
        return
    for kind in ("live", "btf", "hub"):
        if item.get_closest_marker(kind) is not None and _machine_can(kind):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            report.outcome = "failed"
            report.longrepr = (f"CI=true and this machine can run {kind} tests (root and network namespaces / "
                               f"bpftool and BTF / root and node), but the test skipped: {reason}")
            return
