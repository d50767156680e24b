"""Attendees never reach the instructors' solved copies.

Every way an attendee gets the workbook (the README's open command and the server config it passes, a hub's copy
into each home, the Kubernetes values, the Binder link) lands on and copies only the attendees' copies
``notebooks/NN_name.ipynb`` and the glossary, never ``notebooks/solved/``; and every notebook file that holds
solutions is named ``*-solved.ipynb``, so a JupyterLab tab of one says so (tools/nbtools.py writes them)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest
import test_k8s_values
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOLVED = NOTEBOOKS / "solved"
ATTENDEE = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
README = (ROOT / "README.md").read_text()
HUB_PREFIX = Path(os.environ.get("VNETLAB_HUB_PREFIX", ROOT / ".hub"))  # as tests/test_hub.py finds the hub

_spec = importlib.util.spec_from_file_location("open_check", ROOT / "tools" / "open_check.py")  # a script
open_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(open_check)


def holds_solutions(path: Path) -> bool:
    """A notebook file holds solutions: an exercise cell that is more than ``NAME = None`` (the attendees'
    placeholder), or the solved-copy banner (a cell tagged ``solved``)."""
    for cell in json.loads(path.read_text())["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "solved" in tags:
            return True
        if "exercise" in tags:
            body = ast.parse("".join(cell["source"])).body
            placeholder = (len(body) == 1 and isinstance(body[0], ast.Assign)
                           and isinstance(body[0].value, ast.Constant) and body[0].value.value is None)
            if not placeholder:
                return True
    return False


def notebook_files() -> list[Path]:
    """Every notebook file of the repository where notebooks live (the workbook and the tests' golden copies)."""
    return sorted(p for d in ("notebooks", "tests") for p in (ROOT / d).rglob("*.ipynb")
                  if not any(part.startswith(".") for part in p.relative_to(ROOT).parts))


def is_attendee_copy(rel: str) -> bool:
    """``rel`` (relative to the repository) is one of the attendees' copies: notebooks/NN_name.ipynb."""
    return (ROOT / rel).resolve() in {p.resolve() for p in ATTENDEE}


def test_every_file_with_solutions_is_named_solved_and_only_those():
    files = notebook_files()
    assert len([p for p in files if p.parent == SOLVED]) == len(ATTENDEE) > 0
    wrong = [(p.relative_to(ROOT).as_posix(), holds_solutions(p)) for p in files
             if holds_solutions(p) != p.name.endswith("-solved.ipynb")]
    assert not wrong, f"(file, holds solutions) named against what it holds: {wrong}"
    assert all(p.name.endswith("-solved.ipynb") for p in SOLVED.iterdir() if p.suffix == ".ipynb")
    # one solved copy per attendees' copy, and the other way round
    assert {p.name.removesuffix("-solved.ipynb") for p in SOLVED.glob("*.ipynb")} == {p.stem for p in ATTENDEE}


def test_holds_solutions_tells_a_solved_copy_from_an_attendees_copy(tmp_path):
    """The check above can fail: a placeholder exercise is no solution, an answered one is."""
    def notebook(source: str, tags: list[str]) -> Path:
        path = tmp_path / f"nb{len(list(tmp_path.iterdir()))}.ipynb"
        cell = {"cell_type": "code", "source": source, "metadata": {"tags": tags}, "outputs": []}
        path.write_text(json.dumps({"cells": [cell]}))
        return path

    assert not holds_solutions(notebook("answer = None  # your answer here\n", ["exercise"]))
    assert holds_solutions(notebook("answer = 1472\n", ["exercise"]))
    assert holds_solutions(notebook("> **Instructor copy, solved.**", ["solved"]))


def test_the_open_command_lands_on_an_attendees_copy():
    """The README's open command passes jupyter-settings/jupyter_server_config.py and overrides nothing of its
    start page; the start page is an attendees' copy, the one the README names and tools/open_check.py checks."""
    open_command = open_check.readme_commands()[0]
    assert "--config=jupyter-settings/jupyter_server_config.py" in open_command
    assert "default_url" not in open_command and "solved" not in open_command
    c = Config()
    config = ROOT / "jupyter-settings" / "jupyter_server_config.py"
    exec(compile(config.read_text(), str(config), "exec"), {"get_config": lambda: c, "__file__": str(config)})
    start = c.LabApp.default_url.removeprefix("/lab/tree/")
    assert start == open_check.START_NOTEBOOK and is_attendee_copy(start), start
    assert f"opens `{start}`" in README  # what the README says it opens


def test_the_binder_link_opens_an_attendees_copy():
    links = re.findall(r"https://mybinder\.org/v2/gh/\S+?\?urlpath=lab/tree/([^)\s`]+)", README)
    assert links and all(is_attendee_copy(p) for p in links), links


def _hub_module():
    """deploy/vnetlab_hub.py with the installed hub's packages (jupyterhub is not a test dependency)."""
    site = next(iter((HUB_PREFIX / "hub/lib").glob("python3*/site-packages")), None)
    if site is None:
        pytest.skip(f"the hub is not installed in {HUB_PREFIX} (deploy/hub.sh install; .ci/run does)")
    for p in (str(site), str(ROOT / "deploy")):
        if p not in sys.path:
            sys.path.append(p)
    import vnetlab_hub

    return vnetlab_hub


def test_a_hub_home_gets_the_attendees_copies_only(tmp_path):
    """What deploy/jupyterhub_config.py hands the spawner, copied as the spawner copies it: the attendees' copies
    and the glossary, nothing of solved/; the start page is notebook 00 in that copy."""
    text = (ROOT / "deploy" / "jupyterhub_config.py").read_text()
    src = re.search(r'^c\.WorkshopSpawner\.notebooks_src = str\(REPO / "([^"]+)"\)', text, re.M)[1]
    assert (ROOT / src).resolve() == NOTEBOOKS.resolve(), src
    start = re.search(r'^c\.Spawner\.default_url = "/lab/tree/([^"]+)"', text, re.M)[1]
    vnetlab_hub = _hub_module()
    home = tmp_path / "vnetlab"
    assert vnetlab_hub.copy_notebooks_once(ROOT / src, home, os.getuid(), os.getgid())
    got = sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))
    assert got == sorted([*(p.name for p in ATTENDEE), "glossary.md"]), got
    assert not [p for p in home.rglob("*.ipynb") if holds_solutions(p)]
    assert (home / start).is_file() and is_attendee_copy(f"notebooks/{start}"), start


def test_a_kubernetes_home_gets_the_attendees_copies_only():
    """deploy/k8s/values.yaml's singleuser.cmd run by sh over a copy of notebooks/ with solved/ in it."""
    ran = test_k8s_values.run_cmd(test_k8s_values.VALUES["singleuser"]["cmd"])
    assert ran["copied"] and not ran["solved"], ran
    assert ran["files"] == sorted([*(p.name for p in ATTENDEE), "glossary.md"]), ran["files"]
    start = test_k8s_values.VALUES["singleuser"]["defaultUrl"].removeprefix("/lab/tree/")
    assert is_attendee_copy(f"notebooks/{start}"), start
