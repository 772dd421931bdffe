"""Decoding a large JSON answer a piece at a time.

`json.loads` of a 10 MB document runs in C from start to end without letting go of
the GIL: in a thread it still holds the event loop for its whole length (0.2 s and
more). An answer of episode actions is an object whose lists hold many small
values; decoding each of those on its own lets the interpreter switch threads
between them, so the loop is never held for more than one small value.

The list named `lazy` is not even kept decoded: it is a `LazyList` of the text and
where each element starts, decoded a slice at a time when read. 50,000 actions
decoded at once are 50,000 dicts the garbage collector walks through on each full
collection (0.2 to 0.4 s of a loaded server, the event loop stopped); a slice at a
time, they die young.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, overload

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class LazyList(Sequence[Any]):
    """A JSON array's elements, decoded when read (each read decodes again)."""

    def __init__(self, text: str, starts: list[int]) -> None:
        self._text = text
        self._starts = starts  # ints: nothing for the garbage collector to walk

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [_DECODER.raw_decode(self._text, i)[0] for i in self._starts[index]]
        return _DECODER.raw_decode(self._text, self._starts[index])[0]


def loads_in_pieces(body: bytes, lazy: str | None = None) -> Any:
    """The same value as `json.loads(body)` (ValueError when it is not JSON): the
    elements of a top-level array, or of arrays that are values of a top-level
    object, are decoded one by one; the array that is the value of the top-level
    member `lazy` comes back as a LazyList."""
    text = body.decode(json.detect_encoding(body), "surrogatepass")
    index = _skip(text, 0)
    value: Any
    if text.startswith("{", index):
        value, index = _object(text, index, lazy)
    elif text.startswith("[", index):
        value, index = _array(text, index)
    else:
        return json.loads(text)
    if _skip(text, index) != len(text):
        raise ValueError(f"extra data after the JSON value at {index}")
    return value


def _skip(text: str, index: int) -> int:
    found = _SPACE.match(text, index)
    return index if found is None else found.end()


def _array(text: str, index: int, starts: list[int] | None = None) -> tuple[list[Any], int]:
    """The array at `index` and where it ends; with `starts`, its elements are only
    checked (each decoded and dropped) and where each begins is added there."""
    index = _skip(text, index + 1)
    items: list[Any] = []
    if text.startswith("]", index):
        return items, index + 1
    while True:
        start = index
        item, index = _DECODER.raw_decode(text, index)
        if starts is None:
            items.append(item)
        else:
            starts.append(start)
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
        elif text.startswith("]", index):
            return items, index + 1
        else:
            raise ValueError(f"expected ',' or ']' at {index}")


def _object(text: str, index: int, lazy: str | None = None) -> tuple[dict[str, Any], int]:
    index = _skip(text, index + 1)
    members: dict[str, Any] = {}
    if text.startswith("}", index):
        return members, index + 1
    while True:
        if not text.startswith('"', index):
            raise ValueError(f"expected a name at {index}")
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if not text.startswith(":", index):
            raise ValueError(f"expected ':' at {index}")
        index = _skip(text, index + 1)
        if text.startswith("[", index) and key == lazy:
            starts: list[int] = []
            index = _array(text, index, starts)[1]
            members[key] = LazyList(text, starts)
        elif text.startswith("[", index):
            members[key], index = _array(text, index)
        else:
            members[key], index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
        elif text.startswith("}", index):
            return members, index + 1
        else:
            raise ValueError(f"expected ',' or '}}' at {index}")
