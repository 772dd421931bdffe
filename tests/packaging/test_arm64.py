"""The arm64 one-file binary, for a Raspberry Pi with Raspberry Pi OS 64-bit.

packaging/build.sh --arch arm64 builds dist/podsync-linux-aarch64 with PyInstaller in
an arm64 Debian 12 tree (made once per run with mmdebstrap, kept in build/debian/arm64)
under qemu-user-static. This test runs that binary on this machine through the
kernel's binfmt_misc and qemu, with the same arm64 tree as the root its dynamic
loader reads (QEMU_LD_PREFIX): `user add`, `serve`, a gpodder login, a push from one
device and a pull on another. Runs with RUN_PACKAGING_TESTS=1 (.ci/run sets it).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.support.packaged_support import (
    PASSWORD,
    ROOT,
    Server,
    cannot_run,
    gpodder_login,
    gpodder_pull,
    gpodder_push,
    wait_until_healthy,
)
from tests.support.server_support import free_port

pytestmark = [pytest.mark.arm64, pytest.mark.slow]

BINARY = ROOT / "dist" / "podsync-linux-aarch64"
ELF_MACHINE_AARCH64 = 183
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


def _cannot_build_reason() -> str | None:
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return f"the arm64 build runs under qemu on x86-64 Linux, not {platform.machine()}"
    if os.geteuid() != 0:
        return "building in an arm64 Debian tree needs root (chroot)"
    for tool, package in (
        ("mmdebstrap", "mmdebstrap"),
        ("update-binfmts", "binfmt-support"),
        ("qemu-aarch64-static", "qemu-user-static"),
    ):
        if shutil.which(tool) is None:
            return f"needs {package} (apt-get install qemu-user-static binfmt-support mmdebstrap)"
    return None


def arm64_tree() -> Path:
    """The unpacked arm64 Debian 12 tree build.sh built in (packaging/lib.sh cache_dir)."""
    cache = os.environ.get("PODSYNC_BUILD_CACHE") or str(ROOT / "build" / "debian")
    return Path(cache) / "arm64" / "build-root"


@pytest.fixture(scope="session")
def arm64_binary() -> Path:
    if platform.machine() == "aarch64":
        pytest.skip(
            "this machine is arm64: tests/packaging/test_executable.py builds and runs that binary"
        )
    reason = _cannot_build_reason()
    if reason:
        cannot_run(reason)
    done = subprocess.run(
        ["bash", str(ROOT / "packaging" / "build.sh"), "--arch", "arm64"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=2400,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"build.sh --arch arm64 failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return BINARY


def test_the_arm64_binary_serves_and_syncs_under_emulation(
    arm64_binary: Path, tmp_path: Path
) -> None:
    header = arm64_binary.read_bytes()[:20]
    assert header[:5] == b"\x7fELF\x02", "not a 64-bit ELF file"
    assert int.from_bytes(header[18:20], "little") == ELF_MACHINE_AARCH64

    # Copied alone beside its config, as onto a Pi; nothing of this test's Python.
    workdir = tmp_path / "srv"
    (workdir / "data").mkdir(parents=True)
    unpack = tmp_path / "tmp"
    unpack.mkdir()
    binary = workdir / "podsync"
    shutil.copy2(arm64_binary, binary)
    port = free_port()
    (workdir / "podsync.toml").write_text(
        f'[server]\nport = {port}\n\n[database]\npath = "data/podsync.db"\n'
        "[feeds]\nfetch_metadata = false\n"  # its feeds are not served anywhere
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "TMPDIR": str(unpack),
        "QEMU_LD_PREFIX": str(arm64_tree()),
    }

    def run(*args: str, stdin: str = "") -> str:
        done = subprocess.run(
            [str(binary), *args],
            cwd=workdir,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"podsync {' '.join(args)}: {done.returncode}\n{done.stderr}"
        return done.stdout

    assert run("--version").strip() == f"podsync {version('podsync')}"
    assert "user alice created" in run("user", "add", "alice", "--password-stdin", stdin=PASSWORD)

    server = Server([str(binary), "serve"], env, workdir)
    try:
        base = server.wait_for(LISTENING, timeout=300).group(1)
        # The kernel ran it through qemu: the process's program is the emulator.
        assert "aarch64" in os.readlink(f"/proc/{server.proc.pid}/exe")
        assert wait_until_healthy(base, timeout=60)["status"] == "ok"
        gpodder_login(base, "alice", PASSWORD)
        gpodder_push(base, "alice", PASSWORD, "phone")
        gpodder_pull(base, "alice", PASSWORD, "laptop")
    finally:
        code = server.stop(timeout=120)
    assert code == 0, "".join(server.log)
    server.wait_for(re.compile(r"\bstopped\b"), timeout=5)
    assert list(unpack.iterdir()) == [], "the one-file bundle was not removed"
