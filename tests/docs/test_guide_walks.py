"""The guides are executable (issue 43): each guide's own key sequence, read from the walk blocks in
its Markdown (tests/docs/guide_walk.py says their form), is driven on `--demo` with Textual's pilot,
and each step's screen must show what the guide says it shows.  A guide that drifts from the app
fails here, naming the guide, the step (its line) and the phrase the screen lacks, with the screen.

Nothing of a walk is written here: the keys and the phrases are the guide's."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.docs.guide_walk import GUIDES, GuideDrift, parse_guide, shows, svg_lines, walk_guide
from tests.docs.test_guides import backticked

NAMES = ["researcher.md", "platform-owner.md", "on-call.md"]


@pytest.fixture
def private_dirs(tmp_path, monkeypatch):
    """The app's config, state and records under the test's own directory."""
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.delenv("TAU_TUI_CONFIG", raising=False)
    monkeypatch.delenv("TAU_TEAM", raising=False)
    return tmp_path


@pytest.mark.parametrize("name", NAMES)
def test_the_guide_walks_on_the_demo(name, private_dirs):
    asyncio.run(walk_guide(name, private_dirs))


@pytest.mark.parametrize("name", NAMES)
def test_every_picture_is_a_step_of_the_walk(name):
    """Each screenshot the guide shows is the screen of one of its own steps, and each step's picture
    is shown: no picture comes from anywhere but the guide's keys on the demo."""
    text = (GUIDES / name).read_text()
    shown = {image.removeprefix("images/").removesuffix(".svg") for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)}
    shots = [step.shot for session in parse_guide(name) for step in session.steps if step.shot]
    assert len(shots) == len(set(shots)), f"{name}: a picture is made twice: {shots}"
    assert shown == set(shots), (f"{name}: pictures with no step: {sorted(shown - set(shots))}; "
                                 f"steps whose picture is not shown: {sorted(set(shots) - shown)}")


@pytest.mark.parametrize("name", NAMES)
def test_every_key_of_the_walk_is_named_in_the_guide(name):
    """The walk presses only keys the page tells the reader (backticked in its prose)."""
    named = set(backticked(re.sub(r"<!--.*?-->", "", (GUIDES / name).read_text(), flags=re.S)))
    for session in parse_guide(name):
        for step in session.steps:
            for key in step.keys:
                assert key in named or any(key in span.split() for span in named), \
                    f"{name}: the step at line {step.line} presses {key!r}, which the page never names"


def test_a_drifted_guide_fails_naming_the_step_and_the_phrase(tmp_path, monkeypatch, private_dirs):
    """The check can fail: a phrase the screen does not show stops the walk with the guide, the
    step's line and the phrase in the message."""
    guide = tmp_path / "guide"
    guide.mkdir()
    (guide / "drift.md").write_text("<!-- guide: session {demo: faults, pane: nodes, size: 120x36} -->\n"
                                    "Press `4`.\n<!-- guide: step {keys: '4', see: [no such phrase on any screen]} -->\n")
    monkeypatch.setattr("tests.docs.guide_walk.GUIDES", guide)
    monkeypatch.setattr("tests.docs.guide_walk.PHRASE_ROUNDS", (3, 3))  # a phrase that never comes: fail soon
    with pytest.raises(GuideDrift) as drift:
        asyncio.run(walk_guide("drift.md", private_dirs))
    message = str(drift.value)
    assert message.startswith("docs/guide/drift.md: step 1 of the session at line 1, line 3 (keys 4)")
    assert "does not show 'no such phrase on any screen'" in message and "Runs" in message


def test_the_screen_text_is_read_from_the_picture():
    svg = ('<text class="t-r1" x="0" y="20" textLength="24.4" clip-path="url(#t-line-0)">ab</text>'
           '<text class="t-r2" x="48.8" y="20" textLength="12.2" clip-path="url(#t-line-0)">c</text>'
           '<text class="t-r1" x="0" y="44" textLength="36.6" clip-path="url(#t-line-1)">x&#160;&amp;</text>')
    assert svg_lines(svg) == ["ab  c", "x\xa0&"]
    assert shows("ab  c\nx & y", "ab c") and not shows("ab\nc", "ab c")
