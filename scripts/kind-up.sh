#!/usr/bin/env bash
# A local kind cluster running the Helm chart with images built from this checkout, the examples
# applied. Works on a machine with internet (public kindest/node and node:24-bookworm-slim
# images) and offline (both built locally by scripts/build-kind.sh); CI runs it through the
# `cluster` test project.
#   scripts/kind-up.sh            # build/reuse what is cached, create (or reuse) the cluster,
#                                 # build + load the project's images, helm upgrade --install
#   scripts/kind-up.sh --delete   # delete the cluster
# Environment:
#   KIND_CLUSTER               cluster name (tollgate)
#   KUBECONFIG                 kubeconfig kind writes the context kind-$KIND_CLUSTER into
#   TOLLGATE_KIND_NODE_IMAGE   auto | local | public | <image> (see scripts/build-kind.sh)
#   TOLLGATE_KIND_INSTALL      1 (default): install the chart and the examples; 0: cluster and
#                              images only (the cluster tests install the chart themselves)
#   TOLLGATE_IMAGE_TAG         tag of the project's images (default: package.json version)
# Needs docker (installed and started when missing, with root) and Go (kind, and on machines
# without a registry the node image); kubectl and helm come from PATH or are built.
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER="${KIND_CLUSTER:-tollgate}"
NS=tollgate-system
VERSION=$(node -p 'require("./package.json").version')
TAG="${TOLLGATE_IMAGE_TAG:-$VERSION}"
INSTALL="${TOLLGATE_KIND_INSTALL:-1}"
log() { printf '[kind-up] %s\n' "$*" >&2; }
start_all=$(date +%s)

# shellcheck source=lib/docker.sh
source scripts/lib/docker.sh
# shellcheck source=lib/images.sh
source scripts/lib/images.sh

CURRENT_ENV="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/kind/current.env"
if [[ "${1:-}" == "--delete" ]]; then
  KIND="$(command -v kind || true)"; KIND_SHIM_DIR=""
  # shellcheck disable=SC1090
  [[ -f "${CURRENT_ENV}" ]] && source "${CURRENT_ENV}"
  [[ -n "${KIND_SHIM_DIR}" ]] && export PATH="${KIND_SHIM_DIR}:${PATH}"
  "${KIND:?kind not found: run scripts/build-kind.sh}" delete cluster --name "${CLUSTER}"
  exit 0
fi

log "== kind, node image and tools (scripts/build-kind.sh)"
ENV_FILE="$(bash scripts/build-kind.sh </dev/null | tail -1)"
# shellcheck disable=SC1090
source "${ENV_FILE}"
# kind runs `docker`: on hosts with the capability quirk, through the runtime shim.
if [[ -n "${KIND_SHIM_DIR}" ]]; then export PATH="${KIND_SHIM_DIR}:${PATH}"; fi
kind() { "${KIND}" "$@"; }
kubectl() { "${KUBECTL}" --context "kind-${CLUSTER}" "$@"; }
helm() { "${HELM}" --kube-context "kind-${CLUSTER}" "$@"; }

# ---- cluster ---------------------------------------------------------------------------------
if kind get clusters 2>/dev/null | grep -qx "${CLUSTER}"; then
  node="${CLUSTER}-control-plane"
  if [[ "$(docker inspect -f '{{.State.Running}}' "${node}" 2>/dev/null)" != true ]]; then
    log "== starting the stopped node ${node}"
    docker start "${node}" >/dev/null
  fi
  kind export kubeconfig --name "${CLUSTER}" >/dev/null 2>&1
  log "== reusing cluster ${CLUSTER}"
else
  log "== creating cluster ${CLUSTER} (node image ${KIND_NODE_IMAGE})"
  config="$(mktemp)"
  {
    echo "kind: Cluster"
    echo "apiVersion: kind.x-k8s.io/v1alpha4"
    echo "networking:"
    echo "  kubeProxyMode: iptables"
    # The local node image has a static bridge CNI instead of kindnetd.
    [[ "${KIND_NODE_IMAGE_LOCAL}" == 1 ]] && echo "  disableDefaultCNI: true"
    echo "nodes:"
    echo "  - role: control-plane"
    echo "    image: ${KIND_NODE_IMAGE}"
    echo "kubeadmConfigPatches:"
    # kubelet >= 1.35 refuses cgroup v1 unless told otherwise (harmless on cgroup v2).
    echo "  - |"
    echo "    kind: KubeletConfiguration"
    echo "    failCgroupV1: false"
    if [[ -n "${KIND_ETCD_IMAGE_TAG}" ]]; then
      echo "  - |"
      echo "    kind: ClusterConfiguration"
      echo "    etcd:"
      echo "      local:"
      echo "        imageTag: ${KIND_ETCD_IMAGE_TAG}"
    fi
    if [[ "${KIND_RESTRICT_OOM_SCORE_ADJ}" == 1 ]]; then
      # runc in the node cannot lower oom_score_adj on hosts with the capability quirk.
      echo "containerdConfigPatches:"
      echo "  - |"
      echo "    [plugins.\"io.containerd.grpc.v1.cri\"]"
      echo "      restrict_oom_score_adj = true"
    fi
  } > "${config}"
  t0=$(date +%s)
  kind create cluster --name "${CLUSTER}" --config "${config}" --wait 180s </dev/null
  rm -f "${config}"
  log "cluster created in $(( $(date +%s) - t0 ))s"
fi
log "== waiting for the node and the default ServiceAccount"
kubectl wait --for=condition=Ready node --all --timeout=180s >/dev/null
for _ in $(seq 1 120); do
  kubectl get serviceaccount default -n default >/dev/null 2>&1 && break
  sleep 1
done
kubectl -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null

# ---- the project's images ----------------------------------------------------------------------
log "== building the project's images ${TAG} from ./Dockerfile"
t0=$(date +%s)
if [[ "${KIND_NODE_IMAGE_LOCAL}" == 1 ]]; then
  TOLLGATE_LOCAL_IMAGES=1 ensure_node_base "$(dirname "${CURRENT_ENV}")"
  # BuildKit would fetch the `# syntax=` frontend image; the classic builder reads the same file.
  export DOCKER_BUILDKIT=0
else
  ensure_node_base "$(dirname "${CURRENT_ENV}")"
fi
docker_build -q --target tollgate -t "ghcr.io/tollgate/tollgate:${TAG}" . </dev/null >/dev/null
docker_build -q --target sidecar -t "ghcr.io/tollgate/sidecar:${TAG}" . </dev/null >/dev/null
log "images built in $(( $(date +%s) - t0 ))s"
t0=$(date +%s)
kind load docker-image --name "${CLUSTER}" "ghcr.io/tollgate/tollgate:${TAG}" "ghcr.io/tollgate/sidecar:${TAG}" >/dev/null
log "images loaded in $(( $(date +%s) - t0 ))s"

if [[ "${INSTALL}" == 1 ]]; then
  log "== helm upgrade --install"
  # The image ID as a pod annotation: a rebuilt image with the same tag rolls the pods.
  image_id="$(docker image inspect -f '{{.Id}}' "ghcr.io/tollgate/tollgate:${TAG}")"
  helm upgrade --install tollgate charts/tollgate -n "${NS}" --create-namespace \
    --set service.image.tag="${TAG}" --set operator.image.tag="${TAG}" --set sidecar.image.tag="${TAG}" \
    --set-string "service.podAnnotations.tollgate\.dev/image-id=${image_id}" \
    --set-string "operator.podAnnotations.tollgate\.dev/image-id=${image_id}" \
    --wait --timeout 5m </dev/null
  kubectl apply -f examples/ >/dev/null
  kubectl wait --for=condition=Ready organization/acme --timeout=120s >/dev/null
fi

log "== ready in $(( $(date +%s) - start_all ))s (context kind-${CLUSTER})"
if [[ "${INSTALL}" == 1 ]]; then
  cat >&2 <<EOF
service:      ${KUBECTL} --context kind-${CLUSTER} -n ${NS} port-forward svc/tollgate 8000:8000   (then http://localhost:8000)
admin token:  ${KUBECTL} --context kind-${CLUSTER} -n ${NS} get secret tollgate-secrets -o jsonpath='{.data.admin-token}' | base64 -d
EOF
fi
printf '%s\n' "${ENV_FILE}"
