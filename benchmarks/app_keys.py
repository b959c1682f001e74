"""What a user feels on `--demo large`: the app driven through Textual's pilot.

20,000 Workloads in 50 LocalQueues, 2,000 nodes; the simulated cluster runs in real time (as
`tau-tui --demo large` does), so the app works while the cluster changes. Per repetition:

- launch → the queue pane showing workloads (world build and first sync included, and
  reported apart: "world ready" is when the backend is handed to the app);
- per-key latency for j/k, page down/up, home/end, sort (shift+n twice), typing a filter and
  esc: from handing the key to the app's driver until its effect is in the widgets (cursor
  moved, order changed, character in the filter line), polled every 2 ms.  Not Pilot.press:
  it waits for the whole process to go idle, and the simulated cluster never does;
- filter as you type: from each typed character to the table showing the filtered rows;
- time to open the Runs pane and the Nodes pane (key press → their table filled).

Prints medians over repetitions with the spread (min..max), the machine and the date, and
writes every raw sample as JSON.

Keys (k9s): j/k, page down/up, G/g (bottom/top), shift+n (sort by name), / (filter), esc.

Run: .venv/bin/python benchmarks/app_keys.py [--repeat 3] [--json benchmarks/results/app_keys.json]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from percentiles import median, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from textual.widgets import Input  # noqa: E402

from tau_tui.app import TauApp  # noqa: E402
from tau_tui.core.operations.audit import AuditLog  # noqa: E402
from tau_tui.settings.settings_file import AppSettings, LoadedSettings  # noqa: E402
from tau_tui.startup.heap import tune_collector  # noqa: E402
from tau_tui.widgets.command_line import CommandLine  # noqa: E402
from tau_tui.widgets.keyed_table import KeyedTable  # noqa: E402

NAVIGATION = ["j"] * 10 + ["k"] * 10 + ["pagedown"] * 3 + ["pageup"] * 3 + ["G", "g"]
KEY_LIMIT_S = 60.0
SORT = ["N", "N"]
FILTER_TEXT = "job-123"
WAIT_LIMIT_S = 300.0


async def wait_until(pilot, predicate, limit: float = WAIT_LIMIT_S, step: float = 0.02) -> float:
    started = time.perf_counter()
    while not predicate():
        if time.perf_counter() - started > limit:
            raise TimeoutError("condition not met within the limit")
        await asyncio.sleep(step)  # not pilot.pause: it also waits for every pending screen update
    return time.perf_counter() - started


def send_key(app, key: str) -> None:
    """What Pilot.press does for one key, without its wait for the process to go idle."""
    import unicodedata

    from textual import events
    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    original = REPLACED_KEYS.get(key, key)
    try:
        char: str | None = unicodedata.lookup(_get_unicode_name_from_key(original))
    except KeyError:
        char = key if len(key) == 1 else None
    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)


async def timed_key(pilot, key: str, done) -> float:
    """Seconds from sending ``key`` until ``done()`` holds (its effect is in the widgets)."""
    started = time.perf_counter()
    send_key(pilot.app, key)
    while not done():
        if time.perf_counter() - started > KEY_LIMIT_S:
            print(f"  key {key!r}: no effect within {KEY_LIMIT_S:.0f} s (counted as {KEY_LIMIT_S:.0f} s)", file=sys.stderr)
            break
        await asyncio.sleep(0.002)
    return time.perf_counter() - started


def cursor_effect(table, key: str):
    before = table.cursor_row
    last = table.row_count - 1
    return {
        "j": lambda: table.cursor_row == min(before + 1, last),
        "k": lambda: table.cursor_row == max(before - 1, 0),
        "pagedown": lambda: table.cursor_row > before or before == last,
        "pageup": lambda: table.cursor_row < before or before == 0,
        "G": lambda: table.cursor_row == table.row_count - 1,
        "g": lambda: table.cursor_row == 0,
    }[key]


def table_rows(app, table_id: str) -> int:
    try:
        table = app.screen.query_one(f"#{table_id}", KeyedTable)
    except Exception:
        return 0
    return sum(1 for key in table.keys if key != "__notice__")


async def one_round(size: tuple[int, int]) -> dict:
    out: dict = {"keys": {}}
    with tempfile.TemporaryDirectory() as tmp:
        app = TauApp(demo="large", settings=LoadedSettings(AppSettings(), Path(tmp) / "config.yaml"),
                     audit=AuditLog(Path(tmp) / "audit.jsonl"), start_pane="queue", demo_realtime=True)
        launched = time.perf_counter()
        async with app.run_test(size=size) as pilot:
            await wait_until(pilot, lambda: app.backend is not None, step=0.05)
            out["world ready s"] = time.perf_counter() - launched
            await wait_until(pilot, lambda: table_rows(app, "workloads-table") >= 1000, step=0.05)
            out["launch to workloads s"] = time.perf_counter() - launched
            out["queue pane after world s"] = out["launch to workloads s"] - out["world ready s"]
            out["workload rows"] = table_rows(app, "workloads-table")
            screen = app.screen
            table = screen.query_one("#workloads-table", KeyedTable)
            table.focus()
            await pilot.pause()
            out["keys"]["navigate (j/k/page/home/end)"] = [
                await timed_key(pilot, k, cursor_effect(table, k)) for k in NAVIGATION]
            sorts = []
            for _ in SORT:
                state = (table.sort_column, table.sort_reverse)
                sorts.append(await timed_key(pilot, "N", lambda state=state: (table.sort_column, table.sort_reverse) != state))
            out["keys"]["sort (shift+n)"] = sorts
            line = screen.query_one(CommandLine)
            field = line.query_one(Input)
            typing: list[float] = [await timed_key(pilot, "slash", lambda: line.is_open and app.focused is field)]
            applied: list[float] = []
            for index, char in enumerate(FILTER_TEXT):
                typed = FILTER_TEXT[: index + 1]
                started = time.perf_counter()
                typing.append(await timed_key(pilot, char, lambda typed=typed: field.value == typed))
                # filtered: the table shows exactly the rows whose key matches what is typed
                await wait_until(pilot, lambda typed=typed: screen.row_filter.text == typed and (screen.TABLE_FILTER or not screen.refresh_running)
                                 and all(typed in k for k in table.keys if k != "__notice__"), step=0.005)
                applied.append(time.perf_counter() - started)
            out["filtered rows"] = table_rows(app, "workloads-table")
            out["filter matches"] = list(screen.filter_matches)
            typing.append(await timed_key(pilot, "escape", lambda: not line.is_open))
            out["keys"]["filter typing (/, chars, esc)"] = typing
            out["filter applied per char s"] = applied
            await wait_until(pilot, lambda: not screen.row_filter.text and not screen.refresh_running)
            for key, mode, table_id in (("4", "runs", "runs-table"), ("6", "nodes", "nodes-table")):
                started = time.perf_counter()
                send_key(app, key)
                await wait_until(pilot, lambda m=mode, t=table_id: app.current_mode == m and table_rows(app, t) > 0, step=0.005)
                out[f"open {mode} s"] = time.perf_counter() - started
                out[f"{mode} rows"] = table_rows(app, table_id)
            out["peak RSS MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            await app.action_quit()
    return out


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    return (f"{os.cpu_count()} CPU {cpu}, Python {platform.python_version()}, "
            f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}")


def main() -> int:
    tune_collector()  # what the tau-tui entry point does before it starts the app
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default="benchmarks/results/app_keys.json")
    parser.add_argument("--size", default="160x48")
    parser.add_argument("--sim-in-process", action="store_true",
                        help="run the simulated cluster in this process (as before it had its own): an A/B")
    args = parser.parse_args()
    if args.sim_in_process:
        os.environ["TAU_TUI_SIM_IN_PROCESS"] = "1"
    size = tuple(int(x) for x in args.size.split("x"))
    rounds = []
    for index in range(args.repeat):
        rounds.append(asyncio.run(one_round(size)))  # type: ignore[arg-type]
        print(f"  repetition {index + 1}/{args.repeat} done", file=sys.stderr)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"tau-tui --demo large through the pilot at {args.size}; {args.repeat} repetitions; {when}")
    print(f"machine: {machine()}")
    print(f"{'measure':44s} {'median':>10s}  {'spread (min..max)':>22s}")

    def row(name: str, values: list[float], unit: str = "s", scale: float = 1.0) -> None:
        med = median(values) * scale
        print(f"{name:44s} {med:9.3f}{unit}  {min(values) * scale:9.3f}..{max(values) * scale:.3f}{unit}")

    for key in ("world ready s", "launch to workloads s", "queue pane after world s", "open runs s", "open nodes s"):
        row(key.removesuffix(" s"), [r[key] for r in rounds])
    # Per repetition; a key group of fewer than 100 presses has no p99: its max is shown, named so.
    groups = {f"key {group}": [summarize(r["keys"][group]) for r in rounds] for group in rounds[0]["keys"]}
    groups["filter applied per typed char"] = [summarize(r["filter applied per char s"]) for r in rounds]
    for name, summaries in groups.items():
        row(f"{name} p50", [s.p50 for s in summaries], "ms", 1000)
        row(f"{name} {summaries[0].p99_name}", [s.p99_or_max for s in summaries], "ms", 1000)
    print(f"rows: workloads {rounds[0]['workload rows']}, filtered '{FILTER_TEXT}' {rounds[0]['filtered rows']} "
          f"(matches/seen {rounds[0]['filter matches']}), runs {rounds[0]['runs rows']}, nodes {rounds[0]['nodes rows']}")
    print(f"simulated cluster: {'in this process' if args.sim_in_process else 'its own process'}")
    print(f"peak RSS {max(r['peak RSS MB'] for r in rounds):.0f} MB (the app's process); "
          f"the simulated cluster's own process {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")
    path = Path(args.json)
    save_raw(path, {"date": when, "machine": machine(), "size": args.size, "sim_in_process": args.sim_in_process,
                    "rounds": rounds})
    print(f"raw samples: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
