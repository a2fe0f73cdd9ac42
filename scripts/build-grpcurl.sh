#!/usr/bin/env bash
# Builds grpcurl (the gRPC command-line client) from the Go module proxy into a cache outside
# the repository, keyed by version, and prints the binary's path as the last line of stdout.
# test/sidecar/grpcurl.test.ts drives the sidecar with it by reflection alone.
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/tools/grpcurl-<version>/grpcurl
set -euo pipefail
VERSION="v1.9.4"
CACHE_DIR="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}"
OUT="${CACHE_DIR}/tools/grpcurl-${VERSION#v}"
log() { printf '[build-grpcurl] %s\n' "$*" >&2; }

if [[ -x "${OUT}/grpcurl" ]]; then
  printf '%s\n' "${OUT}/grpcurl"
  exit 0
fi
command -v go >/dev/null 2>&1 || { log "Go is required (https://go.dev/dl)"; exit 1; }
mkdir -p "${OUT}"
# The module and build caches are shared with the control-plane build, outside the repository.
export GOMODCACHE="${CACHE_DIR}/controlplane/go/mod" GOCACHE="${CACHE_DIR}/controlplane/go/build"
export GOBIN="${OUT}" CGO_ENABLED=0 GOFLAGS=-trimpath
log "go install github.com/fullstorydev/grpcurl/cmd/grpcurl@${VERSION}"
go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@${VERSION}" </dev/null >&2
"${OUT}/grpcurl" -version >&2
printf '%s\n' "${OUT}/grpcurl"
