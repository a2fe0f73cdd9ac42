#!/usr/bin/env bash
# Installs the Python MCP SDK 2.x (`mcp`, PyPI) into a virtualenv OUTSIDE the repo, cached by
# version, and prints the path of its python as the last line of stdout (progress on stderr).
# test/sidecar/mcp-clients.test.ts runs test/sidecar/python/mcp2_client.py with it (the Python
# SDK's own tests keep the venv of scripts/python-env.sh, whose `mcp` is 1.x).
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/mcp-client/<version>/bin/python
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pip-venv.sh"
version="2.3.0"
pip_venv mcp-client "$version" "mcp==${version}" bin/python
