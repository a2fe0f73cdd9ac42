#!/usr/bin/env bash
# Installs schemathesis (PyPI) into a virtualenv OUTSIDE the repo, cached by version, and prints
# the path of its `schemathesis` executable as the last line of stdout (progress on stderr).
# test/e2e/schemathesis.test.ts runs it against the real service's /openapi.json.
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/schemathesis/<version>/bin/schemathesis
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pip-venv.sh"
version="4.32.5"
pip_venv schemathesis "$version" "schemathesis==${version}" bin/schemathesis
