"""deploy/k8s/values.yaml (zero-to-jupyterhub, on paper) against the sizing deploy/sizing.py derives from the
committed load-test results, and the instructor guide's hosting table against the same figures."""

import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "deploy"))
import sizing  # noqa: E402

VALUES = yaml.safe_load((REPO / "deploy/k8s/values.yaml").read_text())


def test_values_parse_with_the_workshop_settings():
    hub = VALUES["hub"]["config"]
    assert hub["JupyterHub"]["authenticator_class"] == "shared-password"
    assert hub["Authenticator"]["admin_users"] == ["instructor"]
    # source: deploy/README.md, idle culler: a server idle for an hour is stopped
    assert VALUES["cull"]["enabled"] and VALUES["cull"]["timeout"] == 3600
    assert VALUES["prePuller"]["hook"]["enabled"] and VALUES["prePuller"]["continuous"]["enabled"]
    hook = " ".join(VALUES["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"])
    assert "[ -e \"$HOME/vnetlab\" ] ||" in hook and "notebooks/student" in hook  # copied once, never overwritten
    assert VALUES["singleuser"]["defaultUrl"].endswith("/vnetlab/student/00_welcome_and_map.ipynb")


def test_per_user_resources_are_the_measured_sizing():
    s = sizing.derive(sizing.load())
    single = VALUES["singleuser"]
    assert single["memory"]["guarantee"] == s["k8s"]["memory_guarantee"]
    assert single["memory"]["limit"] == s["k8s"]["memory_limit"]
    assert single["cpu"]["guarantee"] == s["k8s"]["cpu_guarantee"]
    assert single["cpu"]["limit"] == s["k8s"]["cpu_limit"]


def test_readme_arithmetic_for_200_is_the_derived_one():
    s = sizing.derive(sizing.load())
    text = (REPO / "deploy/README.md").read_text()
    assert f"{s['memory_per_attendee_mib']} MiB" in text
    assert re.search(rf"200 × {s['k8s']['memory_guarantee'][:-1]} MiB", text), "the 200-attendee memory sum"


def test_guide_table_is_the_derived_one():
    s = sizing.derive(sizing.load())
    guide = (REPO / "docs/instructor_guide.md").read_text()
    section = guide.split("## Hosting the room on one VM", 1)[1].split("\n## ", 1)[0]
    phase = s["sized_by"].replace("_", " ")
    assert f"| attendees per core (the costliest phase, {phase}, at half load) | {s['attendees_per_core']} |" in section
    assert f"| attendees per GiB | {s['attendees_per_gib']} |" in section
    for n in (40, 100):
        vm = s["vm"][n]
        assert f"| {n} | {vm['cores']} | {vm['memory_gib']} GiB |" in section
    assert guide.index("## Hosting the room on one VM") < guide.index("## Answer key")
