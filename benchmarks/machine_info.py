"""The machine line every benchmark table carries: CPUs, model, Python, date and load."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime


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
            "loadavg": os.getloadavg()[0]}
