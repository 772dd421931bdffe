"""The container image (packaging/Dockerfile), built and run with podman.

packaging/container.sh builds localhost/podsync:VERSION-ARCH; where no registry is
reachable it makes the Debian bases with mmdebstrap first (kept in build/debian for
the rest of the run). Everything happens in a podman store of the tests' own
(tests/support/podman_sandbox.py): the machine's images and volumes are never seen or
changed. Each test runs containers the way the compose file does: a named volume
on /data, port 8080 published on loopback, `exec` for the CLI. Run with
RUN_PACKAGING_TESTS=1 (tests/conftest.py); .ci/run does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from importlib.metadata import version
from typing import Any

import pytest

from tests.support.packaged_support import (
    PASSWORD,
    ROOT,
    cannot_run,
    gpodder_login,
    gpodder_pull,
    gpodder_push,
    wait_until_healthy,
)
from tests.support.podman_sandbox import Sandbox
from tests.support.server_support import free_port

pytestmark = [pytest.mark.container, pytest.mark.slow]

SCRIPT = ROOT / "packaging" / "container.sh"
SHUTDOWN_TIMEOUT = 5  # seconds, set in the container: SIGTERM must end it sooner
IMAGE_SIZE_LIMIT = 200_000_000  # bytes, uncompressed


def _cannot_run_reason() -> str | None:
    if os.environ.get("PODSYNC_IMAGE_BASE") != "public" and shutil.which("mmdebstrap") is None:
        return "needs mmdebstrap to make the Debian bases (apt-get install mmdebstrap)"
    return None


def build(sandbox: Sandbox, arch: str) -> str:
    """`container.sh build --arch ARCH` in the sandbox; the image's name."""
    reason = _cannot_run_reason()
    if reason:
        cannot_run(reason)
    done = subprocess.run(
        ["bash", str(SCRIPT), "build", "--arch", arch],
        cwd=ROOT,
        env=sandbox.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=2400,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"container.sh build --arch {arch} failed:\n{done.stderr[-4000:]}")
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def image(podman_sandbox: Sandbox) -> str:
    return build(podman_sandbox, "amd64" if os.uname().machine == "x86_64" else "arm64")


@pytest.fixture(scope="session")
def arm64_image(podman_sandbox: Sandbox) -> str:
    if os.uname().machine != "x86_64":
        pytest.skip("the arm64 image is built under emulation on x86-64")
    return build(podman_sandbox, "arm64")


@pytest.fixture
def podman(podman_sandbox: Sandbox) -> Callable[..., subprocess.CompletedProcess[str]]:
    """podman in the sandbox, as the packaging scripts run it."""
    return podman_sandbox.podman


Run = Callable[..., str]
Podman = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_container(podman_sandbox: Sandbox) -> Iterator[Run]:
    """Start a container (detached); each one, and each volume named, is removed after."""
    podman = podman_sandbox.podman
    names: list[str] = []
    volumes: set[str] = set()

    def run(image: str, *options: str, volume: str = "", name: str = "") -> str:
        name = name or f"podsync-test-{uuid.uuid4().hex[:12]}"
        names.append(name)
        if volume:
            volumes.add(volume)
            options = ("--volume", f"{volume}:/data", *options)
        podman("run", "--detach", "--name", name, *options, image)
        return name

    yield run
    for name in names:
        podman("rm", "--force", "--volumes", "--time", "0", name, check=False)
    for volume in volumes:
        podman("volume", "rm", "--force", volume, check=False)


def inspect(podman: Podman, what: str) -> dict[str, Any]:
    [document] = json.loads(podman("inspect", what).stdout)
    return dict(document)


def logs(podman: Podman, name: str) -> str:
    done = podman("logs", name)
    return done.stdout + done.stderr


def test_the_image_runs_podsync_unprivileged_with_data_in_a_volume(
    image: str, podman: Podman
) -> None:
    described = inspect(podman, image)
    config = described["Config"]
    assert config["User"] == "podsync:podsync"
    assert set(config["Volumes"]) == {"/data"}
    assert set(config["ExposedPorts"]) == {"8080/tcp"}
    assert config["Entrypoint"] == ["podsync"]
    assert config["Cmd"] == ["serve"]
    assert config["StopSignal"] == "SIGTERM"
    assert described["Healthcheck"]["Test"] == ["CMD", "podsync-healthcheck"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["PODSYNC_SERVER_HOST"] == "0.0.0.0"  # noqa: S104 - inside the container
    assert env["PODSYNC_DATABASE_PATH"] == "/data/podsync.db"
    assert described["Size"] < IMAGE_SIZE_LIMIT
    # No curl, no compiler, no pip: only what podsync needs to run.
    done = podman(
        "run",
        "--rm",
        "--network=none",
        "--entrypoint",
        "sh",
        image,
        "-c",
        "command -v podsync; command -v curl gcc pip pip3 || true",
    )
    assert done.stdout.split() == ["/opt/podsync/bin/podsync"]


def test_a_container_serves_syncs_stops_on_sigterm_and_keeps_its_data(
    image: str, run_container: Run, podman: Podman
) -> None:
    volume = f"podsync-test-{uuid.uuid4().hex[:12]}"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    options = (
        "--publish", f"127.0.0.1:{port}:8080",
        "--env", f"PODSYNC_SERVER_SHUTDOWN_TIMEOUT={SHUTDOWN_TIMEOUT}",
        "--env", "PODSYNC_FEEDS_FETCH_METADATA=false",  # its feeds are not served anywhere
    )  # fmt: skip
    first = run_container(image, *options, volume=volume)
    assert wait_until_healthy(base, timeout=90) == {"status": "ok", "version": version("podsync")}
    # The server (PID 1) is the image's own user, not root.
    status = podman("exec", first, "cat", "/proc/1/status").stdout
    [uids] = [line.split()[1:] for line in status.splitlines() if line.startswith("Uid:")]
    assert uids == ["10001"] * 4
    # The image's HEALTHCHECK passes (it needs no curl).
    assert podman("healthcheck", "run", first, check=False).returncode == 0

    # `docker compose exec podsync podsync user add alice`: the CLI finds the same database.
    added = podman(
        "exec", "--interactive", first, "podsync", "user", "add", "alice", "--password-stdin",
        input=PASSWORD + "\n",
    )  # fmt: skip
    assert "user alice created" in added.stdout
    gpodder_login(base, "alice", PASSWORD)
    gpodder_push(base, "alice", PASSWORD, "phone")
    mode = podman("exec", first, "stat", "-c", "%U %a", "/data/podsync.db").stdout.split()
    assert mode == ["podsync", "600"]

    # SIGTERM: podsync exits 0 by itself, within its shutdown_timeout (podman would
    # send SIGKILL after 60 s, and the exit code would be 137). The margin is for
    # podman itself on a busy machine.
    started = time.monotonic()
    podman("stop", "--time", "60", first, timeout=120)
    took = time.monotonic() - started
    state = inspect(podman, first)["State"]
    assert state["ExitCode"] == 0, logs(podman, first)
    assert took < SHUTDOWN_TIMEOUT + 10, f"stopping took {took:.1f} s"
    # The log goes to the container's output: podman/docker logs show it.
    output = logs(podman, first)
    assert "listening on http://0.0.0.0:8080" in output
    assert "stopped" in output

    # A new container on the same volume (what an upgrade does) has the user and the data.
    run_container(image, *options, volume=volume)
    wait_until_healthy(base, timeout=90)
    gpodder_pull(base, "alice", PASSWORD, "laptop")


@pytest.mark.arm64
def test_the_arm64_image_answers_under_emulation(
    arm64_image: str, run_container: Run, podman: Podman
) -> None:
    assert inspect(podman, arm64_image)["Architecture"] == "arm64"
    port = free_port()
    name = run_container(arm64_image, "--publish", f"127.0.0.1:{port}:8080")
    health = wait_until_healthy(f"http://127.0.0.1:{port}", timeout=300)
    assert health == {"status": "ok", "version": version("podsync")}
    machine = podman("exec", name, "python3", "-c", "import platform; print(platform.machine())")
    assert machine.stdout.strip() == "aarch64"
    podman("stop", "--time", "60", name, timeout=120)
    assert inspect(podman, name)["State"]["ExitCode"] == 0, logs(podman, name)
