"""POST /auth/login and POST /auth/refresh."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from podsync import timestamps
from podsync.errors import InvalidInput
from podsync.web import params
from podsync.web.http import json_ok, json_type, login_caller, read_json_object
from podsync.web.keys import AUTH

REFRESH_PATH = "/auth/refresh"


def _required_string(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        got = "missing" if field not in body else json_type(value)
        raise InvalidInput(f"{field} must be a non-empty string (got {got})")
    return value


async def login(request: web.Request) -> web.Response:
    body = await read_json_object(request)
    username = _required_string(body, "username")
    password = _required_string(body, "password")
    result = await request.app[AUTH].login(username, password, login_caller(request, "opa"))
    return json_ok(
        {
            "access_token": result.access_token,
            "expires_in": result.expires_in,
            "refresh_token": result.refresh_token,
            "refresh_expires": timestamps.format(result.refresh_expires),
            "refresh_endpoint": params.public_url(request, REFRESH_PATH),
        }
    )


async def refresh(request: web.Request) -> web.Response:
    body = await read_json_object(request)
    # Any non-empty string is judged by the store: one no server issued is unknown (401).
    token = _required_string(body, "refresh_token")
    access_token, expires_in = await request.app[AUTH].refresh(token)
    return json_ok({"access_token": access_token, "expires_in": expires_in})
