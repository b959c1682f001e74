#!/usr/bin/env bash
# The release path: builds the repository's three wheels, tau-gpuhealth (gpuhealth/), tau-agent
# (agent/) and tau-tui (.), into dist/ with dist/SHA256SUMS beside them. tau-gpuhealth is on no
# package registry: installing from dist/ is how it is resolved (scripts/install.sh does that).
# The tau-tui wheel records the commit it was built from (setup.py; `tau-tui --version` prints it).
#
# Usage: scripts/build_dist.sh [--no-build-isolation]
#   --no-build-isolation  build with the setuptools (>= 70.1) of $PYTHON instead of fetching one
#                         from the registry into an isolated build environment (offline builds)
# PYTHON picks the interpreter (default python3, >= 3.11).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
isolation=()
for arg in "$@"; do
  case "$arg" in
    --no-build-isolation) isolation=(--no-build-isolation) ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/build_dist.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "scripts/build_dist.sh: need Python >= 3.11 as \$PYTHON (found: $("$PYTHON" --version 2>&1 || echo none))" >&2
  exit 1
fi
if [[ ${#isolation[@]} -gt 0 ]] && ! "$PYTHON" -c '
import sys
from importlib.metadata import version
major, minor = (int(p) for p in version("setuptools").split(".")[:2])
sys.exit((major, minor) < (70, 1))' 2>/dev/null; then
  echo "scripts/build_dist.sh: --no-build-isolation needs setuptools >= 70.1 in $PYTHON (it builds wheels without the 'wheel' package)" >&2
  exit 1
fi
mkdir -p dist
rm -f dist/tau_gpuhealth-*.whl dist/tau_agent-*.whl dist/tau_tui-*.whl dist/SHA256SUMS
# pip builds in the source folders: setup.py reads the checkout's commit there.
"$PYTHON" -m pip wheel --quiet --no-deps ${isolation[@]+"${isolation[@]}"} --wheel-dir dist ./gpuhealth ./agent .
rm -rf build gpuhealth/build agent/build
"$PYTHON" - <<'PY'
import hashlib
from pathlib import Path

wheels = sorted(Path("dist").glob("tau_*.whl"))
names = sorted(w.name.split("-")[0] for w in wheels)
if names != ["tau_agent", "tau_gpuhealth", "tau_tui"]:
    raise SystemExit(f"scripts/build_dist.sh: expected one wheel each of tau_agent, tau_gpuhealth, tau_tui in dist/, found {names}")
lines = [f"{hashlib.sha256(w.read_bytes()).hexdigest()}  {w.name}\n" for w in wheels]
Path("dist/SHA256SUMS").write_text("".join(lines))
print("".join(lines), end="")
PY
