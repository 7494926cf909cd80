"""Wall time and peak memory of a command together with every process it starts.

    python benchmarks/tree_memory.py -- ttc tune examples/h100-4096.yaml --json

``/usr/bin/time -v`` reports the largest single process it waited for; ``ttc tune`` runs its
probes as Ray tasks in worker processes that Ray starts (raylet, GCS, workers), none of which it
waits for. This samples the resident memory of the whole process tree (Linux ``/proc``) every
``--interval`` seconds and prints one JSON line on stderr: the command's wall seconds, exit code
and the peak of the tree's summed RSS. The command's own output is passed through.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _processes() -> dict[int, tuple[int, int]]:
    """pid → (parent pid, resident bytes) of every process readable in /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            statm = (entry / "statm").read_text().split()
        except OSError:  # gone between listing and reading
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        out[int(entry.name)] = (parent, int(statm[1]) * PAGE)
    return out


def tree_rss(root: int) -> int:
    """Summed resident bytes of ``root`` and all its descendants."""
    processes = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += processes.get(pid, (0, 0))[1]
        stack.extend(children.get(pid, []))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    start = time.perf_counter()
    child = subprocess.Popen(command)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(child.pid))
        time.sleep(args.interval)
    wall = time.perf_counter() - start
    print(json.dumps({"command": command, "exit_code": child.returncode, "wall_seconds": round(wall, 1),
                      "peak_tree_rss_mib": round(peak / 2**20, 1)}), file=sys.stderr)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
