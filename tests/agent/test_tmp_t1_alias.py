from .test_agent_harness import *  # noqa
import pytest

@pytest.fixture(scope="module")
def plane(t1):
    return t1


def test_debug(plane, admin, applied):
    import json, time
    api = agent_client(plane, admin, NODE_A)
    r = k8s.AuthenticationV1Api(api).create_self_subject_review({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    print("USERINFO", r.status.user_info)
    vap = k8s.AdmissionregistrationV1Api(admin).read_validating_admission_policy("tau-agent-own-node-only")
    print("VAPSTATUS", vap.status)
    time.sleep(3)
    try:
        k8s.CoreV1Api(api).patch_node_status(NODE_B, {"status": {"conditions": [{"type": "X", "status": "True"}]}}, _content_type=STRATEGIC_MERGE)
        print("ALLOWED after wait")
    except ApiException as e:
        print("DENIED", e.status, e.body)
    assert False
