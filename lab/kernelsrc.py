"""Read the NETIF_F tables of a kernel source tree (Debian's linux-source-X, unpacked anywhere).

``python -m lab.kernelsrc TREE PROFILE "LABEL"`` prints the data/netdev_features.toml sections of profile
PROFILE as that tree defines them: enum NETIF_F_*_BIT (include/linux/netdev_features.h), the
netdev_features_strings[] names (net/ethtool/common.c), the composite masks (the same header) and the
SKB_GSO_* bits (include/linux/skbuff.h). ``--compare PROFILE`` reports how the tree differs from an existing
profile instead. Used to add the Debian 5.10.223 and 6.12 profiles; every value cites the file it was read from.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MASKS = ["CSUM_MASK", "ALL_TSO", "ALL_FCOE", "GSO_SOFTWARE", "ONE_FOR_ALL", "ALL_FOR_ALL", "UPPER_DISABLES",
         "SOFT_FEATURES", "SOFT_FEATURES_OFF", "VLAN_FEATURES", "GSO_ENCAP_ALL", "NEVER_CHANGE"]


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def feature_bits(tree: Path) -> dict[str, int]:
    """enum { NETIF_F_*_BIT, ... } -> {"SG": 0, ...} (unused slots skipped, NETIF_F_GSO_SHIFT aliases kept)."""
    text = _strip_comments((tree / "include/linux/netdev_features.h").read_text())
    body = re.search(r"enum\s*{(.*?)NETDEV_FEATURE_COUNT", text, re.S).group(1)
    bits: dict[str, int] = {}
    n = 0
    for item in (i.strip() for i in body.split(",")):
        if not item:
            continue
        name, _, value = (p.strip() for p in item.partition("="))
        if value:
            n = bits[value.removeprefix("NETIF_F_").removesuffix("_BIT")] if value != "NETIF_F_GSO_SHIFT" \
                else bits["__GSO_SHIFT"]
        if name == "NETIF_F_GSO_SHIFT":
            bits["__GSO_SHIFT"] = n
            continue  # the shift is the value of the next member, not a bit of its own
        if name == "NETIF_F_GSO_LAST":
            bits["__GSO_LAST"] = n  # an alias of the last GSO bit; the next member is n + 1 as in C
            n += 1
            continue
        if name.startswith("NETIF_F_") and name.endswith("_BIT"):
            bits[name.removeprefix("NETIF_F_").removesuffix("_BIT")] = n
        n += 1
    return bits


def ethtool_strings(tree: Path) -> dict[str, str]:
    text = (tree / "net/ethtool/common.c").read_text()
    body = text[text.index("netdev_features_strings"):]
    body = body[:body.index("};")]
    return {m.group(1): m.group(2) for m in re.finditer(r"\[NETIF_F_(\w+?)_BIT\]\s*=\s*\"([^\"]+)\"", body)}


def masks(tree: Path, bits: dict[str, int]) -> dict[str, object]:
    text = _strip_comments((tree / "include/linux/netdev_features.h").read_text()).replace("\\\n", " ")
    out: dict[str, object] = {}
    last = next(n for n, b in bits.items() if b == bits["__GSO_LAST"] and not n.startswith("__"))
    first = next(n for n, b in bits.items() if b == bits["__GSO_SHIFT"] and not n.startswith("__"))
    out["GSO_MASK"] = {"first": first, "last": last}
    for name in MASKS:
        m = re.search(rf"#define\s+NETIF_F_{name}\s+(.*)", text)
        if not m:
            continue
        out[name] = re.findall(r"NETIF_F_(\w+)", m.group(1))
    return out


def skb_gso_bits(tree: Path) -> dict[str, int]:
    text = _strip_comments((tree / "include/linux/skbuff.h").read_text())
    # __SKB_GSO_TCP_FIXEDID (6.18+: bit 3, the public SKB_GSO_TCP_FIXEDID moved to bit 30) keeps its "__" name
    return {(m.group(1) or "") + m.group(2): int(m.group(3))
            for m in re.finditer(r"(?<!\w)(__)?SKB_GSO_(\w+)\s*=\s*1\s*<<\s*(\d+)", text)}


def read_tree(tree: Path) -> dict[str, dict]:
    bits = feature_bits(tree)
    return {"": {k: v for k, v in bits.items() if not k.startswith("__")}, ".ethtool": ethtool_strings(tree),
            ".masks": masks(tree, bits), ".skb_gso": skb_gso_bits(tree)}


def _toml_value(v: object) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f'{k} = "{x}"' for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(f'"{x}"' for x in v) + "]"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


SOURCES = {"": "include/linux/netdev_features.h, enum NETIF_F_{name}_BIT",
           ".ethtool": "net/ethtool/common.c, netdev_features_strings",
           ".masks": "include/linux/netdev_features.h, NETIF_F_{name}",
           ".skb_gso": "include/linux/skbuff.h, enum SKB_GSO_{name}"}


def toml_sections(tree: Path, profile: str, label: str) -> str:
    out = []
    for suffix, values in read_tree(tree).items():
        out.append(f'["{profile}{suffix}"]')
        for name, v in values.items():
            src = SOURCES[suffix].format(name=name) + f", {label}"
            out.append(f'{name} = {{ value = {_toml_value(v)}, source = "{src}" }}')
        out.append("")
    return "\n".join(out)


def compare(tree: Path, profile: str) -> list[str]:
    from vnetlab.tables import load_table

    table = load_table("netdev_features")
    diffs = []
    for suffix, values in read_tree(tree).items():
        have = table[f"{profile}{suffix}"].values
        for k in sorted(set(values) | set(have)):
            a, b = values.get(k), have.get(k)
            if suffix == ".masks" and isinstance(a, list) and isinstance(b, list):
                a, b = sorted(a), sorted(b)
            if a != b:
                diffs.append(f"{profile}{suffix} {k}: tree {values.get(k)!r}, profile {have.get(k)!r}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.kernelsrc", description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("profile")
    ap.add_argument("label", nargs="?", default="")
    ap.add_argument("--compare", action="store_true")
    a = ap.parse_args(argv)
    if a.compare:
        diffs = compare(a.tree, a.profile)
        sys.stdout.write("\n".join(diffs) + "\n" if diffs else f"{a.tree} matches profile {a.profile}\n")
        return 1 if diffs else 0
    sys.stdout.write(toml_sections(a.tree, a.profile, a.label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
