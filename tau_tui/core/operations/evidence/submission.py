"""Keep what tau-tui submitted: the tau.yaml and the manifests it rendered, redacted (the
tau.yaml's ``runtime.env`` values and the manifests' env values never kept: names only).

The cluster keeps neither (only the config hash travels as an annotation), so a run's evidence
can hold its tau.yaml only when this machine submitted it.  Called by the CLI's ``submit`` and the
compose pane after a real (not dry-run) submit succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml

from tau_tui.core.cluster.convert import format_time
from tau_tui.core.operations.evidence.capture import CONFIG_HASH_ANNOTATION
from tau_tui.core.operations.evidence.store import EvidenceStore, Submission
from tau_tui.core.operations.redaction import redact_object, redact_yaml_values

#: Where a tau.yaml holds environment values (runtime.env_secret holds Secret references, kept).
TAU_YAML_ENV = (("runtime", "env"),)


def keep_submission(store: EvidenceStore, manifests: Sequence[Mapping[str, Any]], submission_id: str,
                    tau_yaml: str | None, tau_yaml_path: str | None, *, source: str, now: datetime) -> Submission | None:
    """Store the submission under the run's namespace and name (its last manifest: the Job or
    RayJob, after a headless Service).  None when there is nothing to key it by."""
    if not manifests:
        return None
    meta = manifests[-1].get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    if not namespace or not name:
        return None
    rendered = yaml.safe_dump_all([redact_object(dict(m)) for m in manifests], sort_keys=False)
    submission = Submission(str(namespace), str(name), submission_id,
                            (meta.get("annotations") or {}).get(CONFIG_HASH_ANNOTATION),
                            redact_yaml_values(tau_yaml, TAU_YAML_ENV) if tau_yaml is not None else None,
                            tau_yaml_path, rendered,
                            source, format_time(now))
    store.record_submission(submission)
    return submission
