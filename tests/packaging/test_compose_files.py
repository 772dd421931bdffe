"""packaging/compose*.yaml and the image's settings name real podsync settings and load.

(tests/packaging/test_container.py builds and runs the image; these checks need no podman.)
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from podsync.config import ENV_PREFIX, Config, load_config

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"
COMPOSE_FILES = ["compose.yaml", "compose.postgres.yaml"]


def setting_names() -> set[str]:
    """Every PODSYNC_SECTION_KEY podsync reads."""
    names = set()
    for section in dataclasses.fields(Config):
        for key in dataclasses.fields(getattr(Config(), section.name)):
            names.add(f"{ENV_PREFIX}{section.name}_{key.name}".upper())
    return names


def image_env() -> dict[str, str]:
    """The ENV of the Dockerfile's last stage."""
    text = (PACKAGING / "Dockerfile").read_text().replace("\\\n", " ")
    last_stage = text.rsplit("\nFROM ", 1)[1]
    env: dict[str, str] = {}
    for line in last_stage.splitlines():
        if line.startswith("ENV "):
            env.update(item.split("=", 1) for item in shlex.split(line[4:]))
    return env


def substitute(value: str) -> str:
    """Compose's ${NAME:-default} and ${NAME:?message}, with a sample where there is none."""
    return re.sub(
        r"\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}",
        lambda m: m.group(2) if m.group(2) is not None else f"sample{m.group(1).lower()}",
        value,
    )


def services(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((PACKAGING / name).read_text())
    return dict(document["services"])


def test_the_image_settings_listen_on_all_addresses_and_keep_the_database_in_data() -> None:
    env = image_env()
    podsync_env = {k: v for k, v in env.items() if k.startswith(ENV_PREFIX)}
    assert set(podsync_env) <= setting_names()
    config = load_config(environ=podsync_env, cwd=Path("/"))
    assert (config.server.host, config.server.port) == ("0.0.0.0", 8080)  # noqa: S104
    assert config.database.path == "/data/podsync.db"
    assert env["PATH"].startswith("/opt/podsync/bin:")


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_a_compose_file_builds_the_image_and_sets_only_real_settings(name: str) -> None:
    service = services(name)["podsync"]
    build = service["build"]
    context = (PACKAGING / build["context"]).resolve()
    assert (context / build["dockerfile"]).resolve() == PACKAGING / "Dockerfile"
    assert "/data" in [volume.split(":")[1] for volume in service["volumes"]]
    assert service["healthcheck"]["test"] == ["CMD", "podsync-healthcheck"]
    assert "8080" in service["ports"][0].split(":")[-1]

    environment = {k: substitute(str(v)) for k, v in service["environment"].items()}
    assert set(environment) <= setting_names()
    config = load_config(environ={**image_env(), **environment}, cwd=Path("/"))
    if "postgres" in services(name):
        assert config.database.url.startswith("postgresql://podsync:")
        assert config.database.url.endswith("@postgres:5432/podsync")


def test_the_postgres_example_waits_for_a_healthy_database_with_the_same_credentials() -> None:
    podsync, postgres = (
        services("compose.postgres.yaml")["podsync"],
        services("compose.postgres.yaml")["postgres"],
    )
    assert podsync["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    url = substitute(podsync["environment"]["PODSYNC_DATABASE_URL"])
    env = {k: substitute(v) for k, v in postgres["environment"].items()}
    user = env["POSTGRES_USER"]
    assert url == (
        f"postgresql://{user}:{env['POSTGRES_PASSWORD']}@postgres:5432/{env['POSTGRES_DB']}"
    )
    # The password comes from .env, never written in the file.
    assert "${POSTGRES_PASSWORD:?" in postgres["environment"]["POSTGRES_PASSWORD"]


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_a_compose_file_reads_the_same_with_every_compose_tool(name: str) -> None:
    """What makes Compose v2, Debian's docker-compose 1.29 and podman-compose 1.0.3 run
    it alike (tests/packaging/test_compose_run.py runs compose.yaml with each)."""
    document: dict[str, Any] = yaml.safe_load((PACKAGING / name).read_text())
    assert "name" not in document  # Compose 1.29 refuses a top-level name
    # Each tool would prefix its own project name to a volume without one.
    for key, volume in document["volumes"].items():
        assert volume["name"].startswith("podsync"), key
    if name == "compose.yaml":
        assert document["volumes"]["podsync-data"]["name"] == "podsync-data"
    for service in document["services"].values():
        # podman-restart.service starts only "always" containers at boot.
        assert service["restart"] == "always"
        # Below a restricted host's hard limits, where podman's defaults are above.
        assert service["ulimits"] == {"nofile": 8192, "nproc": 1024}
    podsync = document["services"]["podsync"]
    assert podsync["pull_policy"] == "never"  # the image built or loaded here, as it is
    assert podsync["image"] == "${PODSYNC_IMAGE:-localhost/podsync:latest}"
