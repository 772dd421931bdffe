# Shared by the packaging scripts (sourced, not run).
# shellcheck shell=bash

die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

# The Debian name of this machine's CPU: amd64 or arm64.
native_arch() {
    case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) uname -m ;;
    esac
}

check_arch() {
    case "$1" in
    amd64 | arm64) ;;
    *) die "unknown architecture '$1' (amd64 or arm64)" ;;
    esac
}

# The kernel's name for a Debian architecture (what `uname -m` says there).
machine_of() {
    case "$1" in
    amd64) echo x86_64 ;;
    arm64) echo aarch64 ;;
    esac
}

# Where the Debian trees are kept between builds: build/debian, or $PODSYNC_BUILD_CACHE.
cache_dir() {
    echo "${PODSYNC_BUILD_CACHE:-$root/build/debian}"
}

# The version, from the one place it is written (podsync/__init__.py).
podsync_version() {
    local v
    v="$(sed -n 's/^__version__ = "\([^"]*\)"$/\1/p' "$root/podsync/__init__.py")"
    [[ -n "$v" ]] || v="$(sed -n 's/^version = "\([^"]*\)"$/\1/p' "$root/pyproject.toml")"
    [[ -n "$v" ]] || die "no version in podsync/__init__.py or pyproject.toml"
    echo "$v"
}

# Make the kernel run another architecture's programs through qemu-user-static.
# Needs the packages qemu-user-static and binfmt-support, and root where the
# binfmt_misc file system is not mounted yet (a container or a machine without systemd).
ensure_binfmt() {
    local machine
    machine="$(machine_of "$1")"
    if [[ "$(head -n1 "/proc/sys/fs/binfmt_misc/qemu-$machine" 2>/dev/null)" == enabled ]]; then
        return
    fi
    if ! command -v update-binfmts >/dev/null || ! command -v "qemu-$machine-static" >/dev/null; then
        die "running $1 programs needs qemu-user-static and binfmt-support (apt-get install qemu-user-static binfmt-support)"
    fi
    if [[ ! -e /proc/sys/fs/binfmt_misc/register ]]; then
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
            die "cannot mount /proc/sys/fs/binfmt_misc (needs root)"
    fi
    update-binfmts --enable "qemu-$machine" >/dev/null 2>&1 || true
    [[ "$(head -n1 "/proc/sys/fs/binfmt_misc/qemu-$machine" 2>/dev/null)" == enabled ]] ||
        die "could not register qemu-$machine with the kernel (update-binfmts --enable qemu-$machine)"
}

# podman as the packaging scripts and tests run it (call `pod` after podman_setup).
# On a host with cgroups v1 (or hybrid), podman's defaults fail to start a container:
# there it reads packaging/podman-cgroups-v1.conf (unless CONTAINERS_CONF names
# another file: the tests' adds their own storage to the same settings) and runs
# runc, which starts containers there.
podman_setup() {
    command -v podman >/dev/null || die "podman is not installed (apt-get install podman runc)"
    podman_opts=()
    [[ ! -e /sys/fs/cgroup/cgroup.controllers ]] || return 0
    [[ -n "${CONTAINERS_CONF:-}" ]] || export CONTAINERS_CONF="$root/packaging/podman-cgroups-v1.conf"
    if command -v runc >/dev/null; then
        podman_opts=(--runtime runc)
    fi
}

pod() {
    podman "${podman_opts[@]}" "$@"
}
