"""Fuzz a real `podsync serve` from the upstream Open Podcast API draft's own schema
(/work/shared/spec/upstream/opa-schema.yml, kept as tests/fixtures/opa-schema.yml),
a document nobody here wrote.

That schema disagrees with its own prose in known ways (its README): the change
feed's items, missing 400s, `guid`/`feed_url`/`subscribed_at` required in every
action's data, a full entity on rejected results. So this test does not hold
podsync to the schema's response shapes; it holds it to what must be true of any
answer to any request: never a 5xx, and every body strict JSON (no NaN, no
Infinity). `fetchSync` is left out, as the README says. Each generated action
with a UUID `action_id` gets a fresh one, so podsync's idempotent replay of an
id seen before cannot answer in place of the rules.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case

from tests.conftest import PASSWORD, with_accounts
from tests.opa.test_schemathesis import log_in
from tests.support.server_process import ServerProcess, free_port, write_server_config

SCHEMA = Path(__file__).parents[1] / "fixtures" / "opa-schema.yml"
MAX_EXAMPLES = 60

schema = schemathesis.openapi.from_path(SCHEMA).exclude(operation_id="fetchSync")


@pytest.fixture(scope="module")
def upstream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory: Path = tmp_path_factory.mktemp("schemathesis-upstream")
    port = free_port()
    # Generated logins fail by the hundred: throttling is not what is tested here.
    config = write_server_config(
        directory,
        port,
        login_max_failures=1_000_000,
        login_max_failures_per_address=1_000_000,
        max_pending_logins=1_000,
    )
    asyncio.run(with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD)))
    server = ServerProcess(directory / "server.toml", port, directory / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def upstream_token(upstream_server: ServerProcess) -> str:
    return log_in(upstream_server.base_url)


def _strict_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def fresh_action_ids(case: Case) -> None:
    """Give every action with a UUID action_id a new one (others stay as generated)."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("requests"), list):
        return
    for item in body["requests"]:
        if isinstance(item, dict) and isinstance(item.get("action_id"), str):
            try:
                uuid.UUID(item["action_id"])
            except ValueError:
                continue
            item["action_id"] = str(uuid.uuid4())


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_5xx_and_only_strict_json_for_the_upstream_schema(
    case: Case, upstream_server: ServerProcess, upstream_token: str
) -> None:
    fresh_action_ids(case)
    headers = dict(case.headers or {})
    headers.setdefault("Authorization", f"Bearer {upstream_token}")
    response = case.call(base_url=upstream_server.base_url, headers=headers)
    assert response.status_code < 500, (response.status_code, response.text)
    if response.content:
        [content_type] = response.headers["content-type"]
        assert content_type.startswith("application/json"), content_type
        json.loads(response.content.decode("utf-8"), parse_constant=_strict_constant)
