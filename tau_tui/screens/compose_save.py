"""The Compose form's unsaved work: saving it, asking before it is replaced or the app quits, and
keeping it as a draft when the app ends without asking (SIGTERM, SIGHUP, a crash).

The form differs from its file when the document has edits or a field holds text that cannot be
written (``env`` = ``5``).  Save writes exactly the form or nothing: a field that cannot be written
refuses the save and is named; a value written as typed that will not validate is saved with a
warning that says so.  Before ``ctrl+n``, ``ctrl+o`` or a quit, a form that differs asks save /
discard / cancel and says which file and which keys; cancel leaves everything as it was (focus
too).  A draft kept when the app ended is offered on the next open of its file: restore (the
draft's field texts are typed into the form again), discard, or keep for later."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from tau_tui.core.operations.compose_drafts import Draft, keep_draft, remove_draft
from tau_tui.core.runconfig.diagnostics import DiagnosticError, clip, escape_control
from tau_tui.core.runconfig.document import ComposeDocument, SaveRefused
from tau_tui.core.runconfig.form_text import field_text
from tau_tui.core.runconfig.loader import load_config_text
from tau_tui.screens.messages import FileSaved
from tau_tui.widgets.choice_dialog import Choice, ChoiceDialog
from tau_tui.widgets.input_dialog import InputDialog

if TYPE_CHECKING:
    from textual.app import App
    from textual.notifications import SeverityLevel

    from tau_tui.screens.host import PaneHost

#: How much of a value the dialogs show.
VALUE_CHARS = 40
#: How many changed keys the dialogs list.
LISTED_KEYS = 12
#: Problems a "saved, but it will not validate" warning names.
WARNED_PROBLEMS = 3


def _shown(text: str) -> str:
    return repr(escape_control(clip(text, VALUE_CHARS))) if text else "(empty)"


def will_not_validate(text: str, label: str, base_dir: Path) -> str:
    """Why ``text`` will not load as a run config ("" when it will).  Worker threads."""
    try:
        load_config_text(text, label, base_dir)
    except DiagnosticError as err:
        errors = [d for d in err.diagnostics if d.severity == "error"] or err.diagnostics
        named = [f"{d.path or label}: {d.message}" for d in errors[:WARNED_PROBLEMS]]
        more = f" (and {len(errors) - WARNED_PROBLEMS} more)" if len(errors) > WARNED_PROBLEMS else ""
        return escape_control(clip("; ".join(named) + more, 400))
    return ""


def write_document(snapshot: ComposeDocument, path: str | None) -> FileSaved:
    """Worker thread: write ``snapshot`` (to ``path``, or its own file) and forget its drafts."""
    target = Path(path).expanduser() if path else snapshot.path
    shown = str(target or "a new tau.yaml")
    try:
        if path is not None and target is not None and target.exists() and snapshot.path != target:
            raise SaveRefused(f"{path} exists; open it (ctrl+o) to edit it, or choose another name")
        was_new = snapshot.path is None
        saved = snapshot.save(target)
    except SaveRefused as err:
        return FileSaved(shown, str(err))
    except OSError as err:
        return FileSaved(shown, f"cannot write: {err}")
    for draft_of in ([None] if was_new else []) + [saved]:
        try:
            remove_draft(draft_of)
        except OSError:
            pass  # a draft that stays is offered again, never lost
    warning = will_not_validate(snapshot.text(), str(saved), saved.resolve().parent)
    return FileSaved(str(saved), saved=snapshot, warning=warning)


class KeptForm(Protocol):
    """What the keeper needs of its Compose pane (the pane imports the keeper, not the other way)."""

    document: ComposeDocument
    #: path -> why a field's text cannot be written
    entry_errors: dict[str, str]
    #: path -> what each field shows, kept as typed (the widgets are gone at a crash)
    field_texts: dict[str, str]

    @property
    def tau(self) -> PaneHost: ...
    @property
    def app(self) -> App[Any]: ...
    def notify(self, message: str, *, title: str = ..., severity: SeverityLevel = ...,
               timeout: float | None = ...) -> None: ...
    def show_document(self, validate: bool = True) -> None: ...
    def show_result(self, text: str, ok: bool) -> None: ...
    def document_changed(self) -> None: ...
    def set_profile(self, wanted: str | None) -> None: ...
    def set_field_text(self, path: str, text: str) -> None: ...
    def save_in_worker(self, path: str | None) -> None: ...


class ComposeKeeper:
    """The unsaved-work side of one Compose pane (registered with the app's quit guard)."""

    def __init__(self, screen: KeptForm) -> None:
        self.screen = screen
        #: What runs once the save under way is written (the guard's "save, then quit").
        self._after_save: Callable[[], None] | None = None
        self.asking = False

    # -- what differs -------------------------------------------------------------------------------

    @property
    def document(self) -> ComposeDocument:
        return self.screen.document

    def has_unsaved_work(self) -> bool:
        return self.document.dirty or bool(self.screen.entry_errors)

    def field_texts(self) -> dict[str, str]:
        """What each field that differs from the file shows (the profile's value for the picker).
        From the screen's record of the fields, not its widgets: at a crash they are gone already."""
        shown = self.screen.field_texts
        texts = {path: shown.get(path, "") for path in [*self.document.edits, *self.screen.entry_errors]
                 if path != "policy.profile"}
        if "policy.profile" in self.document.edits:
            texts["policy.profile"] = field_text(self.document.edits["policy.profile"])
        return texts

    def difference_lines(self) -> list[str]:
        lines = [f"{change.written}: {_shown(change.before)} → {_shown(change.after)}" for change in self.document.changes()]
        lines += [f"{path}: {_shown(self.field_texts().get(path, ''))} cannot be written ({escape_control(clip(why, 80))})"
                  for path, why in self.screen.entry_errors.items()]
        if len(lines) > LISTED_KEYS:
            lines = [*lines[:LISTED_KEYS], f"… and {len(lines) - LISTED_KEYS} more"]
        return lines

    # -- save -------------------------------------------------------------------------------------

    def save(self, then: Callable[[], None] | None = None) -> None:
        """ctrl+s (and the guard's Save): write exactly the form, or say why not and write nothing."""
        screen = self.screen
        if screen.tau.readonly:
            screen.tau.block_mutation("save", str(self.document.path or "a new tau.yaml"))
            return
        if screen.entry_errors:
            named = "; ".join(f"{path}: {why}" for path, why in screen.entry_errors.items())
            self.refused(f"{named}. Fix the field(s) first; {self.document.label} is unchanged")
            return
        if self.document.path is None:
            def save_as(path: str | None) -> None:
                if path:
                    self._write(path, then)
            screen.app.push_screen(InputDialog("Save the new tau.yaml as:", str(Path.cwd() / "tau.yaml")), save_as)
            return
        self._write(None, then)

    def _write(self, path: str | None, then: Callable[[], None] | None) -> None:
        self._after_save = then
        self.screen.save_in_worker(path)

    def refused(self, why: str) -> None:
        text = escape_control(clip(why, 600))
        self.screen.notify(text, title="not saved", severity="error", timeout=10)
        self.screen.show_result(f"✗ not saved: {text}", False)

    def saved(self, message: FileSaved) -> None:
        """UI thread: the save's outcome.  The file now reads as written; keys typed since stay edits."""
        then, self._after_save = self._after_save, None
        if message.error:
            self.refused(message.error)
            return
        if message.saved is not None and message.source is self.document:
            self.screen.entry_errors.update(self.document.adopt_save(message.saved))
        if message.warning:
            text = f"saved {message.path}, as typed; it will not validate: {message.warning}"
            self.screen.notify(text, title="saved with problems", severity="warning", timeout=12)
            self.screen.show_result(f"⚠ {text}", False)
        else:
            self.screen.notify(f"saved {message.path}")
            self.screen.show_result(f"✓ saved {message.path}", True)
        self.screen.document_changed()
        if then is not None:
            then()

    # -- before the form is replaced or the app quits --------------------------------------------------

    def ask_then(self, doing: str, proceed: Callable[[], None]) -> None:
        """``proceed`` now if the form is its file; else save / discard / cancel first."""
        if not self.has_unsaved_work():
            proceed()
            return
        if self.asking:
            return  # the question is on screen already
        readonly = self.screen.tau.readonly
        body = Text()
        body.append(f"{self.document.label}", style="bold")
        body.append(" differs from the form:\n")
        for line in self.difference_lines():
            body.append(f"  {line}\n")
        if readonly:
            body.append(f"\nread-only mode: saving is disabled ({self.screen.tau.readonly_reason}).\n")
        body.append(f"\nBefore you {doing}: " + ("discard the changes, or cancel?" if readonly
                                                 else "save the changes, discard them, or cancel?"))
        choices = [] if readonly else [Choice("save", "Save", "s", "primary")]
        choices += [Choice("discard", "Discard", "d", "error"), Choice("cancel", "Cancel", "escape")]

        def answered(answer: str | None) -> None:
            self.asking = False
            if answer == "save":
                self.save(then=proceed)
            elif answer == "discard":
                self.discard()
                proceed()

        self.asking = True
        self.screen.app.push_screen(ChoiceDialog(f"Unsaved changes in {self.document.label}", body, choices,
                                                 escape_answer="cancel"), answered)

    def discard(self) -> None:
        """The form reads as its file again, and no draft of it is kept."""
        file = self.document.path
        self.screen.entry_errors.clear()
        self.document.revert()
        self.screen.show_document(validate=True)
        self.forget_draft(file)

    def forget_draft(self, file: Path | None) -> None:
        try:  # one unlink, at once: a quit may follow, and a stale draft would be offered again
            remove_draft(file)
        except OSError as err:
            self.screen.notify(f"the draft of {file or 'the new tau.yaml'} was not removed: {err}", severity="warning")

    # -- drafts -------------------------------------------------------------------------------------

    def keep_draft(self, reason: str) -> Path | None:
        """The app ends without asking: keep the form as a draft (nothing when it is its file)."""
        if not self.has_unsaved_work():
            return None
        file = self.document.path
        return keep_draft(Draft(file=os.path.abspath(file) if file else None, fields=self.field_texts(),
                                text=self.document.text(), base_sha256=self.document.original_hash,
                                kept_at=datetime.now(UTC).isoformat(timespec="seconds"), reason=reason))

    def offer_draft(self, draft: Draft) -> None:
        """On open: the draft a session that ended kept for this file."""
        document = self.document
        body = Text()
        body.append(f"A draft of {document.label} was kept {draft.kept_at} ({draft.reason}). It differs from the file:\n")
        for path, text in list(draft.fields.items())[:LISTED_KEYS]:
            body.append(f"  {document.written_path(path)}: {_shown(field_text(document.saved_value(path)))} → {_shown(text)}\n")
        if draft.base_sha256 != document.original_hash:
            body.append("\nThe file changed on disk since the draft was kept: restoring sets these keys over the file "
                        "as it is now.\n")
        body.append("\nRestore the draft into the form, discard it, or keep it for later?")

        def answered(answer: str | None) -> None:
            if answer == "restore":
                self.restore(draft)
            elif answer == "discard":
                self.forget_draft(document.path)

        self.screen.app.push_screen(ChoiceDialog(
            f"Draft of {document.label}", body,
            [Choice("restore", "Restore", "r", "primary"), Choice("discard", "Discard", "d", "error"),
             Choice("later", "Keep for later", "escape")],
            escape_answer="later", focused_answer="restore"), answered)

    def restore(self, draft: Draft) -> None:
        """The draft's texts typed into their fields again (they go through the form as keys do)."""
        for path, text in draft.fields.items():
            if path == "policy.profile":
                self.screen.set_profile(text or None)
                continue
            self.screen.set_field_text(path, text)
        self.screen.notify(f"draft restored into the form: {', '.join(draft.fields)}; save with ctrl+s")
