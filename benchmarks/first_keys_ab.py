"""The first keys after the rows appear on `tau-tui --demo large`, two source trees side by side.

Round 1 of ``app_keys_tmux.py`` (the keys pressed the moment the workload rows are on screen)
varies more between launches of one tree than between two trees, so a change to it is measured
here by alternating launches of both trees (A B, then B A, ...), each run by this checkout's
Python with ``PYTHONPATH`` set to the tree, in its own tmux server at 160x48.  One launch: until
workload rows; ``/``; ``job-123`` typed (the slowest character's echo); the filter applied; esc;
``4`` until the Runs crumb and until its rows; ``6`` until the Nodes crumb and rows; ``3`` until
the Queue crumb.  Prints each key's sorted samples per tree (ms) with the machine line and writes
them as JSON.

Run: .venv/bin/python benchmarks/first_keys_ab.py TREE_A TREE_B [--launches 4]
         [--json benchmarks/results/first_keys_ab.json]
     (a tree is a checkout, e.g. ``git worktree add /tmp/before HEAD~3``)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_keys_tmux import NODE_ROW, ROW, command_line, header_lines, rows_match, wait_screen  # noqa: E402
from machine_info import machine, machine_line  # noqa: E402
from raw_results import save_raw  # noqa: E402
from tmux_screen import Screen  # noqa: E402

LAUNCH_LIMIT_S = 600.0
KEY_LIMIT_S = 60.0
TYPED = "job-123"


def body(text: str) -> str:
    return "\n".join(text.splitlines()[3:])


def first_keys(tree: str) -> dict[str, float]:
    """One launch of ``tree``: each key's milliseconds (``inf`` past the limit)."""
    home = tempfile.mkdtemp(prefix="tau-first-keys-")
    env = dict(os.environ, TERM="xterm-256color", HOME=home, XDG_CONFIG_HOME=f"{home}/config",
               XDG_STATE_HOME=f"{home}/state", XDG_DATA_HOME=f"{home}/data", XDG_CACHE_HOME=f"{home}/cache",
               PYTHONPATH=tree)
    env.pop("KUBECONFIG", None)
    # -P: the working folder is not put first on the path (it would win over PYTHONPATH)
    screen = Screen("tau-tui", [sys.executable, "-P", "-m", "tau_tui", "--demo", "large", "--pane", "queue"], env)
    took: dict[str, float] = {}
    screen.start()
    try:
        took["launch → rows"], _ = wait_screen(screen, lambda t: bool(ROW.search(t)), LAUNCH_LIMIT_S)
        # Every key's clock starts before its `tmux send-keys` runs (Screen.send's return); nothing is subtracted.
        sent = screen.send("/", literal=True)
        took["/"], _ = wait_screen(screen, lambda t: command_line(t).lstrip().startswith("/"), KEY_LIMIT_S, sent)
        echoes = []
        for n in range(1, len(TYPED) + 1):
            sent = screen.send(TYPED[n - 1], literal=True)
            echo, _ = wait_screen(screen, lambda t, typed=TYPED[:n]: typed in command_line(t), KEY_LIMIT_S, sent)
            echoes.append(echo)
        took["slowest typed character"] = max(echoes)
        # from the last character's send
        took["filter applied"], _ = wait_screen(
            screen, lambda t: rows_match(t, TYPED) and f"filter: {TYPED}" in header_lines(t), KEY_LIMIT_S, sent)
        sent = screen.send("Escape")
        took["esc"], _ = wait_screen(screen, lambda t: "filter:" not in header_lines(t), KEY_LIMIT_S, sent)
        for key, crumb, rows in (("4", "› Runs", ROW), ("6", "› Nodes", NODE_ROW), ("3", "› Queue", None)):
            sent = screen.send(key, literal=True)
            took[f"{key} → {crumb[2:]} crumb"], _ = wait_screen(screen, lambda t, c=crumb: c in header_lines(t), KEY_LIMIT_S, sent)
            if rows is not None:
                took[f"{key} → {crumb[2:]} rows"], _ = wait_screen(screen, lambda t, r=rows: bool(r.search(body(t))), KEY_LIMIT_S, sent)
    finally:
        screen.stop()
        shutil.rmtree(home, ignore_errors=True)
    return {name: seconds * 1000 for name, seconds in took.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree_a")
    parser.add_argument("tree_b")
    parser.add_argument("--launches", type=int, default=4, help="launches of each tree")
    parser.add_argument("--json", default="benchmarks/results/first_keys_ab.json")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed", file=sys.stderr)
        return 2
    trees = {"A": str(Path(args.tree_a).resolve()), "B": str(Path(args.tree_b).resolve())}
    info = machine()
    samples: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for launch in range(args.launches):
        order = ["A", "B"] if launch % 2 == 0 else ["B", "A"]  # neither tree always goes first
        for name in order:
            samples[name].append(first_keys(trees[name]))
            print(f"launch {launch + 1}/{args.launches} of {name} done", flush=True)
    print(f"\nA: {trees['A']}\nB: {trees['B']}")
    print(machine_line(info))
    for measure in samples["A"][0]:
        row = {name: sorted(round(s[measure]) for s in runs) for name, runs in samples.items()}
        print(f"{measure:26} A {row['A']}   B {row['B']}")
    save_raw(args.json, {"machine": info, "trees": trees, "samples": samples})
    return 0


if __name__ == "__main__":
    sys.exit(main())
