"""The admission policies name the agent's service account exactly as the manifests create it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

AGENT = Path(__file__).resolve().parents[2] / "manifests" / "agent"


def _documents(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((AGENT / name).read_text()) if doc]


def test_both_policies_match_the_agents_own_namespace_and_service_account():
    (namespace,) = (doc["metadata"]["name"] for doc in _documents("namespace.yaml") if doc["kind"] == "Namespace")
    (account,) = (doc for doc in _documents("serviceaccount.yaml") if doc["kind"] == "ServiceAccount")
    assert account["metadata"]["namespace"] == namespace
    username = f"system:serviceaccount:{namespace}:{account['metadata']['name']}"
    subjects = [s for doc in _documents("rbac.yaml") for s in doc.get("subjects") or ()]
    assert subjects and all((s["namespace"], s["name"]) == (namespace, account["metadata"]["name"]) for s in subjects)
    policies = [doc for doc in _documents("admission-policy.yaml") if doc["kind"] == "ValidatingAdmissionPolicy"]
    assert len(policies) == 2
    for policy in policies:
        (condition,) = policy["spec"]["matchConditions"]
        assert re.fullmatch(rf"request\.userInfo\.username == '{re.escape(username)}'", condition["expression"]), (
            policy["metadata"]["name"], condition["expression"])


def test_the_policy_allows_exactly_the_event_names_and_reasons_the_agent_writes():
    """One Event per node and reason: the policy's reason set and name rule are the agent's."""
    from tau_agent.budget import EVENT_REASON_PATTERN, event_name

    text = (AGENT / "admission-policy.yaml").read_text()
    assert f"matches('{EVENT_REASON_PATTERN}')" in text
    assert "object.metadata.name == variables.nodeName + '.gpuhealth.' + object.?reason.orValue('').lowerAscii()" in text
    assert event_name("gpu-7", "GpuXid79") == "gpu-7.gpuhealth.gpuxid79"
