"""Time of vnetlab.stack.feature_grid (build the stack, ethtool -k every device, send both GSO skbs) per call.

Before: a feature_grid() spent 67 % of its time re-validating the kernel string (features._version ran 17,740
times in 20 calls) until FeatureSet, Device and Namespace stored the resolved Kernel. Median (min) of RUNS runs of
CALLS calls each after a warm-up, in CPU time of the process (time.process_time: the 2-core machine is shared,
so wall time mostly measures the neighbours), and how often a kernel string is resolved per call (cProfile).
``--before REV`` also times git revision REV (its vnetlab/ and data/ extracted to a temporary directory and
imported from there in a subprocess), alternating ROUNDS times with this tree, and prints before, after and the
speed-up (medians of all rounds' runs; min of all).

Run: nice .venv/bin/python benchmarks/bench_feature_grid.py [--before main]
"""

import argparse
import cProfile
import functools
import json
import os
import pstats
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

RUNS = 7
CALLS = 20
ROUNDS = 2
# the first is the slow case (notebook 40's draw_stack_features(kernel="5.10", nic="router", upper="vlan"): 17,760
# features._version calls in 20 feature_grid calls before)
CASES = [("vlan on router NIC, 5.10", dict(kernel="5.10", upper="vlan", nic="router")),
         ("vlan on router NIC, 6.18", dict(kernel="6.18", upper="vlan", nic="router")),
         ("vlan_on_bond on virtio_net, 5.10", dict(kernel="5.10", upper="vlan_on_bond", nic="virtio_net")),
         ("macvlan_on_bridge on veth, 6.1", dict(kernel="6.1", upper="macvlan_on_bridge", nic="veth"))]
ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _model():
    """(build_stack, feature_grid) of the vnetlab imported. A --before revision older than vnetlab/stack.py (issue
    20) has them in viz; decided from its own files, because the editable install would otherwise serve this
    tree's stack.py to the old package."""
    import vnetlab

    if (Path(vnetlab.__file__).parent / "stack.py").exists():
        from vnetlab.stack import build_stack, feature_grid
    else:
        from vnetlab.viz.featuregrid import feature_grid
        from vnetlab.viz.stacks import build_stack
    return build_stack, feature_grid


def one(kw):
    build_stack, feature_grid = _model()
    return feature_grid(build_stack(**kw))


def timed(kw):
    one(kw)
    times = []
    for _ in range(RUNS):
        t0 = time.process_time()
        for _ in range(CALLS):
            one(kw)
        times.append((time.process_time() - t0) / CALLS)
    return times


def resolutions(kw):
    """Calls per feature_grid of the functions that turn a kernel string into its tables (cProfile)."""
    prof = cProfile.Profile()
    prof.runcall(lambda: [one(kw) for _ in range(CALLS)])
    counts = {}
    for (file, _line, fn), (cc, *_rest) in pstats.Stats(prof).stats.items():
        if file.endswith(("vnetlab/features.py", "vnetlab/profiles.py")) and fn in ("_version", "kernel", "table"):
            counts[f"{Path(file).stem}.{fn}"] = cc / CALLS
    return counts


def measure():
    """case -> (per-call CPU seconds of each run, resolutions per call)."""
    return {name: (timed(kw), resolutions(kw)) for name, kw in CASES}


def merged(results):
    """case -> (median, min, resolutions) over the runs of several measure() results."""
    out = {}
    for name in results[0]:
        times = [t for r in results for t in r[name][0]]
        out[name] = (statistics.median(times), min(times), results[0][name][1])
    return out


def measure_revision(rev):
    """measure() of git revision ``rev``, imported from an extracted copy (not the editable install)."""
    with tempfile.TemporaryDirectory(prefix="bench_feature_grid_") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "vnetlab", "data"], capture_output=True,
                                 check=True, timeout=120).stdout
        tar_path = Path(tmp) / "rev.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
        (Path(tmp) / "vnetlab" / "data").symlink_to(Path(tmp) / "data")  # setuptools' package-dir mapping
        env = {**os.environ, "PYTHONPATH": tmp}
        out = subprocess.run([sys.executable, __file__, "--json"], cwd=tmp, env=env, capture_output=True,
                             text=True, check=True, timeout=1800).stdout
    return json.loads(out)


def show(label, results):
    for name, (t, t_min, calls) in results.items():
        counts = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(calls.items()))
        print(f"{label:7s} {name:34s} {t * 1e3:7.2f} ms ({t_min * 1e3:7.2f})  per call: {counts}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="REV", help="also time this git revision (e.g. main)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the --before subprocess
    args = ap.parse_args()
    if args.json:
        json.dump(measure(), sys.stdout)
        sys.exit(0)
    print(f"feature_grid: CPU time per call, median (min) of {RUNS} runs of {CALLS} calls; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    befores, afters = [], []
    for _ in range(ROUNDS if args.before else 1):
        if args.before:
            befores.append(measure_revision(args.before))
        afters.append(measure())
    before = merged(befores) if befores else None
    after = merged(afters)
    if before:
        show("before", before)
    show("after", after)
    if before:
        for name in after:
            print(f"speed-up {name:34s} median {before[name][0] / after[name][0]:5.1f}x, "
                  f"min {before[name][1] / after[name][1]:5.1f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
