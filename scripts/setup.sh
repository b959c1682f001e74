#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs tau-tui with its test extras and the agent's
# dependencies (the agent's tests need them). Idempotent; concurrent runs serialise on a lock,
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
.venv/bin/python -m pip install --quiet -e '.[test,agent]'
