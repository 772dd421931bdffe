"""Reading a remote's answer as it arrives gives what json.loads gives, however the
text is cut into pieces, and refuses what it refuses; it never holds a value past
its bound."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from podsync.services.remote_import.json_stream import (
    Element,
    JsonReader,
    Member,
    Opened,
    TextDecoder,
)

GOOD = [
    '{"actions": [{"a": 1}, {"b": [1, 2, {"c": "]}"}]}], "timestamp": 12}',
    ' \n{ "add" : [ "x" , "y" ] , "remove":[],"timestamp":1.5 } \n',
    '[1, "two", {"three": [3]}, [4, [5]], null, true, false, -1.5e+10, 123456]',
    "[]",
    "{}",
    '{"a": {"nested": [1, 2]}, "b": "[not, a, list]", "a": 2}',
    '{"unicode": ["caf\\u00e9", "\\ud83c\\udfa7", "plain é"], "n": 12345.678e-3}',
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
    "[1.]",
    "[1.x]",
    "[tru]",
]


def read(text: str, sizes: list[int], max_value: int = 1000) -> Any:
    """The value rebuilt from the reader's events, `text` fed in pieces of `sizes`."""
    reader = JsonReader(max_value)
    events = []
    rng = random.Random(len(text))
    index = 0
    while index < len(text):
        size = rng.choice(sizes)
        events += reader.feed(text[index : index + size])
        index += size
    events += reader.finish()
    value: Any = None
    for event in events:
        if isinstance(event, Opened) and event.key is None:
            value = []
        elif isinstance(event, Opened):
            value = value if isinstance(value, dict) else {}
            value[event.key] = []
        elif isinstance(event, Element):
            (value if event.key is None else value[event.key]).append(event.value)
        elif isinstance(event, Member):
            value = value if isinstance(value, dict) else {}
            value[event.key] = event.value
    return {} if value is None else value


@pytest.mark.parametrize("text", GOOD)
@pytest.mark.parametrize("sizes", [[1], [2, 3], [7], [4096]])
def test_the_same_value_as_json_loads_in_any_pieces(text: str, sizes: list[int]) -> None:
    assert read(text, sizes) == json.loads(text)


@pytest.mark.parametrize("text", BAD)
@pytest.mark.parametrize("sizes", [[1], [3], [4096]])
def test_what_json_loads_refuses_is_refused(text: str, sizes: list[int]) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        read(text, sizes)


def test_a_top_level_scalar_is_refused() -> None:
    for text in ("42", '"a string"', "null"):
        with pytest.raises(ValueError, match="not a JSON object or array"):
            read(text, [10])


def test_a_value_past_the_bound_is_refused_without_waiting_for_its_end() -> None:
    reader = JsonReader(max_value=100)
    reader.feed('{"actions": [{"a": 1}, "')
    with pytest.raises(ValueError, match="a value longer than 100"):
        for _ in range(10):
            reader.feed("x" * 30)  # an endless string: refused once past 100
    deep = JsonReader(max_value=1 << 20)
    with pytest.raises(ValueError, match="nested too deeply"):
        deep.feed('{"actions": [' + "[" * 100_000 + "]" * 100_000 + "]}")
        deep.finish()


def test_elements_come_out_as_their_text_arrives() -> None:
    reader = JsonReader()
    assert reader.feed('{"timestamp": 3, "actions": [{"n": 1}, {"n"') == [
        Member("timestamp", 3),
        Opened("actions"),
        Element("actions", {"n": 1}),
    ]
    assert reader.feed(": 2}, 12") == [Element("actions", {"n": 2})]
    assert reader.feed("3]}") == [Element("actions", 123)]  # 12 was not the end
    assert reader.finish() == []


def test_bytes_in_any_encoding_json_reads_and_cut_anywhere() -> None:
    text = '{"add": ["https://é.example/🎧", "x"]}'
    for encoding in ("utf-8", "utf-8-sig", "utf-16", "utf-32-le"):
        data = text.encode(encoding)
        decoder = TextDecoder()
        out = "".join(decoder.decode(data[i : i + 1]) for i in range(len(data)))
        out += decoder.decode(b"", final=True)
        assert json.loads(out) == json.loads(text)
