"""The user guides (docs/guide/*.md): they exist, are linked from the README, show pictures that
exist, name only keys the app binds, and quote only `tau-tui` commands that parse.  Reads files
and builds the CLI parsers: no app, no cluster, no network."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDES = ROOT / "docs" / "guide"
NAMES = ["researcher.md", "platform-owner.md", "on-call.md"]

# A backticked key: one character, a named key, or a modifier with a key (`ctrl+g`, `shift+s`).
KEY = re.compile(r"^(?:(?:ctrl|shift|alt)\+)?(?:[A-Za-z0-9?/:.,+\-]|enter|esc|escape|space|tab|up|down|f1)$")
# How Textual names the keys the app binds by name.
KEY_NAMES = {"question_mark": "?", "colon": ":", "slash": "/", "escape": "esc", "full_stop": ".", "comma": ",",
             "plus": "+", "minus": "-"}
# Keys Textual's own widgets bind (tables, inputs, buttons) and the panes' digit keys.
TEXTUAL_KEYS = {"enter", "up", "down", "tab", "space", "esc", *"1234567"}


def guide_text(name: str) -> str:
    return (GUIDES / name).read_text()


def app_keys() -> set[str]:
    """Every key the app binds or its help names, read from the source (cheap, survives moves)."""
    keys = set(TEXTUAL_KEYS)
    for path in (ROOT / "tau_tui").rglob("*.py"):
        text = path.read_text()
        for spec in re.findall(r'Binding\(\s*f?"([^"{]+)"', text):
            keys.update(KEY_NAMES.get(key, key) for key in spec.split(","))
        keys.update(re.findall(r'key_display="([^"]+)"', text))
        # the help's global list (GLOBAL_KEYS): ("? / F1", "this help"), ...
        for block in re.findall(r"GLOBAL_KEYS = \((.*?)\n\)", text, flags=re.S):
            for shown in re.findall(r'\(\s*"([^"]+)",', block):
                keys.update(part.strip() for part in shown.split(" / "))
    # KeyedTable: an upper-case letter sorts by a column (help: shift+letter)
    keys.update(f"shift+{letter}" for letter in "abcdefghijklmnopqrstuvwxyz")
    return keys


def backticked(text: str) -> list[str]:
    """The inline code spans of a Markdown text (they may break across lines), fences left out."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def quoted_commands(text: str) -> list[str]:
    """`tau-tui ...` inline, and `$ tau-tui ...` lines of code blocks (other lines are output)."""
    commands = [span for span in backticked(text) if span.startswith("tau-tui")]
    in_block = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        if in_block and line.startswith("$ tau-tui"):
            commands.append(line.removeprefix("$ "))
    return commands


def parse(command: str) -> None:
    """Parse ``command`` as `tau-tui` would; argparse exits non-zero on a bad one."""
    from tau_tui.cli import COMMANDS, build_parser
    from tau_tui.commands.app_command import build_app_parser

    argv = shlex.split(command, comments=True)[1:]
    parser = build_parser() if argv and argv[0] in COMMANDS else build_app_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exit:
        assert exit.code in (0, None), f"`{command}` does not parse (exit {exit.code})"


@pytest.mark.parametrize("name", NAMES)
def test_the_guide_exists_and_shows_pictures_that_exist(name):
    text = guide_text(name)
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images, f"{name} shows no screenshot"
    missing = [image for image in images if not (GUIDES / image).is_file()]
    assert not missing, f"{name} links missing images: {missing}"


def test_the_pictures_show_no_credential():
    """A worker kubeconfig appears redacted (fingerprints only); no token, key or certificate."""
    for image in sorted((GUIDES / "images").glob("*.svg")):
        text = image.read_text().replace("&#160;", " ")
        for shown in re.findall(r"kubeconfig: ([^<\s]*)", text):
            assert shown in ("", "&lt;redacted&gt;"), f"{image.name} shows a kubeconfig: {shown[:12]}…"
        for marker in ("token: ", "client-key-data", "client-certificate-data", "BEGIN "):
            assert marker not in text, f"{image.name} shows {marker.strip()}"


def test_the_readme_links_the_three_guides():
    readme = (ROOT / "README.md").read_text()
    for name in NAMES:
        assert f"(docs/guide/{name})" in readme, f"README.md does not link docs/guide/{name}"


@pytest.mark.parametrize("name", NAMES)
def test_every_key_a_guide_names_is_bound(name):
    known = app_keys()
    named = [span for span in backticked(guide_text(name)) if KEY.match(span)]
    assert named, f"{name} names no key"
    unknown = sorted({key for key in named if key not in known and key.lower() not in known})
    assert not unknown, f"{name} names keys the app does not bind: {unknown}"


@pytest.mark.parametrize("name", NAMES)
def test_every_command_a_guide_quotes_parses(name):
    commands = quoted_commands(guide_text(name))
    assert commands, f"{name} quotes no tau-tui command"
    for command in commands:
        parse(command)


def test_a_bad_command_or_key_is_caught():
    """The checks above can fail: a flag the CLI lacks and a key the app does not bind."""
    with pytest.raises(AssertionError):
        parse("tau-tui runs retry RUN --no-such-flag")
    assert "ctrl+z" not in app_keys()
