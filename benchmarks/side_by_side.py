"""tau-tui side by side with kubectl, kueuectl and k9s on one loaded real API server (harness T2).

One run: starts the harness's T2 plane, loads it with the `large` shape (benchmarks/load_cluster.py:
20,000 Workloads, 50 LocalQueues, 10 ClusterQueues, 2,000 KWOK nodes x 8 GPUs, pods of the admitted
Workloads), then measures, every tool against the same server:

1. Initial sync of workloads and nodes, wall time and peak RSS of each process (os.wait4 rusage):
   - tau-tui's backend (KubernetesBackend, in a child process): from process start until its cache
     holds every Workload and Node; once with only the Workload and Node informers (the same
     objects kubectl reads, plus the node-pods informer that NODE brings), once with every kind
     the app watches;
   - `kubectl get workloads.kueue.x-k8s.io -A -o json` then `kubectl get nodes -o json` (output to
     /dev/null; the two times add up, RSS is the larger);
   - `kueuectl list workload -A` (if built).
2. First row and whole list, the clock started just before the process is: each repeat is one
   round of tau-tui, k9s, kubectl, the order turned one place each round (no tool always goes first,
   when the plane is slowest, and no tool runs all its repeats first). The two TUIs in tmux at 160x48 (own tmux server), polled with `capture-pane -p` every
   50 ms: first row when a row `job-NNNNN` is on screen, whole list when the screen says the list
   holds every loaded Workload:
   - `tau-tui --readonly --pane queue` (all namespaces): its counts line (`workloads: N pending,
     M admitted`, written once the first list is done) sums to the count;
   - `k9s --readonly -A --command workloads.kueue.x-k8s.io` (the fully qualified name: k9s has a
     built-in "workloads" view of Deployments/Pods that the short name can land on): its title
     `(all)[N]` shows the count;
   - `kubectl get workloads.kueue.x-k8s.io -A -o json`: first byte of output, and exit (its items
     counted).
   A sample past --wait-limit (default 180 s) is kept, marked timed out, with the count it reached.
3. Event-to-screen latency at RATE changes/s for SECONDS (default 30/s, a rate the loaded server
   sustains beside either tool, so both are measured at the same rate; 60 s), one tool at a
   time, --repeat rounds with the tools alternating, each scoped to the namespace `aaa-bench`, which holds BENCH_ROWS pending Workloads (few
   enough that every row is on screen in both tools). The driver merge-patches `spec.queueName`
   of those Workloads round robin to `q-<sequence>`; the Queue column shows it in both tools
   (tau-tui's "Queue", k9s's "QUEUE" printer column). The LocalQueues named so do not exist, so
   Kueue never admits these Workloads (it only marks them inadmissible). The screen is captured
   every 20 ms. Each change's staleness (benchmarks/staleness.py) is the time from the change until
   a capture shows its value or a newer one on its row: every change counts (one overwritten before
   the tool drew it ends when the newer value shows), and those no capture reflected before the run
   ended are counted as never reflected. Measured from the PATCH's send, from the server's answer
   and from a reference watch's delivery; p50/p90/p99/max by nearest rank (benchmarks/percentiles.py;
   below 100 changes the max stands in for the p99, named so). Peak RSS of the tool over that
   minute: VmHWM.
Each timing is repeated (--repeat, default 3); the table prints the
median (nearest rank) and min..max, the machine and the date, and the raw numbers go to
benchmarks/results/side_by_side.json. A missing peer (k9s, kueuectl) is built first with
`bash harness/build.sh <peer>` (unless --no-build, or while another harness/build.sh runs); a peer
that cannot be built is reported as missing, with why, and the rest still runs.

Run: .venv/bin/python benchmarks/side_by_side.py [--repeat 3] [--rate 30] [--seconds 60]
     [--workloads 20000] [--nodes 2000] [--wait-limit 180] [--skip sync|first-screen|latency]
     [--json PATH]
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
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_cluster import BENCH_NAMESPACE, KUEUE, Api, Shape, plane_memory, print_report, start_loaded_plane  # noqa: E402
from machine_info import machine  # noqa: E402
from percentiles import Summary, median, median_spread, summarize  # noqa: E402
from raw_results import save_raw  # noqa: E402
from staleness import Change, Observation, look_at_screen, staleness  # noqa: E402
from tmux_screen import Screen  # noqa: E402

from tests.harness.binaries import locate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
PYTHON = sys.executable
BENCH_ROWS = 8
ROW_RE = re.compile(r"job-\d{5}")
LISTING = "still listing"
TAU_COUNTS_RE = re.compile(r"workloads: ((?:\d+ \w+(?:, )?)+)")
#: A bench row and its Queue value's number; k9s marks a changed cell with a "Δ" right after the
#: value (a word character, so ``\b`` there never matches).
BENCH_ROW_QUEUE = re.compile(r"(bench-\d\d)\b.*?\bq-(\d+)(?!\d)")
K9S_COUNT_RE = re.compile(r"\((?:all|[\w-]+)\)\[(\d[\d,]*)\]")
KUBECTL_JSON = "kubectl get workloads -A -o json"
WAIT_LIMIT = 180.0

SYNC_CHILD = r"""
import sys, time
started = time.monotonic()
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.real import KubernetesBackend
kubeconfig, scope, workloads, nodes, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
kinds = [ResourceKind.WORKLOAD, ResourceKind.NODE] if scope == "workloads+nodes" else None
backend = KubernetesBackend(kubeconfig, all_namespaces=True, kinds=kinds)
backend.start()
deadline = started + limit
while time.monotonic() < deadline:
    backend.wait_synced(timeout=max(1.0, deadline - time.monotonic()), kinds=[ResourceKind.WORKLOAD, ResourceKind.NODE])
    if len(backend.workloads()) >= workloads and len(backend.nodes()) >= nodes:
        print(f"SYNCED {time.time():.3f} {len(backend.workloads())} {len(backend.nodes())}", flush=True)
        break
    time.sleep(0.05)
else:
    print("TIMEOUT", flush=True)
backend.close()
"""


def run_measured(argv: list[str], env: dict | None = None, stdout=subprocess.DEVNULL) -> tuple[float, float, int, str, float]:
    """(wall seconds, peak RSS MB, exit code, stdout text, start epoch) of one child.

    Peak RSS is the child's VmHWM, read from /proc every 10 ms until it exits (the high-water mark
    only grows, so the last read is its peak to within 10 ms). Not rusage: Linux carries the
    forked parent's RSS (this Python process) into the child's ru_maxrss across exec."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out_file:
        started_epoch, started = time.time(), time.monotonic()
        proc = subprocess.Popen(argv, stdout=out_file if stdout == subprocess.PIPE else stdout, stderr=err, env=env)
        hwm = 0.0
        while True:
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            try:
                with open(f"/proc/{proc.pid}/status") as f:
                    hwm = next((int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:")), hwm)
            except OSError:
                pass
            time.sleep(0.01)
        wall = time.monotonic() - started
        out_file.seek(0)
        out = out_file.read()
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code  # reaped here; Popen must not wait again
        if code:
            err.seek(0)
            print(f"  ! {' '.join(argv[:3])} exited {code}: {err.read().decode(errors='replace')[-300:]}", flush=True)
    return wall, hwm, code, out.decode(errors="replace"), started_epoch


def sync_round(kubeconfig: str, shape: Shape, peers: dict[str, Path], limit: float) -> dict:
    out: dict = {}
    env = dict(os.environ, KUBECONFIG=kubeconfig)
    for scope in ("workloads+nodes", "all kinds"):
        wall, rss, rc, text, spawned = run_measured(
            [PYTHON, "-c", SYNC_CHILD, kubeconfig, scope, str(shape.workloads), str(shape.nodes), str(limit)],
            env=dict(env, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE)
        line = next((ln for ln in text.splitlines() if ln.startswith("SYNCED")), None)
        # From spawn (interpreter start-up and imports included, as kubectl's process start is) until
        # the cache held every Workload and Node; closing the informers afterwards is not counted.
        out[f"tau-tui backend ({scope})"] = {"seconds": float(line.split()[1]) - spawned if line else None,
                                             "process_seconds": wall, "rss_mb": rss, "ok": bool(line)}
    if peers.get("kubectl"):
        w1, r1, c1, _, _ = run_measured([str(peers["kubectl"]), "get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"], env=env)
        w2, r2, c2, _, _ = run_measured([str(peers["kubectl"]), "get", "nodes", "-o", "json"], env=env)
        out["kubectl get -o json (workloads + nodes)"] = {"seconds": w1 + w2, "process_seconds": w1 + w2, "rss_mb": max(r1, r2),
                                                          "ok": c1 == 0 and c2 == 0, "workloads_s": w1, "nodes_s": w2}
    if peers.get("kueuectl"):
        w, r, c, _, _ = run_measured([str(peers["kueuectl"]), "list", "workload", "-A"], env=env)
        out["kueuectl list workload -A"] = {"seconds": w, "process_seconds": w, "rss_mb": r, "ok": c == 0}
    return out


# ---------------------------------------------------------------------------------------------
def tool_commands(kubeconfig: str, peers: dict[str, Path], home: str, namespace: str | None) -> dict[str, tuple[list[str], dict]]:
    env = dict(os.environ, KUBECONFIG=kubeconfig, TERM="xterm-256color", HOME=home, XDG_CONFIG_HOME=f"{home}/config",
               XDG_STATE_HOME=f"{home}/state", XDG_DATA_HOME=f"{home}/data", XDG_CACHE_HOME=f"{home}/cache",
               K9S_CONFIG_DIR=f"{home}/k9s")
    tau = [str(Path(PYTHON).parent / "tau-tui"), "--readonly", "--pane", "queue"] + (["-n", namespace] if namespace else [])
    tools = {"tau-tui": (tau, env)}
    if peers.get("k9s"):
        scope = ["-n", namespace] if namespace else ["-A"]
        tools["k9s"] = ([str(peers["k9s"]), "--readonly", *scope, "--command", "workloads.kueue.x-k8s.io"], env)
    return tools


def listed_count(tool: str, text: str) -> int | None:
    """How many Workloads the screen says the whole list holds: tau-tui's counts line (``workloads:
    N pending, M admitted``, summed; written only once its first list is done, "still listing"
    before), k9s's title (``workloads(all)[2,000]``); None while it says none."""
    if tool == "tau-tui":
        if LISTING in text:
            return None
        counts = TAU_COUNTS_RE.search(text)
        return sum(int(n) for n in re.findall(r"(\d+) ", counts.group(1))) if counts else None
    title = K9S_COUNT_RE.search(text)
    return int(title.group(1).replace(",", "")) if title else None


def screen_sample(name: str, command: list[str], env: dict, expected: int, limit: float) -> dict:
    """From just before the tool's tmux session is started until a row ``job-NNNNN`` is on screen
    (first row), then until the screen says the list holds ``expected`` Workloads (whole list).
    Past ``limit`` the sample is kept, marked timed out, with what the screen said last."""
    screen = Screen(name, command, env)
    started = screen.start()
    seen = whole = None
    count: int | None = None
    text = ""
    try:
        while time.monotonic() - started < limit:
            text = screen.capture()
            now = time.monotonic()
            if seen is None and ROW_RE.search(text):
                seen = now - started
            count = listed_count(name, text)
            if seen is not None and count is not None and count >= expected:
                whole = now - started
                break
            time.sleep(0.05)
        _, hwm = screen.rss()
    finally:
        screen.stop()
    return {"seconds": seen, "whole_seconds": whole, "listed": count, "expected": expected,
            "timed_out": whole is None, "limit_s": limit, "rss_mb": hwm, "screen": text}


def kubectl_sample(kubectl: Path, env: dict, expected: int, limit: float) -> dict:
    """`kubectl get workloads.kueue.x-k8s.io -A -o json`: from just before the process is started
    until its first byte of output (first row) and until it exits (whole list), the output read
    and counted (one ``"kind": "Workload",`` per item) but not kept; peak RSS (VmHWM)."""
    import selectors

    argv = [str(kubectl), "get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"]
    pattern = b'"kind": "Workload",'
    first = whole = None
    size = items = 0
    hwm = 0.0
    tail = b""
    with tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while time.monotonic() - started < limit:
                chunk = os.read(proc.stdout.fileno(), 1 << 20) if selector.select(0.01) else None
                if chunk == b"":
                    break  # end of output
                if chunk:
                    first = first if first is not None else time.monotonic() - started
                    size += len(chunk)
                    window = tail + chunk
                    items += window.count(pattern)
                    tail = window[-(len(pattern) - 1):]
                try:
                    with open(f"/proc/{proc.pid}/status") as f:
                        hwm = next((int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:")), hwm)
                except OSError:
                    pass
        timed_out = time.monotonic() - started >= limit
        if timed_out:
            proc.kill()
        code = proc.wait()
        if not timed_out:
            whole = time.monotonic() - started
        proc.stdout.close()
        err.seek(0)
        error = err.read().decode(errors="replace")[-300:] if code else ""
    if code and not timed_out:
        print(f"  ! kubectl exited {code}: {error}", flush=True)
    return {"seconds": first, "whole_seconds": whole, "listed": items, "expected": expected, "bytes": size,
            "exit_code": code, "timed_out": timed_out, "limit_s": limit, "rss_mb": hwm, "stderr": error}


def turned(items: list, turn: int) -> list:
    """``items`` started ``turn`` places further on (round ``turn`` of tools taken in turn)."""
    turn %= len(items) or 1
    return items[turn:] + items[:turn]


def first_screen_round(kubeconfig: str, peers: dict[str, Path], home: str, expected: int, limit: float,
                       turn: int = 0) -> dict:
    """One repeat: tau-tui, k9s and kubectl, each alone against the same server, the order turned by
    ``turn`` places (a plane is slower in its first minutes after the load: no tool always goes first)."""
    samples: dict[str, Callable[[], dict]] = {
        name: partial(screen_sample, name, command, env, expected, limit)
        for name, (command, env) in tool_commands(kubeconfig, peers, home, None).items()}
    if peers.get("kubectl"):
        samples[KUBECTL_JSON] = partial(kubectl_sample, peers["kubectl"], dict(os.environ, KUBECONFIG=kubeconfig),
                                        expected, limit)
    taken = {name: samples[name]() for name in turned(list(samples), turn)}
    out = {name: taken[name] for name in samples}  # the file keeps one order of tools
    for name, r in out.items():
        print(f"  {name}: first row {seconds_text(r['seconds'])}, whole list {seconds_text(r['whole_seconds'])}"
              f" ({r['listed']} of {r['expected']} listed{', TIMED OUT' if r['timed_out'] else ''}),"
              f" peak RSS {r['rss_mb']:.0f} MB", flush=True)
    return out


def seconds_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


# ---------------------------------------------------------------------------------------------
# event-to-screen


def bench_workloads(api: Api) -> list[str]:
    names = [f"bench-{i:02d}" for i in range(BENCH_ROWS)]
    for name in names:
        api.create(f"{KUEUE}/namespaces/{BENCH_NAMESPACE}/workloads", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": BENCH_NAMESPACE},
            "spec": {"queueName": "q-0", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                          "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}]},
        })
    return names


class Driver(threading.Thread):
    """Merge-patches spec.queueName at `rate`/s for `seconds`, paced by the wall clock, from a small pool."""

    def __init__(self, api: Api, names: list[str], rate: float, seconds: float, first_seq: int):
        super().__init__(daemon=True)
        self.api, self.names, self.rate, self.seconds = api, names, rate, seconds
        self.sent: dict[int, tuple[str, float]] = {}
        # When the server answered: it has stored the change by then, so what follows is the tool's own time.
        self.answered: dict[int, float] = {}
        self.errors = 0
        self.failed: set[int] = set()  # PATCHes the server refused: changes never made
        self.first_seq = first_seq
        self.late = 0

    def run(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        total = int(self.rate * self.seconds)
        start = time.monotonic()
        # PATCHes pass Kueue's webhooks: ~0.1-0.3 s each on a busy machine, so 200/s needs many in flight.
        pool = ThreadPoolExecutor(max_workers=48)
        try:
            for n in range(total):
                due = start + n / self.rate
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                elif wait < -0.5:
                    self.late += 1
                seq = self.first_seq + n
                name = self.names[n % len(self.names)]
                pool.submit(self._patch, seq, name)
        finally:
            # The minute is over: changes the server has not started on are dropped, not sent late.
            pool.shutdown(wait=True, cancel_futures=True)

    def _patch(self, seq: int, name: str) -> None:
        self.sent[seq] = (name, time.monotonic())
        try:
            self.api.request("PATCH", f"{KUEUE}/namespaces/{BENCH_NAMESPACE}/workloads/{name}",
                             {"spec": {"queueName": f"q-{seq}"}}, content_type="application/merge-patch+json")
            self.answered[seq] = time.monotonic()
        except RuntimeError:
            self.errors += 1
            self.failed.add(seq)


class WatchClock(threading.Thread):
    """A watch of the bench namespace's Workloads, beside the tool's: when the server delivered each
    `q-<sequence>` to a watcher.  The tool's own share is its screen minus this moment (the server's
    watch fan-out, slow on busy cores, is the same for every watcher)."""

    def __init__(self, api: Api):
        super().__init__(daemon=True)
        self.api = api
        self.delivered: dict[int, float] = {}
        self._stopping = threading.Event()  # not _stop: threading.Thread's own join() calls a _stop()
        self._response = None

    def run(self) -> None:
        path = f"{KUEUE}/namespaces/{BENCH_NAMESPACE}/workloads"
        version = self.api.request("GET", path).get("metadata", {}).get("resourceVersion", "")
        while not self._stopping.is_set():
            try:
                self._response = self.api.http.request(
                    "GET", f"{self.api.server}{path}?watch=1&allowWatchBookmarks=false&resourceVersion={version}",
                    preload_content=False, timeout=urllib3.Timeout(connect=10, read=None))
                pending = b""
                for chunk in self._response.stream(65536, decode_content=True):
                    now = time.monotonic()
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()
                    for line in lines:
                        obj = json.loads(line).get("object", {})
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        queue = obj.get("spec", {}).get("queueName", "")
                        if queue.startswith("q-"):
                            self.delivered.setdefault(int(queue[2:]), now)
            except Exception:  # the watch ended or the stop closed it: go on from the last version
                time.sleep(0.1)

    def stop(self) -> None:
        self._stopping.set()
        if self._response is not None:
            self._response.release_conn()


def latency_run(name: str, command: list[str], env: dict, api: Api, names: list[str], rate: float, seconds: float,
                first_seq: int) -> dict:
    screen = Screen(name, command, env)
    started = screen.start()
    pair = BENCH_ROW_QUEUE
    try:
        while time.monotonic() - started < WAIT_LIMIT and not re.search(r"bench-\d\d", screen.capture()):
            time.sleep(0.1)
        time.sleep(3)  # settle after the first paint
        driver = Driver(api, names, rate, seconds, first_seq)
        clock = WatchClock(api)
        clock.start()
        # What each capture showed per row, kept only where a row's value changed (all staleness needs).
        observations: list[Observation] = []
        shown: dict[str, str] = {}
        rss_peak = 0.0
        driver.start()
        end = time.monotonic() + seconds + 5
        captures = 0
        while time.monotonic() < end:
            text = screen.capture()
            now = time.monotonic()
            captures += 1
            look_at_screen(text, pair, shown, observations, now)
            rss_peak = max(rss_peak, screen.rss()[0])
            time.sleep(0.02)
        driver.join(timeout=30)
        clock.stop()
        _, hwm = screen.rss()
    finally:
        screen.stop()
    return {"sent": len(driver.sent), "patch_errors": driver.errors, "driver_late": driver.late,
            **staleness_figures(driver, clock, observations),
            "answered": len(driver.answered),
            "patch_s": summarize(driver.answered[s] - driver.sent[s][1] for s in driver.answered).as_dict(),
            "watch_delivered": len(clock.delivered),
            "captures": captures, "rss_peak_mb": max(rss_peak, hwm), "achieved_rate": len(driver.sent) / seconds}


def staleness_figures(driver: Driver, clock: WatchClock, observations: list[Observation]) -> dict:
    """Staleness of every change the server took (a refused PATCH changed nothing), from three
    starts: the PATCH's send; the server's answer (its queueing, Kueue's webhooks on busy cores,
    left out); the reference watch's delivery (the tool's own share; a change it never delivered
    is left out and counted).  A value on screen before the start it is measured from (the watch
    can beat the answer) counts as 0."""
    made = {s: name for s, (name, _) in driver.sent.items() if s not in driver.failed}
    starts = {"from_sent": {s: driver.sent[s][1] for s in made}, "from_answer": dict(driver.answered),
              "from_watch": {s: clock.delivered[s] for s in made if s in clock.delivered}}
    out: dict = {"changes_made": len(made), "watch_undelivered": len(made) - len(starts["from_watch"])}
    for name, start in starts.items():
        result = staleness((Change(made[s], str(s), at) for s, at in start.items() if s in made), observations)
        out[f"staleness_{name}_s"] = summarize(result.samples).as_dict()
        out[f"never_reflected_{name}"] = result.never_reflected
    return out


# ---------------------------------------------------------------------------------------------


def med(values: list, fmt: str = ".2f") -> str:
    return median_spread(values, fmt)


def build_peer(name: str) -> None:
    """`bash harness/build.sh <name>` (niced; Go builds take minutes), unless a build already runs."""
    running = subprocess.run(["pgrep", "-f", "harness/build.sh"], capture_output=True, text=True).stdout.split()
    if running:
        print(f"peer {name}: not building, another harness/build.sh runs (PIDs {' '.join(running)})", flush=True)
        return
    print(f"peer {name}: building with `bash harness/build.sh {name}` ...", flush=True)
    log = RESULTS / f"build-{name}.log"
    RESULTS.mkdir(exist_ok=True)
    with open(log, "w") as out:
        code = subprocess.run(["nice", "-n", "15", "bash", str(REPO / "harness" / "build.sh"), name],
                              stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        tail = log.read_text(errors="replace").splitlines()[-5:]
        print(f"peer {name}: build failed (exit {code}); last lines of {log}:\n  " + "\n  ".join(tail), flush=True)
    else:
        log.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=float, default=30.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--wait-limit", type=float, default=WAIT_LIMIT,
                        help="seconds a sync or first-screen sample may take before it is recorded as timed out")
    parser.add_argument("--skip", action="append", default=[], choices=("sync", "first-screen", "latency"))
    parser.add_argument("--no-build", action="store_true", help="do not build missing peers")
    parser.add_argument("--no-kwok", action="store_true", help="T1 set only (no KWOK/controllers): nodes never Ready")
    parser.add_argument("--kubectl", help="a kubectl to use when the harness's is not built")
    parser.add_argument("--json", default=str(RESULTS / "side_by_side.json"), help="where the raw numbers go")
    args = parser.parse_args()
    binaries = locate()
    peers: dict[str, Path] = {}
    missing = []
    for name in ("kubectl", "kueuectl", "k9s"):
        path = Path(args.kubectl) if name == "kubectl" and args.kubectl else getattr(binaries, name)
        if not os.access(path, os.X_OK) and name != "kubectl" and not args.no_build:
            build_peer(name)
        if os.access(path, os.X_OK):
            peers[name] = path
        else:
            missing.append(name)
            print(f"peer {name} is not built ({path}): its measurements are skipped; build it with "
                  f"`bash harness/build.sh {'k8s' if name == 'kubectl' else name}`", flush=True)
    if not shutil.which("tmux"):
        print("tmux is not installed: the screen measurements are skipped", flush=True)
        args.skip += ["first-screen", "latency"]
    shape = Shape(workloads=args.workloads, nodes=args.nodes)
    info = machine()
    results: dict = {"machine": info, "args": vars(args), "missing_peers": missing,
                     "peers": {name: str(path) for name, path in peers.items()}}
    plane, state, report = start_loaded_plane(shape, kwok=not args.no_kwok)
    home = tempfile.mkdtemp(prefix="tau-bench-home-")
    api = Api(plane.kubeconfig)
    try:
        print_report(report)
        results["load"] = {"steps_s": report.steps, "counts": report.counts, "plane_memory_mb": report.plane_memory_mb}
        if "sync" not in args.skip:
            results["sync"] = []
            for n in range(args.repeat):
                print(f"[sync {n + 1}/{args.repeat}]", flush=True)
                results["sync"].append(sync_round(plane.kubeconfig, shape, peers, args.wait_limit))
        if "first-screen" not in args.skip:
            results["first_screen"] = []
            for n in range(args.repeat):
                print(f"[first screen {n + 1}/{args.repeat}]", flush=True)
                results["first_screen"].append(first_screen_round(plane.kubeconfig, peers, home, shape.workloads,
                                                                  args.wait_limit, turn=n))
        if "latency" not in args.skip:
            names = bench_workloads(api)
            results["latency_rounds"] = []
            seq = 1
            tools = list(tool_commands(plane.kubeconfig, peers, home, BENCH_NAMESPACE).items())
            for n in range(args.repeat):
                runs: dict[str, dict] = {}
                for name, (command, env) in turned(tools, n):
                    print(f"[latency {n + 1}/{args.repeat} {name}: {args.rate:.0f} changes/s for {args.seconds:.0f} s]",
                          flush=True)
                    runs[name] = latency_run(name, command, env, api, names, args.rate, args.seconds, seq)
                    seq += int(args.rate * args.seconds) + 1
                results["latency_rounds"].append({name: runs[name] for name, _ in tools})
        results["plane_memory_mb_at_end"] = plane_memory(plane)  # peaks: the plane serving every tool's lists
    finally:
        api.close()
        plane.stop()
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    save_raw(args.json, results, indent=2)
    print_tables(results)
    return 0


def print_tables(results: dict) -> None:
    info = results["machine"]
    print(f"\nside by side, {info['date']}, {info['nproc']} CPU ({info['cpu']}), load {info['loadavg']:.1f}; "
          f"median (min..max) of {results['args']['repeat']}; peers missing: {', '.join(results['missing_peers']) or 'none'}")
    memory = results.get("plane_memory_mb_at_end") or {}
    if memory:
        print("plane peak memory over the run (MB): " + ", ".join(f"{name} {m['peak']:.0f}" for name, m in memory.items()))
    if results.get("sync"):
        rounds = results["sync"]
        base = "kubectl get -o json (workloads + nodes)"
        print("\n1. initial sync of workloads and nodes")
        print(f"  {'tool':44s} {'wall s':>22s} {'peak RSS MB':>22s} {'time / kubectl':>15s}")
        for tool in rounds[0]:
            secs = [r[tool]["seconds"] for r in rounds]
            rss = [r[tool]["rss_mb"] for r in rounds]
            ratio = ""
            if base in rounds[0] and all(s is not None for s in secs):
                ratio = f"{median(secs) / median([r[base]['seconds'] for r in rounds]):.2f}x"
            failed = sum(1 for r in rounds if not r[tool]["ok"])
            print(f"  {tool:44s} {med(secs):>22s} {med(rss):>22s} {ratio:>15s}"
                  + (f"   {failed} of {len(rounds)} failed or timed out (left out)" if failed else ""))
    if results.get("first_screen"):
        rounds = results["first_screen"]
        print(f"\n2. from just before the process starts: first row, whole list ({results['args']['workloads']:,} "
              "Workloads); tmux 160x48 (kubectl: first byte of output, exit); rounds alternate the tools")
        for tool in rounds[0]:
            secs = [r[tool]["seconds"] for r in rounds]
            whole = [r[tool].get("whole_seconds") for r in rounds]
            timed_out = sum(1 for r in rounds if r[tool].get("timed_out", r[tool].get("whole_seconds") is None))
            limit = rounds[0][tool].get("limit_s", WAIT_LIMIT)
            print(f"  {tool:32s} first row {med(secs):>22s} s   whole list {med(whole):>22s} s   "
                  f"peak RSS {med([r[tool]['rss_mb'] for r in rounds], '.0f')} MB   n={len(rounds)}"
                  + (f", {timed_out} timed out at {limit:.0f} s (left out of the median)" if timed_out else ""))
            print(f"  {'':32s} samples: " + "; ".join(f"{seconds_text(r[tool]['seconds'])} / {seconds_text(r[tool].get('whole_seconds'))}"
                                                     for r in rounds))
    for n, runs in enumerate(results.get("latency_rounds") or []):
        print(f"\n3. event-to-screen at {results['args']['rate']:.0f} changes/s for {results['args']['seconds']:.0f} s, "
              f"round {n + 1} of {len(results['latency_rounds'])}")
        print("   staleness: per change, until the screen shows its value or a newer one (every change counted)")
        for tool, r in runs.items():
            print(f"  {tool:12s} {r['changes_made']:,} changes made of {r['sent']:,} sent (patch errors {r['patch_errors']}, "
                  f"driver rate {r['achieved_rate']:.0f}/s), peak RSS {r['rss_peak_mb']:.0f} MB")
            for start, words in (("from_sent", "from the PATCH's send"), ("from_answer", "from the server's answer"),
                                 ("from_watch", "from a reference watch's delivery (the tool's own share)")):
                stats = r[f"staleness_{start}_s"]
                print(f"  {'':12s} {words}: {label(stats)}; never reflected {r[f'never_reflected_{start}']:,}")
            print(f"  {'':12s} the PATCH itself: {label(r['patch_s'])}; "
                  f"{r['watch_undelivered']:,} changes never delivered to the reference watch")


def label(stats: dict) -> str:
    """A summary written by ``Summary.as_dict``, printed as ``Summary.label`` prints it."""
    return Summary(**stats).label()


if __name__ == "__main__":
    sys.exit(main())
