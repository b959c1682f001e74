#!/usr/bin/env bash
# Sets up tau-tui and shows it working with no cluster: validates the example tau.yaml and
# renders it (client dry-run) against the shipped offline profile snapshot.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/tau-tui validate tau_tui/examples/tau.yaml
.venv/bin/tau-tui render tau_tui/examples/tau.yaml --profiles tau_tui/examples/profiles-snapshot.yaml
