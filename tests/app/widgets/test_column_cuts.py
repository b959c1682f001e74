"""Columns by priority (issue #43 defect 7): optional columns go lowest priority first, and a cell
wider than its column ends in "…", or keeps both ends in a name column."""

from __future__ import annotations

from rich.text import Text

from tau_tui.widgets.table_columns import ColumnSpec, fit_cell, fitted_widths


def test_a_name_cut_in_the_middle_keeps_both_ends_and_its_styles():
    name = Text("taugrid-default/job-llama-8b-dpo-0eff2", style="bold")
    name.stylize("red", 0, 15)
    cut = fit_cell(name, 25, middle=True)
    assert cut.plain == "taugrid-defa…8b-dpo-0eff2" and cut.cell_len == 25
    assert cut.style == "bold" and any(span.style == "red" and span.end == 12 for span in cut.spans)
    other = fit_cell(Text("taugrid-default/job-llama-70b-sft-414fa"), 25, middle=True)
    assert other.plain != cut.plain and other.plain.endswith("sft-414fa")


def test_a_cell_that_fits_is_the_same_object_and_others_end_in_an_ellipsis():
    fits = Text("waiting for quota")
    assert fit_cell(fits, 17, middle=False) is fits
    assert fit_cell(Text("couldn't assign flavors to pod set main:"), 20, middle=False).plain == "couldn't assign fla…"
    assert fit_cell(Text("日本語テキスト"), 5, middle=True).cell_len <= 5  # wide characters: cut at the end


def test_optional_columns_go_lowest_priority_first_then_from_the_right():
    specs = [ColumnSpec("name", "Name"), ColumnSpec("a", "A", optional=True, priority=2),
             ColumnSpec("b", "B", optional=True), ColumnSpec("c", "C", optional=True, priority=2),
             ColumnSpec("state", "State")]
    content = [10, 10, 10, 10, 10]
    for available, hidden in ((60, set()), (59, {"b"}), (47, {"b", "c"}), (35, {"a", "b", "c"})):
        _, gone = fitted_widths(specs, content, available, padding=1)
        assert gone == hidden, (available, gone)
