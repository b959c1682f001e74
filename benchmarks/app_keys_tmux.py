"""What a person at a terminal sees on `tau-tui --demo large`, timed through tmux.

The real `tau-tui --demo large` (20,000 Workloads, 2,000 nodes, the simulated cluster ticking in
real time) runs in its own tmux server at 160x48; keys go in with `send-keys` and the screen is
read with `capture-pane -p` every 5 ms, as the terminal tests do.  Measured:

- launch → the queue pane shows workload rows (`job-NNNNN`);
- per typed filter character: until the character is on the command line (the key answered);
  after the last one, until every workload row on screen matches the text (the filter applied
  to 20,000 rows);
- esc: until the filter is gone from the header;
- pane switches `4` (Runs) and `6` (Nodes), `3` back: until the pane's crumb shows, and until its
  table shows rows.

Every key's clock starts before its `tmux send-keys` runs (``Screen.send`` returns that moment)
and nothing is subtracted: the numbers include tmux's own send/capture round trip (a few ms), so
they are an upper bound on the app's latency.  Prints p50, p90, p99 (the max, named so, below 100
samples) and min..max by nearest rank (benchmarks/percentiles.py) with the machine line; raw
samples to JSON.

Run: .venv/bin/python benchmarks/app_keys_tmux.py [--rounds 5] [--json benchmarks/results/app_keys_tmux.json]
     [--sim-in-process]  (the simulated cluster in the app's process, as before it had its own: an A/B)
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
from percentiles import summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from tmux_screen import Screen  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ROW = re.compile(r"job-\d{5}")
NODE_ROW = re.compile(r"\b(h100|a100)-\d+\b")
FILTERS = ["job-123", "lq-07", "job-1999", "pending", "team-03"]
POLL_S = 0.005
LAUNCH_LIMIT_S = 1800.0
KEY_LIMIT_S = 120.0


def wait_screen(screen: Screen, seen: Callable[[str], bool], limit: float, since: float | None = None) -> tuple[float, str]:
    """Seconds from ``since`` (a key's ``Screen.send`` time; default now) until ``seen(capture)``
    holds (``inf`` past ``limit``), and the last capture."""
    started = time.monotonic() if since is None else since
    text = ""
    while time.monotonic() - started < limit:
        text = screen.capture()
        if seen(text):
            return time.monotonic() - started, text
        time.sleep(POLL_S)
    return float("inf"), text


def header_lines(text: str) -> str:
    return "\n".join(text.splitlines()[:2])


def command_line(text: str) -> str:
    """The line above the footer: the ``:``/``/`` prompt and what was typed."""
    lines = text.splitlines()
    return lines[-2] if len(lines) >= 2 else ""


def rows_match(text: str, wanted: str) -> bool:
    rows = [line for line in text.splitlines()[3:-3] if ROW.search(line)]
    return bool(rows) and all(wanted.lower() in line.lower() for line in rows)


def summary(values: list[float]) -> str:
    return summarize(values).label()


def run(rounds: int, sim_in_process: bool) -> dict[str, list[float]]:
    home = tempfile.mkdtemp(prefix="tau-keys-tmux-")
    env = dict(os.environ, TERM="xterm-256color", HOME=home, XDG_CONFIG_HOME=f"{home}/config",
               XDG_STATE_HOME=f"{home}/state", XDG_DATA_HOME=f"{home}/data", XDG_CACHE_HOME=f"{home}/cache",
               TAU_TUI_SIM_IN_PROCESS="1" if sim_in_process else "")
    env.pop("KUBECONFIG", None)
    command = [str(Path(sys.executable).parent / "tau-tui"), "--demo", "large", "--pane", "queue"]
    screen = Screen("tau-tui", command, env)
    samples: dict[str, list[float]] = {k: [] for k in (
        "launch_to_rows", "filter_line_opens", "filter_key_echo", "filter_applied", "esc_clears", "runs_crumb", "runs_rows",
        "nodes_crumb", "nodes_rows", "queue_crumb")}
    screen.start()
    try:
        took, _ = wait_screen(screen, lambda t: bool(ROW.search(t)), LAUNCH_LIMIT_S)
        samples["launch_to_rows"].append(took)
        print(f"launch → workload rows: {took:.1f} s", flush=True)
        for round_ in range(rounds):
            text = FILTERS[round_ % len(FILTERS)]
            sent = screen.send("/", literal=True)
            opened, _ = wait_screen(screen, lambda t: command_line(t).lstrip().startswith("/"), KEY_LIMIT_S, sent)
            samples["filter_line_opens"].append(opened)
            for n in range(1, len(text) + 1):
                typed = text[:n]
                sent = screen.send(text[n - 1], literal=True)
                echo, _ = wait_screen(screen, lambda t, typed=typed: typed in command_line(t), KEY_LIMIT_S, sent)
                samples["filter_key_echo"].append(echo)
            # applied: every workload row on screen matches the whole text (the header shows the
            # filter as soon as it is typed; the rows change when the pane's collect comes back)
            # (and the header names it: rows that all match already, "pending", are not the filter applied)
            applied, _ = wait_screen(screen, lambda t, text=text: rows_match(t, text) and f"filter: {text}" in header_lines(t),
                                     KEY_LIMIT_S, sent)
            samples["filter_applied"].append(applied)
            sent = screen.send("Escape")  # in the filter line: closes it and clears the filter (k9s)
            took, _ = wait_screen(screen, lambda t: "filter:" not in header_lines(t), KEY_LIMIT_S, sent)
            samples["esc_clears"].append(took)
            for key, crumb, rows_key, rows in (("4", "› Runs", "runs_rows", ROW), ("6", "› Nodes", "nodes_rows", NODE_ROW),
                                               ("3", "› Queue", None, ROW)):
                sent = screen.send(key, literal=True)
                took, _ = wait_screen(screen, lambda t, crumb=crumb: crumb in header_lines(t), KEY_LIMIT_S, sent)
                samples[f"{crumb[2:].lower()}_crumb"].append(took)
                if rows_key:
                    filled, _ = wait_screen(screen, lambda t, rows=rows: bool(rows.search("\n".join(t.splitlines()[3:]))),
                                            KEY_LIMIT_S, sent)
                    samples[rows_key].append(filled)
            print(f"round {round_ + 1}/{rounds} done", flush=True)
    finally:
        screen.stop()
        shutil.rmtree(home, ignore_errors=True)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/app_keys_tmux.json"))
    parser.add_argument("--sim-in-process", action="store_true",
                        help="run the simulated cluster in the app's process (as before it had its own)")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    info = machine()
    samples = run(args.rounds, args.sim_in_process)
    info_after = machine()
    print(f"\nsimulated cluster: {'in the app' if args.sim_in_process else 'its own process'}")
    print(machine_line(info, info_after))
    for name, values in samples.items():
        print(f"{name:18} {summary(values)}")
    save_raw(args.json, {"machine": info, "machine_after": info_after, "sim_in_process": args.sim_in_process,
                         "samples": samples})
    return 0


if __name__ == "__main__":
    sys.exit(main())
