#!/usr/bin/env bash
# Sets up tau-tui and starts it on the embedded simulated cluster (scenario "demo").
# Extra arguments go to tau-tui, e.g. `./scripts/demo.sh faults` or `--theme tau-light`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
if ! command -v tau-tui >/dev/null 2>&1; then
  echo "scripts/demo.sh: tau-tui is not on your PATH: ./scripts/install.sh puts it in ~/.local/bin (or run .venv/bin/tau-tui)" >&2
fi
exec .venv/bin/tau-tui --demo "$@"
