"""Compose pane: a form over tau.yaml grouped as run, runtime, compute, policy,
storage and resilience; live validation with each message next to its field;
the rendered manifests (client dry-run) on a debounce; a profile picker that
offers only ready, applicable profiles and says why each other one is left
out; client dry-run, server dry-run and submit; and a save that keeps the
file's comments and key order."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Select, Static

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.admission_fit import quota_warnings, request_totals, summary_line
from tau_tui.core.operations.evidence.submission import keep_submission
from tau_tui.core.runconfig.diagnostics import (
    MAX_MESSAGES,
    MAX_PART_CHARS,
    Diagnostic,
    DiagnosticError,
    clip,
    escape_control,
    report_lines,
)
from tau_tui.core.runconfig.document import ComposeDocument, SaveRefused
from tau_tui.core.runconfig.loader import load_config_text
from tau_tui.core.runconfig.manifests import to_yaml
from tau_tui.core.runconfig.pipeline import render_run, snapshot_path
from tau_tui.core.runconfig.profiles import Caller, ProfileSet, explain, load_snapshot, profile_set_from_taucluster
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.runconfig.yamlsource import read_text_file
from tau_tui.mutations.mutation import Mutation, describe_result
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.compose_form import FORM, IMPLICIT_PROFILE, QUOTA_FIELDS, Validation, field_for
from tau_tui.screens.messages import FileOpened, FileSaved, ServerDryRunDone, Validated
from tau_tui.widgets.form_field import EntryError, FormField
from tau_tui.widgets.input_dialog import InputDialog
from tau_tui.widgets.status_text import style_of
from tau_tui.widgets.yaml_preview import YamlPreview

DEBOUNCE_S = 0.3

#: Digits type into a focused field, so the form says how to leave it.
KEYS_HINT = "digits type into fields · esc leaves a field, then 1-7 · alt+1-7 anywhere"


class ComposeScreen(PaneScreen):
    PANE = "compose"
    PANE_TITLE = "Compose"
    FILTERS_ROWS = False
    HELP = (
        "Edit a tau.yaml as a form.  Every change is validated at once and each problem is shown under its "
        "field; the right side shows the Job/RayJob manifests it renders to (client dry-run).  The profile "
        "picker offers only profiles that are ready and applicable to the namespace/team/lane in the form; "
        "the others are listed with the reason.  ctrl+r client dry-run, ctrl+t server dry-run (dryRun=All, "
        "nothing is created), ctrl+g submit (server dry-run preview, confirmation, audit log), ctrl+s save "
        "(keeps comments and key order; refuses if it would lose anything), ctrl+o open, ctrl+n new.  "
        "In a field, digits are text: esc leaves the field, then 1-7 switch panes; alt+1..7 switch from anywhere."
    )
    MUTATING_ACTIONS = frozenset({"submit", "save"})  # save writes a file: read-only refuses it too
    VIEW_KINDS = (ResourceKind.TAU_CLUSTER,)
    BINDINGS = [
        Binding("ctrl+r", "client_dry_run", "Client dry-run", id="compose.client_dry_run"),
        Binding("ctrl+t", "server_dry_run", "Server dry-run", id="compose.server_dry_run"),
        Binding("ctrl+g", "submit", "Submit", id="compose.submit"),
        Binding("ctrl+s", "save", "Save", id="compose.save"),
        Binding("ctrl+o", "open", "Open", id="compose.open"),
        Binding("ctrl+n", "new", "New", id="compose.new"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.document = ComposeDocument.new()
        self.validation = Validation(False)
        self._debounce: Timer | None = None
        self._generation = 0
        self._profile_options: list[tuple[str, str]] = []
        #: fields whose text cannot be parsed (not written to the document): path → message
        self._entry_errors: dict[str, str] = {}

    def needs_backend(self) -> bool:
        return False

    def crumbs(self) -> str:
        return f"Compose › {self.document.label}" + (" (modified)" if self.document.dirty else "")

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="compose-main"):
            with VerticalScroll(id="compose-form"):
                yield Static(Text(""), id="compose-file")
                yield Static(Text(KEYS_HINT, style="dim"), id="compose-keys-hint")
                for section, fields in FORM:
                    yield Label(Text(section), classes="section-title")
                    for path, label, kind, placeholder in fields:
                        yield FormField(path, label, kind, placeholder)
                    if section == "policy":
                        with Vertical(id="field-policy-profile", classes="profile-field"):
                            with Horizontal(classes="profile-row"):
                                yield Label("profile", classes="field-label")
                                yield Select([], prompt="(implicit: the unique ready profile)", id="profile-picker",
                                             allow_blank=True, compact=True)
                            yield Static("", classes="field-error", id="profile-error")
                            yield Static(Text(""), id="profile-excluded")
                yield Static(Text(""), id="compose-messages")
                with Horizontal(id="compose-buttons"):
                    yield Button("Client dry-run", id="btn-client", compact=True)
                    yield Button("Server dry-run", id="btn-server", compact=True)
                    yield Button("Submit", id="btn-submit", variant="primary", compact=True)
                    yield Button("Save", id="btn-save", compact=True)
            with Vertical(id="compose-side"):
                yield Label(Text("rendered manifests (client dry-run)"), classes="section-title")
                yield YamlPreview(id="compose-preview")
                yield Static(Text(""), id="compose-result")

    def on_mount(self) -> None:
        super().on_mount()
        if self.tau.readonly:
            self.query_one("#btn-submit", Button).display = False
            self.query_one("#btn-save", Button).display = False
        if self.tau.compose_file:
            self.open_file(self.tau.compose_file)
        else:
            self._show_document()

    # -- document <-> form ----------------------------------------------------------

    def open_file(self, path: str) -> None:
        self._open_worker(path)

    @work(description="_open_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-open")
    def _open_worker(self, path: str) -> None:
        try:
            # The loader's bounded read: a FIFO, /dev/zero or a huge file is refused, never read.
            file = Path(path).expanduser()
            self.post_message(FileOpened(ComposeDocument(read_text_file(file), file)))
        except DiagnosticError as err:
            self.post_message(FileOpened(None, " ".join(report_lines(err.diagnostics, 3))))
        except FileNotFoundError:
            self.post_message(FileOpened(None, f"{path}: no such file"))
        except (OSError, UnicodeDecodeError) as err:
            self.post_message(FileOpened(None, f"{path}: cannot read ({err})"))
        except Exception as err:  # YAML that ruamel cannot load
            self.post_message(FileOpened(None, f"{path}: not valid YAML ({str(err).splitlines()[0]})"))

    @on(FileOpened)
    def _on_file_opened(self, message: FileOpened) -> None:
        if message.document is None:
            error = escape_control(clip(message.error, MAX_PART_CHARS))
            self.notify(error, severity="error")
            # The pane says why there is nothing to show, instead of a preview left on "…".
            self.query_one("#compose-messages", Static).update(Text(f"✗ {error}", style=style_of("failed")))
            self.query_one(YamlPreview).show_text(Text(f"no preview: {error}", style="dim"))
            return
        self.document = message.document
        self._show_document()

    def _show_document(self) -> None:
        self._entry_errors.clear()
        for form_field in self.query(FormField):
            form_field.show_value(self.document.get(form_field.path))
        self._update_file_line()
        self.update_header()
        self._schedule_validation(immediate=True)

    def _update_file_line(self) -> None:
        text = Text()
        text.append("file ", style="dim")
        text.append(self.document.label, style="bold")
        if self.document.dirty:
            text.append("  ● modified", style=style_of("pending"))
        self.query_one("#compose-file", Static).update(text)

    @on(Input.Changed)
    def _on_input_changed(self, event: Input.Changed) -> None:
        form_field = next((a for a in event.input.ancestors if isinstance(a, FormField)), None)
        if form_field is None:
            return
        try:
            value = form_field.parsed_value()
        except EntryError as err:
            # The file keeps its last good value (and its comments); the form says what is wrong.
            self._entry_errors[form_field.path] = str(err)
            form_field.set_messages([("error", str(err))])
            self.validation = Validation(False)
            self._schedule_validation()
            return
        self._entry_errors.pop(form_field.path, None)
        self.document.set(form_field.path, value)
        self._update_file_line()
        self._schedule_validation()

    @on(Select.Changed, "#profile-picker")
    def _on_profile_changed(self, event: Select.Changed) -> None:
        value = event.value
        wanted = None if value in (Select.NULL, IMPLICIT_PROFILE) else str(value)
        if self.document.get("policy.profile") != wanted:
            self.document.set("policy.profile", wanted)
            self._update_file_line()
            self._schedule_validation()

    # -- validation + preview (debounced, in a worker) ------------------------------

    def _schedule_validation(self, immediate: bool = False) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(0.01 if immediate else DEBOUNCE_S, self._validate_now)

    def _validate_now(self) -> None:
        self._generation += 1
        self._validate_worker(self.document.text(), self.document.label, self.document.base_dir, self._generation)

    def _profile_set(self, loaded) -> tuple[ProfileSet | None, str]:
        if loaded is not None:
            snapshot = snapshot_path(loaded, None)
            if snapshot is not None:
                return load_snapshot(snapshot), f"snapshot {snapshot}"
        backend = self.tau.backend
        tau_cluster = backend.tau_cluster() if backend is not None else None
        if tau_cluster is None:
            return None, "no TauCluster/cluster (no cluster connected, or TauGrid not installed)"
        return profile_set_from_taucluster(dict(tau_cluster.raw)), f"TauCluster/cluster generation {tau_cluster.generation}"

    @work(description="_validate_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-validate")
    def _validate_worker(self, text: str, label: str, base_dir: Path, generation: int) -> None:
        # Every run posts a result: a worker that died silently left the preview on "…" for ever.
        try:
            result = self._validation(text, label, base_dir)
        except Exception as err:
            result = Validation(False)
            result.diagnostics.append(Diagnostic(label, f"cannot check this file: {type(err).__name__}: {str(err)[:300]}", hint="fix the file; if it looks right, report this as a bug"))
        self.post_message(Validated(result, generation))

    def _validation(self, text: str, label: str, base_dir: Path) -> Validation:
        result = Validation(False)
        loaded = None
        try:
            loaded = load_config_text(text, label, base_dir)
            result.diagnostics += loaded.warnings
        except DiagnosticError as err:
            result.diagnostics += err.diagnostics
        try:
            profile_set, source = self._profile_set(loaded)
        except DiagnosticError as err:
            profile_set, source = None, "; ".join(str(d) for d in err.diagnostics)
        result.profile_source = source
        if profile_set is not None:
            policy = loaded.config.policy if loaded is not None else None
            namespace = (policy.namespace if policy else None) or self.tau.namespace_name
            team = (policy.team if policy else None) or self.tau.settings.team or os.environ.get("TAU_TEAM")
            lane = (policy.lane if policy else None) or self.tau.settings.lane
            for item in explain(profile_set, Caller(namespace, team, lane)):
                if item.selectable:
                    result.profile_options.append((f"✓ {item.name}", item.name))
                else:
                    result.excluded.append((item.name, "; ".join(item.reasons)))
        if loaded is not None and profile_set is not None:
            try:
                run = render_run(loaded, profile_set, RenderOptions(None, self.tau.settings.team, self.tau.settings.lane))
                result.manifests = run.manifests
                result.manifests_yaml = to_yaml(run.manifests)
                result.submission_id = run.submission_id
                result.rendered = True
                self._check_quota(result, label, loaded.engine)
            except DiagnosticError as err:
                result.diagnostics += err.diagnostics
            except Exception as err:  # a renderer bug must not take the pane down
                result.diagnostics.append(Diagnostic(label, f"rendering failed: {type(err).__name__}: {err}"))
        result.ok = result.rendered and not any(d.severity == "error" for d in result.diagnostics)
        return result

    def _check_quota(self, result: Validation, label: str, engine: str) -> None:
        """Warn (next to the field) when no flavor of the queue's ClusterQueue can ever hold the request."""
        totals = request_totals(result.manifests)
        result.request_summary = summary_line(totals)
        backend = self.tau.backend
        if backend is None:
            return
        result.quota_warnings = quota_warnings(totals, backend.local_queues(totals.namespace or None), backend.cluster_queues())
        for warning in result.quota_warnings:
            resource = warning.split(" ", 1)[0]
            path = QUOTA_FIELDS.get(resource) or ("compute.gpus" if engine == "job" else "compute.gpus_per_worker")
            result.diagnostics.append(Diagnostic(label, warning, path=path, severity="warning",
                                                 hint="ask for less, or pick a profile/queue with more quota"))

    @on(Validated)
    def _on_validated(self, message: Validated) -> None:
        if message.generation != self._generation:
            return  # an older edit's result
        result = message.result
        if self._entry_errors:
            result.ok = False  # a field's text is not in the file yet
        self.validation = result
        by_field: dict[str, list[tuple[str, str]]] = {path: [("error", text)] for path, text in self._entry_errors.items()}
        general: list[Diagnostic] = []
        for diagnostic in result.diagnostics:
            target = field_for(diagnostic.path)
            # Messages echo file content: escaped and clipped like on the command line.
            text = escape_control(clip(diagnostic.message + (f" (fix: {diagnostic.hint})" if diagnostic.hint else ""), MAX_PART_CHARS))
            if diagnostic.path and target and diagnostic.path != target and not diagnostic.path.startswith(target):
                text = f"{escape_control(diagnostic.path)}: {text}"
            if target is None:
                general.append(diagnostic)
            else:
                by_field.setdefault(target, []).append((diagnostic.severity, text))
        for form_field in self.query(FormField):
            form_field.set_messages(by_field.get(form_field.path, []))
        profile_error = self.query_one("#profile-error", Static)
        profile_messages = by_field.get("policy.profile", [])
        profile_error.update(Text("\n".join(f"✗ {t}" for _, t in profile_messages), style=style_of("failed")))
        profile_error.display = bool(profile_messages)
        self._update_profiles(result)
        messages = Text()
        if general:
            for d in general[:MAX_MESSAGES]:
                messages.append(("✗ " if d.severity == "error" else "⚠ ") + str(d).replace("\n  fix:", " fix:") + "\n",
                                style=style_of("failed" if d.severity == "error" else "warning"))
            if len(general) > MAX_MESSAGES:
                messages.append(f"… and {len(general) - MAX_MESSAGES:,} more\n", style=style_of("failed"))
        errors = sum(1 for d in result.diagnostics if d.severity == "error") + len(self._entry_errors)
        if result.ok:
            messages.append(f"✓ valid · {len(result.manifests)} manifest(s) · submission id {result.submission_id}",
                            style=style_of("done"))
        else:
            messages.append(f"✗ {errors} problem(s); see the messages under the fields", style=style_of("failed"))
        self.query_one("#compose-messages", Static).update(messages)
        preview = self.query_one(YamlPreview)
        if result.rendered:
            preview.show_yaml(result.manifests_yaml, self.app.current_theme.dark)
        else:
            preview.show_text(Text("no preview: fix the problems on the left", style="dim"))
        self.update_header()

    def _update_profiles(self, result: Validation) -> None:
        picker = self.query_one("#profile-picker", Select)
        current = self.document.get("policy.profile")
        options = list(result.profile_options)
        if current and current not in [v for _, v in options]:
            options.append((f"✗ {current} (not usable)", current))
        if options != self._profile_options:
            self._profile_options = options
            with picker.prevent(Select.Changed):
                picker.set_options(options)
        with picker.prevent(Select.Changed):
            picker.value = current if current else Select.NULL
        excluded = Text()
        excluded.append(f"profiles from {result.profile_source}\n", style="dim")
        for name, why in result.excluded:
            excluded.append(f"✗ {name}: ", style=style_of("failed"))
            excluded.append(f"{why}\n")
        if not result.profile_options:
            excluded.append("no profile is ready and applicable to this namespace/team/lane\n", style=style_of("warning"))
        self.query_one("#profile-excluded", Static).update(excluded)

    # -- actions ------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"btn-client": self.action_client_dry_run, "btn-server": self.action_server_dry_run,
                   "btn-submit": self.action_submit, "btn-save": self.action_save}
        handler = actions.get(event.button.id or "")
        if handler:
            handler()

    def _result_line(self, text: str, ok: bool) -> None:
        self.query_one("#compose-result", Static).update(Text(text, style=style_of("done" if ok else "failed")))

    def action_client_dry_run(self) -> None:
        v = self.validation
        if v.ok:
            kinds = ", ".join(f"{m.get('kind')} {m.get('metadata', {}).get('namespace', '')}/{m.get('metadata', {}).get('name', '')}"
                              for m in v.manifests)
            self._result_line(f"✓ client dry-run: renders {kinds}", True)
        else:
            self._result_line("✗ client dry-run: the file has problems (see the form)", False)

    def action_server_dry_run(self) -> None:
        if not self.validation.ok:
            self._result_line("✗ server dry-run needs a valid file first", False)
            return
        if self.tau.backend is None:
            self._result_line("✗ no cluster connected", False)
            return
        self._result_line("… server dry-run (dryRun=All)", True)
        self._server_dry_run_worker(list(self.validation.manifests))

    @work(description="_server_dry_run_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-server-dry-run")
    def _server_dry_run_worker(self, manifests: list[dict]) -> None:
        backend = self.tau.backend
        try:
            ok, text = describe_result(backend.submit(manifests, dry_run=True)) if backend else (False, "no cluster")
        except Exception as err:
            ok, text = False, getattr(err, "message", None) or str(err)
        self.post_message(ServerDryRunDone(ok, text))

    @on(ServerDryRunDone)
    def _on_server_dry_run(self, message: ServerDryRunDone) -> None:
        self._result_line(("✓ server dry-run passed:\n" if message.ok else "✗ server dry-run failed:\n") + message.text, message.ok)

    def action_back(self) -> bool:
        """Esc in a field leaves the field (digits then switch panes); otherwise the usual back."""
        if isinstance(self.focused, Input):
            self.set_focus(None)
            return True
        return super().action_back()

    def action_submit(self) -> None:
        # The confirmation hands focus back to what had it: not a field, so a digit typed
        # after the submit switches panes instead of editing the form.
        self.set_focus(None)
        if self.tau.readonly:
            self.tau.block_mutation("submit", self.document.label)
            return
        v = self.validation
        if not v.ok:
            self._result_line("✗ cannot submit: fix the problems first", False)
            return
        manifests = list(v.manifests)
        main = manifests[-1] if manifests else {}
        meta = main.get("metadata", {})
        target = f"{main.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}"

        tau_yaml, tau_yaml_path = self.document.text(), str(self.document.path) if self.document.path else None

        def run(dry_run: bool):  # a worker thread
            backend = self.tau.backend
            assert backend is not None
            results = backend.submit(manifests, dry_run=dry_run)
            if not dry_run and results and all(r.ok for r in results):
                # The cluster keeps no tau.yaml: the run's evidence record takes it from here.
                try:
                    keep_submission(self.tau.evidence, manifests, v.submission_id, tau_yaml, tau_yaml_path,
                                    source="app", now=self.tau.now())
                except (OSError, sqlite3.Error) as err:  # the run exists; only its evidence lacks the tau.yaml
                    self.app.call_from_thread(self.notify, f"submitted, but the tau.yaml was not kept for its "
                                              f"evidence record: {err}", severity="warning", timeout=10)
            return results

        def done(ok: bool, text: str) -> None:
            self._result_line(("✓ submitted:\n" if ok else "✗ submit failed:\n") + text, ok)

        def affected() -> list[str]:
            backend = self.tau.backend
            totals = request_totals(manifests)
            who = ((backend.who_am_i() if backend is not None else None) or {}).get("username")
            lines = [summary_line(totals),
                     f"queue {totals.namespace}/{totals.queue or '(none)'}; submitted as {who or 'unknown identity'}"]
            if backend is not None:
                lines += [f"⚠ {w}" for w in quota_warnings(totals, backend.local_queues(totals.namespace or None),
                                                            backend.cluster_queues())]
            return lines

        self.tau.request_mutation(Mutation(
            verb="submit", target=target,
            title=f"Submit {target} (submission id {v.submission_id})?",
            run=run, namespace=meta.get("namespace"), on_done=done, affected=affected,
        ))

    def action_save(self) -> None:
        if self.tau.readonly:
            self.tau.block_mutation("save", str(self.document.path or "a new tau.yaml"))
            return
        if self.document.path is None:
            def save_as(path: str | None) -> None:
                if path:
                    self._save_worker(path)
            self.app.push_screen(InputDialog("Save the new tau.yaml as:", str(Path.cwd() / "tau.yaml")), save_as)
            return
        self._save_worker(None)

    @work(description="_save_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-save")
    def _save_worker(self, path: str | None) -> None:
        try:
            if path is not None and Path(path).expanduser().exists() and self.document.path != Path(path).expanduser():
                raise SaveRefused(f"{path} exists; open it (ctrl+o) to edit it, or choose another name")
            saved = self.document.save(Path(path).expanduser() if path else None)
        except SaveRefused as err:
            self.post_message(FileSaved(path or str(self.document.path), str(err)))
            return
        except OSError as err:
            self.post_message(FileSaved(path or str(self.document.path), f"cannot write: {err}"))
            return
        self.post_message(FileSaved(str(saved)))

    @on(FileSaved)
    def _on_saved(self, message: FileSaved) -> None:
        if message.error:
            self.notify(message.error, title="not saved", severity="error", timeout=10)
            return
        self.notify(f"saved {message.path}")
        self._update_file_line()
        self.update_header()

    def action_open(self) -> None:
        self.app.push_screen(InputDialog("Open tau.yaml:", str(self.document.path or Path.cwd() / "tau.yaml")),
                             lambda path: self.open_file(path) if path else None)

    def action_new(self) -> None:
        self.document = ComposeDocument.new()
        self._show_document()
