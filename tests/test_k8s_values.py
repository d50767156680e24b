"""deploy/k8s/values.yaml (zero-to-jupyterhub, on paper) against the sizing deploy/sizing.py derives from the
committed load-test results, and the instructor guide's hosting table against the same figures."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "deploy"))
import sizing  # noqa: E402

VALUES = yaml.safe_load((REPO / "deploy/k8s/values.yaml").read_text())
CHART = REPO / "deploy/k8s/z2jh-4.4.0"  # the chart's defaults and schema


def test_values_parse_with_the_workshop_settings():
    hub = VALUES["hub"]["config"]
    # the names of one VM: deploy/vnetlab_hub.py mounted into the hub, importable from the path extraConfig adds
    assert hub["JupyterHub"]["authenticator_class"] == "vnetlab_hub.RoomAuthenticator"
    mounted = Path(VALUES["hub"]["extraFiles"]["vnetlab-hub"]["mountPath"])
    assert mounted.name == "vnetlab_hub.py"
    assert f'sys.path.insert(0, "{mounted.parent}")' in VALUES["hub"]["extraConfig"]["vnetlab-hub"]
    assert "--set-file hub.extraFiles.vnetlab-hub.stringData=deploy/vnetlab_hub.py" in (
        REPO / "deploy/k8s/values.yaml").read_text()
    assert hub["Authenticator"]["admin_users"] == ["instructor"]
    # source: deploy/README.md, idle culler: a server idle for an hour is stopped
    assert VALUES["cull"]["enabled"] and VALUES["cull"]["timeout"] == 3600
    assert VALUES["prePuller"]["hook"]["enabled"] and VALUES["prePuller"]["continuous"]["enabled"]



def test_values_pass_the_charts_schema():
    """As helm does before rendering: the chart's defaults with these values merged in, against the chart's
    values.schema.json (zero-to-jupyterhub 4.4.0, deploy/k8s/z2jh-4.4.0/)."""
    merged = merge(yaml.safe_load((CHART / "values.yaml").read_text()), VALUES)
    jsonschema.validate(merged, json.loads((CHART / "values.schema.json").read_text()))
    broken = merge(merged, {"singleuser": {"storage": {"static": {"subpath": "{username}"}}}})  # a misspelt key
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads((CHART / "values.schema.json").read_text()))


def test_the_server_opens_the_attendees_own_copy():
    """The copy is made before the server starts, never over an existing one; the server runs in it and it is
    JupyterLab's root; the start URL is notebook 00 in it. singleuser.cmd is run here by sh, as the container runs
    it, with a fake image and home."""
    single = VALUES["singleuser"]
    hub = VALUES["hub"]["config"]
    home = single["storage"]["homeMountPath"]
    assert hub["KubeSpawner"]["notebook_dir"] == f"{home}/vnetlab"
    assert hub["KubeSpawner"]["working_dir"] == home  # exists before the copy (a missing one is made empty)
    assert single["defaultUrl"] == "/lab/tree/00_welcome_and_map.ipynb"
    ran = run_cmd(single["cmd"])
    assert ran["cwd"] == "vnetlab", ran  # relative to the home: the server starts in the copy
    assert ran["copied"] and ran["glossary"], ran  # notebook 00 and the glossary its glossary.md links reach
    assert not ran["solved"], f"the instructors' solved copies reached the attendee's home: {ran['solved']}"
    assert ran["kept"], "a second start copied over the attendee's work"
    assert ran["args"] == ["--ip=0.0.0.0", "--port=8888"], ran  # the spawner's arguments reach the server


def test_storage_per_user_needs_no_disk_attached_per_user():
    """One ReadWriteMany volume, a folder per user: per-node disk-attach limits (tens of disks) never meet the
    users per node the README packs."""
    storage = VALUES["singleuser"]["storage"]
    assert storage["type"] == "static" and storage["static"]["pvcName"]
    assert storage["static"]["subPath"] == "{username}"  # KubeSpawner expands it per user
    readme = (REPO / "deploy/README.md").read_text()
    assert f"`{storage['static']['pvcName']}`" in readme and "ReadWriteMany" in readme


def merge(base: dict, over: dict) -> dict:
    """helm's merge of a values file into the chart's defaults: maps merged key by key, anything else replaced."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def run_cmd(cmd: list[str]) -> dict:
    """singleuser.cmd run by sh as the container would, the spawner's arguments appended, the image's repository
    at /srv/vnetlab faked by this one's notebooks/ (solved/ included, as the image has it), jupyterhub-singleuser by
    a script that reports where it started and with what; then started again over an edited notebook."""
    work = Path(tempfile.mkdtemp(prefix="vnetlab-k8s-"))
    try:
        home, srv, bin_ = work / "home", work / "srv/vnetlab/notebooks", work / "bin"
        home.mkdir()
        shutil.copytree(REPO / "notebooks", srv, ignore=shutil.ignore_patterns(".*"))
        bin_.mkdir()
        fake = bin_ / "jupyterhub-singleuser"
        fake.write_text('#!/bin/sh\n'
                        'printf \'{"cwd": "%s", "args": ["%s", "%s"]}\' "$PWD" "$1" "$2" > "$HOME/ran.json"\n')
        fake.chmod(0o755)
        script = [a.replace("/srv/vnetlab", str(work / "srv/vnetlab")) for a in cmd]
        env = dict(os.environ, HOME=str(home), PATH=f"{bin_}:{os.environ['PATH']}")
        subprocess.run([*script, "--ip=0.0.0.0", "--port=8888"], env=env, check=True, timeout=60, cwd=work)
        ran = json.loads((home / "ran.json").read_text())
        ran["cwd"] = str(Path(ran["cwd"]).relative_to(home))
        nb = home / "vnetlab/00_welcome_and_map.ipynb"
        ran["copied"], ran["glossary"] = nb.exists(), (home / "vnetlab/glossary.md").exists()
        ran["solved"] = sorted(p.name for p in (home / "vnetlab").rglob("*solved*"))
        ran["files"] = sorted(p.relative_to(home / "vnetlab").as_posix() for p in (home / "vnetlab").rglob("*"))
        nb.write_text("the attendee's work")
        subprocess.run([*script, "--ip=0.0.0.0", "--port=8888"], env=env, check=True, timeout=60, cwd=work)
        ran["kept"] = nb.read_text() == "the attendee's work"
        return ran
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
