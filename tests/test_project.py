"""The project's promises: two README commands, CI calls the test one, environment.yml mirrors pyproject."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", setup, re.S)]


def test_readme_has_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert "jupyter lab notebooks/" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert _readme_commands()[1] in ci.splitlines()
    assert ci.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in ci


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower()


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(s): s.replace(" ", "") for s in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted.update({_name(s): s.replace(" ", "") for s in extra})
    deps = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    env_lines = [l.strip()[2:] for l in deps.splitlines() if l.strip().startswith("- ")]
    env = {_name(s): s.replace(" ", "") for s in env_lines if s not in ("pip", "pip:", "-e .") and not s.startswith("python=")}
    assert env == wanted
