"""Architecture and kernel profiles, and the data tables behind them."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vnetlab
from vnetlab.errors import ArgumentError
from vnetlab.tables import TableError, parse_table

BTF = Path("/sys/kernel/btf/vmlinux")


def _pahole_size(struct: str) -> int | None:
    if not shutil.which("pahole") or not BTF.exists():
        return None
    out = subprocess.run(["pahole", "-C", struct, str(BTF)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "/* size:" in line:
            return int(line.split("size:")[1].split(",")[0])
    return None


@pytest.mark.parametrize("struct, attr", [("skb_shared_info", "skb_shared_info_size"), ("sk_buff", "sk_buff_size")])
def test_x86_64_sizes_match_pahole_on_this_kernel(struct, attr):
    size = _pahole_size(struct)
    if size is None:
        pytest.skip("pahole or /sys/kernel/btf/vmlinux not available")
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("the running kernel is not x86_64")
    assert getattr(vnetlab.arch("x86_64", kernel="6.18"), attr) == size


@pytest.mark.parametrize(
    "name, kernel, shinfo, aligned, frags, ip_align, page",
    [
        ("x86_64", "6.18", 320, 320, 17, 0, 4096),
        ("x86_64", "5.10", 320, 320, 17, 0, 4096),
        ("arm64", "6.1", 320, 320, 17, 0, 4096),
        ("arm64-64k", "6.1", 304, 320, 16, 0, 65536),  # MAX_SKB_FRAGS 16 on 64K pages before 6.3
        ("arm64-64k", "6.18", 320, 320, 17, 0, 65536),  # CONFIG_MAX_SKB_FRAGS default 17 from 6.3
        ("ppc64le", "6.1", 304, 384, 16, 0, 65536),
        ("ppc64le-4k", "6.1", 320, 384, 17, 0, 4096),  # 128-byte cache lines: shinfo aligned to 384
        ("mips32", "6.1", 248, 256, 17, 2, 4096),
    ],
)
def test_arch_profiles(name, kernel, shinfo, aligned, frags, ip_align, page):
    a = vnetlab.arch(name, kernel=kernel)
    assert (a.skb_shared_info_size, a.shinfo_size, a.max_skb_frags, a.net_ip_align, a.page_size) == (
        shinfo, aligned, frags, ip_align, page)


def test_sk_buff_size_per_kernel():
    # BTF: 224 on the 6.18 kernel here, 232 on Debian's 6.1 (QEMU lab); both SKB_DATA_ALIGN to 256.
    assert vnetlab.arch("x86_64", kernel="6.18").sk_buff_size == 224
    assert vnetlab.arch("x86_64", kernel="6.1").sk_buff_size == 232
    assert vnetlab.arch("x86_64", kernel="6.1").skb_data_align(232) == 256


def test_net_skb_pad_is_max_32_l1():
    # include/linux/skbuff.h NET_SKB_PAD = max(32, L1_CACHE_BYTES) (docs/kernel/arch.md#b3): L1 64 x86_64, 128 ppc64
    assert vnetlab.arch("x86_64").net_skb_pad == 64
    assert vnetlab.arch("ppc64le").net_skb_pad == 128
    assert vnetlab.arch("mips32").net_skb_pad == 32


def test_skb_truesize_x86_64():
    # include/linux/skbuff.h SKB_TRUESIZE (docs/kernel/rx.md#a3; sk_buff 256 aligned, shinfo 320 from BTF 6.18)
    # SKB_TRUESIZE(1216) for a 1536-byte build_skb buffer: 1216 + 256 + 320.
    assert vnetlab.arch("x86_64").skb_truesize(1216) == 1792


def test_config_max_skb_frags_only_from_6_3():
    assert vnetlab.arch("x86_64", kernel="6.18", max_skb_frags=45).max_skb_frags == 45
    with pytest.raises(ValueError, match="CONFIG_MAX_SKB_FRAGS exists from 6.3"):
        vnetlab.arch("x86_64", kernel="6.1", max_skb_frags=45)
    with pytest.raises(ValueError, match="17..45"):
        vnetlab.arch("x86_64", kernel="6.18", max_skb_frags=46)


def test_kernels_are_ordered_and_known():
    assert vnetlab.kernel("5.10") < vnetlab.kernel("6.1") < vnetlab.kernel("6.18")
    assert vnetlab.kernel("5.13") > "5.12"
    assert set(vnetlab.known_kernels()) >= {"5.10", "5.11", "5.12", "5.13", "6.1", "6.18"}


def test_unknown_kernel_and_arch_errors_list_the_known_ones():
    with pytest.raises(vnetlab.UnknownKernelError, match="known: 5.10, 5.10.223, 5.10.262, 5.11"):
        vnetlab.kernel("4.19")
    with pytest.raises(ValueError, match="arch='sparc'.*known: x86_64"):
        vnetlab.arch("sparc")


def test_every_table_value_has_a_source():
    for name in ("arches", "kernels"):
        table = vnetlab.tables.load_table(name)
        for section in table:
            for field, source in table[section].sources.items():
                assert source.strip(), f"{name}.{section}.{field}"


def test_malformed_table_names_file_and_field():
    with pytest.raises(TableError, match=r"data/arches.toml: \[x\].page_size must be \{ value"):
        parse_table("arches", "[x]\npage_size = 4096\n")
    with pytest.raises(TableError, match="empty source"):
        parse_table("arches", '[x]\npage_size = { value = 4096, source = "" }\n')
    with pytest.raises(TableError, match="not valid TOML"):
        parse_table("arches", "[x\n")
    # a table name is one of the shipped files (vnetlab.tables.TABLES), so a typo names the parameter and lists them
    with pytest.raises(ArgumentError, match=r"name must be one of 'arches', .*got 'nosuch'"):
        vnetlab.tables.load_table("nosuch")
    sec = parse_table("arches", '[x]\npage_size = { value = "big", source = "s" }\n')["x"]
    with pytest.raises(TableError, match=r"\[x\].page_size must be int"):
        sec.typed("page_size", int)
    with pytest.raises(TableError, match=r"\[x\] has no field 'l1'"):
        sec["l1"]


def test_import_vnetlab_is_light():
    # vnetlab.checks too: every module imports it for @public, so it must stay light as well.
    # The per-skb models too (receive, GRO, devices, transmit): numpy comes only with rx_classify / gro_stream.
    code = ("import sys, vnetlab, vnetlab.rx, vnetlab.skb, vnetlab.checks, vnetlab.gro, vnetlab.netdev, vnetlab.xmit, "
            "vnetlab.segment, vnetlab.skbuff, vnetlab.virtual_rx, vnetlab.udp; "
            "bad = [m for m in ('matplotlib', 'ipywidgets', 'IPython', 'jupyterlab', 'numpy', 'beartype') "
            "if m in sys.modules]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_tables_are_read_from_the_installed_package():
    # importlib.resources: vnetlab.data is data/ (pyproject package-dir), so a wheel carries the same files.
    import importlib.resources
    assert importlib.resources.files("vnetlab.data").joinpath("kernels.toml").is_file()


def _two_labs(rule, a, b):
    k = vnetlab.kernel("6.1")
    return k.with_overrides("lab", {rule: (a, "source: this test")}), k.with_overrides("lab", {rule: (b, "source: x")})


def test_kernels_of_one_name_with_other_rules_never_share_an_answer():
    # Two lab kernels named alike but with other rules are other kernels: every cache keyed by the kernel must
    # tell them apart (before, the second got the first's cached answer).
    from vnetlab import cost, gro, rx

    a, b = _two_labs("sk_buff_size_64", 232, 256)  # BTF 6.18: sizeof(struct sk_buff) 232; 256 an override
    assert a != b and vnetlab.arch("x86_64", a).sk_buff_size != vnetlab.arch("x86_64", b).sk_buff_size
    a, b = _two_labs("page_to_skb", "copy_eth_hlen", "build_skb")
    assert rx.receive(1000, kernel=a).path != rx.receive(1000, kernel=b).path
    sa, sb = (gro.simulate_stream(64, 1000, l4="udp", udp_gro=True, kernel=k) for k in (a, b))
    assert sa.path_counts != sb.path_counts
    traffic = cost.Traffic("1000-byte UDP", (1000,))
    assert cost.op_counts(traffic, a) != cost.op_counts(traffic, b)
    same = vnetlab.kernel("6.1").with_overrides("lab", {"page_to_skb": ("copy_eth_hlen", "source: again")})
    assert same == a and hash(same) == hash(a)  # the same rules: one kernel, one cached answer


@pytest.mark.parametrize("overrides, message", [
    ({"udp_max_segments": (-1, "s")}, "int >= 0"),
    ({"udp_max_segments": (True, "s")}, "int >= 0"),
    ({"napi_head": ("page_frag_2k", "s")}, "one of"),          # data/kernels.toml: the four napi_head words
    ({"page_to_skb": ("copy", "s")}, "one of"),
    ({"no_such_rule": (1, "s")}, "is not a rule"),
    ({"udp_max_segments": 64}, "must be \\(value, source\\)"),
])
def test_with_overrides_refuses_what_a_rule_cannot_be(overrides, message):
    from vnetlab.errors import ArgumentError

    with pytest.raises(ArgumentError, match=message):
        vnetlab.kernel("6.1").with_overrides("lab", overrides)
