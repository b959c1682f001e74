"""Driving the Compose pane as a person does: the form opened, fields typed into with keys, the
dialogs the form asks with read back from the screen."""

from __future__ import annotations

from tau_tui.screens.compose import ComposeScreen
from tau_tui.widgets.form_field import FormField
from tests.app.helpers import settle_until_done


def field_id(path: str) -> str:
    return "#field-" + path.replace(".", "-").replace("_", "-")


def field_input(screen: ComposeScreen, path: str):
    return screen.query_one(field_id(path), FormField).input


async def form_ready(pilot, file_value: tuple[str, str] | None = ("run.name", "snap-train")) -> ComposeScreen:
    """The Compose pane on screen with its file in the form and validated once."""
    app = pilot.app
    await settle_until_done(pilot, lambda: isinstance(app.screen, ComposeScreen), "the Compose pane")
    screen = app.screen
    assert isinstance(screen, ComposeScreen)
    if file_value is not None:
        path, value = file_value
        await settle_until_done(pilot, lambda: field_input(screen, path).value == value, f"{path} = {value!r} in the form")
    await settle_until_done(pilot, lambda: screen.validation.text == screen.document.text(), "the first validation")
    return screen


async def type_into(pilot, screen: ComposeScreen, path: str, text: str, clear: bool = True) -> None:
    """Focus the field of ``path`` (a click would too), clear it with ctrl+u, and type ``text`` key by key."""
    field_input(screen, path).focus()
    await pilot.pause()
    keys = ["end", "ctrl+u"] if clear else ["end"]
    await pilot.press(*keys, *list(text))


def file_line(screen: ComposeScreen) -> str:
    return str(screen.query_one("#compose-file").render())


def is_question(screen) -> bool:
    """A dialog with named answers (widgets/choice_dialog.py), told by its name: the tests run on
    trees that lack it too, and fail there on what they wait for, not on an import."""
    return type(screen).__name__ == "ChoiceDialog"


def dialog_text(app) -> str:
    screen = app.screen
    assert is_question(screen), type(screen).__name__
    buttons = " ".join(str(b.label) for b in screen.query("Button"))
    return f"{screen.title_text}\n{screen.query_one('#choice-body').render()}\n{buttons}"


async def dialog_open(pilot, title_part: str) -> str:
    app = pilot.app
    await settle_until_done(pilot, lambda: is_question(app.screen) and title_part in app.screen.title_text,
                            f"a dialog titled with {title_part!r}")
    return dialog_text(app)
