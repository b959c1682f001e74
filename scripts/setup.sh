#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs, editable and in one pip command, the three
# distributions of this repository: the GPU health model (gpuhealth/), the agent (agent/; its
# tests need its dependencies) and tau-tui with its test extras. One command, so pip takes
# tau-gpuhealth from ./gpuhealth and never looks for it in the registry.
#
# Idempotent and quick when nothing changed: pip runs only when the stamp in .venv (a hash of the
# three pyproject.toml files, setup.py, this script and the venv's Python version) differs, or the
# venv lacks one of the three distributions. Concurrent runs serialise on a lock directory (mkdir is
# atomic everywhere; no flock, which stock macOS lacks); a .venv left broken by an interrupted run
# (no working pip) is recreated.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
STAMP=.venv/.tau-setup-stamp
LOCK=.venv.setup.lock.d

# The stamp the current files and interpreter give; empty when .venv/bin/python does not run.
wanted_stamp() {
  [[ -x .venv/bin/python ]] || return 0
  .venv/bin/python - pyproject.toml gpuhealth/pyproject.toml agent/pyproject.toml setup.py scripts/setup.sh <<'EOF' 2>/dev/null || true
import glob, hashlib, os, re, sys, sysconfig, tomllib
site = sysconfig.get_paths()["purelib"]
digest = hashlib.sha256(sys.version.encode())
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b"missing"
    digest.update(path.encode() + b"\0" + data)
    if path.endswith("pyproject.toml"):  # each distribution is still installed (its .dist-info is there)
        name = re.sub(r"[-_.]+", "_", tomllib.loads(data.decode())["project"]["name"]).lower()
        if not glob.glob(os.path.join(site, f"{name}-*.dist-info")):
            sys.exit(1)
print(digest.hexdigest())
EOF
}

up_to_date() {
  local want
  want=$(wanted_stamp)
  [[ -n $want && -f $STAMP && $(<"$STAMP") == "$want" ]]
}

# Fast path, no lock: a run in progress removes the stamp before it touches .venv.
up_to_date && exit 0

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "scripts/setup.sh: need Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

# One run at a time per checkout: a second run waits here instead of racing on .venv. A lock whose
# owner is gone (killed) is taken over.
waited=0
until mkdir "$LOCK" 2>/dev/null; do
  owner=$(cat "$LOCK/pid" 2>/dev/null || true)
  if [[ -n $owner ]] && ! kill -0 "$owner" 2>/dev/null; then
    echo "scripts/setup.sh: taking over $LOCK from process $owner, which is gone" >&2
    rm -rf "$LOCK"
    continue
  fi
  if (( waited >= 600 )); then
    echo "scripts/setup.sh: another setup (process ${owner:-?}) has held $LOCK for 10 minutes; stop it or remove $LOCK" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
echo $$ >"$LOCK/pid"
trap 'rm -rf "$LOCK"' EXIT

# The run we waited for may have done the work.
up_to_date && exit 0
rm -f "$STAMP"
if [[ -e .venv ]] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  echo "scripts/setup.sh: .venv is broken (no working pip); recreating it" >&2
  rm -rf .venv
fi
[[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ./gpuhealth -e ./agent -e '.[test]'
stamp=$(wanted_stamp)
if [[ -z $stamp ]]; then
  echo "scripts/setup.sh: .venv lacks a distribution of pyproject.toml, gpuhealth/ or agent/ after pip install" >&2
  exit 1
fi
printf '%s\n' "$stamp" >"$STAMP"
