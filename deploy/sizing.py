"""Sizing from the committed room load tests (deploy/results/loadtest-*.json, scenario "room"): the VM to rent for
40 and 100 attendees, and the per-user guarantees and limits of deploy/k8s/values.yaml.

    python3 deploy/sizing.py [FILE ...] [--markdown]   # default: every committed room-scenario results file

The method, so it can be checked by hand:
- What an attendee costs is measured on their whole Unix account (every process: the single-user server,
  JupyterLab's node call at start, each kernel, and children that exited between samples, from their parent's
  cutime), per phase of a room stepping together: arriving (log in, server start, the first notebook to its
  first figure), everyone running the same figure cell and answering an exercise, and everyone opening the next
  notebook (its kernel's start and imports). CPU-seconds per attendee per phase are what the machine must supply;
  they depend little on how busy the machine was (the time each step took does, and the results say how busy it
  was: steal and the other processes' CPU beside each phase).
- A phase's N attendees act within a window (arrival 5 minutes, a step 1 minute): the cores that keep the room
  responsive are N × (attendee + hub CPU per attendee) / window / TARGET_LOAD, TARGET_LOAD = 0.5 (at half load a
  request waits about as long as it runs), for the costliest phase, plus one core for the system.
- Memory: the largest per-account peak (PSS: shared pages counted once per sharer, so N attendees need about N times
  it) plus one more open kernel (what each further kernel added to the account of the attendee who kept every
  notebook open), times N, a tenth on top, plus the hub's own processes and 1 GiB for the system. The per-account
  cgroup peak and the all-notebooks-open account are reported beside it.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TARGET_LOAD = 0.5
WINDOWS_S = {"arrive": 300, "same_cell": 60, "next_notebook": 60}  # the room model (deploy/README.md)
PHASE_NAMES = {"arrive": "arriving (login, server start, first notebook to its figure)",
               "same_cell": "everyone runs the same figure cell and answers an exercise",
               "next_notebook": "everyone opens the next notebook to its first figure"}
OS_RESERVE_MIB = 1024
MEM_HEADROOM = 1.1
MEM_LIMIT_FACTOR = 2.0  # the k8s limit leaves room for a second open kernel
MEM_ROUND_MIB = 128


def measured() -> list[Path]:
    """The committed results files of the room scenario (older steady-pace files are not read)."""
    files = [f for f in sorted(RESULTS.glob("loadtest-*.json"))
             if any("phases" in r for r in json.loads(f.read_text())["runs"])]
    if not files:
        raise FileNotFoundError(f"no room load-test results in {RESULTS}: run deploy/loadtest.py")
    return files


def load(paths: list[Path] | None = None) -> dict:
    """The room runs of ``paths`` (default: every committed room results file) as one results dict."""
    paths = paths or measured()
    runs = []
    for path in paths:
        for r in json.loads(path.read_text())["runs"]:
            if "phases" in r:
                runs.append(dict(r, _file=path.name))
    return {"runs": runs, "_path": ", ".join(p.name for p in paths)}


def round_up(x: float, step: int) -> int:
    return int(math.ceil(x / step) * step)


def derive(results: dict) -> dict:
    runs = results["runs"]
    # per attendee and phase, the largest over runs (the costliest room measured)
    phase_cpu = {p: max(r["phases"][p]["per_attendee_cpu_s"] for r in runs) for p in WINDOWS_S}
    hub_cpu = {p: max(r["phases"][p]["hub_cpu_s"] / max(1, r["attendees"]) for r in runs) for p in WINDOWS_S}
    mem_typ = max(r["memory_per_attendee_mib"]["pss_peak_p50"] or 0 for r in runs)
    mem_max = max(r["memory_per_attendee_mib"]["pss_peak_max"] or 0 for r in runs)
    hub_mib = max(r["memory_hub_rss_peak_mib"] for r in runs)
    readers = [r["reader"] for r in runs if r.get("reader") and r["reader"].get("kernels_running_at_end")]
    # each kernel beyond the first: (the reader's peak - a one-kernel attendee's) / (its kernels - 1)
    extra_kernel = max(((x["pss_peak_mib"] - mem_typ) / (x["kernels_running_at_end"] - 1) for x in readers
                        if x["kernels_running_at_end"] > 1), default=mem_max)
    all_open = max((x["pss_peak_mib"] for x in readers), default=None)
    per_attendee = mem_max + extra_kernel

    def cores_for(n: int, phase: str) -> float:
        return n * (phase_cpu[phase] + hub_cpu[phase]) / WINDOWS_S[phase] / TARGET_LOAD

    def vm(n: int) -> dict:
        need = {p: round(cores_for(n, p), 1) for p in WINDOWS_S}
        worst = max(need, key=need.get)
        cores = max(2, math.ceil(need[worst]) + 1)  # +1: the system, sshd, the proxy's bursts
        mem = hub_mib + OS_RESERVE_MIB + n * per_attendee * MEM_HEADROOM
        every_open = None if all_open is None else math.ceil((hub_mib + OS_RESERVE_MIB + n * all_open) / 1024)
        return {"attendees": n, "cores": cores, "memory_gib": math.ceil(mem / 1024), "cores_by_phase": need,
                "sized_by": worst, "memory_gib_every_notebook_open": every_open}

    worst_phase = max(WINDOWS_S, key=lambda p: cores_for(1, p))
    per_core = math.floor(1 / cores_for(1, worst_phase))
    guarantee_mib = round_up(mem_typ, MEM_ROUND_MIB)
    # the limit also holds an attendee who keeps every notebook's kernel open (the load test's reader): the kernel
    # budget, as on one VM, so following the notebooks' own links never hits it
    limit_mib = round_up(max(mem_max * MEM_LIMIT_FACTOR, (all_open or 0) * MEM_HEADROOM), MEM_ROUND_MIB)
    steady = cores_for(1, "same_cell")
    cpu_guarantee = max(0.05, round(steady, 2))

    n, node_cpu, node_mib = 200, 8 - 1, (32 - 2) * 1024
    per_node = min(node_mib // guarantee_mib, math.floor(node_cpu / cpu_guarantee))
    k8s_200 = {"attendees": n, "memory_guaranteed_gib": round(n * guarantee_mib / 1024, 1),
               "cpu_guaranteed": round(n * cpu_guarantee, 1), "users_per_node": per_node,
               "nodes": math.ceil(n / per_node), "arrival_cores": math.ceil(cores_for(n, "arrive"))}
    return {
        "source": results.get("_path", ""),
        "phase_cpu_s_per_attendee": phase_cpu, "hub_cpu_s_per_attendee": {p: round(v, 2) for p, v in hub_cpu.items()},
        "windows_s": WINDOWS_S, "target_load": TARGET_LOAD, "sized_by": worst_phase,
        "memory_per_attendee_mib": mem_typ, "memory_per_attendee_peak_mib": mem_max, "hub_mib": hub_mib,
        "memory_extra_kernel_mib": round(extra_kernel, 1), "memory_every_notebook_open_mib": all_open,
        "attendees_per_core": per_core,
        "attendees_per_gib": math.floor(1024 / (per_attendee * MEM_HEADROOM) * 10) / 10,
        "k8s": {"memory_guarantee": f"{guarantee_mib}M", "memory_limit": f"{limit_mib}M",
                "cpu_guarantee": cpu_guarantee, "cpu_limit": 1.0},
        "vm": {n: vm(n) for n in (40, 100, 200)},
        "k8s_200": k8s_200,
    }


def _p(d: dict | None, unit: str = " s") -> str:
    if not d or d.get("p50") is None:
        return "none"
    return f"{d['p50']:g} / {d['p95']:g}{unit}"


def measured_table(results: dict) -> str:
    """One row per run and phase, with the machine's other load beside it."""
    rows = ["| N | phase | round trip p50 / p95 (count) | CPU per attendee | hub CPU | steal | other processes "
            "| failures, timeouts | memory per attendee (PSS peak p50 / max) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in results["runs"]:
        for p in WINDOWS_S:
            ph = r["phases"][p]
            m = ph["machine"]
            rows.append(f"| {r['attendees']} | {p.replace('_', ' ')} | {_p(ph['round_trip_s'])} "
                        f"({ph['round_trip_s']['count']}) | {ph['per_attendee_cpu_s']} s | {ph['hub_cpu_s']} s | "
                        f"{m['steal_s']} s | {m['other_cores']} cores over {ph['wall_s']} s | "
                        f"{len(r['failures'])}, {len(r['timeouts'])} | "
                        f"{r['memory_per_attendee_mib']['pss_peak_p50']} / "
                        f"{r['memory_per_attendee_mib']['pss_peak_max']} MiB |")
    return "\n".join(rows)


def sizing_table(s: dict) -> str:
    rows = ["| figure | value |", "|---|---|"]
    for p, cpu in s["phase_cpu_s_per_attendee"].items():
        rows.append(f"| CPU per attendee, {PHASE_NAMES[p]} (within {s['windows_s'][p]} s) | {cpu} s "
                    f"(+{s['hub_cpu_s_per_attendee'][p]} s the hub's) |")
    rows += [f"| memory per attendee (whole account, PSS peak: median, largest) | {s['memory_per_attendee_mib']} MiB, "
             f"{s['memory_per_attendee_peak_mib']} MiB |",
             f"| each further open kernel (the attendee who opened every notebook and closed none) | "
             f"{s['memory_extra_kernel_mib']} MiB (all eight open: {s['memory_every_notebook_open_mib']} MiB) |",
             f"| the hub's own (hub, proxy, culler, board) | {s['hub_mib']} MiB |",
             f"| attendees per core (the costliest phase, {s['sized_by'].replace('_', ' ')}, at half load) | "
             f"{s['attendees_per_core']} |",
             f"| attendees per GiB | {s['attendees_per_gib']} |"]
    vms = ["| attendees | cores (the costliest phase at half load, +1) | memory | memory if nobody closes a notebook |",
           "|---|---|---|---|"]
    vms += [f"| {n} | {v['cores']} | {v['memory_gib']} GiB | {v['memory_gib_every_notebook_open']} GiB |"
            for n, v in s["vm"].items() if n in (40, 100)]
    return "\n".join(rows) + "\n\n" + "\n".join(vms)


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    results = load([Path(a) for a in args] or None)
    s = derive(results)
    if "--markdown" in sys.argv:
        print(measured_table(results) + "\n\n" + sizing_table(s))
    else:
        print(json.dumps(s, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
