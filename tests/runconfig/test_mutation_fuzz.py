"""Property test: the golden valid configs, mutated, through load → profiles → resolve → render → YAML.

Each example takes one valid case from tests/data/configs and changes it: a value replaced by another
type, a huge or unicode or control-character value, a key deleted or inserted, or the text itself
edited (a tag, an anchor, a stray indicator). Whatever comes out, the only exception allowed is
DiagnosticError, and every message names the file. Examples are kept cheap (profile snapshots are
read once) so that 5,000 of them run in the default suite.
"""

from __future__ import annotations

import copy
import shlex
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau_tui.core.runconfig.diagnostics import DiagnosticError
from tau_tui.core.runconfig.loader import load_config_text
from tau_tui.core.runconfig.manifests import render, to_yaml
from tau_tui.core.runconfig.pipeline import load_profiles, snapshot_path
from tau_tui.core.runconfig.profiles import load_snapshot
from tau_tui.core.runconfig.resolve import RenderOptions, resolve
from tau_tui.core.runconfig.schema import TauConfig
from tests.data.cases import CASES_DIR, DATA, DEFAULT_SNAPSHOT

EXAMPLES = 5_000
FILE = "fuzz.yaml"
# The C emitter when PyYAML has it: writing the mutated document is the test's cost, not the product's.
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _case(directory: Path) -> dict[str, Any]:
    args = shlex.split((directory / "args").read_text().replace("{data}", str(DATA))) if (directory / "args").exists() else []
    option = lambda flag: args[args.index(flag) + 1] if flag in args else None  # noqa: E731
    profiles = option("--profiles") or (None if "--profiles-from-config" in args else str(DEFAULT_SNAPSHOT))
    return {
        "dir": directory,
        "text": (directory / "tau.yaml").read_text(),
        "doc": yaml.safe_load((directory / "tau.yaml").read_text()),
        "profiles": profiles,
        "options": RenderOptions(option("-n") or option("--namespace"), option("--team"), option("--lane"), option("--submission-id")),
    }


VALID = [_case(d) for d in sorted(CASES_DIR.iterdir()) if (d / "expected.yaml").exists()]
SNAPSHOTS = {
    str(path): load_snapshot(path)
    for path in {Path(c["profiles"]) for c in VALID if c["profiles"]} | {p for p in (DATA / "profiles").glob("*.yaml")}
}

SCHEMA_KEYS = sorted({k for s in TauConfig.model_fields for k in TauConfig.model_fields[s].annotation.model_fields} | set(TauConfig.model_fields))
SPECIAL_TEXT = [
    "1:30", "010", "0x1f", "1e999", ".nan", "yes", "~", "../escape", "/etc/passwd", "a..b", "a.-b", "train.py", "sub/../x.py",
    "\x1b[31mred\x1b[0m", "\u202eevil", "\x00nul", "tab\there", "line\nbreak", "Ünïcødé", "🙂", "a" * 300, "-" * 64,
    "python:3.12-slim", "UPPER/Case:1", "img@sha256:" + "0" * 64, "$(id)", "a;b", "30s", "5m", "1h30m", "Preempted",
    "rayjob", "job", "torchrun", "ray-tune", "auto", "kind-cpu", "taugrid-default", "mig", "1g.10gb",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, 2**63, 10**30, 10**80, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=24),
    st.sampled_from(SPECIAL_TEXT),
    st.builds(lambda ch, n: ch * n, st.sampled_from(["x", "é", "\x1b", "9"]), st.sampled_from([300, 3_000])),
)
keys = st.one_of(st.sampled_from(SCHEMA_KEYS), st.text(max_size=8))
# Two levels at most: cheap to draw, and deep enough to put a list or mapping where a scalar belongs.
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(keys, st.one_of(scalars, st.lists(scalars, max_size=2)), max_size=3),
)
TEXT_EDITS = ["!!int ", "!!float ", "!!timestamp ", "!!binary ", "!foo ", "&a ", "*a", "*missing", "<<: ", ": ", "- ", "? ",
              "\t", "'", '"', "{", "[", "]", "#", "%", "@", "\x00", "\x1b", "\ufeff", "\u2028", "---\n", "\n  ", "9" * 80]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, prefix + (index,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def _mutate(doc: Any, data: st.DataObject) -> Any:
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        paths = _paths(doc)
        path = data.draw(st.sampled_from(paths), label="path")
        action = data.draw(st.sampled_from(["set", "set", "delete", "insert"]), label="action")
        if not path:
            if action == "set" and data.draw(st.booleans()):
                doc = data.draw(values, label="root")
            continue
        parent = _parent(doc, path)
        if action == "set":
            parent[path[-1]] = data.draw(values, label="value")
        elif action == "delete":
            del parent[path[-1]]
        else:
            target = parent[path[-1]]
            if isinstance(target, dict):
                target[data.draw(keys, label="key")] = data.draw(values, label="value")
            elif isinstance(target, list):
                target.insert(data.draw(st.integers(0, len(target))), data.draw(values, label="item"))
            else:
                parent[path[-1]] = [target, data.draw(values, label="item")]
    return doc


def _profiles(case: dict[str, Any], loaded) -> Any:
    if case["profiles"]:
        return SNAPSHOTS[case["profiles"]]
    declared = snapshot_path(loaded, None)
    if declared is not None and str(declared) in SNAPSHOTS:
        return SNAPSHOTS[str(declared)]
    return load_profiles(loaded, None, None, client_dry_run=True)  # a mutated path: the real read


def _check(case: dict[str, Any], text: str) -> None:
    try:
        loaded = load_config_text(text, FILE, base_dir=case["dir"])
        profile_set = _profiles(case, loaded)
        resolution = resolve(loaded, profile_set, case["options"])
        manifests = render(loaded, resolution, case["options"].submission_id)
        assert to_yaml(manifests).startswith("---")
    except DiagnosticError as err:
        assert err.diagnostics, "an error carries at least one message"
        for diagnostic in err.diagnostics:
            shown = str(diagnostic)
            assert shown.startswith((FILE, str(DATA))), shown[:200]
            assert "\x1b" not in shown and "\x00" not in shown


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(st.sampled_from(VALID), st.data())
def test_mutated_valid_configs_fail_only_with_diagnostics(case, data):
    if data.draw(st.integers(0, 4), label="text edit?") == 0:
        text = case["text"]
        at = data.draw(st.integers(0, len(text)), label="offset")
        text = text[:at] + data.draw(st.sampled_from(TEXT_EDITS), label="edit") + text[at:]
    else:
        doc = _mutate(copy.deepcopy(case["doc"]), data)
        text = yaml.dump(doc, Dumper=DUMPER, allow_unicode=data.draw(st.booleans(), label="unicode"), sort_keys=False)
    _check(case, text)
