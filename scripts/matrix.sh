#!/usr/bin/env bash
# The version matrix (issue #33; results in docs/compatibility.md). For each cell of harness/matrix.tsv:
# build what the cell lacks into the harness cache (harness/build.sh with TAU_HARNESS_CELL), then run on
# that cell's control planes the contract suite (real T1), the T1 submit tests, the T1 version check, the
# RayJob lifecycle under the cell's KubeRay operator (T2) and one T3 MultiKueue enablement. Each cell's
# outcome goes to harness/matrix-results/<cell>.json.
# Not part of CI (time): CI runs the default cell, the one harness/versions.env names.
# Usage: scripts/matrix.sh [CELL...]    (none: every cell)
#        scripts/matrix.sh --table [--write docs/compatibility.md]   (the table from the results)
# A Kueue release the module proxy lacks is unpacked from $KUEUE_GIT (default: the public repository).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-.venv/bin/python}"
RESULTS=harness/matrix-results
[[ ${1:-} == --table ]] && exec "$PY" scripts/matrix_results.py table "$RESULTS" "${@:2}"

TESTS=(
  tests/contract
  tests/integration/test_submit_t1.py
  tests/integration/test_found_versions_cell_t1.py
  tests/integration/test_rayjob_kuberay_t2.py
  "tests/integration/test_multikueue_t3.py::test_enablement_dispatch_status_logs_cancel_then_drain_setup_again_drain"
)
cells=("$@")
if [[ ${#cells[@]} == 0 ]]; then
  mapfile -t cells < <(awk '!/^#/ && NF {print $1}' harness/matrix.tsv)
fi
mkdir -p "$RESULTS"
failed=0
for cell in "${cells[@]}"; do
  if ! awk -v cell="$cell" '$1 == cell {found=1} END {exit !found}' harness/matrix.tsv; then
    echo "scripts/matrix.sh: no cell '$cell' in harness/matrix.tsv" >&2
    exit 2
  fi
  echo "scripts/matrix.sh: cell $cell: building"
  log="$RESULTS/$cell.build.log"
  if ! TAU_HARNESS_CELL=$cell bash harness/build.sh >"$log" 2>&1; then
    echo "scripts/matrix.sh: cell $cell: build failed (see $log)" >&2
    "$PY" scripts/matrix_results.py record "$RESULTS" "$cell" --build-failed "$log"
    failed=1
    continue
  fi
  rm -f "$log"
  echo "scripts/matrix.sh: cell $cell: testing"
  junit=$(mktemp --suffix=.xml)
  TAU_HARNESS_CELL=$cell "$PY" -m pytest -q -p no:randomly -m "t1 or t2 or t3" --junitxml="$junit" "${TESTS[@]}"
  status=$?
  "$PY" scripts/matrix_results.py record "$RESULTS" "$cell" --junit "$junit" --pytest-status "$status"
  rm -f "$junit"
  [[ $status == 0 ]] || failed=1
done
"$PY" scripts/matrix_results.py table "$RESULTS"
exit $failed
