#!/usr/bin/env bash
# Builds bench/sidecar-overhead's Go relay floor (bench/sidecar-overhead/go-relay: grpc-go and
# net/http from the Go module proxy) into a cache outside the repository, keyed by a hash of its
# sources and the Go version, and prints the binary's path as the last line of stdout.
# bench/sidecar-overhead runs it beside the Node.js minimal relay (ADR 0011).
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/tools/go-relay-<key>/go-relay
#
# --no-build: only print the path of a binary already built for these sources, and fail when
# there is none (the benchmark under CI=true, where .ci/run has built it beforehand).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="${ROOT}/bench/sidecar-overhead/go-relay"
CACHE_DIR="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}"
log() { printf '[build-go-relay] %s\n' "$*" >&2; }

command -v go >/dev/null 2>&1 || { log "Go is required (https://go.dev/dl)"; exit 1; }
KEY="$(
  {
    go env GOVERSION
    cd "${SRC}" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum
  } | sha256sum | cut -c1-16
)"
OUT="${CACHE_DIR}/tools/go-relay-${KEY}"
if [[ -x "${OUT}/go-relay" ]]; then
  printf '%s\n' "${OUT}/go-relay"
  exit 0
fi
if [[ "${1:-}" == "--no-build" ]]; then
  log "no Go relay built for these sources (${OUT}/go-relay): run scripts/build-go-relay.sh"
  exit 1
fi
# The module and build caches are shared with the control-plane and grpcurl builds.
export GOMODCACHE="${CACHE_DIR}/controlplane/go/mod" GOCACHE="${CACHE_DIR}/controlplane/go/build"
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=readonly"
mkdir -p "${OUT}"
log "go build (${SRC#"${ROOT}"/}, key ${KEY})"
# Built under a temporary name and renamed: an interrupted build leaves no binary to trust.
(cd "${SRC}" && go build -o "${OUT}/go-relay.tmp" . </dev/null >&2)
mv "${OUT}/go-relay.tmp" "${OUT}/go-relay"
printf '%s\n' "${OUT}/go-relay"
