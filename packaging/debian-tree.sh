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
#   builder  the same plus python3-venv, libpython3.11 and binutils: PyInstaller
#            builds the one-file binary in it; the image's first stage uses it too
#            when it is there.
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

case "$kind" in
runtime) packages="python3,ca-certificates" ;;
builder) packages="python3,python3-venv,libpython3.11,binutils,ca-certificates" ;;
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

if [[ -f "$tarball" && "$(cat "$tarball.key" 2>/dev/null)" == "$want" ]]; then
    echo "$tarball"
    exit 0
fi
[[ -z "$only_if_made" ]] || exit 1

command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
[[ "$arch" == "$(native_arch)" ]] || ensure_binfmt "$arch"
mkdir -p "$cache" "$debs"
echo "debian-tree.sh: making the $arch $kind tree (Debian 12, a few minutes)" >&2
started=$SECONDS
rm -f "$tarball.key"
# shellcheck disable=SC2016 # "$1" is for mmdebstrap's hook shell: the chroot's path
mmdebstrap --quiet "${options[@]}" \
    --skip=essential/unlink \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
    --setup-hook="sync-in $debs /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $debs" \
    "$suite" "$cache/$kind.new.tar" "${mirrors[@]}" >&2
mv "$cache/$kind.new.tar" "$tarball"
echo "$want" >"$tarball.key"
echo "debian-tree.sh: $tarball ($(du -h "$tarball" | cut -f1), $((SECONDS - started)) s)" >&2
echo "$tarball"
