# shellcheck shell=bash
# Pinned versions and the Go build helpers shared by scripts/build-control-plane.sh and
# scripts/build-kind.sh. Source after defining log(). Nothing here runs on source.
#
# Why wrapper modules: `go install k8s.io/kubernetes/cmd/kube-apiserver@vX` is refused
# because k8s.io/kubernetes (and etcd's server module) use replace directives pointing at
# local staging directories (golang/go#44840). A tiny wrapper module that requires the
# module and replaces each staging module with its published version builds fine.

# k8s.io/kubernetes v1.36.4: newest 1.3x patch that the module proxy serves AND the checksum
# database (sum.golang.org) verifies, and whose go.mod ("go 1.26.0") works with our Go; its
# go.mod pins etcd 3.6.x. (v1.36.5's zip is on the proxy but sum.golang.org answers 404, so
# `go get` refuses it; 1.37.x pins etcd 3.7.)
K8S_VERSION="v1.36.4"
# Newest etcd 3.6 patch on the proxy.
ETCD_VERSION="v3.6.16"

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

GO_VERSION_LINE="go 1.26.0"

TOLLGATE_CACHE="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}"
# One Go module cache and build cache for every build script (the Kubernetes packages compiled
# for kube-apiserver are reused by kubelet & co).
TOLLGATE_GO_DIR="${TOLLGATE_CACHE}/controlplane/go"

# Exports the Go environment: shared caches, static binaries, no VCS stamping, local toolchain.
go_env() {
  command -v go >/dev/null 2>&1 || { log "error: 'go' not found in PATH (need Go >= 1.26)"; return 1; }
  export GOMODCACHE="${TOLLGATE_GO_DIR}/mod"
  export GOCACHE="${TOLLGATE_GO_DIR}/build"
  export GOPATH="${TOLLGATE_GO_DIR}/path"
  export GOFLAGS="-buildvcs=false -modcacherw"
  export GOTOOLCHAIN=local
  export CGO_ENABLED=0
  export GOWORK=off
  mkdir -p "${GOMODCACHE}" "${GOCACHE}" "${GOPATH}"
}

gobuild() { nice -n 10 go build -trimpath "$@"; }

# Serialises concurrent builds on a lock file (fd 9). Returns at once without flock.
take_lock() {
  local lock="$1"
  command -v flock >/dev/null 2>&1 || return 0
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  log "waiting for build lock ${lock}"
  flock 9
}

# Builds commands of k8s.io/kubernetes ${K8S_VERSION} through a wrapper module.
#   k8s_build WORK_DIR OUT_DIR cmd/kubelet cmd/kubeadm ...
# Writes the binaries into OUT_DIR (named after the last path element).
k8s_build() {
  local d="$1" out="$2"
  shift 2
  local pkgs=() p
  for p in "$@"; do pkgs+=("k8s.io/kubernetes/${p}"); done
  mkdir -p "$d" "$out"
  local staging_ver="v0.${K8S_VERSION#v1.}"
  {
    echo "module tollgate.local/build/kubernetes"
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
  local get=()
  for p in "${pkgs[@]}"; do get+=("${p}@${K8S_VERSION}"); done
  (cd "$d" && go get "${get[@]}" </dev/null)
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local build_date; build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local ldflags="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION}"
    ldflags+=" -X ${pkg}.gitMajor=1"
    ldflags+=" -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean"
    ldflags+=" -X ${pkg}.buildDate=${build_date}"
  done
  log "kubernetes ${K8S_VERSION}: compiling $* (long when cold: 10-40 min on 2 cores)"
  local tmp="${out}/k8s.tmp"
  rm -rf "$tmp"; mkdir -p "$tmp"
  (cd "$d" && gobuild -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}" </dev/null)
  for p in "$@"; do mv -f "${tmp}/$(basename "$p")" "${out}/$(basename "$p")"; done
  rmdir "$tmp"
}

# Builds etcd ${ETCD_VERSION} (server) through its own wrapper module into OUT (a file path).
etcd_build() {
  local d="$1" out="$2"
  mkdir -p "$d"
  {
    echo "module tollgate.local/build/etcd"
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
  (cd "$d" && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" </dev/null)
  log "etcd ${ETCD_VERSION}: compiling"
  (cd "$d" && gobuild -ldflags "-s -w" -o "${out}.tmp" go.etcd.io/etcd/server/v3 </dev/null)
  mv -f "${out}.tmp" "${out}"
}

# `go install`s module commands at a version into OUT_DIR (module without replace directives).
#   [GO_LDFLAGS_EXTRA=...] go_install OUT_DIR "tags" pkg@version...
go_install() {
  local out="$1" tags="$2"
  shift 2
  mkdir -p "$out"
  ( export GOBIN="$out"; nice -n 10 go install -trimpath ${tags:+-tags "$tags"} -ldflags "-s -w ${GO_LDFLAGS_EXTRA:-}" "$@" </dev/null )
}
