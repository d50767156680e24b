"""``python -m lab profile TREE [--kernel ID] [--compare] [--write]``: a kernel's whole profile from its source tree.

TREE is a kernel source directory, or a Debian ``linux-source-X.Y_*.deb`` (only the files the probes read,
lab.probes.FILES, are taken out of it, under lab/work/trees/<version>/). Every rule of data/kernels.toml and
data/gro.toml comes from a probe in lab.probes (value, and the file:line and line it matched); the NETIF_F tables
of data/netdev_features.toml come from lab.kernelsrc. Rules no probe decides (lab.probes.HAND_WRITTEN) keep the
committed value and say so with ``probe = "none: <why>"``.

Without options it prints the TOML sections. ``--compare`` prints where the committed profile ID and the tree
disagree and exits 1 if they do. ``--write`` puts the sections into data/*.toml (replacing profile ID's). A probe
that cannot decide its rule (the code no longer has the form it reads) is printed as ``undecided: ...`` and the
command exits 2: ``--compare`` never agrees and ``--write`` writes nothing. A bad argument exits 2 too.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from lab import csyntax, kernelsrc
from lab.probes import FILES, HAND_WRITTEN, PROBES, NotApplicable, ProbeError, Tree
from vnetlab.tables import parse_table

DATA = Path(__file__).resolve().parent.parent / "data"
WORK = Path(__file__).resolve().parent / "work"


def extract(deb: Path, dest: Path = WORK / "trees") -> Path:
    """The tree inside a linux-source .deb, with only lab.probes.FILES (and the Debian changelog) unpacked."""
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\./(usr/src/(linux-source-[\d.]+)\.tar\.xz)", listing)
    if not m:
        raise SystemExit(f"{deb} holds no usr/src/linux-source-*.tar.xz")
    member, top = m.group(1), m.group(2)
    version = re.search(r"_([^_]+)_all\.deb$", deb.name)
    out = dest / (version.group(1).split("-")[0] if version else top)
    tree = out / top
    if (tree / "Makefile").exists():
        return tree
    out.mkdir(parents=True, exist_ok=True)
    names = [f"{top}/{f}" for f in FILES]
    fsys = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    inner = subprocess.Popen(["tar", "-xO", f"./{member}"], stdin=fsys.stdout, stdout=subprocess.PIPE)
    # tar exits non-zero for members a version does not have (vxlan.c vs vxlan/vxlan_core.c): that is expected
    subprocess.run(["tar", "-xJ", "-C", str(out), "--ignore-failed-read", *names], stdin=inner.stdout,
                   stderr=subprocess.DEVNULL, timeout=900)
    fsys.wait()
    inner.wait()
    fsys = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    log = subprocess.run(["tar", "-xO", "--wildcards", "./usr/share/doc/*/changelog.Debian.gz"], stdin=fsys.stdout,
                         capture_output=True, timeout=300).stdout
    fsys.wait()
    (tree / "changelog.Debian.gz").write_bytes(log)
    if not (tree / "Makefile").exists():
        raise SystemExit(f"extracting {deb} gave no {tree}/Makefile")
    return tree


def _committed(table: str) -> dict[str, dict[str, Any]]:
    return tomllib.loads((DATA / f"{table}.toml").read_text())


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _needs(rule: str, rules: dict[str, Any]) -> bool:
    """Whether the model reads hand-written ``rule`` for a kernel with these probed rules."""
    if rule == "sk_buff_size_64":
        return True  # vnetlab.profiles.arch: a kernel's own sizeof(struct sk_buff) beats the arch default
    if rule == "small_head_request":
        return rules.get("napi_head", {}).get("value") == "small_head_cache"  # vnetlab.rx.small_head_cache_size
    return False


def btf_size(vmlinux: Path, struct: str, label: str) -> dict[str, Any]:
    """sizeof(struct) from the BTF of a kernel image's vmlinux (or /sys/kernel/btf/vmlinux), read with pahole.
    A vmlinuz (bzImage, e.g. Debian's linux-binary-*/usr/lib/modules/<release>/vmlinuz) is decompressed first."""
    release = sorted(vmlinux.resolve().parent.glob("usr/lib/modules/*/vmlinuz"))
    image = f"the {release[0].parent.name} image's vmlinux" if release else str(vmlinux)
    if vmlinux.name.startswith("vmlinuz") and vmlinux.read_bytes()[:4] != b"\x7fELF":
        from lab.kernels import extract_vmlinux

        image = f"the {vmlinux.parent.name} image's vmlinux (from its vmlinuz)"
        vmlinux = extract_vmlinux(vmlinux, WORK / f"vmlinux-{vmlinux.parent.name}")
    out = subprocess.run(["pahole", "-C", struct, str(vmlinux)], capture_output=True, text=True, timeout=300,
                         errors="replace").stdout
    m = re.search(r"/\* size: (\d+),", out)
    if not m:
        raise SystemExit(f"pahole found no struct {struct} in {vmlinux}")
    return {"value": int(m.group(1)), "source": f"BTF of {image} (the binary package built from {label}), "
                                                f"pahole -C {struct}: /* size: {m.group(1)} */"}


class Undecided(Exception):
    """Probes that could not decide their rule from the tree: no value of theirs may be written or agreed with."""

    def __init__(self, errors: list[ProbeError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


def derive(tree: Tree, kernel_id: str, btf: Path | None = None,
           undecided: list[ProbeError] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """{table: {section: {rule: {"value", "source"[, "probe"]}}}} for profile ``kernel_id`` from ``tree``.

    A probe that cannot decide its rule leaves it out and is appended to ``undecided``; without that list the
    first one raises :class:`Undecided`."""
    out: dict[str, dict[str, dict[str, Any]]] = {"kernels": {kernel_id: {}}, "gro": {kernel_id: {}}}
    errors: list[ProbeError] = []
    for probe in PROBES:
        try:
            f = probe.run(tree)
        except NotApplicable:
            continue  # the rule does not exist in this kernel (config MAX_SKB_FRAGS before 6.3)
        except ProbeError as e:
            errors.append(e)
            continue
        out[probe.table][kernel_id][probe.rule] = {"value": f.value, "source": f.source(tree.label)}
    if errors and undecided is None:
        raise Undecided(errors)
    if undecided is not None:
        undecided.extend(errors)
    committed = _committed("kernels")
    old = committed.get(kernel_id, {})
    if "released" in old:
        # the date names the release the profile models (a kernel.org tag or a Debian upload), kept as committed
        out["kernels"][kernel_id]["released"] = old["released"]
    for rule, why in HAND_WRITTEN.items():
        if rule == "sk_buff_size_64" and btf is not None:
            out["kernels"][kernel_id][rule] = btf_size(btf, "sk_buff", tree.label)
        elif rule in old:
            out["kernels"][kernel_id][rule] = {**old[rule], "probe": f"none: {why}"}
        elif rule in out["kernels"][kernel_id] or not _needs(rule, out["kernels"][kernel_id]):
            continue
        else:
            # not decidable and not yet committed: the nearest older profile's value, said so
            donors = [k for k in committed if k != "meta" and rule in committed[k] and k != kernel_id
                      and "probe" not in committed[k][rule] and _key(k)[:2] == _key(tree.version)[:2]
                      and _key(k) <= _key(tree.version)]
            if not donors:
                continue
            donor = max(donors, key=_key)
            leaf = committed[donor][rule]
            out["kernels"][kernel_id][rule] = {
                "value": leaf["value"], "source": f"taken from profile {donor} ({leaf['source']})",
                "probe": f"none: {why}; not yet read for {tree.label}"}
    feats: dict[str, dict[str, Any]] = {}
    for suffix, values in kernelsrc.read_tree(tree.root).items():
        sec = {}
        for name, v in values.items():
            src = kernelsrc.SOURCES[suffix].format(name=name) + f", {tree.label}"
            sec[name] = {"value": v, "source": src}
        feats[f"{kernel_id}{suffix}"] = sec
    out["netdev_features"] = feats
    out["arches"] = derive_arches(tree)
    return out


def derive_arches(tree: Tree) -> dict[str, dict[str, Any]]:
    """Each committed arch profile with what the tree decides replaced, the rest marked hand-written."""
    from lab.probes import ARCH_CONFIG, ARCH_HAND_WRITTEN, arch_findings

    committed = _committed("arches")
    out: dict[str, dict[str, Any]] = {}
    for arch, body in committed.items():
        if arch == "meta":
            continue
        sec = {k: dict(v) for k, v in body.items()}
        for f in arch_findings(tree, arch):
            sec[f.rule] = {"value": f.value, "source": f.source(tree.label)}
        for field, leaf in sec.items():
            why = ARCH_HAND_WRITTEN.get(field) or ARCH_CONFIG.get((arch, field))
            if why and "probe" not in leaf and not any(f.rule == field for f in arch_findings(tree, arch)):
                leaf["probe"] = f"none: {why}"
        out[arch] = sec
    return out


def feature_base(kernel_id: str, version: str) -> str | None:
    """The profile a new feature table is written against: the committed one's _base, else the nearest older."""
    committed = _committed("netdev_features")
    if kernel_id in committed:
        return committed[kernel_id].get("_base", {}).get("value")
    older = [k for k in committed if k != "meta" and k.replace(".", "").isdigit() and _key(k) < _key(version)]
    return max(older, key=_key) if older else None


def as_changes(feats: dict[str, dict[str, Any]], kernel_id: str, base: str | None) -> dict[str, dict[str, Any]]:
    """Whole feature sections -> only what moved from ``base`` (data/netdev_features.toml's form)."""
    if base is None:
        return feats
    tables = parse_table("netdev_features", (DATA / "netdev_features.toml").read_text())  # expanded sections
    out: dict[str, dict[str, Any]] = {}
    for suffix in ("", ".ethtool", ".masks", ".skb_gso"):
        whole = feats[f"{kernel_id}{suffix}"]
        have = {n: (v, "") for n, v in tables[f"{base}{suffix}"].values.items()}
        sec: dict[str, Any] = {}
        if suffix == "":
            sec["_base"] = {"value": base, "source": f"the kernel profile {kernel_id} is read against: only what "
                                                     f"moved from {base} is listed"}
        for name, leaf in whole.items():
            old = have.get(name, (None,))[0]
            same = sorted(old) == sorted(leaf["value"]) if isinstance(old, list) and isinstance(leaf["value"], list) \
                else old == leaf["value"]
            if not same:
                sec[name] = leaf
        anysrc = next(iter(whole.values()))["source"] if whole else kernel_id
        for name in have:
            if name not in whole:
                sec[name] = {"value": False, "source": f"absent from {kernel_id} (read as: {anysrc})"}
        out[f"{kernel_id}{suffix}"] = sec
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")


def section_text(name: str, body: dict[str, dict[str, Any]]) -> str:
    lines = [f'["{name}"]']
    for rule, leaf in body.items():
        lines.append(f"{rule} = {_toml_value(leaf)}")
    return "\n".join(lines) + "\n"


def write_sections(table: str, sections: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Replace (or append) each section in data/<table>.toml, keeping everything else byte for byte."""
    path = DATA / f"{table}.toml"
    text = path.read_text()
    for name, body in sections.items():
        new = section_text(name, body)
        m = re.search(rf'^\[("?){re.escape(name)}\1\]\n(?:(?!\[).*\n|\n)*?(?=^\[|\Z)', text, re.M)
        if m:
            text = text[:m.start()] + new + "\n" + text[m.end():].lstrip("\n")
        else:
            text = text.rstrip("\n") + "\n\n" + new
    tomllib.loads(text)  # never write a file the loader would refuse
    path.write_text(text)


def compare(derived: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    diffs = []
    for table, sections in derived.items():
        committed = _committed(table)
        expanded = parse_table(table, (DATA / f"{table}.toml").read_text())  # netdev_features: whole sections
        for name, body in sections.items():
            have = committed.get(name)
            if have is not None and name in expanded:
                have = {n: {"value": v} for n, v in expanded[name].values.items()}
            if have is None:
                diffs.append(f"data/{table}.toml has no [{name}]")
                continue
            for rule in sorted(set(body) | set(have)):
                a = body.get(rule, {}).get("value")
                b = have.get(rule, {}).get("value")
                if isinstance(a, list) and isinstance(b, list) and table == "netdev_features":
                    a, b = sorted(a), sorted(b)
                if a != b:
                    where = body[rule]["source"] if rule in body else "(no probe in the tree)"
                    diffs.append(f"[{name}].{rule}: tree {a!r}, committed {b!r}  <- {where}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab profile", description=__doc__.splitlines()[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("tree", type=Path, help="kernel source directory or a linux-source-X.Y .deb")
    ap.add_argument("--kernel", help="profile id (default: the tree's version, e.g. 7.3.4)")
    ap.add_argument("--compare", action="store_true", help="report where the committed profile and the tree disagree")
    ap.add_argument("--write", action="store_true", help="write the sections into data/*.toml")
    ap.add_argument("--btf", type=Path,
                    help="the kernel image's vmlinux or vmlinuz (its BTF gives sizeof(struct sk_buff))")


class ArgumentProblem(Exception):
    """A command-line argument python -m lab profile cannot use (exit 2, as argparse's own errors)."""


_KERNEL_ID = re.compile(r"\d+\.\d+(\.\d+)?(-[a-z0-9-]+)?")


def check_arguments(a: argparse.Namespace) -> None:
    """Each argument names something that exists and is of the kind it should be, before any work."""
    if not a.tree.exists():
        raise ArgumentProblem(f"TREE {a.tree}: no such file or directory (a kernel source directory, or a "
                              "linux-source-X.Y_*.deb)")
    if a.tree.is_file() and a.tree.suffix != ".deb":
        raise ArgumentProblem(f"TREE {a.tree}: a file that is not a .deb (expected a kernel source directory, or a "
                              "linux-source-X.Y_*.deb)")
    if a.tree.is_dir() and not (a.tree / "Makefile").is_file():
        raise ArgumentProblem(f"TREE {a.tree}: not a kernel source tree (no top-level Makefile with VERSION, "
                              "PATCHLEVEL, SUBLEVEL)")
    if a.kernel is not None and not _KERNEL_ID.fullmatch(a.kernel):
        raise ArgumentProblem(f"--kernel {a.kernel!r}: a profile id is a kernel version, X.Y or X.Y.Z (e.g. 6.12.117)")
    if a.btf is not None and not a.btf.is_file():
        raise ArgumentProblem(f"--btf {a.btf}: no such file (the kernel image's vmlinux or vmlinuz)")
    if a.compare and a.write:
        raise ArgumentProblem("--compare and --write: one at a time (compare first, then write)")


def run(a: argparse.Namespace) -> int:
    t0 = time.monotonic()
    try:
        check_arguments(a)
        try:
            root = extract(a.tree) if a.tree.suffix == ".deb" else a.tree
        except subprocess.CalledProcessError as e:
            raise ArgumentProblem(f"TREE {a.tree}: dpkg-deb cannot read it ({(e.stderr or '').strip() or e})") from None
        except SystemExit as e:  # extract's own message: the .deb holds no kernel source
            raise ArgumentProblem(f"TREE {a.tree}: {e}") from None
        tree = Tree(root)
        kernel_id = a.kernel or tree.version
        tree.label  # noqa: B018 (reads VERSION/PATCHLEVEL/SUBLEVEL now: a Makefile without them is a bad TREE)
    except (ArgumentProblem, ProbeError) as e:
        sys.stderr.write(f"python -m lab profile: {e}\n")
        return 2
    undecided: list[ProbeError] = []
    try:
        derived = derive(tree, kernel_id, a.btf, undecided)
    except csyntax.SyntaxUnavailable as e:
        sys.stderr.write(f"python -m lab profile: {e}\n")
        return 2
    if a.compare:
        diffs = compare(derived)
        if diffs:
            sys.stdout.write("\n".join(diffs) + "\n")
        for e in undecided:
            sys.stdout.write(f"undecided: {e}\n")
        if not diffs and not undecided:
            sys.stdout.write(f"{tree.label} agrees with profile {kernel_id}\n")
        sys.stderr.write(f"[profile] {time.monotonic() - t0:.1f} s\n")
        return 2 if undecided else 1 if diffs else 0
    if undecided:
        for e in undecided:
            sys.stderr.write(f"undecided: {e}\n")
        sys.stderr.write(f"python -m lab profile: {len(undecided)} probe(s) could not decide their rule from "
                         f"{tree.label}; nothing {'written' if a.write else 'printed'}\n")
        return 2
    if a.write:
        derived["netdev_features"] = as_changes(derived["netdev_features"], kernel_id,
                                                feature_base(kernel_id, tree.version))
        for table, sections in derived.items():
            write_sections(table, sections)
        sys.stdout.write(f"wrote profile {kernel_id} ({tree.label}) into data/kernels.toml, gro.toml, "
                         "netdev_features.toml\n")
    else:
        for table, sections in derived.items():
            sys.stdout.write(f"# data/{table}.toml\n")
            for name, body in sections.items():
                sys.stdout.write(section_text(name, body) + "\n")
    sys.stderr.write(f"[profile] {time.monotonic() - t0:.1f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
