#!/usr/bin/env bash
# Installs the Python MCP SDK 2.x (`mcp`, PyPI) into a virtualenv OUTSIDE the repo, cached by
# version, and prints the path of its python as the last line of stdout (progress on stderr).
# test/sidecar/mcp-clients.test.ts runs test/sidecar/python/mcp2_client.py with it (the Python
# SDK's own tests keep the venv of scripts/python-env.sh, whose `mcp` is 1.x).
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/mcp-client/<version>/bin/python
set -euo pipefail
version="2.3.0"
venv="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/mcp-client/${version}"
log() { printf 'mcp-client-env: %s\n' "$*" >&2; }

if [ -x "$venv/bin/python" ] && [ -f "$venv/.complete" ]; then
  printf '%s\n' "$venv/bin/python"
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { log "python3 is required"; exit 1; }
log "installing mcp ${version} into $venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip --disable-pip-version-check --no-input install -q --progress-bar off \
  "mcp==${version}" </dev/null >&2
"$venv/bin/python" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))' >&2
touch "$venv/.complete"
printf '%s\n' "$venv/bin/python"
