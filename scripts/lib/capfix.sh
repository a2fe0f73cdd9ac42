# shellcheck shell=bash
# The capability quirk of some VMs (Firecracker here): the host's capability bounding set lacks
# CAP_SYS_RESOURCE, and docker 20.10 gives --privileged containers every capability up to
# cap_last_cap, so every privileged `docker run` (all kind nodes) fails with
#   runc create failed: unable to start container process: unable to apply caps: operation not permitted
# Fix, applied only where that failure is seen: a runc wrapper that deletes CAP_SYS_RESOURCE
# from the bundle's config.json (create/run) and from the --process file (exec), registered as
# an extra dockerd runtime; kind has no runtime option, so a `docker` shim put first on kind's
# PATH adds --runtime to `docker run` (and `docker exec` then uses the same runtime). Inside the
# node, runc cannot lower oom_score_adj for the same reason: kind-up.sh then sets containerd's
# restrict_oom_score_adj through a containerdConfigPatch. A user's normal Docker is untouched.
# Source after lib/docker.sh.

CAPFIX_RUNTIME="tollgate-capfix"
CAPFIX_WRAPPER="/usr/local/libexec/tollgate/runc-capfix"
CAPFIX_NEEDED=0

# Sets CAPFIX_NEEDED=1 when `docker run --privileged ARGS...` fails on the capability quirk;
# fails on any other error.
capfix_detect() {
  local out
  if out="$(docker run --rm --privileged "$@" </dev/null 2>&1)"; then
    CAPFIX_NEEDED=0
    log "privileged containers run as is"
    return 0
  fi
  if grep -q "apply caps" <<<"${out}"; then
    CAPFIX_NEEDED=1
    log "privileged containers fail here (capability bounding set $(grep CapBnd /proc/self/status | awk '{print $2}')): using the runc wrapper runtime ${CAPFIX_RUNTIME}"
    return 0
  fi
  log "error: docker run --privileged failed: ${out}"
  return 1
}

capfix_detect_fixed() {
  local out
  if ! out="$(docker run --rm --privileged --runtime="${CAPFIX_RUNTIME}" "$@" </dev/null 2>&1)"; then
    log "error: docker run --privileged still fails with the ${CAPFIX_RUNTIME} runtime: ${out}"
    return 1
  fi
  log "privileged containers run with --runtime=${CAPFIX_RUNTIME}"
}

# Installs the wrapper and the dockerd runtime (idempotent), and writes the docker shim into
# SHIM_DIR.
capfix_install() {
  local shim_dir="$1"
  local runc_path
  runc_path="$(command -v runc || echo /usr/sbin/runc)"
  local tmp; tmp="$(mktemp)"
  cat > "${tmp}" <<WRAPPER
#!/bin/sh
# Written by Tollgate's scripts/lib/capfix.sh: runc without CAP_SYS_RESOURCE (absent from this
# host's capability bounding set).
prev=""
for a in "\$@"; do
  case "\$prev" in
    --bundle|-b) f="\$a/config.json" ;;
    --process|-p) f="\$a" ;;
    *) f="" ;;
  esac
  case "\$a" in
    --bundle=*) f="\${a#--bundle=}/config.json" ;;
    --process=*) f="\${a#--process=}" ;;
  esac
  if [ -n "\$f" ] && [ -f "\$f" ]; then
    sed -i -e 's/"CAP_SYS_RESOURCE"[[:space:]]*,[[:space:]]*//g' -e 's/,[[:space:]]*"CAP_SYS_RESOURCE"//g' -e 's/"CAP_SYS_RESOURCE"//g' "\$f"
  fi
  prev="\$a"
done
exec ${runc_path} "\$@"
WRAPPER
  if ! as_root cmp -s "${tmp}" "${CAPFIX_WRAPPER}" 2>/dev/null; then
    as_root mkdir -p "$(dirname "${CAPFIX_WRAPPER}")"
    as_root install -m 0755 "${tmp}" "${CAPFIX_WRAPPER}"
  fi
  rm -f "${tmp}"
  local conf=/etc/docker/daemon.json
  if ! as_root grep -q "\"${CAPFIX_RUNTIME}\"" "${conf}" 2>/dev/null; then
    log "registering runtime ${CAPFIX_RUNTIME} in ${conf}"
    as_root mkdir -p /etc/docker
    local cur='{}'
    [[ -s "${conf}" ]] && cur="$(as_root cat "${conf}")"
    node -e '
      const c = JSON.parse(process.argv[1]);
      c.runtimes = { ...(c.runtimes || {}), [process.argv[2]]: { path: process.argv[3] } };
      process.stdout.write(JSON.stringify(c, null, 2) + "\n");
    ' "${cur}" "${CAPFIX_RUNTIME}" "${CAPFIX_WRAPPER}" | as_root tee "${conf}.tmp" >/dev/null
    as_root mv -f "${conf}.tmp" "${conf}"
    local pid
    pid="$(as_root cat /var/run/docker.pid 2>/dev/null || true)"
    if [[ -n "${pid}" ]]; then
      as_root kill -HUP "${pid}"
    else
      as_root systemctl reload docker </dev/null
    fi
    local i
    for i in $(seq 1 30); do
      docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q "${CAPFIX_RUNTIME}" && break
      sleep 1
    done
  fi
  mkdir -p "${shim_dir}"
  local real; real="$(PATH="$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "${shim_dir}" | paste -sd:)" command -v docker)"
  cat > "${shim_dir}/docker.tmp" <<SHIM
#!/bin/sh
# Written by Tollgate's scripts/lib/capfix.sh: kind's docker, with the ${CAPFIX_RUNTIME} runtime.
if [ "\$1" = run ] || [ "\$1" = create ]; then
  cmd="\$1"; shift
  exec ${real} "\$cmd" --runtime=${CAPFIX_RUNTIME} "\$@"
fi
exec ${real} "\$@"
SHIM
  chmod 0755 "${shim_dir}/docker.tmp"
  mv -f "${shim_dir}/docker.tmp" "${shim_dir}/docker"
}
