"""The GPU health model, shared by the node agent (``agent/tau_agent``) and the TUI.

A distribution of its own (``tau-gpuhealth``, ``gpuhealth/pyproject.toml``) that both depend on.
Pure Python: stdlib, pydantic and PyYAML only; no Kubernetes client, no Textual, no NVML, nothing
of tau_tui.

Read by data flow:

* ``names``: what is written to Kubernetes (API group, condition types, taint, annotations);
* ``verdicts``: healthy / degraded / unknown / unhealthy, ranked fail-closed, and on-call actions;
* ``xid`` (+ ``data/xid_catalog.yaml``), ``policy``: the classification data and the thresholds;
* ``samples``: what the agent read from NVML in one poll;
* ``gpu_findings``: what one GPU sample says on its own (threshold findings, telemetry);
* ``model``: the agent's stateful ``HealthModel`` (latches, hysteresis) turning samples into a
  ``report.NodeHealth``; ``conditions``: the node conditions and transition Events it publishes;
* ``nodeview``: the TUI's side, reading a Node and its GPUNodeHealth object back into a verdict.

Nothing is re-exported here: import from the module that defines a name.
"""
