"""What the Runs pane's reads cost while it is on screen at `--demo large` (20,000 runs, the simulated
cluster changing in real time), driven through Textual's pilot.

Opens the Runs pane once the queue pane shows its workloads, keeps it on screen for ``--seconds``
and times each read (``RunsScreen.collect``) by the CPU time of the thread that runs it (other
threads do not count), with the run statuses it worked out.  The first read is the read ahead
(every run); the others follow the cluster's changes.  Prints the medians and the spread over
``--repeat`` launches with the machine line; raw samples to JSON.

Run: .venv/bin/python benchmarks/runs_reads.py [--repeat 2] [--seconds 20] [--json benchmarks/results/runs_reads.json]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_keys import machine, send_key, table_rows, wait_until  # noqa: E402
from percentiles import median  # noqa: E402
from raw_results import save_raw  # noqa: E402

from tau_tui.app import TauApp  # noqa: E402
from tau_tui.core.operations.audit import AuditLog  # noqa: E402
from tau_tui.screens import runs as runs_screen  # noqa: E402
from tau_tui.settings.settings_file import AppSettings, LoadedSettings  # noqa: E402
from tau_tui.startup.heap import tune_collector  # noqa: E402


def timed_reads() -> list[dict]:
    """Wraps RunsScreen.collect: each read's thread CPU seconds and statuses worked out."""
    reads: list[dict] = []
    collect = runs_screen.RunsScreen.collect

    def timed(self, request):
        started, computed = time.thread_time(), self.statuses_computed
        try:
            return collect(self, request)
        finally:
            reads.append({"cpu_s": time.thread_time() - started, "computed": self.statuses_computed - computed})

    runs_screen.RunsScreen.collect = timed  # type: ignore[method-assign]
    return reads


async def one_launch(seconds: float, reads: list[dict]) -> list[dict]:
    reads.clear()
    with tempfile.TemporaryDirectory() as tmp:
        app = TauApp(demo="large", settings=LoadedSettings(AppSettings(), Path(tmp) / "config.yaml"),
                     audit=AuditLog(Path(tmp) / "audit.jsonl"), start_pane="queue", demo_realtime=True)
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: table_rows(app, "workloads-table") >= 1000, step=0.05)
            send_key(app, "4")
            await wait_until(pilot, lambda: table_rows(app, "runs-table") > 0, step=0.01)
            await asyncio.sleep(seconds)
            await app.action_quit()
    return list(reads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--json", default="benchmarks/results/runs_reads.json")
    args = parser.parse_args()
    tune_collector()
    reads = timed_reads()
    launches = []
    for n in range(args.repeat):
        launches.append(asyncio.run(one_launch(args.seconds, reads)))
        print(f"  launch {n + 1}/{args.repeat} done", flush=True)
    print(f"Runs pane on --demo large through the pilot, {args.seconds:.0f} s on screen; {args.repeat} launches")
    print(f"machine: {machine()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    firsts = [launch[0] for launch in launches if launch]
    following = [read for launch in launches for read in launch[1:]]
    ms = sorted(read["cpu_s"] * 1000 for read in following)
    print(f"first read (every run):  CPU median {median(r['cpu_s'] for r in firsts) * 1000:.0f} ms, "
          f"statuses worked out median {median(r['computed'] for r in firsts):.0f}")
    if ms:
        print(f"following reads (n={len(ms)}): CPU median {median(ms):.1f} ms, "
              f"min..max {ms[0]:.1f}..{ms[-1]:.1f} ms, statuses worked out per read median "
              f"{median(r['computed'] for r in following):.0f}, max {max(r['computed'] for r in following)}")
    save_raw(args.json, {"machine": machine(), "seconds": args.seconds, "launches": launches})
    return 0


if __name__ == "__main__":
    sys.exit(main())
