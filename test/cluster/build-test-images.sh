#!/usr/bin/env bash
# Images only the cluster tests use, built and `kind load`ed into the cluster: PostgreSQL from
# Debian's packages, and bench/cluster's Go relay floor (the static binary of
# scripts/build-go-relay.sh alone in an image FROM scratch). Needs the env file of
# scripts/build-kind.sh (current.env).
#   test/cluster/build-test-images.sh CLUSTER
set -euo pipefail
cd "$(dirname "$0")/../.."
CLUSTER="$1"
log() { printf '[cluster-images] %s\n' "$*" >&2; }
source scripts/lib/docker.sh
source scripts/lib/images.sh
CACHE="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/kind"
# shellcheck disable=SC1091
source "${CACHE}/current.env"
if [[ -n "${KIND_SHIM_DIR}" ]]; then export PATH="${KIND_SHIM_DIR}:${PATH}"; fi
if [[ "${KIND_NODE_IMAGE_LOCAL}" == 1 ]]; then export TOLLGATE_LOCAL_IMAGES=1 DOCKER_BUILDKIT=0; fi
ensure_debian_base "${CACHE}"
log "building tollgate.local/postgres:test (Debian's postgresql)"
docker_build -q -t tollgate.local/postgres:test test/cluster/fixtures/postgres </dev/null >/dev/null
"${KIND}" load docker-image --name "${CLUSTER}" tollgate.local/postgres:test >/dev/null
GO_RELAY="$(bash scripts/build-go-relay.sh </dev/null | tail -n 1)"
CONTEXT="$(mktemp -d)"
trap 'rm -rf "${CONTEXT}"' EXIT
cp "${GO_RELAY}" "${CONTEXT}/go-relay"
printf 'FROM scratch\nCOPY go-relay /go-relay\nENTRYPOINT ["/go-relay"]\n' >"${CONTEXT}/Dockerfile"
log "building tollgate.local/go-relay:test (bench/sidecar-overhead/go-relay)"
docker_build -q -t tollgate.local/go-relay:test "${CONTEXT}" </dev/null >/dev/null
"${KIND}" load docker-image --name "${CLUSTER}" tollgate.local/go-relay:test >/dev/null
log "loaded into ${CLUSTER}"
