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
