"""One-patch kernels: Debian's own kernel source, the lab's small config, and exactly one change per pair.

A build is named ``<base>-<variant>`` (``5.10-plain``, ``5.10-2e4ef10f5850``, ``6.1-no-build-skb``, ...). The
source is the ``linux-source-X`` package of the suite the stock kernel comes from (Debian's patches already
applied), fetched through lab/debian.py's private apt configuration. Every build of a base uses the same
``.config`` (``make tinyconfig`` + lab/configs/lab.config + ``make olddefconfig``), so the patches in
lab/patches/ are the only difference inside a pair. All variants of a base are built in one tree, in place: the
lab's patches are reversed or applied (``patch [-R] -p1``) to reach the variant's set, so make rebuilds only
what the patches touch; each variant's bzImage, vmlinux and .config are copied to ``products/<variant>/``.

Trees and products live under ``lab/work/build/`` (git-ignored); ``build.json`` of each variant records the source
package and version, the patches with their sha256, the config fragment and the .config sha256, the compiler
and the build time. Builds run as ``nice -n 19 make -j2``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from lab.debian import Apt, Suite, deb_field, unpack
from lab.util import log, sh
from vnetlab import labkernels
from vnetlab.labkernels import LabKernel

LAB = Path(__file__).resolve().parent
CONFIG_FRAGMENT = LAB / "configs" / "lab.config"
PATCHES = LAB / "patches"
BUILD_TIMEOUT = 4 * 3600


#: The one-patch builds of the one catalogue (vnetlab.labkernels): name -> its LabKernel (base, parent,
#: patches, description).
VARIANTS: dict[str, LabKernel] = {kid: labkernels.lab_kernel(kid) for kid in labkernels.built_ids()}


def build_root(work: Path) -> Path:
    return work.resolve() / "build"


def tree_of(base: str, work: Path) -> Path:
    """The one source tree per base: every variant of a base is built in it, in place, so make rebuilds
    only what a patch touches (a copied tree rebuilds almost everything: objtool and the .cmd files record
    absolute paths)."""
    return build_root(work) / f"{base}-plain"


def products_of(name: str, work: Path) -> Path:
    return build_root(work) / "products" / name


def source_package(base: str, work: Path) -> tuple[Path, str, str]:
    """(tarball, package, version) of Debian's linux-source-<base> for the stock kernel's suite."""
    stock = labkernels.lab_kernel(base)
    suite = Suite(stock.suite, stock.archive)
    pkg = f"linux-source-{base}"
    deb = Apt(suite, work).download(pkg, work / "debs" / suite.name)
    tree = work / "srcdeb"
    tarball = tree / "usr" / "src" / f"{pkg}.tar.xz"
    unpack(deb, tree, tarball)
    return tarball, pkg, deb_field(deb, "Version")


def fresh_tree(base: str, work: Path, dest: Path) -> dict:
    tarball, pkg, version = source_package(base, work)
    log(f"tar -xf {tarball.name} -> {dest}")
    tmp = dest.parent / f".{dest.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    sh(["tar", "-xf", str(tarball), "-C", str(tmp)], timeout=1800)
    (sub,) = list(tmp.iterdir())
    sub.rename(dest)
    tmp.rmdir()
    return {"package": pkg, "version": version}


def configure(tree: Path) -> str:
    """tinyconfig + the lab fragment + olddefconfig; every fragment line must survive. Returns the .config sha256."""
    make = ["nice", "-n", "19", "make", "-C", str(tree)]
    sh(make + ["tinyconfig"], timeout=600)
    sh(["bash", str(tree / "scripts" / "kconfig" / "merge_config.sh"), "-m", "-O", str(tree),
        str(tree / ".config"), str(CONFIG_FRAGMENT)], cwd=tree, timeout=600)
    sh(make + ["olddefconfig"], timeout=600)
    have = (tree / ".config").read_text()
    missing = [line for line in CONFIG_FRAGMENT.read_text().splitlines()
               if line.startswith("CONFIG_") and line not in have.splitlines()]
    if missing:
        raise SystemExit(f"{tree}: olddefconfig dropped {missing}")
    return hashlib.sha256(have.encode()).hexdigest()


def _applied(tree: Path) -> list[str]:
    state = tree / ".lab-patches.json"
    return json.loads(state.read_text()) if state.exists() else []


def set_patches(tree: Path, wanted: tuple[str, ...]) -> None:
    """Bring the tree to exactly ``wanted`` (in order): reverse what differs, then apply what is missing."""
    applied = _applied(tree)
    keep = 0
    while keep < min(len(applied), len(wanted)) and applied[keep] == wanted[keep]:
        keep += 1
    for p in reversed(applied[keep:]):
        log(f"patch -R -p1 < lab/patches/{p} ({tree.name})")
        sh(["patch", "-R", "-p1", "--no-backup-if-mismatch", "-i", str(PATCHES / p)], cwd=tree, timeout=120)
        applied.pop()
        (tree / ".lab-patches.json").write_text(json.dumps(applied))
    for p in wanted[keep:]:
        log(f"patch -p1 < lab/patches/{p} ({tree.name})")
        sh(["patch", "-p1", "--forward", "--no-backup-if-mismatch", "-i", str(PATCHES / p)], cwd=tree, timeout=120)
        applied.append(p)
        (tree / ".lab-patches.json").write_text(json.dumps(applied))


def compiler() -> str:
    return sh(["gcc", "--version"]).stdout.splitlines()[0]


def build(name: str, work: Path, *, jobs: int = 2) -> dict:
    """Build (or reuse) one variant; returns its build.json record. Products: bzImage, vmlinux, .config."""
    v = VARIANTS[name]
    out = products_of(name, work)
    record_path = out / "build.json"
    patches = [_patch_record(p) for p in v.all_patches]
    if record_path.exists():
        rec = json.loads(record_path.read_text())
        if rec.get("patches") == patches and (out / "bzImage").exists():
            return rec
    tree = tree_of(v.base, work)
    t0 = time.monotonic()
    src_record = tree / ".lab-source.json"
    fragment_sha = hashlib.sha256(CONFIG_FRAGMENT.read_bytes()).hexdigest()
    if not src_record.exists() or not (tree / ".config").exists() \
            or json.loads(src_record.read_text()).get("config_fragment_sha256") != fragment_sha:
        shutil.rmtree(tree, ignore_errors=True)
        tree.parent.mkdir(parents=True, exist_ok=True)
        source = fresh_tree(v.base, work, tree)
        source["config_sha256"] = configure(tree)
        source["config_fragment_sha256"] = fragment_sha
        src_record.write_text(json.dumps(source))
    source = json.loads(src_record.read_text())
    set_patches(tree, v.all_patches)
    log(f"nice -n 19 make -j{jobs} bzImage ({name}); log in {out / 'build.log'}")
    out.mkdir(parents=True, exist_ok=True)
    t_make = time.monotonic()
    with open(out / "build.log", "w") as logf:
        p = subprocess.run(["nice", "-n", "19", "make", f"-j{jobs}", "bzImage"], cwd=tree, stdout=logf,
                           stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT)
    if p.returncode:
        raise SystemExit(f"build of {name} failed; see {out / 'build.log'}")
    make_secs = time.monotonic() - t_make
    config_sha = hashlib.sha256((tree / ".config").read_bytes()).hexdigest()
    if config_sha != source["config_sha256"]:
        raise SystemExit(f"{name}: .config changed since the tree was configured")
    for f, dest in (("arch/x86/boot/bzImage", "bzImage"), ("vmlinux", "vmlinux"), (".config", "config"),
                    ("System.map", "System.map")):
        shutil.copy2(tree / f, out / dest)
    release = (tree / "include" / "config" / "kernel.release").read_text().strip()
    rec = {
        "name": name, "base": v.base, "description": v.description,
        "source": {"package": source["package"], "version": source["version"]},
        "patches": patches,
        "config_fragment": "lab/configs/lab.config",
        "config_fragment_sha256": source["config_fragment_sha256"],
        "config_sha256": config_sha, "compiler": compiler(), "release": release,
        "bzImage": "bzImage", "vmlinux": "vmlinux",
        "build_seconds": round(time.monotonic() - t0, 1), "make_seconds": round(make_secs, 1),
        "make": f"nice -n 19 make -j{jobs} bzImage (in place, after the previous variant of the same tree)",
        "host_cpus": os.cpu_count(),
    }
    record_path.write_text(json.dumps(rec, indent=1) + "\n")
    log(f"built {name} ({release}) in {rec['build_seconds']:.0f} s")
    return rec


def _patch_record(patch: str) -> dict:
    text = (PATCHES / patch).read_bytes()
    subject = next((line[len("Subject: "):] for line in text.decode(errors="replace").splitlines()
                    if line.startswith("Subject: ")), patch)
    return {"file": f"lab/patches/{patch}", "sha256": hashlib.sha256(text).hexdigest(), "subject": subject}


def kernel_files(name: str, work: Path) -> dict:
    """What lab/run.py boots for a built variant: bzImage, vmlinux (BTF) and the build record."""
    tree = products_of(name, work)
    rec = json.loads((tree / "build.json").read_text())
    return {"kind": "built", "id": name, "package": rec["source"]["package"],
            "package_version": rec["source"]["version"], "release": rec["release"],
            "vmlinuz": tree / rec["bzImage"], "vmlinux": tree / rec["vmlinux"], "moddir": None,
            "build": rec}


def main_build(names: list[str], work: Path) -> int:
    for n in names:
        if n not in VARIANTS:
            raise SystemExit(f"unknown build {n!r}; known: {', '.join(VARIANTS)}")
    for n in names:
        build(n, work)
    return 0

