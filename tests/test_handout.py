"""docs/handout.md, the one-page handout: every key number in it comes from the package, the lab data or the
patch mails (tests/data/patch-mails/, the netdev mails of fb32856b16ad and 2e4ef10f5850), and its commands are
the README's, so none of them can drift."""

import re
import tomllib
from pathlib import Path

import pytest

import vnetlab
from vnetlab import features, rx

ROOT = Path(__file__).resolve().parents[1]
HANDOUT = (ROOT / "docs" / "handout.md").read_text()
MAILS = ROOT / "tests" / "data" / "patch-mails"
BUILD_SKB_MAIL = (MAILS / "fb32856b16ad-virtio-net-page_to_skb-build_skb.txt").read_text()
GSO_MAIL = (MAILS / "2e4ef10f5850-net-avoid-unneeded-gso-resegmentation.txt").read_text()


def _row(what: str) -> str:
    rows = [line for line in HANDOUT.splitlines() if line.startswith(f"| {what} |")]
    assert len(rows) == 1, f"the handout needs one key-number row '{what}'"
    return rows[0].split(" | ")[1]


def test_good_copy_len_and_shinfo():
    assert _row("`GOOD_COPY_LEN`") == f"{rx.GOOD_COPY_LEN} bytes"
    assert "GOOD_COPY_LEN" in BUILD_SKB_MAIL
    shinfo = vnetlab.arch("x86_64").shinfo_size
    assert _row("`SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`, x86_64") == f"{shinfo} bytes"


def test_which_path_a_frame_takes():
    before, after = (rx.page_to_skb(1000, 1536, kernel=k).path for k in ("5.12", "5.13"))
    assert _row("1000-byte frame, 1536-byte mergeable buffer") == f"5.12: {before}; 5.13: {after}"
    assert (before, after) == ("copy+frag", "build_skb")
    short = rx.page_to_skb(100, 1536, kernel="5.13").path
    assert 100 <= rx.GOOD_COPY_LEN
    assert _row("100-byte frame, same buffer") == f"5.13: {short} (shorter than `GOOD_COPY_LEN`)"


def test_receive_rate_matches_the_mail_and_the_cost_data():
    mail = {m[1]: float(m[2]) for m in re.finditer(r"^(no build_skb|build_skb):\s+([\d.]+) rxpck/s", BUILD_SKB_MAIL,
                                                    re.M)}
    costs = tomllib.loads((ROOT / "data" / "rx_costs.toml").read_text())
    flat = {k: v for table in costs.values() if isinstance(table, dict) for k, v in table.items()}
    base, patched = flat["baseline_pps"]["value"], flat["patched_pps"]["value"]
    assert (base, patched) == (mail["no build_skb"], mail["build_skb"])
    assert "-m 1000" in BUILD_SKB_MAIL  # the patch mail's sockperf: 1000-byte UDP messages (docs/kernel/rx.md#a5)
    want = f"{base:,.0f} → {patched:,.0f} rx packets/s (+{100 * (patched / base - 1):.1f} %)"
    assert _row("1000-byte UDP receive rate, one CPU, `sar -n DEV 1`") == want


@pytest.mark.parametrize("kernel", ["5.10", "5.11"])
def test_gso_software(kernel):
    old = features.mask("GSO_SOFTWARE", kernel="5.10")
    if kernel == "5.10":
        shown = _row("`NETIF_F_GSO_SOFTWARE` in 5.10").split(", ")
        assert set(shown) == set(old) and len(shown) == len(old)
    else:
        added = set(features.mask("GSO_SOFTWARE", kernel="5.11")) - set(old)
        assert _row("added in 5.11").split(", ") == ["GSO_UDP_L4", "GSO_FRAGLIST"]
        assert added == {"GSO_UDP_L4", "GSO_FRAGLIST"}
        assert "NETIF_F_GSO_SOFTWARE" in GSO_MAIL


def test_router_numbers_match_the_mail():
    mail = re.search(r"(\d+) Mbps baseline, (\d+) Gbps / link speed with this patch", GSO_MAIL)
    costs = tomllib.loads((ROOT / "data" / "router_costs.toml").read_text())
    assert costs["link"]["link_bps"]["value"] == int(mail[2]) * 1e9
    assert "MIPS32 R2 router board" in GSO_MAIL and "VLAN NAT" in GSO_MAIL
    assert _row("MIPS32 R2 router, VLAN NAT") == f"{mail[1]} Mbps → {mail[2]} Gbps (link speed)"


def test_versions_and_authors():
    for text in ("Xuan Zhuo, fb32856b16ad, v5.13", "Alexander Lobakin, 2e4ef10f5850, v5.11"):
        assert text in HANDOUT
    assert "[Xuan Zhuo]" in BUILD_SKB_MAIL and re.search(r"^From:\s+Alexander Lobakin", GSO_MAIL, re.M)
    # the model's version boundaries: build_skb from 5.13 (above), the GSO_SOFTWARE change in 5.11 (above)


def test_commands_are_the_readmes():
    readme = (ROOT / "README.md").read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    ours = re.findall(r"```sh\n(.*?)```", HANDOUT, re.S)
    assert [c.strip() for c in ours] == [c.strip() for c in re.findall(r"```sh\n(.*?)```", readme, re.S)]
    assert "notebooks/00_welcome_and_map.ipynb" in HANDOUT
    for tool in ("tools/wheelhouse.py", "tools/nbtools.py html", "--no-index --find-links wheelhouse/"):
        assert tool in HANDOUT
        assert tool.split()[0] in readme or (ROOT / tool.split()[0]).exists()


def test_fits_on_one_page():
    # source: this test decides "one page": 70 lines and 6000 characters print on one A4 sheet
    assert len(HANDOUT.splitlines()) <= 70 and len(HANDOUT) <= 6000
