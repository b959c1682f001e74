"""`./scripts/demo.sh` started again, as a person does after the first time: setup has nothing to do.

Each launch runs `bash scripts/demo.sh` in its own tmux server at 160x48 from the repository root,
with fresh XDG state and config folders, and reads the screen with `capture-pane -p` every 5 ms.
The clock starts before the tmux command that starts it and stops when the app's first frame is
drawn (the header `tau-tui` and the pane's crumb `› Queue`: the app answers keys). Then ctrl+q
quits the app and what demo.sh printed before the app took the screen is read back from the
pane's history (the pane stays after the exit), to show that no warning banner came with it.

The machine is shared, so each demo.sh launch is paired with a launch of the app alone
(`.venv/bin/tau-tui --demo`, the same measure), alternated: the difference is what demo.sh
adds (its setup check), under the same load.

Before the launches, `bash scripts/setup.sh` runs once (timed, not a launch): what makes these
starts "second" starts. Separately, `bash scripts/setup.sh` alone is timed as many times (its
part of a start). Every launch is counted: one that never shows the frame within the limit is
recorded as lost (infinity), not dropped.

Run: .venv/bin/python benchmarks/demo_restart.py [--launches 10] [--json benchmarks/results/demo_restart.json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from first_frame import first_frame_drawn  # noqa: E402
from machine_info import machine, machine_line  # noqa: E402
from percentiles import summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from tmux_screen import Screen  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.005
LIMIT_S = 120.0
#: What setuptools' and pip's banners look like; none may appear before the app.
BANNER_MARKS = ("Warning", "WARNING", "!!", "********", "DEPRECATION")


def launch(command: list[str]) -> dict:
    """One start of ``command``: seconds to the first frame, and the lines it printed before the app."""
    state = tempfile.mkdtemp(prefix="tau-demo-restart-")
    env = dict(os.environ, TERM="xterm-256color", XDG_CONFIG_HOME=f"{state}/config", XDG_STATE_HOME=f"{state}/state",
               XDG_DATA_HOME=f"{state}/data")
    env.pop("KUBECONFIG", None)
    env.pop("VIRTUAL_ENV", None)
    screen = Screen("demo", command, env)
    result: dict = {"first_frame_s": float("inf"), "printed_before_the_app": [], "exited": False, "loadavg": os.getloadavg()[0]}
    started = screen.start()
    try:
        screen.tmux("set-option", "-t", "bench", "remain-on-exit", "on")
        while time.monotonic() - started < LIMIT_S:
            if first_frame_drawn(screen.capture()):
                result["first_frame_s"] = time.monotonic() - started
                break
            time.sleep(POLL_S)
        screen.send("C-q")
        for _ in range(600):
            if screen.tmux("display-message", "-p", "-t", "bench", "#{pane_dead}").strip() == "1":
                result["exited"] = True
                break
            time.sleep(0.05)
        text = screen.tmux("capture-pane", "-p", "-S", "-", "-t", "bench")
        result["printed_before_the_app"] = [line for line in text.splitlines() if line.strip() and "Pane is dead" not in line]
    finally:
        screen.stop()
        shutil.rmtree(state, ignore_errors=True)
    return result


def time_setup() -> float:
    started = time.monotonic()
    subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], check=True, timeout=1800,
                   env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"})
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/demo_restart.json"))
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    info = machine()
    first_setup = time_setup()
    print(f"setup before the launches: {first_setup:.2f} s", flush=True)
    launches, app_alone = [], []
    for n in range(args.launches):
        launches.append(one := launch(["bash", str(REPO / "scripts" / "demo.sh")]))
        app_alone.append(alone := launch([str(REPO / ".venv" / "bin" / "tau-tui"), "--demo"]))
        print(f"launch {n + 1}/{args.launches}: demo.sh first frame {one['first_frame_s']:.2f} s (load {one['loadavg']:.1f}), "
              f"app alone {alone['first_frame_s']:.2f} s; demo.sh printed before the app: "
              f"{one['printed_before_the_app'] or 'nothing'}", flush=True)
    setup_alone = [time_setup() for _ in range(args.launches)]
    info_after = machine()
    frames = summarize(r["first_frame_s"] for r in launches)
    alone = summarize(r["first_frame_s"] for r in app_alone)
    setups = summarize(setup_alone)
    banners = [line for r in launches for line in r["printed_before_the_app"] if any(m in line for m in BANNER_MARKS)]
    print("\n" + machine_line(info, info_after))
    print(f"first frame: median {frames.p50:.2f} s, min..max {frames.min:.2f}..{frames.max:.2f} s, n={frames.n}, "
          f"lost {frames.lost}")
    print(f"the app alone: median {alone.p50:.2f} s, min..max {alone.min:.2f}..{alone.max:.2f} s, n={alone.n}, lost {alone.lost}")
    print(f"scripts/setup.sh alone: median {setups.p50:.3f} s, min..max {setups.min:.3f}..{setups.max:.3f} s, n={setups.n}")
    print(f"warning banners before the app: {len(banners)}")
    save_raw(args.json, {"machine": info, "machine_after": info_after, "args": vars(args),
                         "setup_before_launches_s": first_setup, "launches": launches, "app_alone": app_alone,
                         "setup_alone_s": setup_alone,
                         "banner_lines": banners})
    return 0


if __name__ == "__main__":
    sys.exit(main())
