"""The Textual app: panes, navigation, themes, settings, the refresh tick and mutations.

``tau-tui`` with no sub-command (or with app flags) is launched by
:func:`tau_tui.cli.run_app`.  Every cluster call runs in a thread worker that
only posts messages; the backend itself keeps its cache current on its own
core threads.  Screens reach the app through :class:`tau_tui.screens.host.PaneHost`
only; the app imports them, never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from rich.text import Text
from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.operations.audit import AuditLog
from tau_tui.core.operations.evidence.recorder import EvidenceRecorder
from tau_tui.core.operations.evidence.store import EvidenceStore
from tau_tui.mutations.mutation import Mutation, describe_result
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.compose import ComposeScreen
from tau_tui.screens.evidence import EvidenceScreen
from tau_tui.screens.logs import LogsScreen
from tau_tui.screens.multikueue import MultiKueueScreen
from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen
from tau_tui.screens.no_cluster import NoClusterScreen
from tau_tui.screens.nodes import NodesScreen
from tau_tui.screens.profiles import ProfilesScreen
from tau_tui.screens.queue import QueueScreen
from tau_tui.screens.runs import RunsScreen
from tau_tui.settings.settings_file import DEFAULT_THEME, AppSettings, LoadedSettings, load_settings
from tau_tui.settings.theme_files import load_theme_files
from tau_tui.startup.backends import BackendUnavailable, connect_kubeconfig_backend, start_demo_backend
from tau_tui.widgets import status_text
from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.header_bar import PANES, HeaderState
from tau_tui.widgets.help_dialog import HelpDialog

#: ``:`` command aliases → pane.
PANE_ALIASES = {
    "compose": "compose", "new": "compose", "edit": "compose", "co": "compose",
    "profiles": "profiles", "profile": "profiles", "prof": "profiles", "pr": "profiles",
    "queue": "queue", "queues": "queue", "qu": "queue", "kq": "queue", "cq": "queue", "lq": "queue",
    "wl": "queue", "workloads": "queue", "workload": "queue",
    "runs": "runs", "run": "runs", "jobs": "runs", "job": "runs", "rayjobs": "runs", "rj": "runs",
    "logs": "logs", "log": "logs",
    "nodes": "nodes", "node": "nodes", "no": "nodes", "gpu": "nodes", "gpus": "nodes",
    "multikueue": "multikueue", "mk": "multikueue", "mkc": "multikueue", "admissionchecks": "multikueue", "ac": "multikueue",
    "evidence": "evidence", "ev": "evidence", "records": "evidence",
}


MULTIKUEUE_FLOWS = ("setup", "drain", "rollback", "rotate")


class TauApp(App):
    """tau-tui."""

    TITLE = "tau-tui"
    CSS_PATH = "tau.tcss"
    ENABLE_COMMAND_PALETTE = True
    MODES = {
        "compose": ComposeScreen,
        "profiles": ProfilesScreen,
        "queue": QueueScreen,
        "runs": RunsScreen,
        "logs": LogsScreen,
        "nodes": NodesScreen,
        "multikueue": MultiKueueScreen,
        "evidence": EvidenceScreen,
    }
    DEFAULT_MODE = "queue"

    BINDINGS = [
        Binding("colon", "command", ":cmd", id="app.command", key_display=":"),
        Binding("slash", "filter", "/filter", id="app.filter", key_display="/"),
        Binding("escape", "back", "Back", id="app.back", show=False),
        Binding("question_mark,f1", "help", "Help", id="app.help", key_display="?"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", show=False, priority=True),
        *[Binding(key, f"switch_pane('{mode}')", label, id=f"app.pane.{mode}", show=False) for key, mode, label in PANES],
        # alt+digit switches from inside a text field too, and never types the digit (priority: before the Input).
        *[Binding(f"alt+{key}", f"switch_pane('{mode}')", label, id=f"app.pane_alt.{mode}", show=False, priority=True)
          for key, mode, label in PANES],
    ]

    class BackendReady(Message):
        def __init__(self, backend: ClusterBackend, note: str = "") -> None:
            super().__init__()
            self.backend = backend
            self.note = note

    class BackendFailed(Message):
        def __init__(self, message: str, offer_demo: bool) -> None:
            super().__init__()
            self.message = message
            self.offer_demo = offer_demo

    class MutationPreviewed(Message):
        def __init__(self, mutation: Mutation, ok: bool, text: str, allowed: bool = True) -> None:
            super().__init__()
            self.mutation = mutation
            self.ok = ok
            self.text = text
            self.allowed = allowed

    class MutationApplied(Message):
        def __init__(self, mutation: Mutation, ok: bool, text: str) -> None:
            super().__init__()
            self.mutation = mutation
            self.ok = ok
            self.text = text

    class MutationBlocked(Message):
        def __init__(self, verb: str, target: str) -> None:
            super().__init__()
            self.verb = verb
            self.target = target

    def __init__(
        self,
        backend: ClusterBackend | None = None,
        *,
        demo: str | None = None,
        context: str | None = None,
        namespace: str | None = None,
        readonly: bool = False,
        theme: str | None = None,
        settings: LoadedSettings | None = None,
        audit: AuditLog | None = None,
        start_pane: str | None = None,
        compose_file: str | None = None,
        demo_realtime: bool = True,
        request_timeouts=None,
        evidence: EvidenceStore | None = None,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.demo = demo
        self.context_name = context
        self.namespace_name = namespace
        self.readonly = readonly
        self.loaded_settings = settings or load_settings()
        self.settings: AppSettings = self.loaded_settings.settings
        self.audit = audit or AuditLog()
        self.evidence = evidence or EvidenceStore()
        #: Captures a run's evidence when it finishes (a core thread; see core/operations/evidence/recorder.py).
        self.evidence_recorder: EvidenceRecorder | None = None
        #: Tests and embedders may set the MultiKueue wizard's environment directly.
        self._multikueue_env = None
        self.requested_theme = theme
        self.start_pane = start_pane or self.DEFAULT_MODE
        self.compose_file = compose_file
        self.demo_realtime = demo_realtime
        self.pane_history: list[str] = []
        self.backend_note = ""
        self.connection_label = "connecting" if backend is None else "connected"
        self.problems: list[str] = list(self.loaded_settings.problems)
        self.pending_logs: tuple | None = None
        #: ``--request-timeout`` (else the settings' request_timeout/connect_timeout).
        self.request_timeouts = request_timeouts

    # -- start-up --------------------------------------------------------------

    def on_mount(self) -> None:
        self._register_themes()
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._sync_palette())
        self._sync_palette()
        self.switch_mode(self.start_pane)
        self.set_interval(self.settings.refresh_tick, self._tick, name="refresh-tick")
        for problem in self.problems:
            self.notify(problem, title="config", severity="warning", timeout=10)
        if self.backend is not None:
            self._backend_started(self.backend)
        elif self.demo:
            self.connection_label = "loading demo"
            self._load_demo(self.demo)
        else:
            self._connect(self.context_name, self.namespace_name)

    def _register_themes(self) -> None:
        files, problems = load_theme_files()
        for item in problems:
            self.notify(item, title="theme", severity="warning", timeout=10)
        for theme_file in files:
            fields = dict(theme_file.fields)
            try:
                self.register_theme(Theme(**fields))
            except Exception as err:  # a bad colour string
                self.notify(f"theme {theme_file.path}: {err}; skipped", severity="warning")
        wanted = self.requested_theme or self.settings.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            fallback = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
            if wanted:
                self.notify(f"theme {wanted!r} not found; using {fallback}. Known: {', '.join(sorted(self.tau_theme_names()))}",
                            severity="warning", timeout=10)
            self.theme = fallback

    def tau_theme_names(self) -> list[str]:
        return [name for name in self.available_themes if name.startswith("tau-")] or list(self.available_themes)

    def _sync_palette(self) -> None:
        theme = self.current_theme
        status_text.set_palette(
            theme.success or "green", theme.warning or "yellow", theme.error or "red", theme.accent or "cyan",
            "dim",
        )
        for screen in self.screen_stack:
            for widget in screen.query("*"):
                widget.refresh()

    @work(thread=True, exclusive=True, exit_on_error=False, group="backend")
    def _load_demo(self, scenario: str) -> None:
        try:
            backend = start_demo_backend(scenario, self.namespace_name, self.demo_realtime)
        except BackendUnavailable as err:
            self.post_message(self.BackendFailed(err.message, offer_demo=err.offer_demo))
            return
        self.post_message(self.BackendReady(backend, f"demo scenario {scenario!r} (simulated cluster)"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="backend")
    def _connect(self, context: str | None, namespace: str | None) -> None:
        try:
            backend = connect_kubeconfig_backend(
                context, namespace, self.request_timeouts or self.settings.timeouts()
            )
        except BackendUnavailable as err:
            self.post_message(self.BackendFailed(err.message, err.offer_demo))
            return
        self.post_message(self.BackendReady(backend))

    @on(BackendReady)
    def _on_backend_ready(self, message: BackendReady) -> None:
        old = self.backend
        self.backend = message.backend
        self.backend_note = message.note
        if old is not None and old is not message.backend:
            self._close_backend(old)
        if isinstance(self.screen, NoClusterScreen):
            self.pop_screen()
        self._backend_started(message.backend)

    def _backend_started(self, backend: ClusterBackend) -> None:
        self._start_recorder(backend)
        self.connection_label = backend.connection_state().label
        if self.namespace_name and backend.namespace != self.namespace_name:
            self._set_namespace(self.namespace_name)
        self._tick()

    @work(thread=True, exclusive=True, exit_on_error=False, group="evidence-recorder")
    def _start_recorder(self, backend: ClusterBackend) -> None:
        old, self.evidence_recorder = self.evidence_recorder, None
        if old is not None:
            old.close()
        try:
            self.evidence_recorder = EvidenceRecorder(backend, self.evidence, self.now).start()
        except Exception as err:  # evidence is a record, not the app: say so and go on
            self.call_from_thread(self.notify, f"evidence recorder not started: {err}", severity="warning")

    @on(BackendFailed)
    def _on_backend_failed(self, message: BackendFailed) -> None:
        self.connection_label = "no cluster"
        self.push_screen(NoClusterScreen(message.message, offer_demo=message.offer_demo))

    def action_open_demo(self) -> None:
        self.demo = self.demo or "demo"
        self.connection_label = "loading demo"
        if isinstance(self.screen, NoClusterScreen):
            self.screen.set_loading()
        self._load_demo("demo")

    @work(thread=True, exit_on_error=False, group="backend-close")
    def _close_backend(self, backend: ClusterBackend) -> None:
        backend.close()

    async def action_quit(self) -> None:
        recorder, self.evidence_recorder = self.evidence_recorder, None
        if recorder is not None:
            recorder.close()
        backend = self.backend
        self.backend = None
        if backend is not None:
            try:
                backend.close()
            except Exception:
                pass
        self.exit()

    # -- the tick ----------------------------------------------------------------

    def _tick(self) -> None:
        backend = self.backend
        if backend is not None:
            try:
                self.connection_label = backend.connection_state().label
            except Exception as err:
                self.connection_label = f"unknown ({type(err).__name__})"
        if not self.screen_stack:  # shutting down: the timer can fire once more
            return
        screen = self.screen
        if isinstance(screen, PaneScreen):
            screen.update_header()
            screen.tick()
        elif hasattr(screen, "tick"):
            screen.tick()  # drill-down screens

    def header_state(self, pane: str, crumbs: str, filter_text: str) -> HeaderState:
        backend = self.backend
        context = "-"
        namespace = "all"
        if backend is not None:
            try:
                context = backend.current_context or "-"
                namespace = backend.namespace or "all"
            except Exception:
                pass
        elif self.context_name:
            context = self.context_name
        return HeaderState(context, namespace, self.connection_label, self.readonly, pane, crumbs, filter_text)

    def now(self) -> datetime:
        """Cluster time: the backend's clock (frozen in tests), else the wall clock."""
        backend = self.backend
        clock = getattr(backend, "_now", None)
        if callable(clock):
            try:
                return clock()
            except Exception:
                pass
        return datetime.now(UTC)

    # -- navigation ----------------------------------------------------------------

    def action_switch_pane(self, mode: str) -> None:
        if mode == self.current_mode:
            return
        self.pane_history.append(self.current_mode)
        del self.pane_history[:-20]
        self.switch_mode(mode)

    async def action_back(self) -> None:
        screen = self.screen
        command_line = screen.query(CommandLine)
        if command_line and command_line.first().has_class("-open"):
            command_line.first().action_close()
            return
        if len(self.screen_stack) > 1:
            self.pop_screen()
            return
        if isinstance(screen, PaneScreen) and screen.action_back():
            return
        if self.pane_history:
            self.switch_mode(self.pane_history.pop())

    def action_command(self) -> None:
        self._open_command_line("command")

    def action_filter(self) -> None:
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
            return sorted(set(PANE_ALIASES) | {"ctx", "ns", "theme", "help", "quit"})
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
            screen.set_filter(message.text, live=True)

    @on(CommandLine.Closed)
    def _on_command_closed(self, message: CommandLine.Closed) -> None:
        screen = self.screen
        if message.mode == "filter" and isinstance(screen, PaneScreen) and screen.row_filter.text:
            screen.set_filter("")  # esc in the filter line clears the filter (k9s)
        self.screen.focus_next()

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
        elif verb in ("mk", "multikueue") and args and args[0].lower() in MULTIKUEUE_FLOWS:
            self.open_multikueue_flow(args[0].lower(), args[1:])
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
        """``:mk setup [PLAN]``, ``:mk drain [PLAN]``, ``:mk rollback [PLAN]``,
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

    async def open_logs_for_run(self, ref: str, container_all: bool = False, pod: str | None = None) -> None:
        """``:logs RUN`` / ``l``: RUN is ``name`` or ``namespace/name`` of a Job or RayJob.
        With ``pod`` (a pod of RUN's namespace), that pod's log only, not the merged run log."""
        self.pending_logs = (ref, container_all, pod)
        if self.current_mode != "logs":
            self.pane_history.append(self.current_mode)
            await self.switch_mode("logs")
        screen = self.screen
        if isinstance(screen, LogsScreen):
            screen.open_run(ref, all_containers=container_all, pod=pod)
            self.pending_logs = None

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, (HelpDialog,)):
            return
        focused = self.focused
        about = getattr(focused, "HELP", "") if focused is not None else ""
        if isinstance(screen, PaneScreen):
            about = (screen.HELP + ("\n\nFocused: " + about if about and about != screen.HELP else "")).strip()
            title = screen.PANE_TITLE
            keys = screen.help_keys()
        else:
            title = getattr(screen, "PANE_TITLE", "tau-tui")
            about = getattr(screen, "HELP", about)
            keys = [(self.get_key_display(b), b.description) for b in getattr(screen, "BINDINGS", []) if isinstance(b, Binding)]
        self.push_screen(HelpDialog(title, about or "tau-tui", keys, slash=getattr(screen, "SLASH_HELP", None)))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield SystemCommand("Change theme", "tau-dark, tau-light, tau-high-contrast", self.action_change_theme)
        yield SystemCommand("Quit", "quit tau-tui (ctrl+q)", self.action_quit)

    # -- mutations -----------------------------------------------------------------

    def request_mutation(self, mutation: Mutation) -> None:
        """Preview (server dry-run) → confirm → apply → audit.  Refused in --readonly."""
        if self.readonly:
            self.block_mutation(mutation.verb, mutation.target)
            return
        if self.backend is None:
            self.notify("no cluster connected", severity="error")
            return
        self._preview_mutation(mutation)

    def block_mutation(self, verb: str, target: str) -> None:
        self.notify(f"read-only mode: {verb} {target} is disabled", severity="warning")
        self.post_message(self.MutationBlocked(verb, target))
        self._audit_worker("refused", verb, target, ok=False, message="refused: read-only mode", readonly_blocked=True)

    def write_audit(self, phase: str, verb: str, target: str, *, ok: bool | None, message: str,
                    namespace: str | None = None, dry_run: bool = False, readonly_blocked: bool = False) -> str | None:
        """One audit entry with the Kubernetes identity (worker threads only: it may ask
        the server).  Returns why it could not be written, or None."""
        backend = self.backend
        try:
            identity = backend.who_am_i() if backend is not None else None
        except Exception:  # the identity is a detail; the entry is what matters
            identity = None
        try:
            self.audit.append(verb, target, ok=ok, message=message, dry_run=dry_run, phase=phase,
                              context=backend.current_context if backend else None, namespace=namespace,
                              readonly_blocked=readonly_blocked, identity=identity)
        except OSError as err:
            return f"audit log not written: {err}"
        return None

    @work(thread=True, exit_on_error=False, group="audit")
    def _audit_worker(self, phase: str, verb: str, target: str, *, ok: bool | None, message: str,
                      namespace: str | None = None, readonly_blocked: bool = False) -> None:
        problem = self.write_audit(phase, verb, target, ok=ok, message=message, namespace=namespace,
                                   readonly_blocked=readonly_blocked)
        if problem:
            self.call_from_thread(self.notify, problem, severity="error")

    @work(thread=True, exit_on_error=False, group="mutation")
    def _preview_mutation(self, mutation: Mutation) -> None:
        affects = ""
        if mutation.affected is not None:
            try:
                affects = "affects:\n" + "".join(f"  {line}\n" for line in mutation.affected()) + "\n"
            except Exception as err:  # the summary is a help; the dry-run below still decides
                affects = f"affects: unknown ({type(err).__name__}: {err})\n\n"
        self._preview_mutation_text(mutation, affects)

    def _preview_mutation_text(self, mutation: Mutation, affects: str) -> None:
        if mutation.preview is not None:
            try:
                ok, text, allowed = mutation.preview()
            except Exception as err:
                ok, text, allowed = False, f"⚠ preview failed: {getattr(err, 'message', None) or err}", False
            text = affects + text
            self.write_audit("preview", mutation.verb, mutation.target, ok=ok, message=text,
                             namespace=mutation.namespace, dry_run=True)
            self.post_message(self.MutationPreviewed(mutation, ok, text, allowed))
            return
        if mutation.server_dry_run:
            try:
                ok, text = describe_result(mutation.run(True))
                text = ("server dry-run passed:\n" if ok else "⚠ server dry-run FAILED:\n") + text
            except Exception as err:
                ok, text = False, f"⚠ server dry-run failed: {getattr(err, 'message', None) or err}"
        else:
            ok, text = True, "this change cannot be previewed by the server; it applies directly"
        text = affects + text
        self.write_audit("preview", mutation.verb, mutation.target, ok=ok, message=text,
                         namespace=mutation.namespace, dry_run=True)
        self.post_message(self.MutationPreviewed(mutation, ok, text))

    @on(MutationPreviewed)
    def _on_previewed(self, message: MutationPreviewed) -> None:
        mutation = message.mutation
        preview = Text(f"{mutation.verb} {mutation.target}\n\n{message.text}")
        if not message.allowed:
            self.push_screen(ConfirmDialog(f"{mutation.verb.capitalize()} {mutation.target}: refused", preview,
                                           verb=mutation.verb.capitalize(), can_confirm=False))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._apply_mutation(mutation)
            else:
                self.notify(f"{mutation.verb} {mutation.target}: not done")
                self._audit_worker("declined", mutation.verb, mutation.target, ok=False,
                                   message="declined at the confirmation", namespace=mutation.namespace)

        self.push_screen(ConfirmDialog(mutation.title, preview, verb=mutation.verb.capitalize(),
                                       decline=mutation.decline), answered)

    @work(thread=True, exit_on_error=False, group="mutation")
    def _apply_mutation(self, mutation: Mutation) -> None:
        # The intent is on disk before the call: a crash mid-call still leaves a trace.
        problem = self.write_audit("intent", mutation.verb, mutation.target, ok=None, message="confirmed; applying",
                                   namespace=mutation.namespace)
        if problem:  # no trace, no change
            self.post_message(self.MutationApplied(mutation, False, f"{mutation.verb} not done: {problem}"))
            return
        try:
            ok, text = describe_result(mutation.run(False))
        except Exception as err:
            ok, text = False, f"{mutation.verb} failed: {getattr(err, 'message', None) or err}"
        problem = self.write_audit("outcome", mutation.verb, mutation.target, ok=ok, message=text,
                                   namespace=mutation.namespace)
        if problem:
            text += f"\n({problem})"
        self.post_message(self.MutationApplied(mutation, ok, text))

    @on(MutationApplied)
    def _on_applied(self, message: MutationApplied) -> None:
        self.notify(message.text, title=f"{message.mutation.verb} {'done' if message.ok else 'FAILED'}",
                    severity="information" if message.ok else "error", timeout=8)
        if message.mutation.on_done is not None:
            message.mutation.on_done(message.ok, message.text)
        self._tick()
