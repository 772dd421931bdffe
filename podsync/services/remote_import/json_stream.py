"""Reading a remote server's JSON answer as it arrives, one element at a time.

An import reads answers it does not control: one array of 62 million numbers, an
object whose `actions` hold 200,000 items, a list of a million feeds. Decoded whole
(or even indexed whole) such an answer takes gigabytes. `JsonReader` is fed the
text piece by piece and hands out, as each one is complete:

- `Element(key, value)`: an element of the top-level array (`key` None), or of an
  array that is the value of the top-level object's member `key`;
- `Opened(key)`: such an array begins (so an empty one is seen too);
- `Member(key, value)`: a member of the top-level object whose value is not an array.

Nothing else is kept: what it holds is the text of one value not yet complete, and
no value may be longer than `max_value` characters. A value is decoded by the
standard library's decoder, a value at a time, so a thread that feeds it lets the
event loop run between values.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any

# A value of an answer: an episode action is a few hundred characters, a feed of
# oPodSync's simple list a few thousand (its description comes along).
MAX_VALUE_CHARS = 64 << 10
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Element:
    key: str | None
    value: Any


@dataclass(frozen=True, slots=True)
class Opened:
    key: str | None


@dataclass(frozen=True, slots=True)
class Member:
    key: str
    value: Any


Event = Element | Opened | Member

# Where the reader is: what the next non-space character may be.
_TOP, _KEY_OR_END, _KEY, _COLON, _VALUE, _NEXT_MEMBER = range(6)
_FIRST_ELEMENT, _ELEMENT, _NEXT_ELEMENT, _END = range(6, 10)


class JsonReader:
    """One JSON value, fed as text (`feed`), ended by `finish`. ValueError, with the
    character offset, when the text is not JSON or a value is past `max_value`."""

    def __init__(self, max_value: int = MAX_VALUE_CHARS) -> None:
        self.max_value = max_value
        self._pieces: list[str] = []
        self._pending = 0  # characters in _pieces
        self._wait_for = 0  # retry an incomplete value once this many are pending
        self._offset = 0  # characters consumed before the pending text
        self._state = _TOP
        self._key: str | None = None  # the member being read
        self._in_object = False

    def feed(self, text: str) -> list[Event]:
        self._pieces.append(text)
        self._pending += len(text)
        if self._pending < self._wait_for:
            return []  # an incomplete value: try again once it has doubled
        return self._run(final=False)

    def finish(self) -> list[Event]:
        events = self._run(final=True)
        if self._state != _END:
            raise ValueError(f"the answer ends before its JSON value does (at {self._offset})")
        return events

    def _run(self, final: bool) -> list[Event]:
        text = "".join(self._pieces)
        events: list[Event] = []
        index = self._step_all(text, events, final)
        self._offset += index
        rest = text[index:]
        self._pieces = [rest] if rest else []
        self._pending = len(rest)
        self._wait_for = 2 * len(rest) if rest else 0
        return events

    def _step_all(self, text: str, events: list[Event], final: bool) -> int:
        """Read what `text` holds; the index of the first character not consumed."""
        index = 0
        while True:
            index = _skip_space(text, index)
            if index == len(text):
                return index
            after = self._step(text, index, events, final)
            if after is None:
                return index
            index = after

    def _step(self, text: str, index: int, events: list[Event], final: bool) -> int | None:
        """One token or value at `index` (not space); the index after it, or None
        when the text ends inside it."""
        char = text[index]
        state = self._state
        if state == _TOP:
            if char == "{":
                self._in_object, self._state = True, _KEY_OR_END
                return index + 1
            if char == "[":
                self._open(None, events)
                return index + 1
            raise self._error(index, "the answer is not a JSON object or array")
        if state in (_KEY_OR_END, _KEY):
            if char == "}" and state == _KEY_OR_END:
                self._state = _END
                return index + 1
            if char != '"':
                raise self._error(index, "expected a member's name")
            found = self._value(text, index, final)
            if found is None:
                return None
            self._key, self._state = str(found[0]), _COLON
            return found[1]
        if state == _COLON:
            if char != ":":
                raise self._error(index, "expected ':'")
            self._state = _VALUE
            return index + 1
        if state == _VALUE:
            if char == "[":
                self._open(self._key, events)
                return index + 1
            found = self._value(text, index, final)
            if found is None:
                return None
            assert self._key is not None
            events.append(Member(self._key, found[0]))
            self._state = _NEXT_MEMBER
            return found[1]
        if state in (_NEXT_MEMBER, _NEXT_ELEMENT, _END):
            return self._separator(char, index)
        # _FIRST_ELEMENT or _ELEMENT
        if char == "]" and state == _FIRST_ELEMENT:
            self._close_array()
            return index + 1
        found = self._value(text, index, final)
        if found is None:
            return None
        events.append(Element(self._key if self._in_object else None, found[0]))
        self._state = _NEXT_ELEMENT
        return found[1]

    def _separator(self, char: str, index: int) -> int:
        state = self._state
        if state == _NEXT_MEMBER and char in ",}":
            self._state = _KEY if char == "," else _END
            return index + 1
        if state == _NEXT_ELEMENT and char in ",]":
            if char == ",":
                self._state = _ELEMENT
            else:
                self._close_array()
            return index + 1
        if state == _END:
            raise self._error(index, "extra data after the JSON value")
        raise self._error(index, f"expected ',' or {'}' if state == _NEXT_MEMBER else ']'}")

    def _open(self, key: str | None, events: list[Event]) -> None:
        events.append(Opened(key))
        self._state = _FIRST_ELEMENT

    def _close_array(self) -> None:
        self._state = _NEXT_MEMBER if self._in_object else _END

    def _value(self, text: str, index: int, final: bool) -> tuple[Any, int] | None:
        """The value at `index` and the index after it; None when it may not be
        complete yet (the rest of the answer decides)."""
        try:
            value, end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError) as exc:
            if not final and len(text) - index <= self.max_value:
                return None  # perhaps only cut by the end of this piece
            if len(text) - index > self.max_value:
                raise self._too_long(index) from None
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise self._error(index, reason) from None
        if end - index > self.max_value:
            raise self._too_long(index)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not final and _number_goes_on(text, end):
            return None  # 12 of 123, or 1 of 1.5: the digits may go on
        return value, end

    def _too_long(self, index: int) -> ValueError:
        limit = f"{self.max_value >> 10} KiB" if self.max_value >= 1024 else str(self.max_value)
        return self._error(index, f"a value longer than {limit}")

    def _error(self, index: int, reason: str) -> ValueError:
        return ValueError(f"{reason} (at character {self._offset + index})")


def _skip_space(text: str, index: int) -> int:
    found = _SPACE.match(text, index)
    return index if found is None else found.end()


def _number_goes_on(text: str, end: int) -> bool:
    """Whether all that follows a number could still be part of it."""
    found = _NUMBER_TAIL.match(text, end)
    return found is not None and found.end() == len(text)


class TextDecoder:
    """Bytes to text as `json.loads` reads them (UTF-8, -16 or -32 found from the
    first bytes, a BOM allowed), a piece at a time."""

    def __init__(self) -> None:
        self._head = b""
        self._decoder: codecs.IncrementalDecoder | None = None

    def decode(self, data: bytes, final: bool = False) -> str:
        if self._decoder is None:
            self._head += data
            if len(self._head) < 4 and not final:
                return ""
            encoding = json.detect_encoding(self._head)
            self._decoder = codecs.getincrementaldecoder(encoding)("surrogatepass")
            data, self._head = self._head, b""
        return self._decoder.decode(data, final)
