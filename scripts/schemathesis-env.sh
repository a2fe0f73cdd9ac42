#!/usr/bin/env bash
# Installs schemathesis (PyPI) into a virtualenv OUTSIDE the repo, cached by version, and prints
# the path of its `schemathesis` executable as the last line of stdout (progress on stderr).
# test/e2e/schemathesis.test.ts runs it against the real service's /openapi.json.
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/schemathesis/<version>/bin/schemathesis
set -euo pipefail
version="4.32.5"
venv="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/schemathesis/${version}"
log() { printf 'schemathesis-env: %s\n' "$*" >&2; }

if [ -x "$venv/bin/schemathesis" ] && [ -f "$venv/.complete" ]; then
  printf '%s\n' "$venv/bin/schemathesis"
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { log "python3 is required"; exit 1; }
log "installing schemathesis ${version} into $venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip --disable-pip-version-check --no-input install -q --progress-bar off \
  "schemathesis==${version}" </dev/null >&2
"$venv/bin/schemathesis" --version >&2
touch "$venv/.complete"
printf '%s\n' "$venv/bin/schemathesis"
