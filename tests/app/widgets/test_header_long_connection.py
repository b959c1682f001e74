"""A server's long error must not push the pane tabs off the two-line header."""

from __future__ import annotations

from tau_tui.core.cluster.changes import ConnectionState, ConnectionStatus
from tau_tui.widgets.header_bar import HeaderBar, HeaderState

REFUSED = ("cannot connect to https://127.0.0.1:1: HTTPSConnection(host='127.0.0.1', port=1): Failed to establish "
           "a new connection: [Errno 111] Connection refused. Check the network/VPN and the kubeconfig server address, "
           "or raise --request-timeout.")


def test_a_first_connection_that_failed_says_cannot_connect_once():
    label = ConnectionState(ConnectionStatus.STALE, "dead", None, REFUSED).label
    assert label == REFUSED and label.count("cannot connect") == 1
    assert ConnectionState(ConnectionStatus.STALE, "dead", None, "timed out").label == "cannot connect: timed out"


def test_the_header_keeps_one_line_each_for_state_and_tabs_with_a_long_error():
    header = HeaderBar()  # unmounted: renders at 80 columns
    header.state = HeaderState(context="dead", namespace="team-a", readonly=True, pane="queue",
                               connection=ConnectionState(ConnectionStatus.STALE, "dead", None, REFUSED).label)
    top, tabs = header.render().split()
    assert top.cell_len <= 80 and tabs.cell_len <= 80
    assert "✗ cannot connect to https://127.0." in top.plain and "…" in top.plain
    assert "READ-ONLY" in top.plain  # the badge stays visible
    assert "Queue" in tabs.plain
