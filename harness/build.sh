#!/usr/bin/env bash
# Builds the local control plane binaries for the test harness from Go modules:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kueue, kwok, the KubeRay operator;
#   promtool is unpacked from Debian's prometheus package instead (no Go build);
#   and on request the benchmark peers k9s and kueuectl and the delaying proxy toxiproxy
#   (never in the default run CI uses).
# Output: $XDG_CACHE_HOME/tau-tui/harness/<component>-<version>/ (outside the repo),
# skipped when that directory is complete. Versions come from harness/versions.env only.
# Usage: bash harness/build.sh [component...]   (components: modules etcd k8s k8s-upgrade kueue kwok kuberay
#        promtool k9s kueuectl toxiproxy; none given: modules etcd kueue k8s k8s-upgrade kwok kuberay promtool)
# TAU_HARNESS_CELL=<cell> builds a version-matrix cell of harness/matrix.tsv instead of the default
# (scripts/matrix.sh sets it); a Kueue release the module proxy lacks is built from its git tag,
# read from $KUEUE_GIT (a clone or bare repository; default the public repository).
set -euo pipefail

HARNESS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HARNESS_DIR/versions.env"
# KWOK and the pinned API libraries of every wrapper stay at the default cell's Kubernetes minor:
# they are clients, and one build serves every cell.
DEFAULT_K8S_VERSION=$K8S_VERSION
KUEUE_SOURCE=module
if [[ -n "${TAU_HARNESS_CELL:-}" ]]; then
  cell_row=$(awk -v cell="$TAU_HARNESS_CELL" '$1 == cell' "$HARNESS_DIR/matrix.tsv")
  if [[ -z $cell_row ]]; then
    echo "harness/build.sh: no cell '$TAU_HARNESS_CELL' in harness/matrix.tsv" >&2
    exit 2
  fi
  read -r _ K8S_VERSION KUEUE_VERSION KUEUE_SOURCE KUBERAY_VERSION _ <<<"$cell_row"
  if [[ -z $KUBERAY_VERSION || ! $KUEUE_SOURCE =~ ^(module|git)$ ]]; then
    echo "harness/build.sh: cell '$TAU_HARNESS_CELL' in harness/matrix.tsv needs five columns (source: module or git)" >&2
    exit 2
  fi
fi
KUEUE_GIT="${KUEUE_GIT:-https://github.com/kubernetes-sigs/kueue.git}"
# What names a Kueue build in the cache: a release built from its git tag never shares a directory
# with the same release from the module proxy (tests/harness/binaries.py derives the same names).
KUEUE_BUILD=$KUEUE_VERSION
[[ $KUEUE_SOURCE == git ]] && KUEUE_BUILD="git-$KUEUE_VERSION"

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [[ ! -x "$GO" ]]; then
  echo "harness/build.sh: no Go toolchain found (need Go >= 1.25; set GO=/path/to/go)" >&2
  exit 1
fi
go_version=$("$GO" env GOVERSION)  # e.g. go1.26.8
need_go() {  # need_go <go1.N> <what needs it>
  printf '%s\n' "$1" "$go_version" | sort -V -C && return 0
  echo "harness/build.sh: $GO is $go_version; $2 needs Go >= ${1#go}" >&2
  return 1
}
need_go go1.25 "Kubernetes 1.35 and Kueue v0.17" || exit 1
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/tau-tui/harness"
mkdir -p "$CACHE_ROOT"
# Never fetch another toolchain and never read a go.work from the repo.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
NICE="nice -n 10"

log() { printf '[harness/build %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# Wrapper module sources live beside the output, keyed by version, so a version change
# starts from a clean module and the repo never holds generated go.mod/go.sum.
wrapper() {  # wrapper <dir> <module-name>
  rm -rf "$1"; mkdir -p "$1"
  (cd "$1" && "$GO" mod init "$2" >/dev/null 2>&1)
}

# The staging modules of K8S_VERSION: every `k8s.io/<name> v0.0.0` requirement in the go.mod of
# k8s.io/kubernetes. Derived, never hard-coded (each minor may add some).
k8s_staging_modules() {  # k8s_staging_modules <module-dir>
  local gomod
  gomod=$(cd "$1" && "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
          | python3 -c 'import sys,json; print(json.load(sys.stdin)["GoMod"])') || return 1
  awk '$2=="v0.0.0" && $1 ~ /^k8s\.io\// {print $1}' "$gomod" | sort -u
}

# k8s.io/kubernetes requires its staging modules at v0.0.0; each needs a replace to the
# published v0.<minor>.<patch> tag.
k8s_replaces() {  # k8s_replaces <wrapper-dir>
  local staging_version="v0.${K8S_VERSION#v1.}" m mods
  mods=$(k8s_staging_modules "$1") || return 1
  for m in $mods; do
    (cd "$1" && "$GO" mod edit -replace="$m=$m@$staging_version") || return 1
  done
}

# Pins the API-facing Kubernetes libraries in a wrapper's graph to the harness minor with replace
# lines, so that MVS cannot lift them to a newer minor. Other staging modules keep the version the
# component asks for: KWOK v0.8's log server needs the 1.36 API of k8s.io/cri-client and cri-streaming.
K8S_API_LIBS="api apimachinery client-go apiserver apiextensions-apiserver component-base component-helpers"
pin_k8s_libs() {  # pin_k8s_libs <wrapper-dir>
  local staging_version="v0.${DEFAULT_K8S_VERSION#v1.}" m used
  used=$(cd "$1" && "$GO" list -m -f '{{.Path}}' all) || return 1
  for m in $K8S_API_LIBS; do
    grep -qx "k8s.io/$m" <<<"$used" || continue
    (cd "$1" && "$GO" mod edit -replace="k8s.io/$m=k8s.io/$m@$staging_version") || return 1
  done
  (cd "$1" && "$GO" mod tidy)
}

build_etcd() {
  local out="$CACHE_ROOT/etcd-$ETCD_VERSION" src="$CACHE_ROOT/src/etcd-$ETCD_VERSION"
  [[ -x "$out/etcd" ]] && { log "etcd $ETCD_VERSION cached"; return; }
  log "building etcd $ETCD_VERSION"
  wrapper "$src" tau-harness/etcd
  (cd "$src" && "$GO" get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
     && $NICE "$GO" build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3) || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Without these a binary reports v0.0.0-master, and Kueue and KubeRay misjudge the server's features.
k8s_version_ldflags() {  # k8s_version_ldflags <v1.M.P>
  local minor="${1#v1.}"; minor="${minor%%.*}"
  printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1"
  printf '%s' " -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  printf '%s' " -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
}

# kubectl is built at the same version so `kubectl apply -k manifests/...` is tested with a matching client.
K8S_BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubectl"

build_k8s() {
  local out="$CACHE_ROOT/kubernetes-$K8S_VERSION" src="$CACHE_ROOT/src/kubernetes-$K8S_VERSION"
  local b ok=1
  for b in $K8S_BINARIES; do [[ -x "$out/$b" ]] || ok=0; done
  [[ $ok == 1 ]] && { log "kubernetes $K8S_VERSION cached"; return; }
  log "building $K8S_BINARIES $K8S_VERSION"
  wrapper "$src" tau-harness/kubernetes
  k8s_replaces "$src" || return 1
  local ldf; ldf=$(k8s_version_ldflags "$K8S_VERSION")
  (cd "$src" \
     && "$GO" mod edit -require="k8s.io/kubernetes@$K8S_VERSION" \
          -tool=k8s.io/kubernetes/cmd/kube-apiserver \
          -tool=k8s.io/kubernetes/cmd/kube-controller-manager \
          -tool=k8s.io/kubernetes/cmd/kube-scheduler \
          -tool=k8s.io/kubernetes/cmd/kubectl \
     && "$GO" mod tidy \
     && mkdir -p "$out.tmp" \
     && for b in $K8S_BINARIES; do
          log "  go build $b"
          $NICE "$GO" build -trimpath -ldflags "$ldf" -o "$out.tmp/$b" "k8s.io/kubernetes/cmd/$b" || exit 1
        done) || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Only the kube-apiserver of UPGRADE_K8S_VERSION, which tests/integration/test_apiserver_upgrade_t1.py
# starts on the default cell's etcd. It goes into that version's kubernetes-* directory one file at a
# time, so a full build of the version there (a matrix cell) is neither broken nor redone.
build_k8s_upgrade() {
  local out="$CACHE_ROOT/kubernetes-$UPGRADE_K8S_VERSION" src="$CACHE_ROOT/src/kubernetes-$UPGRADE_K8S_VERSION-apiserver"
  local tmp="$CACHE_ROOT/kubernetes-$UPGRADE_K8S_VERSION-apiserver.tmp"
  [[ -x "$out/kube-apiserver" ]] && { log "kube-apiserver $UPGRADE_K8S_VERSION cached"; return; }
  need_go go1.26 "the upgrade test's kube-apiserver $UPGRADE_K8S_VERSION" || return 1
  log "building kube-apiserver $UPGRADE_K8S_VERSION"
  wrapper "$src" tau-harness/kube-apiserver
  (K8S_VERSION=$UPGRADE_K8S_VERSION; k8s_replaces "$src") || return 1
  local ldf; ldf=$(k8s_version_ldflags "$UPGRADE_K8S_VERSION")
  (cd "$src" \
     && "$GO" mod edit -require="k8s.io/kubernetes@$UPGRADE_K8S_VERSION" -tool=k8s.io/kubernetes/cmd/kube-apiserver \
     && "$GO" mod tidy \
     && rm -rf "$tmp" && mkdir -p "$tmp" \
     && $NICE "$GO" build -trimpath -ldflags "$ldf" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver) || return 1
  mkdir -p "$out"; mv "$tmp/kube-apiserver" "$out/kube-apiserver"; rm -rf "$tmp"
}

# A Kueue release's source at its tag, unpacked once into the cache; prints its directory.
kueue_source_tree() {  # kueue_source_tree <tag>
  local tag=$1 dir="$CACHE_ROOT/src/kueue-git-$1" gitdir
  [[ -s "$dir/go.mod" ]] && { echo "$dir"; return; }
  log "unpacking Kueue $tag from $KUEUE_GIT"
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  if [[ -d $KUEUE_GIT ]]; then
    gitdir=$(git -C "$KUEUE_GIT" rev-parse --absolute-git-dir) || return 1
    git --git-dir="$gitdir" archive "$tag" | tar -x -C "$dir.tmp" || return 1
  else
    git clone --quiet --depth 1 --branch "$tag" "$KUEUE_GIT" "$dir.tmp" || return 1
  fi
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
  echo "$dir"
}

# A Kueue release the module proxy does not serve: built from its tag with the module graph its
# go.mod pins, as its release image is.
build_kueue_from_git() {  # build_kueue_from_git <kueue|kueuectl>
  local cmd=$1 out="$CACHE_ROOT/$1-$KUEUE_BUILD" src
  src=$(kueue_source_tree "$KUEUE_VERSION") || return 1
  log "building $cmd $KUEUE_VERSION from its git tag"
  (cd "$src" && $NICE "$GO" build -trimpath \
          -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
          -o "$out.tmp/$cmd" "./cmd/$cmd") || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# The Kueue manager, and on request kueuectl (benchmark peer), from the Kueue module at
# KUEUE_VERSION with the API libraries pinned.
build_kueue_command() {  # build_kueue_command <kueue|kueuectl>
  local cmd=$1 out="$CACHE_ROOT/$1-$KUEUE_BUILD" src="$CACHE_ROOT/src/$1-$KUEUE_VERSION"
  [[ -x "$out/$cmd" ]] && { log "$cmd $KUEUE_BUILD cached"; return; }
  [[ $KUEUE_SOURCE == git ]] && { build_kueue_from_git "$cmd"; return; }
  log "building $cmd $KUEUE_VERSION"
  wrapper "$src" "tau-harness/$cmd"
  (cd "$src" && "$GO" get -tool "sigs.k8s.io/kueue/cmd/$cmd@$KUEUE_VERSION") || return 1
  pin_k8s_libs "$src" || return 1
  (cd "$src" && $NICE "$GO" build -trimpath \
          -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
          -o "$out.tmp/$cmd" "sigs.k8s.io/kueue/cmd/$cmd") || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_kwok() {
  local out="$CACHE_ROOT/kwok-$KWOK_VERSION-k8s-$DEFAULT_K8S_VERSION" src="$CACHE_ROOT/src/kwok-$KWOK_VERSION"
  [[ -x "$out/kwok" ]] && { log "kwok $KWOK_VERSION cached"; return; }
  log "building kwok $KWOK_VERSION"
  wrapper "$src" tau-harness/kwok
  (cd "$src" && "$GO" get -tool "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION") || return 1
  pin_k8s_libs "$src" || return 1
  (cd "$src" && $NICE "$GO" build -trimpath -ldflags "-s -w" -o "$out.tmp/kwok" sigs.k8s.io/kwok/cmd/kwok) || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# A tool built with the module graph it ships (no replace directives, no pins), so it runs exactly
# as its release does: the benchmark peer k9s (benchmarks/side_by_side.py) and Toxiproxy's server, a
# TCP proxy that adds latency and bandwidth limits (benchmarks/remote_link.py).
build_released_tool() {  # build_released_tool <name> <version> <package> <ldflags>
  local name=$1 version=$2 package=$3 ldflags=$4
  local out="$CACHE_ROOT/$name-$version" src="$CACHE_ROOT/src/$name-$version"
  [[ -x "$out/$name" ]] && { log "$name $version cached"; return; }
  log "building $name $version"
  wrapper "$src" "tau-harness/$name"
  (cd "$src" && "$GO" get -tool "$package@$version") || return 1
  (cd "$src" && $NICE "$GO" build -trimpath -ldflags "$ldflags" -o "$out.tmp/$name" "$package") || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_k9s() {
  build_released_tool k9s "$K9S_VERSION" github.com/derailed/k9s \
    "-s -w -X github.com/derailed/k9s/cmd.version=$K9S_VERSION -X github.com/derailed/k9s/cmd.commit=module"
}

build_toxiproxy() {
  build_released_tool toxiproxy "$TOXIPROXY_VERSION" github.com/Shopify/toxiproxy/v2/cmd/server \
    "-s -w -X github.com/Shopify/toxiproxy/v2.Version=$TOXIPROXY_VERSION"
}

# ----- component: kuberay (the KubeRay operator tier 2 runs) -----------------------------------
# The ray-operator version is the one the Kueue release's go.mod requires, read from that go.mod
# (module proxy, or the git tag of a release built from source), never guessed; it must equal the
# KUBERAY_VERSION whose CRDs the fixtures install, or the build stops naming both.
kueue_required_kuberay() {  # kueue_required_kuberay <wrapper-dir>
  local gomod
  if [[ $KUEUE_SOURCE == git ]]; then
    gomod="$(kueue_source_tree "$KUEUE_VERSION")/go.mod" || return 1
  else
    gomod=$(cd "$1" && "$GO" mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" \
            | python3 -c 'import sys,json; print(json.load(sys.stdin)["GoMod"])') || return 1
  fi
  awk '$1 == "github.com/ray-project/kuberay/ray-operator" && $2 ~ /^v/ {print $2; exit}' "$gomod"
}

build_kuberay() {
  local src="$CACHE_ROOT/src/kuberay-for-kueue-$KUEUE_BUILD" required out
  wrapper "$src" tau-harness/ray-operator
  required=$(kueue_required_kuberay "$src") || return 1
  if [[ -z $required ]]; then
    echo "harness/build.sh: Kueue $KUEUE_VERSION's go.mod requires no github.com/ray-project/kuberay/ray-operator" >&2
    return 1
  fi
  if [[ $required != "$KUBERAY_VERSION" ]]; then
    echo "harness/build.sh: Kueue $KUEUE_VERSION requires ray-operator $required, but the harness installs the" \
         "KubeRay CRDs of $KUBERAY_VERSION (harness/versions.env or the cell's kuberay column): make them agree" >&2
    return 1
  fi
  out="$CACHE_ROOT/kuberay-$required-k8s-$DEFAULT_K8S_VERSION"
  [[ -x "$out/ray-operator" ]] && { log "ray-operator $required cached"; return; }
  log "building ray-operator $required (required by Kueue $KUEUE_VERSION)"
  (cd "$src" && "$GO" get -tool "github.com/ray-project/kuberay/ray-operator@$required") || return 1
  pin_k8s_libs "$src" || return 1
  (cd "$src" && $NICE "$GO" build -trimpath -ldflags "-s -w" \
          -o "$out.tmp/ray-operator" github.com/ray-project/kuberay/ray-operator) || return 1
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# promtool, which the monitoring tests run (check rules, test rules, check config): Debian's packaged
# Prometheus at PROMETHEUS_DEBIAN_VERSION, its .deb fetched with `apt-get download` (checked against the
# signed archive index) and unpacked with `dpkg-deb -x`: nothing installed, no service, no daemon.
# Building it from the Prometheus module instead cost 32 min wall and 338 s CPU on the loaded 2-core
# machine (docs/testing.md), more than CI's cold-cache budget leaves.
build_promtool() {
  local out="$CACHE_ROOT/promtool-deb-$PROMETHEUS_DEBIAN_VERSION" package="prometheus=$PROMETHEUS_DEBIAN_VERSION"
  local deb version
  [[ -x "$out/usr/bin/promtool" ]] && { log "promtool $PROMETHEUS_DEBIAN_VERSION cached"; return; }
  if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "harness/build.sh: promtool comes from Debian's package $package; this machine has no apt-get/dpkg-deb" >&2
    return 1
  fi
  log "fetching promtool from Debian ($package)"
  rm -rf "$out.tmp" "$out.deb"; mkdir -p "$out.deb"
  # An index older than the pinned version (a fresh CI image) is read again once, where root may.
  if ! (cd "$out.deb" && apt-get download -q "$package" 2>&1); then
    if [[ $(id -u) -ne 0 ]] || ! apt-get update -qq || ! (cd "$out.deb" && apt-get download -q "$package" 2>&1); then
      echo "harness/build.sh: apt-get download $package failed: its sources need Debian bookworm (run apt-get update;" \
           "a newer point release replaces the version in harness/versions.env)" >&2
      return 1
    fi
  fi
  deb=$(find "$out.deb" -name 'prometheus_*.deb' -print -quit)
  version=$(dpkg-deb -f "$deb" Version)
  [[ $version == "$PROMETHEUS_DEBIAN_VERSION" ]] || { echo "harness/build.sh: got prometheus $version, not $PROMETHEUS_DEBIAN_VERSION" >&2; return 1; }
  dpkg-deb -x "$deb" "$out.tmp" || return 1
  "$out.tmp/usr/bin/promtool" --version >/dev/null || return 1
  rm -rf "$out.deb" "$out"; mv "$out.tmp" "$out"
}

# Module directories holding the YAML the fixtures load (Kueue CRDs and webhooks, KubeRay CRDs,
# KWOK stages), recorded for tests/harness/binaries.py.
fetch_modules() {
  local src="$CACHE_ROOT/src/modules" f="$CACHE_ROOT/modules-$KUEUE_BUILD-$KUBERAY_VERSION-$KWOK_VERSION.env"
  [[ -s "$f" ]] && { log "module dirs cached"; return; }
  wrapper "$src" tau-harness/modules
  moddir() { (cd "$src" && "$GO" mod download -json "$1" | python3 -c 'import sys,json; print(json.load(sys.stdin)["Dir"])'); }
  local kueue_dir kuberay_dir kwok_dir
  if [[ $KUEUE_SOURCE == git ]]; then
    kueue_dir=$(kueue_source_tree "$KUEUE_VERSION") || return 1
  else
    kueue_dir=$(moddir "sigs.k8s.io/kueue@$KUEUE_VERSION") || return 1
  fi
  kuberay_dir=$(moddir "github.com/ray-project/kuberay/ray-operator@$KUBERAY_VERSION") || return 1
  kwok_dir=$(moddir "sigs.k8s.io/kwok@$KWOK_VERSION") || return 1
  # An empty path would be cached as a good answer: refuse it.
  [[ -d $kueue_dir && -d $kuberay_dir && -d $kwok_dir ]] || return 1
  printf 'KUEUE_MODULE_DIR=%s\nKUBERAY_MODULE_DIR=%s\nKWOK_MODULE_DIR=%s\n' "$kueue_dir" "$kuberay_dir" "$kwok_dir" > "$f.tmp"
  mv "$f.tmp" "$f"
}

components=("$@")
[[ ${#components[@]} == 0 ]] && components=(modules etcd kueue k8s k8s-upgrade kwok kuberay promtool)
for c in "${components[@]}"; do
  start=$SECONDS
  case "$c" in
    modules) fetch_modules ;;
    etcd) build_etcd ;;
    k8s) build_k8s ;;
    k8s-upgrade) build_k8s_upgrade ;;
    kueue) build_kueue_command kueue ;;
    kwok) build_kwok ;;
    kuberay) build_kuberay ;;
    promtool) build_promtool ;;
    k9s) build_k9s ;;
    kueuectl) build_kueue_command kueuectl ;;
    toxiproxy) build_toxiproxy ;;
    *) echo "harness/build.sh: unknown component '$c' (modules etcd k8s k8s-upgrade kueue kwok kuberay promtool k9s kueuectl toxiproxy)" >&2; exit 2 ;;
  esac || { echo "harness/build.sh: building '$c' failed (see the Go errors above)" >&2; exit 1; }
  log "$c done in $((SECONDS - start))s"
done
