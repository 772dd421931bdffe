#!/usr/bin/env bash
# Make (once) a Debian 12 root file system as a tarball, for machines that cannot
# pull the public Debian images: the container bases (packaging/container.sh) and
# the tree the binary for another CPU is built in (packaging/build.sh --arch) come
# from here.
#
#   packaging/debian-tree.sh runtime|builder amd64|arm64    # prints the tarball's path
#   packaging/debian-tree.sh --made runtime|builder amd64|arm64
#                      # the same if that tree is already made, else exit 1 (makes nothing)
#
#   runtime  what debian:bookworm-slim is (mmdebstrap --variant=minbase, merged /usr,
#            no documentation), plus python3 and ca-certificates: the image's base.
#   builder  the runtime tree plus python3-venv, libpython3.11 and binutils, added
#            with apt in a chroot (much quicker than a second bootstrap under qemu):
#            PyInstaller builds the one-file binary in it; the image's first stage
#            uses it too when it is there.
#
# Tarballs are kept in build/debian/ARCH/ (or $PODSYNC_BUILD_CACHE/ARCH/) with a key
# naming what they are made of, and reused while that is unchanged, so the builds
# and tests of one CI run make each tree once. The .debs are kept beside them
# (ARCH/debs), so the second tree of an architecture downloads nothing again. A
# foreign architecture runs under qemu-user-static (packages qemu-user-static and
# binfmt-support). Needs root.
set -euo pipefail

only_if_made=""
if [[ "${1:-}" == --made ]]; then
    only_if_made=1
    shift
fi
kind="${1:?usage: debian-tree.sh runtime|builder amd64|arm64}"
arch="${2:?usage: debian-tree.sh runtime|builder amd64|arm64}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=packaging/lib.sh
. "$root/packaging/lib.sh"

packages="python3,ca-certificates"
builder_packages="python3-venv libpython3.11 binutils"
case "$kind" in
runtime | builder) ;;
*) die "unknown tree '$kind' (runtime or builder)" ;;
esac
check_arch "$arch"

cache="$(cache_dir)/$arch"
tarball="$cache/$kind.tar"
debs="$cache/debs"
suite=bookworm
mirrors=(
    "deb http://deb.debian.org/debian $suite main"
    "deb http://deb.debian.org/debian $suite-updates main"
    "deb http://deb.debian.org/debian-security $suite-security main"
)
# merged-usr: the layout Debian 12 has, set up by mmdebstrap itself, without the
# usrmerge package (and the perl it needs) that would otherwise stay in the tree.
# The dpkg options stay in the tree (as in debian:bookworm-slim): no manuals,
# translations or documentation but the copyright files.
options=(
    --variant=minbase --arch="$arch" --include="$packages"
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --aptopt='Acquire::Retries "3"' --aptopt='APT::Install-Recommends "false"'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
)
want="$(printf '%s\n' "$suite" "${options[@]}" "${mirrors[@]}" | sha256sum | cut -c1-16)"
if [[ "$kind" == builder ]]; then
    want="$(printf '%s\n' "$want" "$builder_packages" | sha256sum | cut -c1-16)"
fi

if [[ -f "$tarball" && "$(cat "$tarball.key" 2>/dev/null)" == "$want" ]]; then
    echo "$tarball"
    exit 0
fi
[[ -z "$only_if_made" ]] || exit 1

[[ "$arch" == "$(native_arch)" ]] || ensure_binfmt "$arch"
mkdir -p "$cache" "$debs"
echo "debian-tree.sh: making the $arch $kind tree (Debian 12, a few minutes)" >&2
started=$SECONDS
rm -f "$tarball.key"

if [[ "$kind" == builder ]]; then
    runtime="$(bash "$root/packaging/debian-tree.sh" runtime "$arch")"
    command -v unshare >/dev/null || die "unshare (util-linux) is missing"
    work="$(mktemp -d "$cache/builder.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    tar -xf "$runtime" -C "$work" --numeric-owner
    cp -L /etc/resolv.conf "$work/etc/resolv.conf"
    # apt trusts what this machine trusts (a proxy's CA, if there is one) while it
    # runs; the tree's own bundle is put back afterwards.
    cp -a "$work/etc/ssl/certs/ca-certificates.crt" "$work/ca-certificates.crt.orig"
    cp -L /etc/ssl/certs/ca-certificates.crt "$work/etc/ssl/certs/ca-certificates.crt" 2>/dev/null || true
    mkdir -p "$work/var/cache/apt/archives"
    cp -a "$debs/." "$work/var/cache/apt/archives/"
    # A mount namespace of its own: /proc is unmounted whatever happens here.
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        unshare --mount --pid --fork --mount-proc="$work/proc" chroot "$work" /bin/sh -c "
            set -e
            apt-get -o Acquire::Retries=3 update -qq
            apt-get install -y -qq --no-install-recommends $builder_packages >/dev/null
            " >&2
    cp -a "$work/var/cache/apt/archives/." "$debs/"
    rm -rf "$work/var/cache/apt/archives/"*.deb "$work/var/cache/apt/archives/partial" \
        "$work/var/lib/apt/lists/"* "$work/var/cache/apt/"*.bin
    mv "$work/ca-certificates.crt.orig" "$work/etc/ssl/certs/ca-certificates.crt"
    tar -C "$work" --numeric-owner -cf "$cache/$kind.new.tar" .
else
    command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
    # shellcheck disable=SC2016 # "$1" is for mmdebstrap's hook shell: the chroot's path
    mmdebstrap --quiet "${options[@]}" \
        --skip=essential/unlink \
        --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
        --setup-hook="sync-in $debs /var/cache/apt/archives/" \
        --customize-hook="sync-out /var/cache/apt/archives $debs" \
        "$suite" "$cache/$kind.new.tar" "${mirrors[@]}" >&2
fi
mv "$cache/$kind.new.tar" "$tarball"
echo "$want" >"$tarball.key"
echo "debian-tree.sh: $tarball ($(du -h "$tarball" | cut -f1), $((SECONDS - started)) s)" >&2
echo "$tarball"
