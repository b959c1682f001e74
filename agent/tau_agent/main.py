"""tau-agent command line.

  tau-agent --config /etc/tau-agent/config.yaml     run as the DaemonSet does
  tau-agent --check [--config FILE]                  one read-only NVML poll, print the verdict
                                                     as JSON; exit 0 healthy, 1 degraded,
                                                     2 unhealthy, 3 unknown. Writes nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any

from tau_gpuhealth.conditions import node_conditions
from tau_gpuhealth.verdicts import Verdict
from tau_gpuhealth.xid import CatalogError

from .call_guard import CallGuard
from .collector import Collector, read_boot_id
from .config import AgentConfig, ConfigError, load_config
from .nvml_reader import NvmlReader

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

EXIT_CODES = {Verdict.HEALTHY: 0, Verdict.DEGRADED: 1, Verdict.UNHEALTHY: 2, Verdict.UNKNOWN: 3}
log = logging.getLogger("tau_agent")


def _import_nvml() -> Any:
    import pynvml  # nvidia-ml-py

    return pynvml


def build_collector(config: AgentConfig, nvml: Any = None) -> Collector:
    reader = NvmlReader(nvml if nvml is not None else _import_nvml())
    guard = CallGuard(config.intervals.call_timeout_s)
    return Collector(reader, guard, boot_id=lambda: read_boot_id(config.boot_id_path))


def run_check(config: AgentConfig, node_name: str) -> int:
    """Safe triage path: read NVML once (counters included) and print the verdict; no API writes."""
    from .agent import Agent

    agent = Agent(config, build_collector(config), writer=None, node_name=node_name)
    agent.tick()
    assert agent.health is not None
    out = {
        "node": node_name,
        "verdict": agent.health.verdict.value,
        "conditions": [c.model_dump() for c in node_conditions(agent.health)],
        "health": agent.health.model_dump(by_alias=True, mode="json", exclude_none=True),
    }
    print(json.dumps(out, indent=2))
    agent.collector.shutdown()
    return EXIT_CODES[agent.health.verdict]


def _kube_api_client(kubeconfig: str | None) -> ApiClient:
    from kubernetes import client
    from kubernetes import config as kube_config

    if kubeconfig:
        api: ApiClient = kube_config.new_client_from_config(config_file=kubeconfig)
        return api
    kube_config.load_incluster_config()
    return client.ApiClient()


def run_daemon(config: AgentConfig, node_name: str, namespace: str, kubeconfig: str | None) -> int:
    from .agent import Agent
    from .kube import KubernetesWriter
    from .server import make_servers, serve_in_background
    from .xid_watcher import XidWatcher

    collector = build_collector(config)
    writer = KubernetesWriter(_kube_api_client(kubeconfig), node_name, namespace)
    watcher = XidWatcher(collector.reader, wait_ms=config.intervals.xid_wait_ms)
    agent = Agent(config, collector, writer, node_name=node_name, xids=watcher)
    watcher.on_xid = agent.wake.set
    servers = make_servers(agent, config.server)
    for server in servers:
        serve_in_background(server)
    watcher.start()

    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %s: stopping", signum)
        stop.set()
        agent.wake.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info(
        "tau-agent on node %s, port %s (/healthz, /metrics), probe port %s (/healthz), 127.0.0.1:%s (/status), "
        "events in namespace %s",
        node_name, config.server.port, config.server.probe_port, config.server.status_port, namespace,
    )
    agent.run(stop)
    watcher.stop()
    for server in servers:
        server.shutdown()
        server.server_close()
    collector.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tau-agent", description="GPU health node agent (NVML -> Kubernetes)")
    parser.add_argument("--config", help="agent config YAML (default: built-in defaults)")
    parser.add_argument("--node-name", help="this node's name (default: config node_name or $NODE_NAME)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster service account)")
    parser.add_argument("--check", action="store_true", help="one read-only poll; print the verdict; write nothing")
    parser.add_argument("--log-level", default=os.environ.get("TAU_AGENT_LOG_LEVEL", "INFO"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"tau-agent: invalid config:\n{exc}", file=sys.stderr)
        return 64
    node_name = args.node_name or config.node_name or os.environ.get("NODE_NAME") or ""
    try:
        if args.check:
            return run_check(config, node_name or os.uname().nodename)
        if not node_name:
            print("tau-agent: no node name: set NODE_NAME (downward API spec.nodeName) or --node-name", file=sys.stderr)
            return 64
        # Events about a Node (cluster-scoped) must live in "default" (API validation rule).
        namespace = config.events_namespace or "default"
        return run_daemon(config, node_name, namespace, args.kubeconfig)
    except CatalogError as exc:
        print(f"tau-agent: {exc}", file=sys.stderr)
        return 64


if __name__ == "__main__":
    sys.exit(main())
