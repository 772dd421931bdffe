"""GET /api/v1/openapi.json: a valid OpenAPI 3.1 document covering every route."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from podsync.config import Config
from podsync.web.app import create_app


async def test_document_is_valid_openapi_31_and_public(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/v1/openapi.json")
    assert response.status == 200
    assert response.content_type == "application/json"
    document = await response.json()
    assert document["openapi"].startswith("3.1")
    validate(document)


def registered_routes(app: web.Application, gpodder: bool = False) -> set[tuple[str, str]]:
    """The OPA routes (or, with gpodder=True, only the gpodder layer's, which the
    README documents instead: the OpenAPI document stays about the OPA API). The web
    UI's pages (/ui/, routes named "ui.") are for people, not an API, and the Nextcloud
    API ("nextcloud.") is documented in docs/api.md as the Nextcloud app defines it:
    never here."""
    routes = set()
    for route in app.router.routes():
        if route.method == "HEAD" or (route.name or "").startswith(("ui.", "nextcloud.")):
            continue
        if (route.name or "").startswith("gpodder.") != gpodder:
            continue
        info = route.resource.get_info() if route.resource else {}
        path = info.get("path") or info.get("formatter")
        assert path, f"route without a path: {route}"
        routes.add((route.method.lower(), path))
    return routes


async def test_every_route_is_documented_and_every_documented_route_exists(
    client: TestClient[Any, Any], config: Config
) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    documented = {
        (method, path)
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }
    app = create_app(config)
    assert documented == registered_routes(app)
    assert len(registered_routes(app, gpodder=True)) == 14  # repeated slashes: web/slashes.py
    assert not any(path.startswith(("/api/2/", "/subscriptions/")) for _, path in documented)


async def test_documented_error_statuses_use_the_error_shape(client: TestClient[Any, Any]) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    responses = document["components"]["responses"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) < 400 or path == "/healthz":  # its own shape (contract 8)
                    continue
                name = response["$ref"].rsplit("/", 1)[-1]
                schema = responses[name]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (path, method, status)


async def test_document_states_the_configured_page_size_limit(
    aiohttp_client: Any, make_config: Any
) -> None:
    client = await aiohttp_client(create_app(make_config(sync={"page_size_max": 120})))
    document = await (await client.get("/api/v1/openapi.json")).json()
    limits = [
        parameter["schema"]["maximum"]
        for path in document["paths"].values()
        for operation in path.values()
        for parameter in operation.get("parameters", ())
        if parameter["name"] == "limit"
    ]
    assert limits == [120, 120]
    validate(document)


async def test_document_states_the_package_version(client: TestClient[Any, Any]) -> None:
    from podsync import __version__

    document = await (await client.get("/api/v1/openapi.json")).json()
    assert document["info"]["version"] == __version__ != "1.0.0"


async def test_boolean_parameters_are_documented_as_the_parser_reads_them(
    client: TestClient[Any, Any], alice: str
) -> None:
    import re

    document = await (await client.get("/api/v1/openapi.json")).json()
    schemas = [
        parameter["schema"]
        for path in document["paths"].values()
        for operation in path.values()
        for parameter in operation.get("parameters", ())
        if parameter["name"] in ("include_unsubscribed", "include_own")
    ]
    assert len(schemas) == 3
    headers = {"Authorization": f"Bearer {alice}"}
    for raw in ("true", "FALSE", "tRuE", "1", "0", "yes", "2", "truee"):
        documented = all(re.fullmatch(s["pattern"], raw) for s in schemas)
        response = await client.get(
            f"/api/v1/subscriptions?include_unsubscribed={raw}", headers=headers
        )
        assert (response.status == 200) == documented, raw
