"""The compose form covers run, runtime (env and env_secret as KEY=value lists),
compute, policy, storage and resilience; messages sit next to their fields and
saving keeps comments and key order."""

from __future__ import annotations

import pytest

from tau_tui.screens import messages as screen_messages
from tau_tui.screens.compose import FORM, ComposeScreen
from tau_tui.widgets.form_field import EntryError, FormField, parse_key_values
from tests.app.conftest import VALID_TAU_YAML
from tests.app.helpers import async_test, demo_app, of_type, settle, wait_until

TAU_YAML = VALID_TAU_YAML + """
runtime:
  env:
    # tokenizer threads
    TOKENIZERS_PARALLELISM: "false"   # keep quiet
    OMP_NUM_THREADS: "4"
"""


def test_parse_key_values():
    assert parse_key_values("A=1, B = two ,") == {"A": "1", "B": "two"}
    with pytest.raises(EntryError, match="'oops' is not KEY=value"):
        parse_key_values("A=1, oops")


def test_form_has_every_group_and_the_env_maps():
    groups = [section for section, _ in FORM]
    assert groups == ["run", "runtime", "compute", "policy", "storage", "resilience"]
    kinds = {path: kind for _, fields in FORM for path, _, kind, _ in fields}
    assert kinds["runtime.env"] == "map" and kinds["runtime.env_secret"] == "map"
    for path in ("compute.cpu_limit", "policy.node_selector", "storage.volumes", "resilience.retry_on",
                 "run.ttl_seconds_after_finished", "runtime.security.mode"):
        assert path in kinds


@async_test
async def test_env_fields_validate_in_place_and_save_keeps_comments(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(TAU_YAML)
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append, settled=False) as (world, backend, app, pilot):
        screen = app.screen
        assert isinstance(screen, ComposeScreen)
        await wait_until(pilot, lambda: of_type(messages, screen_messages.Validated), what="validation")
        await settle(pilot)
        assert of_type(messages, screen_messages.Validated)[-1].result.ok
        env = screen.query_one("#field-runtime-env", FormField)
        assert env.input.value == "TOKENIZERS_PARALLELISM=false, OMP_NUM_THREADS=4"

        # a malformed entry: the message sits under the env field
        count = len(of_type(messages, screen_messages.Validated))
        env.input.value = "TOKENIZERS_PARALLELISM=false, OMP_NUM_THREADS"
        await wait_until(pilot, lambda: len(of_type(messages, screen_messages.Validated)) > count, what="re-validation")
        await settle(pilot)
        assert not of_type(messages, screen_messages.Validated)[-1].result.ok
        assert env.has_class("-error")
        assert "'OMP_NUM_THREADS' is not KEY=value" in str(env.query_one(".field-error").render())
        assert "# tokenizer threads" in screen.document.text()  # the file is left alone meanwhile

        # fix it, add a variable and a secret reference; both reach the rendered manifest
        count = len(of_type(messages, screen_messages.Validated))
        env.input.value = "TOKENIZERS_PARALLELISM=false, OMP_NUM_THREADS=8, WANDB_MODE=offline"
        screen.query_one("#field-runtime-env-secret", FormField).input.value = "HF_TOKEN=hf-credentials:token"
        await wait_until(pilot, lambda: len(of_type(messages, screen_messages.Validated)) > count
                         and of_type(messages, screen_messages.Validated)[-1].result.ok, what="valid again")
        await settle(pilot)
        assert not env.has_class("-error")
        rendered = of_type(messages, screen_messages.Validated)[-1].result.manifests_yaml
        assert "WANDB_MODE" in rendered and "hf-credentials" in rendered

        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: of_type(messages, screen_messages.FileSaved), what="save")
        assert not of_type(messages, screen_messages.FileSaved)[-1].error
    saved = (workspace / "tau.yaml").read_text()
    assert "# tokenizer threads" in saved and "# keep quiet" in saved  # comments kept
    assert "# Snapshot run: one 8-GPU worker through the xl profile." in saved
    env_lines = [line.strip() for line in saved.splitlines() if line.startswith("    ") and ":" in line]
    assert [line.split(":")[0] for line in env_lines] == ["TOKENIZERS_PARALLELISM", "OMP_NUM_THREADS", "WANDB_MODE", "HF_TOKEN"]
    assert 'OMP_NUM_THREADS: "8"' in saved or "OMP_NUM_THREADS: '8'" in saved or "OMP_NUM_THREADS: 8" in saved
    assert "env_secret:" in saved and "HF_TOKEN: hf-credentials:token" in saved
    assert saved.index("runtime:") > saved.index("policy:")  # key order kept
