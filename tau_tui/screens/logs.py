"""Logs pane: one run's logs (all pods merged by time, each line prefixed) from
an append-only spool.  Follow / "paused (+N new)", wrap, timestamps, since
presets, previous container, all containers, search over the whole spool,
JSON pretty-print, save, and a dropped-lines counter (the spool never drops,
so it reads 0)."""

from __future__ import annotations

import re
import threading
from dataclasses import replace
from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.logspool.log_requests import LogRequest
from tau_tui.core.cluster.logspool.saving import save_narrowed, save_spool
from tau_tui.core.cluster.logspool.spool_dirs import process_spool_dir
from tau_tui.core.cluster.logspool.stream import LogStream
from tau_tui.core.operations.audit import state_dir
from tau_tui.core.operations.multikueue_steps.worker_logs import placed_worker, unmapped_message, worker_log_backend
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.messages import Saved, SearchDone, StreamFailed, StreamOpened
from tau_tui.settings.settings_file import default_config_path
from tau_tui.widgets.command_line import CommandLine
from tau_tui.widgets.input_dialog import InputDialog
from tau_tui.widgets.log_view import LogView
from tau_tui.widgets.status_text import style_of
from tau_tui.widgets.work_line import WorkLine

SINCE_PRESETS: tuple[tuple[str, int | None], ...] = (("all", None), ("1m", 60), ("5m", 300), ("15m", 900), ("30m", 1800), ("1h", 3600))


class LogsScreen(PaneScreen):
    PANE = "logs"
    PANE_TITLE = "Logs"
    FILTERS_ROWS = False
    HELP = (
        "The logs of one run: every pod (and with 'a' every container) merged by time, each line prefixed "
        "[pod/container]; a RayJob's driver output first ([driver]: ray job logs in its head, else its "
        "log-offload sidecar), then its head and workers; a followed run's new pods join as they come.  Lines are kept in a spool file, so nothing is dropped or capped and search "
        "covers everything since the stream opened.  f pauses/resumes following (while paused, new lines "
        "are counted), w wraps, t adds server timestamps, s cycles since (all, 1m, 5m, 15m, 30m, 1h), "
        "p shows the previous container instance, j pretty-prints JSON lines, / searches, n/N jump between "
        "matches, ctrl+s saves every line to a file.  Open a run with :logs RUN or l on a run."
    )
    #: What ``/`` does here (the help's global list says "filter rows" elsewhere).
    SLASH_HELP = "search the whole log (regex, case-insensitive); n / N jump to the next / previous match"
    BINDINGS = [
        Binding("f", "toggle_follow", "Follow", id="logs.follow"),
        Binding("w", "toggle_wrap", "Wrap", id="logs.wrap"),
        Binding("t", "toggle_timestamps", "Times", id="logs.timestamps"),
        Binding("s", "cycle_since", "Since", id="logs.since"),
        Binding("p", "toggle_previous", "Prev", id="logs.previous"),
        Binding("a", "toggle_all_containers", "All ctrs", id="logs.all_containers"),
        Binding("j", "toggle_json", "JSON", id="logs.json"),
        Binding("n", "next_match", "Next", id="logs.next"),
        Binding("N", "previous_match", "Prev", id="logs.prev", show=False),
        Binding("ctrl+s", "save", "Save", id="logs.save"),
        Binding("escape", "stop_search", "Stop search", id="logs.stop_search", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.stream: LogStream | None = None
        self.request: LogRequest | None = None
        self.run_ref: str | None = None
        self.run_title = ""
        self.since_index = 0
        self.search_text = ""
        self.last_saved: str | None = None
        self.opening = False
        #: (top line, lines seen) of a paused log being opened again: it opens paused there.
        self._keep_place: tuple[int, int] | None = None
        #: The search running now (esc sets it) and the term it replaces.
        self._searching: threading.Event | None = None
        self._search_before = ""

    def compose_body(self) -> ComposeResult:
        yield Static(Text("no run selected: press l on a run (Runs or Queue pane), or type :logs RUN"), id="logs-info")
        yield WorkLine(id="logs-work")
        yield LogView(id="log-view")

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(0.1, self._poll, name="log-poll")
        pending = self.tau.pending_logs
        if pending is not None:
            self.tau.pending_logs = None
            self.open_run(pending[0], all_containers=pending[1], pod=pending[2] if len(pending) > 2 else None)

    def on_unmount(self) -> None:
        self._close_stream()

    def needs_backend(self) -> bool:
        return False

    def crumbs(self) -> str:
        return f"Logs › {self.run_ref}" if self.run_ref else "Logs"

    # -- opening -------------------------------------------------------------------

    def open_run(self, ref: str, all_containers: bool = False, pod: str | None = None) -> None:
        """``pod``: one pod of the run (``l`` on a pod row), not the merged log of every pod."""
        self.run_ref = ref
        self._keep_place = None  # another log: it opens following
        self.update_header()
        backend = self.tau.backend
        if backend is None:
            self.query_one("#logs-info", Static).update(Text("no cluster connected"))
            return
        if pod is not None:
            namespace = ref.rpartition("/")[0]
            request = LogRequest(namespace=namespace, pods=(pod,), all_containers=all_containers, follow=True,
                                 since_seconds=SINCE_PRESETS[self.since_index][1])
            self.run_ref = f"{namespace}/{pod}"
            self.update_header()
            self._open(request, f"Pod {namespace}/{pod} (run {ref})")
            return
        namespace, _, name = ref.rpartition("/")
        owner = None
        # not KubeRay's submitter Job, which carries its RayJob's name
        candidates = [*(j for j in backend.jobs(tau_managed_only=False) if not j.owned_by_rayjob),
                      *backend.ray_jobs(tau_managed_only=False)]
        for item in candidates:
            if item.name == name and (not namespace or item.namespace == namespace):
                owner = item
                break
        if owner is None:
            self.query_one("#logs-info", Static).update(
                Text(f"✗ no Job or RayJob named {ref}; give namespace/name, e.g. :logs team-nlp/{name}", style=style_of("failed")))
            return
        is_job = owner.kind.type.kind == "Job"
        what = f"{owner.kind.type.kind} {owner.namespace}/{owner.name}"
        worker = placed_worker(backend, owner.namespace or "", owner.uid or "")
        self.log_backend = None
        if worker:
            self.log_backend = worker_log_backend(backend, worker, self.tau.settings.worker_contexts)
            if self.log_backend is None:
                self._close_stream()
                self.query_one(LogView).set_spool(None, f"{what} runs on MultiKueue worker {worker}")
                self.query_one("#logs-info", Static).update(
                    Text(f"⚠ {unmapped_message(worker, what, str(default_config_path()))}", style=style_of("warning")))
                return
            what += f" on worker {worker}"
        request = LogRequest(
            namespace=owner.namespace or "",
            job=owner.name if is_job else None,
            ray_job=None if is_job else owner.name,
            all_containers=all_containers,
            follow=True,
            since_seconds=SINCE_PRESETS[self.since_index][1],
        )
        self._open(request, what)

    def _open(self, request: LogRequest, title: str) -> None:
        self._close_stream()
        self.request = request
        self.run_title = title
        self.opening = True
        self.query_one(LogView).set_spool(None, f"opening the logs of {title}…")
        self._open_worker(request, title)

    @work(description="_open_worker", thread=True, exclusive=True, exit_on_error=False, group="logs-open")
    def _open_worker(self, request: LogRequest, title: str) -> None:
        backend = getattr(self, "log_backend", None) or self.tau.backend
        if backend is None:
            self.post_message(StreamFailed("no cluster connected"))
            return
        try:
            # One directory per process: removed at exit, and by the next start if this one is killed.
            spool_dir = process_spool_dir(state_dir() / "spool")
            stream = backend.open_logs(request, spool_dir=spool_dir)
        except ClusterError as err:
            self.post_message(StreamFailed(err.message))
            return
        except Exception as err:
            self.post_message(StreamFailed(f"{type(err).__name__}: {err}"))
            return
        self.post_message(StreamOpened(stream, request, title))

    @on(StreamOpened)
    def _on_opened(self, message: StreamOpened) -> None:
        self.opening = False
        if not self.is_attached:
            message.stream.close(delete_spool=True)
            return
        self._close_stream()
        self.stream = message.stream
        self.request = message.request
        view = self.query_one(LogView)
        keep_place, self._keep_place = self._keep_place, None
        view.set_spool(message.stream.spool, keep_place=keep_place)
        if self.search_text:
            # The hits belonged to the previous log: drop the term and its highlight together,
            # so the header never says "no match" over highlighted lines that n cannot reach.
            self.notify(f"search /{self.search_text} cleared: a new log is open; / searches it")
            self.search_text = ""
            view.set_search(None, [])
        if keep_place is None:
            view.set_following(True)
        view.focus()
        self._update_info()

    @on(StreamFailed)
    def _on_failed(self, message: StreamFailed) -> None:
        self.opening = False
        self.query_one(LogView).set_spool(None, "no log")
        self.query_one("#logs-info", Static).update(Text(f"✗ {message.message}", style=style_of("failed")))

    def _close_stream(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            self._close_worker(stream)

    @work(description="_close_worker", thread=True, exit_on_error=False, group="logs-close")
    def _close_worker(self, stream: LogStream) -> None:
        stream.close(delete_spool=True)

    # -- polling and the info line --------------------------------------------------

    def _poll(self) -> None:
        view = self.query_one(LogView)
        if self.stream is not None:
            view.poll()
            self._update_info()

    def stream_state(self) -> str:
        return self.stream.state if self.stream is not None else ("opening" if self.opening else "closed")

    def dropped_lines(self) -> int:
        """Lines lost between the API and the spool.  The spool appends every line it
        receives (no bounded queue), so this is 0 unless the stream reports otherwise."""
        return int(getattr(self.stream, "dropped_lines", 0) or 0)

    def _update_info(self) -> None:
        view = self.query_one(LogView)
        request = self.request
        info = Text(no_wrap=True, overflow="ellipsis")
        # most important first: narrow terminals cut the end of this line
        if view.following:
            info.append("▶ following", style=style_of("running"))
        else:
            info.append(f"‖ paused (+{view.pending_new} new)", style=style_of("pending"))
        info.append(f" · {view.lines_seen} lines")
        dropped = self.dropped_lines()
        info.append(f" · dropped {dropped}", style=style_of("failed") if dropped else "")
        if self.search_text:
            where = f"{view.hit_index + 1}/{len(view.hits)}" if view.hits else "no match"
            info.append(f" · /{self.search_text} {where}", style="bold")
        flags = [name for name, on_ in (("wrap", view.wrap), ("ts", bool(request and request.timestamps)), ("json", view.json_pretty)) if on_]
        if flags:
            info.append(" · " + " ".join(flags))
        if view.layout_pending:
            info.append(f" (laying out {view.layout_pending} lines…)", style="italic")
        info.append(f" · {self.run_title}", style="bold")
        if request is not None:
            containers = "all containers" if request.all_containers else "default container"
            driver = self.stream.driver_where if self.stream is not None else None
            first = f"driver first ({driver}) · " if driver else ""
            info.append(f" [{first}{containers}{' · previous' if request.previous else ''} · since {SINCE_PRESETS[self.since_index][0]}]")
        info.append(f" · {self.stream_state()}")
        errors = "; ".join(self.stream.errors) if self.stream is not None else ""
        if errors:  # on a line of its own, whole: it often is the only thing to read (p with no previous instance)
            view.empty_reason = f"no lines: {errors}" if view.lines_seen == 0 else ""
            self.query_one("#logs-info", Static).update(Group(info, Text(f"⚠ {errors}", style=style_of("warning"))))
            return
        view.empty_reason = ""
        self.query_one("#logs-info", Static).update(info)

    @on(LogView.FollowChanged)
    def _follow_changed(self) -> None:
        self._update_info()

    # -- toggles --------------------------------------------------------------------

    def action_toggle_follow(self) -> None:
        view = self.query_one(LogView)
        view.set_following(not view.following)
        self._update_info()

    def action_toggle_wrap(self) -> None:
        view = self.query_one(LogView)
        view.set_layout(wrap=not view.wrap)
        self._update_info()

    def action_toggle_json(self) -> None:
        view = self.query_one(LogView)
        view.set_layout(json_pretty=not view.json_pretty)
        self._update_info()

    def _reopen(self, **changes) -> None:
        """The log opened again with ``changes`` (timestamps, since, previous, all containers): a
        paused view stays paused, on the line it showed."""
        if self.request is None:
            self.notify("no log open", severity="warning")
            return
        view = self.query_one(LogView)
        self._keep_place = None if view.following else (view.top_line, view.lines_seen)
        self._open(replace(self.request, **changes), self.run_title)

    def action_toggle_timestamps(self) -> None:
        if self.request is not None:
            self._reopen(timestamps=not self.request.timestamps)

    def action_cycle_since(self) -> None:
        self.since_index = (self.since_index + 1) % len(SINCE_PRESETS)
        if self.request is not None:
            self._reopen(since_seconds=SINCE_PRESETS[self.since_index][1])

    def action_toggle_previous(self) -> None:
        if self.request is not None:
            previous = not self.request.previous
            self._reopen(previous=previous, follow=not previous)

    def action_toggle_all_containers(self) -> None:
        if self.request is not None:
            self._reopen(all_containers=not self.request.all_containers)

    # -- search ---------------------------------------------------------------------

    def action_search(self) -> None:
        # Empty: a new search replaces the last term instead of appending to it.
        lines = self.query(CommandLine)
        if lines:
            lines.first().open("search", "")

    def line_submitted(self, mode: str, text: str) -> None:
        if mode == "search":
            self.run_search(text)
            return
        super().line_submitted(mode, text)

    def run_search(self, text: str) -> None:
        if self._searching is None:
            self._search_before = self.search_text
        else:
            self._searching.set()  # a new search replaces the one running
        self.search_text = text
        view = self.query_one(LogView)
        if not text or view.spool is None:
            self._searching = None
            self.query_one(WorkLine).ended()
            view.set_search(None, [])
            self._update_info()
            return
        self._searching = threading.Event()
        self.query_one(WorkLine).working(f"searching the whole log for /{text}")
        self._search_worker(view.spool, text, self._searching)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_search":  # esc goes back as everywhere unless a search runs
            return self._searching is not None
        return super().check_action(action, parameters)

    def action_stop_search(self) -> None:
        """esc while a search runs: it is told to stop, its hits are never shown, the last search stays."""
        stopped, self._searching = self._searching, None
        if stopped is None:
            return
        stopped.set()
        self.query_one(WorkLine).cancelled(f"search for /{self.search_text} stopped: no match is shown for it")
        self.search_text = self._search_before
        self._update_info()

    @work(description="_search_worker", thread=True, exclusive=True, exit_on_error=False, group="logs-search")
    def _search_worker(self, spool, text: str, stop: threading.Event) -> None:
        """Whole-spool search, off the UI thread (the spool is passed in: no widget access here);
        a search told to stop (esc, or a new one) posts nothing."""
        try:
            pattern = re.compile(text, re.IGNORECASE)
            regex, error = True, ""
        except re.error as err:
            pattern = re.compile(re.escape(text), re.IGNORECASE)
            regex, error = False, f"not a valid regex ({err}); searched as plain text"
        hits = spool.search(text, regex=regex) if spool is not None and not spool.closed else []
        if not stop.is_set():
            self.post_message(SearchDone(pattern, hits, error))

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        self._searching = None
        self.query_one(WorkLine).ended()
        view = self.query_one(LogView)
        view.set_search(message.pattern, message.hits)
        if message.error:
            self.notify(message.error, severity="warning")
        if message.hits:
            view.next_hit()
        else:
            self.notify(f"no line matches {self.search_text!r}", severity="warning")
        self._update_info()

    def action_next_match(self) -> None:
        self.query_one(LogView).next_hit()
        self._update_info()

    def action_previous_match(self) -> None:
        self.query_one(LogView).next_hit(backwards=True)
        self._update_info()

    # -- save -----------------------------------------------------------------------

    def default_save_path(self) -> str:
        name = (self.run_ref or "log").replace("/", "_")
        stamp = self.tau.now().strftime("%Y%m%dT%H%M%SZ")
        return str(state_dir() / "logs" / f"{name}-{stamp}.log")

    def action_save(self) -> None:
        view = self.query_one(LogView)
        if view.spool is None:
            self.notify("no log open", severity="warning")
            return

        spool = view.spool

        def chosen(path: str | None) -> None:
            if path:
                self._save_worker(spool, str(Path(path).expanduser()))

        self.app.push_screen(InputDialog("Save every line of this log to:", self.default_save_path()), chosen)

    @work(description="_save_worker", thread=True, exclusive=True, exit_on_error=False, group="logs-save")
    def _save_worker(self, spool, path: str) -> None:
        if spool is None or spool.closed:
            self.post_message(Saved(path, 0, "no log open"))
            return
        if self.tau.readonly and not _inside(Path(path), state_dir()):
            # Read-only writes no file but the app's own state.
            self.app.call_from_thread(self.tau.block_mutation, "save", path)
            return
        try:
            lines = save_spool(spool, path)
        except OSError as err:
            self.post_message(Saved(path, 0, str(err)))
            return
        self.post_message(Saved(path, lines, note=save_narrowed(path) or ""))

    @on(Saved)
    def _saved(self, message: Saved) -> None:
        if message.error:
            self.notify(f"could not save to {message.path}: {message.error}", severity="error")
            return
        self.last_saved = message.path
        self.notify(f"saved {message.lines} lines to {message.path}" + (f" ({message.note})" if message.note else ""))


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True
