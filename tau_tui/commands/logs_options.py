"""The options of `tau-tui logs` (the command itself: logs_command.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

USAGE = """\
  tau-tui logs RUN [-n NS] [-f] [--previous] [--all] [--since DURATION] [--tail N] [--demo [SCENARIO]]
                                        the run's logs through the app's spool: a Job's pods (job-name);
                                        a RayJob's driver output (ray job logs in its head, else its
                                        log-offload sidecar); --all adds every container (a RayJob's head
                                        and workers after the driver), each line prefixed; -f follows
                                        across the run's pods and exits when the run has ended
"""


def add_logs_parser(sub: Any, duration: Callable[[str], float]) -> argparse.ArgumentParser:
    logs: argparse.ArgumentParser = sub.add_parser("logs", help="a run's logs (Job pods; a RayJob's driver output first)")
    logs.add_argument("run", help="name of the Job or RayJob")
    logs.add_argument("-f", "--follow", action="store_true",
                      help="follow: new lines as they come, the run's new pods too; ends when the run has ended")
    logs.add_argument("--previous", action="store_true",
                      help="the previous instance of each container (a RayJob's head and workers: a driver has none)")
    logs.add_argument("--all", action="store_true",
                      help="every pod and container, each line prefixed [pod/container] ([driver] for a RayJob's "
                           "driver output, which comes first)")
    logs.add_argument("--since", metavar="DURATION", type=duration,
                      help="only lines newer than this (5s, 2m, 3h); a driver's output has no timestamps and is whole")
    logs.add_argument("--tail", metavar="N", type=int, help="the last N lines of each source (default: all)")
    logs.add_argument("-n", "--namespace", help="namespace (default: the context's, else default)")
    logs.add_argument("--context", help="kubeconfig context (default: current)")
    logs.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO",
                      help="read the embedded simulated cluster instead (scenario: demo, faults, large, xl)")
    logs.add_argument("--request-timeout", metavar="DURATION", type=duration,
                      help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; default 30s)")
    return logs
