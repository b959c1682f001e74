"""Compose pane: a form over tau.yaml grouped as run, runtime, compute, policy,
storage and resilience; live validation with each message next to its field;
the rendered manifests (client dry-run) on a debounce; a profile picker that
offers only ready, applicable profiles and says why each other one is left
out; client dry-run, server dry-run and submit; and a save that keeps the
file's comments and key order."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Select, Static

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.admission_fit import quota_warnings, request_totals, summary_line
from tau_tui.core.operations.compose_drafts import find_draft
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
from tau_tui.core.runconfig.document import ComposeDocument, EditRefused
from tau_tui.core.runconfig.form_text import EntryError
from tau_tui.core.runconfig.yamlsource import read_text_file
from tau_tui.mutations.mutation import Mutation, describe_result
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.compose_check import ComposeCheck, form_policy
from tau_tui.screens.compose_form import FORM, IMPLICIT_PROFILE, Validation, field_for
from tau_tui.screens.compose_save import ComposeKeeper, write_document
from tau_tui.screens.messages import DraftFound, FileOpened, FileSaved, ServerDryRunDone, Validated
from tau_tui.widgets.form_field import FormField
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
        "(writes only the keys you changed, in place; a field that cannot be written is named and nothing is "
        "written), ctrl+o open, ctrl+n new.  Before ctrl+o, ctrl+n or a quit, changes not saved ask: save, "
        "discard or cancel.  If the app ends without asking (a signal, a crash), the form is kept as a draft "
        "and offered the next time the file is opened.  "
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
        self._validated_generation = 0
        self._validation_pending = False
        self._profile_options: list[tuple[str, str]] = []
        #: fields whose text cannot be parsed (not written to the document): path → message
        self.entry_errors: dict[str, str] = {}
        #: what each field shows (path → text), kept as it changes: a draft at a crash reads it here
        self.field_texts: dict[str, str] = {}
        #: what runs once a validation of the form as it is now arrives (ctrl+r, ctrl+t, ctrl+g)
        self._when_validated: list[Callable[[], None]] = []
        self.keeper = ComposeKeeper(self)

    def needs_backend(self) -> bool:
        return False

    def crumbs(self) -> str:
        return f"Compose › {self.document.label}" + (" (modified)" if self.keeper.has_unsaved_work() else "")

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
        self.check = ComposeCheck(self.tau)
        self.tau.register_unsaved_work(self.keeper)
        if self.tau.readonly:
            self.query_one("#btn-submit", Button).display = False
            self.query_one("#btn-save", Button).display = False
        if self.tau.compose_file:
            self.open_file(self.tau.compose_file)
        else:
            self.new_document()

    # -- document <-> form ----------------------------------------------------------

    def open_file(self, path: str) -> None:
        """Read ``path`` and the draft kept for it, in a worker."""
        self._open_worker(path)

    def new_document(self) -> None:
        self.document = ComposeDocument.new()
        self.show_document()
        self._new_draft_worker()

    @work(description="_new_draft_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-open")
    def _new_draft_worker(self) -> None:
        draft = find_draft(None)
        if draft is not None:
            self.post_message(DraftFound(draft))

    @on(DraftFound)
    def _on_draft_found(self, message: DraftFound) -> None:
        if self.document.path is None:
            self.keeper.offer_draft(message.draft)

    @work(description="_open_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-open")
    def _open_worker(self, path: str) -> None:
        try:
            # The loader's bounded read: a FIFO, /dev/zero or a huge file is refused, never read.
            file = Path(path).expanduser()
            self.post_message(FileOpened(ComposeDocument(read_text_file(file), file), draft=find_draft(file)))
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
        self.show_document()
        if message.draft is not None:
            self.keeper.offer_draft(message.draft)

    def show_document(self, validate: bool = True) -> None:
        self.entry_errors.clear()
        for form_field in self.query(FormField):
            form_field.show_value(self.document.get(form_field.path))
            self.field_texts[form_field.path] = form_field.input.value
        self.document_changed()
        if validate:
            self._schedule_validation(immediate=True)

    def document_changed(self) -> None:
        """The file line and the header follow the document (its name, whether it differs)."""
        text = Text()
        if self.keeper.has_unsaved_work():  # first: a long path must not push it out of sight
            text.append("● modified  ", style=style_of("pending"))
        text.append("file ", style="dim")
        text.append(self.document.label, style="bold")
        self.query_one("#compose-file", Static).update(text)
        self.update_header()

    @on(Input.Changed)
    def _on_input_changed(self, event: Input.Changed) -> None:
        form_field = next((a for a in event.input.ancestors if isinstance(a, FormField)), None)
        if form_field is None:
            return
        self.field_texts[form_field.path] = event.value
        try:
            self.document.set(form_field.path, form_field.parsed_value())
        except (EntryError, EditRefused) as err:
            # The file keeps its last good value (and its comments); the form says what is wrong.
            self.entry_errors[form_field.path] = str(err)
            form_field.set_messages([("error", str(err))])
            self.validation = Validation(False)
        else:
            self.entry_errors.pop(form_field.path, None)
        self.document_changed()
        self._schedule_validation()

    @on(Select.Changed, "#profile-picker")
    def _on_profile_changed(self, event: Select.Changed) -> None:
        value = event.value
        self.set_profile(None if value in (Select.NULL, IMPLICIT_PROFILE) else str(value))

    def set_profile(self, wanted: str | None) -> None:
        if self.document.get("policy.profile") != wanted:
            self.document.set("policy.profile", wanted)
            self.document_changed()
            self._schedule_validation()

    def set_field_text(self, path: str, text: str) -> None:
        """``text`` into the field of ``path``: it goes through the form as typed keys do."""
        for form_field in self.query(FormField):
            if form_field.path == path:
                form_field.input.value = text
                return

    # -- validation + preview (debounced, in a worker) ------------------------------

    def _schedule_validation(self, immediate: bool = False) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._validation_pending = True
        self._debounce = self.set_timer(0.01 if immediate else DEBOUNCE_S, self._validate_now)

    def _validate_now(self) -> None:
        self._validation_pending = False
        self._generation += 1
        self._validate_worker(self.document.text(), self.document.label, self.document.base_dir, self._generation,
                              form_policy(self.document.get))

    def _validated_as_shown(self) -> bool:
        """Whether the last validation is of the form as it is now (no key typed since)."""
        return (not self._validation_pending and self._validated_generation == self._generation
                and self.validation.text == self.document.text())

    def _after_validation(self, action: Callable[[], None]) -> None:
        """``action`` once a validation of the form as it is now is in: never on a result from before the last key."""
        if self._validated_as_shown():
            action()
            return
        self._when_validated.append(action)
        self._schedule_validation(immediate=True)

    @work(description="_validate_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-validate")
    def _validate_worker(self, text: str, label: str, base_dir: Path, generation: int, policy) -> None:
        # Every run posts a result: a worker that died silently left the preview on "…" for ever.
        try:
            result = self.check.check(text, label, base_dir, policy)
        except Exception as err:
            result = Validation(False, text=text)
            result.diagnostics.append(Diagnostic(label, f"cannot check this file: {type(err).__name__}: {str(err)[:300]}", hint="fix the file; if it looks right, report this as a bug"))
        self.post_message(Validated(result, generation))

    def apply(self, data: Any) -> None:
        """The pane's tick: the profiles' source moved (the cluster connected, the TauCluster view
        listed or changed) since the form was validated: validate again."""
        if (0 < self._validated_generation == self._generation
                and self.validation.profile_key != self.check.profile_key()):
            self._schedule_validation(immediate=True)

    @on(Validated)
    def _on_validated(self, message: Validated) -> None:
        if message.generation != self._generation:
            return  # an older edit's result
        self._validated_generation = message.generation
        result = message.result
        if self.entry_errors:
            result.ok = False  # a field's text is not in the file yet
        self.validation = result
        by_field: dict[str, list[tuple[str, str]]] = {path: [("error", text)] for path, text in self.entry_errors.items()}
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
        errors = sum(1 for d in result.diagnostics if d.severity == "error") + len(self.entry_errors)
        if result.ok:
            messages.append(f"✓ valid · {len(result.manifests)} manifest(s) · submission id {result.submission_id}",
                            style=style_of("done"))
        else:
            messages.append(f"✗ {errors} problem(s); see the messages under the fields", style=style_of("failed"))
        self.query_one("#compose-messages", Static).update(messages)
        preview = self.query_one(YamlPreview)
        if result.rendered:
            preview.show_yaml(result.manifests_yaml, self.app.current_theme.dark)
        elif result.waiting:
            preview.show_text(Text(f"no preview yet: {result.profile_source}; it renders once the profiles are in",
                                   style="dim"))
        else:
            preview.show_text(Text("no preview: fix the problems on the left", style="dim"))
        self.update_header()
        if not self._validated_as_shown():
            return  # keys came since: their validation is on its way
        waiting, self._when_validated = self._when_validated, []
        for action in waiting:
            action()

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
        if not result.profile_options and not result.waiting and result.profile_source.startswith(("TauCluster", "snapshot")):
            excluded.append("no profile is ready and applicable to this namespace/team/lane\n", style=style_of("warning"))
        self.query_one("#profile-excluded", Static).update(excluded)

    # -- actions ------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"btn-client": self.action_client_dry_run, "btn-server": self.action_server_dry_run,
                   "btn-submit": self.action_submit, "btn-save": self.action_save}
        handler = actions.get(event.button.id or "")
        if handler:
            handler()

    def show_result(self, text: str, ok: bool) -> None:
        self.query_one("#compose-result", Static).update(Text(text, style=style_of("done" if ok else "failed")))

    def action_client_dry_run(self) -> None:
        """ctrl+r: validate now, with the profiles as they are now, and say what it renders."""
        self.show_result("… client dry-run", True)
        self._when_validated.append(self._report_client_dry_run)
        self._schedule_validation(immediate=True)

    def _report_client_dry_run(self) -> None:
        v = self.validation
        if v.ok:
            kinds = ", ".join(f"{m.get('kind')} {m.get('metadata', {}).get('namespace', '')}/{m.get('metadata', {}).get('name', '')}"
                              for m in v.manifests)
            self.show_result(f"✓ client dry-run: renders {kinds}", True)
        elif v.waiting:
            self.show_result(f"✗ client dry-run: {v.profile_source}", False)
        else:
            self.show_result("✗ client dry-run: the file has problems (see the form)", False)

    def action_server_dry_run(self) -> None:
        self._after_validation(self._server_dry_run_now)

    def _server_dry_run_now(self) -> None:
        if not self.validation.ok:
            self.show_result("✗ server dry-run needs a valid file first", False)
            return
        if self.tau.backend is None:
            self.show_result("✗ no cluster connected", False)
            return
        self.show_result("… server dry-run (dryRun=All)", True)
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
        self.show_result(("✓ server dry-run passed:\n" if message.ok else "✗ server dry-run failed:\n") + message.text, message.ok)

    def action_back(self) -> bool:
        """Esc in a field leaves the field (digits then switch panes); otherwise the usual back."""
        if isinstance(self.focused, Input):
            self.set_focus(None)
            return True
        return super().action_back()

    def action_submit(self) -> None:
        if self.tau.readonly:
            self.tau.block_mutation("submit", self.document.label)
            return
        self._after_validation(self._submit_now)

    def _submit_now(self) -> None:
        v = self.validation
        if not v.ok:  # refused: focus stays where it was, so typing goes on into the field
            self.show_result("✗ cannot submit: fix the problems first", False)
            return
        # The confirmation hands focus back to what had it: not a field, so a digit typed
        # after the submit switches panes instead of editing the form.
        self.set_focus(None)
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
            self.show_result(("✓ submitted:\n" if ok else "✗ submit failed:\n") + text, ok)

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
        self.keeper.save()

    def save_in_worker(self, path: str | None) -> None:
        """Write the form as it is now; keys typed while it writes stay edits of the saved file."""
        self._save_worker(self.document, self.document.snapshot(), path)

    @work(description="_save_worker", thread=True, exclusive=True, exit_on_error=False, group="compose-save")
    def _save_worker(self, source: ComposeDocument, snapshot: ComposeDocument, path: str | None) -> None:
        message = write_document(snapshot, path)
        message.source = source
        self.post_message(message)

    @on(FileSaved)
    def _on_saved(self, message: FileSaved) -> None:
        self.keeper.saved(message)

    def action_open(self) -> None:
        def ask_for_a_file() -> None:
            self.app.push_screen(InputDialog("Open tau.yaml:", str(self.document.path or Path.cwd() / "tau.yaml")),
                                 lambda path: self.open_file(path) if path else None)

        self.keeper.ask_then("open another file", ask_for_a_file)

    def action_new(self) -> None:
        self.keeper.ask_then("start a new form", self.new_document)
