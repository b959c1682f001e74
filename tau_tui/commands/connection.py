"""How a headless command reaches the cluster: request timeouts, the API client, live profiles."""

from __future__ import annotations

import argparse

from ..core.cluster.kubeconfig import KubeconfigSource


def request_timeouts(args: argparse.Namespace):
    """``--request-timeout`` if given, else the app config's keys, else the defaults."""
    from ..core.cluster.kubeconfig import RequestTimeouts

    given = getattr(args, "request_timeout", None)
    if given is not None:
        return RequestTimeouts.from_read(given)
    from ..settings.settings_file import load_settings

    return load_settings().settings.timeouts()


def api_client(context: str | None, timeouts=None):
    return KubeconfigSource().api_client(context, timeouts)


def live_profiles(context: str | None, timeouts=None):
    """Reads TauCluster/cluster only when the pipeline needs the live profiles."""
    from ..core.cluster.profile_reader import read_profile_set

    def read():
        return read_profile_set(api_client(context, timeouts))

    return read
