#!/usr/bin/env bash
# Build podsync as one self-contained executable, from a checkout.
#
#   packaging/build.sh                 # this machine's CPU: dist/podsync-linux-x86_64 here
#   packaging/build.sh --arch arm64    # dist/podsync-linux-aarch64 (Raspberry Pi OS 64-bit)
#   packaging/build.sh --arch amd64    # dist/podsync-linux-x86_64
#
# For this machine's CPU it makes its own virtualenv (build/venv) from $PYTHON
# (default python3, 3.11+, built with --enable-shared), installs podsync and
# PyInstaller into it from PyPI, and freezes with packaging/podsync.spec. The venv
# is kept and reused while pyproject.toml and this script are unchanged; podsync
# itself is reinstalled every time.
#
# A binary is rebuilt only when something it is made from changed (PODSYNC_REBUILD=1:
# always). PyInstaller does not cross-compile. For the other CPU the same is done inside a
# Debian 12 tree of that architecture (packaging/debian-tree.sh builder ARCH, made
# with mmdebstrap and kept in build/debian/ARCH), run under qemu-user-static: this
# needs root, mmdebstrap, qemu-user-static and binfmt-support. The binary then runs
# on Debian 12 (glibc 2.36) and newer of that architecture.
set -euo pipefail

PYINSTALLER_REQUIREMENT='pyinstaller>=6.10,<7'

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# shellcheck source=packaging/lib.sh
. "$root/packaging/lib.sh"

arch="$(native_arch)"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --arch) arch="${2:?--arch needs amd64 or arm64}"; shift 2 ;;
    --arch=*) arch="${1#--arch=}"; shift ;;
    *) die "unknown option '$1' (usage: build.sh [--arch amd64|arm64])" ;;
    esac
done
check_arch "$arch"
binary="$root/dist/podsync-linux-$(machine_of "$arch")"
# Both the venv's and the tree's: rebuilt when the dependencies or this script change.
want_stamp="$(cat pyproject.toml packaging/build.sh | sha256sum | cut -d' ' -f1)"
# podsync with the PostgreSQL driver and the metrics library, which the spec bundles.
project=".[postgres,metrics]"

# A venv created from inside another venv must not inherit it.
unset PYTHONPATH PYTHONHOME

build_here() {
    local python="${PYTHON:-python3}" venv="$root/build/venv"
    local stamp="$venv/.podsync-build-stamp"
    # setuptools builds in build/lib; a module deleted from the tree must not linger there.
    rm -rf build/lib build/bdist.* ./*.egg-info
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want_stamp" ]]; then
        echo "build.sh: creating $venv" >&2
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            "$PYINSTALLER_REQUIREMENT" "$project"
        echo "$want_stamp" >"$stamp"
    else
        # Same dependencies: only the package's own code may have changed.
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-deps --force-reinstall .
    fi
    rm -rf build/lib build/bdist.* ./*.egg-info
    # Run outside the tree: from the repo root, "podsync" and its egg-info would be
    # found in the working directory instead of the installed package.
    (cd "$root/build" && "$venv/bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
        --distpath "$root/build/pyinstaller-dist" --workpath "$root/build/pyinstaller" \
        "$root/packaging/podsync.spec")
    mkdir -p dist
    install -m 0755 build/pyinstaller-dist/podsync "$binary"
}

# In build/debian/ARCH/build-root, an unpacked builder tree, under qemu. The tree is
# unpacked again when its tarball changes; its venv (/opt/build-venv) is kept like
# build/venv. /proc is mounted in a mount namespace of its own, so nothing stays
# mounted in the tree whatever happens to this script.
build_in_tree() {
    local tarball tree key
    [[ "$(id -u)" == 0 ]] || die "building for $arch on $(native_arch) needs root (chroot)"
    command -v unshare >/dev/null || die "unshare (util-linux) is missing"
    ensure_binfmt "$arch"
    tarball="$("$root/packaging/debian-tree.sh" builder "$arch")"
    key="$(cat "$tarball.key")"
    tree="$(cache_dir)/$arch/build-root"
    if [[ "$(cat "$tree.key" 2>/dev/null)" != "$key" ]]; then
        echo "build.sh: unpacking $tarball" >&2
        rm -f "$tree.key"
        [[ ! -d "$tree/proc" ]] || ! mountpoint -q "$tree/proc" || die "$tree/proc is mounted"
        rm -rf "$tree"
        mkdir -p "$tree"
        tar -xf "$tarball" -C "$tree" --numeric-owner
        echo "$key" >"$tree.key"
    fi
    # The source, fresh each time; name resolution as on this machine.
    rm -rf "$tree/src" "$tree/build"
    mkdir -p "$tree/src/packaging" "$tree/build"
    cp -a pyproject.toml README.md podsync "$tree/src/"
    cp -a packaging/podsync.spec packaging/entry.py "$tree/src/packaging/"
    find "$tree/src" -name __pycache__ -prune -exec rm -rf {} +
    cp -L /etc/resolv.conf "$tree/etc/resolv.conf"
    # pip trusts what this machine trusts (a proxy's CA, if there is one).
    if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
        cp -L /etc/ssl/certs/ca-certificates.crt "$tree/etc/ssl/certs/ca-certificates.crt"
    fi

    local script
    script=$(
        cat <<SCRIPT
set -eu
cd /src
if [ ! -f /opt/build-venv/.podsync-build-stamp ] \
    || [ "\$(cat /opt/build-venv/.podsync-build-stamp)" != "$want_stamp" ]; then
    echo "build.sh: creating /opt/build-venv in the $arch tree" >&2
    rm -rf /opt/build-venv
    python3 -m venv /opt/build-venv
    /opt/build-venv/bin/python -m pip install --quiet --only-binary=:all: \
        '$PYINSTALLER_REQUIREMENT' '$project'
    echo "$want_stamp" >/opt/build-venv/.podsync-build-stamp
else
    /opt/build-venv/bin/python -m pip install --quiet --no-deps --force-reinstall .
fi
cd /build
/opt/build-venv/bin/python -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath /build/dist --workpath /build/work /src/packaging/podsync.spec
SCRIPT
    )
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-60}" \
        unshare --mount --pid --fork --mount-proc="$tree/proc" \
        chroot "$tree" /bin/sh -c "$script"
    mkdir -p dist
    install -m 0755 "$tree/build/dist/podsync" "$binary"
}

# Everything the binary is made from: when none of it changed since the last
# build, the binary there is kept (a release after the tests reuses theirs).
inputs="$( (
    echo "$arch"
    sha256sum pyproject.toml README.md packaging/build.sh packaging/lib.sh \
        packaging/podsync.spec packaging/entry.py
    find podsync -type f ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum
) | sha256sum | cut -d' ' -f1)"
stamp="$root/build/stamps/${binary##*/}.inputs"
if [[ -x "$binary" && "$(cat "$stamp" 2>/dev/null)" == "$inputs" && -z "${PODSYNC_REBUILD:-}" ]]; then
    echo "build.sh: $binary is up to date" >&2
    exit 0
fi

started=$SECONDS
rm -f "$stamp"
if [[ "$arch" == "$(native_arch)" ]]; then
    build_here
else
    build_in_tree
fi
mkdir -p "${stamp%/*}"
echo "$inputs" >"$stamp"
echo "build.sh: built $binary ($(du -h "$binary" | cut -f1), $((SECONDS - started)) s)" >&2
