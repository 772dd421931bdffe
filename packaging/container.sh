#!/usr/bin/env bash
# Build and save podsync's container image with podman (packaging/Dockerfile).
#
#   packaging/container.sh build [--arch amd64|arm64]   # -> localhost/podsync:VERSION-ARCH
#                                 # (and localhost/podsync:latest, for this machine's CPU)
#   packaging/container.sh save  [--arch amd64|arm64] [--output DIR]
#                                 # -> DIR/podsync-VERSION-ARCH.oci.tar (default DIR: dist)
#   packaging/container.sh podman ARGS...   # podman, set up as these scripts run it
#
# The bases are the public debian:bookworm-slim images. Where they cannot be pulled
# (no registry reachable), the same content is made locally with mmdebstrap
# (packaging/debian-tree.sh) and imported as localhost/podsync-base:*; set
# PODSYNC_IMAGE_BASE=public or local to choose without trying. Another architecture
# than this machine's is built under qemu-user-static. VERSION is podsync's version.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=packaging/lib.sh
. "$root/packaging/lib.sh"

PUBLIC_BASE=docker.io/library/debian:bookworm-slim

command="${1:-}"
[[ $# -gt 0 ]] && shift
arch="$(native_arch)"
output="$root/dist"
if [[ "$command" != podman ]]; then
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --arch) arch="${2:?--arch needs amd64 or arm64}"; shift 2 ;;
        --arch=*) arch="${1#--arch=}"; shift ;;
        --output) output="${2:?--output needs a directory}"; shift 2 ;;
        *) die "unknown option '$1'" ;;
        esac
    done
    check_arch "$arch"
fi

podman_setup
version="$(podsync_version)"
image="localhost/podsync:$version-$arch"

# localhost/podsync-base:bookworm-KIND-ARCH from the mmdebstrap tarball, re-imported
# only when the tarball changed.
local_base() {
    local kind="$1" tarball key name
    tarball="$("$root/packaging/debian-tree.sh" "$kind" "$arch")"
    key="$(cat "$tarball.key")"
    name="localhost/podsync-base:bookworm-$kind-$arch"
    if [[ "$(pod image inspect --format '{{index .Labels "podsync.tree"}}' "$name" 2>/dev/null)" != "$key" ]]; then
        echo "container.sh: importing $tarball as $name" >&2
        pod import --quiet --arch "$arch" --change "LABEL podsync.tree=$key" \
            --change 'CMD ["bash"]' "$tarball" "$name" >/dev/null
    fi
    echo "$name"
}

choose_bases() {
    local how="${PODSYNC_IMAGE_BASE:-auto}"
    build_opts=()
    if [[ "$how" == auto ]]; then
        if pod image exists "$PUBLIC_BASE" && [[ "$(pod image inspect --format '{{.Architecture}}' "$PUBLIC_BASE")" == "$arch" ]] ||
            pod pull --quiet --arch "$arch" "$PUBLIC_BASE" >/dev/null 2>&1; then
            how=public
        else
            echo "container.sh: $PUBLIC_BASE cannot be pulled; making the bases with mmdebstrap" >&2
            how=local
        fi
    fi
    case "$how" in
    public) builder_base="$PUBLIC_BASE" runtime_base="$PUBLIC_BASE" pull=missing ;;
    local)
        runtime_base="$(local_base runtime)"
        # The builder tree when build.sh already made it for the binary (it has
        # python3-venv); else the runtime tree, to which the first stage adds it.
        if "$root/packaging/debian-tree.sh" --made builder "$arch" >/dev/null; then
            builder_base="$(local_base builder)"
        else
            builder_base="$runtime_base"
        fi
        pull=never
        # This machine's CA certificates in every RUN (pip and apt reach the
        # network as they do here); mounted, never part of the image.
        if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
            build_opts+=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
        fi
        ;;
    *) die "PODSYNC_IMAGE_BASE must be auto, public or local, not '$how'" ;;
    esac
}

build() {
    [[ "$arch" == "$(native_arch)" ]] || ensure_binfmt "$arch"
    choose_bases
    local started=$SECONDS
    echo "container.sh: building $image" >&2
    # The first stage fetches podsync's dependencies from PyPI: the host's network.
    pod build --quiet --format docker --arch "$arch" --network host --pull="$pull" "${build_opts[@]}" \
        --build-arg BUILDER_BASE="$builder_base" --build-arg RUNTIME_BASE="$runtime_base" \
        --build-arg VERSION="$version" \
        --file "$root/packaging/Dockerfile" --tag "$image" "$root" >/dev/null
    # This machine's own image is also localhost/podsync:latest, the one the compose
    # files run: `packaging/container.sh build` then `podman-compose up -d` uses it.
    if [[ "$arch" == "$(native_arch)" ]]; then
        pod tag "$image" localhost/podsync:latest
    fi
    echo "container.sh: built $image ($(pod image inspect --format '{{.Size}}' "$image" |
        awk '{printf "%.0f MB", $1 / 1e6}'), $((SECONDS - started)) s)" >&2
    echo "$image"
}

save() {
    pod image exists "$image" || die "no image $image: run packaging/container.sh build --arch $arch first"
    mkdir -p "$output"
    local archive="$output/podsync-$version-$arch.oci.tar"
    rm -f "$archive"
    pod save --quiet --format oci-archive --output "$archive" "$image"
    echo "container.sh: saved $archive ($(du -h "$archive" | cut -f1))" >&2
    echo "$archive"
}

case "$command" in
build) build ;;
save) save ;;
podman) pod "$@" ;;
*) die "usage: container.sh build|save [--arch amd64|arm64] [--output DIR] | podman ARGS..." ;;
esac
