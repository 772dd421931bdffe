"""What crosses between the workers when one writes for the others
(`sqlite_handoff`): frames of pickled values, read back with a closed list of what
they may name.

A frame is a 4-byte length and a pickle. A job is (job number, block name, args);
an answer is (job number, kind, value), kind one of DONE (value: the block's
result), FAILED (value: the error, `pack_error`) or NOT_TAKEN (the writer is
stopping and ran nothing: the follower writes itself). A stopping writer first sends
LEAVING (job number 0): the follower sends nothing more and hangs up once its jobs
are answered.

Only the server's own processes reach the socket (the parent's owner-only
directory, and the writer checks the peer's user), and still a frame is read with
`load`, which builds only podsync's dataclasses and plain values (no function, no
other class), so that a frame can name nothing to run: what runs is looked up by
name in the writer's list of blocks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import io
import pickle
import struct
from typing import Any

from podsync.errors import PodsyncError

DONE, FAILED, NOT_TAKEN, LEAVING = 0, 1, 2, 3
_LENGTH = struct.Struct("!I")
# A job is a batch of at most a request body's commands; far past any of them.
MAX_FRAME = 256 * 1024 * 1024
PROTOCOL = pickle.HIGHEST_PROTOCOL


class WireError(Exception):
    """A frame that is not one of ours (too long, or naming what it may not)."""


def frame(value: Any) -> bytes:
    data = pickle.dumps(value, PROTOCOL)
    if len(data) > MAX_FRAME:
        raise WireError(f"a frame of {len(data)} bytes is past the {MAX_FRAME} allowed")
    return _LENGTH.pack(len(data)) + data


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next frame's value; IncompleteReadError at the end of the stream."""
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > MAX_FRAME:
        raise WireError(f"a frame of {length} bytes is past the {MAX_FRAME} allowed")
    return load(await reader.readexactly(length))


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "podsync" or module.startswith("podsync."):
            found = super().find_class(module, name)
            if isinstance(found, type) and dataclasses.is_dataclass(found):
                return found
        raise WireError(f"{module}.{name} is not a value a write block takes or returns")


def load(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(data)).load()


def pack_error(exc: BaseException) -> tuple[str, str, tuple[Any, ...], dict[str, Any]] | None:
    """A domain error as (module, class, args, attributes), for `unpack_error`; None
    for any other (a bug: the follower answers it as one, a 500)."""
    kind = type(exc)
    if not isinstance(exc, PodsyncError):
        return None
    return kind.__module__, kind.__qualname__, exc.args, dict(vars(exc))


def unpack_error(packed: Any) -> BaseException:
    """The error `pack_error` packed, as the writer raised it: the same class, message
    and attributes (a 400 stays a 400, a 503 keeps its Retry-After)."""
    if packed is None:
        return HandedWriteFailed("the write failed in the worker that writes for the others")
    module, name, args, attributes = packed
    kind = None
    if module.startswith("podsync."):
        kind = getattr(importlib.import_module(module), name, None)
    if not (isinstance(kind, type) and issubclass(kind, PodsyncError)):
        return HandedWriteFailed(f"the writing worker answered with an unknown error {name}")
    exc = kind.__new__(kind)
    exc.args = tuple(args)
    vars(exc).update(attributes)
    return exc


class HandedWriteFailed(RuntimeError):
    """A handed write's block raised what is not a domain error (the writer logged
    it): answered as such a failure would be in this worker, a 500."""
