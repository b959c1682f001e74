"""A Nodes read stopped half way (the user moved on while it planned every row) leaves nothing that
the next read would build on: the next table update covers every row the stopped read had changed,
so a node that went stale or was cordoned meanwhile is never left showing healthy."""

from __future__ import annotations

import types

import pytest

from tau_tui.screens import pane_reader
from tau_tui.screens.nodes import NodesScreen
from tests.app.helpers import plain_cells
from tests.app.panes.nodes.many_nodes import Host, PaneDriver, cluster_of, cordon

cluster = cluster_of(40)


def test_a_read_stopped_while_planning_every_row_is_not_built_on(cluster, monkeypatch):
    world, backend = cluster
    driver = PaneDriver(NodesScreen(), Host(backend, world.now()), "nodes-table", 11)
    driver.read()  # fresh data: every row planned and applied
    cordon(world, backend, "gpu-30")
    # The data turns stale (a reconnect): every row is read again, and that read is abandoned while planning.
    monkeypatch.setattr(NodesScreen, "read_freshness", lambda self: types.SimpleNamespace(stale=True))

    def no_longer_wanted(self, *args, **kwargs):
        raise pane_reader.ReadNoLongerWanted()  # what keep_reading() raises once a newer read is wanted

    planning = pane_reader.ReadRequest.plan_table
    monkeypatch.setattr(pane_reader.ReadRequest, "plan_table", no_longer_wanted)
    with pytest.raises(pane_reader.ReadNoLongerWanted):
        driver.read()
    monkeypatch.setattr(pane_reader.ReadRequest, "plan_table", planning)
    cordon(world, backend, "gpu-31")
    data = driver.read()
    shown = {key: plain_cells(cells) for key, cells in driver.table.cells.items()}
    read = {key: plain_cells(cells) for key, cells in dict(data.rows).items()}
    assert sorted(key for key in read if read[key] != shown.get(key)) == []
    assert "cordoned" in " ".join(shown["gpu-30"]) and "stale" in " ".join(shown["gpu-30"])
