"""What a person at a terminal sees on `tau-tui --demo large` (or `--scenario xl`), timed through tmux.

The real `tau-tui --demo large` (20,000 Workloads, 2,000 nodes, the simulated cluster ticking in
real time; `xl`: 100,000 Workloads, 10,000 nodes) runs in its own tmux server at 160x48; keys go in
with `send-keys` and the screen is read with `capture-pane -p` every 5 ms, as the terminal tests do.
Measured:

- launch → the simulated cluster's world built (its socket appears), → the queue pane shows
  workload rows (`job-NNNNN`), → the whole list (the counts line adds up to every Workload);
- while the lists still come (rows shown, counts not yet whole): `/` and esc, until the filter
  line opens and closes;
- j/k on the queue pane: until the cursor has moved (two adjacent lines restyled);
- per typed filter character: until the character is on the command line (the key answered);
  after the last one, until every workload row on screen matches the text (the filter applied
  to 20,000 rows);
- esc: until the filter is gone from the header;
- pane switches `4` (Runs) and `6` (Nodes), `3` back: until the pane's crumb shows, and until its
  table shows rows;
- then keys quiet until the app's full heap settle ran (at most SETTLE_WAIT_LIMIT_S): how long
  each settle's collection and trim took and each middle collection, from the app's own collection
  log (TAU_TUI_COLLECTION_LOG); every thread waits for a collection, so a key pressed during one
  waits as long;
- RSS (VmRSS, VmHWM) of the app's process and of the simulated cluster's, at the rows, the whole
  list, the end and after the settle; `uptime` before and after (the machine is shared).

Every key's clock starts before its `tmux send-keys` runs (``Screen.send`` returns that moment)
and nothing is subtracted: the numbers include tmux's own send/capture round trip (a few ms), so
they are an upper bound on the app's latency.  Prints p50, p90, p99 (the max, named so, below 100
samples) and min..max by nearest rank (benchmarks/percentiles.py) with the machine line; raw
samples to JSON.

Run: .venv/bin/python benchmarks/app_keys_tmux.py [--rounds 5] [--json benchmarks/results/app_keys_tmux.json]
     [--scenario xl]  (five times the scale; --json defaults to benchmarks/results/app_keys_tmux_xl.json)
     [--sim-in-process]  (the simulated cluster in the app's process, as before it had its own: an A/B)
     [--quiet-while-listing]  (no `/`/esc while the lists come: the whole list without keys pressed)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine, machine_line  # noqa: E402
from percentiles import summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from remote_link import cursor_moved, styled  # noqa: E402
from tmux_screen import Screen, command_line, header_lines, rows_match  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ROW = re.compile(r"job-\d{5}")
NODE_ROW = re.compile(r"\b(h100|a100)-\d+\b")
FILTERS = ["job-123", "lq-07", "job-1999", "pending", "team-03"]
#: Workloads each scenario holds: the counts line adds up to this once the whole list is in.
WORKLOADS = {"large": 20_000, "xl": 100_000}
COUNTS = re.compile(r"workloads: (\d+) pending, (\d+) quotaReserved, (\d+) admitted, (\d+) finished")
CURSOR_KEYS = ["j"] * 5 + ["k"] * 5
POLL_S = 0.005
LAUNCH_LIMIT_S = 1800.0
KEY_LIMIT_S = 120.0
#: A j/k whose move is not seen in this long is counted lost (inf), not waited for further.
CURSOR_LIMIT_S = 10.0
#: After the rounds, keys stay quiet this long at most for the app's full heap settle (due once a
#: minute, started by a 15 s tick once keys have been quiet 30 s: startup/heap.py, heap_upkeep.py).
SETTLE_WAIT_LIMIT_S = 120.0


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






def summary(values: list[float]) -> str:
    return summarize(values).label()


def whole_list(text: str, workloads: int) -> bool:
    counts = COUNTS.search(text)
    return counts is not None and sum(int(n) for n in counts.groups()) == workloads


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def process_rss(pid: int | None) -> dict[str, dict[str, float]]:
    """VmRSS and VmHWM (MB) and CPU seconds of the app's process and of each child (the simulated cluster's)."""
    if pid is None:
        return {}
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*"):  # a child is listed under the thread that started it
        try:
            children += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    out = {}
    for name, each in [("app", pid), *((f"child {c}", c) for c in children)]:
        values = {"VmRSS": 0.0, "VmHWM": 0.0}
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                key = line.split(":")[0]
                if key in values:
                    values[key] = int(line.split()[1]) / 1024
        except OSError:
            continue
        try:  # CPU seconds so far (utime + stime), fields 14 and 15 of /proc/PID/stat
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            cpu_s = float("nan")
        out[name] = {"rss_mb": round(values["VmRSS"], 1), "peak_mb": round(values["VmHWM"], 1), "cpu_s": round(cpu_s, 1)}
    return out


def time_cursor_key(screen: Screen, key: str) -> float:
    """Until the cursor has moved: two adjacent lines restyled, their text unchanged (inf past the limit)."""
    before = styled(screen)
    sent = screen.send(key, literal=True)
    while time.monotonic() - sent < CURSOR_LIMIT_S:
        if cursor_moved(before, styled(screen)):
            return time.monotonic() - sent
        time.sleep(POLL_S)
    return float("inf")


def time_cursor_keys(screen: Screen, samples: dict[str, list[float]]) -> None:
    """From the top (``g``, not timed) so that j/k move the cursor without scrolling the table."""
    screen.send("g", literal=True)
    time.sleep(1.0)
    for key in CURSOR_KEYS:
        samples["cursor_jk"].append(time_cursor_key(screen, key))


def collection_lines(log: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


def wait_for_full_settle(log: Path, samples: dict[str, list[float]]) -> None:
    """Keys quiet until the app's heap settle has collected everything (the frozen objects too),
    at most SETTLE_WAIT_LIMIT_S: every thread waits for that collection, so a key pressed then waits
    as long.  Records every settle and middle collection of the run from the app's collection log
    (TAU_TUI_COLLECTION_LOG); no full settle within the limit is one lost sample."""
    print("keys quiet until a full heap settle…", flush=True)
    started = time.monotonic()
    while time.monotonic() - started < SETTLE_WAIT_LIMIT_S:
        if any(line.get("settle") == "full" for line in collection_lines(log)):
            break
        time.sleep(0.5)
    lines = collection_lines(log)
    full = [line["collect_s"] for line in lines if line.get("settle") == "full"]
    samples["full_settle_collect"] += full or [float("inf")]
    samples["settle_collect"] += [line["collect_s"] for line in lines if line.get("settle") == "since the last"]
    samples["settle_trim"] += [line["trim_s"] for line in lines if "settle" in line]
    samples["middle_collections"] += [line["seconds"] for line in lines if line.get("collection") == 1]


def watch_whole_list(screen: Screen, workloads: int, since: float, seen: list[float]) -> threading.Thread:
    """A thread that appends the seconds from ``since`` until the counts line adds up (inf past the limit)."""
    def wait() -> None:
        seen.append(wait_screen(screen, lambda t: whole_list(t, workloads), LAUNCH_LIMIT_S, since)[0])
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def run(rounds: int, sim_in_process: bool, scenario: str = "large",
        quiet_while_listing: bool = False) -> tuple[dict[str, list[float]], dict[str, dict]]:
    home = tempfile.mkdtemp(prefix="tau-keys-tmux-")
    os.makedirs(f"{home}/tmp")
    # TMPDIR: the simulated cluster's socket folder is made there once its world is built.
    env = dict(os.environ, TERM="xterm-256color", HOME=home, XDG_CONFIG_HOME=f"{home}/config",
               XDG_STATE_HOME=f"{home}/state", XDG_DATA_HOME=f"{home}/data", XDG_CACHE_HOME=f"{home}/cache",
               TMPDIR=f"{home}/tmp", TAU_TUI_SIM_IN_PROCESS="1" if sim_in_process else "",
               TAU_TUI_COLLECTION_LOG=f"{home}/collections.jsonl")
    env.pop("KUBECONFIG", None)
    command = [str(Path(sys.executable).parent / "tau-tui"), "--demo", scenario, "--pane", "queue"]
    screen = Screen("tau-tui", command, env)
    samples: dict[str, list[float]] = {k: [] for k in (
        "launch_to_world_built", "launch_to_rows", "world_built_to_rows", "launch_to_whole_list",
        "keys_while_listing", "cursor_jk", "filter_line_opens", "filter_key_echo", "filter_applied", "esc_clears", "runs_crumb", "runs_rows",
        "nodes_crumb", "nodes_rows", "queue_crumb", "full_settle_collect", "settle_collect", "settle_trim",
        "middle_collections")}
    rss: dict[str, dict] = {}
    launched = screen.start()
    try:
        built = float("inf")
        socket = Path(f"{home}/tmp")
        while not sim_in_process and time.monotonic() - launched < LAUNCH_LIMIT_S:
            if any(socket.glob("tau-sim-*/cluster.sock")):
                built = time.monotonic() - launched
                break
            time.sleep(POLL_S)
        took, _ = wait_screen(screen, lambda t: bool(ROW.search(t)), LAUNCH_LIMIT_S, launched)
        rss["rows"] = process_rss(screen.pid)
        samples["launch_to_rows"].append(took)
        if not sim_in_process:
            samples["launch_to_world_built"].append(built)
            samples["world_built_to_rows"].append(took - built)
        print(f"launch → world built {built:.1f} s → workload rows: {took:.1f} s", flush=True)
        # Keys while the rest of the lists come: `/` until the filter line opens, esc until it
        # closes (what they change is not in the rows, which change as the lists land).
        whole: list[float] = []
        watcher = watch_whole_list(screen, WORKLOADS[scenario], launched, whole)
        while watcher.is_alive():
            if quiet_while_listing:  # the whole list with no key pressed meanwhile
                watcher.join(0.05)
                continue
            sent = screen.send("/", literal=True)
            took, _ = wait_screen(screen, lambda t: command_line(t).lstrip().startswith("/"), KEY_LIMIT_S, sent)
            samples["keys_while_listing"].append(took)
            sent = screen.send("Escape")
            took, _ = wait_screen(screen, lambda t: not command_line(t).lstrip().startswith("/"), KEY_LIMIT_S, sent)
            samples["keys_while_listing"].append(took)
        rss["whole_list"] = process_rss(screen.pid)
        took = whole[0]
        samples["launch_to_whole_list"].append(took)
        print(f"launch → whole list: {took:.1f} s; RSS {rss['whole_list']}", flush=True)
        for round_ in range(rounds):
            time_cursor_keys(screen, samples)
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
            applied, _ = wait_screen(screen, lambda t, text=text: rows_match(t, text, ROW) and f"filter: {text}" in header_lines(t),
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
        rss["end"] = process_rss(screen.pid)
        wait_for_full_settle(Path(f"{home}/collections.jsonl"), samples)
        rss["after_settle"] = process_rss(screen.pid)
    finally:
        screen.stop()
        shutil.rmtree(home, ignore_errors=True)
    return samples, rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launches", type=int, default=1,
                        help="launch the app this many times, one after the other; every launch's samples are kept")
    parser.add_argument("--scenario", choices=sorted(WORKLOADS), default="large")
    parser.add_argument("--json", help="raw results (default: benchmarks/results/app_keys_tmux[_SCENARIO].json)")
    parser.add_argument("--quiet-while-listing", action="store_true",
                        help="press no key while the lists come (the whole list's time without keys)")
    parser.add_argument("--sim-in-process", action="store_true",
                        help="run the simulated cluster in the app's process (as before it had its own)")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    info, uptime_before = machine(), uptime()
    samples: dict[str, list[float]] = {}
    rss_per_launch: list[dict[str, dict]] = []
    for launch in range(args.launches):
        if args.launches > 1:
            print(f"launch {launch + 1}/{args.launches}", flush=True)
        launch_samples, launch_rss = run(args.rounds, args.sim_in_process, args.scenario, args.quiet_while_listing)
        for name, values in launch_samples.items():
            samples.setdefault(name, []).extend(values)
        rss_per_launch.append(launch_rss)
    # the page reports the launch whose app peaked highest (the worst), and keeps every launch's
    rss = max(rss_per_launch, key=lambda points: max((p.get("app", {}).get("peak_mb", 0.0) for p in points.values()),
                                                     default=0.0))
    info_after, uptime_after = machine(), uptime()
    print(f"\n--demo {args.scenario}; simulated cluster: {'in the app' if args.sim_in_process else 'its own process'}")
    print(machine_line(info, info_after))
    print(f"uptime before: {uptime_before}\nuptime after:  {uptime_after}")
    for name, values in samples.items():
        print(f"{name:21} {summary(values)}")
    if args.launches > 1:
        print("RSS: the launch whose app peaked highest")
    for when, processes in rss.items():
        print(f"RSS at {when}: " + ", ".join(f"{name} {v['rss_mb']:.0f} MB (peak {v['peak_mb']:.0f} MB, CPU {v['cpu_s']:.0f} s)"
                                            for name, v in processes.items()))
    suffix = "" if args.scenario == "large" else f"_{args.scenario}"
    save_raw(args.json or REPO / f"benchmarks/results/app_keys_tmux{suffix}.json",
             {"machine": info, "machine_after": info_after, "uptime_before": uptime_before, "uptime_after": uptime_after,
              "scenario": args.scenario, "sim_in_process": args.sim_in_process, "launches": args.launches,
              "samples": samples, "rss_mb": rss, "rss_mb_per_launch": rss_per_launch})
    return 0


if __name__ == "__main__":
    sys.exit(main())
