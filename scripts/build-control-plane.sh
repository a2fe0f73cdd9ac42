#!/usr/bin/env bash
# Build a Kubernetes control plane for tests (kube-apiserver, kubectl, etcd) plus helm,
# from the Go module proxy, at pinned versions, into a cache outside the repository.
#
#   BIN=$(scripts/build-control-plane.sh | tail -1)
#
# Binaries land in
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/controlplane/k8s-<v>-etcd-<v>-helm-<v>/bin
# and that directory is also written to .../controlplane/current (read by
# test/support/controlplane.ts). Re-runs with the binaries present return at once.
# The Go module and build caches live under .../controlplane/go so a rebuild is fast.
#
# Why wrapper modules: `go install k8s.io/kubernetes/cmd/kube-apiserver@vX` is refused
# because k8s.io/kubernetes (and etcd's server module) use replace directives pointing at
# local staging directories (golang/go#44840). A tiny wrapper module that requires the
# module and replaces each staging module with its published version builds fine.
# See docs/control-plane.md.
set -euo pipefail

# ---- pinned versions -----------------------------------------------------------------
log() { printf '[build-control-plane] %s\n' "$*" >&2; }
# Kubernetes and etcd versions, the staging-module lists and the wrapper-module builders are
# shared with scripts/build-kind.sh.
# shellcheck source=lib/k8s.sh
source "$(dirname "$0")/lib/k8s.sh"
# Newest Helm v3 release on the proxy (built against k8s.io/client-go v0.37.0).
HELM_VERSION="v3.22.0"
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="37"

# ---- paths ----------------------------------------------------------------------------
CP_DIR="${TOLLGATE_CACHE}/controlplane"
KEY="k8s-${K8S_VERSION#v}-etcd-${ETCD_VERSION#v}-helm-${HELM_VERSION#v}"
OUT_DIR="${CP_DIR}/${KEY}"
BIN_DIR="${OUT_DIR}/bin"
BINARIES=(kube-apiserver kubectl etcd helm)

have_all_binaries() {
  local b
  for b in "${BINARIES[@]}"; do
    [[ -x "${BIN_DIR}/${b}" ]] || return 1
  done
}

finish() {
  mkdir -p "${CP_DIR}"
  printf '%s\n' "${BIN_DIR}" > "${CP_DIR}/current.tmp.$$"
  mv -f "${CP_DIR}/current.tmp.$$" "${CP_DIR}/current"
  printf '%s\n' "${BIN_DIR}"
}

ensure_openssl() {
  if command -v openssl >/dev/null 2>&1; then
    return 0
  fi
  log "openssl not found; installing it with apt-get"
  local sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { log "error: openssl missing and not root; install openssl"; exit 1; }
    sudo="sudo -n"
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq </dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends openssl </dev/null
}

ensure_openssl

# ---- fast path ------------------------------------------------------------------------
if have_all_binaries; then
  log "cached: ${BIN_DIR}"
  finish
  exit 0
fi

command -v go >/dev/null 2>&1 || { log "error: 'go' not found in PATH (need Go >= 1.26)"; exit 1; }

mkdir -p "${CP_DIR}"
# Serialise concurrent builds (two test runs starting at once).
take_lock "${CP_DIR}/.build.lock"
if have_all_binaries; then
  log "built by a concurrent run: ${BIN_DIR}"
  finish
  exit 0
fi

go_env

WORK_DIR="${OUT_DIR}/src"
STAGE_DIR="${OUT_DIR}/bin.partial"
mkdir -p "${WORK_DIR}" "${STAGE_DIR}"

start_all=$(date +%s)

log "go: $(go version)"
log "versions: kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION}, helm ${HELM_VERSION}"
log "output:   ${BIN_DIR}"
log "go caches: ${CP_DIR}/go"

# ---- etcd -----------------------------------------------------------------------------
if [[ ! -x "${STAGE_DIR}/etcd" ]]; then
  t0=$(date +%s)
  etcd_build "${WORK_DIR}/etcd" "${STAGE_DIR}/etcd"
  log "etcd ${ETCD_VERSION}: done in $(( $(date +%s) - t0 ))s"
fi

# ---- helm -----------------------------------------------------------------------------
if [[ ! -x "${STAGE_DIR}/helm" ]]; then
  d="${WORK_DIR}/helm"
  mkdir -p "$d"
  {
    echo "module tollgate.local/controlplane/helm"
    echo
    echo "${GO_VERSION_LINE}"
    echo
    echo "require helm.sh/helm/v3 ${HELM_VERSION}"
  } > "$d/go.mod"
  log "helm ${HELM_VERSION}: resolving modules"
  t0=$(date +%s)
  (cd "$d" && go get "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" </dev/null)
  helm_ldflags="-s -w"
  helm_ldflags+=" -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
  helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  helm_ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${HELM_K8S_MAJOR}"
  helm_ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_K8S_MINOR}"
  helm_ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${HELM_K8S_MAJOR}"
  helm_ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}"
  log "helm ${HELM_VERSION}: compiling"
  (cd "$d" && gobuild -ldflags "${helm_ldflags}" -o "${STAGE_DIR}/helm.tmp" helm.sh/helm/v3/cmd/helm </dev/null)
  mv -f "${STAGE_DIR}/helm.tmp" "${STAGE_DIR}/helm"
  log "helm ${HELM_VERSION}: done in $(( $(date +%s) - t0 ))s"
fi

# ---- kube-apiserver + kubectl ---------------------------------------------------------
if [[ ! -x "${STAGE_DIR}/kube-apiserver" || ! -x "${STAGE_DIR}/kubectl" ]]; then
  t0=$(date +%s)
  k8s_build "${WORK_DIR}/kubernetes" "${STAGE_DIR}" cmd/kube-apiserver cmd/kubectl
  log "kubernetes ${K8S_VERSION}: done in $(( $(date +%s) - t0 ))s"
fi

# ---- sanity check and publish ---------------------------------------------------------
log "checking binaries"
"${STAGE_DIR}/etcd" --version </dev/null | sed -n 1p >&2
"${STAGE_DIR}/kube-apiserver" --version </dev/null >&2
"${STAGE_DIR}/kubectl" version --client </dev/null | sed -n 1p >&2
"${STAGE_DIR}/helm" version --short </dev/null >&2

rm -rf "${BIN_DIR}"
mv "${STAGE_DIR}" "${BIN_DIR}"
log "built in $(( $(date +%s) - start_all ))s"
finish
