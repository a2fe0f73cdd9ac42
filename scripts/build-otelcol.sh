#!/usr/bin/env bash
# Builds an OpenTelemetry Collector from the Go module proxy with the OpenTelemetry Collector
# Builder (ocb, go.opentelemetry.io/collector/cmd/builder) into a cache outside the repository,
# keyed by version, and prints the binary's path as the last line of stdout. The distribution has
# what the tracing tests need and nothing more: the OTLP receiver (gRPC and HTTP), the file
# exporter (OTLP JSON lines) and the debug exporter. test/e2e/tracing.test.ts runs it.
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/tools/otelcol-<version>/otelcol-tollgate
set -euo pipefail
VERSION="0.165.0"
CACHE_DIR="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}"
OUT="${CACHE_DIR}/tools/otelcol-${VERSION}"
BIN="${OUT}/otelcol-tollgate"
log() { printf '[build-otelcol] %s\n' "$*" >&2; }

if [[ -x "${BIN}" ]]; then
  printf '%s\n' "${BIN}"
  exit 0
fi
command -v go >/dev/null 2>&1 || { log "Go is required (https://go.dev/dl)"; exit 1; }
# The module and build caches are shared with the control-plane and grpcurl builds.
export GOMODCACHE="${CACHE_DIR}/controlplane/go/mod" GOCACHE="${CACHE_DIR}/controlplane/go/build"
export CGO_ENABLED=0 GOFLAGS="-trimpath -modcacherw"
WORK="$(mktemp -d "${CACHE_DIR}/tools/.otelcol-build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT

log "go install go.opentelemetry.io/collector/cmd/builder@v${VERSION}"
GOBIN="${WORK}/bin" go install "go.opentelemetry.io/collector/cmd/builder@v${VERSION}" </dev/null >&2

cat >"${WORK}/manifest.yaml" <<EOF
dist:
  name: otelcol-tollgate
  description: OpenTelemetry Collector for Tollgate's tracing tests (OTLP in, file out)
  version: ${VERSION}
  output_path: ${WORK}/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v${VERSION}
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v${VERSION}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v${VERSION}
EOF

# The builder generates the distribution's sources; the module requirements are resolved here
# rather than by its `go mod tidy`, which also fetches the components' test-only dependencies
# (one of them, contrib's otlpencodingextension v0.165.0, is not served by the module proxy).
log "generating the collector's sources (otlp receiver, file and debug exporters)"
"${WORK}/bin/builder" --config "${WORK}/manifest.yaml" --skip-get-modules --skip-compilation </dev/null >&2
cd "${WORK}/dist"
go mod init otelcol-tollgate >&2
go get "go.opentelemetry.io/collector/otelcol@v${VERSION}" \
  "go.opentelemetry.io/collector/receiver/otlpreceiver@v${VERSION}" \
  "go.opentelemetry.io/collector/exporter/debugexporter@v${VERSION}" \
  "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@v${VERSION}" </dev/null >&2
go mod tidy -e </dev/null >&2 || true
log "go build (a cold build takes ~3.5 min on 2 cores)"
go build -o otelcol-tollgate . </dev/null >&2
mkdir -p "${OUT}"
cp "${WORK}/dist/otelcol-tollgate" "${BIN}.tmp"
mv "${BIN}.tmp" "${BIN}"
"${BIN}" --version >&2
printf '%s\n' "${BIN}"
