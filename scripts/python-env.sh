#!/usr/bin/env bash
# Creates or refreshes the virtualenv of the Python SDK's tests (python/) OUTSIDE the repo and
# prints the path of its python as the last line of stdout (progress goes to stderr).
#
#   ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/python/<hash>/
#
# <hash> covers python/pyproject.toml, the interpreter's version and this script's install
# recipe, so a dependency change builds a new venv and an unchanged one is reused as it is
# (crewai and friends take minutes to install cold). The package itself is installed editable
# with its test extras; when the venv was made for another checkout, only the editable link is
# redone (seconds, no downloads). Safe to run concurrently (flock), with no stdin and CI=true.
#
# Environment: TOLLGATE_PYTHON (interpreter, default python3), TOLLGATE_CACHE_DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
project="$root/python"
py="${TOLLGATE_PYTHON:-python3}"
recipe="v1 pip editable [test]"
log() { printf 'python-env: %s\n' "$*" >&2; }

command -v "$py" >/dev/null 2>&1 || { log "no $py on PATH (Python 3.10+ is required)"; exit 1; }
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
  { log "$py is $("$py" --version 2>&1); Python 3.10+ is required"; exit 1; }
pyversion="$("$py" -c 'import sys; print(sys.implementation.name, *sys.version_info[:3])')"
hash="$( { cat "$project/pyproject.toml"; echo "$pyversion"; echo "$recipe"; } | sha256sum | cut -c1-16)"
cache="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/python"
venv="$cache/$hash"
mkdir -p "$cache"

exec 9>"$cache/.lock"
flock 9

pip_install() { "$venv/bin/python" -m pip --disable-pip-version-check --no-input install --progress-bar off "$@" </dev/null; }

if [ -f "$venv/.complete" ] && "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  if [ "$(cat "$venv/.complete")" != "$project" ]; then
    log "reusing $venv; linking the editable install to $project"
    pip_install -q --no-deps --no-build-isolation -e "$project" >&2
    printf '%s\n' "$project" >"$venv/.complete"
  fi
else
  start=$(date +%s)
  log "creating $venv ($pyversion; this takes a few minutes once)"
  rm -rf "$venv"
  "$py" -m venv "$venv" >&2
  pip_install -q --upgrade pip >&2
  pip_install -q -e "$project[test]" >&2
  printf '%s\n' "$project" >"$venv/.complete"
  log "ready in $(( $(date +%s) - start )) s"
fi
touch "$venv/.complete"
# Keep the three most recently used venvs (one per pyproject.toml in use); drop older ones.
ls -1dt "$cache"/[0-9a-f]*/.complete 2>/dev/null | tail -n +4 | while read -r stamp; do
  old="$(dirname "$stamp")"
  if [[ "$(basename "$old")" =~ ^[0-9a-f]{16}$ ]] && [ "$old" != "$venv" ]; then
    log "removing old $old"
    rm -rf "$old"
  fi
done || true
printf '%s\n' "$venv/bin/python"
