"""packaging/release.sh VERSION makes every file a release ships, and SHA256SUMS.

It reuses what the tests before it built (the binaries are rebuilt only when their
sources changed; the container tests' podman store keeps the image layers,
tests/support/podman_sandbox.py), so in CI it costs the wheel, the sdist and two `podman
save`. Run alone, it builds everything: allow half an hour. Run with
RUN_PACKAGING_TESTS=1; .ci/run does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import zipfile

import pytest

import podsync
from tests.support.packaged_support import ROOT, cannot_run
from tests.support.podman_sandbox import Sandbox

pytestmark = [pytest.mark.container, pytest.mark.arm64, pytest.mark.slow]


def test_release_builds_every_file_and_their_checksums(podman_sandbox: Sandbox) -> None:
    for tool, package in (
        ("podman", "podman"),
        ("mmdebstrap", "mmdebstrap"),
        ("qemu-aarch64-static", "qemu-user-static"),
    ):
        if shutil.which(tool) is None:
            cannot_run(f"needs {package} (apt-get install podman runc mmdebstrap qemu-user-static)")
    if os.geteuid() != 0:
        cannot_run("release.sh builds the arm64 binary in a chroot: it needs root")
    version = podsync.__version__
    done = subprocess.run(
        ["bash", str(ROOT / "packaging" / "release.sh"), f"v{version}"],
        cwd=ROOT,
        env=podman_sandbox.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = ROOT / "dist" / "release" / version
    files = {
        f"podsync-{version}-py3-none-any.whl",
        f"podsync-{version}.tar.gz",
        "podsync-linux-x86_64",
        "podsync-linux-aarch64",
        f"podsync-{version}-amd64.oci.tar",
        f"podsync-{version}-arm64.oci.tar",
    }
    assert {p.name for p in out.iterdir()} == files | {"SHA256SUMS"}
    listed = (out / "SHA256SUMS").read_text().splitlines()
    assert sorted(line.split()[1] for line in listed) == sorted(files)
    subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=out, check=True)

    with zipfile.ZipFile(out / f"podsync-{version}-py3-none-any.whl") as wheel:
        metadata = wheel.read(f"podsync-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    with tarfile.open(out / f"podsync-{version}.tar.gz") as sdist:
        names = sdist.getnames()
    assert f"podsync-{version}/pyproject.toml" in names
    assert f"podsync-{version}/podsync/__init__.py" in names

    for arch in ("amd64", "arm64"):
        with tarfile.open(out / f"podsync-{version}-{arch}.oci.tar") as archive:
            member = archive.extractfile("index.json")
            assert member is not None
            index = json.load(member)
        [manifest] = index["manifests"]
        name = manifest["annotations"]["org.opencontainers.image.ref.name"]
        assert name == f"localhost/podsync:{version}-{arch}"
    for binary, machine in (("podsync-linux-x86_64", 62), ("podsync-linux-aarch64", 183)):
        header = (out / binary).read_bytes()[:20]
        assert int.from_bytes(header[18:20], "little") == machine, binary
        assert os.access(out / binary, os.X_OK)
    # setuptools' build/lib and egg-info would leak into the next build from this tree.
    assert not list(ROOT.glob("*.egg-info"))
    assert not (ROOT / "build" / "lib").exists()
