#!/usr/bin/env bash
# CI step before `npm test`: what the `cluster` test project needs, built and cached outside the
# repository. Installs Debian's docker.io and starts dockerd when no daemon answers, then runs
# scripts/build-kind.sh (kind, the Kubernetes node binaries, containerd, CoreDNS, pause, the
# component images, the kind node image and node:24-bookworm-slim; seconds when cached).
# CI machines have no container registry: the node image is built locally unless
# TOLLGATE_KIND_NODE_IMAGE says otherwise (auto | local | public | <image>).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[ci-cluster] %s\n' "$*" >&2; }
# shellcheck source=lib/docker.sh
source scripts/lib/docker.sh
t0=$(date +%s)
log "docker"
ensure_docker
log "kind cluster parts (scripts/build-kind.sh)"
TOLLGATE_KIND_NODE_IMAGE="${TOLLGATE_KIND_NODE_IMAGE:-local}" bash scripts/build-kind.sh </dev/null >/dev/null
log "done in $(( $(date +%s) - t0 ))s"
