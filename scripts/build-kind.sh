#!/usr/bin/env bash
# Everything a kind cluster needs, built and cached outside the repository like the control
# plane (scripts/build-control-plane.sh), from Debian packages, the Go module proxy and the npm
# registry only; or, where a registry serves the public images, those images instead.
#
#   ENV_FILE=$(scripts/build-kind.sh | tail -1)     # then: source "$ENV_FILE"
#
# TOLLGATE_KIND_NODE_IMAGE selects the node image (one code path for all):
#   auto    (default) use kindest/node:${K8S_VERSION} when it can be pulled, else build it here
#   local   build the node image here, never pull (CI on machines without a container registry)
#   public  pull kindest/node (a user's machine with internet)
#   <ref>   use this image as is
#
# Local builds (cached under ${TOLLGATE_CACHE_DIR:-$HOME/.cache/tollgate}/kind/<key>):
#   bin/      kind, kubelet, kubeadm, kube-controller-manager, kube-scheduler, kube-proxy,
#             containerd + ctr + containerd-shim-runc-v2, coredns, pause (gcc -static), and
#             etcd/kubectl/kube-apiserver/helm from scripts/build-control-plane.sh
#   images/   component images (FROM scratch + the static binary; kube-proxy on a Debian
#             minbase with iptables), saved as one docker archive
#   base.rootfs  the kind base: Debian minbase + kind's package list + kind's base files (from
#             the sigs.k8s.io/kind module zip) + containerd; node image = base + Kubernetes +
#             the component images imported into its containerd (what `kind build node-image`
#             does, which cannot work offline: it fetches every image but four from a registry)
# and node:<major>-bookworm-slim (the project's Dockerfile's base, Node.js of .node-version) when
# it cannot be pulled.
#
# Host quirks handled only where detected: Docker is installed/started when no daemon answers;
# `mkdir -p /lib/modules` (kind mounts it); on VMs whose capability bounding set lacks a
# capability that docker gives --privileged containers, a runc wrapper runtime and a docker shim
# for kind (see docs in scripts/lib/capfix.sh).
#
# The last line of stdout is an env file (KIND, KUBECTL, HELM, KIND_NODE_IMAGE, ...) also
# written to .../kind/current.env; progress goes to stderr. Re-runs with everything cached
# return in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[build-kind] %s\n' "$*" >&2; }
# shellcheck source=lib/k8s.sh
source scripts/lib/k8s.sh
# shellcheck source=lib/docker.sh
source scripts/lib/docker.sh
# shellcheck source=lib/images.sh
source scripts/lib/images.sh
# shellcheck source=lib/capfix.sh
source scripts/lib/capfix.sh

# ---- pinned versions -----------------------------------------------------------------
KIND_VERSION="v0.33.0"
# Pre-built node image published with kind v0.33.0 for our Kubernetes version.
PUBLIC_NODE_IMAGE="kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
# containerd of kind v0.33.0's base image; build tags as kind's base Dockerfile.
CONTAINERD_VERSION="v2.3.4"
CONTAINERD_TAGS="no_aufs no_zfs no_btrfs no_devmapper"
# The CoreDNS tag kubeadm v1.36 deploys.
COREDNS_VERSION="v1.14.2"
# etcd image tag (set as etcd.local.imageTag in the kubeadm ClusterConfiguration patch).
ETCD_IMAGE_TAG="${ETCD_VERSION#v}-0"
# Bump when the image recipe below changes (invalidates the images, not the binaries).
IMAGE_REV="1"

MODE="${TOLLGATE_KIND_NODE_IMAGE:-auto}"
KEY="k8s-${K8S_VERSION#v}-kind-${KIND_VERSION#v}-containerd-${CONTAINERD_VERSION#v}-coredns-${COREDNS_VERSION#v}-etcd-${ETCD_VERSION#v}"
KIND_ROOT="${TOLLGATE_CACHE}/kind"
OUT="${KIND_ROOT}/${KEY}"
BIN="${OUT}/bin"
LOCAL_NODE_IMAGE="tollgate.local/kind-node:${K8S_VERSION}-r${IMAGE_REV}-$(printf '%s' "${KEY}" | sha256sum | cut -c1-8)"
ENV_FILE="${KIND_ROOT}/current.env"
start_all=$(date +%s)
step() { log "== $*"; }

mkdir -p "${OUT}"

# ---- host: docker, /lib/modules --------------------------------------------------------
step "docker"
ensure_docker
if [[ ! -d /lib/modules ]]; then
  log "creating /lib/modules (kind mounts it read-only; this kernel has none)"
  as_root mkdir -p /lib/modules
fi

# ---- which node image --------------------------------------------------------------------
node_image=""
case "${MODE}" in
  local) node_image="${LOCAL_NODE_IMAGE}" ;;
  public) node_image="${PUBLIC_NODE_IMAGE}" ;;
  auto)
    if have_image "${LOCAL_NODE_IMAGE}"; then
      node_image="${LOCAL_NODE_IMAGE}"
    elif have_image "${PUBLIC_NODE_IMAGE}"; then
      node_image="${PUBLIC_NODE_IMAGE}"
    else
      step "trying to pull ${PUBLIC_NODE_IMAGE}"
      if timeout 600 docker pull -q "${PUBLIC_NODE_IMAGE}" </dev/null >/dev/null 2>&1; then
        node_image="${PUBLIC_NODE_IMAGE}"
      else
        log "no registry: building the node image locally"
        node_image="${LOCAL_NODE_IMAGE}"
      fi
    fi
    ;;
  *) node_image="${MODE}" ;;
esac
is_local=0
[[ "${node_image}" == "${LOCAL_NODE_IMAGE}" ]] && is_local=1
if [[ ${is_local} == 0 && "${MODE}" == public ]] && ! have_image "${node_image}"; then
  step "docker pull ${node_image}"
  docker pull -q "${node_image}" </dev/null >/dev/null
fi

# ---- binaries ------------------------------------------------------------------------------
have() { [[ -x "${BIN}/$1" ]]; }
need_go_build() {
  # With a public node image, a kind already on PATH will do (no Go needed).
  if [[ ${is_local} == 0 ]] && ! have kind && command -v kind >/dev/null 2>&1; then return 1; fi
  have kind || return 0
  [[ ${is_local} == 1 ]] || return 1
  local b
  for b in kubelet kubeadm kube-controller-manager kube-scheduler kube-proxy containerd ctr \
    containerd-shim-runc-v2 coredns pause; do
    have "$b" || return 0
  done
  return 1
}

# One build at a time (two test runs starting at once wait for each other).
take_lock "${OUT}/.build.lock"
if need_go_build; then
  go_env
  log "go: $(go version); caches ${TOLLGATE_GO_DIR}"
  mkdir -p "${BIN}"
  if ! have kind; then
    step "kind ${KIND_VERSION} (go install)"; t0=$(date +%s)
    go_install "${BIN}" "" "sigs.k8s.io/kind@${KIND_VERSION}"
    log "kind: done in $(( $(date +%s) - t0 ))s"
  fi
  if [[ ${is_local} == 1 ]]; then
    if ! have containerd || ! have ctr || ! have containerd-shim-runc-v2; then
      step "containerd ${CONTAINERD_VERSION} (go install)"; t0=$(date +%s)
      GO_LDFLAGS_EXTRA="-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}" \
        go_install "${BIN}" "${CONTAINERD_TAGS}" \
        "github.com/containerd/containerd/v2/cmd/containerd@${CONTAINERD_VERSION}" \
        "github.com/containerd/containerd/v2/cmd/ctr@${CONTAINERD_VERSION}" \
        "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@${CONTAINERD_VERSION}"
      log "containerd: done in $(( $(date +%s) - t0 ))s"
    fi
    if ! have coredns; then
      step "coredns ${COREDNS_VERSION} (go install)"; t0=$(date +%s)
      go_install "${BIN}" "" "github.com/coredns/coredns@${COREDNS_VERSION}"
      log "coredns: done in $(( $(date +%s) - t0 ))s"
    fi
    if ! have pause; then
      step "pause (gcc -static, from the k8s.io/kubernetes ${K8S_VERSION} module)"
      src="$(cd /tmp && go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" </dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
      command -v gcc >/dev/null 2>&1 && [[ -f /usr/lib/x86_64-linux-gnu/libc.a || -f /usr/lib/aarch64-linux-gnu/libc.a ]] \
        || apt_install gcc libc6-dev
      gcc -Os -Wall -Werror -static -DVERSION="v3.10-${K8S_VERSION}" -o "${BIN}/pause.tmp" "${src}/build/pause/linux/pause.c"
      strip "${BIN}/pause.tmp" 2>/dev/null || true
      mv -f "${BIN}/pause.tmp" "${BIN}/pause"
    fi
    k8s_missing=()
    for b in kubelet kubeadm kube-controller-manager kube-scheduler kube-proxy; do
      have "$b" || k8s_missing+=("cmd/$b")
    done
    if ((${#k8s_missing[@]})); then
      step "kubernetes ${K8S_VERSION}: ${k8s_missing[*]}"; t0=$(date +%s)
      k8s_build "${OUT}/src/kubernetes" "${BIN}" "${k8s_missing[@]}"
      log "kubernetes: done in $(( $(date +%s) - t0 ))s"
    fi
  fi
fi

# kube-apiserver, kubectl, etcd, helm: the control plane build (cached). On a user's machine
# with the public node image, kubectl and helm from PATH are enough.
if [[ ${is_local} == 1 ]] || ! command -v kubectl >/dev/null 2>&1 || ! command -v helm >/dev/null 2>&1; then
  step "control plane binaries (scripts/build-control-plane.sh)"
  CP_BIN="$(bash scripts/build-control-plane.sh </dev/null | tail -1)"
  KUBECTL="${CP_BIN}/kubectl"
  HELM="${CP_BIN}/helm"
else
  CP_BIN=""
  KUBECTL="$(command -v kubectl)"
  HELM="$(command -v helm)"
fi

# ---- local node image ------------------------------------------------------------------------
IMAGES_TAR="${OUT}/images/components-r${IMAGE_REV}.tar"
component_images=()

build_component_images() {
  # Image references kubeadm v1.36 deploys, plus the sandbox image of kind's containerd config.
  local refs
  refs="$("${BIN}/kubeadm" config images list --kubernetes-version "${K8S_VERSION}" 2>/dev/null)"
  local kind_src sandbox
  kind_src="$(kind_module_dir)"
  sandbox="$(sed -n 's/^[[:space:]]*sandbox_image = "\(.*\)"/\1/p' "${kind_src}/images/base/files/etc/containerd/config.toml")"
  local ref name
  component_images=()
  while read -r ref; do
    [[ -n "${ref}" ]] || continue
    name="${ref##*/}"; name="${name%%:*}"
    case "${name}" in
      etcd) ref="${ref%:*}:${ETCD_IMAGE_TAG}" ;;
    esac
    component_images+=("${ref}")
  done <<<"${refs}"
  [[ -n "${sandbox}" ]] && component_images+=("${sandbox}")
  if [[ -f "${IMAGES_TAR}" ]]; then return 0; fi
  step "component images: ${component_images[*]}"
  local t0; t0=$(date +%s)
  local root tmp
  tmp="$(mktemp -d)"
  # kube-proxy needs iptables & co: a minbase with Debian's packages.
  debootstrap_rootfs "${OUT}/kube-proxy.rootfs" "iptables,nftables,conntrack,ipset,kmod"
  for ref in "${component_images[@]}"; do
    name="${ref##*/}"; name="${name%%:*}"
    root="${tmp}/${name}-$RANDOM"
    mkdir -p "${root}/usr/local/bin" "${root}/tmp"
    chmod 1777 "${root}/tmp"
    local entry=() env_path="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    case "${name}" in
      pause) cp "${BIN}/pause" "${root}/pause"; entry=(--change 'ENTRYPOINT ["/pause"]') ;;
      etcd) cp "${CP_BIN}/etcd" "${root}/usr/local/bin/etcd" ;;
      kube-apiserver) cp "${CP_BIN}/kube-apiserver" "${root}/usr/local/bin/" ;;
      kube-controller-manager|kube-scheduler) cp "${BIN}/${name}" "${root}/usr/local/bin/" ;;
      coredns) cp "${BIN}/coredns" "${root}/coredns"; entry=(--change 'ENTRYPOINT ["/coredns"]') ;;
      kube-proxy)
        as_root rm -rf "${root}"
        as_root cp -a "${OUT}/kube-proxy.rootfs" "${root}"
        as_root rm -f "${root}/.complete"
        as_root cp "${BIN}/kube-proxy" "${root}/usr/local/bin/kube-proxy"
        ;;
      *) log "error: no recipe for component image ${ref}"; return 1 ;;
    esac
    as_root tar -C "${root}" -c . | docker import --change "ENV ${env_path}" "${entry[@]}" - "${ref}" >/dev/null
    as_root rm -rf "${root}"
    log "  ${ref}"
  done
  rm -rf "${tmp}"
  mkdir -p "$(dirname "${IMAGES_TAR}")"
  docker save -o "${IMAGES_TAR}.tmp" "${component_images[@]}"
  mv -f "${IMAGES_TAR}.tmp" "${IMAGES_TAR}"
  log "component images: done in $(( $(date +%s) - t0 ))s"
}

kind_module_dir() {
  (go_env >/dev/null && cd /tmp && go mod download -json "sigs.k8s.io/kind@${KIND_VERSION}" </dev/null) \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# The kind base: what kind's images/base/Dockerfile does, from Debian packages, kind's base
# files and our containerd (runc and the CNI plugins are Debian's).
build_base_rootfs() {
  local root="${OUT}/base.rootfs"
  if [[ -f "${root}/.kind-base-r${IMAGE_REV}" ]]; then return 0; fi
  step "kind base rootfs"
  local t0; t0=$(date +%s)
  # kind's package list (images/base/Dockerfile) minus nfs-common and open-iscsi (no volume
  # plugins here), plus runc and the CNI plugins it builds from source.
  debootstrap_rootfs "${OUT}/base.debootstrap" \
    "systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,fuse-overlayfs,e2fsprogs,bash,ca-certificates,curl,jq,procps,runc,containernetworking-plugins,dbus"
  as_root rm -rf "${root}"
  as_root cp -a "${OUT}/base.debootstrap" "${root}"
  as_root rm -f "${root}/.complete"
  local files; files="$(kind_module_dir)/images/base/files"
  as_root bash -euo pipefail -c '
    root="$1"; files="$2"; bin="$3"
    install -m 0755 "$files"/usr/local/bin/* "$root/usr/local/bin/"
    mkdir -p "$root/kind/bin" "$root/LICENSES" "$root/etc/containerd" "$root/etc/default" \
      "$root/etc/sysctl.d" "$root/etc/systemd/system/kubelet.service.d"
    install -m 0644 "$files"/kind/README.txt "$root/kind/"
    install -m 0755 "$files"/kind/bin/* "$root/kind/bin/"
    install -m 0644 "$files"/LICENSES/* "$root/LICENSES/"
    install -m 0644 "$files"/etc/crictl.yaml "$root/etc/"
    install -m 0644 "$files"/etc/containerd/* "$root/etc/containerd/"
    install -m 0644 "$files"/etc/default/* "$root/etc/default/"
    install -m 0644 "$files"/etc/sysctl.d/* "$root/etc/sysctl.d/"
    install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$root/etc/systemd/system/"
    install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$root/etc/systemd/system/kubelet.service.d/"
    chmod 755 "$root/kind" "$root/kind/bin"
    find "$root/lib/systemd/system/sysinit.target.wants/" -name "systemd-tmpfiles-setup.service" -delete
    rm -f "$root"/lib/systemd/system/multi-user.target.wants/* \
      "$root"/etc/systemd/system/*.wants/* \
      "$root"/lib/systemd/system/local-fs.target.wants/* \
      "$root"/lib/systemd/system/sockets.target.wants/*udev* \
      "$root"/lib/systemd/system/sockets.target.wants/*initctl* \
      "$root"/lib/systemd/system/basic.target.wants/*
    echo "ReadKMsg=no" >> "$root/etc/systemd/journald.conf"
    ln -sf /usr/lib/systemd/systemd "$root/sbin/init"
    chroot "$root" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
    chroot "$root" systemctl mask systemd-binfmt.service >/dev/null 2>&1
    mkdir -p "$root/etc/kubernetes/manifests"
    install -m 0755 "$bin/containerd" "$bin/ctr" "$bin/containerd-shim-runc-v2" "$root/usr/local/bin/"
    chroot "$root" /usr/local/bin/ctr oci spec \
      | chroot "$root" jq ".hooks.createContainer[.hooks.createContainer| length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" \
      | chroot "$root" jq "del(.process.rlimits)" > "$root/etc/containerd/cri-base.json"
    # CNI plugins where containerd looks for them.
    mkdir -p "$root/opt/cni/bin"
    for p in "$root"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/$(basename "$p")" "$root/opt/cni/bin/"; done
  ' _ "${root}" "${files}" "${BIN}"
  as_root touch "${root}/.kind-base-r${IMAGE_REV}"
  log "kind base rootfs: done in $(( $(date +%s) - t0 ))s"
}

# Imports docker archives into ROOT/var/lib/containerd (namespace k8s.io, pinned, not unpacked)
# with a containerd of our own on the host: no container, no privileges beyond root.
import_images_into_rootfs() {
  local root="$1" tar="$2"
  local tmp; tmp="$(mktemp -d /tmp/tollgate-ctrd.XXXXXX)"
  cat > "${tmp}/config.toml" <<TOML
version = 3
root = "${root}/var/lib/containerd"
state = "${tmp}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.nri.v1.nri"]
[grpc]
  address = "${tmp}/containerd.sock"
[ttrpc]
  address = "${tmp}/containerd.sock.ttrpc"
[debug]
  address = ""
TOML
  # Started as a command, not through the as_root function: a function in the background is a
  # subshell, so $! would not be containerd's pid and `kill` would orphan it. 9>&-: the build lock
  # (take_lock's fd 9) must not live on in containerd, or the next build waits for it forever.
  local sudo=()
  [[ "$(id -u)" == 0 ]] || sudo=(sudo -n)
  "${sudo[@]}" "${BIN}/containerd" --config "${tmp}/config.toml" >"${tmp}/containerd.log" 2>&1 9>&- &
  local pid=$!
  local i ok=0
  for i in $(seq 1 50); do
    if [[ -S "${tmp}/containerd.sock" ]] && as_root "${BIN}/ctr" -a "${tmp}/containerd.sock" version >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  if [[ ${ok} != 1 ]]; then
    tail -20 "${tmp}/containerd.log" >&2; kill "${pid}" 2>/dev/null || true
    log "error: containerd for the image import did not start"; return 1
  fi
  local imported=0
  as_root "${BIN}/ctr" -a "${tmp}/containerd.sock" -n k8s.io images import --no-unpack --all-platforms \
    --digests --label io.cri-containerd.pinned=pinned "${tar}" >/dev/null && imported=1
  [[ ${imported} == 1 ]] &&
    as_root "${BIN}/ctr" -a "${tmp}/containerd.sock" -n k8s.io images list -q | sed 's/^/  in node: /' >&2
  kill "${pid}"; wait "${pid}" 2>/dev/null || true
  if [[ ${imported} != 1 ]]; then
    tail -20 "${tmp}/containerd.log" >&2
    log "error: importing the component images into the node image failed"; return 1
  fi
  as_root rm -rf "${tmp}"
}

build_node_image() {
  if have_image "${LOCAL_NODE_IMAGE}"; then
    log "node image cached: ${LOCAL_NODE_IMAGE}"
    return 0
  fi
  build_component_images
  build_base_rootfs
  step "node image ${LOCAL_NODE_IMAGE}"
  local t0; t0=$(date +%s)
  local node="${OUT}/node.rootfs"
  as_root rm -rf "${node}"
  as_root cp -a "${OUT}/base.rootfs" "${node}"
  as_root install -m 0755 "${BIN}/kubeadm" "${BIN}/kubelet" "${KUBECTL}" "${node}/usr/bin/"
  printf '%s' "${K8S_VERSION}" | as_root tee "${node}/kind/version" >/dev/null
  as_root mkdir -p "${node}/kind/manifests" "${node}/etc/cni/net.d"
  # No kindnetd, no local-path provisioner on one node: a static bridge CNI and the legacy
  # host-path StorageClass kind falls back to.
  as_root tee "${node}/kind/manifests/default-storage.yaml" >/dev/null <<'YAML'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
YAML
  as_root tee "${node}/etc/cni/net.d/10-tollgate-bridge.conflist" >/dev/null <<'JSON'
{
  "cniVersion": "1.0.0",
  "name": "tollgate-bridge",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "10.244.0.0/24" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON
  import_images_into_rootfs "${node}" "${IMAGES_TAR}"
  local ctx; ctx="$(mktemp -d)"
  as_root tar -C "${node}" --exclude=./.kind-base-r"${IMAGE_REV}" -c . | docker import - "${LOCAL_NODE_IMAGE}-rootfs" >/dev/null
  as_root rm -rf "${node}"
  # `docker import --change` refuses STOPSIGNAL on docker 20.10: a classic build adds it.
  cat > "${ctx}/Dockerfile" <<DOCKERFILE
FROM ${LOCAL_NODE_IMAGE}-rootfs
ENV container=docker PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]
DOCKERFILE
  DOCKER_BUILDKIT=0 docker_build -q -t "${LOCAL_NODE_IMAGE}" "${ctx}" </dev/null >/dev/null
  docker rmi "${LOCAL_NODE_IMAGE}-rootfs" >/dev/null 2>&1 || true
  rm -rf "${ctx}"
  log "node image: done in $(( $(date +%s) - t0 ))s ($(docker image inspect -f '{{.Size}}' "${LOCAL_NODE_IMAGE}" | awk '{printf "%.0f MB", $1/1e6}'))"
}

if [[ ${is_local} == 1 ]]; then
  build_node_image
  step "${NODE_BASE_IMAGE} (base of the project's Dockerfile)"
  TOLLGATE_LOCAL_IMAGES=1 ensure_node_base "${KIND_ROOT}"
fi

# ---- host quirk: capabilities of privileged containers ------------------------------------
step "checking privileged containers"
probe=(--entrypoint /bin/true "${node_image}")
capfix_detect "${probe[@]}"
SHIM_DIR=""
if [[ "${CAPFIX_NEEDED}" == 1 ]]; then
  capfix_install "${OUT}/shim"
  SHIM_DIR="${OUT}/shim"
  capfix_detect_fixed "${probe[@]}"
fi

# ---- publish -------------------------------------------------------------------------------
KIND="${BIN}/kind"
if [[ ! -x "${KIND}" ]]; then KIND="$(command -v kind)"; fi
cat > "${ENV_FILE}.tmp.$$" <<ENV
# written by scripts/build-kind.sh ($(date -u +%Y-%m-%dT%H:%M:%SZ))
KIND='${KIND}'
KUBECTL='${KUBECTL}'
HELM='${HELM}'
KIND_NODE_IMAGE='${node_image}'
KIND_NODE_IMAGE_LOCAL='${is_local}'
KIND_K8S_VERSION='${K8S_VERSION}'
KIND_ETCD_IMAGE_TAG='$([[ ${is_local} == 1 ]] && echo "${ETCD_IMAGE_TAG}")'
KIND_SHIM_DIR='${SHIM_DIR}'
KIND_RESTRICT_OOM_SCORE_ADJ='${CAPFIX_NEEDED}'
ENV
mv -f "${ENV_FILE}.tmp.$$" "${ENV_FILE}"
log "ready in $(( $(date +%s) - start_all ))s: node image ${node_image}"
printf '%s\n' "${ENV_FILE}"
