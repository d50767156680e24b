"""The project's promises: two README commands, CI checks the open one as root and as an ordinary user and calls
the test one verbatim, environment.yml mirrors pyproject."""

import importlib.util
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("open_check", ROOT / "tools" / "open_check.py")  # a script
open_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(open_check)


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, re.S)]


def test_readme_has_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert re.search(r"jupyter lab .*notebooks/$", commands[0])
    assert "pytest" in commands[1]


def test_open_command_starts_as_root():
    # jupyter_server's ServerApp.initialize refuses uid 0 unless allow_root is set ("Running as root is not
    # recommended. Use --allow-root to bypass."); containers, workshop VMs and CI run as root.
    assert "--allow-root" in _readme_commands()[0].split()


def test_ci_opens_the_workbook_as_root_and_as_an_ordinary_user():
    assert open_check.readme_commands() == _readme_commands()  # the script runs the README's command verbatim
    ci = (ROOT / ".ci" / "run").read_text()
    runs = [line for line in ci.splitlines() if "tools/open_check.py" in line and not line.lstrip().startswith("#")]
    assert len(runs) == 2
    user_run = next(r for r in runs if "cd '$user_home/vnetlab'" in r)
    assert "runuser -u \"$CI_USER\"" in ci and "useradd" in ci
    assert all("timeout" in r or "--timeout" in r for r in runs), runs
    assert ci.index(user_run) < ci.index(_readme_commands()[1])  # the user's copy is made before root's .venv


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert _readme_commands()[1] in ci.splitlines()
    assert ci.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in ci


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower()


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # environment markers (pyroute2 is Linux-only) do not exist in conda's spec; Binder's image is Linux
    wanted = {_name(s): s.split(";")[0].replace(" ", "") for s in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted.update({_name(s): s.split(";")[0].replace(" ", "") for s in extra})
    deps = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    env_lines = [line.strip()[2:] for line in deps.splitlines() if line.strip().startswith("- ")]
    env = {_name(s): s.replace(" ", "") for s in env_lines
           if s not in ("pip", "pip:", "-e .") and not s.startswith("python=")}
    assert env == wanted
