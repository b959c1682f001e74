#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set up Python, build the local control plane
# (cached outside the repo, see docs/testing.md), then run every test tier.
# Extra arguments go to pytest, e.g. `./scripts/test.sh -m t1` for one tier.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# The terminal test drives the real app in tmux.
if ! command -v tmux >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
  else
    echo "scripts/test.sh: tmux is required (apt-get install tmux)" >&2
    exit 1
  fi
fi
bash harness/build.sh
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [[ $status -eq 5 ]]; then
  echo "scripts/test.sh: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit $status
