"""Binder / repo2docker: the files it reads are coherent, so a workshop can launch the workbook in a browser.

repo2docker picks the conda buildpack for the root environment.yml (a binder/ or .binder/ folder, or a
Dockerfile, would take precedence and hide it). With a local pip reference such as ``-e .`` in the env's pip
part, repo2docker copies the whole repository in before it builds the env, so the package installs from the
repository itself; no postBuild is needed for that.
"""

import os
import re
import tomllib
from pathlib import Path

import yaml  # PyYAML: jupyterlab -> jupyter_server -> jupyter_events needs it, so it is always installed

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _pip_part(env: dict) -> list[str]:
    parts = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(parts) == 1, "environment.yml needs exactly one pip: part"
    return parts[0]


def test_nothing_hides_the_root_environment_yml():
    for name in ("binder", ".binder"):
        assert not (ROOT / name).exists(), f"{name}/ would make repo2docker ignore the root environment.yml"
    assert not (ROOT / "Dockerfile").exists(), "a Dockerfile would make repo2docker ignore environment.yml"


def test_environment_installs_the_package_from_the_repository():
    local = [line for line in _pip_part(_env()) if re.fullmatch(r"-e\s+\.", line.strip())]
    assert local, "the pip: part must install the repository itself (-e .)"


def test_environment_python_satisfies_requires_python():
    env = _env()
    pythons = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python=")]
    assert len(pythons) == 1
    version = tuple(int(x) for x in pythons[0].split("=", 1)[1].split(".")[:2])
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = tuple(int(x) for x in re.fullmatch(r">=\s*(\d+)\.(\d+)", requires).groups())
    assert version >= minimum
    assert env["channels"] == ["conda-forge"]
    assert "pip" in env["dependencies"], "conda needs pip itself in the env to run the pip: part"


def test_environment_has_the_workbook_frontend():
    names = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0] for d in _env()["dependencies"] if isinstance(d, str)}
    assert {"jupyterlab", "ipywidgets"} <= names


def test_post_build_if_any_is_an_executable_script():
    for name in ("postBuild", "start"):
        path = ROOT / name
        if path.exists():
            assert os.access(path, os.X_OK), f"{name} must be executable"
            assert path.read_text().startswith("#!"), f"{name} needs a shebang line"


START = "notebooks/00_welcome_and_map.ipynb"  # the attendees' copy: exercises as placeholders


def _binder_links() -> list[str]:
    return re.findall(r"https://mybinder\.org/v2/gh/[^\s)\]]+", (ROOT / "README.md").read_text())


def test_readme_binder_link_opens_the_student_copy():
    links = _binder_links()
    assert links, "README.md has no Binder link (badge recipe)"
    for link in links:
        path = re.fullmatch(r"https://mybinder\.org/v2/gh/[^/]+/[^/]+/[^?]+\?urlpath=lab/tree/(\S+)", link)
        assert path, f"{link}: expected .../v2/gh/OWNER/REPO/REF?urlpath=lab/tree/PATH"
        assert path[1] == START, f"{link} opens {path[1]}, not the student copy {START}"
        assert (ROOT / path[1]).exists()


def test_readme_says_whether_the_public_url_is_known():
    # no git remote here: the badge is a recipe with OWNER/REPO, and the README says so instead of inventing one
    for link in _binder_links():
        if "/gh/OWNER/REPO/" in link:
            assert "no public URL" in (ROOT / "README.md").read_text()


def test_post_build_installs_the_open_commands_lab_defaults():
    # the same overrides file as the README's open command (no news toast), copied into the image's JupyterLab
    script = (ROOT / "postBuild").read_text()
    assert "jupyter-settings/overrides.json" in script and "share/jupyter/lab/settings" in script
    assert (ROOT / "jupyter-settings" / "overrides.json").exists()
