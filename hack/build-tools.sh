#!/usr/bin/env bash
# build-tools.sh builds the lab's binaries from the Go module proxy into bin/, each only when it is
# missing or its stamp (module files, Go version, build flags) changed. Usage:
#   hack/build-tools.sh [--list] [lab|demo|codegen|lint|kustomize|argocd|all|NAME...]
# --list builds nothing: it prints "name|tools-module-dir|package" for each target
# (hack/tools/modules_test.go reads the demo's builds from it).
# lab = etcd kube-apiserver kube-controller-manager kube-scheduler kwok versitygw kustomize kubectl
# promtool (promtool unit-tests the alert rules of config/prometheus in make test).
# lab and demo also install Debian's postgresql-15 when PostgreSQL is missing (the lab's
# PostgreSQL workload runs the machine's postgres, initdb and pgbench): `postgres`, alone too.
# argocd (Argo CD's multi-call binary, its git helper scripts, and Debian's redis-server) is
# opt-in, `make tools-argocd`, and not part of all: CI does not need it. monitoring (a Prometheus
# server, from the module promtool comes from) is opt-in too: `make tools-monitoring`.
# A tools module whose go.mod has a `toolchain` line is built with that Go toolchain (the go
# command fetches it from the proxy once); the others with the machine's Go.
# The build flags never change between runs on purpose: a different flag set throws away the
# whole Go build cache for k8s.io/kubernetes (6+ minutes on 2 cores).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
tools="$root/hack/tools"
mkdir -p "$bin/.stamps"

kube_version=v1.37.2
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z"
done

# name module-dir package ldflags hint
spec() {
  case "$1" in
    etcd) echo "etcd|go.etcd.io/etcd/server/v3|-s -w|under 1 min cold after kube-apiserver" ;;
    kube-apiserver) echo "kube|k8s.io/kubernetes/cmd/kube-apiserver|$kube_ldflags|about 11 min cold" ;;
    kube-controller-manager) echo "kube|k8s.io/kubernetes/cmd/kube-controller-manager|$kube_ldflags|about 3 min cold after kube-apiserver" ;;
    kube-scheduler) echo "kube|k8s.io/kubernetes/cmd/kube-scheduler|$kube_ldflags|under 1 min cold after kube-apiserver" ;;
    kubectl) echo "kube|k8s.io/kubernetes/cmd/kubectl|$kube_ldflags|under 1 min cold after kube-apiserver" ;;
    kwok) echo "kwok|sigs.k8s.io/kwok/cmd/kwok|-s -w|about 1 min cold after kube-apiserver" ;;
    versitygw) echo "s3|github.com/versity/versitygw/cmd/versitygw|-s -w|about 5 min cold beside kube-apiserver" ;;
    controller-gen) echo "codegen|sigs.k8s.io/controller-tools/cmd/controller-gen|-s -w|about 30 s cold" ;;
    kustomize) echo "kustomize|sigs.k8s.io/kustomize/kustomize/v5|-s -w|about 25 s cold" ;;
    promtool) echo "promtool|github.com/prometheus/prometheus/cmd/promtool|-s -w -X github.com/prometheus/common/version.Version=3.16.0|about 8 min cold on 2 idle cores (15 CPU-minutes, 3.3 GB peak)" ;;
    prometheus) echo "prometheus|github.com/prometheus/prometheus/cmd/prometheus|-s -w -X github.com/prometheus/common/version.Version=3.16.0|11 min wall after promtool on this loaded machine (3 CPU-minutes with promtool's build cache), 2.3 GB peak" ;;
    golangci-lint) echo "lint|github.com/golangci/golangci-lint/v2/cmd/golangci-lint|-s -w|about 3 min cold" ;;
    argocd) echo "argocd|github.com/argoproj/argo-cd/v3/cmd|-s -w -X github.com/argoproj/argo-cd/v3/common.version=3.6.1|7-15 min cold, 2.5-3 GB of memory" ;;
    *) echo "unknown tool $1" >&2; return 1 ;;
  esac
}

# is_package says whether a target is a Debian package (redis-server, postgres) rather than a
# Go build.
is_package() { [[ $1 == redis-server || $1 == postgres ]]; }

# toolchain prints the Go toolchain a tools module builds with.
toolchain() {
  local tc
  tc=$(awk '$1 == "toolchain" { print $2 }' "$tools/$1/go.mod")
  echo "${tc:-local}"
}

# stamp prints the stamp of a binary built from tools module $1 with ldflags $2: it changes with
# the module's files, the Go version it builds with and the build flags.
stamp() {
  cat "$tools/$1/go.mod" "$tools/$1/go.sum" <(GOTOOLCHAIN=$(toolchain "$1") go version) <(echo "$2") | sha256sum | cut -c1-16
}

build() {
  local name=$1 dir pkg ldflags hint
  IFS='|' read -r dir pkg ldflags hint < <(spec "$name")
  local stamp
  local -x GOTOOLCHAIN
  GOTOOLCHAIN=$(toolchain "$dir")
  stamp=$(stamp "$dir" "$ldflags")
  if [[ -x "$bin/$name" && "$(cat "$bin/.stamps/$name" 2>/dev/null)" == "$stamp" ]]; then
    return 0
  fi
  local start=$SECONDS
  echo "build-tools: building $name ($hint)..."
  if ! (cd "$tools/$dir" && go build -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg"); then
    rm -f "$bin/$name.tmp"
    echo "build-tools: building $name failed; see the errors above (the Go module proxy must be reachable)" >&2
    return 1
  fi
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" >"$bin/.stamps/$name"
  echo "build-tools: built $name in $((SECONDS - start)) s"
}

# demo = what `drover demo` runs: the lab without kubectl (the lab and the demo never call it) and
# promtool. The whole first make demo took 17 min 09 s on 2 cores with empty module and build
# caches (2026-12-05, 8f283bd): kube-apiserver 11 min 21 s beside versitygw, then
# kube-controller-manager and kube-scheduler 4 min beside etcd, kwok and kustomize (2 min).
demo=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok versitygw kustomize postgres)
lab=("${demo[@]}" kubectl promtool)
list=false
[[ ${1:-} == --list ]] && { list=true; shift; }
targets=()
[[ $# -eq 0 ]] && set -- lab
for arg in "$@"; do
  case "$arg" in
    lab) targets+=("${lab[@]}") ;;
    demo) targets+=("${demo[@]}") ;;
    codegen) targets+=(controller-gen) ;;
    lint) targets+=(golangci-lint) ;;
    all) targets+=("${lab[@]}" controller-gen golangci-lint) ;;
    argocd) targets+=(argocd redis-server) ;;
    monitoring) targets+=(prometheus) ;;
    *) targets+=("$arg") ;;
  esac
done
if $list; then
  for t in "${targets[@]}"; do
    is_package "$t" && continue
    IFS='|' read -r dir pkg _ < <(spec "$t")
    echo "$t|$dir|$pkg"
  done
  exit 0
fi
# redis-server comes from Debian (Argo CD's application controller caches in it). Installed once
# with apt-get as root; otherwise the error says what to run.
install_redis() {
  command -v redis-server >/dev/null && return 0
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "build-tools: redis-server is missing; install it as root: apt-get install -y redis-server" >&2
    return 1
  fi
  echo "build-tools: installing redis-server with apt-get..."
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server >/dev/null; then
    apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server >/dev/null ||
      { echo "build-tools: apt-get install redis-server failed; see the errors above" >&2; return 1; }
  fi
  echo "build-tools: installed $(redis-server --version | cut -d' ' -f1-3)"
}

# postgres is Debian's postgresql-15 (postgres, initdb, pgbench, psql, pg_isready, pg_amcheck),
# found as internal/lab/pgsql finds it; installed like redis-server.
postgres_installed() { [[ -x /usr/lib/postgresql/15/bin/postgres ]] || [[ -x "$(pg_config --bindir 2>/dev/null)/postgres" ]]; }
install_postgres() {
  postgres_installed && return 0
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "build-tools: PostgreSQL is missing; install it as root: apt-get install -y postgresql-15 (the lab's PostgreSQL workload needs it)" >&2
    return 1
  fi
  echo "build-tools: installing postgresql-15 with apt-get..."
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 >/dev/null; then
    apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 >/dev/null ||
      { echo "build-tools: apt-get install postgresql-15 failed; see the errors above" >&2; return 1; }
  fi
  echo "build-tools: installed $(/usr/lib/postgresql/15/bin/postgres --version)"
}

# stale prints the targets that are missing or out of date, without building them.
stale() {
  local t dir pkg ldflags hint
  for t in "$@"; do
    [[ $t == redis-server ]] && { command -v redis-server >/dev/null || echo "$t"; continue; }
    [[ $t == postgres ]] && { postgres_installed || echo "$t"; continue; }
    IFS='|' read -r dir pkg ldflags hint < <(spec "$t")
    [[ -x "$bin/$t" && "$(cat "$bin/.stamps/$t" 2>/dev/null)" == "$(stamp "$dir" "$ldflags")" ]] || echo "$t"
  done
}

# download fetches, in the background, the modules of the tools modules that build the targets in
# "$@". The Go module proxy answers each request after about a second here and go build discovers
# modules as it loads packages, fetching GOMAXPROCS (2) at a time: measured on a loaded 2-core
# machine (2026-12-05), what the kube module's binaries need (147 modules, 87 MB) took 2 min 36 s
# that way; `go mod download` (170 modules: it knows the whole list up front) 1 min 28 s, and with
# GOMAXPROCS=16 1 min 5 s (1 min 34 s with 48); all five tools modules of the demo and drover's own
# at once, 16 at a time each, 1 min 56 s. The
# builds do not wait for it: they fetch what they still miss themselves (the module cache is safe
# for concurrent go commands, and a module is fetched once).
download() {
  local t dir pkg ldflags hint
  local -A seen=()
  for t in "$@"; do
    is_package "$t" && continue
    IFS='|' read -r dir pkg ldflags hint < <(spec "$t")
    [[ -n ${seen[$dir]:-} ]] && continue
    seen[$dir]=1
    (cd "$tools/$dir" && GOTOOLCHAIN=$(toolchain "$dir") GOMAXPROCS=16 go mod download >/dev/null 2>&1 || true) &
  done
}

# lane builds its targets one after another and stops at the first failure.
lane() {
  local t
  for t in "$@"; do
    case "$t" in
      redis-server) install_redis || return 1 ;;
      postgres) install_postgres || return 1 ;;
      *) build "$t" || return 1 ;;
    esac
  done
}

# Two lanes build at once, so that one lane's module downloads and single-threaded links overlap
# the other lane's compiles on a 2-core machine, in two phases, so that no package is compiled by
# both lanes at the same time. A package shared by two tools modules at one version (see
# hack/tools/modules_test.go) is one build action: the build that comes second finds it in the
# build cache, but two go commands compiling it at once both do the whole work. So phase 1 builds
# kube-apiserver (most of the work: it compiles k8s.io/api, client-go, grpc, otel, ...) beside the
# tools that share little with it; phase 2 the other kube binaries beside the tools that compile
# mostly what kube-apiserver compiled (after_kube).
after_kube=" etcd kwok kustomize "
for t in "${targets[@]}"; do
  is_package "$t" || spec "$t" >/dev/null
done
todo=()
while read -r t; do todo+=("$t"); done < <(stale "${targets[@]}")
first=() kube_rest=() beside=() after=()
for t in "${todo[@]}"; do
  if [[ $t == kube-apiserver ]]; then first+=("$t")
  elif ! is_package "$t" && [[ $(spec "$t" | cut -d'|' -f1) == kube ]]; then kube_rest+=("$t")
  elif [[ $after_kube == *" $t "* ]]; then after+=("$t")
  else beside+=("$t"); fi
done
download "${todo[@]}"
status=0
lane "${first[@]}" &
first_pid=$!
lane "${beside[@]}" || status=1
wait "$first_pid" || status=1
if [[ $status -eq 0 ]]; then
  lane "${kube_rest[@]}" &
  kube_pid=$!
  lane "${after[@]}" || status=1
  wait "$kube_pid" || status=1
fi
wait
[[ $status -eq 0 ]] || exit 1

# From the argo-cd module, next to the binary: its CRDs (2 MB, so not committed; the lab installs
# them on the hub) and the two scripts its repo-server runs git through, found on PATH (the lab
# puts bin/argocd-path first on the repo-server's PATH).
if [[ " ${targets[*]} " == *" argocd "* ]]; then
  argocd_dir=$(cd "$tools/argocd" && GOTOOLCHAIN=$(toolchain argocd) go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
  mkdir -p "$bin/argocd-path" "$bin/argocd-crds"
  for f in git-verify-wrapper.sh git-ask-pass.sh; do
    cmp -s "$argocd_dir/hack/$f" "$bin/argocd-path/$f" || install -m 0755 "$argocd_dir/hack/$f" "$bin/argocd-path/$f"
  done
  for f in application-crd.yaml applicationset-crd.yaml appproject-crd.yaml; do
    cmp -s "$argocd_dir/manifests/crds/$f" "$bin/argocd-crds/$f" || install -m 0644 "$argocd_dir/manifests/crds/$f" "$bin/argocd-crds/$f"
  done
fi

# kwok needs stage definitions (how fake nodes and pods change state). They ship inside the kwok
# module; the lab uses the fast node and pod stages and the lease heartbeat, concatenated.
if [[ " ${targets[*]} " == *" kwok "* && ! -s "$bin/kwok-stages.yaml" ]]; then
  kwok_dir=$(cd "$tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for f in "$kwok_dir"/kustomize/stage/node/fast/*.yaml "$kwok_dir"/kustomize/stage/node/heartbeat-with-lease/*.yaml \
    "$kwok_dir"/kustomize/stage/pod/fast/*.yaml; do
    [[ "$(basename "$f")" == kustomization.yaml ]] && continue
    echo "---"; cat "$f"
  done >"$bin/kwok-stages.yaml.tmp"
  mv "$bin/kwok-stages.yaml.tmp" "$bin/kwok-stages.yaml"
fi
