"""vnetlab.live: comparing model and kernel, the not-available messages everywhere; real kernels where allowed.

The samples in tests/data/ethtool_k_*_6.18.txt were captured with ethtool 6.1 on a 6.18 kernel (Debian 12),
from devices in a scratch network namespace: a fresh veth, the same veth after `ethtool -K sg off`, a
macvlan on that veth, a bridge with one veth port, and lo. Parsing them is tested in tests/test_ethtool.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from vnetlab import ethtool, features, live, netdev
from vnetlab.errors import ArgumentError, FixedFeatureError, LabTimeout, LiveError, LiveUnavailable, UnknownFeatureError
from vnetlab.live import device_features, netlink

DATA = Path(__file__).parent / "data"


def sample(name: str) -> str:
    return (DATA / f"ethtool_k_{name}_6.18.txt").read_text()


# ---------------------------------------------------------------------------------------------------------
# comparing
# ---------------------------------------------------------------------------------------------------------


def test_compare_k_reports_each_difference():
    kernel = ethtool.parse_k(sample("veth"))
    model = dict(kernel)
    model["tx-gso-list"] = (False, False)
    model["rx-lro"] = (False, False)
    del model["rx-gro"]
    model["made-up"] = (True, True)
    cmp = live.compare_k(model, kernel, device="v0")
    assert not cmp
    assert cmp.names == ("made-up", "rx-gro", "rx-lro", "tx-gso-list")
    assert len(cmp.agreed) == 57  # the sample's 60 features and made-up, less the 4 that differ
    text = str(cmp)
    assert "tx-gso-list: model off, kernel on" in text
    assert "rx-gro: model (absent), kernel off" in text
    assert "rx-lro: model off, kernel off [fixed]" in text
    only_on = live.compare_k(model, kernel, fields=("on",))
    assert only_on.names == ("made-up", "rx-gro", "tx-gso-list")
    assert live.compare_k(kernel, kernel)
    with pytest.raises(ValueError, match="fields"):
        live.compare_k(kernel, kernel, fields=("requested",))
    with pytest.raises(ValueError, match="wanted"):  # an (on, fixed) pair has no request to compare
        live.compare_k({"rx-gro": (True, False)}, kernel, fields=("on", "wanted"))


def test_compare_k_wanted_counts_only_changeable_features():
    f = ethtool.parse_k(sample("veth_sg_off"))
    kernel = {n: (s.active, s.fixed, s.wanted) for n, s in f.states.items()}
    model = dict(kernel)
    model["tx-tcp-segmentation"] = (False, False, False)  # the model forgot the request
    model["tx-checksum-ipv4"] = (False, True, True)  # fixed: ethtool never shows its wanted bit
    cmp = live.compare_k(model, kernel, fields=("on", "fixed", "wanted"))
    assert cmp.names == ("tx-tcp-segmentation",)
    assert "tx-tcp-segmentation: model off, kernel off [requested on]" in str(cmp)
    assert live.compare_k(model, kernel)  # on and fixed alone agree


# ---------------------------------------------------------------------------------------------------------
# capability messages
# ---------------------------------------------------------------------------------------------------------

GOOD = dict(platform="linux", euid=0, cap_net_admin=True, cap_sys_admin=True, have_ip=True, have_ethtool=True,
            pyroute2_error=None, netlink_error=None, netns_error=None)


def test_transfer_table_one_line_per_case_kernel_beside_model():
    S, T = live.SideResult, live.TransferRow
    rows = [
        T("udpgso", 129, 1, 4, False, S("EINVAL"), S("EINVAL")),
        T("udpgso", 14000, 1400, 4, True, S(None, (14000,), (1400,), 1, 1), S(None, (14000,), (1400,), 1, 1)),
        T("udpgso", 2945, 1472, 4, False, S(None, (1472, 1472, 1), (None,) * 3, 1, None),
          S(None, (1472, 1472, 1), (None,) * 3, 3, None)),
    ]
    lines = live.transfer_table(rows).splitlines()
    assert len(lines) == 5
    assert lines[0].split() == ["send", "kernel", "model"]
    # the format the docstring gives: errno; "N recv ×first [gso G], S skb [(P NAPI)]"; agree / DIFFER first;
    # "(same)" where the model agrees, else the model's result on a line of its own under the kernel's
    assert lines[1].split() == ["agree", "129", "B,", "UDP_SEGMENT", "1", "EINVAL", "(same)"]
    assert lines[2].startswith("agree  14000 B, UDP_SEGMENT 1400")
    assert lines[2].count("1 recv ×14000 gso 1400, 1 skb (1 NAPI)") == 1 and lines[2].endswith("(same)")
    assert lines[3].startswith("DIFFER 2945 B, UDP_SEGMENT 1472") and lines[3].endswith("3 recv ×1472, 1 skb")
    assert lines[4].split() == ["model:", "3", "recv", "×1472,", "3", "skb"]
    # the kernel column starts at the same place on every line: 6 + 1 (mark) + 33 + 1 (case)
    assert lines[0].index("kernel") == lines[1].index("EINVAL") == lines[3].index("3 recv") == 41
    # source: vnetlab/live/experiments.py transfer_table: a table fits 100 columns
    assert lines[4].index("3 recv") == 41 and max(map(len, lines)) <= 100
    by_receiver = live.transfer_table([T("gro on", 14000, 1400, 4, True, S("EIO"), S("EIO"))], by="receiver")
    assert by_receiver.splitlines()[1].split() == ["agree", "gro", "on", "EIO", "(same)"]


def test_transfer_table_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="by='sender'"):
        live.transfer_table([], by="sender")
    with pytest.raises(ValueError, match="rows must hold live.TransferRow"):
        live.transfer_table([("129 B", "EINVAL")])


def test_diagnose_all_good():
    cap = live.diagnose(**GOOD)
    assert cap and cap.feature_backend == "netlink" and cap.labs


def test_diagnose_not_linux():
    cap = live.diagnose(**{**GOOD, "platform": "darwin"})
    assert not cap
    assert "needs Linux" in cap.reason and "darwin" in cap.reason and "vnetlab.netdev" in cap.reason


def test_diagnose_falls_back_to_ethtool_then_explains():
    cap = live.diagnose(**{**GOOD, "pyroute2_error": "pyroute2 is not importable: No module named 'pyroute2'"})
    assert cap and cap.feature_backend == "ethtool"
    cap = live.diagnose(**{**GOOD, "pyroute2_error": "pyroute2 is not importable", "have_ethtool": False})
    assert not cap
    assert "pyroute2" in cap.reason and "ethtool" in cap.reason and "apt-get install ethtool" in cap.reason


def test_diagnose_without_privileges():
    cap = live.diagnose(**{**GOOD, "euid": 1000, "cap_net_admin": False, "cap_sys_admin": False})
    assert not cap
    assert "CAP_SYS_ADMIN" in cap.reason and "uid 1000" in cap.reason and "root" in cap.reason
    reading = live.diagnose(**{**GOOD, "euid": 1000, "cap_net_admin": False, "cap_sys_admin": False},
                            need_labs=False)
    assert reading and not reading.labs and reading.feature_backend == "netlink"


def test_diagnose_netns_or_ip_missing():
    cap = live.diagnose(**{**GOOD, "netns_error": "mount --make-shared /run/netns failed: Permission denied"})
    assert not cap and "Permission denied" in cap.reason
    cap = live.diagnose(**{**GOOD, "have_ip": False})
    assert not cap and "iproute2" in cap.reason


def test_unavailable_is_an_explanatory_exception():
    exc = LiveUnavailable("because")
    assert isinstance(exc, LiveError) and exc.reason == "because" and str(exc) == "because"


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="device"):
        live.read_features("a/b")
    with pytest.raises(ValueError, match="device"):
        live.read_features("sixteen-chars-xx")
    with pytest.raises(ValueError, match="backend"):
        live.read_features("lo", backend="ioctl")
    with pytest.raises(ValueError, match="timeout"):
        live.Lab(timeout=0)
    with pytest.raises(ValueError, match="tag"):
        live.Lab(tag="Bad Tag")


@pytest.mark.parametrize("vni", [-1, 1 << 24, True, "42", 42.0])
def test_every_vxlan_entry_refuses_a_vni_alike(vni):
    # drivers/net/vxlan/vxlan_core.c vxlan_validate (6.1): a VNI >= VXLAN_N_VID (1 << 24) is -ERANGE. The model's
    # Namespace.vxlan and Vxlan and the live Lab.vxlan take one annotation: the same error, parameter and range
    # (the check runs at the call, before the lab is opened or any `ip` command)
    from vnetlab.netdev import Vxlan

    ns = netdev.Namespace(kernel="6.1")
    v0, _ = ns.veth("v0", "v1")
    errors = []
    for entry in (lambda: ns.vxlan("vx0", vni=vni, underlay=v0), lambda: Vxlan(ns, "vx0", vni, 4, None),
                  lambda: live.Lab().vxlan("vx0", vni=vni, underlay="v0")):
        with pytest.raises(ArgumentError) as err:
            entry()
        errors.append(err.value)
    assert {e.param for e in errors} == {"vni"}
    assert len({str(e).split(": ", 1)[1] for e in errors}) == 1, [str(e) for e in errors]
    assert "0..16777215" in str(errors[0])  # VXLAN_N_VID - 1


@pytest.mark.live
def test_lab_vxlan_range_is_the_kernels(can_build_labs):
    # the kernel's own answer (vxlan_core.c vxlan_validate): id 16777215 is a device, 16777216 is -ERANGE, asked
    # over rtnetlink (iproute2 refuses it itself, "invalid id"); Lab.vxlan takes the first and refuses the second
    import errno

    pyroute2 = pytest.importorskip("pyroute2")
    with live.Lab() as lab:
        v0, _ = lab.veth("v0", "v1")
        assert lab.vxlan("vx0", vni=(1 << 24) - 1, underlay=v0).name == "vx0"
        with pyroute2.NetNS(lab.netns) as ns, pytest.raises(pyroute2.NetlinkError) as refused:
            ns.link("add", ifname="vx1", kind="vxlan", vxlan_id=1 << 24, vxlan_port=4789,
                    vxlan_link=ns.link_lookup(ifname="v0")[0])
        assert refused.value.code == errno.ERANGE
        with pytest.raises(ArgumentError, match="vni"):
            lab.vxlan("vx1", vni=1 << 24, underlay=v0)


def test_import_without_pyroute2():
    code = (
        "import sys; sys.modules['pyroute2'] = None\n"
        "import vnetlab.live.netlink as netlink\n"
        "print(netlink.pyroute2_error())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pyroute2 is not importable" in out


def test_importing_live_does_not_import_pyroute2():
    code = "import sys, vnetlab.live; print('pyroute2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_not_linux_raises_unavailable(monkeypatch):
    from vnetlab.live import capability

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(capability, "_CAPABILITY_CACHE", {})
    cap = live.available()
    assert not cap and "win32" in cap.reason
    with pytest.raises(LiveUnavailable, match="needs Linux"):
        live.read_features("lo")
    with pytest.raises(LiveUnavailable, match="needs Linux"):
        live.Lab().__enter__()


def test_running_profile():
    # the modelled profile with the same major.minor, else the newest older one (vnetlab.profiles known_kernels)
    assert live.running_profile("6.18.44-fc-v669") == "6.18"
    assert live.running_profile("6.1.0-57-amd64") == "6.1"
    assert live.running_profile("6.13.0") == "6.12.117"  # the newest older profile: Debian 6.12.117 > 6.12.95
    assert live.running_profile("5.11.0") == "5.11"
    with pytest.raises(ValueError, match="release="):
        live.running_profile("linux-6.1")
    with pytest.raises(ValueError, match="release must be"):
        live.running_profile(61)


def test_running_profile_every_known_profile_is_exact_and_the_ends_say_so():
    """Against data/kernels.toml as it is (profiles.known_kernels(), read at call time): the release a profile's
    rules were read from is an exact match; older than the oldest and newer than the newest say that any rule may
    differ."""
    from vnetlab import profiles

    known = profiles.known_kernels()
    for v in known:
        modelled = live.profile.modelled_release(v, dict(profiles.kernel(v).rules.sources))
        r = live.running_profile(modelled)
        assert (r, r.closeness, r.may_differ) == (v, "exact", ()), v
    old = live.running_profile("4.19.0-27-amd64")
    assert (old, old.closeness) == (known[0], "older") and "older than every profile" in old.line()
    assert "rx_copybreak" not in old.may_differ and "page_to_skb" in old.may_differ
    new = live.running_profile("7.3.4+deb13-amd64")
    if "7.3.4" in known:  # helper probe's Debian 7.3.4 profile
        assert (new, new.closeness) == ("7.3.4", "exact")
    else:
        assert (new, new.closeness) == (known[-1], "newer") and "Debian's 7.3.4" in new.why


def test_running_profile_x_y_profiles_hold_a_debian_trees_rules():
    """The "6.1" and "6.12" profiles hold Debian 6.1.192's and 6.12.95's rules (data/kernels.toml: their sources
    cite "Debian linux-source-6.1 (6.1.192-3)" and "Debian linux-source-6.12 (6.12.95-1~bpo12+1)"), so 6.1.0,
    6.1.50 and a bare 6.1 are older than that profile, not an exact match."""
    from vnetlab import profiles

    models = {v: live.profile.modelled_release(v, dict(profiles.kernel(v).rules.sources))
              for v in ("6.1", "6.12")}
    assert models == {"6.1": "6.1.192", "6.12": "6.12.95"}
    for release in ("6.1", "6.1.0", "6.1.50", "6.12.0", "6.12.3"):
        r = live.running_profile(release)
        assert r.closeness == "nearest" and r.may_differ, release
        assert "Older than" in r.why and "the rules of 6.1" in r.why.replace("6.12.95", "6.1")
    r = live.running_profile("6.1.192")
    assert (r, r.closeness) == ("6.1", "exact") and "6.1.192's rules" in r.why


@pytest.mark.parametrize("release", ["6.18.0-rc3", "6.18-rc3", "v6.18-rc7", "6.1.0-rc1"])
def test_running_profile_release_candidate_is_never_exact(release):
    """An -rcN comes before X.Y.0 (Documentation/process/2.Process.rst: the release candidates precede the
    release), so the X.Y profile is at best nearest."""
    r = live.running_profile(release)
    assert r.closeness == "nearest" and "release candidate" in r.why


@pytest.mark.parametrize("release", ["6.1.\u06650", "\u0666.1.50", "6.\uff11.0", "6.1.50-\u00e9"])
def test_running_profile_refuses_non_ascii(release):
    # uname -r is ASCII (init/version.c UTS_RELEASE from the Makefile's VERSION.PATCHLEVEL.SUBLEVEL)
    with pytest.raises(ArgumentError, match="non-ASCII") as err:
        live.running_profile(release)
    assert err.value.param == "release"
    with pytest.raises(ArgumentError, match="non-ASCII") as err:
        live.running_profile("6.1.0-37-amd64", "#1 SMP Debian 6.1.\u06650-1")
    assert err.value.param == "version"


def test_debian_abi_names_agree_with_the_lab_table():
    """Each lab kernel booted from a Debian image (data/lab/*/: uname_r "5.10.0-32-amd64", package_version
    "5.10.223-1") gets the profile of that package's release from its uname -r alone, as the lab table names it."""
    from vnetlab import labdata

    seen = 0
    for run in live.lab_runs():
        doc = labdata.load(run.configs[0], run.kernel)["kernel"]
        release, package = doc.get("uname_r", ""), str(doc.get("package_version", ""))
        if not re.fullmatch(r"\d+\.\d+\.0-\d+-amd64", release):
            continue
        upstream = package.split("-")[0]
        r = live.running_profile(release)
        assert live.profile.modelled_release(r.profile, dict(__import__("vnetlab").profiles.kernel(
            r.profile).rules.sources)) == upstream, (release, r)
        assert f"from {upstream}" in r.why and r.closeness == "nearest"  # a later upload may keep the ABI
        seen += 1
    assert seen >= 2  # 5.10.0-32-amd64 and 6.1.0-57-amd64


def _rules(**changes):
    base = {"released": "x", "page_to_skb": "copy128", "udp_max_segments": 64, "uso_needs_csum": False}
    return {**base, **changes}


# A profile set like the one helper probe adds (Debian's 5.10.223 and 5.10.262, 6.1.y, 6.12.117, 7.2.12, 7.3.4),
# with rule values that move between neighbours so that "may differ" has something to name.
PROFILES = {
    "5.10": _rules(),
    "5.10.223": _rules(page_to_skb="copy_eth_hlen"),
    "5.10.262": _rules(page_to_skb="copy_eth_hlen", udp_max_segments=128),
    "6.1": _rules(page_to_skb="build_skb"),
    "6.1.158": _rules(page_to_skb="build_skb", udp_max_segments=128),
    "6.12.117": _rules(page_to_skb="build_skb", udp_max_segments=128, uso_needs_csum=True),
    "6.18": _rules(page_to_skb="build_skb", udp_max_segments=128, uso_needs_csum=True),
    "7.2.12": _rules(page_to_skb="build_skb2", udp_max_segments=128, uso_needs_csum=True),
    "7.3.4": _rules(page_to_skb="build_skb2", udp_max_segments=128, uso_needs_csum=True),
}


@pytest.mark.parametrize("release,version,profile,closeness,differ", [
    # Debian 11: the ABI name hides the stable update; the newest Debian 5.10 profile, not mainline 5.10
    # ABI 32 was first packaged from 5.10.223 (data/lab/5.10: linux-image-5.10.0-32-amd64 is 5.10.223-1)
    ("5.10.0-32-amd64", None, "5.10.223", "nearest", ()),
    ("5.10.0-99-amd64", None, "5.10.262", "nearest", ("udp_max_segments",)),
    # ... unless uname -v names the package ("#1 SMP Debian 5.10.223-1 (2024-08-10)")
    ("5.10.0-32-amd64", "#1 SMP Debian 5.10.223-1 (2024-08-10)", "5.10.223", "exact", ()),
    ("5.10.0-32-cloud-amd64", "#1 SMP Debian 5.10.262-1 (2025-10-01)", "5.10.262", "exact", ()),
    # kernel.org's 5.10.223 is the 5.10.223 profile, not "5.10"; a stable between two profiles names both
    ("5.10.223", None, "5.10.223", "exact", ()),
    ("5.10.240", None, "5.10.223", "nearest", ("udp_max_segments",)),
    # only one stable profile of the 6.1 line (mainline 6.1 is not what Debian ships): nothing to compare with
    # ABI 37 was first packaged from 6.1.140 (Debian changelog "Bump ABI to 37" in 6.1.140-1)
    ("6.1.0-37-amd64", None, "6.1", "nearest", ("udp_max_segments",)),
    ("6.1.0-99-amd64", None, "6.1.158", "nearest", ()),
    ("6.12.117+deb13-amd64", None, "6.12.117", "exact", ()),
    ("6.12.48+deb13-amd64", None, "6.12.117", "nearest", ("uso_needs_csum",)),
    ("7.3.4+deb13-amd64", None, "7.3.4", "exact", ()),
    ("7.2.12+deb14-arm64", None, "7.2.12", "exact", ()),
    # Ubuntu 24.04: 6.8 with Ubuntu's updates; between 6.1.158 and 6.12.117, which differ in uso_needs_csum
    ("6.8.0-45-generic", None, "6.1.158", "nearest", ("uso_needs_csum",)),
    ("6.8.0-1015-aws", None, "6.1.158", "nearest", ("uso_needs_csum",)),
    # RHEL 9 and Fedora
    ("5.14.0-427.13.1.el9_4.x86_64", None, "5.10.262", "nearest", ("page_to_skb", "udp_max_segments")),
    ("6.11.4-301.fc41.x86_64", None, "6.1.158", "nearest", ("uso_needs_csum",)),
    ("6.18.44-fc-v1045", None, "6.18", "nearest", ()),
    ("8.0.1", None, "7.3.4", "newer", ("page_to_skb", "udp_max_segments", "uso_needs_csum")),
    ("4.19.0-27-amd64", None, "5.10", "older", ("page_to_skb", "udp_max_segments", "uso_needs_csum")),
])
def test_running_profile_of_distribution_release_strings(release, version, profile, closeness, differ):
    r = live.match_profile(release, PROFILES, version)
    assert (r, r.closeness, r.may_differ) == (profile, closeness, differ)
    assert isinstance(r, str) and r.profile == profile and r.release == release
    line = r.line()
    assert line.startswith(f"kernel {release} -> model profile {profile} (")
    if closeness == "exact":
        assert "(exact)" in line
    elif closeness == "nearest" and differ:
        assert "nearest: these rules may differ: " + ", ".join(differ) in line


def test_running_profile_names_the_distribution():
    assert "Debian" in live.match_profile("5.10.0-32-amd64", PROFILES).why
    assert "uname -v" in live.match_profile("5.10.0-99-amd64", PROFILES).why
    assert "Ubuntu" in live.match_profile("6.8.0-45-generic", PROFILES).why
    assert "backported" in live.match_profile("5.14.0-427.el9_4.x86_64", PROFILES).why
    assert "Fedora" in live.match_profile("6.11.4-301.fc41.x86_64", PROFILES).why
    with pytest.raises(ValueError, match="version must be"):
        live.match_profile("6.1.0-37-amd64", PROFILES, 1)


def test_record_command_line():
    """`python -m vnetlab.live record --help` prints the usage and exits 0, writing nothing (it once took --help
    as the output path and, as root, ran the labs into a file named `--help`); bad arguments exit 2 (argparse)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        def run(*args):
            return subprocess.run([sys.executable, "-m", "vnetlab.live", *args], capture_output=True, text=True,
                                  timeout=60, cwd=tmp)

        done = run("record", "--help")
        assert done.returncode == 0 and "usage: python -m vnetlab.live record" in done.stdout
        for bad in (("record", "a", "b"), ("record", "--bogus"), (), ("record", "-o"), ("record", "--", "-x"),
                    ("play",)):
            done = run(*bad)
            assert done.returncode == 2 and "usage:" in done.stderr, bad
        assert list(Path(tmp).iterdir()) == []


def test_netlink_works_inside_a_running_event_loop():
    """pyroute2's sync sockets inside a running asyncio loop (a Jupyter kernel) raised "This event loop is
    already running" and printed "coroutine ... was never awaited" (notebook 60); live now talks netlink from
    a worker thread. RuntimeWarnings are errors here, so the warning itself fails the test."""
    code = (
        "import asyncio\n"
        "from vnetlab import live\n"
        "async def main():\n"
        "    cap = live.available(labs=False, refresh=True)\n"
        "    print(cap.feature_backend)\n"
        "    if cap.feature_backend == 'netlink':\n"
        "        print(len(live.read_features('lo', backend='netlink')) > 0)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "never awaited" not in done.stderr
    if netlink.pyroute2_error() is None and sys.platform.startswith("linux"):
        assert done.stdout.split() == ["netlink", "True"]


# ---------------------------------------------------------------------------------------------------------
# the running kernel (marker `live`: root, network namespaces and Linux; skipped with the reason otherwise)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def can_build_labs():
    cap = live.available(labs=True)
    if not cap:
        pytest.skip(cap.reason)
    return cap


def _netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _state(dev: live.LiveDevice, name: str) -> str:
    return str(dev.features()[name])


@pytest.mark.live
def test_lab_deletes_exactly_what_it_made(can_build_labs):
    before = _netns_names()
    with live.Lab(tag="t") as lab:
        second = lab.add_namespace()
        a, b = lab.veth("a0", "b0", peer_netns=second)
        assert (a.netns, b.netns) == (lab.netns, second)
        made = set(lab.namespaces)
        assert made <= _netns_names() and not made & before
        assert all(n.startswith(live.NETNS_PREFIX + "-t-") for n in made)
    assert _netns_names() == before  # only the lab's namespaces went, and all of them


@pytest.mark.live
def test_lab_cleans_up_after_an_error_and_after_its_time_budget(can_build_labs):
    before = _netns_names()
    with pytest.raises(LiveError, match="failed"):
        with live.Lab() as lab:
            lab.veth("v0", "v1")
            lab.veth("v0", "v2")  # the name is taken: `ip link add` fails
    assert _netns_names() == before
    with pytest.raises(LabTimeout, match="budget"):
        with live.Lab(timeout=0.2) as lab:
            import time

            time.sleep(0.3)
            lab.bridge("br0")
    assert _netns_names() == before


@pytest.mark.live
def test_netlink_and_ethtool_backends_agree(can_build_labs):
    if live.available().feature_backend != "netlink":
        pytest.skip("pyroute2's ethtool netlink is not available here")
    with live.Lab() as lab:
        v0, v1 = lab.veth("v0", "v1")
        mv0 = lab.macvlan("mv0", lower=v0)
        br0 = lab.bridge("br0")
        lab.set_master(v1, br0)
        v0.ethtool_K({"sg": False})
        for dev in (v0, v1, mv0, br0):
            nl = live.read_features(dev.name, netns=dev.netns, backend="netlink")
            text = live.read_features(dev.name, netns=dev.netns, backend="ethtool")
            # on, [fixed], and the request where `ethtool -k` shows one (not for a fixed feature)
            assert nl.same_printed(text), dev.name
            assert {n for n in nl.wanted if not nl[n].fixed} == {n for n in text.wanted if not text[n].fixed}


@pytest.mark.live
@pytest.mark.parametrize("backend", ["netlink", "ethtool"])
def test_set_features_behaves_like_ethtool_K(can_build_labs, backend):
    if backend == "netlink" and live.available().feature_backend != "netlink":
        pytest.skip("pyroute2's ethtool netlink is not available here")
    with live.Lab() as lab:
        v0, _ = lab.veth("v0", "v1")
        result = live.set_features("v0", {"scatter-gather": False}, netns=v0.netns, backend=backend)
        # netdev_fix_features: ALL_TSO and GSO need SG (dev.c); the request named only the two SG bits.
        assert set(result.requested) == {"tx-scatter-gather", "tx-scatter-gather-fraglist"}
        assert {"tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-generic-segmentation"} <= set(result.changed)
        assert result.not_applied == ()
        assert _state(v0, "tx-tcp-segmentation") == "off [requested on]"
        # No fix-up rule touches UDP_L4 or GSO_FRAGLIST: they stay on without SG.
        assert _state(v0, "tx-udp-segmentation") == "on" and _state(v0, "tx-gso-list") == "on"
        again = live.set_features("v0", {"tx-tcp-segmentation": True}, netns=v0.netns, backend=backend)
        assert again.not_applied == ("tx-tcp-segmentation",) and not again.changed
        live.set_features("v0", {"sg": True}, netns=v0.netns, backend=backend)
        assert _state(v0, "tx-tcp-segmentation") == "on"
        with pytest.raises(FixedFeatureError, match="rx-lro"):
            live.set_features("v0", {"rx-lro": True}, netns=v0.netns, backend=backend)
        with pytest.raises(UnknownFeatureError, match="no-such-feature"):
            live.set_features("v0", {"no-such-feature": True}, netns=v0.netns, backend=backend)
        with pytest.raises(LiveError, match="nodev"):
            live.read_features("nodev", netns=v0.netns, backend=backend)


@pytest.mark.live
def test_kernel_gso_software_through_macvlan_and_bridge(can_build_labs):
    """D.6 on the running kernel: macvlan keeps GSO_SOFTWARE whatever its lower does; a bridge's UDP_L4 and
    GSO_FRAGLIST are ONE_FOR_ALL bits and follow its ports (br_features_recompute)."""
    with live.Lab() as lab:
        v0, v1 = lab.veth("v0", "v1")
        mv0 = lab.macvlan("mv0", lower=v0)
        br0 = lab.bridge("br0")
        assert _state(br0, "tx-udp-segmentation") == "on"  # no ports: features unchanged
        lab.set_master(v1, br0)
        v0.ethtool_K({"tx-udp-segmentation": False, "tx-gso-list": False})
        assert _state(mv0, "tx-udp-segmentation") == "on [fixed]"
        assert _state(mv0, "tx-gso-list") == "on [fixed]"
        v1.ethtool_K({"tx-udp-segmentation": False})
        assert _state(br0, "tx-udp-segmentation") == "off [requested on]"
        assert _state(br0, "tx-gso-list") == "on"


# ---------------------------------------------------------------------------------------------------------
# the model (vnetlab.netdev, the running kernel's profile) against this kernel, step by step
# ---------------------------------------------------------------------------------------------------------

DEVICES, STEPS = live.MIRROR_DEVICES, live.MIRROR_STEPS

# (step label, device) pairs where the model is known to be wrong, with the reason; strict xfail so that a
# fix in vnetlab.netdev shows up as XPASS and the entry is removed.
KNOWN_MODEL_BUGS: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def model_vs_kernel(can_build_labs):
    return {(row.step, row.device): row.result for row in live.mirror_lab()}


@pytest.mark.live
@pytest.mark.parametrize(
    "step,device",
    [
        pytest.param(label, name, id=f"{i:02d}-{name}",
                     marks=[pytest.mark.xfail(strict=True, reason=KNOWN_MODEL_BUGS[(label, name)])]
                     if (label, name) in KNOWN_MODEL_BUGS else [])
        for i, (label, _ops) in enumerate(STEPS)
        for name in DEVICES
    ],
)
def test_model_matches_kernel(model_vs_kernel, step, device):
    result = model_vs_kernel[(step, device)]
    assert not isinstance(result, str), result
    assert result, f"after {step!r}:\n{result}"


@pytest.mark.live
def test_fixed_features_refused_by_kernel_and_model(can_build_labs):
    """What `[fixed]` means: the kernel ignores a request to flip it (ethnl_set_features masks the request
    with hw_features), ethtool -K accepts a request for the current value, and the model does the same."""
    net = netdev.Namespace(kernel=live.running_profile())
    model = {}
    model["v0"], model["v1"] = net.veth("v0", "v1")
    model["mv0"] = net.macvlan("mv0", lower=model["v0"])
    model["br0"] = net.bridge("br0")
    net.set_master(model["v1"], model["br0"])
    with live.Lab() as lab:
        real = {}
        real["v0"], real["v1"] = lab.veth("v0", "v1")
        real["mv0"] = lab.macvlan("mv0", lower=real["v0"])
        real["br0"] = lab.bridge("br0")
        lab.set_master(real["v1"], real["br0"])
        refused: list[str] = []
        for name, dev in real.items():
            before = dev.features()
            fixed = {n: not s.active for n, s in before.states.items() if s.fixed}
            assert fixed, name
            # Straight to the kernel, past set_features' own check: the kernel must leave them all alone.
            # NETIF_F_NEVER_CHANGE (vlan-challenged) is outside NETIF_F_ETHTOOL_BITS: asking for it is EINVAL.
            flip = {n: on for n, on in fixed.items() if n != "vlan-challenged"}
            backend = live.available().feature_backend
            (netlink.set_netlink if backend == "netlink" else device_features.set_ethtool)(dev.name, dev.netns, flip)
            assert dev.features() == before, name
            with pytest.raises(FixedFeatureError) as err:
                dev.ethtool_K(fixed)
            assert set(err.value.names) == set(fixed)
            dev.ethtool_K({n: not on for n, on in fixed.items()})  # the current values: accepted
            for feature, on in fixed.items():
                try:
                    model[name].ethtool_K({feature: on})
                except Exception as exc:
                    assert feature in str(exc), f"{name}: model error does not name {feature}: {exc}"
                else:
                    refused.append(f"{name} {feature}")
                model[name].ethtool_K({feature: not on})
        assert not refused, "the model accepted a change of a [fixed] feature: " + ", ".join(refused)
        # compare() also takes a device name and its namespace.
        cmp = live.compare(model["mv0"], "mv0", netns=lab.netns)
        assert cmp, str(cmp)


@pytest.mark.live
def test_real_features_as_a_featureset(can_build_labs):
    with live.Lab() as lab:
        v0, _ = lab.veth("v0", "v1")
        v0.ethtool_K({"tx-gso-list": False})
        active = v0.features().to_featureset()
    assert active.kernel == live.running_profile()
    assert isinstance(active, features.FeatureSet)
    # veth_setup: VETH_FEATURES has GSO_SOFTWARE, which since 5.11 includes GSO_UDP_L4 and GSO_FRAGLIST.
    assert "GSO_UDP_L4" in active and "SG" in active and "FRAGLIST" in active
    assert "GSO_FRAGLIST" not in active


def test_ci_turns_a_skipped_live_test_into_a_failure(tmp_path):
    """tests/conftest.py: under CI=true, a `live` test that skips on a machine able to run it fails."""
    import shutil as _shutil

    _shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(
        "import pytest\n\n@pytest.mark.live\ndef test_probe():\n    pytest.skip('pretend the lab is missing')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    live: live\n")

    def run(ci: str) -> str:
        env = {**__import__("os").environ, "CI": ci}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                              capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
        return done.stdout

    assert "1 skipped" in run("")
    capable = live.available(labs=True) and __import__("os").geteuid() == 0
    assert ("1 failed" if capable else "1 skipped") in run("true")


# ---------------------------------------------------------------------------------------------------------
# recorded runs (data/live/, data/lab/): what notebook 60 shows where labs cannot run
# ---------------------------------------------------------------------------------------------------------


def test_recorded_run_is_labelled_and_agrees_with_the_model():
    """data/live/6.18.44-fc-v1045.json: `python -m vnetlab.live record` as root on this machine's 6.18.44."""
    ref = live.reference()
    assert ref.release in {r.release for r in live.references()}
    assert ref.doc["kernel"]["machine"] and ref.recorded[:4].isdigit() and ref.version.startswith("#")
    label = ref.label()
    assert ref.release in label and ref.recorded[:10] in label and f"model profile {ref.profile}" in label
    rows = ref.mirror()
    assert len(rows) == len(live.MIRROR_STEPS) * len(live.MIRROR_DEVICES) and all(r.agrees for r in rows)
    for name in ("udp_segment", "veth_gro", "veth_gro_plain", "vxlan"):
        got = ref.transfers(name)
        assert got and all(r.agrees for r in got), live.transfer_table(got)
    assert str(ref.lo()["tx-scatter-gather"]) == "on [fixed]"  # drivers/net/loopback.c loopback_setup
    with pytest.raises(ValueError, match="name="):
        ref.transfers("tcp")
    with pytest.raises(ValueError, match="release="):
        live.reference("4.19.0")


def test_replay_fails_when_the_model_or_the_record_differs(monkeypatch):
    """The replay compares for real: a recorded state flipped, or a model rule changed, shows as DIFFER."""
    import copy

    ref = live.reference()
    doc = copy.deepcopy(ref.doc)
    step = next(s for s in doc["mirror"] if s["step"] == live.experiments.BRIDGE_STEPS[1])
    step["devices"]["br0"]["tx-udp-segmentation"] = "on"  # as if br0 kept USO with no port offering it
    rows = live.Reference(doc).mirror()
    bad = [r for r in rows if not r.agrees]
    assert [(r.step, r.device) for r in bad] == [(step["step"], "br0")]
    assert "tx-udp-segmentation: model off [requested on], kernel on" in live.mirror_table(rows)
    assert "kernel on" in live.bridge_ports(rows, kernel=ref.profile).splitlines()[1]
    doc = copy.deepcopy(ref.doc)
    case = doc["transfers"]["veth_gro"][4]  # XDP_PASS attached, gro off: 10 skbs, all by NAPI
    case["kernel"]["napi_skbs"] = 0
    assert not live.Reference(doc).transfers("veth_gro")[4].agrees


def test_lab_runs_name_each_kernel_and_its_date():
    """data/lab/: every lab kernel with its uname -r and date (Debian's package date from uname -v, or the
    lab build's date from /proc/version), and its comparisons with the model."""
    from vnetlab import labdata

    runs = {r.kernel: r for r in live.lab_runs()}
    assert set(runs) == set(labdata.lab_kernels())
    # data/lab/5.10/*.json kernel.uname_r and proc_version ("... Debian 5.10.223-1 (2024-08-10)")
    assert runs["5.10"].release == "5.10.0-32-amd64" and runs["5.10"].dated == "packaged 2024-08-10"
    assert runs["5.10-plain"].dated.startswith("built 20")
    assert all(a == n for r in runs.values() for _what, a, n in r.comparisons)
    table = live.lab_runs_table().splitlines()
    assert len(table) == len(runs) + 1 and max(map(len, table)) <= 100
    assert table[1].split()[:3] == ["5.10", "5.10.0-32-amd64", "5.10.223"]  # data/lab/5.10: Debian 5.10.223-1


def test_debian_abi_table_is_the_changelogs():
    """live.profile.DEBIAN_ABI_FIRST for 6.1 is each "Bump ABI to N" upload of Debian's changelog
    (tests/data/debian_abi_bumps_6.1.txt, extracted from linux-libc-dev 6.1.187-1's changelog.Debian.gz), plus
    ABI 57 = 6.1.192 from the lab's image (data/lab/6.1: linux-image-6.1.0-57-amd64 is 6.1.192-3)."""
    first: dict[int, int] = {}
    for line in (DATA / "debian_abi_bumps_6.1.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        abi, version = line.split("\t")
        patch = int(version.split("-")[0].split(".")[2])
        first[int(abi)] = min(first.get(int(abi), patch), patch)
    assert {**first, 57: 192} == live.profile.DEBIAN_ABI_FIRST[(6, 1)]


def test_lab_table_and_running_profile_name_a_debian_image_alike():
    """A Debian image of the lab (data/lab/<id>/*.json kernel.uname_r and proc_version) gets from running_profile()
    the profile the lab compares it with (vnetlab.labkernels.model_kernel), from its uname -r and uname -v, and
    from its uname -r alone (notebook 60 prints both: 5.10.0-32-amd64 is Debian 5.10.223-1, not 5.10.262)."""
    from vnetlab import labdata, labkernels

    for k in labkernels.stock_ids():
        if k not in labdata.lab_kernels():
            continue
        doc = labdata.load(labdata.configs(k)[0], k)["kernel"]
        proc = doc["proc_version"]
        want = labkernels.model_kernel(k).version
        assert live.running_profile(doc["uname_r"], proc[proc.index("#"):]) == want, k
        assert live.running_profile(doc["uname_r"]) == want, k


def test_record_needs_labs_and_says_so(monkeypatch):
    from vnetlab.live import capability, recorded

    monkeypatch.setattr(capability, "_CAPABILITY_CACHE", {True: live.Capability(False, "no labs here: uid 1000")})
    with pytest.raises(LiveUnavailable, match="uid 1000"):
        recorded.record("/nonexistent/x.json")


@pytest.mark.live
def test_xdp_attach_without_pyroute2(can_build_labs):
    """The rtnetlink message built by vnetlab.live.xdp (RTM_SETLINK, IFLA_XDP { IFLA_XDP_FD }) attaches the
    program as pyroute2 does: `ip -j link` shows it on the device (include/uapi/linux/if_link.h IFLA_XDP)."""
    import json

    with live.Lab(tag="xdp") as lab:
        v0, v1 = lab.veth("v0", "v1")
        for dev, backend in ((v0, "rtnetlink"), (v1, "pyroute2")):
            if backend == "pyroute2" and netlink.pyroute2_error():
                continue
            live.attach_xdp_pass(dev.name, dev.netns, backend=backend)
            out = subprocess.run(["ip", "-n", dev.netns, "-j", "link", "show", "dev", dev.name], capture_output=True,
                                 text=True, timeout=10, check=True).stdout
            assert json.loads(out)[0].get("xdp", {}).get("mode") == 1, out  # XDP_ATTACHED_DRV
        with pytest.raises(LiveError, match="no device .nodev."):
            live.attach_xdp_pass("nodev", v0.netns, backend="rtnetlink")
    with pytest.raises(ValueError, match="backend"):
        live.attach_xdp_pass("v0", None, backend="ioctl")


def _no_labs(monkeypatch, reason="vnetlab.live cannot build labs: this process runs as uid 1000",
             userns="user.max_user_namespaces is 0: no user namespace may be created"):
    from vnetlab.live import capability
    from vnetlab.live import userns as userns_mod

    monkeypatch.setattr(capability, "_CAPABILITY_CACHE", {True: live.Capability(False, reason),
                                                          False: live.Capability(False, "no features")})
    monkeypatch.setattr(userns_mod, "_PROBE", {"error": userns})


def test_session_without_labs_shows_the_recorded_run(monkeypatch):
    """What notebook 60 does for an ordinary user: two lines of why, then the recorded run in every section."""
    _no_labs(monkeypatch)
    run = live.session()
    ref = live.reference()
    assert not run.live and run.ref == ref and run.profile == ref.profile
    text = str(run)
    # source: the reason _no_labs plants (uid 1000 is its default input); vnetlab/live/recorded.py keeps 100 columns
    if __import__("os").geteuid() == 0:
        assert "Live labs: no. vnetlab.live cannot build labs: this process runs as uid 1000" in text
    else:  # an ordinary user: not root, and the user namespaces _no_labs refuses
        assert f"Live labs: no. uid {__import__('os').getuid()} is not root, and user namespaces are refused" in text
    assert "user.max_user_namespaces is 0" in text.replace("\n  ", " ")
    assert f"Sections 3-6 show the run recorded on Linux {ref.release}" in text.replace("\n  ", " ")
    # source: vnetlab/live/recorded.py keeps the notebooks' text outputs within 100 columns
    assert max(map(len, text.splitlines())) <= 100
    assert run.mirror() == ref.mirror() and all(r.agrees for r in run.mirror())
    assert [r.key() for r in (x.kernel for x in run.transfers("vxlan"))] == [
        r.key() for r in (x.kernel for x in ref.transfers("vxlan"))]
    assert run.lo().source == "recorded"  # features not readable here either


def test_session_off_linux_and_on_a_kernel_older_than_every_profile(monkeypatch):
    from vnetlab.live import capability, recorded

    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(capability, "_CAPABILITY_CACHE", {})
    run = live.session()
    assert not run.live and run.running is None and "Not Linux (darwin)" in str(run)
    assert "needs Linux" in run.reason and run.lo().source == "recorded"
    with pytest.raises(LiveUnavailable, match="darwin"):
        live.running_profile()
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(capability, "_CAPABILITY_CACHE", {True: live.Capability(True, "labs here", "netlink", True),
                                                          False: live.Capability(True, "features", "netlink")})
    real = live.running_profile
    monkeypatch.setattr(recorded, "running_profile", lambda *a: real(*a) if a else real("4.19.0-27-amd64"))
    old = live.session()
    assert not old.live and "older than every modelled profile" in old.reason and old.ref is not None
    assert "4.19.0-27-amd64 -> model profile 5.10 (older than every profile" in str(old).replace("\n  ", " ")
