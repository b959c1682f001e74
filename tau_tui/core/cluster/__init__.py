"""Cluster access layer: the :class:`~tau_tui.core.cluster.interfaces.ClusterBackend` contract,
its real Kubernetes implementation (``real``; the simulated one, ``tau_tui.core.sim``, is a layer
above) and the read models built on it (views, queue positions, log spools).  No Textual imports here.

Modules, by the way data flows:

* ``names``, ``kinds``: API groups, label keys, the resource kinds the cache holds;
* ``convert``: raw objects as served -> the frozen views of ``view_types``;
* ``cache``: one store per kind, diffing lists and coalescing watch events into the change
  batches of ``changes``;
* ``positions``, ``logspool``: the read models for queue positions and container logs;
* ``mutations``, ``errors``, ``api_failure``: mutation outcomes, plain error messages, and a failed
  API call;
* ``submission_kinds``: the kinds a rendered submission may hold beyond the watched ones;
* ``interfaces``: the small role interfaces (lister, getter, watcher, mutator, ...) and
  ``ClusterBackend`` composed from them; ``common.BaseBackend`` implements them once over
  a few primitives for both backends.

Nothing is re-exported here: import from the module that defines a name.
"""
