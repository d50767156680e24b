"""data/netdev_features.toml as a base plus per-kernel changes expands to exactly the tables it replaced.

The independent reference is the last whole-table file, kept in git history (commit FULL below, every kernel's
sections written out in full); the test skips where the checkout has no git history."""

import subprocess
import tomllib
from pathlib import Path

import pytest

from vnetlab import features as F
from vnetlab.errors import TableError

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
    for suffix in F.SUFFIXES:
        expanded = {name: value for name, (value, _) in F.expanded(k, suffix).items()}
        assert expanded == {name: leaf["value"] for name, leaf in full[f"{k}{suffix}"].items()}, (k, suffix)
    t = F.table(k)
    bits = {n: leaf["value"] for n, leaf in full[k].items()}
    raw = {n: leaf["value"] for n, leaf in full[f"{k}.masks"].items()}
    assert t.bits == bits
    assert t.masks == {n: F._resolve_mask(k, n, raw, bits) for n in raw}


def test_every_kernel_but_the_oldest_lists_only_its_changes():
    from vnetlab.tables import load_table

    data = load_table("netdev_features")
    roots = [k for k in F.known_kernels() if "_base" not in data[k]]
    assert roots == ["5.10"]
    # 6.18 moved FCOE_CRC/SCTP_CRC up for GSO_ACCECN (35); 7.2.12 dropped HW_TLS_RECORD (Debian 7.2/7.3 trees)
    assert set(data["6.18"].values) == {"_base", "GSO_ACCECN", "FCOE_CRC", "SCTP_CRC"}
    assert data["7.2.12"]["HW_TLS_RECORD"] is False and "HW_TLS_RECORD" not in F.names("7.2.12")
    assert "HW_TLS_RECORD" in F.names("6.18")


def test_a_removal_of_what_the_base_lacks_is_refused(monkeypatch):
    from vnetlab import tables

    text = (ROOT / "data" / "netdev_features.toml").read_text().replace(
        '["5.11"]\n', '["5.11"]\nNOT_A_FEATURE = { value = false, source = "s" }\n', 1)
    parsed = tables.parse_table("netdev_features", text)
    monkeypatch.setattr(F, "load_table", lambda name: parsed)
    F.expanded.cache_clear()
    try:
        with pytest.raises(TableError, match="NOT_A_FEATURE removes what 5.10 does not have"):
            F.expanded("5.11")
    finally:
        F.expanded.cache_clear()
