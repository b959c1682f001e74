#!/usr/bin/env bash
# Sets up tau-tui and starts it on the embedded simulated cluster (scenario "demo").
# Extra arguments go to tau-tui, e.g. `./scripts/demo.sh faults` or `--theme tau-light`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/tau-tui --demo "$@"
