"""Property test: whatever bytes or shapes the loader gets, it returns a config or a DiagnosticError."""

from __future__ import annotations

import string

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.loader import load_config_text
from tau_tui.core.runconfig.schema import TauConfig

SECTIONS = list(TauConfig.model_fields)
KEYS = sorted({k for s in SECTIONS for k in TauConfig.model_fields[s].annotation.model_fields} | {"name", "image", "engine", "script", "entrypoint", "priority"})
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 3_000_000_000), st.floats(allow_nan=True),
    st.text(max_size=30), st.sampled_from(["job", "rayjob", "ray", "torchrun", "30s", "5m", "Preempted", "../x", "/data/x", "a@sha256:" + "0" * 64]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)), max_leaves=12)
documents = st.dictionaries(st.sampled_from(SECTIONS + ["name", "image", "engine", "entrypoint", "bogus"]), st.one_of(values, st.dictionaries(st.sampled_from(KEYS), values, max_size=6)), max_size=8)


def _check(text: str, tmp_path) -> None:
    try:
        loaded = load_config_text(text, "fuzz.yaml", base_dir=tmp_path)
    except DiagnosticError as err:
        assert err.diagnostics, "an error must carry at least one message"
        for diagnostic in err.diagnostics:
            assert str(diagnostic).startswith("fuzz.yaml")
        return
    assert loaded.engine in ("job", "rayjob")
    assert len(loaded.config_hash) == 64


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(documents)
def test_structured_documents_never_crash(tmp_path, document):
    _check(yaml.safe_dump(document, allow_unicode=True), tmp_path)


@settings(max_examples=900, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.text(alphabet=string.printable + "\x00é&*!|>-:{}[]", max_size=300))
def test_arbitrary_text_never_crashes(tmp_path, text):
    _check(text, tmp_path)
