#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs, editable and in one pip command, the three
# distributions of this repository: the GPU health model (gpuhealth/), the agent (agent/; its
# tests need its dependencies) and tau-tui with its test extras. One command, so pip takes
# tau-gpuhealth from ./gpuhealth and never looks for it in the registry. Idempotent; concurrent runs serialise on a lock,
# and a .venv left broken by an interrupted run (no working pip) is recreated.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "scripts/setup.sh: need Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
# One run at a time per checkout: a second run waits here instead of racing on .venv.
exec 9>".venv.setup.lock"
if ! flock -w 600 9; then
  echo "scripts/setup.sh: another setup has held .venv.setup.lock for 10 minutes; stop it or remove .venv" >&2
  exit 1
fi
if [[ -e .venv ]] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  echo "scripts/setup.sh: .venv is broken (no working pip); recreating it" >&2
  rm -rf .venv
fi
[[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ./gpuhealth -e ./agent -e '.[test]'
