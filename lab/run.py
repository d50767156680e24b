"""The real-kernel lab: boot Debian's kernels (stock and one-patch builds) in QEMU with virtio-net NICs and measure.

``python -m lab run`` does everything, unattended and bounded in time, for every kernel and configuration in
lab/experiments.py PLAN (``--kernel`` and ``--only`` select):

1. kernel: a stock Debian image (``apt-get download`` through the lab's private apt configuration, unpacked with
   ``dpkg-deb -x``, never installed; lab/kernels.py) or a one-patch build from Debian's source (lab/build.py);
   vmlinux's BTF gives the sk_buff offsets the kprobes read.
2. initramfs (lab/guestfs.py): busybox-static, lab/guest/init, udptool, ip/ethtool/nft with their libraries, and
   the modules the stock kernels need.
3. one QEMU boot per configuration (lab/qemu.py), KVM when it works, else TCG, each under a timeout; the NICs are
   wired in pairs through taps in a private network namespace (or QEMU hubs), removed afterwards.
4. the console is parsed (lab/parse.py) into data/lab/<kernel>/<config>.json.

``python -m lab parse`` rewrites data/lab/ from the console logs of the last run; ``python -m lab build NAME``
builds one-patch kernels without booting them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import time
from pathlib import Path

from lab import build as lab_build
from lab import experiments, guestfs, kernels, parse, qemu
from lab import profile as lab_profile
from lab.util import log, sh

LAB = Path(__file__).resolve().parent
ROOT = LAB.parent
WORK = LAB / "work"
DATA = ROOT / "data" / "lab"
SCHEMA = 2


def plugin_so(work: Path) -> Path:
    """lab/tcg/insncount.c built as a QEMU plugin (gcc -shared)."""
    src = LAB / "tcg" / "insncount.c"
    so = work / "insncount.so"
    if not so.exists() or so.stat().st_mtime < src.stat().st_mtime:
        sh(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", str(so), str(src)], timeout=120)
    return so


def kernel_record(kern: dict, offsets: dict) -> dict:
    rec = {"id": kern["id"], "kind": kern["kind"], "package": kern["package"],
           "package_version": kern["package_version"], "release": kern["release"], "btf_offsets": offsets}
    if kern["kind"] == "stock":
        rec["suite"] = kern["suite"]
    else:
        b = kern["build"]
        rec["source"] = b["source"]
        rec["build"] = {k: b[k] for k in ("name", "description", "patches", "config_fragment",
                                          "config_fragment_sha256", "config_sha256", "compiler", "make",
                                          "build_seconds", "make_seconds")}
    from vnetlab import labdata

    rec["model"] = labdata.model_profile(kern["id"])
    return rec


def predictions(kid: str, cfg: experiments.Config) -> dict | None:
    """What the model says before the boot (recorded beside the measurement)."""
    if not cfg.router:
        return None
    from vnetlab import labdata

    return labdata.router_prediction(kid, experiments.ROUTER_SIZE, experiments.ROUTER_COUNT).as_dict()


def write_result(kid: str, cfg: experiments.Config, meta: dict, console: str, out: Path,
                 plugin_log: str = "") -> dict:
    res = parse.parse_console(console, cfg, plugin_log)
    doc = dict(meta)
    doc["guest"] = {"modules": meta["modules"], "virtio_features": res.get("virtio_features"),
                    "links": res.get("links"), "kprobe_events": res.get("kprobe_events"),
                    "mergeable_rx_buffer_size_before": res.get("mergeable_rx_buffer_size_before"),
                    "mergeable_rx_buffer_size_after": res.get("mergeable_rx_buffer_size_after"),
                    "slab_object_size": res.get("slab_object_size")}
    del doc["modules"]
    doc["kernel"] = dict(meta["kernel"], uname_r=res.get("uname_r"), proc_version=res.get("proc_version"))
    if cfg.rx_sizes:
        doc["rx"] = {"payload_sizes_sent": cfg.rx_sizes * cfg.repeat, "l4": "udp", "ip": 4,
                     "sender": res.get("rx_sender"), "receiver": res.get("receiver_rx"), "packets": res["rx"]}
    if cfg.features:
        doc["features"] = {"steps": [{"dev": d, "args": a} for d, a in experiments.STEPS],
                           "reset": experiments.RESET_K, "ethtool_K": res["ethtool_K"], "ethtool_k": res["features"]}
    if cfg.gso:
        doc["gso"] = {"gso_size": experiments.GSO_SIZE, "payloads": [int(x) for x in experiments.GSO_PAYLOADS.split()],
                      "receiver": res.get("receiver_gso"), "cases": res["gso"]}
    if cfg.router:
        doc["router"] = {"payload": experiments.ROUTER_SIZE, "count": experiments.ROUTER_COUNT,
                         "gro_flush_timeout_ns": experiments.GRO_FLUSH_TIMEOUT_NS, "nft": res.get("nft"),
                         "ethtool_k": res.get("router_ethtool"), "links": res.get("router_links"),
                         "cases": res["router"]}
    if cfg.rate:
        doc["rate"] = {"payload": experiments.RATE_SIZE, "setup": res.get("rate_setup"),
                       "interrupts": res.get("rate_interrupts"), "runs": res["rate"],
                       "plugin": "lab/tcg/insncount.c" if cfg.plugin else None}
    dest = out / kid
    dest.mkdir(parents=True, exist_ok=True)
    (dest / f"{cfg.name}.json").write_text(parse.dumps(doc) + "\n")
    return res


def reparse(work: Path, out: Path, kids: list[str]) -> int:
    """Rebuild data/lab/<kernel>/*.json from the console logs and run metadata of the last run (no QEMU)."""
    n = 0
    for kid in kids:
        runs = work / "runs" / kid
        for cfg in (experiments.CONFIGS[c] for c in experiments.PLAN.get(kid, [])):
            meta_path, log_path = runs / f"run-{cfg.name}.json", runs / f"console-{cfg.name}.log"
            if meta_path.exists() and log_path.exists():
                plog = runs / f"plugin-{cfg.name}.log"
                write_result(kid, cfg, json.loads(meta_path.read_text()), log_path.read_text(errors="replace"), out,
                             plog.read_text(errors="replace") if plog.exists() else "")
                log(f"rewrote {out / kid / (cfg.name + '.json')}")
                n += 1
    if not n:
        log(f"no console logs to parse under {work / 'runs'} for {', '.join(kids)} (python -m lab run writes them)")
    return 0 if n else 1


def boot(kid: str, kern: dict, cfg: experiments.Config, offsets: dict, initrd: Path, modnames: list[str],
         args: argparse.Namespace, accel: str, timeout: int) -> bool:
    runs = args.work / "runs" / kid
    runs.mkdir(parents=True, exist_ok=True)
    backend = cfg.backend or args.backend
    probes = kernels.probes_for(kern["release"])
    conf = experiments.guest_conf(cfg, offsets, probes, timeout - 15)
    run_initrd = runs / f"initramfs-{cfg.name}.cpio"
    run_initrd.write_bytes(initrd.read_bytes() + guestfs.newc([("lab.conf", 0o100644, conf.encode())]))
    prediction = predictions(kid, cfg)
    plugin = (plugin_so(args.work), runs / f"plugin-{cfg.name}.log") if cfg.plugin else None
    if plugin:
        plugin[1].unlink(missing_ok=True)
    wire = (qemu.TapWire(str(os.getpid()), cfg.nics) if backend == "tap" else qemu.HubWire(cfg.nics))
    with wire:
        argv = qemu.argv(kern, run_initrd, wire.netdev_args(), accel, device_props=cfg.device_props, smp=cfg.smp,
                         plugin=plugin, tcg_single_thread=cfg.tcg_single_thread)
        log(f"boot {kid} {cfg.name}: {cfg.description[:90]}")
        console, secs, timed_out = qemu.run(argv, wire.prefix(), runs / f"console-{cfg.name}.log", timeout)
    plugin_log = plugin[1].read_text(errors="replace") if plugin and plugin[1].exists() else ""
    res = parse.parse_console(console, cfg, plugin_log)
    ok = res["done"] and not timed_out and (not cfg.rx_sizes or res["rx"])
    log(f"  {kid} {cfg.name}: {secs:.1f} s, {'ok' if ok else 'FAILED'}; {len(res['rx'] or [])} rx packets, "
        f"{len(res['features'])} ethtool -k, {len(res['gso'])} gso cases, {len(res['router'])} router cases, "
        f"{len(res['rate'])} rate runs")
    if not ok:
        return False
    def rel(p: object) -> str:
        return str(p).replace(str(args.work), "lab/work")

    meta = {
        "schema": SCHEMA, "config": cfg.name, "description": cfg.description, "stages": cfg.stages,
        "kernel": kernel_record(kern, offsets),
        "qemu": {"version": qemu.version(), "accel": accel, "backend": backend, "argv": [rel(a) for a in argv],
                 "device_props": cfg.device_props, "smp": cfg.smp, "wire": wire.describe()},
        "modules": modnames, "run_seconds": round(secs, 1),
    }
    if prediction is not None:
        meta["prediction"] = prediction
    (runs / f"run-{cfg.name}.json").write_text(json.dumps(meta, indent=1))
    write_result(kid, cfg, meta, console, args.out, plugin_log)
    log(f"  wrote {args.out / kid / (cfg.name + '.json')}")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="fetch/build the kernels, boot each configuration, write data/lab/")
    r.add_argument("--kernel", nargs="*", help="kernels to run (default: all): " + ", ".join(experiments.PLAN))
    r.add_argument("--only", nargs="*", help="configurations to run (default: each kernel's plan): "
                   + ", ".join(experiments.CONFIGS))
    r.add_argument("--backend", choices=("tap", "hub"), default="tap",
                   help="how the NICs are wired (default tap: vnet headers, offloads negotiated)")
    r.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    r.add_argument("--timeout", type=int, default=0, help="seconds per QEMU boot (default 240 KVM, 1200 TCG)")
    r.add_argument("--work", type=Path, default=WORK)
    r.add_argument("--out", type=Path, default=DATA, help="where the JSON results go (default data/lab/)")
    p = sub.add_parser("parse", help="rewrite data/lab/ from the console logs of the last run (no QEMU)")
    p.add_argument("--kernel", nargs="*")
    p.add_argument("--work", type=Path, default=WORK)
    p.add_argument("--out", type=Path, default=DATA)
    b = sub.add_parser("build", help="build one-patch kernels (no boot): " + ", ".join(lab_build.VARIANTS))
    b.add_argument("names", nargs="*")
    b.add_argument("--work", type=Path, default=WORK)
    lab_profile.add_arguments(sub.add_parser("profile", help="derive a kernel's profile from its source tree"))
    args = ap.parse_args(argv)
    if args.cmd == "profile":
        return lab_profile.run(args)
    if args.cmd == "parse":
        unknown = [k for k in args.kernel or [] if k not in experiments.PLAN]
        if unknown:
            p.error(f"--kernel {' '.join(unknown)}: no such lab kernel id; known: {', '.join(experiments.PLAN)}")
        return reparse(args.work, args.out, args.kernel or list(experiments.PLAN))
    if args.cmd == "build":
        return lab_build.main_build(args.names or list(lab_build.VARIANTS), args.work)
    # SIGTERM (a CI timeout, kill PID) unwinds like Ctrl-C: QEMU is stopped and the netns deleted.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if os.geteuid() != 0:
        raise SystemExit("the lab needs root (network namespace and tap devices for QEMU)")
    for tool, pkg in (("qemu-system-x86_64", "qemu-system-x86"), ("pahole", "dwarves"), ("gcc", "gcc"),
                      ("ethtool", "ethtool"), ("ip", "iproute2")):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} missing: apt-get install -y {pkg}")
    kids = args.kernel or list(experiments.PLAN)
    for kid in kids:
        if kid not in experiments.PLAN:
            raise SystemExit(f"unknown kernel {kid!r}; known: {', '.join(experiments.PLAN)}")
    for name in args.only or []:
        if name not in experiments.CONFIGS:
            raise SystemExit(f"unknown configuration {name!r}; known: {', '.join(experiments.CONFIGS)}")
    t_start = time.monotonic()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    failures, accel = 0, None
    for kid in kids:
        configs = [experiments.CONFIGS[c] for c in experiments.PLAN[kid] if not args.only or c in args.only]
        if not configs:
            continue
        t_kernel = time.monotonic()
        kern = kernels.resolve(kid, args.work)
        offsets = kernels.btf_offsets(kern["vmlinux"])
        initrd, modnames = guestfs.build_initramfs(args.work, kern)
        if accel is None:
            if args.accel == "auto":
                usable, why = qemu.kvm_usable(kern, args.work)
                accel = "kvm" if usable else "tcg"
                log(f"accel {accel}: {why}")
            else:
                accel = args.accel
        timeout = args.timeout or (240 if accel == "kvm" else 1200)
        log(f"kernel {kid}: {kern['release']} ({kern['package']} {kern['package_version']}), "
            f"ready in {time.monotonic() - t_kernel:.0f} s")
        for cfg in configs:
            failures += not boot(kid, kern, cfg, offsets, initrd, modnames, args, accel, timeout)
    log(f"total {time.monotonic() - t_start:.1f} s, {failures} boot(s) failed")
    return 1 if failures else 0
