"""The user guides as executable walks: each guide's own key sequence driven on `--demo` with
Textual's pilot, each step's screen checked against what the guide says it shows.

A guide carries its walk in HTML comments, which a Markdown page does not render (the prose says
the same for the reader).  A session starts the app as the guide's command line does; each step
is what the reader does next and what they then see::

    <!-- guide: session {demo: faults, pane: runs, size: 160x48} -->
    <!-- guide: step
    select: team-oncall/burn-in-0     # move the cursor there (j and k)
    keys: ctrl+d y                    # then press these ("esc", ":mk drain", "/a100" typed with enter)
    wait: 65                          # let this many seconds of demo time pass first
    repeat: 5                         # press the keys again (at most this often) until every phrase shows
    see: [releasing, "R  resume"]     # phrases the screen must show (what the picture shows)
    shot: on-call-8-cancelled         # the picture of docs/guide/images this screen is
    -->

Session keys: ``demo`` (the scenario, ``demo`` by default), ``pane`` (``--pane``), ``size``
(``COLSxROWS``), ``init: true`` (run ``tau-tui init`` in a fresh directory first), ``file``
(``--file``).  The demo runs on a frozen clock, as the snapshot tests do: time moves only by
``wait``, so a walk and its pictures come out the same every time.  Bounded by counts, never by
sleeping: each phrase is waited for by settling the app a bounded number of rounds.

:func:`walk_guide` raises :class:`GuideDrift` naming the guide, the step (its line) and the phrase
the screen does not show, with the screen's text."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from textual.widgets import Input

from tests.app.helpers import make_app, settle, settle_until, wait_workers

ROOT = Path(__file__).resolve().parents[2]
GUIDES = ROOT / "docs" / "guide"
IMAGES = GUIDES / "images"
BLOCK = re.compile(r"<!--\s*guide:\s*(session|step)\b(.*?)-->", re.S)
#: The guide's names for keys, as Textual names them.
KEY_NAMES = {"esc": "escape", "?": "question_mark", ":": "colon", "/": "slash", " ": "space"}
STEP_KEYS = {"keys", "select", "wait", "repeat", "see", "shot"}
#: How long a step's phrases are waited for, in settle rounds (quick, then 50 ms apart): for what the
#: app brings on its own timers after the screen stood still.
PHRASE_ROUNDS = (40, 300)
SESSION_KEYS = {"demo", "pane", "size", "init", "file"}


class GuideDrift(AssertionError):
    """The app no longer does what a guide says."""


@dataclass
class Step:
    line: int
    keys: list[str] = field(default_factory=list)
    select: str = ""
    wait: float = 0.0
    repeat: int = 1
    see: list[str] = field(default_factory=list)
    shot: str = ""

    def describe(self) -> str:
        what = [f"select {self.select}"] if self.select else []
        what += [f"keys {' '.join(self.keys)}"] if self.keys else []
        what += [f"wait {self.wait:g} s"] if self.wait else []
        return f"line {self.line} ({', '.join(what) or 'the first screen'}" + (f", picture {self.shot}" if self.shot else "") + ")"


@dataclass
class Session:
    line: int
    demo: str = "demo"
    pane: str = "queue"
    size: tuple[int, int] = (160, 48)
    init: bool = False
    file: str | None = None
    steps: list[Step] = field(default_factory=list)


def _split_keys(value: Any) -> list[str]:
    """``keys:`` as a list, or one string of keys separated by spaces (a ``:command`` or ``/filter``
    runs to the end of the string)."""
    if isinstance(value, list):
        return [str(k) for k in value]
    text = str(value or "").strip()
    keys: list[str] = []
    while text:
        if text[0] in ":/" and len(text) > 1:
            keys.append(text)
            break
        key, _, text = text.partition(" ")
        keys.append(key)
        text = text.strip()
    return keys


def parse_guide(name: str) -> list[Session]:
    """The sessions of ``docs/guide/NAME``, in order, each with its steps."""
    text = (GUIDES / name).read_text()
    sessions: list[Session] = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        try:
            spec = yaml.safe_load(match.group(2)) or {}
        except yaml.YAMLError as err:
            raise GuideDrift(f"docs/guide/{name}:{line}: the guide block is not YAML: {err}") from None
        if not isinstance(spec, dict):
            raise GuideDrift(f"docs/guide/{name}:{line}: a guide block holds a mapping")
        allowed = SESSION_KEYS if match.group(1) == "session" else STEP_KEYS
        unknown = sorted(set(spec) - allowed)
        if unknown:
            raise GuideDrift(f"docs/guide/{name}:{line}: unknown keys {unknown}; known: {sorted(allowed)}")
        if match.group(1) == "session":
            cols, _, rows = str(spec.get("size", "160x48")).partition("x")
            sessions.append(Session(line, str(spec.get("demo", "demo")), str(spec.get("pane", "queue")),
                                    (int(cols), int(rows)), bool(spec.get("init")), spec.get("file")))
            continue
        if not sessions:
            raise GuideDrift(f"docs/guide/{name}:{line}: a step before any session")
        see = spec.get("see") or []
        sessions[-1].steps.append(Step(line, _split_keys(spec.get("keys")), str(spec.get("select") or ""),
                                       float(spec.get("wait") or 0), int(spec.get("repeat") or 1),
                                       [str(s) for s in (see if isinstance(see, list) else [see])],
                                       str(spec.get("shot") or "")))
    return sessions


# -- the screen, as its picture shows it -----------------------------------------------------------

_TEXT = re.compile(r'<text class="[^"]*" x="([0-9.]+)" y="[0-9.]+" textLength="([0-9.]+)" '
                   r'clip-path="url\(#[^)]*-line-(\d+)\)">(.*?)</text>', re.S)


def svg_lines(svg: str) -> list[str]:
    """The text rows of a Textual screenshot (the SVG the pictures are), spaces where nothing is drawn."""
    rows: dict[int, list[tuple[float, str]]] = {}
    widths = []
    for x, length, row, content in _TEXT.findall(svg):
        text = html.unescape(content)
        rows.setdefault(int(row), []).append((float(x), text))
        if text:
            widths.append(float(length) / len(text))
    cell = min(widths) if widths else 1.0
    lines = []
    for row in range(max(rows, default=-1) + 1):
        line = ""
        for x, text in sorted(rows.get(row, [])):
            column = round(x / cell)
            line = line.ljust(column) + text
        lines.append(line.rstrip())
    return lines


def screen_text(app) -> str:
    for screen in app.screen_stack:  # a blinking cursor would make the picture depend on timing
        for widget in screen.query(Input):
            widget.cursor_blink = False
    return "\n".join(svg_lines(app.export_screenshot()))


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def shows(text: str, phrase: str) -> bool:
    """``phrase`` on one row of ``text``, runs of spaces counting as one."""
    wanted = _squeeze(phrase)
    return any(wanted in _squeeze(line) for line in text.splitlines())


# -- driving the app ---------------------------------------------------------------------------------

def textual_key(key: str) -> str:
    return KEY_NAMES.get(key, key)


async def _type_line(pilot, text: str) -> None:
    """``:command`` or ``/filter``: the prompt key, the text as typed, enter."""
    await pilot.press(textual_key(text[0]))
    await settle(pilot, rounds=1)
    await pilot.press(*(textual_key(ch) for ch in text[1:]), "enter")


async def _select(pilot, wanted: str, where: str) -> None:
    """Move the focused table's cursor with j and k to the row whose key is (or contains) ``wanted``."""
    app = pilot.app
    table = app.focused
    if not hasattr(table, "selected_key"):
        raise GuideDrift(f"{where}: no table has the focus to select {wanted} in (focused: {table!r})")

    def target() -> str | None:
        keys = list(table.keys)
        return wanted if wanted in keys else next((k for k in keys if wanted in k), None)

    if not await settle_until(pilot, lambda: target() is not None):
        raise GuideDrift(f"{where}: the table lists no {wanted}\n{screen_text(app)}")
    key = target()
    for _ in range(2 * table.row_count + 2):
        if table.selected_key == key:
            return
        keys = list(table.keys)
        here = keys.index(table.selected_key) if table.selected_key in keys else -1
        await pilot.press("j" if keys.index(key) > here else "k")
        await settle(pilot, rounds=1)
    raise GuideDrift(f"{where}: j and k never reached {wanted}")


async def _settle_quiet(pilot, rounds: int = 40) -> None:
    """Settle until the app stands still: the same screen and the same running workers (a log being
    followed runs on) three rounds in a row, as a person waits for a dialog to open or a step to verify
    before the next key.  Bounded by ``rounds``; the later ones 50 ms apart, for the app's own timers."""
    app = pilot.app
    seen: list[object] = []
    for done in range(rounds):
        await settle(pilot, rounds=1)
        seen.append((app.screen, frozenset(id(w) for w in app.workers if w.is_running)))
        if len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]:
            return
        if done >= rounds // 2:
            await pilot.pause(0.05)


async def _wait(pilot, world, seconds: float) -> None:
    """Let ``seconds`` of demo time pass, the app reading as it goes."""
    left = seconds
    while left > 0:
        world.advance(min(5.0, left))
        left -= 5.0
        await settle(pilot, rounds=1)


async def _run_step(pilot, world, step: Step, where: str, save: Callable[[str], None] | None) -> None:
    app = pilot.app
    app.clear_notifications()  # the screen shows what this step did
    if step.wait:
        await _wait(pilot, world, step.wait)
    if step.select:
        await _select(pilot, step.select, where)
    for attempt in range(step.repeat):
        if attempt and all(shows(screen_text(app), phrase) for phrase in step.see):
            break
        for key in step.keys:
            app.clear_notifications()  # what the screen shows is what the last key did
            if key[0] in ":/" and len(key) > 1:
                await _type_line(pilot, key)
            else:
                await pilot.press(textual_key(key))
            await _settle_quiet(pilot)
    def missing() -> list[str]:
        text = screen_text(app)
        return [phrase for phrase in step.see if not shows(text, phrase)]

    quick, paused = PHRASE_ROUNDS
    if missing() and not await settle_until(pilot, lambda: not missing(), rounds=quick, paused_rounds=paused):
        raise GuideDrift(f"{where}: the screen does not show {missing()[0]!r}\n--- the screen ---\n{screen_text(app)}")
    if step.shot and save is not None:
        await wait_workers(app)
        await pilot.pause(0.3)
        screen_text(app)  # cursors held still
        save(step.shot)


async def walk_session(name: str, session: Session, tmp: Path, save_dir: Path | None = None) -> None:
    from tau_tui.core.operations.demo_trust import demo_audit_log
    from tau_tui.startup.backends import start_demo_backend

    backend: Any = start_demo_backend(session.demo, None, realtime=False)
    cwd = Path.cwd()
    try:
        if session.init:
            from tau_tui.cli import main as cli_main

            workspace = tmp / f"workspace-{session.line}"
            workspace.mkdir()
            os.chdir(workspace)
            assert cli_main(["init"]) == 0, "tau-tui init failed"
        # as `tau-tui --demo` does: the demo's own audit log and key, no OS keyring needed
        app = make_app(tmp, backend, start_pane=session.pane, compose_file=session.file, audit=demo_audit_log())
        # a notification stays until the next step: what a step's screen shows never hangs on the clock
        app.NOTIFICATION_TIMEOUT = 3600
        async with app.run_test(size=session.size, notifications=True) as pilot:
            await settle_until(pilot, lambda: getattr(app.screen, "refreshes_applied", 2) >= 2)

            def save(shot: str) -> None:
                if save_dir is not None:
                    app.save_screenshot(filename=f"{shot}.svg", path=str(save_dir))
                    print(f"docs/guide/images/{shot}.svg")

            for number, step in enumerate(session.steps, 1):
                where = f"docs/guide/{name}: step {number} of the session at line {session.line}, {step.describe()}"
                await _run_step(pilot, backend.world, step, where, save if save_dir is not None else None)
            await wait_workers(app)
    finally:
        os.chdir(cwd)
        backend.close()


async def walk_guide(name: str, tmp: Path, save_dir: Path | None = None) -> None:
    """Every session of the guide, in order; with ``save_dir`` each step's ``shot`` is saved there."""
    sessions = parse_guide(name)
    if not sessions:
        raise GuideDrift(f"docs/guide/{name} has no guide session: its walk cannot be checked")
    for session in sessions:
        await walk_session(name, session, tmp, save_dir)
