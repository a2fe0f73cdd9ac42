#!/usr/bin/env bash
# Create a local kind cluster named "tollgate" and install Tollgate into it:
# CRDs from crds/ and the Helm chart from charts/tollgate.
#
# For developers WITH Docker (or Podman via KIND_EXPERIMENTAL_PROVIDER). Not run in CI:
# CI and the test suite use a Docker-free control plane (scripts/build-control-plane.sh,
# docs/control-plane.md).
#
# Usage: scripts/kind-up.sh
#   KIND_CLUSTER_NAME   cluster name (default: tollgate)
#   TOLLGATE_NAMESPACE  namespace for the Helm release (default: tollgate)
#   HELM_EXTRA_ARGS     extra arguments for `helm upgrade --install` (e.g. "--set image.tag=dev")
set -euo pipefail

CLUSTER="${KIND_CLUSTER_NAME:-tollgate}"
NAMESPACE="${TOLLGATE_NAMESPACE:-tollgate}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRD_DIR="${REPO_ROOT}/crds"
CHART_DIR="${REPO_ROOT}/charts/tollgate"

say() { printf '[kind-up] %s\n' "$*"; }
die() { printf '[kind-up] error: %s\n' "$*" >&2; exit 1; }

missing=()
hint() {
  case "$1" in
    docker) echo "  docker:  https://docs.docker.com/engine/install/ (the daemon must be running)" ;;
    kind) echo "  kind:    https://kind.sigs.k8s.io/docs/user/quick-start/#installation (go install sigs.k8s.io/kind@latest)" ;;
    kubectl) echo "  kubectl: https://kubernetes.io/docs/tasks/tools/ (or the one built by scripts/build-control-plane.sh)" ;;
    helm) echo "  helm:    https://helm.sh/docs/intro/install/ (or the one built by scripts/build-control-plane.sh)" ;;
  esac
}

# kubectl and helm may come from the control-plane build cache.
cp_current="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/controlplane/current"
if [[ -f "$cp_current" ]]; then
  cp_bin="$(cat "$cp_current")"
  [[ -d "$cp_bin" ]] && PATH="${PATH}:${cp_bin}"
fi

for tool in docker kind kubectl helm; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]} > 0)); then
  {
    echo "[kind-up] missing required tools: ${missing[*]}"
    for t in "${missing[@]}"; do hint "$t"; done
    echo "[kind-up] Without Docker, use the Docker-free control plane instead: scripts/build-control-plane.sh"
  } >&2
  exit 1
fi

if ! docker info >/dev/null 2>&1 && [[ -z "${KIND_EXPERIMENTAL_PROVIDER:-}" ]]; then
  die "docker is installed but the daemon is not reachable (is it running, and may this user use it?)"
fi

[[ -d "$CRD_DIR" ]] || die "no CRD directory at ${CRD_DIR}"
[[ -f "$CHART_DIR/Chart.yaml" ]] || die "no Helm chart at ${CHART_DIR} (Chart.yaml missing)"

if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  say "kind cluster '${CLUSTER}' already exists; reusing it"
else
  say "creating kind cluster '${CLUSTER}'"
  kind create cluster --name "$CLUSTER" --wait 120s
fi

CONTEXT="kind-${CLUSTER}"
kubectl config use-context "$CONTEXT" >/dev/null
say "using kubectl context ${CONTEXT}"

say "installing CRDs from ${CRD_DIR}"
kubectl --context "$CONTEXT" apply --server-side -f "$CRD_DIR"
crd_names="$(kubectl --context "$CONTEXT" apply --dry-run=client -o name -f "$CRD_DIR" 2>/dev/null \
  | grep '^customresourcedefinition' || true)"
if [[ -n "$crd_names" ]]; then
  # shellcheck disable=SC2086
  kubectl --context "$CONTEXT" wait --for=condition=Established --timeout=60s $crd_names
fi

say "installing Helm release 'tollgate' from ${CHART_DIR} into namespace ${NAMESPACE}"
# shellcheck disable=SC2086
helm upgrade --install tollgate "$CHART_DIR" \
  --kube-context "$CONTEXT" -n "$NAMESPACE" --create-namespace ${HELM_EXTRA_ARGS:-}

cat <<EOF

[kind-up] done. Next steps:
  kubectl --context ${CONTEXT} -n ${NAMESPACE} get pods -w       # wait for Tollgate to be Ready
  kubectl --context ${CONTEXT} get crds | grep -i tollgate        # the installed CRDs
  helm --kube-context ${CONTEXT} -n ${NAMESPACE} status tollgate  # release notes and status
  # Images built locally can be loaded with: kind load docker-image <image> --name ${CLUSTER}
  # Tear down with: kind delete cluster --name ${CLUSTER}
EOF
