#!/usr/bin/env bash
# Installs tau-tui for this user from this checkout, isolated as pipx or `uv tool` would:
#   1. builds the three wheels into dist/ with their checksums (scripts/build_dist.sh);
#   2. installs tau-gpuhealth and tau-tui from dist/ into a private virtual environment,
#      ${XDG_DATA_HOME:-~/.local/share}/tau-tui/venv (replaced whole on a re-install), the
#      third-party dependencies from the package registry (or from --wheelhouse DIR, offline);
#   3. links tau-tui and its kubectl plugin name kubectl-tau_tui (`kubectl tau-tui ...`) into
#      ${XDG_BIN_HOME:-~/.local/bin}, and writes the bash, zsh and fish completion scripts where
#      those shells load them;
#   4. when that folder is not on PATH, adds it in the shell start-up files (~/.profile, and
#      ~/.bashrc, ~/.bash_profile, ~/.zshrc, fish's conf.d where they apply), as rustup and uv do;
#      --no-modify-path only prints the line to add.
# tau-gpuhealth is on no package registry: it always comes from dist/, never from an index.
#
# Usage: scripts/install.sh [--no-modify-path] [--wheelhouse DIR]
#   --wheelhouse DIR   take every third-party dependency from DIR only (pip --no-index), and build
#                      the wheels with the setuptools of $PYTHON: nothing is fetched from a registry
# PYTHON picks the interpreter (default python3, >= 3.11).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
modify_path=1
wheelhouse=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-modify-path) modify_path=0 ;;
    --wheelhouse) [[ $# -ge 2 ]] || { echo "scripts/install.sh: --wheelhouse needs a folder" >&2; exit 2; }
                  wheelhouse=$(cd "$2" && pwd); shift ;;
    -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}"
BIN_DIR="${XDG_BIN_HOME:-$HOME/.local/bin}"
VENV="$DATA_HOME/tau-tui/venv"
say() { printf 'scripts/install.sh: %s\n' "$*"; }

build_args=()
pip_index=()
if [[ -n $wheelhouse ]]; then
  build_args=(--no-build-isolation)
  pip_index=(--no-index --find-links "$wheelhouse")
fi
say "building the wheels into dist/"
PYTHON="$PYTHON" bash scripts/build_dist.sh ${build_args[@]+"${build_args[@]}"} >/dev/null
"$PYTHON" - <<'PY'
import hashlib
from pathlib import Path

for line in Path("dist/SHA256SUMS").read_text().splitlines():
    digest, name = line.split()
    if hashlib.sha256(Path("dist", name).read_bytes()).hexdigest() != digest:
        raise SystemExit(f"scripts/install.sh: dist/{name} does not match dist/SHA256SUMS")
PY
gpuhealth_wheel=$(ls dist/tau_gpuhealth-*.whl)
tui_wheel=$(ls dist/tau_tui-*.whl)

# The previous environment is set aside and comes back if this install fails.
mkdir -p "$DATA_HOME/tau-tui" "$BIN_DIR"
rm -rf "$VENV.old"
[[ -e $VENV ]] && mv "$VENV" "$VENV.old"
restore() {
  rm -rf "$VENV"
  [[ -e $VENV.old ]] && mv "$VENV.old" "$VENV"
  say "the install failed (see above); the previous one, if any, is back in place" >&2
  exit 1
}
say "installing into $VENV"
"$PYTHON" -m venv "$VENV" || restore
# Both local wheels named as files: pip takes tau-gpuhealth from dist/ and asks no index for it.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check ${pip_index[@]+"${pip_index[@]}"} "$gpuhealth_wheel" "$tui_wheel" \
  || restore
"$VENV/bin/tau-tui" --version >/dev/null || restore
rm -rf "$VENV.old"

for program in tau-tui kubectl-tau_tui; do
  ln -sfn "$VENV/bin/$program" "$BIN_DIR/$program"
done

# Completion scripts where each installed shell looks for them (bash-completion 2 loads one per
# command on demand; fish loads completions/ by itself; zsh needs the folder on $fpath).
user_shell=$(basename "${SHELL:-sh}")
has_shell() { [[ $user_shell == "$1" ]] || command -v "$1" >/dev/null 2>&1; }
FISH_CONFIG="${XDG_CONFIG_HOME:-$HOME/.config}/fish"
completions=()
has_shell bash && completions+=("bash:$DATA_HOME/bash-completion/completions/tau-tui"
                                "bash:$DATA_HOME/bash-completion/completions/kubectl-tau_tui")
has_shell zsh && completions+=("zsh:$DATA_HOME/zsh/site-functions/_tau-tui")
has_shell fish && completions+=("fish:$FISH_CONFIG/completions/tau-tui.fish")
for entry in ${completions[@]+"${completions[@]}"}; do
  shell=${entry%%:*} file=${entry#*:}
  mkdir -p "$(dirname "$file")"
  "$VENV/bin/tau-tui" completion "$shell" >"$file"
done

on_path() { case ":$PATH:" in *":$BIN_DIR:"*) return 0 ;; *) return 1 ;; esac; }
# The line each start-up file gets; the marker keeps a second install from adding it twice.
MARK="# added by tau-tui's scripts/install.sh"
posix_line="export PATH=\"$BIN_DIR:\$PATH\"  $MARK"
add_line() {  # add_line FILE LINE
  if [[ ! -f $1 ]] || ! grep -qxF "$2" "$1"; then
    mkdir -p "$(dirname "$1")"
    printf '\n%s\n' "$2" >>"$1"
    changed+=("$1")
  fi
}
changed=()
if ! on_path; then
  if [[ $modify_path == 1 ]]; then
    add_line "$HOME/.profile" "$posix_line"
    # bash reads ~/.bash_profile instead of ~/.profile at login when it exists, and ~/.bashrc otherwise.
    [[ -f $HOME/.bash_profile ]] && add_line "$HOME/.bash_profile" "$posix_line"
    [[ $user_shell == bash || -f $HOME/.bashrc ]] && add_line "$HOME/.bashrc" "$posix_line"
    { has_shell zsh || [[ -f $HOME/.zshrc ]]; } && add_line "$HOME/.zshrc" "$posix_line"
    has_shell fish && add_line "$FISH_CONFIG/conf.d/tau-tui.fish" "fish_add_path --path \"$BIN_DIR\"  $MARK"
  else
    say "$BIN_DIR is not on your PATH; add it in your shell's start-up file:"
    say "  $posix_line"
  fi
fi

say "installed $("$BIN_DIR/tau-tui" --version) as $BIN_DIR/tau-tui and $BIN_DIR/kubectl-tau_tui"
if [[ ${#changed[@]} -gt 0 ]]; then
  say "added $BIN_DIR to PATH in: ${changed[*]}"
  say "open a new shell (or run: export PATH=\"$BIN_DIR:\$PATH\") and try: tau-tui --demo"
elif on_path; then
  say "try: tau-tui --demo"
fi
if [[ $user_shell == zsh ]]; then  # zsh reads completion functions from $fpath folders listed before compinit
  say "zsh completion: add  fpath=(\"$DATA_HOME/zsh/site-functions\" \$fpath)  before compinit in ~/.zshrc"
fi
