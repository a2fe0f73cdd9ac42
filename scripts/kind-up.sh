#!/usr/bin/env bash
# For users with Docker: a local kind cluster running the Helm chart with images built from this
# checkout, the examples applied, and the service reachable on localhost.
#   scripts/kind-up.sh            # create (or reuse) cluster "tollgate", build, load, install
#   scripts/kind-up.sh --delete   # delete the cluster
# Needs docker, kind, kubectl and helm on PATH. Not run by CI (no Docker daemon there): the chart
# itself is tested against a real kube-apiserver by test/kube/chart.test.ts.
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER="${KIND_CLUSTER:-tollgate}"
NS=tollgate-system
VERSION=$(node -p 'require("./package.json").version')

if [[ "${1:-}" == "--delete" ]]; then
  kind delete cluster --name "$CLUSTER"
  exit 0
fi
for bin in docker kind kubectl helm; do
  command -v "$bin" >/dev/null || { echo "kind-up: $bin is required" >&2; exit 1; }
done

kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s
kubectl config use-context "kind-$CLUSTER" >/dev/null

echo "== building images $VERSION"
docker build -t "ghcr.io/tollgate/tollgate:$VERSION" .
docker build --target sidecar -t "ghcr.io/tollgate/sidecar:$VERSION" .
kind load docker-image --name "$CLUSTER" "ghcr.io/tollgate/tollgate:$VERSION" "ghcr.io/tollgate/sidecar:$VERSION"

echo "== helm upgrade --install"
helm upgrade --install tollgate charts/tollgate -n "$NS" --create-namespace \
  --set service.image.pullPolicy=Never --wait --timeout 5m
kubectl apply -f examples/
kubectl wait --for=condition=Ready organization/acme --timeout=120s

echo "== ready"
echo "service:      kubectl -n $NS port-forward svc/tollgate 8000:8000   (then http://localhost:8000)"
echo "admin token:  kubectl -n $NS get secret tollgate-secrets -o jsonpath='{.data.admin-token}' | base64 -d"
