"""A study's wall time on Ray with its device actors reused across probes, against fresh actors
for every probe (``TTC_RAY_REUSE_ACTORS=0``), side by side on one Ray cluster.

Per layout (``ray_forecast``'s: one node × 2 CPU devices, or two local ``ray start`` nodes × 1),
the same study (charlm to a train loss of 1.35, probes on seed 0) runs in rounds of
fresh → reused → reused → fresh, each in a process of its own, so that drift on a noisy machine
falls on both sides alike. Reported per study: the wall time and its split (``StudyWall``), the
probes, the plan; per layout: the ratio of the medians, reused over fresh.

    nice python benchmarks/actor_reuse.py [--layouts local,two_node] [--rounds 1]
        [--out docs/results/actor_reuse.json]

prints one JSON line per study and a summary line, and writes ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(Path(__file__).parent))
from ray_forecast import RESULTS, cluster_for, connected, spec_for, study  # noqa: E402

from predictor.types import json_safe  # noqa: E402
from service.runners.study_wall import StudyWall  # noqa: E402
from worker.ray_backend.config import REUSE_ENV  # noqa: E402

WORKLOAD = "charlm"
ORDER = (False, True, True, False)  # reuse off, on, on, off: one round


def one_study(layout: str) -> dict[str, Any]:
    """The study in this process, reusing actors or not as ``TTC_RAY_REUSE_ACTORS`` says."""
    spec = spec_for(WORKLOAD, layout)
    with tempfile.TemporaryDirectory() as tmp, connected() as ray_seconds:
        plan, probes, wall = study(spec, Path(tmp) / "ttc.db")
    return {"plan": plan.config.key(), "probes": len(probes),
            "wall": StudyWall.of(ray_seconds, wall, probes).to_dict()}


def in_child(layout: str, reuse: bool, env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.json"
        subprocess.run([sys.executable, __file__, "--in-process", "--layouts", layout, "--out", str(out)],
                       env={**os.environ, **env, REUSE_ENV: "1" if reuse else "0"}, check=True)
        return {"layout": layout, "reuse": reuse, **json.loads(out.read_text())}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary = {}
    for layout in dict.fromkeys(row["layout"] for row in rows):
        walls = {reuse: [r["wall"] for r in rows if r["layout"] == layout and r["reuse"] == reuse]
                 for reuse in (False, True)}
        median = {reuse: {part: statistics.median(w[part] for w in walls[reuse])
                          for part in ("total", "actor_start")}
                  for reuse in (False, True)}
        summary[layout] = {
            "fresh_wall_s": median[False]["total"], "reused_wall_s": median[True]["total"],
            "fresh_actor_start_s": median[False]["actor_start"],
            "reused_actor_start_s": median[True]["actor_start"],
            "wall_ratio": median[True]["total"] / median[False]["total"],
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="local,two_node")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "actor_reuse.json")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # one study's child
    args = parser.parse_args()
    if args.in_process:
        args.out.write_text(json.dumps(json_safe(one_study(args.layouts))))
        return
    rows = []
    for layout in args.layouts.split(","):
        with cluster_for(layout) as (env, _):
            for reuse in ORDER * args.rounds:
                rows.append(in_child(layout, reuse, env))
                print(json.dumps(json_safe(rows[-1])), flush=True)
    summary = summarise(rows)
    print(json.dumps({"summary": summary}), flush=True)
    args.out.write_text(json.dumps(json_safe({"summary": summary, "studies": rows}), indent=1) + "\n")


if __name__ == "__main__":
    main()
