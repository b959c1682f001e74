"""Every recovery in `--demo faults` can be finished in the app, as a user would (issue 43, defect 8):
the run a GPU fault killed is resumed from its checkpoint, the preempted one retried, and burn-in-0,
still active with a pod a fault killed, is cancelled and then resumed, the checkpoint path asked for
in a dialog (prefilled with what the run names) instead of a flag the app cannot take.  Next offers
only the keys that work for the run."""

from __future__ import annotations

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.recovery import AVOID_NODES_ANNOTATION, checkpoint_of
from tau_tui.startup.backends import start_demo_backend
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.input_dialog import InputDialog
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, make_app, of_type, record_notifications, settle, settle_until_done

BURN_IN = "team-oncall/burn-in-0"


def faults_demo():
    """`tau-tui --demo faults` as the app starts it, on a frozen clock."""
    backend = start_demo_backend("faults", None, realtime=False)
    return backend.world, backend


async def select(pilot, key: str) -> None:
    """Move the Runs table's cursor to ``key`` with j and k, as a user does."""
    table = pilot.app.screen.query_one("#runs-table", KeyedTable)
    await settle_until_done(pilot, lambda: key in table.keys, f"{key} listed")
    for _ in range(2 * table.row_count + 2):
        if table.selected_key == key:
            return
        await pilot.press("j" if table.keys.index(key) > table.keys.index(table.selected_key or key) else "k")
        await settle(pilot, rounds=1)
    assert table.selected_key == key, f"the cursor never reached {key}"


def detail(app) -> str:
    """The selected run's panel as shown: phases, Attention and Next."""
    widget = app.screen.query_one("#run-phases")
    return "\n".join("".join(seg.text for seg in widget.render_line(y)).rstrip() for y in range(widget.size.height))


def next_keys(app) -> list[str]:
    """The keys the Next list offers."""
    text = detail(app)
    return [line.split()[0] for line in text.split("Next", 1)[1].splitlines()[1:] if line.strip()] if "Next" in text else []


async def confirm(pilot, messages) -> TauApp.MutationApplied:
    await settle_until_done(pilot, lambda: isinstance(pilot.app.screen, ConfirmDialog) and pilot.app.screen.can_confirm,
                            "a confirmation that can be confirmed")
    applied = len(of_type(messages, TauApp.MutationApplied))
    await pilot.press("y")
    await settle_until_done(pilot, lambda: len(of_type(messages, TauApp.MutationApplied)) > applied, "the change applied")
    done = of_type(messages, TauApp.MutationApplied)[-1]
    assert done.ok, done.text
    return done


@async_test
async def test_an_active_run_is_cancelled_then_resumed_from_the_checkpoint_path_asked_for(tmp_path):
    world, backend = faults_demo()
    app = make_app(tmp_path, backend, start_pane="runs")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        notes = record_notifications(app)
        await select(pilot, BURN_IN)
        await settle_until_done(pilot, lambda: "GPU_FAULT" in detail(app), "burn-in-0's GPU fault in Attention")
        assert "cancel it (ctrl+d), then resume it from its last checkpoint on a healthy node (R)" in " ".join(detail(app).split())
        assert "R" not in next_keys(app) and "ctrl+d" in next_keys(app), next_keys(app)
        await pilot.press("R")  # still active: says what to do, opens nothing
        await settle(pilot)
        assert not isinstance(app.screen, (ConfirmDialog, InputDialog))
        assert any("cancel it first (ctrl+d), then press R" in note for note in notes), notes

        await pilot.press("ctrl+d")
        await confirm(pilot, messages)
        table = app.screen.query_one("#runs-table", KeyedTable)
        await settle_until_done(pilot, lambda: BURN_IN in table.keys and "R" in next_keys(app),
                                "the cancelled run reading finished, with R offered")
        assert any(word in table.cells_of(BURN_IN)[0].plain for word in ("releasing", "cancelled"))
        await pilot.press("R")
        await settle_until_done(pilot, lambda: isinstance(app.screen, InputDialog), "the checkpoint path asked for")
        assert app.screen.query_one("#input-dialog-value").value == "/data/checkpoints/burn-in/burn-in-0"
        await pilot.press("enter")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the resume preview")
        assert "avoid gpu-node-1" in app.screen.preview.plain, app.screen.preview.plain
        await confirm(pilot, messages)
        resumed = backend.get(ResourceKind.JOB, "burn-in-0-resume-1", "team-oncall")
        assert resumed is not None
        assert checkpoint_of(resumed) == "/data/checkpoints/burn-in/burn-in-0"
        assert resumed.annotations.get(AVOID_NODES_ANNOTATION) == "gpu-node-1"
        await settle_until_done(pilot, lambda: "team-oncall/burn-in-0-resume-1" in table.keys, "the resumed run listed")
    backend.close()


@async_test
async def test_a_run_a_gpu_fault_ends_is_resumed_and_a_preempted_one_retried(tmp_path):
    world, backend = faults_demo()
    world.advance(65)  # a minute in, gpu-node-6 falls off the bus (Xid 79) under finetune-13b
    app = make_app(tmp_path, backend, start_pane="runs")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await select(pilot, "taugrid-default/finetune-13b")
        await settle_until_done(pilot, lambda: "GPU_FAULT" in detail(app), "finetune-13b's GPU fault")
        assert next_keys(app) == ["l", "d", "R"], next_keys(app)  # r would be refused: BackoffLimitExceeded is not in retry_on
        assert "– retry: failed with Failed, which resilience.retry_on (Preempted, Evicted) does not list" in detail(app)
        await pilot.press("R")  # it carries TAU_RESUME_FROM: straight to the preview
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the resume preview")
        assert "from /data/checkpoints/finetunes/finetune-13b; avoids gpu-node-6" in app.screen.preview.plain
        await confirm(pilot, messages)
        assert backend.get(ResourceKind.JOB, "finetune-13b-resume-1", "taugrid-default") is not None

        await select(pilot, "taugrid-default/sft-lora-sweep")
        await settle_until_done(pilot, lambda: "↻ retry: retry 1/2 after Preempted" in detail(app), "the retry offered")
        assert "r" in next_keys(app)
        await pilot.press("r")
        await confirm(pilot, messages)
        assert backend.get(ResourceKind.JOB, "sft-lora-sweep-retry-1", "taugrid-default") is not None
        # retried: neither is offered again, Attention says where it went
        await settle_until_done(pilot, lambda: "RECOVERED" in detail(app), "the retried run pointing at its successor")
        assert not {"r", "R"} & set(next_keys(app)), next_keys(app)
    backend.close()


@async_test
async def test_next_never_offers_a_retry_that_would_be_refused(tmp_path):
    """`--demo`'s eval-mmlu-0301 was made by the scenario, with no resilience policy: r is not offered,
    the retry line says why, and R asks where the checkpoints are (the run names none)."""
    backend = start_demo_backend("demo", None, realtime=False)
    app = make_app(tmp_path, backend, start_pane="runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await select(pilot, "team-nlp/eval-mmlu-0301")
        await settle_until_done(pilot, lambda: "RUN_FAILED" in detail(app), "the failed run's Attention")
        assert "r" not in next_keys(app) and "R" in next_keys(app), next_keys(app)
        assert "– retry: no tau.azure.com/workloadspec-execution annotation" in detail(app)
        await pilot.press("R")
        await settle_until_done(pilot, lambda: isinstance(app.screen, InputDialog), "the checkpoint path asked for")
        assert app.screen.query_one("#input-dialog-value").value == ""
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, (InputDialog, ConfirmDialog))
    backend.close()
