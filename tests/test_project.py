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
    assert re.search(r"jupyter lab .*--config=jupyter-settings/jupyter_server_config\.py$", commands[0])
    assert "pytest" in commands[1]
    # both install the exact versions the tests pass with; the package itself adds nothing (--no-deps)
    assert "pip install -r requirements.lock && .venv/bin/pip install --no-deps -e ." in commands[0]
    assert "pip install -q -r requirements-test.lock && .venv/bin/pip install -q --no-deps -e ." in commands[1]


def test_the_open_command_config_lands_attendees_in_their_copies():
    # the file the open command passes: the repository root served (data/, lab/ cited by the notebooks open),
    # the start page the student copy of 00, JupyterLab's defaults from overrides.json next to it
    from traitlets.config.loader import PyFileConfigLoader

    settings = ROOT / "jupyter-settings"
    config = PyFileConfigLoader("jupyter_server_config.py", path=str(settings)).load_config()
    assert Path(config.ServerApp.root_dir) == ROOT
    assert config.LabApp.default_url == "/lab/tree/" + open_check.START_NOTEBOOK
    assert (ROOT / open_check.START_NOTEBOOK).exists()
    assert Path(config.LabApp.app_settings_dir) == settings
    import json

    overrides = json.loads((settings / "overrides.json").read_text())
    assert overrides[open_check.NOTIFICATION_SETTINGS] == open_check.NO_TOAST


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


# --------------------------------------------------------------------------------------------------
# The lock files (tools/lock.py): exact versions with hashes, resolved from pyproject.toml

LOCK_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)(?: ; (.+?))? \\\n"
                      r"((?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", re.M)


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock(name: str) -> dict[str, list[tuple[str, str | None, int]]]:
    """{package: [(version, marker, number of hashes)]}; a package may carry one pin per Python range."""
    text = (ROOT / name).read_text()
    pins: dict[str, list[tuple[str, str | None, int]]] = {}
    for m in LOCK_PIN.finditer(text):
        pins.setdefault(_canon(m[1]), []).append((m[2], m[3], m[4].count("--hash=sha256:")))
    # every requirement line is a pin with hashes (pip's --require-hashes mode accepts nothing else)
    requirement_lines = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    assert len(requirement_lines) == sum(len(v) for v in pins.values()), f"{name}: a line is not a hashed == pin"
    return pins


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _satisfied(lock: dict, spec: str, name: str) -> None:
    from packaging.requirements import Requirement

    req = Requirement(spec)
    pins = lock.get(_canon(req.name))
    assert pins, f"{name} lacks {req.name} ({spec})"
    for version, marker, hashes in pins:
        assert req.specifier.contains(version, prereleases=True), f"{name}: {req.name}=={version} breaks {spec}"
        assert hashes >= 1
        if req.marker:  # a platform-only dependency keeps its marker (pyroute2: Linux)
            assert marker and str(req.marker).replace('"', "'") in marker, f"{name}: {req.name} lost {req.marker}"


def test_workbook_lock_covers_pyproject_dependencies():
    project = _pyproject()
    lock = _lock("requirements.lock")
    for spec in [*project["project"]["dependencies"], *project["build-system"]["requires"]]:
        _satisfied(lock, spec, "requirements.lock")


def test_test_lock_covers_the_test_extra():
    project = _pyproject()
    lock = _lock("requirements-test.lock")
    for spec in [*project["project"]["dependencies"], *project["project"]["optional-dependencies"]["test"],
                 *project["build-system"]["requires"]]:
        _satisfied(lock, spec, "requirements-test.lock")


def test_the_two_locks_agree_on_every_version():
    # tools/lock.py resolves the workbook's lock inside the test lock: attendees get what the tests ran with
    workbook, test = _lock("requirements.lock"), _lock("requirements-test.lock")
    assert set(workbook) < set(test)
    for name, pins in workbook.items():
        assert sorted(p[:2] for p in pins) == sorted(p[:2] for p in test[name]), name
    assert "playwright" not in workbook and "pytest" in workbook  # nbval needs pytest; playwright is a test tool


def test_lock_files_name_their_command():
    for name in ("requirements.lock", "requirements-test.lock"):
        assert (ROOT / name).read_text().startswith("# Written by `python3 tools/lock.py` from pyproject.toml")


def test_this_environment_runs_the_locked_versions():
    # the README's test command installs requirements-test.lock, so the suite passes with exactly the lock's pins
    from importlib import metadata

    from packaging.markers import Marker

    build = {_canon(re.split(r"[<>=!~ ]", s, maxsplit=1)[0]) for s in _pyproject()["build-system"]["requires"]}
    wrong = {}
    for name, pins in _lock("requirements-test.lock").items():
        if name in build:
            continue  # setuptools/wheel: pip's isolated build environment, not necessarily this one
        here = [v for v, marker, _ in pins if marker is None or Marker(marker).evaluate()]
        if not here:
            continue  # another platform's package (appnope, pywinpty, ...)
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != here[0]:
            wrong[name] = (here[0], installed)
    assert not wrong, f"locked vs installed (re-run the README's test command, or `python3 tools/lock.py`): {wrong}"


def test_setup_pages_for_a_room_of_laptops():
    pages = {name: (ROOT / "docs" / "setup" / f"{name}.md").read_text() for name in ("README", "linux", "macos",
                                                                                       "windows")}
    open_command = _readme_commands()[0]
    assert open_command in pages["linux"]  # the tested path is the README's command itself
    assert open_command.replace("python3 -m venv", "python3.12 -m venv").replace(" --allow-root", "") in pages["macos"]
    offline = "pip install --no-index --find-links wheelhouse/ -r requirements.lock"
    assert all(offline in pages[n] for n in ("README", "linux", "macos"))
    assert "--no-index --find-links wheelhouse" in pages["windows"]
    assert "3.9" in pages["macos"] and "too old" in pages["macos"]  # the bundled /usr/bin/python3
    # the pages say what was not tested here
    for name in ("macos", "windows"):
        assert pages[name].startswith(f"# Set-up on {'macOS' if name == 'macos' else 'Windows'}")
        assert "Not tested here" in pages[name]
    spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "tools" / "wheelhouse.py")
    wheelhouse = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wheelhouse)
    assert "linux-x86_64" in pages["windows"] and "windows-amd64" in pages["windows"]
    assert {"linux-x86_64", "windows-amd64"} <= set(wheelhouse.TARGETS)


def test_wheelhouse_filters_the_lock_per_platform():
    # pip download would evaluate the markers on this machine: each laptop platform gets its own pins
    spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "tools" / "wheelhouse.py")
    wheelhouse = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wheelhouse)
    lock = (ROOT / "requirements.lock").read_text()

    def names(target, python="3.11.9"):
        text = wheelhouse.pins_for(lock, wheelhouse.TARGETS[target][1], python)
        return {line.split("==")[0] for line in text.splitlines() if "==" in line}

    assert "pyroute2" in names("linux-x86_64") and "pyroute2" not in names("macos-arm64")
    assert "appnope" in names("macos-arm64") and "appnope" not in names("linux-x86_64")
    assert "pywinpty" in names("windows-amd64") and "pexpect" not in names("windows-amd64")
    every = set(_lock("requirements.lock"))
    assert names("linux-x86_64") <= every and len(names("linux-x86_64")) >= len(every) - 10


def test_the_kept_venv_is_the_open_commands_copied_with_the_stamp_the_browser_tests_check(tmp_path):
    """tools/open_check.py --keep-venv (CI): a copy of the .venv the README's command made, symlinks kept (a venv's
    bin/python is one), stamped from the install command, requirements.lock and pyproject.toml; a changed lock
    changes the stamp, so tests/labharness.py builds a fresh venv instead of trusting a stale copy."""
    import hashlib
    import shutil

    root = tmp_path / "clone"
    root.mkdir()
    for name in ("README.md", "requirements.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / ".venv" / "bin" / "jupyter").write_text(f"#!{root / '.venv/bin/python'}\nimport sys\n")  # as pip writes
    dest = tmp_path / "artifacts" / "readme-venv"
    open_check.keep_venv(root, dest)
    assert (dest / "bin" / "python").is_symlink() and (dest / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
    # the copy's scripts run the copy's python, never the .venv the test command fills with the test lock
    assert (dest / "bin" / "jupyter").read_text() == f"#!{dest / 'bin/python'}\nimport sys\n"
    install = " && ".join(s for s in _readme_commands()[0].split(" && ") if "jupyter lab" not in s)
    expected = hashlib.sha256("\0".join([install, (ROOT / "requirements.lock").read_text(),
                                         (ROOT / "pyproject.toml").read_text()]).encode()).hexdigest()
    assert (dest / open_check.STAMP_NAME).read_text() == expected
    (root / "requirements.lock").write_text("changed\n")
    assert open_check.install_stamp(root) != expected


def test_every_test_sharing_the_machine_runs_in_its_group():
    """The suite's parallel groups (conftest.py at the top): a file with a hub or live test must be in that group,
    or two workers would start two hubs on one port, or one worker's namespaces would show in another's `ip netns
    list` comparison. Read from the test files' own marks."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("vnetlab_suite_groups", ROOT / "conftest.py")
    groups = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(groups)
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        for mark in ("hub", "live"):
            if f"pytest.mark.{mark}" in text:
                assert groups.group_of(f"tests/{path.name}::t") == mark, (path.name, mark)
    assert groups.group_of("tests/test_skb.py::test_x[a::b]") == "tests/test_skb.py"
    assert groups.group_of("notebooks/00_welcome_and_map.ipynb::Cell 3") == "notebooks/00_welcome_and_map.ipynb"
