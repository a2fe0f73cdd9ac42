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
# k8s.io/kubernetes v1.36.4: newest 1.3x patch that the module proxy serves AND the checksum
# database (sum.golang.org) verifies, and whose go.mod ("go 1.26.0") works with our Go; its
# go.mod pins etcd 3.6.x. (v1.36.5's zip is on the proxy but sum.golang.org answers 404, so
# `go get` refuses it; 1.37.x pins etcd 3.7.)
K8S_VERSION="v1.36.4"
# Newest etcd 3.6 patch on the proxy.
ETCD_VERSION="v3.6.16"
# Newest Helm v3 release on the proxy (built against k8s.io/client-go v0.37.0).
HELM_VERSION="v3.22.0"
HELM_K8S_MAJOR="1"
HELM_K8S_MINOR="37"

# Staging modules replaced in k8s.io/kubernetes ${K8S_VERSION}'s go.mod. Replacements for
# modules outside the build graph are never fetched, so listing all of them is harmless.
K8S_STAGING_MODULES=(
  api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager
  cri-api cri-client cri-streaming csi-translation-lib dynamic-resource-allocation
  endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
  kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission
  sample-apiserver sample-cli-plugin sample-controller streaming
)
# Modules replaced with local paths in go.etcd.io/etcd/server/v3 ${ETCD_VERSION}'s go.mod.
ETCD_LOCAL_MODULES=(api/v3 client/pkg/v3 client/v3 pkg/v3)

# ---- paths ----------------------------------------------------------------------------
CACHE_DIR="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}"
CP_DIR="${CACHE_DIR}/controlplane"
KEY="k8s-${K8S_VERSION#v}-etcd-${ETCD_VERSION#v}-helm-${HELM_VERSION#v}"
OUT_DIR="${CP_DIR}/${KEY}"
BIN_DIR="${OUT_DIR}/bin"
BINARIES=(kube-apiserver kubectl etcd helm)

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

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
if command -v flock >/dev/null 2>&1; then
  exec 9>"${CP_DIR}/.build.lock"
  log "waiting for build lock ${CP_DIR}/.build.lock"
  flock 9
  if have_all_binaries; then
    log "built by a concurrent run: ${BIN_DIR}"
    finish
    exit 0
  fi
fi

export GOMODCACHE="${CP_DIR}/go/mod"
export GOCACHE="${CP_DIR}/go/build"
export GOPATH="${CP_DIR}/go/path"
export GOFLAGS="-buildvcs=false -modcacherw"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
mkdir -p "${GOMODCACHE}" "${GOCACHE}" "${GOPATH}"

WORK_DIR="${OUT_DIR}/src"
STAGE_DIR="${OUT_DIR}/bin.partial"
mkdir -p "${WORK_DIR}" "${STAGE_DIR}"

GO_VERSION_LINE="go 1.26.0"
gobuild() { nice -n 10 go build -trimpath "$@"; }
start_all=$(date +%s)

log "go: $(go version)"
log "versions: kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION}, helm ${HELM_VERSION}"
log "output:   ${BIN_DIR}"
log "go caches: ${CP_DIR}/go"

# ---- etcd -----------------------------------------------------------------------------
if [[ ! -x "${STAGE_DIR}/etcd" ]]; then
  d="${WORK_DIR}/etcd"
  mkdir -p "$d"
  {
    echo "module tollgate.local/controlplane/etcd"
    echo
    echo "${GO_VERSION_LINE}"
    echo
    echo "require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
    echo
    echo "replace ("
    for m in "${ETCD_LOCAL_MODULES[@]}"; do
      echo "	go.etcd.io/etcd/${m} => go.etcd.io/etcd/${m} ${ETCD_VERSION}"
    done
    echo ")"
  } > "$d/go.mod"
  log "etcd ${ETCD_VERSION}: resolving modules"
  t0=$(date +%s)
  (cd "$d" && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" </dev/null)
  log "etcd ${ETCD_VERSION}: compiling"
  (cd "$d" && gobuild -ldflags "-s -w" -o "${STAGE_DIR}/etcd.tmp" go.etcd.io/etcd/server/v3 </dev/null)
  mv -f "${STAGE_DIR}/etcd.tmp" "${STAGE_DIR}/etcd"
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
  d="${WORK_DIR}/kubernetes"
  mkdir -p "$d"
  staging_ver="v0.${K8S_VERSION#v1.}"
  {
    echo "module tollgate.local/controlplane/kubernetes"
    echo
    echo "${GO_VERSION_LINE}"
    echo
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    echo
    echo "replace ("
    for m in "${K8S_STAGING_MODULES[@]}"; do
      echo "	k8s.io/${m} => k8s.io/${m} ${staging_ver}"
    done
    echo ")"
  } > "$d/go.mod"
  log "kubernetes ${K8S_VERSION}: resolving modules (staging modules at ${staging_ver})"
  t0=$(date +%s)
  (cd "$d" && go get "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" "k8s.io/kubernetes/cmd/kubectl@${K8S_VERSION}" </dev/null)
  minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  k8s_ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION}"
    k8s_ldflags+=" -X ${pkg}.gitMajor=1"
    k8s_ldflags+=" -X ${pkg}.gitMinor=${minor}"
    k8s_ldflags+=" -X ${pkg}.gitTreeState=clean"
    k8s_ldflags+=" -X ${pkg}.buildDate=${build_date}"
  done
  log "kubernetes ${K8S_VERSION}: compiling kube-apiserver and kubectl (the long part: 15-40 min cold on 2 cores)"
  mkdir -p "${STAGE_DIR}/k8s.tmp"
  (cd "$d" && gobuild -ldflags "${k8s_ldflags}" -o "${STAGE_DIR}/k8s.tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl </dev/null)
  mv -f "${STAGE_DIR}/k8s.tmp/kube-apiserver" "${STAGE_DIR}/kube-apiserver"
  mv -f "${STAGE_DIR}/k8s.tmp/kubectl" "${STAGE_DIR}/kubectl"
  rmdir "${STAGE_DIR}/k8s.tmp"
  log "kubernetes ${K8S_VERSION}: done in $(( $(date +%s) - t0 ))s"
fi

# ---- sanity check and publish ---------------------------------------------------------
log "checking binaries"
"${STAGE_DIR}/etcd" --version </dev/null | head -1 >&2
"${STAGE_DIR}/kube-apiserver" --version </dev/null >&2
"${STAGE_DIR}/kubectl" version --client </dev/null | head -1 >&2
"${STAGE_DIR}/helm" version --short </dev/null >&2

rm -rf "${BIN_DIR}"
mv "${STAGE_DIR}" "${BIN_DIR}"
log "built in $(( $(date +%s) - start_all ))s"
finish
