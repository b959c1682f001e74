"""The machine line every benchmark table carries: CPUs, model, Python, date and load."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tree() -> str:
    """The commit the benchmark ran on, ``+changes`` when the work tree differed from it (the raw
    results of other runs under benchmarks/results/ aside: they are what benchmarks write)."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)benchmarks/results"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + (" +changes" if dirty else "")


def machine() -> dict:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            # The development machine is shared: the 1-minute load average says how contended a run was.
            "loadavg": os.getloadavg()[0], "tree": tree()}


def machine_line(info: dict, after: dict | None = None) -> str:
    """``machine: 2 CPUs <model>, Python 3.11.7, <date>``, and the load before → after a run when given."""
    line = f"machine: {info['nproc']} CPUs {info['cpu']}, Python {info['python']}, {info['date']}"
    return line + (f", load {info['loadavg']:.1f} → {after['loadavg']:.1f}" if after is not None else "")
