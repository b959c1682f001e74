"""tau-tui over a remote link: a delaying TCP proxy (Toxiproxy) between the app and a real API server.

This kernel has no netem qdisc, so Toxiproxy (built by `bash harness/build.sh toxiproxy`) sits on
127.0.0.1 in front of the harness's T1 kube-apiserver (etcd, kube-apiserver, Kueue); TLS passes
through it (the serving certificate names 127.0.0.1). The plane is loaded with the shape of
benchmarks/load_cluster.py at a smaller size (default 2,000 Workloads on 10 LocalQueues / 4
ClusterQueues in 5 namespaces, 40 plain Nodes, pods of the admitted Workloads). Cases:

- loopback: the app talks to the API server directly (the baseline);
- latency: a `latency` toxic of 50 ms, jitter 10 ms, on upstream and on downstream (each way);
- slow link: the same plus a `bandwidth` toxic of 256 KB/s downstream (Toxiproxy applies it per connection).

Each case runs the real `tau-tui --readonly --pane queue` (the venv's console script) in its own
tmux server at 160x48 with a kubeconfig of its own user, and reads the screen with `capture-pane`
every 5 ms (benchmarks/tmux_screen.py). Measured, every key's clock started before its `send-keys`
and nothing subtracted (tmux's own round trip is included):

- first screen: launch → a workload row is on screen; launch → the counts line is complete;
- keys answered from the cache: j/k in the Workloads table (until two adjacent lines swap their
  background: the cursor moved), sort (shift+n: until the column's arrow flips), filter characters (until the
  character is on the `/` line); and the filter applied to every row on screen, esc clearing it;
- pane switches 6 (Nodes), 4 (Runs), 3 (Queue): until the crumb shows, and until the pane's rows do.

Every case's app stays open; after a warm-up launch and each case's first screens, the keys and
switches go in rounds that take the cases in turn, so the machine's load falls on each alike.

Requests are counted by kube-apiserver's audit log (tests/harness/request_audit.py), per user: those
of the first screen (launch until the counts line is complete) by verb and resource, and those made
while the keys were pressed. p50/p99 by nearest rank (benchmarks/percentiles.py; under 100 samples
the max stands in for the p99, named so). The goal: keys' p99 within 10 ms of loopback's.

Run: .venv/bin/python benchmarks/remote_link.py [--workloads 2000] [--launches 3] [--blocks 5] [--moves 200] [--sorts 20]
     [--filters 5] [--switches 10] [--json benchmarks/results/remote_link.json]
Only 127.0.0.1 is contacted; every process started here is stopped by its PID.
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
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_cluster import Api, Shape, load, print_report  # noqa: E402
from machine_info import machine, machine_line  # noqa: E402
from percentiles import median_spread, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from tmux_screen import Screen, command_line, header_lines, rows_match  # noqa: E402

from tests.harness.binaries import locate  # noqa: E402
from tests.harness.controlplane import ControlPlane  # noqa: E402
from tests.harness.processes import ManagedProcess, free_port, port_open  # noqa: E402
from tests.harness.request_audit import audit_flags, audit_log, audited_kubeconfig, counted, read_requests  # noqa: E402

LATENCY_MS, JITTER_MS, RATE_KBS = 50, 10, 256
CASES: dict[str, list[dict]] = {
    "loopback": [],
    "latency": [{"name": f"latency_{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
                 "attributes": {"latency": LATENCY_MS, "jitter": JITTER_MS}} for stream in ("upstream", "downstream")],
}
CASES["slow link"] = CASES["latency"] + [{"name": "bandwidth_downstream", "type": "bandwidth", "stream": "downstream",
                                          "toxicity": 1.0, "attributes": {"rate": RATE_KBS}}]
ROW = re.compile(r"job-\d{5}")
NODE_ROW = re.compile(r"\b(h100|a100)-\d{4}\b")
COUNTS = re.compile(r"\d+ CQ · \d+ LQ · workloads: \d+ pending, \d+ quotaReserved, \d+ admitted, \d+ finished")
SGR = re.compile(r"\x1b\[[0-9;:]*m")
FILTER = "job-00"
POLL_S = 0.005
PAUSE_S = 0.05  # between keys: the app idles before the next one
FIRST_SCREEN_LIMIT_S = 600.0
KEY_LIMIT_S = 20.0
KEY_KINDS = ("j/k", "sort", "filter character")


class Toxiproxy:
    """Toxiproxy's server on 127.0.0.1, driven through its HTTP admin API."""

    def __init__(self, binary: Path, log_dir: Path):
        self.port = free_port()
        self.proc = ManagedProcess("toxiproxy", [str(binary), "-host", "127.0.0.1", "-port", str(self.port)],
                                   log_dir / "toxiproxy.log")

    def start(self) -> None:
        self.proc.start()
        self.proc.wait_until(lambda: port_open(self.port), "admin API port open", 30)

    def _call(self, method: str, path: str, body: dict | None = None) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            resp.read()

    def proxy(self, name: str, upstream: str, toxics: list[dict]) -> str:
        """A proxy to ``upstream`` with ``toxics``; its listen address."""
        listen = f"127.0.0.1:{free_port()}"
        self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})
        for toxic in toxics:
            self._call("POST", f"/proxies/{name}/toxics", toxic)
        return listen

    def remove(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}")

    def stop(self) -> None:
        self.proc.stop()


def styled(screen: Screen) -> str:
    """The pane with its colours (``capture-pane -e``): a cursor move changes only styles."""
    return subprocess.run(["tmux", "-L", screen.socket, "capture-pane", "-p", "-e", "-t", "bench"], env=screen.env,
                          capture_output=True, text=True, timeout=30).stdout


def line_backgrounds(styled_text: str) -> list[str]:
    """The background colour in effect at the first character of each line (tmux states an SGR
    only where it changes, so the state is carried from line to line)."""
    background, out = "", []
    for line in styled_text.split("\n"):
        first: str | None = None
        position = 0
        for match in SGR.finditer(line):
            if first is None and match.start() > position:
                first = background
            position = match.end()
            params = match.group()[2:-1].replace(":", ";").split(";")
            i = 0
            while i < len(params):
                code = params[i]
                if code in ("", "0", "49"):
                    background = ""
                elif code == "48" and i + 1 < len(params):
                    width = 3 if params[i + 1] == "5" else 5
                    background = ";".join(params[i:i + width])
                    i += width - 1
                elif code == "38" and i + 1 < len(params):
                    i += (3 if params[i + 1] == "5" else 5) - 1
                elif code.isdigit() and (40 <= int(code) <= 47 or 100 <= int(code) <= 107):
                    background = code
                i += 1
        out.append(first if first is not None else background)
    return out


def cursor_moved(before: str, after: str) -> bool:
    """The cursor left a line for the next or the one before: two adjacent lines changed their
    background.  Text that changed meanwhile (an age ticking) does not matter."""
    old, new = line_backgrounds(before), line_backgrounds(after)
    changed = {i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b}
    return len(changed) == 2 and max(changed) - min(changed) == 1


def wait(read, seen, since: float, limit: float = KEY_LIMIT_S) -> float:
    """Seconds from ``since`` until ``seen(read())`` holds; inf past ``limit``."""
    while time.monotonic() - since < limit:
        if seen(read()):
            return time.monotonic() - since
        time.sleep(POLL_S)
    return float("inf")






def sort_arrow(text: str) -> str:
    found = re.search(r"Workload([↑↓])", text)
    return found.group(1) if found else ""


class Session:
    """One case: its proxy (none on loopback), its user and kubeconfig, and the app in tmux."""

    def __init__(self, case: str, plane: ControlPlane, proxy: Toxiproxy, home: str, user: str | None = None):
        self.case, self.plane, self.proxy = case, plane, proxy
        self.user = user or "tau-tui-" + case.replace(" ", "-")
        self.server = plane.server
        if CASES[case]:
            self.server = "https://" + proxy.proxy(self.user, f"127.0.0.1:{plane.ports['apiserver']}", CASES[case])
        self.env = dict(os.environ, KUBECONFIG=audited_kubeconfig(plane, self.user, self.server), TERM="xterm-256color",
                        HOME=f"{home}/{self.user}", XDG_CONFIG_HOME=f"{home}/{self.user}/config",
                        XDG_STATE_HOME=f"{home}/{self.user}/state", XDG_DATA_HOME=f"{home}/{self.user}/data",
                        XDG_CACHE_HOME=f"{home}/{self.user}/cache")
        self.screen: Screen | None = None
        self.launches: list[dict] = []
        self.samples: dict[str, list[float]] = {k: [] for k in (
            "j/k", "sort", "filter character", "filter line opens", "filter applied", "esc clears",
            "pane crumb", "pane rows")}
        self.moves_sent_at: list[float] = []  # epoch seconds of each j/k, to set beside the requests' times
        self.keys_from: datetime | None = None
        self.keys_until: datetime | None = None
        self.sorted_up = False

    def launch(self, keep: bool) -> None:
        """Start the app and time its first screen; stopped again unless ``keep``."""
        since = datetime.now(UTC)
        screen = Screen(self.user, [str(Path(sys.executable).parent / "tau-tui"), "--readonly", "--pane", "queue"], self.env)
        started = screen.start()
        try:
            rows_s = wait(screen.capture, lambda t: bool(ROW.search(t)), started, FIRST_SCREEN_LIMIT_S)
            counts_s = wait(screen.capture, lambda t: bool(COUNTS.search(t)), started, FIRST_SCREEN_LIMIT_S)
            shown = datetime.now(UTC)
        except BaseException:
            screen.stop()
            raise
        if keep:
            self.screen = screen
        else:
            screen.stop()
        first = read_requests(audit_log(self.plane.state_dir / "audit"), self.user, since=since, until=shown)
        self.launches.append({"rows_s": rows_s, "counts_s": counts_s, "requests": len(first),
                              "requests_by_key": dict(sorted(counted(first).items())),
                              "named_workload_requests": sum(1 for r in first if r.resource.startswith("workloads.") and r.name)})
        print(f"[{self.case}] first screen: rows {rows_s:.2f} s, counts line {counts_s:.2f} s, {len(first)} requests",
              flush=True)

    def focus_workloads(self) -> None:
        assert self.screen is not None
        self.screen.send("Tab")
        time.sleep(1.0)
        self.keys_from = datetime.now(UTC)

    def keys(self, moves: int, sorts: int, filters: int) -> None:
        """j/k ``moves`` times, the sort ``sorts`` times, and ``filters`` rounds of the filter."""
        screen, samples = self.screen, self.samples
        assert screen is not None
        # From the top row: j from the last row on screen scrolls the table and moves no line's style.
        screen.send("g", literal=True)
        time.sleep(0.5)
        for i in range(moves):
            before = styled(screen)
            self.moves_sent_at.append(time.time())
            sent = screen.send("j" if i % 2 == 0 else "k", literal=True)
            samples["j/k"].append(wait(lambda: styled(screen), lambda t, before=before: cursor_moved(before, t), sent))
            time.sleep(PAUSE_S)
        for _ in range(sorts):
            self.sorted_up = not self.sorted_up
            arrow = "↑" if self.sorted_up else "↓"
            sent = screen.send("N", literal=True)
            samples["sort"].append(wait(screen.capture, lambda t, arrow=arrow: sort_arrow(t) == arrow, sent))
            time.sleep(PAUSE_S)
        for _ in range(filters):
            sent = screen.send("/", literal=True)
            samples["filter line opens"].append(
                wait(screen.capture, lambda t: command_line(t).lstrip().startswith("/"), sent))
            for n in range(1, len(FILTER) + 1):
                sent = screen.send(FILTER[n - 1], literal=True)
                samples["filter character"].append(
                    wait(screen.capture, lambda t, typed=FILTER[:n]: typed in command_line(t), sent))
                time.sleep(PAUSE_S)
            samples["filter applied"].append(wait(
                screen.capture, lambda t: rows_match(t, FILTER, ROW) and f"filter: {FILTER}" in header_lines(t), sent))
            sent = screen.send("Escape")
            samples["esc clears"].append(wait(screen.capture, lambda t: "filter:" not in header_lines(t), sent))
            time.sleep(PAUSE_S)
        self.keys_until = datetime.now(UTC)

    def switches(self) -> None:
        """6 (Nodes), 4 (Runs: no Jobs on this plane, the crumb only), 3 (Queue)."""
        screen = self.screen
        assert screen is not None
        for key, crumb, rows in (("6", "› Nodes", NODE_ROW), ("4", "› Runs", None), ("3", "› Queue", ROW)):
            sent = screen.send(key, literal=True)
            self.samples["pane crumb"].append(wait(screen.capture, lambda t, crumb=crumb: crumb in header_lines(t), sent))
            if rows is not None:
                self.samples["pane rows"].append(wait(
                    screen.capture, lambda t, crumb=crumb, rows=rows: crumb in header_lines(t)
                    and bool(rows.search("\n".join(t.splitlines()[3:]))), sent))
            time.sleep(PAUSE_S)

    def close(self) -> dict:
        rss = self.screen.rss() if self.screen else (0.0, 0.0)
        if self.screen:
            self.screen.stop()
        if CASES[self.case]:
            self.proxy.remove(self.user)
        during = read_requests(audit_log(self.plane.state_dir / "audit"), self.user, since=self.keys_from,
                               until=self.keys_until) if self.keys_from else []
        return {"server": self.server, "toxics": CASES[self.case], "launches": self.launches,
                "requests_while_keys": dict(sorted(counted(during).items())),
                "requests_while_keys_at": [[r.received.timestamp(), r.key] for r in during],
                "moves_sent_at": self.moves_sent_at, "rss_mb": rss[0], "hwm_mb": rss[1],
                "samples": self.samples}


def measure(plane: ControlPlane, proxy: Toxiproxy, args, home: str) -> dict[str, dict]:
    """Every case's first screens, then its keys and pane switches in rounds that take the cases in
    turn (each app stays open), so that the machine's load falls on every case alike."""
    sessions = [Session(case, plane, proxy, home) for case in args.cases]
    try:
        warm = Session("loopback", plane, proxy, home, user="tau-tui-warm-up")
        warm.launch(keep=False)  # the first start reads the interpreter's files from disk: not counted
        warm.close()
        for session in sessions:
            for launch in range(args.launches):
                session.launch(keep=launch == args.launches - 1)
        time.sleep(5.0)  # the other kinds' first lists, after the first screens
        for session in sessions:
            session.focus_workloads()
        for block in range(args.blocks):
            for session in sessions:
                session.keys(args.moves // args.blocks, args.sorts // args.blocks,
                             1 if block < args.filters else 0)
            print(f"keys: block {block + 1}/{args.blocks} done", flush=True)
        for _ in range(args.switches):
            for session in sessions:
                session.switches()
    finally:
        results = {session.case: session.close() for session in sessions}
    return results


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1000:.0f}"


def keys_summary(result: dict):
    return summarize([v for kind in KEY_KINDS for v in result["samples"][kind]])


def print_table(results: dict[str, dict]) -> None:
    print(f"\n{'case':10} {'rows s':>12} {'counts s':>12} {'reqs':>5}  {'pane crumb p50/p99':>18}  "
          f"{'pane rows p50/p99':>17}  keys p50/p99 (n)")
    for case, r in results.items():
        rows = median_spread([launch["rows_s"] for launch in r["launches"]])
        counts = median_spread([launch["counts_s"] for launch in r["launches"]])
        requests = median_spread([launch["requests"] for launch in r["launches"]], ".0f")
        keys, crumb, pane = keys_summary(r), summarize(r["samples"]["pane crumb"]), summarize(r["samples"]["pane rows"])
        print(f"{case:10} {rows:>12} {counts:>12} {requests:>5}  {ms(crumb.p50):>8}/{ms(crumb.p99_or_max):>4} ms  "
              f"{ms(pane.p50):>7}/{ms(pane.p99_or_max):>4} ms  {ms(keys.p50)}/{ms(keys.p99_or_max)} ms "
              f"({keys.p99_name}, n={keys.n}, lost {keys.lost})")
    for case, r in results.items():
        for name, values in r["samples"].items():
            print(f"  {case:10} {name:18} {summarize(values).label()}")
        print(f"  {case:10} first-screen requests (last launch): {r['launches'][-1]['requests_by_key'] if r['launches'] else {}}")
        print(f"  {case:10} requests while keys were pressed: {r['requests_while_keys']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--launches", type=int, default=3, help="first screens per case")
    parser.add_argument("--blocks", type=int, default=5, help="rounds of keys, taking the cases in turn")
    parser.add_argument("--moves", type=int, default=200, help="j/k presses per case, over all blocks")
    parser.add_argument("--sorts", type=int, default=20, help="sorts per case, over all blocks")
    parser.add_argument("--filters", type=int, default=5, help=f"rounds of typing the filter {FILTER!r} (one per block)")
    parser.add_argument("--switches", type=int, default=10, help="rounds of the pane switches 6, 4, 3")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--json", default=str(REPO / "benchmarks/results/remote_link.json"))
    args = parser.parse_args()
    binaries = locate()
    binaries.require("etcd", "kube_apiserver", "kueue", "toxiproxy")
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    shape = Shape(workloads=args.workloads, local_queues=10, cluster_queues=4, nodes=40, namespaces=5)
    state = Path(tempfile.mkdtemp(prefix="tau-bench-remote-"))
    home = tempfile.mkdtemp(prefix="tau-remote-home-")
    plane = ControlPlane("remote", state, binaries, apiserver_flags=audit_flags(state / "audit"))
    proxy = Toxiproxy(binaries.toxiproxy, state / "logs")
    try:
        plane.start()
        proxy.start()
        api = Api(plane.kubeconfig)
        try:
            report = load(api, shape, kwok=False)
        finally:
            api.close()
        print_report(report)
        info = machine()
        info["loadavg_all"] = os.getloadavg()
        results = measure(plane, proxy, args, home)
        info_after = machine()
        info_after["loadavg_all"] = os.getloadavg()
    finally:
        proxy.stop()
        plane.stop()
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    print("\n" + machine_line(info, info_after))
    print(f"{args.workloads} Workloads; latency {LATENCY_MS} ms ± {JITTER_MS} ms each way; slow link {RATE_KBS} KB/s down")
    print_table(results)
    base = keys_summary(results["loopback"]).p99_or_max if "loopback" in results else None
    over = {case: None if base is None or keys_summary(r).p99_or_max is None else keys_summary(r).p99_or_max - base
            for case, r in results.items()}
    print("keys p99 minus loopback's (goal ≤ 10 ms): " + ", ".join(f"{c} {ms(d)} ms" for c, d in over.items()))
    save_raw(args.json, {"machine": info, "machine_after": info_after, "args": vars(args), "shape": vars(shape),
                         "load": report.counts, "latency_ms": LATENCY_MS, "jitter_ms": JITTER_MS, "rate_kb_s": RATE_KBS,
                         "keys_p99_minus_loopback_s": over,
                         "summaries": {case: {"keys": keys_summary(r).as_dict(),
                                              **{k: summarize(v).as_dict() for k, v in r["samples"].items()}}
                                       for case, r in results.items()},
                         "cases": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
