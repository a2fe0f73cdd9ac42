#!/usr/bin/env bash
# Creates or reuses the virtualenv of the documentation site (MkDocs Material, pdoc; PyPI) OUTSIDE
# the repo and prints the path of its bin/ folder as the last line of stdout (progress on stderr).
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/docs/<hash>/
#
# <hash> covers docs/requirements.txt, the interpreter's version and this script's recipe, so a
# changed requirement builds a new venv and an unchanged one is reused as it is. Safe to run
# concurrently (flock), with no stdin and CI=true. `npm run docs` (scripts/docs.ts) and
# test/unit/docs/site.test.ts use it; .ci/run runs it before the tests.
#
# Environment: TOLLGATE_PYTHON (interpreter, default python3), TOLLGATE_CACHE_DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/docs/requirements.txt"
py="${TOLLGATE_PYTHON:-python3}"
recipe="v1 pip -r docs/requirements.txt"
log() { printf 'docs-env: %s\n' "$*" >&2; }

command -v "$py" >/dev/null 2>&1 || { log "no $py on PATH (Python 3.10+ is required)"; exit 1; }
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
  { log "$py is $("$py" --version 2>&1); Python 3.10+ is required"; exit 1; }
pyversion="$("$py" -c 'import sys; print(sys.implementation.name, *sys.version_info[:3])')"
hash="$( { cat "$requirements"; echo "$pyversion"; echo "$recipe"; } | sha256sum | cut -c1-16)"
cache="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/docs"
venv="$cache/$hash"
mkdir -p "$cache"

exec 9>"$cache/.lock"
flock 9

if [ -f "$venv/.complete" ] && [ -x "$venv/bin/mkdocs" ] && [ -x "$venv/bin/pdoc" ]; then
  touch "$venv/.complete"
else
  start=$(date +%s)
  log "creating $venv ($pyversion)"
  rm -rf "$venv"
  "$py" -m venv "$venv" >&2
  "$venv/bin/python" -m pip --disable-pip-version-check --no-input install -q --progress-bar off \
    -r "$requirements" </dev/null >&2
  "$venv/bin/mkdocs" --version >&2
  touch "$venv/.complete"
  log "ready in $(( $(date +%s) - start )) s"
fi
# Keep the three most recently used venvs; drop older ones.
ls -1dt "$cache"/[0-9a-f]*/.complete 2>/dev/null | tail -n +4 | while read -r stamp; do
  old="$(dirname "$stamp")"
  if [[ "$(basename "$old")" =~ ^[0-9a-f]{16}$ ]] && [ "$old" != "$venv" ]; then
    log "removing old $old"
    rm -rf "$old"
  fi
done || true
printf '%s\n' "$venv/bin"
