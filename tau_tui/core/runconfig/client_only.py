"""The `tau.yaml` keys that never reach the rendered objects, on purpose, and why: the one list.

Every other key of the schema changes the rendered Job or RayJob, or is refused where it would do
nothing (`tests/runconfig/test_every_key_accounted_for.py` walks them all).  `tau-tui schema` marks
these `x-tau-status: client-only` and `tau-tui explain-config` says so beside their values.
"""

from __future__ import annotations

CLIENT_ONLY_KEYS: dict[str, str] = {
    "policy.workload_profile_snapshot": "says where the client reads the workload profiles for a client dry-run "
                                        "(an offline snapshot instead of TauCluster/cluster); the profile it selects renders",
    "policy.mode": "an assertion checked against the selected profile's mode (a mismatch is refused; elastic without a "
                   "profile is refused); the profile's mode is what Kueue runs",
    "execution.allow_nccl_override": "a permission: lets NCCL_* names in runtime.env pass validation; the variables "
                                     "themselves render",
}
