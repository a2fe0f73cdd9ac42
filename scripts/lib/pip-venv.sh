# shellcheck shell=bash
# Sourced by the scripts that install one pinned PyPI tool into a virtualenv OUTSIDE the repo
# (schemathesis-env.sh, mcp-client-env.sh). Needs `set -euo pipefail` in the caller.
#
#   pip_venv <name> <version> <pip requirement> <executable within the venv>
#
# installs into ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/<name>/<version>/ once (reused while
# its .complete stamp exists) and prints the executable's path as the last line of stdout
# (progress on stderr).
pip_venv() {
  local name="$1" version="$2" requirement="$3" executable="$4"
  local venv="${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/${name}/${version}"
  if [ -x "$venv/$executable" ] && [ -f "$venv/.complete" ]; then
    printf '%s\n' "$venv/$executable"
    return 0
  fi
  command -v python3 >/dev/null 2>&1 || { printf '%s-env: python3 is required\n' "$name" >&2; return 1; }
  printf '%s-env: installing %s into %s\n' "$name" "$requirement" "$venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip --disable-pip-version-check --no-input install -q --progress-bar off \
    "$requirement" </dev/null >&2
  touch "$venv/.complete"
  printf '%s\n' "$venv/$executable"
}
