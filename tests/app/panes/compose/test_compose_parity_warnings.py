"""Issue 45 in the Compose pane: a latest or untagged image is a warning next to the image field (the
file still renders), a MultiKueue profile with a data PVC warns that the data stays on one cluster,
and a MultiKueue profile is marked Alpha where the form lists profiles."""

from __future__ import annotations

from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.runconfig.profiles import compute_profile_set_hash
from tau_tui.screens import messages as screen_messages
from tests.app.helpers import async_test, demo_app, demo_backend, make_app, of_type, settle, wait_until

UNTAGGED = """\
name: untagged
image: python
entrypoint: train.py
policy:
  namespace: taugrid-default
  profile: azure.research.training.xl
"""

MULTIKUEUE_WITH_PVC = """\
name: mk-with-pvc
engine: rayjob
image: python:3.12-slim
entrypoint: train.py
policy:
  namespace: team-nlp
  profile: azure.research.multicluster.h100
storage:
  data_pvc: blob-training
"""


async def _validated(pilot, messages):
    await wait_until(pilot, lambda: any(m.result.rendered for m in of_type(messages, screen_messages.Validated)),
                     what="rendered validation")
    await settle(pilot)
    return pilot.app.screen.validation


@async_test
async def test_an_untagged_image_is_a_warning_in_compose(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(UNTAGGED)
    messages: list = []
    async with demo_app(tmp_path, start_pane="compose", compose_file="tau.yaml", message_hook=messages.append,
                        settled=False) as running:
        result = await _validated(running.pilot, messages)
        assert result.ok  # a warning: the file renders and may be submitted
        warning = next(d for d in result.diagnostics if d.severity == "warning" and "untagged" in d.message)
        assert warning.path == "image"


@async_test
async def test_a_multikueue_profile_is_alpha_and_warns_about_its_pvc(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(MULTIKUEUE_WITH_PVC)
    world, backend = demo_backend()

    def open_lanes(obj):  # the demo's MultiKueue profile serves lane multicluster, which no tau.yaml can name
        status = obj["status"]["workloadProfiles"]
        for profile in status["profiles"]:
            profile.get("applicability", {}).pop("lanes", None)
        status["profileSetHash"] = compute_profile_set_hash(status["profiles"])

    world.store.update(ResourceKind.TAU_CLUSTER.type, "cluster", None, open_lanes)
    messages: list = []
    app = make_app(tmp_path, backend, start_pane="compose", compose_file="tau.yaml")
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        result = await _validated(pilot, messages)
        alpha = [label for label, _ in result.profile_options] + [name for name, _ in result.excluded]
        assert any("azure.research.multicluster.h100 (MultiKueue, Alpha)" in label for label in alpha), alpha
        warnings = [d for d in result.diagnostics if d.severity == "warning" and d.path == "storage.data_pvc"]
        assert warnings and "stay on one cluster" in warnings[0].message, result.diagnostics
