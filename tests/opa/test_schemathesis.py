"""Property-based conformance: schemathesis drives the served OpenAPI document
against a real `podsync serve` process.

Every generated request (valid and invalid) must get no 5xx, and every response
must match the document: a documented status code, the documented content type
and headers, a body of the documented schema. A login hook (a fixture) logs in
through the API and puts the bearer token on every case. Bounded for CI: a few dozen
examples per operation, no deadline per example (argon2 logins are slow by design).
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from jsonschema import Draft202012Validator
from schemathesis import Case
from schemathesis.core.mutations import Mutation
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from podsync.web.opa.openapi import document_bytes
from tests.conftest import PASSWORD, with_accounts
from tests.support.server_process import ServerProcess, free_port, write_server_config

MAX_EXAMPLES = 60


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory: Path = tmp_path_factory.mktemp("schemathesis")
    port = free_port()
    # Generated logins fail by the hundred; the lockout is not what is tested here.
    config = write_server_config(directory, port, login_max_failures=1_000_000)
    asyncio.run(with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD)))
    server = ServerProcess(directory / "server.toml", port, directory / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def log_in(base_url: str) -> str:
    request = urllib.request.Request(  # noqa: S310 - a loopback http URL we built
        base_url + "/auth/login",
        data=json.dumps({"username": "alice", "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        token: str = json.loads(response.read())["access_token"]
    return token


# The document the server serves (a test below checks that it is this file); loaded
# at import so that schemathesis can parametrize the test by operation.
DOCUMENT = json.loads(document_bytes())
schema = schemathesis.openapi.from_dict(DOCUMENT)


@pytest.fixture(scope="module")
def bearer_token(live_server: ServerProcess) -> str:
    """The login hook: one login through the API for the whole module."""
    return log_in(live_server.base_url)


def test_the_served_document_is_the_one_tested(live_server: ServerProcess) -> None:
    with urllib.request.urlopen(live_server.base_url + "/api/v1/openapi.json") as response:  # noqa: S310
        assert json.loads(response.read()) == DOCUMENT


def _mutations(case: Case) -> tuple[Mutation, ...]:
    data = case.meta.phase.data if case.meta is not None else None
    return tuple(getattr(data, "mutations", ()) or ())


def drops_authorization(case: Case) -> bool:
    """Whether schemathesis built this case to leave out or spoil the Authorization
    header (it then expects a 401, so the login hook must not put a token back)."""
    data = case.meta.phase.data if case.meta is not None else None
    named = [getattr(data, "parameter", None), *(m.parameter for m in _mutations(case))]
    return any((name or "").lower() == "authorization" for name in named)


def adds_unknown_query_parameters(case: Case) -> bool:
    """podsync ignores query parameters it does not know (as HTTP APIs commonly do);
    OpenAPI cannot say so, and schemathesis expects such a request to be refused."""
    return any(
        m.parameter_location == ParameterLocation.QUERY and "additionalProperties" in m.keywords
        for m in _mutations(case)
    )


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI does not flake
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_response_conforms_to_the_document(
    case: Case, live_server: ServerProcess, bearer_token: str
) -> None:
    # Given as explicit headers, schemathesis knows the credentials are real: it
    # then probes the same request without them and with forged ones (ST401).
    auth = None if drops_authorization(case) else {"Authorization": f"Bearer {bearer_token}"}
    response: Any = case.call_and_validate(
        base_url=live_server.base_url,
        headers=auth,
        # `since` is an opaque, signed cursor: a string can match the document's
        # schema and still not be a cursor this server issued, which is a documented
        # 400. So "every schema-valid request gets a 2xx" does not hold by design.
        excluded_checks=[positive_data_acceptance]
        + ([negative_data_rejection] if adds_unknown_query_parameters(case) else []),
    )
    assert response.status_code < 500


def test_the_document_admits_what_the_server_judges_per_action(
    live_server: ServerProcess, bearer_token: str
) -> None:
    """Regression: the document gave action data fields and occurred_at strict types,
    yet the server (rightly, by the contract) answers such actions with a 200 and
    a `rejected` result, not a 400. The document now promises only what the
    envelope check enforces."""
    body = {
        "requests": [
            {
                "action_id": "0d5b7f3c-1d7e-4b8a-9c55-6f1e2d3c4b5a",
                "type": "subscription",
                "action": "subscribe",
                "occurred_at": "yesterday",
                "data": {"feed_url": 7, "guid": [], "sync_id": {}, "unsubscribed_at": {}},
            }
        ]
    }
    validator = Draft202012Validator(
        {"$ref": "#/components/schemas/SyncRequest", "components": DOCUMENT["components"]}
    )
    assert list(validator.iter_errors(body)) == []
    request = urllib.request.Request(  # noqa: S310 - a loopback http URL we built
        live_server.base_url + "/api/v1/sync",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {bearer_token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        assert response.status == 200
        assert json.loads(response.read())["results"][0]["status"] == "rejected"
