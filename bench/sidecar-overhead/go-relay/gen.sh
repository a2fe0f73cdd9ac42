#!/usr/bin/env bash
# Regenerates gatewaypb/ (the Go messages and the grpc-go service of proto/tollgate/v1/gateway.proto)
# for the Go relay floor. The output is committed, so building the relay (and CI) needs only Go;
# run this after gateway.proto changes. Needs protoc (Debian: apt-get install protobuf-compiler;
# 3.21.12 generated the committed files) and installs the two plugins at pinned versions into a
# cache outside the repository.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "${HERE}/../../.." && pwd)"
CACHE_DIR="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}"
BIN="${CACHE_DIR}/tools/protoc-gen-go-relay"
export GOMODCACHE="${CACHE_DIR}/controlplane/go/mod" GOCACHE="${CACHE_DIR}/controlplane/go/build"
export GOBIN="${BIN}" CGO_ENABLED=0 GOFLAGS=-trimpath
command -v protoc >/dev/null 2>&1 || { echo "protoc is required (apt-get install protobuf-compiler)" >&2; exit 1; }
go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
M="Mtollgate/v1/gateway.proto=tollgate.dev/bench/go-relay/gatewaypb"
rm -rf "${HERE}/gatewaypb" && mkdir -p "${HERE}/gatewaypb"
PATH="${BIN}:${PATH}" protoc -I "${ROOT}/proto" \
  --go_out="${HERE}/gatewaypb" --go_opt=paths=source_relative --go_opt="${M}" \
  --go-grpc_out="${HERE}/gatewaypb" --go-grpc_opt=paths=source_relative --go-grpc_opt="${M}" \
  tollgate/v1/gateway.proto
mv "${HERE}"/gatewaypb/tollgate/v1/*.go "${HERE}/gatewaypb/" && rm -r "${HERE}/gatewaypb/tollgate"
