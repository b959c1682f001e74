"""The defects of issue #11, each reproduced through the app (pilot, simulated backend)."""

from __future__ import annotations

from textual.widgets import Button, Input

from tau_tui.app import TauApp
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.cluster.sim.backend import SimulatedBackend
from tau_tui.core.operations.admission_fit import request_totals, server_quota_warnings
from tau_tui.screens.compose import ComposeScreen
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tau_tui.widgets.form_field import FormField
from tau_tui.widgets.keyed_table import KeyedTable
from tests.app.helpers import async_test, demo_backend, make_app, settle
from tests.app.test_flows import of_type, wait_until

JOB_TAU_YAML = """\
name: huge-mem
image: python:3.12-slim
entrypoint: train.py
compute:
  gpus: 8
  memory_request: 999Pi
policy:
  namespace: taugrid-default
  profile: azure.research.training.xl
"""


def _text_of(widget) -> str:
    """What a widget shows on screen, its lines joined by spaces."""
    return " ".join("".join(seg.text for seg in widget.render_line(y)).strip() for y in range(widget.size.height))


def _preview(app) -> str:
    return str(app.screen.query_one("#confirm-preview").render())


@async_test
async def test_cancel_dialog_names_the_verb_once_and_offers_keep(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#workloads-table", KeyedTable)
        table.focus()
        await pilot.press("ctrl+d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm dialog")
        labels = [str(b.label) for b in app.screen.query(Button)]
        assert labels == ["Cancel (y)", "Keep (n)"], labels
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)


@async_test
async def test_hold_confirmation_summarises_workloads_gpus_memory_and_owners(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        queues = app.screen.query_one("#queues-table", KeyedTable)
        queues.focus()
        key = next(k for k in queues.keys if k == "cq/jobqueue")
        queues.move_cursor(row=queues.keys.index(key))
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirm dialog")
        preview = _preview(app)
        assert "affects:" in preview
        assert "admitted workload(s)" in preview and "pending" in preview
        assert "GPU(s)" in preview and "memory" in preview
        assert "owners: namespace taugrid-default" in preview
        assert [str(b.label) for b in app.screen.query(Button)] == ["Hold (y)", "Back (n)"]


@async_test
async def test_compose_warns_when_no_flavor_can_hold_the_request_and_submit_says_so(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(JOB_TAU_YAML)
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="compose", compose_file="tau.yaml")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: any(m.result.rendered for m in of_type(messages, ComposeScreen.Validated)),
                         what="rendered validation")
        await settle(pilot)
        result = screen.validation
        assert result.ok  # a warning, not an error: the user may still submit
        warnings = [d for d in result.diagnostics if d.severity == "warning" and d.path == "compute.memory_request"]
        assert warnings, result.diagnostics
        text = warnings[0].message
        assert "memory 999Pi" in text and "ClusterQueue jobqueue" in text and "4000Gi" in text, text
        field = screen.query_one("#field-compute-memory-request", FormField)
        assert "exceeds every flavor's nominal quota" in str(field.query_one(".field-error").render())

        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="submit confirmation")
        preview = _preview(app)
        assert "1 pod(s): nvidia.com/gpu 8" in preview and "memory 999Pi" in preview
        assert "queue taugrid-default/jobqueue" in preview
        assert "⚠ memory 999Pi requested exceeds every flavor's nominal quota" in preview
        assert [str(b.label) for b in app.screen.query(Button)] == ["Submit (y)", "Back (n)"]


def test_cli_submit_quota_check_reads_the_queues_from_the_server():
    """What `tau-tui submit` prints, against the simulated API server (same primitives as the real one)."""
    world, backend = demo_backend()
    try:
        assert isinstance(backend, SimulatedBackend)
        manifests = [{"kind": "Job", "metadata": {"namespace": "taugrid-default",
                                                   "labels": {"kueue.x-k8s.io/queue-name": "jobqueue"}},
                      "spec": {"parallelism": 2, "template": {"spec": {"containers": [
                          {"resources": {"requests": {"memory": "999Pi", "nvidia.com/gpu": "8"}}}]}}}}]
        totals = request_totals(manifests)
        assert totals.pods == 2 and totals.requests["nvidia.com/gpu"] == 16
        warnings = server_quota_warnings(backend, totals)
        assert len(warnings) == 1 and warnings[0].startswith("memory 1998Pi requested exceeds"), warnings
        fits = request_totals([{**manifests[0], "spec": {"parallelism": 1, "template": {"spec": {"containers": [
            {"resources": {"requests": {"memory": "16Gi", "nvidia.com/gpu": "8"}}}]}}}}])
        assert server_quota_warnings(backend, fits) == []
    finally:
        backend.close()


@async_test
async def test_compose_has_a_gpus_field_for_a_job(tmp_path, workspace):
    (workspace / "tau.yaml").write_text(JOB_TAU_YAML.replace("  memory_request: 999Pi\n", "").replace("  gpus: 8\n", ""))
    app = make_app(tmp_path, start_pane="compose", compose_file="tau.yaml")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: of_type(messages, ComposeScreen.Validated), what="validation")
        gpus = screen.query_one("#field-compute-gpus", FormField)
        gpus.input.value = "8"
        await wait_until(pilot, lambda: screen.document.get("compute.gpus") == 8, what="gpus written")
        assert "gpus: 8" in screen.document.text()


@async_test
async def test_placeholders_are_never_shown_as_values(tmp_path, workspace):
    app = make_app(tmp_path, start_pane="compose", compose_file="tau.yaml")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: of_type(messages, ComposeScreen.Validated), what="validation")
        image = screen.query_one("#field-runtime-image", FormField)
        assert image.input.value == "python:3.12-slim"
        image.input.value = ""  # cleared: the example must not read as the value
        await settle(pilot)
        assert image.input.placeholder == "e.g. python:3.12-slim"
        style = image.input.get_component_rich_style("input--placeholder")
        assert style.italic
        await pilot.press("ctrl+n")  # a new form: the namespace is empty and says so
        await settle(pilot)
        namespace = screen.query_one("#field-policy-namespace", FormField)
        assert namespace.input.value == ""
        assert namespace.input.placeholder.startswith("e.g. ")
        engine = screen.query_one("#field-run-engine", FormField)
        assert engine.input.placeholder == "one of job | rayjob"
        rendered = "".join(seg.text for seg in namespace.input.render_line(0))
        assert "e.g. taugrid-default" in rendered


@async_test
async def test_unhealthy_filter_matches_the_verdict_not_negative_reason_text(tmp_path):
    app = make_app(tmp_path, start_pane="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#nodes-table", KeyedTable)
        everyone = list(table.keys)
        assert len(everyone) > 3
        screen.set_filter("unhealthy")
        await settle(pilot)
        assert list(table.keys) == ["h100-node-5"]  # not every node whose reason says "no unhealthy GPU"
        screen.set_filter("Xid79")  # a problem's reason is still searchable
        await settle(pilot)
        assert list(table.keys) == ["h100-node-5"]


@async_test
async def test_pane_keys_never_edit_compose_fields_and_the_form_says_how_to_leave(tmp_path, workspace):
    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="compose", compose_file="tau.yaml")
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.validation.ok, what="valid file")
        hint = str(screen.query_one("#compose-keys-hint").render())
        assert "esc" in hint and "alt+1-7" in hint
        name = screen.query_one("#field-run-name", FormField).input
        # the form is filled from the file after it validates; on a busy machine that can come later
        await wait_until(pilot, lambda: name.value == "snap-train", what="the form filled from tau.yaml")
        name.focus()
        await pilot.press("end", "3")  # a digit in a field is text
        assert name.value == "snap-train3" and app.current_mode == "compose"
        await pilot.press("backspace", "alt+4")  # alt+digit leaves from inside the field, typing nothing
        await settle(pilot)
        assert app.current_mode == "runs"
        await pilot.press("alt+1")
        await settle(pilot)
        assert app.current_mode == "compose" and name.value == "snap-train"
        name.focus()
        await pilot.press("escape")  # esc leaves the field; then a digit switches
        assert screen.focused is None and app.current_mode == "compose"
        await pilot.press("6")
        await settle(pilot)
        assert app.current_mode == "nodes" and name.value == "snap-train"

        # after a submit, the next digit switches panes instead of landing in the field it came from
        await pilot.press("1")
        await settle(pilot)
        name.focus()
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="submit confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: of_type(messages, TauApp.MutationApplied), what="submit")
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        assert app.current_mode == "runs"
        assert name.value == "snap-train"


@async_test
async def test_pod_logs_on_a_node_open_that_pods_log(tmp_path):
    from tau_tui.screens.logs import LogsScreen
    from tau_tui.screens.node_detail import NodeDetailScreen

    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        node = next(n.name for n in backend.nodes()
                    if sum(1 for p in backend.pods() if p.node_name == n.name and any("gpu" in r for r in p.requests)) >= 1)
        app.push_screen(NodeDetailScreen(node))
        await settle(pilot)
        pods = app.screen.query_one("#pods-table", KeyedTable)
        await wait_until(pilot, lambda: bool(pods.keys), what="pods on the node")
        pods.focus()
        key = pods.keys[0]
        pod_name = key.rpartition("/")[2]
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.request is not None,
                         what="logs opened")
        request = app.screen.request
        assert request.pods == (pod_name,) and request.job is None and request.ray_job is None
        assert pod_name in app.screen.run_title


@async_test
async def test_logs_search_previous_and_help(tmp_path):
    from tau_tui.screens.logs import LogsScreen
    from tau_tui.widgets.help_dialog import HelpDialog
    from tau_tui.widgets.log_view import LogView

    world, backend = demo_backend()
    app = make_app(tmp_path, backend, start_pane="runs")
    async with app.run_test(size=(260, 40)) as pilot:
        await settle(pilot)
        await app.open_logs_for_run("taugrid-default/nccl-allreduce-check")
        await wait_until(pilot, lambda: isinstance(app.screen, LogsScreen) and app.screen.stream is not None, what="stream")
        screen = app.screen
        view = screen.query_one(LogView)
        await wait_until(pilot, lambda: view.lines_seen > 10, what="lines")

        # / opens empty: a new term replaces the last one instead of appending to it
        screen.run_search("level")
        await wait_until(pilot, lambda: bool(view.hits), what="hits")
        await pilot.press("slash")
        await settle(pilot)
        line = app.screen.query_one("CommandLine")
        assert line.query_one(Input).value == ""
        await pilot.press("escape")

        # another run: the old term and its highlight go together (no "no match" over highlighted lines)
        await app.open_logs_for_run("taugrid-default/tokenizer-sweep")
        await wait_until(pilot, lambda: screen.stream is not None and "tokenizer-sweep" in screen.run_title, what="2nd run")
        await settle(pilot)
        assert screen.search_text == "" and view.search_pattern is None
        assert "no match" not in str(screen.query_one("#logs-info").render())

        # p with no previous instance: the reason is in the body, whole, not cut off
        await pilot.press("p")
        await wait_until(pilot, lambda: screen.stream is not None and screen.request.previous and screen.stream.errors,
                         what="previous with an error", timeout=120)
        await settle(pilot)
        errors = "; ".join(screen.stream.errors)
        body = _text_of(view)
        assert view.lines_seen == 0 and errors in " ".join(body.split()), (errors, body)
        info = _text_of(screen.query_one("#logs-info"))
        assert errors in " ".join(info.split()), info

        # help on Logs says / searches
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpDialog), what="help")
        keys = _text_of(app.screen.query_one("#help-keys"))
        assert "search the whole log" in keys and "filter rows" not in keys, keys


@async_test
async def test_node_detail_says_what_to_do_and_why_the_verdict(tmp_path):
    from tau_tui.screens.node_detail import NodeDetailScreen

    app = make_app(tmp_path, start_pane="nodes")
    async with app.run_test(size=(200, 48)) as pilot:
        await settle(pilot)
        app.push_screen(NodeDetailScreen("h100-node-5"))
        await settle(pilot)
        advice = " ".join(app.screen.data.advice)
        # Xid 79 as the catalog rates it: a reboot, latched (not "RESET_GPU" here and "NONE" elsewhere)
        assert "gpu3 Xid79 → unhealthy; do: drain and reboot the node" in advice, advice
        assert "latched: it stays until the GPU is reset or the node reboots" in advice
        await pilot.press("escape")
        await settle(pilot)
        app.push_screen(NodeDetailScreen("a100-node-3"))
        await settle(pilot)
        advice = " ".join(app.screen.data.advice)
        assert "degraded" in advice and "not latched: the health policy rates it degraded" in advice, advice


def test_the_simulator_rates_an_xid_as_its_catalog_does_everywhere():
    world, backend = demo_backend()
    try:
        for node, verdict in (("h100-node-0", "unhealthy"), ("h100-node-1", "degraded")):
            world.gpu_fault(node, verdict, "Xid79" if verdict == "unhealthy" else "Xid92", "x", 0, kill_pods=False)
        reasons = {}
        for node in ("h100-node-0", "h100-node-1"):
            status = backend._api_get(ResourceKind.GPU_HEALTH.value, node, None)["status"]
            reasons[node] = status["gpus"][0]["reasons"][0]
        assert reasons["h100-node-0"]["action"] == "REBOOT" and reasons["h100-node-0"]["latched"] is True
        assert reasons["h100-node-1"]["action"] == "CONTACT_SUPPORT" and reasons["h100-node-1"]["latched"] is False
    finally:
        backend.close()


@async_test
async def test_demo_faults_shows_the_faults_from_the_first_screen(tmp_path):
    from tau_tui.core.cluster.sim.scenario import build_world
    from tau_tui.screens.runs import render_run_status

    world = build_world("faults")
    backend = SimulatedBackend(world, realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    app = make_app(tmp_path, backend, start_pane="queue")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#pane-banner")
        assert banner.has_class("-shown")
        text = _text_of(banner)
        assert "⚠ GPU faults: 1 node unhealthy (gpu-node-1), 1 degraded (gpu-node-4)" in text, text

        await pilot.press("4")
        await settle(pilot)
        runs = app.screen
        status = runs.data.statuses["team-oncall/burn-in-0"]
        cells = runs.query_one("#runs-table", KeyedTable).cells_of("team-oncall/burn-in-0")
        assert "pod failed" in cells[0].plain  # never a plain "◐ starting"
        attention = [d for d in status.diagnostics if d.code == "GPU_FAULT"]
        assert attention and "gpu-node-1" in attention[0].message and "Xid48" in attention[0].message
        group = render_run_status(status)
        assert any("Attention" in getattr(part, "plain", "") for part in group.renderables)
    backend.close()


@async_test
async def test_80x24_compose_shows_whole_values_and_a_compact_footer(tmp_path, workspace):
    from textual.widgets import Footer

    app = make_app(tmp_path, start_pane="compose", compose_file="tau.yaml")
    messages: list = []
    async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: of_type(messages, ComposeScreen.Validated), what="validation")
        await settle(pilot)
        assert screen.has_class("-narrow")
        image = screen.query_one("#field-runtime-image", FormField).input
        assert image.value == "python:3.12-slim"
        assert image.region.width >= 50, image.region  # the whole width, not half of it
        side = screen.query_one("#compose-side")
        assert side.region.y > screen.query_one("#compose-form").region.y  # the preview sits below the form
        footer = screen.query_one(Footer)
        assert footer.compact and not footer.show_command_palette
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert not screen.has_class("-narrow") and not footer.compact
