"""The wire format of `POST /api/v1/sync` (contract section 6): the envelope, each
action turned into a typed command (`podsync.rules`), and the results' JSON.

The envelope is all or nothing (a 400 naming the index and field); an action whose
fields are wrong becomes an `Invalid` command, so it is rejected on its own and
still recorded under its action_id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from podsync import rules, timestamps
from podsync.errors import InvalidInput
from podsync.feeds import has_bad_characters as bad_text
from podsync.rules import Command
from podsync.services.sync import ActionKey, BatchOutcome

MAX_BATCH = 30
SUBSCRIPTION = "subscription"
KNOWN_ACTIONS = ("subscribe", "unsubscribe", "update")
# A rejected action echoes the data it was sent with, cut to this depth, so that no
# submitted document can make the response unencodable (its size is bounded by the
# request's own, server.max_body_bytes).
ECHO_DEPTH = 32


@dataclass(frozen=True, slots=True)
class WireAction:
    action_id: str  # as sent (a UUID in any case)
    type: str
    action: str
    occurred_at: str
    data: dict[str, Any]
    command: Command
    key: ActionKey


def parse_envelope(body: Any) -> list[WireAction]:
    """Check the request envelope; any failure is a 400 naming the index and field."""
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object with a requests array")
    requests = body.get("requests")
    if not isinstance(requests, list):
        raise InvalidInput("requests must be an array of 1 to 30 actions")
    if not 1 <= len(requests) <= MAX_BATCH:
        raise InvalidInput(f"requests must hold 1 to {MAX_BATCH} actions, not {len(requests)}")
    parsed = []
    for index, item in enumerate(requests):
        where = f"requests[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{where} must be an object")
        action_id = rules.canonical_uuid(item.get("action_id"))
        if action_id is None:
            raise InvalidInput(f"{where}.action_id must be a UUID")
        for field in ("type", "action", "occurred_at"):
            value = item.get(field)
            if not isinstance(value, str):
                raise InvalidInput(f"{where}.{field} must be a string")
            if bad_text(value):
                raise InvalidInput(f"{where}.{field} contains a control character")
        data = item.get("data")
        if not isinstance(data, dict):
            raise InvalidInput(f"{where}.data must be an object")
        kind, action, occurred_at = item["type"], item["action"], item["occurred_at"]
        parsed.append(
            WireAction(
                action_id=item["action_id"],
                type=kind,
                action=action,
                occurred_at=occurred_at,
                data=data,
                command=_command(kind, action, occurred_at, data),
                key=ActionKey(action_id, _fingerprint(kind, action, occurred_at, data)),
            )
        )
    return parsed


class _Rejected(Exception):
    """A field that makes the action invalid; the message is the reason."""


def _optional_string(data: dict[str, Any], field: str) -> str | None:
    value = data.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Rejected(f"data.{field} must be a string")
    return value


def _command(kind: str, action: str, occurred_at: str, data: dict[str, Any]) -> Command:
    if kind != SUBSCRIPTION:
        return rules.Invalid(f"unknown type {kind!r}; this server knows {SUBSCRIPTION!r}")
    if action not in KNOWN_ACTIONS:
        return rules.Invalid(
            f"unknown action {action!r}; expected one of {', '.join(KNOWN_ACTIONS)}"
        )
    try:
        at = timestamps.parse(occurred_at)
    except timestamps.InvalidTimestamp as exc:
        return rules.Invalid(f"occurred_at: {exc}")
    try:
        sync_id = _optional_string(data, "sync_id")
        feed_url = _optional_string(data, "feed_url")
        guid = _optional_string(data, "guid")
    except _Rejected as exc:
        return rules.Invalid(str(exc))
    if action == "subscribe":
        if feed_url is None:
            return rules.Invalid("data.feed_url is required to subscribe")
        return rules.Subscribe(feed_url, at, guid, sync_id)
    if action == "unsubscribe":
        return rules.Unsubscribe(at, sync_id, feed_url, guid)
    if sync_id is None:
        return rules.Invalid("data.sync_id is required to update")
    return rules.Update(sync_id, at, feed_url, guid)


def _fingerprint(kind: str, action: str, occurred_at: str, data: dict[str, Any]) -> str:
    """What the action was, for telling a resend from a reused action_id: its fields
    compared as parsed JSON (key order and white space do not matter)."""
    try:
        text = _CANONICAL([kind, action, occurred_at, data])
    except (RecursionError, ValueError):
        text = _canonical([kind, action, occurred_at, data])  # deeper than the C encoder goes
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class _Literal(str):
    """Text to emit as is (not a JSON string to encode)."""


def _canonical(value: Any) -> str:
    """The same text as json.dumps(sort_keys=True, separators=(",", ":")) for any
    depth: an explicit stack instead of recursion."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Literal):
            out.append(item)
        elif isinstance(item, dict):
            out.append("{")
            stack.append(_Literal("}"))
            keys = sorted(item)
            for n in range(len(keys) - 1, -1, -1):
                stack.append(item[keys[n]])
                stack.append(_Literal(("," if n else "") + json.dumps(keys[n]) + ":"))
        elif isinstance(item, list):
            out.append("[")
            stack.append(_Literal("]"))
            for n in range(len(item) - 1, -1, -1):
                stack.append(item[n])
                if n:
                    stack.append(_Literal(","))
        else:
            out.append(json.dumps(item))
    return "".join(out)


def bounded(value: Any, depth: int = ECHO_DEPTH) -> Any:
    """A copy of submitted JSON cut to the echo depth: containers deeper than
    ECHO_DEPTH levels below the action's data come back empty."""
    if isinstance(value, dict):
        return {k: bounded(v, depth - 1) for k, v in value.items()} if depth > 0 else {}
    if isinstance(value, list):
        return [bounded(v, depth - 1) for v in value] if depth > 0 else []
    return value


# Encoders built once: json.dumps with any non-default argument builds a new one per
# call. ASCII output, so a lone surrogate echoed back from a request stays valid JSON.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def render_results(actions: Sequence[WireAction], outcome: BatchOutcome) -> bytes:
    """The response body: one result per action, in request order. An entity's data is
    its stored view; a rejected action without one echoes its data, bounded."""
    parts = []
    for wire, result in zip(actions, outcome.results, strict=True):
        data = (
            result.entity.view.decode("ascii")
            if result.entity is not None
            else _dumps(bounded(wire.data))
        )
        reason = "" if result.reason is None else ',"reason":' + _dumps(result.reason)
        parts.append(
            f'{{"action_id":{_dumps(wire.action_id)},"type":{_dumps(wire.type)},'
            f'"action":{_dumps(wire.action)},"status":"{result.status}","data":{data}{reason}}}'
        )
    return ('{"results":[' + ",".join(parts) + "]}").encode("ascii")
