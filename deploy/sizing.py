"""Sizing from the committed load-test results (deploy/results/loadtest-*.json): attendees per core and per GiB,
the VM to rent for a room, and the per-user guarantees and limits of deploy/k8s/values.yaml.

    python3 deploy/sizing.py [FILE ...] [--markdown]   # default: every complete results file

The arithmetic, so it can be checked by hand:
- memory per attendee: the largest per-run median of the peak PSS of an attendee's processes (their server and
  the notebook's kernel), and the largest single peak; PSS counts shared library pages once per sharer, so N
  attendees need about N times it.
- CPU per action: the attendees' kernels' CPU seconds divided by the cells and control moves they completed (all
  runs); CPU per server: their single-user servers' CPU seconds (start, JupyterLab's node call, serving) per server
  started. A room logs in at once, so the servers' starts within two minutes size the cores as much as the cells.
  A load-test attendee acts every few seconds; a workshop attendee follows the schedule (docs/instructor_guide.md):
  the code cells and panels of notebooks 00-50 in its 155 minutes. The core-path demand is CPU per action times
  that pace, and a core is planned at half load so that a room pressing Run on the same cell within a few seconds
  still gets its figure back promptly.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
WORKSHOP_MINUTES_00_50 = 10 + 10 + 25 + 25 + 30 + 25 + 30  # the instructor guide's slots for notebooks 00..50
TARGET_CORE_LOAD = 0.5
ROOM_START_WINDOW_S = 120  # the room logs in within two minutes and every server should be up by then
OS_RESERVE_MIB = 1024
MEM_LIMIT_FACTOR = 2.0  # the limit leaves room for a second open kernel (an attendee who never closes one)
MEM_ROUND_MIB = 128


def measured() -> list[Path]:
    """The results files in results/ whose memory and CPU samples are complete (written since the sampler records
    its errors); results/loaded-machine/ holds the superseded runs of the loaded machine and is not read."""
    files = [f for f in sorted(RESULTS.glob("loadtest-*.json"))
             if all("sampler_errors" in r for r in json.loads(f.read_text())["runs"])]
    if not files:
        raise FileNotFoundError(f"no load-test results in {RESULTS}: run deploy/loadtest.py")
    return files


def workshop_actions() -> int:
    """Code cells plus panels of notebooks 00-50 of the student copies: what one attendee runs in the workshop."""
    import re

    total = 0
    for nb in sorted((HERE.parent / "notebooks/student").glob("[0-5][0-9]_*.ipynb")):
        cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
        panels = sum(bool(re.search(r"\bpanel\b|_panel\(|Panel\(", "".join(c["source"]))) for c in cells)
        total += len(cells) + panels
    return total


def round_up(x: float, step: int) -> int:
    return int(math.ceil(x / step) * step)


def derive(results: dict, actions: int | None = None) -> dict:
    runs = results["runs"]
    mem_typ = max(r["memory_per_attendee_mib"]["pss_peak_p50"] or 0 for r in runs)
    mem_max = max(r["memory_per_attendee_mib"]["pss_peak_max"] or 0 for r in runs)
    hub_mib = max(r["memory_hub_rss_peak_mib"] for r in runs)
    done = sum(r["cells_done"] + r["widget_round_trip_s"]["count"] for r in runs)
    kinds = [r["cpu"]["attendees_cpu_s_by_kind"] for r in runs]
    cpu_per_action = sum(k["kernel"] for k in kinds) / max(1, done)
    # per server only from runs where every server came up: elsewhere servers the client gave up on still started
    full = [r for r in runs if r["servers_started"] == r["attendees"]]
    cpu_per_server = (sum(r["cpu"]["attendees_cpu_s_by_kind"]["server"] + r["cpu"]["attendees_cpu_s_by_kind"]["other"]
                          for r in full) / max(1, sum(r["servers_started"] for r in full)))
    actions = workshop_actions() if actions is None else actions
    pace = actions / (WORKSHOP_MINUTES_00_50 * 60)  # actions per attendee-second at the workshop's pace
    cores_per_attendee = cpu_per_action * pace
    per_core = math.floor(TARGET_CORE_LOAD / cores_per_attendee)
    per_gib = math.floor(1024 / mem_typ * 10) / 10
    guarantee_mib = round_up(mem_typ, MEM_ROUND_MIB)
    limit_mib = round_up(mem_max * MEM_LIMIT_FACTOR, MEM_ROUND_MIB)
    cpu_guarantee = max(0.05, round(cores_per_attendee / TARGET_CORE_LOAD, 2))

    def vm(n: int) -> dict:
        steady = n * cores_per_attendee / TARGET_CORE_LOAD
        arrival = n * cpu_per_server / ROOM_START_WINDOW_S  # the whole room's servers started within the window
        cores = max(2, math.ceil(max(steady, arrival)) + 1)  # +1: the hub and the proxy
        mem = hub_mib + OS_RESERVE_MIB + n * mem_max * 1.25
        return {"attendees": n, "cores": cores, "memory_gib": math.ceil(mem / 1024)}

    # 200 on Kubernetes: nodes of 8 vCPU / 32 GiB, 1 vCPU and 2 GiB of each kept for the system pods
    n, node_cpu, node_mib = 200, 8 - 1, (32 - 2) * 1024
    per_node = min(node_mib // guarantee_mib, math.floor(node_cpu / cpu_guarantee))
    k8s_200 = {"attendees": n, "memory_guaranteed_gib": round(n * guarantee_mib / 1024, 1),
               "cpu_guaranteed": round(n * cpu_guarantee, 1), "users_per_node": per_node,
               "nodes": math.ceil(n / per_node), "arrival_cores": math.ceil(n * cpu_per_server / ROOM_START_WINDOW_S)}

    return {
        "source": results.get("_path", ""),
        "memory_per_attendee_mib": mem_typ, "memory_per_attendee_peak_mib": mem_max, "hub_mib": hub_mib,
        "cpu_s_per_action": round(cpu_per_action, 3), "cpu_s_per_server": round(cpu_per_server, 1),
        "workshop_actions": actions, "room_start_window_s": ROOM_START_WINDOW_S,
        "workshop_pace_s_per_action": round(1 / pace, 1),
        "cores_per_attendee": round(cores_per_attendee, 4),
        "attendees_per_core": per_core, "attendees_per_gib": per_gib,
        "k8s": {"memory_guarantee": f"{guarantee_mib}M", "memory_limit": f"{limit_mib}M",
                "cpu_guarantee": cpu_guarantee, "cpu_limit": 1.0},
        "vm": {n: vm(n) for n in (40, 100, 200)},
        "k8s_200": k8s_200,
    }


def load(paths: list[Path] | None = None) -> dict:
    """The runs of ``paths`` (default: every complete results file) as one results dict."""
    paths = paths or measured()
    runs = []
    for path in paths:
        for r in json.loads(path.read_text())["runs"]:
            runs.append(dict(r, _file=path.name))
    return {"runs": runs, "_path": ", ".join(p.name for p in paths)}


def _p(d: dict, unit: str = " s") -> str:
    if d.get("p50") is None:
        return "none"
    return f"{d['p50']:g} / {d['p95']:g}{unit}"


def measured_table(results: dict) -> str:
    """One row per N of a results file, as the instructor guide shows it."""
    rows = ["| N | from | servers up | first figure p50 / p95 | cell p50 / p95 | control → new image p50 / p95 "
            "| failures, timeouts | memory per attendee (PSS peak, median) | hub | attendees' CPU "
            "| load before → after |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["runs"]:
        load = [u.split("load average:")[1].split(",")[0].strip() for u in (r["uptime_before"], r["uptime_after"])]
        rows.append(f"| {r['attendees']} | {r['settings']['notebooks'][0][:2]} | {r['servers_started']} | "
                    f"{_p(r['first_figure_s'])} | "
                    f"{_p(r['cell_round_trip_s'])} ({r['cell_round_trip_s']['count']}) | "
                    f"{_p(r['widget_round_trip_s'])} ({r['widget_round_trip_s']['count']}) | "
                    f"{len(r['failures'])}, {len(r['timeouts'])} | "
                    f"{r['memory_per_attendee_mib']['pss_peak_p50']} MiB | {r['memory_hub_rss_peak_mib']} MiB | "
                    f"{r['cpu']['attendee_cores_used']} cores | {load[0]} → {load[1]} |")
    return "\n".join(rows)


def sizing_table(s: dict) -> str:
    rows = ["| figure | value |", "|---|---|",
            f"| memory per attendee (server + one kernel, PSS) | {s['memory_per_attendee_mib']} MiB "
            f"(peak {s['memory_per_attendee_peak_mib']} MiB) |",
            f"| the hub's own (hub, proxy, culler) | {s['hub_mib']} MiB |",
            f"| kernel CPU per action (a cell or a control move) | {s['cpu_s_per_action']} s |",
            f"| CPU per attendee's server (its start, JupyterLab's node call, serving) | {s['cpu_s_per_server']} s |",
            f"| workshop pace (notebooks 00-50: {s['workshop_actions']} actions in "
            f"{WORKSHOP_MINUTES_00_50} min) | one action per {s['workshop_pace_s_per_action']} s |",
            f"| attendees per core (core path, workshop pace) | {s['attendees_per_core']} |",
            f"| attendees per GiB | {s['attendees_per_gib']} |"]
    vms = [f"| attendees | cores (steady at half load, or all servers up in {s['room_start_window_s']} s; +1 for the "
           "hub) | memory |", "|---|---|---|"]
    vms += [f"| {n} | {v['cores']} | {v['memory_gib']} GiB |" for n, v in s["vm"].items()]
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
