"""A blocking HTTP call with any method, headers and body, for tests that drive a
real `podsync serve` from threads (urllib: no cookie jar, nothing sent unasked)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def description(self) -> str:
        """The `description` of the error shape, or the raw body when it is not one."""
        try:
            return str(self.json()["description"])
        except (ValueError, KeyError, TypeError):
            return self.body.decode("utf-8", "replace")


def call(
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> Answer:
    """One request; a JSON body unless `body` is bytes."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    req = urllib.request.Request(url, data=data, method=method, headers=sent)  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:  # noqa: S310
            return Answer(response.status, response.headers, response.read())
    except urllib.error.HTTPError as exc:
        with exc:  # closes the connection it holds (no socket left to the collector)
            return Answer(exc.code, exc.headers, exc.read())
