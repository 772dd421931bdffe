#!/usr/bin/env bash
# Make (once) a Debian 12 root file system as a tarball, for machines that cannot
# pull the public Debian images: the container bases (packaging/container.sh) and
# the arm64 build tree (packaging/build.sh --arch arm64) come from here.
#
#   packaging/debian-tree.sh runtime|builder amd64|arm64    # prints the tarball's path
#
#   runtime  what debian:bookworm-slim is (mmdebstrap --variant=minbase), plus python3
#            and ca-certificates: the base of the image's last stage.
#   builder  the same plus python3-venv, libpython3.11 and binutils: builds the venv
#            in the image's first stage, and the one-file binary with PyInstaller. It
#            also trusts the CA certificates this machine trusts, so that pip reaches
#            PyPI from inside it as it does from here.
#
# Tarballs are kept in build/debian/ARCH/ (or $PODSYNC_BUILD_CACHE/ARCH/) and reused
# while the package list and this script are unchanged, so the builds and tests of one CI run
# make each tree once. A foreign architecture runs under qemu-user-static
# (packages qemu-user-static, binfmt-support; see ensure_binfmt).
set -euo pipefail

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
suite=bookworm
mirrors=(
    "deb http://deb.debian.org/debian $suite main"
    "deb http://deb.debian.org/debian $suite-updates main"
    "deb http://deb.debian.org/debian-security $suite-security main"
)
hooks=()
if [[ "$kind" == builder && -f /etc/ssl/certs/ca-certificates.crt ]]; then
    hooks+=(--customize-hook='copy-in /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs')
fi
# The key of a tree: what it is made of, and how (this script).
want="$(printf '%s\n' "$kind" "$arch" "$packages" "${mirrors[@]}" "${hooks[@]}" |
    cat - "$0" | sha256sum | cut -c1-16)"

if [[ -f "$tarball" && "$(cat "$tarball.key" 2>/dev/null)" == "$want" ]]; then
    echo "$tarball"
    exit 0
fi

command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
[[ "$arch" == "$(native_arch)" ]] || ensure_binfmt "$arch"
mkdir -p "$cache"
echo "debian-tree.sh: making the $arch $kind tree (Debian 12, a few minutes)" >&2
started=$SECONDS
rm -f "$tarball.key"
# merged-usr: the layout Debian 12 has, set up by mmdebstrap itself, without the
# usrmerge package (and the perl it needs) that would otherwise stay in the tree.
# The .debs are kept in ARCH/debs and handed to the next tree of the same architecture.
debs="$cache/debs"
mkdir -p "$debs"
mmdebstrap --quiet --variant=minbase --arch="$arch" --include="$packages" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --skip=essential/unlink \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
    --setup-hook="sync-in $debs /var/cache/apt/archives/" \
    --customize-hook="sync-out /var/cache/apt/archives $debs" \
    --aptopt='Acquire::Retries "3"' --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "${hooks[@]}" \
    "$suite" "$cache/$kind.new.tar" "${mirrors[@]}" >&2
mv "$cache/$kind.new.tar" "$tarball"
echo "$want" >"$tarball.key"
echo "debian-tree.sh: $tarball ($(du -h "$tarball" | cut -f1), $((SECONDS - started)) s)" >&2
echo "$tarball"
