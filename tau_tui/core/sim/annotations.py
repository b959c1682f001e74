"""Annotations a scenario puts on a Job or RayJob to steer the simulation
(how long its pods run, how they end, what they log)."""

SIM_PREFIX = "sim.tau-tui.io/"
DURATION_ANNOTATION = SIM_PREFIX + "duration-seconds"
#: Log style of a pod's main container (train, json, ...); a Job may set it for its pods.
LOG_STYLE_ANNOTATION = SIM_PREFIX + "log-style"
OUTCOME_ANNOTATION = SIM_PREFIX + "outcome"
RESTARTS_ANNOTATION = SIM_PREFIX + "restarts"
