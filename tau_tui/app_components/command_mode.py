"""The app's command line: ``:`` commands (panes, ctx, ns, theme, logs, mk, version, quit) and their
tab completion, and the ``/`` key that opens a pane's filter line.

The app's ``:`` and ``/`` keys and the ``:`` line's submit land on the app, which hands them here; what is
typed in a pane's ``/`` line is the pane's own (screens/typed_filter.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from textual.actions import SkipAction
from textual.widgets import Input, TextArea

from tau_tui.app_components.keys import MULTIKUEUE_FLOWS, PANE_ALIASES
from tau_tui.app_components.shell import run_in_thread
from tau_tui.screens.base import PaneScreen
from tau_tui.widgets.command_line import CommandLine

if TYPE_CHECKING:
    from tau_tui.app_components.replay_controls import ReplayControls
    from tau_tui.app_components.shell import AppShell
    from tau_tui.widgets.messages import CommandLineSubmitted


KNOWN_COMMANDS = "try :queue :runs :nodes :logs RUN :pods :events :evidence :workspaces :ctx :ns :compose :profiles :mk :version :q"
#: The ``:`` commands other than the panes' names.
COMMAND_WORDS = ("q", "quit", "exit", "help", "ctx", "context", "ns", "namespace", "theme", "version", "seek", "mk")


def unknown_word(typed: str, word: str, known: Iterable[str], prefix: str, otherwise: str) -> str:
    """``unknown command :quue; did you mean :queue?``, naming the nearest known word, or ``otherwise``
    (what is known) when none is near."""
    nearest = difflib.get_close_matches(word, sorted(set(known)), n=1, cutoff=0.5)
    return f"unknown command {typed}; " + (f"did you mean {prefix}{nearest[0]}?" if nearest else otherwise)


def filtering_panes() -> str:
    from tau_tui.app_components.pane_modes import filtering_pane_titles

    return ", ".join(filtering_pane_titles())


class CommandMode:
    """Opens the command line and runs what is typed into it."""

    def __init__(self, app: AppShell, replay: ReplayControls) -> None:
        self.app = app
        self.replay = replay

    # ":" and "/" are priority bindings: the app opens the line and focuses it before the next key is
    # routed, so keys typed right after them land in the line, never in the table behind it.  Typed
    # into a text field, or on a screen without a command line, they are left to that screen.

    def _keys_belong_to_the_screen(self) -> bool:
        return isinstance(self.app.focused, (Input, TextArea)) or not self.app.screen.query(CommandLine)

    def open_command(self) -> None:
        """``:`` (raises SkipAction where the key is the screen's)."""
        if self._keys_belong_to_the_screen():
            raise SkipAction()
        self._open_command_line("command")

    def open_filter(self) -> None:
        """``/`` (raises SkipAction where the key is the screen's)."""
        if self._keys_belong_to_the_screen():
            raise SkipAction()
        screen = self.app.screen
        if hasattr(screen, "action_search"):
            screen.action_search()  # the logs pane searches the whole spool instead
            return
        if isinstance(screen, PaneScreen) and not screen.FILTERS_ROWS:
            self.app.notify(f"{screen.PANE_TITLE} has no rows to filter: / filters the rows of {filtering_panes()}",
                            severity="warning")
            return
        self._open_command_line("filter")

    def _open_command_line(self, mode: str, initial: str = "") -> None:
        lines = self.app.screen.query(CommandLine)
        if lines:
            line = lines.first()
            line.completer = self.command_candidates
            line.open(mode, initial)

    def command_candidates(self, before: str) -> list[str]:
        """What ``tab`` can complete in ``:`` mode: a command, or the argument of ctx/ns/theme/logs."""
        words = before.split()
        if len(words) <= 1 and not before.endswith(" "):
            return sorted(set(PANE_ALIASES) | {"ctx", "ns", "theme", "help", "quit", "seek", "version"})
        verb = words[0].lower()
        backend = self.app.backend
        try:
            if verb in ("ctx", "context", "contexts") and backend is not None:
                return list(backend.contexts())
            if verb in ("ns", "namespace", "namespaces") and backend is not None:
                return ["all", *backend.namespaces()]
            if verb in ("theme", "skin"):
                return list(self.app.available_themes)
            if verb in ("logs", "log") and backend is not None:
                return [f"{j.namespace}/{j.name}" for j in [*backend.jobs(), *backend.ray_jobs()]]
            if verb in ("pods", "pod", "po", "events", "event") and backend is not None:
                runs = [f"{j.namespace}/{j.name}" for j in [*backend.jobs(), *backend.ray_jobs()]]
                return ["all", *backend.namespaces(), *runs]
        except Exception:  # a backend read failing must not break typing
            return []
        return []

    async def submitted(self, message: CommandLineSubmitted) -> None:
        """A ``:`` command (the ``/`` line's text and the Logs search stop at their pane)."""
        if message.mode == "command":
            await self.run_command_text(message.text)

    async def run_command_text(self, text: str) -> None:
        app = self.app
        words = text.split()
        if not words:
            return
        verb, args = words[0].lstrip(":").lower(), words[1:]
        if verb in ("q", "quit", "q!", "exit"):
            await app.action_quit()
        elif verb in ("help", "h", "?"):
            app.action_help()
        elif verb in ("ctx", "context", "contexts"):
            self._command_context(args)
        elif verb in ("ns", "namespace", "namespaces"):
            self._command_namespace(args)
        elif verb in ("theme", "skin"):
            self._command_theme(args)
        elif verb in ("version", "versions"):
            run_in_thread(app, self._show_versions, group="versions", exclusive=True)
        elif verb == "seek":
            self.replay.seek(" ".join(args))
        elif verb in ("mk", "multikueue") and args and args[0].lower() in MULTIKUEUE_FLOWS:
            self.open_multikueue_flow(args[0].lower(), args[1:])
        elif verb in ("mk", "multikueue") and args and args[0].lower() == "rollback":
            # A message only: the old name meant "set up again", the opposite of the seed's words.
            from tau_tui.core.operations.multikueue_steps import removed_flow_message

            app.notify(removed_flow_message(":mk drain", ":mk setup"), severity="warning")
        elif verb in ("mk", "multikueue") and args:
            # Only a flow follows :mk; anything else would read as a filter nobody asked for.
            app.notify(unknown_word(f":{verb} {args[0]}", args[0].lower(), MULTIKUEUE_FLOWS, f":{verb} ",
                                    f":{verb} takes {', '.join(MULTIKUEUE_FLOWS)} (or nothing, for the pane)"),
                       severity="error")
        elif verb in PANE_ALIASES:
            pane = PANE_ALIASES[verb]
            if pane == "logs" and args:
                await app.open_logs_for_run(args[0])
                return
            if pane in ("pods", "events"):
                scope = self._object_scope(args)
                if scope is not None:
                    from tau_tui.screens.object_scope import open_object_view

                    open_object_view(app, pane, scope)
                    return
            app.action_switch_pane(pane)
            screen = app.screen
            if args and isinstance(screen, PaneScreen):
                if screen.FILTERS_ROWS:
                    screen.set_filter(" ".join(args))
                else:
                    app.notify(f":{verb} takes no filter: {screen.PANE_TITLE} has no rows to filter "
                               f"(ignored: {' '.join(args)})", severity="warning")
        else:
            app.notify(unknown_word(f":{verb}", verb, [*COMMAND_WORDS, *PANE_ALIASES], ":", KNOWN_COMMANDS),
                       severity="error")

    def _object_scope(self, args: list[str]):
        """``:pods`` / ``:events`` [NS/RUN | NS | all]: the scope, or None when the word is a filter."""
        from tau_tui.screens.object_scope import ObjectScope, parse_scope

        if not args:
            return ObjectScope()
        backend = self.app.backend
        try:
            namespaces = backend.namespaces() if backend is not None else []
        except Exception:  # a failed read: the word is a run, all, or a filter
            namespaces = []
        return parse_scope(args[0], namespaces) if len(args) == 1 else None

    def open_multikueue_flow(self, flow: str, args: list[str]) -> None:
        """``:mk setup [PLAN]`` (also re-enables after a drain), ``:mk drain [PLAN]``,
        ``:mk rotate WORKER NEW_CONTEXT_OR_FILE [PLAN]``."""
        app = self.app
        if app.backend is None:
            app.notify("no cluster connected", severity="error")
            return
        inputs: dict = {}
        plan = None
        if flow == "rotate":
            if len(args) < 2:
                app.notify("usage: :mk rotate WORKER NEW_CONTEXT_OR_KUBECONFIG_FILE [PLAN]", severity="warning")
                return
            worker, new = args[0], args[1]
            inputs = {"worker": worker, ("new_kubeconfig" if "/" in new or new.endswith((".yaml", ".yml", ".conf")) else "new_context"): new}
            plan = args[2] if len(args) > 2 else None
        elif args:
            plan = args[0]
        from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen

        app.push_screen(MultiKueueWizardScreen(flow, inputs, plan))

    def _command_context(self, args: list[str]) -> None:
        app = self.app
        backend = app.backend
        if backend is None:
            app.notify("no cluster connected", severity="warning")
            return
        if not args:
            names = backend.contexts()
            app.notify("contexts: " + ", ".join(f"*{n}" if n == backend.current_context else n for n in names)
                       + "\nswitch with :ctx NAME", title="contexts", timeout=8)
            return
        if args[0] not in backend.contexts():
            app.notify(f"unknown context {args[0]!r}; known: {', '.join(backend.contexts())}", severity="error")
            return
        run_in_thread(app, partial(self._switch_context, args[0]), group="context", exclusive=True)

    def _switch_context(self, name: str) -> None:
        """Worker thread."""
        app = self.app
        backend = app.backend
        if backend is None:
            return
        try:
            backend.use_context(name)
        except Exception as err:
            app.call_from_thread(app.notify, f"cannot switch to context {name}: {err}", severity="error")
            return
        app.call_from_thread(app.notify, f"context {name}")

    def _command_namespace(self, args: list[str]) -> None:
        app = self.app
        backend = app.backend
        if backend is None:
            app.notify("no cluster connected", severity="warning")
            return
        if not args:
            names = backend.namespaces()
            app.notify("namespaces: " + ", ".join(names) + "\nswitch with :ns NAME or :ns all", title="namespaces", timeout=8)
            return
        self.set_namespace(None if args[0] in ("all", "*", "-A") else args[0])

    def set_namespace(self, namespace: str | None) -> None:
        """The backend reads ``namespace`` (None: all), asked in a worker thread."""
        run_in_thread(self.app, partial(self._use_namespace, namespace), group="namespace", exclusive=True)

    def _use_namespace(self, namespace: str | None) -> None:
        """Worker thread."""
        app = self.app
        backend = app.backend
        if backend is None:
            return
        try:
            backend.use_namespace(namespace)
        except Exception as err:
            app.call_from_thread(app.notify, f"cannot use namespace {namespace}: {err}", severity="error")

    def _show_versions(self) -> None:
        """Worker thread: tau-tui's version and what the server reports (``:version``)."""
        from tau_tui.core.cluster.tested_cells import Verdict
        from tau_tui.core.operations.found_versions import UNKNOWN, read_found_versions

        app = self.app
        found = read_found_versions(app.backend)
        # Tested, outside, or (both versions read, the release only as a range) which cells it could be.
        told = found.cell.verdict is not Verdict.UNKNOWN or UNKNOWN not in (found.kubernetes, found.kueue)
        judged = [found.cell.reason] if told else []
        app.call_from_thread(app.notify, "\n".join([*found.lines(), *judged]), title="versions", timeout=10)

    def _command_theme(self, args: list[str]) -> None:
        app = self.app
        if not args or args[0] not in app.available_themes:
            app.notify("themes: " + ", ".join(sorted(app.tau_theme_names())), title="themes")
            return
        app.theme = args[0]
