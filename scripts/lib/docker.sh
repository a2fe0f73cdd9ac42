# shellcheck shell=bash
# Docker helpers shared by scripts/build-kind.sh, scripts/kind-up.sh and scripts/ci-cluster.sh.
# Source after defining log(). Nothing here runs on source.

# Runs a command as root (directly, or with `sudo -n` when not root; never prompts).
as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo -n "$@"
  else
    log "error: need root for: $*"
    return 1
  fi
}

# Installs Debian packages when any is missing (no prompts, no stdin).
apt_install() {
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" </dev/null
}

docker_up() { docker info >/dev/null 2>&1; }

# Makes sure a Docker daemon answers: a running one is used as is (a user's Docker is never
# touched); otherwise Debian's docker.io is installed if dockerd is missing, and the daemon is
# started (systemd when it runs, else in the background with its log in /var/log/dockerd.log).
ensure_docker() {
  if docker_up; then
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    apt_install docker.io
  fi
  if ! command -v docker >/dev/null 2>&1; then
    log "error: dockerd installed but no docker client on PATH"
    return 1
  fi
  log "starting dockerd"
  if [[ "$(systemctl is-system-running 2>/dev/null || true)" =~ ^(running|degraded|starting)$ ]]; then
    as_root systemctl start docker </dev/null
  else
    # Inherited descriptors above stderr are closed first: a caller's lock (`flock
    # /tmp/tollgate-kind.lock …`) would otherwise be held by dockerd for as long as it runs.
    as_root bash -c 'for fd in $(ls /proc/self/fd); do [[ ${fd} -gt 2 ]] && eval "exec ${fd}>&-"; done 2>/dev/null
      setsid nohup dockerd >>/var/log/dockerd.log 2>&1 </dev/null &'
  fi
  local i
  for i in $(seq 1 60); do
    docker_up && { log "dockerd is up ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"; return 0; }
    sleep 1
  done
  log "error: dockerd did not answer within 60s (see /var/log/dockerd.log)"
  return 1
}

# `docker build` without the legacy builder's deprecation banner (DOCKER_BUILDKIT=0 is used on
# purpose where BuildKit would fetch its frontend image from a registry); errors still show.
docker_build() {
  docker build "$@" 2> >(grep -v -e 'DEPRECATED: The legacy builder' -e 'BuildKit is currently disabled' \
    -e 'environment-variable\.$' -e '^[[:space:]]*$' >&2)
}
