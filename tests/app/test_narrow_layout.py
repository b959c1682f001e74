"""At 80×24 the header keeps the pane's crumbs and the footer keeps every key of the pane and ``?``
on screen ("at 80×24 the breadcrumb and footer are cut")."""

from __future__ import annotations

from tau_tui.textual_compat.footer import FooterKey
from tau_tui.widgets.header_bar import PANES, HeaderBar, HeaderState
from tests.app.helpers import async_test, demo_app, make_app, settle

WIDTH = 80


@async_test
async def test_every_pane_at_80_columns_shows_its_crumbs_and_all_its_footer_keys(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(WIDTH, 24)) as pilot:
        await settle(pilot)
        for key, mode, _label in PANES:
            await pilot.press("escape", f"alt+{key}")
            await settle(pilot)
            screen = app.screen
            header = screen.query_one(HeaderBar)
            tabs_line = header.render().plain.splitlines()[1]
            assert len(tabs_line) <= WIDTH and "› " + screen.crumbs() in tabs_line, (mode, tabs_line)
            keys = list(screen.query(FooterKey))
            assert keys and all(0 < k.region.width and k.region.right <= WIDTH for k in keys), \
                (mode, [(k.description, k.region) for k in keys])
            assert any(k.key == "question_mark" for k in keys), mode

        # a long context name gives way; the connection state and READ-ONLY stay on screen
        header = app.screen.query_one(HeaderBar)
        header.set_state(HeaderState(context="arn:aws:eks:us-east-1:123456789012:cluster/research-gpu-prod",
                                     readonly=True, connection="stale since 12:03:04", pane="queue", crumbs="Queue"))
        top = header.render().plain.splitlines()[0]
        assert len(top) <= WIDTH and "stale since 12:03:04" in top and "READ-ONLY" in top and "arn:aws:eks" in top, top


def test_tabs_shrink_before_the_crumbs_are_cut_and_clicks_still_land():
    bar = HeaderBar()
    long_crumbs = HeaderState(context="prod-east", pane="compose", crumbs="Compose › experiments/llama-70b/tau.yaml")
    for shrink in range(3):
        line, spans = bar._tabs_line(long_crumbs, shrink)
        assert [mode for _, _, mode in spans] == [mode for _, mode, _ in PANES]
    full, _ = bar._tabs_line(long_crumbs, 0)
    digits, spans = bar._tabs_line(long_crumbs, 2)
    assert len(digits.plain) < len(full.plain) and "Compose › experiments" in digits.plain
    # clicks still land: each tab's span covers its digit
    for (start, end, _mode), (key, _, _) in zip(spans, PANES, strict=True):
        assert digits.plain[start:end].strip().startswith(key)


@async_test
async def test_the_footer_hides_the_keys_the_filter_line_takes_and_builds_no_keys_again(tmp_path):
    from tau_tui.widgets.pane_footer import PaneFooter

    async with demo_app(tmp_path, start_pane="queue") as (_, _, app, pilot):
        footer = app.screen.query_one(PaneFooter)
        keys = list(footer.query(FooterKey))
        shown_before = [k.key for k in keys if k.display]
        assert "l" in shown_before and "question_mark" in shown_before
        await pilot.press("slash")
        await settle(pilot)
        # letters type into the filter line: their keys leave the footer; the same widgets, none built
        assert list(footer.query(FooterKey)) == keys
        shown = [k.key for k in keys if k.display]
        assert "l" not in shown and "d" not in shown and "question_mark" not in shown
        assert shown == [k for k in shown_before if k in shown]
        await pilot.press("escape")
        await settle(pilot)
        assert list(footer.query(FooterKey)) == keys
        assert [k.key for k in keys if k.display] == shown_before
