"""The figures of docs/performance.md, generated from the raw JSON under benchmarks/results/.

Each table sits between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->`` in the page; the
prose outside the markers is written by hand and kept.  A raw file that is missing, or lacks the
fields a table needs, gives a "not measured" line: no figure is ever made up.

    .venv/bin/python scripts/performance_page.py --write   # after re-running a benchmark
    .venv/bin/python scripts/performance_page.py --check   # exit 1 if the page differs
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "performance.md"
sys.path.insert(0, str(REPO / "benchmarks"))

from percentiles import Summary, summarize  # type: ignore[import-not-found]  # noqa: E402

MARKER = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.S)
NOT_MEASURED = "not measured"

# ---------------------------------------------------------------------------------------------
# reading and formatting


def load(name: str) -> dict | None:
    """The raw file ``name`` under benchmarks/results/, or None when it is absent or unreadable."""
    try:
        data = json.loads((RESULTS / name).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def dig(data: Any, *keys: object) -> Any:
    """``data[k1][k2]...``, or None where any step is missing."""
    for key in keys:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
            data = data[key]
        else:
            return None
    return data


def listed(data: Any, key: str) -> list:
    """``data[key]`` when it is a list, else an empty one."""
    value = dig(data, key)
    return value if isinstance(value, list) else []


def number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


#: A figure that is a lost sample (past its limit, never seen; percentiles.summarize ranks them last).
LOST = "lost (past the limit)"


def seconds(value: object) -> str:
    """``0.43 s``, ``12.1 s``, ``93 s``; milliseconds below one second."""
    if value == math.inf:
        return LOST
    v = number(value)
    if v is None:
        return NOT_MEASURED
    if v < 1:
        return milliseconds(v)
    return f"{v:.2f} s" if v < 10 else f"{v:.1f} s" if v < 100 else f"{v:,.0f} s"


def milliseconds(value: object) -> str:
    if value == math.inf:
        return LOST
    v = number(value)
    if v is None:
        return NOT_MEASURED
    ms = v * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms" if ms < 1000 else f"{v:.2f} s"


#: MB (decimal) per MiB: every RSS the benchmarks record is KiB from /proc (or getrusage) / 1024, MiB.
MB_PER_MIB = 1.048576


def megabytes(value: object) -> str:
    """An RSS as recorded (MiB), labelled so."""
    v = number(value)
    return NOT_MEASURED if v is None else f"{v:,.0f} MiB"


def mib_and_mb(value: object) -> str:
    """``1,515 MiB (1,589 MB)``: for a figure held against a limit in MB (decimal)."""
    v = number(value)
    return NOT_MEASURED if v is None else f"{v:,.0f} MiB ({v * MB_PER_MIB:,.0f} MB)"


def count(value: object) -> str:
    v = number(value)
    return NOT_MEASURED if v is None else f"{v:,.0f}"


def figures(values: object) -> list[float | None]:
    return [number(v) for v in values] if isinstance(values, list) else []


def spread(values: object, fmt: Callable[[object], str] = seconds) -> str:
    """``median (min..max), n=3`` by nearest rank; one sample alone; not measured without one."""
    stats = summarize(figures(values))
    if not stats.n:
        return NOT_MEASURED
    missing = f", {stats.lost} missing" if stats.lost else ""
    if stats.n == 1:
        return fmt(stats.p50) + missing
    return f"{fmt(stats.p50)} ({fmt(stats.min)}..{fmt(stats.max)}), n={stats.n}{missing}"


def tail(stats: Summary | None, fmt: Callable[[object], str] = milliseconds) -> str:
    """``p50 / p99`` (``max (n=24<100)`` in the p99's place below 100 samples), with n."""
    if stats is None or not stats.n:
        return NOT_MEASURED
    name = "p99" if stats.p99 is not None else "max"
    lost = f", {stats.lost} lost" if stats.lost else ""
    return f"{fmt(stats.p50)} / {fmt(stats.p99_or_max)} ({name}, n={stats.n}{lost})"


def saved_summary(data: object) -> Summary | None:
    """A summary the benchmark saved with ``Summary.as_dict``; None when it is not one."""
    if not isinstance(data, dict):
        return None
    try:
        return Summary(**data)
    except TypeError:
        return None


def machine(data: dict) -> str:
    """The machine line of a raw file (machine_info.machine(), before and after the run)."""
    info, after = data.get("machine"), data.get("machine_after")
    if isinstance(info, str):
        return f"machine: {info}"
    if not isinstance(info, dict):
        return "machine: not recorded"
    line = f"machine: {info.get('nproc', '?')} CPUs {info.get('cpu', '?')}, Python {info.get('python', '?')}"
    load = number(info.get("loadavg"))
    if load is not None:
        load_after = number(dig(after, "loadavg"))
        line += f", load {load:.1f}" + (f" → {load_after:.1f}" if load_after is not None else "")
    if info.get("tree"):
        line += f"; tree {info['tree']}"
    return line


def date(data: dict) -> str:
    return str(dig(data, "machine", "date") or data.get("date") or "date not recorded")


def header(raw: str, command: str, data: dict) -> list[str]:
    return [f"Command: `{command}`  ", f"Raw: `benchmarks/results/{raw}`; {date(data)}; {machine(data)}.  ", ""]


def absent(raw: str, command: str) -> list[str]:
    """What a table says when its raw file is not there (the file named without its folder, so
    the page names no raw file that does not exist)."""
    return [f"Command: `{command}`  ", f"**{NOT_MEASURED}**: no raw file `{raw}` yet.", ""]


def table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    cells = list(head)
    lines = ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def args_command(script: str, data: dict, options: dict[str, object]) -> str:
    """The command that wrote ``data``: the script with the options its saved args differ in."""
    saved = data["args"] if isinstance(data.get("args"), dict) else {}
    words = [f".venv/bin/python benchmarks/{script}"]
    for name, default in options.items():
        value = saved.get(name, default)
        if name == "json" and isinstance(value, str):  # saved as given, maybe absolute: the file's name tells it
            value = f"benchmarks/results/{Path(value).name}"
            default = f"benchmarks/results/{default}"
        if value == default or value is None or value is False or value == []:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            words += [f"{flag} {v}" for v in value]
        else:
            words.append(f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    return " ".join(words)


# ---------------------------------------------------------------------------------------------
# the app at each scale


APP_SCALES = (("`--demo large` (20,000 Workloads)", "app_keys_tmux.json", ".venv/bin/python benchmarks/app_keys_tmux.py"),
              ("`--demo xl` (100,000 Workloads)", "app_keys_tmux_xl.json",
               ".venv/bin/python benchmarks/app_keys_tmux.py --scenario xl"))
ROUNDS_DEFAULT = 5
#: The samples that time a key until its first visible effect: "every key answered".
#: When the key clocks of app_keys_tmux.py started before `send-keys` (#36, defect 2); a raw file
#: dated earlier timed some keys from after it returned.
KEY_CLOCK_FIXED = "2026-12-04 21:46 UTC"
KEY_SAMPLES = ("keys_while_listing", "cursor_jk", "filter_line_opens", "filter_key_echo", "esc_clears", "runs_crumb", "nodes_crumb",
               "queue_crumb")


#: The collections the app logged (app_keys_tmux.py's collection log): every thread waits for each.
PAUSE_SAMPLES = ("full_settle_collect", "settle_collect", "middle_collections")


def all_keys(data: dict | None) -> Summary | None:
    samples = dig(data, "samples")
    if not isinstance(samples, dict) or not any(isinstance(samples.get(k), list) for k in KEY_SAMPLES):
        return None
    return summarize(v for k in KEY_SAMPLES for v in figures(samples.get(k)))


def app_peak_rss(data: dict | None) -> float | None:
    """The app process's highest RSS (VmHWM) at any of the points the benchmark looked."""
    peaks = [number(dig(points, "app", "peak_mb")) for points in (dig(data, "rss_mb") or {}).values()]
    found = [p for p in peaks if p is not None]
    return max(found) if found else None


def rss_at(data: dict | None, when: str) -> str:
    points = dig(data, "rss_mb", when)
    if not isinstance(points, dict) or not points:
        return NOT_MEASURED
    app = number(dig(points, "app", "rss_mb"))
    others = [number(dig(v, "rss_mb")) for k, v in points.items() if k != "app"]
    sim = sum(v for v in others if v is not None) if others else None
    return f"{megabytes(app)}" + (f" (+ simulated cluster {megabytes(sim)})" if sim is not None else "")


def app_scales() -> list[str]:
    def with_rounds(command: str, data: dict | None) -> str:
        # one `/` a round, so the rounds are the count of its samples
        opened = dig(data, "samples", "filter_line_opens")
        launches = int(number(dig(data, "launches")) or 1)
        rounds = len(opened) // launches if isinstance(opened, list) else ROUNDS_DEFAULT
        command = command if rounds == ROUNDS_DEFAULT else f"{command} --rounds {rounds}"
        return command if launches == 1 else f"{command} --launches {launches}"

    loaded = [(label, raw, with_rounds(command, data), data) for label, raw, command in APP_SCALES
              for data in [load(raw)]]
    out: list[str] = []
    for label, raw, command, data in loaded:
        out += [f"*{label}*  "] + (header(raw, command, data) if data else absent(raw, command))
        if data and date(data) < KEY_CLOCK_FIXED:
            out[-1:] = [f"Measured before the key clocks started ahead of `send-keys` ({KEY_CLOCK_FIXED}): its key "
                        "figures can understate; re-run the command.", ""]
    present = [data for *_, data in loaded]

    def sample(key: str, fmt: Callable[[Summary | None], str] = tail) -> list[str]:
        return [fmt(summarize(figures(dig(d, "samples", key)))) if dig(d, "samples", key) is not None
                else NOT_MEASURED for d in present]

    def once(key: str) -> list[str]:
        return [spread(dig(d, "samples", key)) for d in present]

    rows = [["launch → simulated world built", *once("launch_to_world_built")],
            ["world built → first workload rows", *once("world_built_to_rows")],
            ["launch → first workload rows", *once("launch_to_rows")],
            ["launch → whole list (counts add up)", *once("launch_to_whole_list")],
            ["`/` and esc while the list still comes, p50 / p99", *sample("keys_while_listing")],
            ["**every key answered**, p50 / p99", *[tail(all_keys(d)) for d in present]],
            ["j/k → cursor moved", *sample("cursor_jk")],
            ["`/` → filter line open", *sample("filter_line_opens")],
            ["each typed filter character on the line", *sample("filter_key_echo")],
            ["whole filter text → every row on screen matches", *sample("filter_applied")],
            ["esc → filter cleared", *sample("esc_clears")],
            ["`4` → Runs crumb", *sample("runs_crumb")], ["`4` → Runs rows", *sample("runs_rows")],
            ["`6` → Nodes crumb", *sample("nodes_crumb")], ["`6` → Nodes rows", *sample("nodes_rows")],
            ["`3` → Queue crumb", *sample("queue_crumb")],
            ["full heap settle's collection (every thread waits)", *sample("full_settle_collect")],
            ["other settles' collections", *sample("settle_collect")],
            ["settles' trims (the interpreter free)", *sample("settle_trim")],
            ["middle collections (every thread waits)", *sample("middle_collections")],
            ["launches (RSS rows: the launch whose app peaked highest)", *[str(int(number(dig(d, "launches")) or 1))
                                                                           if d else NOT_MEASURED for d in present]],
            ["RSS of the app at the first rows", *[rss_at(d, "rows") for d in present]],
            ["RSS of the app with the whole list", *[rss_at(d, "whole_list") for d in present]],
            ["RSS of the app at the end (peak)", *[f"{rss_at(d, 'end')} (peak {megabytes(app_peak_rss(d))})"
                                                     if dig(d, "rss_mb", "end") else NOT_MEASURED for d in present]]]
    return out + table(["Through tmux, 160×48", "large", "xl"], rows)


DEMO_RESTART = "demo_restart.json"


def demo_restart_frames(data: dict | None, key: str = "launches") -> list[object]:
    return [dig(r, "first_frame_s") for r in listed(data, key)]


def demo_restart() -> list[str]:
    """One line under the first-frame table: `./scripts/demo.sh` started again, the app alone beside it."""
    data = load(DEMO_RESTART)
    command = args_command("demo_restart.py", data or {}, {"launches": 10, "json": DEMO_RESTART})
    frames = demo_restart_frames(data)
    if not data or not summarize(figures(frames)).n:
        return ["", f"`./scripts/demo.sh` started again (`{command}`): **{NOT_MEASURED}**: no raw file `{DEMO_RESTART}` yet."]
    banners = listed(data, "banner_lines")
    return ["", f"`./scripts/demo.sh` started again, setup up to date (`{command}`): first frame {spread(frames)}, the app "
                f"alone in the same run {spread(demo_restart_frames(data, 'app_alone'))}, `scripts/setup.sh` alone "
                f"{spread(data.get('setup_alone_s'))}; {len(banners)} warning banners. Raw: "
                f"`benchmarks/results/{DEMO_RESTART}`; {date(data)}; {machine(data)}."]


def first_frame() -> list[str]:
    raw, command = "first_frame.json", ".venv/bin/python benchmarks/first_frame.py --launches 7"
    data = load(raw)
    if not data or not isinstance(data.get("samples"), dict):
        return absent(raw, command) + demo_restart()[1:]
    rows = []
    for scenario, launches in data["samples"].items():
        launches = launches if isinstance(launches, list) else []
        rows.append(["`--demo`" if scenario == "demo" else f"`--demo {scenario}`", spread([dig(r, "first_frame_s") for r in launches]),
                     spread([dig(r, "queue_screen_s") for r in launches]),
                     spread([dig(r, "rss_mb") for r in launches], megabytes)])
    return header(raw, command, data) + table(["Scenario", "first frame (keys answered)", "queue screen", "RSS then"],
                                              rows) + demo_restart()


def pilot() -> list[str]:
    raw, command = "app_keys.json", ".venv/bin/python benchmarks/app_keys.py --repeat 2"
    data = load(raw)
    rounds = dig(data, "rounds")
    if not data or not isinstance(rounds, list) or not rounds:
        return absent(raw, command)

    def each(key: str) -> str:
        return spread([dig(r, key) for r in rounds])

    def keys(group: str, key: str = "keys") -> str:
        values = [v for r in rounds for v in figures(dig(r, key, group) if group else dig(r, key))]
        return tail(summarize(values)) if values else NOT_MEASURED

    rows = [["queue pane filled after the world was built", each("queue pane after world s")],
            ["open Runs (table filled)", each("open runs s")], ["open Nodes (table filled)", each("open nodes s")],
            ["navigation (j/k, page, home/end), p50 / p99", keys("navigate (j/k/page/home/end)")],
            ["sort (shift+n), p50 / p99", keys("sort (shift+n)")],
            ["filter line typing (`/`, characters, esc), p50 / p99", keys("filter typing (/, chars, esc)")],
            ["filter applied per typed character, p50 / p99", keys("", "filter applied per char s")],
            ["peak RSS (the app's process)", spread([dig(r, "peak RSS MB") for r in rounds], megabytes)]]
    return header(raw, command, data) + table(["Through the pilot, `--demo large`", "figure"], rows)


# ---------------------------------------------------------------------------------------------
# side by side with peers on the real harness


SIDE_BY_SIDE = (("side_by_side.json", "20,000 Workloads"), ("side_by_side_50k.json", "50,000 Workloads"))
SIDE_BY_SIDE_OPTIONS: dict[str, object] = {"repeat": 3, "rate": 30.0, "seconds": 60.0, "workloads": 20_000,
                                           "nodes": 2_000, "wait_limit": 180.0, "skip": [], "no_build": False, "no_kwok": False,
                                           "json": "side_by_side.json"}
KUBECTL = "kubectl get -o json (workloads + nodes)"


def sync_source(raw: str, data: dict | None) -> tuple[str, dict | None]:
    """Where a scale's initial sync figures are: its own file, or when that run skipped them, a
    sync-only run beside it (``side_by_side_sync.json`` for ``side_by_side.json``)."""
    if listed(data, "sync"):
        return raw, data
    own = raw.replace(".json", "_sync.json")
    return own, load(own)


def side_by_side() -> list[str]:
    out: list[str] = []
    for raw, scale in SIDE_BY_SIDE:
        data = load(raw)
        planned = {"args": {"workloads": 50_000}} if "50k" in raw else {}
        command = args_command("side_by_side.py", data or planned, SIDE_BY_SIDE_OPTIONS)
        out.append(f"*{scale}*  ")
        if not data:
            out += absent(raw, command)
            if raw != "side_by_side.json":  # its own name, so the 20,000-Workload file stays
                out[-1:] = ["Add `--json` with that name under `benchmarks/results/`.", ""]
            continue
        missing = ", ".join(data.get("missing_peers") or []) or "none"
        counts = dig(data, "load", "counts") or {}
        out += header(raw, command, data)[:-1] + [
            f"Loaded: {count(dig(counts, 'workloads'))} Workloads ({count(dig(counts, 'admitted'))} admitted), "
            f"{count(dig(counts, 'nodes'))} nodes, {count(dig(counts, 'pods'))} pods; peers missing: {missing}.", ""]
        rows = []
        screens = listed(data, "first_screen")
        for tool in (screens[0] if screens and isinstance(screens[0], dict) else {}):
            whole = [dig(r, tool, "whole_seconds") for r in screens]
            timed_out = sum(dig(r, tool, "timed_out") is True for r in screens)
            limit = number(dig(screens, 0, tool, "limit_s"))
            late = f"; {timed_out} timed out at {limit:.0f} s" if timed_out and limit is not None else ""
            rows.append([tool, spread([dig(r, tool, "seconds") for r in screens]),
                         spread(whole) + late if any(number(w) for w in whole) or timed_out else NOT_MEASURED,
                         spread([dig(r, tool, "rss_mb") for r in screens], megabytes)])
        if not screens:
            rows.append(["first screen", NOT_MEASURED, NOT_MEASURED, NOT_MEASURED])
        out += table(["First screen, median (min..max)", "first row", "whole list", "peak RSS"], rows) + [""]
        rows = []
        sync_raw, sync_data = sync_source(raw, data)
        syncs = listed(sync_data, "sync")
        if sync_raw != raw and sync_data:
            out += header(sync_raw, args_command("side_by_side.py", sync_data, SIDE_BY_SIDE_OPTIONS), sync_data)
        base = summarize(figures([dig(r, KUBECTL, "seconds") for r in syncs])).p50
        for tool in (syncs[0] if syncs and isinstance(syncs[0], dict) else {}):
            wall = summarize(figures([dig(r, tool, "seconds") for r in syncs])).p50
            ratio = f"{wall / base:.2f}×" if wall is not None and base else NOT_MEASURED
            rows.append([tool, spread([dig(r, tool, "seconds") for r in syncs]), ratio,
                         spread([dig(r, tool, "rss_mb") for r in syncs], megabytes)])
        if not syncs:
            rows.append(["initial sync", NOT_MEASURED, NOT_MEASURED, NOT_MEASURED])
        out += table(["Initial sync, median (min..max)", "wall", "against kubectl", "peak RSS"], rows) + [""]
    return out[:-1]


def tails(stats: list[Summary | None]) -> str:
    """Runs' p50 / p99: one run's, or the median run's of each with the spread."""
    if len(stats) == 1:
        return tail(stats[0])
    return f"{spread([s.p50 if s else None for s in stats])} / {spread([s.p99_or_max if s else None for s in stats])}"


def staleness_cell(runs: list[dict], start: str) -> str:
    """One clock's staleness over the rounds, and the changes it never saw reflected."""
    stats = [saved_summary(dig(run, f"staleness_{start}_s")) for run in runs]
    never = sum(number(dig(run, f"never_reflected_{start}")) or 0 for run in runs)
    if len(runs) == 1:
        return f"{tails(stats)}; never reflected {count(never)}"
    return f"{tails(stats)}; never reflected {count(never)} of {count(never + sum(s.n for s in stats if s))}"


def loaded_staleness() -> list[str]:
    raw = "side_by_side.json"
    data = load(raw)
    rounds = [r for r in listed(data, "latency_rounds") if isinstance(r, dict) and r]  # {tool: run} each
    command = args_command("side_by_side.py", data or {}, SIDE_BY_SIDE_OPTIONS)
    if not data or not rounds:
        return absent(raw, command) if not data else header(raw, command, data) + [f"Loaded harness: **{NOT_MEASURED}**."]
    rows = []
    for tool in rounds[0]:
        runs = [r[tool] for r in rounds if isinstance(r.get(tool), dict)]
        rows.append([tool, *(staleness_cell(runs, start) for start in ("from_sent", "from_answer", "from_watch")),
                     f"{count(sum(number(dig(run, 'changes_made')) or 0 for run in runs))}; "
                     + spread([dig(run, "achieved_rate") for run in runs], lambda v: f"{number(v) or 0:.1f}/s"),
                     spread([dig(run, "rss_peak_mb") for run in runs], megabytes)])
    head = ["Tool", "from the PATCH's send, p50 / p99", "from the server's answer", "from a reference watch (the tool's own share)",
            "changes made, rate reached", "peak RSS"]
    return header(raw, command, data) + table(head, rows)


# ---------------------------------------------------------------------------------------------
# event to screen on the watch source


STALENESS_OPTIONS: dict[str, object] = {"rates": "200,1000,5000", "workloads": 20_000, "seconds": 60.0, "repeat": 1, "hot_rows": 8,
                                        "hot_share": 0.5, "tools": "tau-tui,k9s", "keys_for": "tau-tui", "namespace": None,
                                        "json": "staleness_watch.json"}


def staleness_groups(runs: list) -> dict[tuple[str, float], list[dict]]:
    """The runs of each tool at each rate (``--repeat`` rounds of them), in the file's order."""
    groups: dict[tuple[str, float], list[dict]] = {}
    for run in runs:
        if isinstance(run, dict):
            groups.setdefault((str(dig(run, "tool") or "tau-tui"), number(dig(run, "rate")) or 0.0), []).append(run)
    return groups


def staleness_watch() -> list[str]:
    raw = "staleness_watch.json"
    data = load(raw)
    command = args_command("staleness_watch.py", data or {}, STALENESS_OPTIONS)
    runs = dig(data, "runs")
    if not data or not isinstance(runs, list) or not runs:
        return absent(raw, command) if not data else header(raw, command, data) + [f"**{NOT_MEASURED}**: no runs."]
    rows = []
    for (tool, rate), group in staleness_groups(runs).items():
        stats = [saved_summary(dig(run, "staleness_s")) for run in group]
        never = sum(number(dig(run, "never_reflected")) or 0 for run in group)
        hot = sum(number(dig(run, "hot_changes")) or 0 for run in group)
        keys = summarize(v for run in group for v in figures(dig(run, "key_samples_s")))
        stale = tails(stats)
        if len(group) == 1:
            max_ = milliseconds(stats[0].max) if stats[0] and stats[0].n else NOT_MEASURED
            keys_text = tail(saved_summary(dig(group[0], "keys_s")))
        else:  # the median run's figure, with the spread of the runs
            max_ = spread([s.max if s else None for s in stats])
            keys_text = tail(keys) + (" (pooled)" if keys.n else "")
        per_1000 = [dig(run, "tool_cpu_s_per_1000_changes") for run in group]
        rows.append([tool, count(rate), spread([dig(run, "source", "achieved_rate") for run in group], count), stale, max_,
                     f"{count(never)} of {count(hot)}", spread(per_1000, lambda v: f"{number(v) or 0:.3f} s"),
                     spread([dig(run, "rss_peak_mb") for run in group], megabytes), keys_text])
    head = ["Tool", "changes/s asked", "reached", "staleness p50 / p99", "max", "never reflected (of the hot changes)",
            "tool CPU per 1,000 changes", "peak RSS", "j/k while it runs, p50 / p99"]
    early = [] if all(isinstance(run, dict) and "whole_list_after_s" in run for run in runs) else [
        "Measured before the changes waited for the whole list on screen: its staleness includes the first "
        "list's wait; re-run the command.", ""]
    return header(raw, command, data) + early + table(head, rows)


# ---------------------------------------------------------------------------------------------
# the other areas


def cluster_layer() -> list[str]:
    raw, command = "cluster_large.json", ".venv/bin/python benchmarks/cluster_large.py --repeat 3"
    data = load(raw)
    rounds = dig(data, "rounds_s")
    if not data or not isinstance(rounds, list) or not rounds or not isinstance(rounds[0], dict):
        return absent(raw, command)
    rows = [[step, spread([dig(r, step) for r in rounds])] for step in rounds[0] if step != "pending workloads positioned"]
    rows.append(["peak RSS", megabytes(data.get("peak_rss_mb"))])
    pending = number(dig(rounds, 0, "pending workloads positioned"))
    return header(raw, command, data) + table(["Step, `large` (20,000 Workloads, 2,000 nodes)", "median (min..max)"], rows) + (
        ["", f"Pending Workloads positioned: {count(pending)}."] if pending is not None else [])


def recording() -> list[str]:
    raw, command = "recording_large.json", ".venv/bin/python benchmarks/recording_large.py --repeat 3"
    data = load(raw)
    rounds = dig(data, "rounds")
    if not data or not isinstance(rounds, list) or not rounds or not isinstance(rounds[0], dict):
        return absent(raw, command)
    rows = []
    for step in rounds[0]:
        if step == "objects":
            continue
        fmt = (lambda v: NOT_MEASURED if number(v) is None else f"{number(v):.1f} MiB") if "MiB" in step else seconds
        rows.append([step, spread([dig(r, step) for r in rounds], fmt)])
    objects = count(dig(rounds, 0, "objects"))
    return header(raw, command, data) + table([f"Step, `large` ({objects} objects in the cache)", "median (min..max)"], rows)


def logs() -> list[str]:
    raw, command = "logs_throughput.json", ".venv/bin/python benchmarks/logs_throughput.py --repeat 3 --seconds 60 --search-gb 1"
    data = load(raw)
    if not data:
        return absent(raw, command)
    rows = []
    for kind, words in (("single", "single (1 container)"), ("merged", "merged (8 containers)")):
        runs = data.get(kind) if isinstance(data.get(kind), list) else []
        if not runs:
            rows.append([words, *[NOT_MEASURED] * 5])
            continue
        produced = sum(number(dig(r, "produced")) or 0 for r in runs)
        dropped = sum(number(dig(r, "dropped")) or 0 for r in runs)
        rows.append([words, spread([dig(r, "achieved_source_rate") for r in runs], count),
                     f"{count(dropped)} of {count(produced)}", spread([dig(r, "last_line_on_screen_after_end_s") for r in runs]),
                     spread([dig(r, "cpu_share") for r in runs], lambda v: f"{number(v):.2f}" if number(v) is not None else NOT_MEASURED),
                     spread([dig(r, "rss_growth_mb") for r in runs], megabytes)])
    out = header(raw, command, data) + table(
        ["Stream, 50,000 lines/s for 60 s", "lines/s handed over", "dropped (all runs)", "last line on screen after the end",
         "cores used", "RSS growth"], rows)
    searches = listed(data, "search")
    if searches and isinstance(searches[0], dict):
        kinds = [k for k, v in searches[0].items() if isinstance(v, dict) and "seconds" in v]
        srows = [[k, spread([dig(r, k, "seconds") for r in searches]), spread([dig(r, k, "cpu_seconds") for r in searches]),
                  f"{count(dig(searches, 0, k, 'hits'))} of {count(dig(searches, 0, 'expected_hits'))}"] for k in kinds]
        size = number(dig(searches, 0, "bytes"))
        out += [""] + table([f"Search of a {size / 1e9:.1f} GB spool" if size else "Search", "wall", "CPU", "hits"], srows)
    else:
        out += ["", f"Search: **{NOT_MEASURED}**."]
    return out


def agent() -> list[str]:
    raw, command = "agent_poll.json", ".venv/bin/python benchmarks/agent_poll.py"
    data = load(raw)
    if not data:
        return absent(raw, command)
    low_high = figures(data.get("cpu_ms_per_cycle_min_max"))
    rng = f" ({low_high[0]:.2f}..{low_high[1]:.2f} ms)" if len(low_high) == 2 and None not in low_high else ""
    cpu = number(data.get("cpu_ms_per_cycle_median"))
    share = number(data.get("cpu_percent_of_one_core_median"))
    all_cpu = number(data.get("cpu_ms_per_cycle_all_counters_median"))
    rows = [["CPU per poll cycle (counters every 60 s)", NOT_MEASURED if cpu is None else f"{cpu:.2f} ms{rng}"],
            ["CPU share of one core at a 15 s poll", NOT_MEASURED if share is None else f"{share:.3f} %"],
            ["CPU per cycle, every counter read each cycle", NOT_MEASURED if all_cpu is None else f"{all_cpu:.2f} ms"],
            ["resident memory (RSS) / peak", f"{megabytes(data.get('rss_mb'))} / {megabytes(data.get('peak_rss_mb'))}"]]
    shape = f"{count(data.get('gpus'))} fake GPUs, {count(data.get('cycles_per_repeat'))} cycles × {count(data.get('repeats'))} repetitions"
    return header(raw, command, data) + table([f"Agent poll loop ({shape}; median of repetitions)", "figure"], rows)


def remote_link() -> list[str]:
    raw, command = "remote_link.json", ".venv/bin/python benchmarks/remote_link.py"
    data = load(raw)
    cases = dig(data, "cases")
    if not data or not isinstance(cases, dict) or not cases:
        return absent(raw, command)
    rows = []
    for case, result in cases.items():
        launches = dig(result, "launches") if isinstance(dig(result, "launches"), list) else []
        summaries = dig(data, "summaries", case) or {}
        delta = number(dig(data, "keys_p99_minus_loopback_s", case))
        rows.append([case, spread([dig(r, "rows_s") for r in launches]), spread([dig(r, "counts_s") for r in launches]),
                     spread([dig(r, "requests") for r in launches], count),
                     tail(saved_summary(dig(summaries, "pane crumb"))), tail(saved_summary(dig(summaries, "keys"))),
                     NOT_MEASURED if delta is None else f"{delta * 1000:+.0f} ms"])
    shape = dig(data, "shape") or {}
    head = ["Case", "first screen: rows", "counts line", "requests of the first screen", "pane crumb p50 / p99",
            "keys p50 / p99", "keys p99 − loopback's"]
    return header(raw, command, data) + [
        f"{count(dig(shape, 'workloads'))} Workloads on T1; latency {count(data.get('latency_ms'))} ± "
        f"{count(data.get('jitter_ms'))} ms each way; slow link adds {count(data.get('rate_kb_s'))} KB/s down.", ""] + table(head, rows)


# ---------------------------------------------------------------------------------------------
# goals


def verdict(value: float | None, limit: float, worse_when_higher: bool = True) -> str:
    if value is None:
        return NOT_MEASURED
    held = value <= limit if worse_when_higher else value >= limit
    return "**met**" if held else "**not met**"


def both(pair: tuple[float | None, float | None], fmt: Callable[[object], str]) -> str:
    """``<single> single, <merged> merged`` for the two log streams; not measured when neither was."""
    return NOT_MEASURED if pair == (None, None) else f"{fmt(pair[0])} single, {fmt(pair[1])} merged"


def staleness_run(data: dict | None, rate: float, tool: str = "tau-tui") -> dict | None:
    """The run of ``tool`` at ``rate`` whose p99 is the median of its rounds' (the only one, without ``--repeat``)."""
    group = staleness_groups(dig(data, "runs") or []).get((tool, float(rate)), [])
    ranked = sorted(group, key=lambda run: stale_p99(run) if stale_p99(run) is not None else math.inf)
    return ranked[(len(ranked) - 1) // 2] if ranked else None


def against_peer(ours: float | None, theirs: float | None, peer: str) -> str:
    """Met when ours is at most the peer's; says "behind" in words where the peer is ahead."""
    if ours is None or theirs is None:
        return NOT_MEASURED
    return f"**met**: ahead of {peer}" if ours <= theirs else f"**not met**: behind {peer}"


def stale_p99(run: dict | None) -> float | None:
    stats = saved_summary(dig(run, "staleness_s"))
    return stats.p99_or_max if stats and stats.n else None


def soak_goals() -> list[list[str]]:
    """The soak's three goals, from a run of the goal's length (a shorter one is a smoke run, not them)."""
    data = load("soak.json")
    full = data is not None and (number(dig(data, "args", "seconds")) or 0) >= 2 * 3600
    growth = number(dig(data, "rss_growth_after_warmup_mb")) if full else None
    never = number(dig(data, "never_reflected")) if full else None
    wrong = number(dig(data, "final", "mismatches")) if full else None
    return [["soak 2 h: RSS growth after the first 15 min", "≤ 20 MB", mib_and_mb(growth),
             verdict(None if growth is None else growth * MB_PER_MIB, 20.0)],
            ["soak 2 h: hot changes never reflected", "0", count(never), verdict(never, 0)],
            ["soak 2 h: final state mismatches (cache and Queue rows against the source)", "0", count(wrong), verdict(wrong, 0)]]


def goals() -> list[str]:
    xl, large = load("app_keys_tmux_xl.json"), load("app_keys_tmux.json")
    staleness = load("staleness_watch.json")
    at_1000 = staleness_run(staleness, 1000)
    at_200, at_5000, k9s_5000 = staleness_run(staleness, 200), staleness_run(staleness, 5000), staleness_run(staleness, 5000, "k9s")
    fast = saved_summary(dig(at_5000, "staleness_s"))
    stale = saved_summary(dig(at_1000, "staleness_s"))
    keys_running = saved_summary(dig(at_1000, "keys_s"))
    keys_running_p99 = keys_running.p99_or_max if keys_running and keys_running.n else None
    never = number(dig(at_1000, "never_reflected"))
    agent_data, logs_data, remote = load("agent_poll.json"), load("logs_throughput.json"), load("remote_link.json")

    def xl_built_to_rows() -> float | None:
        values = [v for v in figures(dig(xl, "samples", "world_built_to_rows")) if v is not None]
        return max(values) if values else None

    def keys_p99(data: dict | None) -> tuple[float | None, str]:
        stats = all_keys(data)
        if stats is None or not stats.n:
            return None, NOT_MEASURED
        return stats.p99_or_max, f"{milliseconds(stats.p99_or_max)} ({'p99' if stats.p99 is not None else 'max'}, n={stats.n})"

    def worst(data: dict | None, kind: str, key: str) -> float | None:
        values = [v for v in figures([dig(r, key) for r in (dig(data, kind) or [])]) if v is not None]
        return max(values) if values else None

    def least(data: dict | None, kind: str, key: str) -> float | None:
        values = [v for v in figures([dig(r, key) for r in (dig(data, kind) or [])]) if v is not None]
        return min(values) if values else None

    def search_cpu() -> float | None:
        values = [number(dig(r, "plain, ignore case", "cpu_seconds")) for r in (dig(logs_data, "search") or [])]
        found = [v for v in values if v is not None]
        return max(found) if found else None

    def sync_ratio(raw: str, side: dict | None) -> float | None:
        rounds = dig(sync_source(raw, side)[1], "sync") or []
        ours = summarize(figures([dig(r, "tau-tui backend (workloads+nodes)", "seconds") for r in rounds])).p50
        theirs = summarize(figures([dig(r, KUBECTL, "seconds") for r in rounds])).p50
        return ours / theirs if ours is not None and theirs else None

    def first_rows_lead(side: dict | None) -> float | None:
        rounds = dig(side, "first_screen") or []
        ours = summarize(figures([dig(r, "tau-tui", "seconds") for r in rounds])).p50
        k9s = summarize(figures([dig(r, "k9s", "seconds") for r in rounds])).p50
        return ours - k9s if ours is not None and k9s is not None else None

    def longest_pause(data: dict | None) -> float | None:
        """The longest collection the run logged: a key pressed during it waits as long."""
        samples = dig(data, "samples") or {}
        stats = summarize(v for k in PAUSE_SAMPLES for v in figures(samples.get(k)))
        return stats.max if stats.n or stats.lost else None

    def whole_list_ratio(side: dict | None) -> float | None:
        rounds = dig(side, "first_screen") or []
        ours = summarize(figures([dig(r, "tau-tui", "whole_seconds") for r in rounds])).p50
        theirs = summarize(figures([dig(r, "kubectl get workloads -A -o json", "whole_seconds") for r in rounds])).p50
        return ours / theirs if ours is not None and theirs else None

    xl_whole = summarize(figures(dig(xl, "samples", "launch_to_whole_list"))).p50
    xl_quiet = summarize(figures(dig(load("app_keys_tmux_xl_quiet.json"), "samples", "launch_to_whole_list"))).p50
    ratio_50k = whole_list_ratio(load("side_by_side_50k.json"))
    xl_keys, xl_keys_text = keys_p99(xl)
    xl_pause = longest_pause(xl)
    large_keys, large_keys_text = keys_p99(large)
    built = xl_built_to_rows()
    rss = app_peak_rss(xl)
    drops = worst(logs_data, "single", "dropped"), worst(logs_data, "merged", "dropped")
    rate = least(logs_data, "single", "achieved_source_rate"), least(logs_data, "merged", "achieved_source_rate")
    growth = worst(logs_data, "single", "rss_growth_mb"), worst(logs_data, "merged", "rss_growth_mb")
    deltas = [number(v) for k, v in (dig(remote, "keys_p99_minus_loopback_s") or {}).items() if k != "loopback"]
    delta = max(deltas) if deltas and None not in deltas else None  # type: ignore[type-var]
    cpu_share, agent_rss = number(dig(agent_data, "cpu_percent_of_one_core_median")), number(dig(agent_data, "rss_mb"))
    cpu = search_cpu()
    p99_1000 = stale.p99_or_max if stale and stale.n else None
    fast_verdict = NOT_MEASURED if fast is None or not fast.n else verdict(
        max(fast.p50 - 1.0, fast.p99_or_max - 2.0) if fast.p50 is not None and fast.p99_or_max is not None else None, 0.0)
    harness_rows = []
    for raw, scale in SIDE_BY_SIDE:
        side = load(raw)
        ratio, lead = sync_ratio(raw, side), first_rows_lead(side)
        harness_rows += [[f"harness, {scale}: initial sync against `kubectl get -o json` (median)", "≤ 1.5×",
                          NOT_MEASURED if ratio is None else f"{ratio:.2f}×", verdict(ratio, 1.5)],
                         [f"harness, {scale}: first workload row, tau-tui − k9s (median)", "≤ 0 s",
                          NOT_MEASURED if lead is None else f"{lead:+.1f} s", verdict(lead, 0.0)]]
    restart = summarize(figures(demo_restart_frames(load(DEMO_RESTART)))).p50
    rows = [
        ["`./scripts/demo.sh` started again: first frame (median)", "≤ 3 s", seconds(restart), verdict(restart, 3.0)],
        ["xl: first workloads after the world is built", "≤ 3 s", seconds(built), verdict(built, 3.0)],
        ["xl: whole list after launch (median), with keys pressed meanwhile / without", "≤ 30 s",
         NOT_MEASURED if xl_whole is None and xl_quiet is None else f"{seconds(xl_whole)} / {seconds(xl_quiet)}", verdict(None if xl_whole is None or xl_quiet is None
                                                              else max(xl_whole, xl_quiet), 30.0)],
        ["xl: every key answered, p99 (while listing included)", "≤ 100 ms", xl_keys_text, verdict(xl_keys, 0.1)],
        ["xl: RSS of the app (peak)", "≤ 1,000 MB", mib_and_mb(rss), verdict(None if rss is None else rss * MB_PER_MIB, 1000.0)],
        ["xl: longest collection (a key pressed during it waits as long)", "≤ 100 ms", milliseconds(xl_pause),
         verdict(xl_pause, 0.1)],
        ["large: every key answered, p99", "≤ 100 ms", large_keys_text, verdict(large_keys, 0.1)],
        ["watch source, 200 changes/s: staleness p99", "≤ 250 ms", milliseconds(stale_p99(at_200)),
         verdict(stale_p99(at_200), 0.25)],
        ["watch source, 1,000 changes/s: staleness p99", "≤ 250 ms", milliseconds(p99_1000), verdict(p99_1000, 0.25)],
        ["watch source, 5,000 changes/s: staleness p50 / p99", "≤ 1 s / ≤ 2 s", tail(fast, seconds), fast_verdict],
        ["watch source, 5,000 changes/s: staleness p99 against k9s's (refreshes every 2 s at best)", "ahead of k9s",
         NOT_MEASURED if stale_p99(at_5000) is None or stale_p99(k9s_5000) is None else
         f"{milliseconds(stale_p99(at_5000))} against {milliseconds(stale_p99(k9s_5000))}",
         against_peer(stale_p99(at_5000), stale_p99(k9s_5000), "k9s")],
        ["watch source, 1,000 changes/s: changes never reflected", "0", count(never), verdict(never, 0)],
        ["watch source, 1,000 changes/s: j/k p99 while it runs", "≤ 100 ms", tail(keys_running),
         verdict(keys_running_p99, 0.1)],
        *harness_rows,
        ["harness, 50,000 Workloads: whole list against `kubectl get -o json` (median)", "≤ 0.4×",
         NOT_MEASURED if ratio_50k is None else f"{ratio_50k:.2f}×", verdict(ratio_50k, 0.4)],
        *soak_goals(),
        ["agent: CPU share of one core", "≤ 1 %", NOT_MEASURED if cpu_share is None else f"{cpu_share:.3f} %",
         verdict(cpu_share, 1.0)],
        ["agent: RSS", "≤ 80 MiB", megabytes(agent_rss), verdict(agent_rss, 80.0)],
        ["logs: lines/s handed over (slowest run)", "50,000 (≥ 99 % of it)", both(rate, count),
         verdict(None if None in rate else min(rate), 49_000, worse_when_higher=False)],  # type: ignore[type-var]
        ["logs: lines dropped", "0", both(drops, count),
         verdict(None if None in drops else max(drops), 0)],  # type: ignore[type-var]
        ["logs: RSS growth over 60 s (largest)", "≤ 50 MiB", both(growth, megabytes),
         verdict(None if None in growth else max(growth), 50.0)],  # type: ignore[type-var]
        ["logs: plain search of 1 GB, CPU (slowest)", "≤ 3 s", seconds(cpu), verdict(cpu, 3.0)],
        ["remote link: keys p99 − loopback's (worst case)", "≤ 10 ms",
         NOT_MEASURED if delta is None else f"{delta * 1000:+.0f} ms", verdict(delta, 0.010)],
    ]
    return table(["Goal", "limit", "measured", "verdict"], rows)


SOAK_OPTIONS: dict[str, object] = {"seconds": 7200.0, "workloads": 20_000, "rate": 200.0, "restart_every": 900.0,
                                   "warmup": 900.0, "rss_every": 60.0, "settle": 120.0, "json": "soak.json"}


def soak() -> list[str]:
    raw = "soak.json"
    data = load(raw)
    command = args_command("soak.py", data or {}, SOAK_OPTIONS)
    if not data:
        return absent(raw, command)
    if not isinstance(data.get("final"), dict):
        return header(raw, command, data) + [f"**{NOT_MEASURED}**: the raw file holds no final state (the run did not end)."]
    stats = saved_summary(dig(data, "staleness_s"))
    rss = [number(mb) for _, mb in (dig(data, "rss_mb") or [])]
    rows = [["source runs (restarts + 1) / Workload lists by the app", f"{len(listed(data, 'source_runs'))} / "
             f"{count(dig(data, 'workload_relists'))}"],
            ["changes made", count(dig(data, "changes_made"))],
            ["RSS at the first sample / at the end", f"{megabytes(rss[0] if rss else None)} / {megabytes(dig(data, 'rss_mb_at_end'))}"],
            ["RSS growth after the warm-up (most above it)", f"{megabytes(dig(data, 'rss_growth_after_warmup_mb'))} "
             f"({megabytes(dig(data, 'rss_rise_after_warmup_mb'))})"],
            ["hot changes: staleness p50 / p99", tail(stats)],
            ["hot changes never reflected", f"{count(dig(data, 'never_reflected'))} of {count(dig(data, 'hot_changes'))}"],
            ["final state: mismatches of the Workloads", f"{count(dig(data, 'final', 'mismatches'))} of "
             f"{count(dig(data, 'final', 'workloads'))}"]]
    return header(raw, command, data) + table(["Soak", "figure"], rows)


SECTIONS: dict[str, Callable[[], list[str]]] = {
    "app-scales": app_scales, "first-frame": first_frame, "pilot": pilot, "side-by-side": side_by_side,
    "staleness-watch": staleness_watch, "staleness-harness": loaded_staleness,
    "cluster": cluster_layer, "recording": recording, "logs": logs, "agent": agent, "remote-link": remote_link,
    "soak": soak, "goals": goals,
}


def render(page: str) -> str:
    """``page`` with every marked section replaced by what the raw files give."""
    names = [m.group("name") for m in MARKER.finditer(page)]
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"the page marks sections this script does not know: {', '.join(unknown)}")
    def body(name: str) -> str:
        lines = SECTIONS[name]()
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines) + "\n"

    return MARKER.sub(lambda m: m.group(1) + body(m.group("name")) + m.group(4), page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write the figures into the page")
    mode.add_argument("--check", action="store_true", help="exit 1 if the page differs from what the raw files give")
    parser.add_argument("--page", type=Path, default=PAGE)
    args = parser.parse_args()
    page = args.page.read_text()
    wanted = render(page)
    if args.check:
        if wanted != page:
            print(f"{args.page} differs from the raw files: run scripts/performance_page.py --write", file=sys.stderr)
            return 1
        return 0
    if wanted != page:
        args.page.write_text(wanted)
        print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
