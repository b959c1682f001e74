"""tau.yaml files of varied shapes for the save property tests, and each Compose field's kind."""

from __future__ import annotations

from tau_tui.core.runconfig.document import NEW_TEMPLATE
from tau_tui.screens.compose_form import FORM
from tests.app.conftest import VALID_TAU_YAML

KINDS = {path: kind for _, fields in FORM for path, _, kind, _ in fields}
KINDS["policy.profile"] = "text"

FILES = [
    VALID_TAU_YAML,  # top-level aliases, comments on their own lines and after values
    # comments inside a map, quoted values, a flow list, an empty flow map, lists at offset 0
    """\
run:
  name: "quoted-name"
  script: train.py   # the alias of entrypoint
runtime:
  image: 'python:3.12'
  env:
    # tokenizer threads
    TOKENIZERS_PARALLELISM: "false"   # keep quiet
    OMP_NUM_THREADS: 4
  pip: [torch, numpy]
policy: {}  # set by the profile
resilience:
  retry_on:
  - Preempted
  # - OOMKilled
  - Evicted
  max_retries: 2
""",
    # four-space indentation, a document start, a flow map section, no newline at the end
    """\
---
run:
    name: four
    engine: rayjob
compute:
    workers: 2
    gpus_per_worker: 1
policy: {namespace: team-a, lane: training}
storage:
    volumes:
        - data-pvc
    output: /out""",
    NEW_TEMPLATE,
    # a block scalar, an anchor and its alias, an empty value, a section that is null, a nested section
    """\
# header
name: &n blocky
entrypoint: |
  python train.py
  --epochs 3
image: *n
policy:
runtime:
  security:
    mode: restricted   # keep
  working_dir:
compute:
  cpu_request: "4"
  memory_request: 16Gi
""",
]
