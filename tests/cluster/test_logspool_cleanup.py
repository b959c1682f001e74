"""Log spools are removed when their stream closes, when the process exits (signals included),
and when a later start finds them left by a dead process; saved logs never widen the spool's
mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tau_tui.core.cluster.logspool.saving import save_narrowed, save_spool
from tau_tui.core.cluster.logspool.spool import SPOOL_MODE, LogSpool
from tau_tui.core.cluster.logspool.spool_dirs import clean_stale_spools, process_spool_dir, remove_process_spool_dirs

RUN_BOUND = 120
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def forget_process_dirs():
    yield
    remove_process_spool_dirs()


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=RUN_BOUND)
    return child.pid


def test_a_closed_spool_is_deleted(tmp_path):
    directory = process_spool_dir(tmp_path / "spool")
    spool = LogSpool(directory=directory)
    spool.append_line("hello")
    assert os.path.exists(spool.path) and os.stat(spool.path).st_mode & 0o777 == SPOOL_MODE
    spool.close(delete=True)
    assert os.listdir(directory) == []


def test_the_process_directory_is_private_and_named_by_pid(tmp_path):
    directory = Path(process_spool_dir(tmp_path / "spool"))
    assert directory.parent == tmp_path / "spool"
    assert directory.name.split("-")[0] == str(os.getpid())
    assert directory.stat().st_mode & 0o777 == 0o700
    assert process_spool_dir(tmp_path / "spool") == str(directory)  # one per process


SPOOLING_CHILD = """
import sys, time
from tau_tui.core.cluster.credentials import install_exit_on_signals
from tau_tui.core.cluster.logspool.spool import LogSpool
from tau_tui.core.cluster.logspool.spool_dirs import process_spool_dir
install_exit_on_signals()
spool = LogSpool(directory=process_spool_dir(sys.argv[1]))
spool.append_line("secret workload output")
print(spool.path, flush=True)
if sys.argv[2] == "wait":
    time.sleep(600)
"""


@pytest.mark.parametrize("ending", ["exit", "SIGTERM", "SIGHUP"])
def test_spools_are_removed_when_the_process_ends(tmp_path, ending):
    base = tmp_path / "spool"
    child = subprocess.Popen([sys.executable, "-c", SPOOLING_CHILD, str(base), "exit" if ending == "exit" else "wait"],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        path = child.stdout.readline().strip()
        assert path and Path(path).parent.parent == base
        if ending != "exit":
            assert Path(path).exists()
            child.send_signal(getattr(signal, ending))
        child.wait(timeout=RUN_BOUND)
    finally:
        child.kill()
        child.stdout.close()
    assert not Path(path).exists()
    assert list(base.iterdir()) == []


def test_stale_spools_of_dead_or_reused_pids_are_removed_at_start(tmp_path):
    base = tmp_path / "spool"
    dead = base / f"{dead_pid()}-12345"
    reused = base / f"{os.getpid()}-1"  # our PID, but another process's start time
    legacy = base / "tau-log-abc.log"  # the old flat layout
    for directory in (dead, reused):
        directory.mkdir(parents=True)
        (directory / "tau-log-x.log").write_text("left behind\n")
    legacy.write_text("left behind\n")
    unrelated = base / "notes"
    unrelated.mkdir()
    mine = Path(process_spool_dir(base))  # start: cleans, then makes this process's directory
    assert not dead.exists() and not reused.exists() and not legacy.exists()
    assert mine.exists() and unrelated.exists()
    assert clean_stale_spools(base) == []  # a live process's directory is never touched


@pytest.mark.parametrize("umask, expect_note", [(0o022, True), (0o077, False)])
def test_a_saved_log_keeps_the_umask_but_never_widens_the_spool(tmp_path, umask, expect_note):
    spool = LogSpool(directory=str(tmp_path))
    spool.append_line("line")
    target = tmp_path / "out" / "saved.log"
    target.parent.mkdir()
    target.write_text("old, world-readable\n")
    target.chmod(0o644)
    old = os.umask(umask)
    try:
        assert save_spool(spool, str(target)) == 1
        note = save_narrowed(str(target))
    finally:
        os.umask(old)
        spool.close()
    assert target.stat().st_mode & 0o777 == SPOOL_MODE & ~umask
    assert (note is not None) == expect_note
    if expect_note:
        assert "0600" in note and "0644" in note
    assert [p.name for p in target.parent.iterdir()] == ["saved.log"]  # no temporary file left
