"""Decoding a large answer in pieces gives what json.loads gives, and refuses what it
refuses."""

from __future__ import annotations

import json

import pytest

from podsync.services.remote_import.json_pieces import loads_in_pieces

GOOD = [
    '{"actions": [{"a": 1}, {"b": [1, 2, {"c": "]}"}]}], "timestamp": 12}',
    ' \n{ "add" : [ "x" , "y" ] , "remove":[],"timestamp":1.5 } \n',
    '[1, "two", {"three": [3]}, [4, [5]], null, true, false]',
    "[]",
    "{}",
    '{"a": {"nested": [1, 2]}, "b": "[not, a, list]", "a": 2}',
    '"just a string"',
    "42",
    '{"unicode": ["caf\\u00e9", "\\ud83c\\udfa7", "plain é"]}',
]
BAD = [
    "",
    "{",
    '{"a": [1, 2}',
    '{"a": 1,}',
    "[1 2]",
    '{"a" 1}',
    "{1: 2}",
    "[1] extra",
    '{"a": [1]} {"b": 2}',
    "[,]",
]


@pytest.mark.parametrize("text", GOOD)
def test_the_same_value_as_json_loads(text: str) -> None:
    for encoding in ("utf-8", "utf-16"):
        body = text.encode(encoding)
        assert loads_in_pieces(body) == json.loads(body)


@pytest.mark.parametrize("text", BAD)
def test_what_json_loads_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text.encode())
    with pytest.raises(ValueError):
        loads_in_pieces(text.encode())


def test_the_lazy_member_reads_as_the_same_list() -> None:
    actions = [{"n": n, "s": f"x]{n}", "l": [n, {"k": None}]} for n in range(25)]
    body = json.dumps({"timestamp": 3, "actions": actions, "other": [1, 2]}, indent=1).encode()
    value = loads_in_pieces(body, lazy="actions")
    assert value["timestamp"] == 3 and value["other"] == [1, 2]
    lazy = value["actions"]
    assert len(lazy) == 25
    assert lazy[0] == actions[0] and lazy[-1] == actions[-1]
    assert lazy[5:12] == actions[5:12] and lazy[20:99] == actions[20:]
    assert list(lazy) == actions
    assert list(loads_in_pieces(b'{"actions": []}', lazy="actions")["actions"]) == []
    with pytest.raises(ValueError):  # each element is still checked on the way
        loads_in_pieces(b'{"actions": [{"a": 1}, {"b": }]}', lazy="actions")


def test_an_answer_nested_past_reason_is_refused() -> None:
    deep = b'{"actions": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    with pytest.raises(RecursionError):  # the client calls it "not JSON"
        loads_in_pieces(deep, lazy="actions")
