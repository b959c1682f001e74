"""The app's command line: ``:`` commands (panes, ctx, ns, theme, logs, mk, quit), ``/`` filters
and their tab completion.

A part of :class:`tau_tui.app.TauApp`, which inherits it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from textual import on, work
from textual.actions import SkipAction
from textual.app import App
from textual.timer import Timer
from textual.widgets import Input, TextArea

from tau_tui.app_parts.keys import MULTIKUEUE_FLOWS, PANE_ALIASES
from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.screens.base import PaneScreen
from tau_tui.settings.settings_file import AppSettings
from tau_tui.widgets.command_line import CommandLine

#: A typed filter is applied once no key came for this long (a fast typist's keys are 50-100 ms apart)...
FILTER_QUIET_S = 0.06
#: ...or this long after the first key it holds, when keys keep coming.
FILTER_LONGEST_WAIT_S = 0.3


class CommandMode(App):
    """Opens the command line and runs what is typed into it."""

    # Set by the app shell (TauApp.__init__ and its backend workers).
    backend: ClusterBackend | None
    settings: AppSettings
    _multikueue_env: object | None
    # The app shell's navigation, which commands drive.
    action_switch_pane: Callable[[str], None]
    action_help: Callable[[], None]
    open_logs_for_run: Callable[..., Awaitable[None]]
    tau_theme_names: Callable[[], list[str]]
    seek_replay: Callable[[str], None]
    #: The typed filter waiting for the keys to pause, and when its first key came.
    _typed_filter_timer: Timer | None = None
    _filter_typed_since = 0.0

    # ":" and "/" are priority bindings: the app opens the line and focuses it before the next key is
    # routed, so keys typed right after them land in the line, never in the table behind it.  Typed
    # into a text field, or on a screen without a command line, they are left to that screen.

    def _keys_belong_to_the_screen(self) -> bool:
        return isinstance(self.focused, (Input, TextArea)) or not self.screen.query(CommandLine)

    def action_command(self) -> None:
        if self._keys_belong_to_the_screen():
            raise SkipAction()
        self._open_command_line("command")

    def action_filter(self) -> None:
        if self._keys_belong_to_the_screen():
            raise SkipAction()
        screen = self.screen
        if hasattr(screen, "action_search"):
            screen.action_search()  # the logs pane searches the whole spool instead
            return
        self._open_command_line("filter")

    def _open_command_line(self, mode: str, initial: str = "") -> None:
        lines = self.screen.query(CommandLine)
        if lines:
            line = lines.first()
            line.completer = self.command_candidates
            line.open(mode, initial)

    def command_candidates(self, before: str) -> list[str]:
        """What ``tab`` can complete in ``:`` mode: a command, or the argument of ctx/ns/theme/logs."""
        words = before.split()
        if len(words) <= 1 and not before.endswith(" "):
            return sorted(set(PANE_ALIASES) | {"ctx", "ns", "theme", "help", "quit", "seek"})
        verb = words[0].lower()
        backend = self.backend
        try:
            if verb in ("ctx", "context", "contexts") and backend is not None:
                return list(backend.contexts())
            if verb in ("ns", "namespace", "namespaces") and backend is not None:
                return ["all", *backend.namespaces()]
            if verb in ("theme", "skin"):
                return list(self.available_themes)
            if verb in ("logs", "log") and backend is not None:
                return [f"{j.namespace}/{j.name}" for j in [*backend.jobs(), *backend.ray_jobs()]]
        except Exception:  # a backend read failing must not break typing
            return []
        return []

    @on(CommandLine.Submitted)
    async def _on_command(self, message: CommandLine.Submitted) -> None:
        screen = self.screen
        if message.mode == "search":
            from tau_tui.screens.logs import LogsScreen  # loaded once the Logs pane was made

            if isinstance(screen, LogsScreen):
                screen.run_search(message.text)
            return
        if message.mode == "filter":
            if isinstance(screen, PaneScreen):
                screen.set_filter(message.text)
            return
        await self.run_command_text(message.text)

    @on(CommandLine.Changed)
    def _on_filter_typed(self, message: CommandLine.Changed) -> None:
        screen = self.screen
        if message.mode == "filter" and isinstance(screen, PaneScreen):
            # The typed character is drawn first and the rows are filtered once the keys pause, so
            # a key's echo never waits for the last key's 20,000 rows; keys typed meanwhile are
            # filtered once, together, and keys that never pause still filter every so often.
            now = time.monotonic()
            if screen.typed_filter is None:
                self._filter_typed_since = now
            screen.typed_filter = message.text
            if self._typed_filter_timer is not None:
                self._typed_filter_timer.stop()
            wait = min(FILTER_QUIET_S, max(0.0, self._filter_typed_since + FILTER_LONGEST_WAIT_S - now))
            self._typed_filter_timer = self.set_timer(wait, screen.apply_typed_filter, name="typed filter")

    async def run_command_text(self, text: str) -> None:
        words = text.split()
        if not words:
            return
        verb, args = words[0].lstrip(":").lower(), words[1:]
        if verb in ("q", "quit", "q!", "exit"):
            await self.action_quit()
        elif verb in ("help", "h", "?"):
            self.action_help()
        elif verb in ("ctx", "context", "contexts"):
            self._command_context(args)
        elif verb in ("ns", "namespace", "namespaces"):
            self._command_namespace(args)
        elif verb in ("theme", "skin"):
            self._command_theme(args)
        elif verb == "seek":
            self.seek_replay(" ".join(args))
        elif verb in ("mk", "multikueue") and args and args[0].lower() in MULTIKUEUE_FLOWS:
            self.open_multikueue_flow(args[0].lower(), args[1:])
        elif verb in ("mk", "multikueue") and args and args[0].lower() == "rollback":
            # A message only: the old name meant "set up again", the opposite of the seed's words.
            from tau_tui.core.operations.multikueue_steps import removed_flow_message

            self.notify(removed_flow_message(":mk drain", ":mk setup"), severity="warning")
        elif verb in PANE_ALIASES:
            pane = PANE_ALIASES[verb]
            if pane == "logs" and args:
                await self.open_logs_for_run(args[0])
                return
            self.action_switch_pane(pane)
            if args and isinstance(self.screen, PaneScreen) and pane != "logs":
                self.screen.set_filter(" ".join(args))
        else:
            self.notify(f"unknown command :{verb}. Try :queue :runs :nodes :logs RUN :evidence :ctx :ns :compose :profiles :mk :q",
                        severity="warning")

    def open_multikueue_flow(self, flow: str, args: list[str]) -> None:
        """``:mk setup [PLAN]`` (also re-enables after a drain), ``:mk drain [PLAN]``,
        ``:mk rotate WORKER NEW_CONTEXT_OR_FILE [PLAN]``."""
        if self.backend is None:
            self.notify("no cluster connected", severity="error")
            return
        inputs: dict = {}
        plan = None
        if flow == "rotate":
            if len(args) < 2:
                self.notify("usage: :mk rotate WORKER NEW_CONTEXT_OR_KUBECONFIG_FILE [PLAN]", severity="warning")
                return
            worker, new = args[0], args[1]
            inputs = {"worker": worker, ("new_kubeconfig" if "/" in new or new.endswith((".yaml", ".yml", ".conf")) else "new_context"): new}
            plan = args[2] if len(args) > 2 else None
        elif args:
            plan = args[0]
        from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen

        self.push_screen(MultiKueueWizardScreen(flow, inputs, plan))

    def multikueue_environment(self, plan_path: str | None = None):
        from tau_tui.settings.settings_file import config_dir
        from tau_tui.startup.multikueue_env import environment_for

        if self._multikueue_env is not None and plan_path is None:
            return self._multikueue_env
        return environment_for(self.backend, plan_path or self.settings.multikueue_plan, config_dir())

    def _command_context(self, args: list[str]) -> None:
        backend = self.backend
        if backend is None:
            self.notify("no cluster connected", severity="warning")
            return
        if not args:
            names = backend.contexts()
            self.notify("contexts: " + ", ".join(f"*{n}" if n == backend.current_context else n for n in names)
                        + "\nswitch with :ctx NAME", title="contexts", timeout=8)
            return
        if args[0] not in backend.contexts():
            self.notify(f"unknown context {args[0]!r}; known: {', '.join(backend.contexts())}", severity="error")
            return
        self._switch_context(args[0])

    @work(thread=True, exclusive=True, exit_on_error=False, group="context")
    def _switch_context(self, name: str) -> None:
        backend = self.backend
        if backend is None:
            return
        try:
            backend.use_context(name)
        except Exception as err:
            self.call_from_thread(self.notify, f"cannot switch to context {name}: {err}", severity="error")
            return
        self.call_from_thread(self.notify, f"context {name}")

    def _command_namespace(self, args: list[str]) -> None:
        backend = self.backend
        if backend is None:
            self.notify("no cluster connected", severity="warning")
            return
        if not args:
            names = backend.namespaces()
            self.notify("namespaces: " + ", ".join(names) + "\nswitch with :ns NAME or :ns all", title="namespaces", timeout=8)
            return
        self._set_namespace(None if args[0] in ("all", "*", "-A") else args[0])

    @work(thread=True, exclusive=True, exit_on_error=False, group="namespace")
    def _set_namespace(self, namespace: str | None) -> None:
        backend = self.backend
        if backend is None:
            return
        try:
            backend.use_namespace(namespace)
        except Exception as err:
            self.call_from_thread(self.notify, f"cannot use namespace {namespace}: {err}", severity="error")

    def _command_theme(self, args: list[str]) -> None:
        if not args or args[0] not in self.available_themes:
            self.notify("themes: " + ", ".join(sorted(self.tau_theme_names())), title="themes")
            return
        self.theme = args[0]
