"""Start to the first frame of `tau-tui --demo` and `--demo large`, as a person at a terminal sees it.

Each launch runs the real `tau-tui` in its own tmux server at 160x48, with a fresh HOME (no
settings, no state), and reads the screen with `capture-pane -p` every 5 ms.  Measured from the
tmux command that starts it:

- first frame: the header (`tau-tui`) and the pane's crumb (`› Queue`) are drawn: the app answers keys;
- queue screen: the queue pane shows its data (`CQ ` rows on `--demo`; workload rows `job-NNNNN`
  on `--demo large`, whose world of 20,000 Workloads is built first);
- RSS of the app's process when the queue screen is drawn.

The numbers include tmux's start and one capture round trip (a few ms).  Prints the median,
min..max and n per measure with the machine line; raw samples to JSON.

Run: .venv/bin/python benchmarks/first_frame.py [--launches 5] [--large-launches 3]
     [--json benchmarks/results/first_frame.json]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine, machine_line  # noqa: E402
from percentiles import median  # noqa: E402
from raw_results import save_raw  # noqa: E402
from tmux_screen import Screen  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.005
WORKLOAD_ROW = re.compile(r"job-\d{5}")
#: What shows each scenario's queue data, and how long a launch may take to show it.
QUEUE_DATA: dict[str, tuple[Callable[[str], bool], float]] = {
    "demo": (lambda text: "CQ jobqueue" in text, 60.0),
    "large": (lambda text: bool(WORKLOAD_ROW.search(text)), 600.0),
}


def first_frame_drawn(text: str) -> bool:
    head = text.splitlines()[:2]
    return len(head) == 2 and "tau-tui" in head[0] and "› Queue" in head[1]


def launch(scenario: str) -> dict[str, float]:
    """One launch: seconds to the first frame and to the queue screen, and the RSS then (MB)."""
    home = tempfile.mkdtemp(prefix="tau-first-frame-")
    env = dict(os.environ, TERM="xterm-256color", HOME=home, XDG_CONFIG_HOME=f"{home}/config",
               XDG_STATE_HOME=f"{home}/state", XDG_DATA_HOME=f"{home}/data", XDG_CACHE_HOME=f"{home}/cache")
    env.pop("KUBECONFIG", None)
    command = [str(Path(sys.executable).parent / "tau-tui"), "--demo", scenario, "--pane", "queue"]
    screen = Screen("tau-tui", command, env)
    shows_data, limit = QUEUE_DATA[scenario]
    result = {"first_frame_s": float("inf"), "queue_screen_s": float("inf"), "rss_mb": float("nan")}
    started = screen.start()
    try:
        while time.monotonic() - started < limit:
            text = screen.capture()
            now = time.monotonic() - started
            if result["first_frame_s"] == float("inf") and first_frame_drawn(text):
                result["first_frame_s"] = now
            if shows_data(text):
                result["queue_screen_s"] = now
                result["rss_mb"] = screen.rss()[0]
                break
            time.sleep(POLL_S)
    finally:
        screen.stop()
        shutil.rmtree(home, ignore_errors=True)
    return result


def summary(values: list[float], unit: str = "s") -> str:
    finite = [v for v in values if v == v and v != float("inf")]
    if not finite:
        return "no sample"
    lost = len(values) - len(finite)
    return (f"median {median(finite):.2f} {unit}, min..max {min(finite):.2f}..{max(finite):.2f} {unit}, "
            f"n={len(finite)}" + (f", {lost} past the limit" if lost else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=5, help="launches of --demo")
    parser.add_argument("--large-launches", type=int, default=3, help="launches of --demo large (0: none)")
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/first_frame.json"))
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    info = machine()
    samples: dict[str, list[dict[str, float]]] = {}
    for scenario, count in (("demo", args.launches), ("large", args.large_launches)):
        for n in range(count):
            samples.setdefault(scenario, []).append(one := launch(scenario))
            print(f"--demo {scenario} launch {n + 1}/{count}: first frame {one['first_frame_s']:.2f} s, "
                  f"queue screen {one['queue_screen_s']:.2f} s, RSS {one['rss_mb']:.0f} MB", flush=True)
    info_after = machine()
    print("\n" + machine_line(info, info_after))
    for scenario, runs in samples.items():
        print(f"--demo {scenario}")
        print(f"  first frame   {summary([r['first_frame_s'] for r in runs])}")
        print(f"  queue screen  {summary([r['queue_screen_s'] for r in runs])}")
        print(f"  RSS then      {summary([r['rss_mb'] for r in runs], 'MB')}")
    save_raw(args.json, {"machine": info, "machine_after": info_after, "samples": samples})
    return 0


if __name__ == "__main__":
    sys.exit(main())
