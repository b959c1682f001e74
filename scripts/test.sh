#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set up Python, run the linters (ruff, mypy), build the
# local control plane (cached outside the repo, see docs/testing.md), then run every test tier.
# Extra arguments go to pytest, e.g. `./scripts/test.sh -m t1` for one tier.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# Linters first: ruff (pyflakes, isort, pyupgrade, bugbear, pycodestyle) and mypy (strict on
# tau_tui.core and tau_agent); configuration in pyproject.toml, see docs/testing.md.
echo "scripts/test.sh: ruff check ."
if ! .venv/bin/ruff check .; then
  echo "scripts/test.sh: LINT FAILED: ruff check . found problems (see above; many fix with .venv/bin/ruff check --fix .)" >&2
  exit 1
fi
echo "scripts/test.sh: mypy (tau_tui, gpuhealth/tau_gpuhealth, agent/tau_agent)"
if ! .venv/bin/mypy; then
  echo "scripts/test.sh: TYPE CHECK FAILED: mypy found problems (see above)" >&2
  exit 1
fi
echo "scripts/test.sh: ruff and mypy passed"
# The terminal tests drive the real app in tmux; the completion tests load the zsh script into zsh
# (2.5 MB; fish, whose package pulls man-db and groff, is checked only where it is installed).
missing=()
for tool in tmux zsh; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "scripts/test.sh: ${missing[*]} required (apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi
bash harness/build.sh
set +e
# Two workers (pytest-xdist): most tests wait on a simulated cluster, a control plane or a
# terminal more than they compute, so two share the machine's cores; tests/conftest.py keeps each
# control plane's tests in one worker. TAU_TEST_WORKERS=0 runs them in this process.
.venv/bin/python -m pytest -n "${TAU_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder --durations=30 "$@"
status=$?
set -e
if [[ $status -eq 5 ]]; then
  echo "scripts/test.sh: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit $status
