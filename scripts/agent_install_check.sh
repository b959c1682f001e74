#!/usr/bin/env bash
# Shows that installing the agent pulls nothing of the TUI: makes a clean virtual environment in a
# temporary folder, runs `pip install ./gpuhealth ./agent` (third-party dependencies from the
# package registry, as agent/Dockerfile does), prints `pip list`, and fails if Textual, keyring or
# ruamel.yaml were installed or if `import tau_agent.main` loads Textual. Needs network access;
# tests/packaging/test_agent_package.py checks the same without it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/tau-agent-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# Build from a copy of what agent/Dockerfile's context holds, so no build/ folder of the checkout
# (nor one left there) takes part.
mkdir -p "$work/src/gpuhealth" "$work/src/agent"
cp gpuhealth/pyproject.toml "$work/src/gpuhealth/" && cp -r gpuhealth/tau_gpuhealth "$work/src/gpuhealth/"
cp agent/pyproject.toml "$work/src/agent/" && cp -r agent/tau_agent "$work/src/agent/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
"$PYTHON" -m venv "$work/venv"
venv_python="$work/venv/bin/python"
# Both local packages in one command, so tau-gpuhealth comes from ./gpuhealth, never the registry.
(cd "$work/src" && "$venv_python" -m pip install --quiet --disable-pip-version-check ./gpuhealth ./agent)
echo "scripts/agent_install_check.sh: pip list after pip install ./gpuhealth ./agent"
"$venv_python" -m pip list --disable-pip-version-check
forbidden="$("$venv_python" -m pip list --disable-pip-version-check --format=freeze |
  grep -iE '^(textual|keyring|ruamel[._-]yaml|ruamel|tau-tui|tau_tui)==' || true)"
if [[ -n "$forbidden" ]]; then
  echo "scripts/agent_install_check.sh: FAILED: the agent's install pulled TUI packages:" >&2
  echo "$forbidden" >&2
  exit 1
fi
# Run from the temporary folder so the checkout's own packages cannot be imported by accident.
(cd "$work" && "$venv_python" -c '
import sys
import tau_agent.main, tau_agent.agent, tau_gpuhealth.model
from tau_gpuhealth.nodeconditions import packaged_mapping
from tau_gpuhealth.xid import load_xid_catalog
load_xid_catalog(), packaged_mapping()  # the packaged data files came with the wheel
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "tau_tui", "keyring", "ruamel"))
if loaded:
    sys.exit(f"importing the agent loaded {loaded}")
print("scripts/agent_install_check.sh: import tau_agent.main loads no textual, tau_tui, keyring or ruamel")
')
echo "scripts/agent_install_check.sh: OK: no textual, keyring or ruamel.yaml in the agent's install"
