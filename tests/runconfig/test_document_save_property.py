"""Property test of the Compose document's save, fast and without the app (the app-driven one is
tests/app/panes/compose/test_save_writes_the_form.py): random field texts set on varied tau.yaml files,
then the oracle of save_oracle.py (PyYAML reads back what was typed; every line outside the edited
keys' entries is kept, in order)."""

from __future__ import annotations

import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_tui.core.runconfig.document import ComposeDocument, EditRefused
from tau_tui.core.runconfig.form_text import EntryError, field_text, parse_field_text
from tests.runconfig.save_files import FILES, KINDS
from tests.runconfig.save_oracle import check_save, typed_value

SAFE = string.ascii_letters + string.digits + "-_./@"
AWKWARD = SAFE + " :#'\"!&*%?|>{}[]`~^=é"
texts = st.one_of(st.text(SAFE, min_size=1, max_size=12),
                  st.sampled_from(["yes", "no", "on", "null", "~", "1:30", "007", "0x1f", "1e3", "true", "5", "-1",
                                   "2024-01-01", "- a", "#x", "a #b", "a: b", "'q'", '"q"', "@x", "%x", "*x"]),
                  st.text(AWKWARD, min_size=1, max_size=12))


def _clean(text: str) -> str:
    return text.strip().replace(",", "") or "x"


@st.composite
def field_typing(draw, path: str) -> str:
    """What a person types into the field of ``path`` (empty: the field is cleared)."""
    kind = KINDS[path]
    if draw(st.integers(0, 9)) == 0:
        return ""
    if kind == "int":
        return draw(st.one_of(st.integers(-5, 100_000).map(str), texts.map(_clean)))
    if kind == "list":
        return ", ".join(draw(st.lists(texts.map(_clean), min_size=1, max_size=4)))
    if kind == "map":
        keys = draw(st.lists(st.text(string.ascii_uppercase + "_", min_size=1, max_size=8), min_size=1, max_size=4,
                             unique=True))
        return ", ".join(f"{k}={_clean(draw(texts)).replace('=', '')}" for k in keys)
    return _clean(draw(texts))


@st.composite
def sessions(draw):
    original = draw(st.sampled_from(FILES))
    doc = ComposeDocument(original)
    paths = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=8))
    typed: dict[str, str] = {}
    for path in paths:
        text = field_text(doc.saved_value(path)) if draw(st.integers(0, 5)) == 0 else draw(field_typing(path))
        typed[path] = text
    return original, typed


@settings(max_examples=int(os.environ.get("TAU_SAVE_EXAMPLES", "200")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions())
def test_a_save_writes_what_was_typed_and_nothing_else(tmp_path_factory, session):
    original, typed = session
    target = tmp_path_factory.mktemp("save") / "tau.yaml"
    target.write_text(original)
    doc = ComposeDocument.open(target)
    values = {}
    for path, text in typed.items():
        try:
            value = parse_field_text(KINDS[path], text)
        except EntryError:  # the field says why; the file keeps its value
            with pytest.raises(ValueError):
                typed_value(KINDS[path], text)
            continue
        try:
            doc.set(path, value)
        except EditRefused:  # a value an alias elsewhere refers to: the field says so
            continue
        values[path] = typed_value(KINDS[path], text)
    doc.save()
    saved = target.read_text()
    check_save(original, saved, values)
    reopened = ComposeDocument.open(target)  # the form, reopened, reads as typed
    for path, value in values.items():
        assert field_text(reopened.get(path)) == field_text(value), (path, value, saved)


@pytest.mark.parametrize("original", FILES[:1])
def test_a_cleared_name_typed_again_stays_where_it_was(tmp_path, original):
    target = tmp_path / "tau.yaml"
    target.write_text(original)
    doc = ComposeDocument.open(target)
    doc.set("run.name", None)
    doc.set("run.name", "snap-train")
    assert not doc.dirty
    doc.set("run.name", "snap-train-2")
    doc.save()
    assert target.read_text() == original.replace("name: snap-train ", "name: snap-train-2 ")
