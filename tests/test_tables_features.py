"""data/netdev_features.toml as a base plus per-kernel changes expands to exactly the tables it replaced.

The independent reference is the last whole-table file, kept in git history (commit FULL below, every kernel's
sections written out in full); the test skips where the checkout has no git history."""

import subprocess
import tomllib
from pathlib import Path

import pytest

from vnetlab import features as F
from vnetlab.errors import TableError
from vnetlab.tables import load_table, parse_table

SUFFIXES = ("", ".ethtool", ".masks", ".skb_gso")

FULL = "7c7faf2"  # data/netdev_features.toml with every kernel's four sections whole
ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def full():
    try:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{FULL}:data/netdev_features.toml"],
                              capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip(f"no git history with commit {FULL} here")
    return tomllib.loads(text)


@pytest.mark.parametrize("k", F.known_kernels())
def test_expanded_tables_equal_the_whole_tables(full, k):
    data = load_table("netdev_features")  # vnetlab.tables expands the _base chains: every reader sees whole sections
    for suffix in SUFFIXES:
        assert dict(data[f"{k}{suffix}"].values) == {n: leaf["value"] for n, leaf in full[f"{k}{suffix}"].items()}
    t = F.table(k)
    bits = {n: leaf["value"] for n, leaf in full[k].items()}
    raw = {n: leaf["value"] for n, leaf in full[f"{k}.masks"].items()}
    assert t.bits == bits
    assert t.masks == {n: F._resolve_mask(k, n, raw, bits) for n in raw}


def test_every_kernel_but_the_oldest_lists_only_its_changes():
    import tomllib

    raw = tomllib.loads((ROOT / "data" / "netdev_features.toml").read_text())
    roots = [k for k in F.known_kernels() if "_base" not in raw[k]]
    assert roots == ["5.10"]
    # 6.18 moved FCOE_CRC/SCTP_CRC up for GSO_ACCECN (35); 7.2.12 dropped HW_TLS_RECORD (Debian 7.2/7.3 trees)
    assert set(raw["6.18"]) == {"_base", "GSO_ACCECN", "FCOE_CRC", "SCTP_CRC"}
    assert raw["7.2.12"]["HW_TLS_RECORD"]["value"] is False and "HW_TLS_RECORD" not in F.names("7.2.12")
    assert "HW_TLS_RECORD" in F.names("6.18")


def test_a_removal_of_what_the_base_lacks_is_refused():
    text = (ROOT / "data" / "netdev_features.toml").read_text().replace(
        '["5.11"]\n', '["5.11"]\nNOT_A_FEATURE = { value = false, source = "s" }\n', 1)
    with pytest.raises(TableError, match=r"\[5.11\].NOT_A_FEATURE = false removes what 5.10 does not have"):
        parse_table("netdev_features", text)


def test_a_base_that_does_not_exist_is_refused():
    text = (ROOT / "data" / "netdev_features.toml").read_text().replace('value = "6.12", source = "the kernel',
                                                                         'value = "6.13", source = "the kernel', 1)
    with pytest.raises(TableError, match=r"_base must name a kernel"):
        parse_table("netdev_features", text)
