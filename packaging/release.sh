#!/usr/bin/env bash
# Build everything a release ships, into dist/release/VERSION:
#
#   packaging/release.sh 0.2.0
#
#   podsync-VERSION-py3-none-any.whl, podsync-VERSION.tar.gz   wheel and sdist
#   podsync-linux-x86_64, podsync-linux-aarch64                one-file binaries
#   podsync-VERSION-amd64.oci.tar, podsync-VERSION-arm64.oci.tar   container images
#   SHA256SUMS                                                  `sha256sum -c SHA256SUMS`
#
# VERSION must be the version written in podsync/__init__.py (the only place it is
# written; pyproject.toml reads it from there): a release of a tree that says
# another version is refused. The binary and image of the other CPU are built under
# qemu-user-static (packaging/build.sh, packaging/container.sh): this needs root,
# podman, runc, mmdebstrap, qemu-user-static and binfmt-support. The same script
# runs in CI on a tag (.github/workflows/release.yml).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# shellcheck source=packaging/lib.sh
. "$root/packaging/lib.sh"

version="${1:?usage: release.sh VERSION (e.g. 0.2.0)}"
version="${version#v}"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-]?(a|b|rc)[0-9]+)?$ ]] ||
    die "'$version' is not a version like 0.2.0"
[[ "$(podsync_version)" == "$version" ]] ||
    die "the tree is version $(podsync_version), not $version: set __version__ in podsync/__init__.py (and CHANGELOG.md) first"
grep -q "^## $version\b" CHANGELOG.md || die "CHANGELOG.md has no section '## $version'"

out="$root/dist/release/$version"
rm -rf "$out"
mkdir -p "$out"
started=$SECONDS
step() { echo "release.sh: $* ($((SECONDS - started)) s)" >&2; }

step "wheel and sdist"
venv="$root/build/release-venv"
[[ -x "$venv/bin/python" ]] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'build>=1.2'
rm -rf build/lib build/bdist.* ./*.egg-info
"$venv/bin/python" -m build --sdist --wheel --outdir "$out" . >/dev/null
rm -rf build/lib build/bdist.* ./*.egg-info

for arch in amd64 arm64; do
    step "binary for $arch"
    bash packaging/build.sh --arch "$arch"
    install -m 0755 "dist/podsync-linux-$(machine_of "$arch")" "$out/"
done

for arch in amd64 arm64; do
    step "container image for $arch"
    bash packaging/container.sh build --arch "$arch" >/dev/null
    bash packaging/container.sh save --arch "$arch" --output "$out" >/dev/null
done

(cd "$out" && sha256sum -- * >SHA256SUMS.part && mv SHA256SUMS.part SHA256SUMS)
step "done: $out"
ls -l "$out" >&2
