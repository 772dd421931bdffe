"""Another user's small request sent back to back on its own connection, whose slowest
answer shows how long a real `podsync serve` kept it waiting (tests/ops/test_loop_stalls.py).

The requests go out from a process of their own. A client thread in the test's process
would wait for the interpreter whenever the test decodes or encodes a big body (a
Nextcloud pull of 200,000 actions is a few hundred milliseconds of `json.loads`), and
that wait would count as the server's. Only the standard library is imported here:
the process starts from this module alone."""

from __future__ import annotations

import http.client
import multiprocessing
import queue
import time
from multiprocessing.synchronize import Event
from typing import Any
from urllib.parse import urlsplit


def _tick(
    host: str,
    port: int,
    path: str,
    headers: dict[str, str],
    stopping: Event,
    recording: Event,
    answered: Event,
    out: Any,
) -> None:
    """The ticking process: each call's (seconds, counted, status) into `out`."""
    conn = http.client.HTTPConnection(host, port, timeout=600)
    try:
        while not stopping.is_set():
            began = recording.is_set()
            started = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            elapsed = time.perf_counter() - started
            out.put((elapsed, began or recording.is_set(), response.status))
            answered.set()
            time.sleep(0.005)
    finally:
        conn.close()


class Ticker:
    """`GET path` with `headers`, back to back, from a process of its own. `latencies`
    are those of calls that began or ended while `recording` is on (a call a stalled
    server held counts in full); `failures` the statuses other than 200."""

    def __init__(self, base: str, path: str, headers: dict[str, str]) -> None:
        context = multiprocessing.get_context("spawn")
        parts = urlsplit(base)
        self._stopping, self._recording = context.Event(), context.Event()
        self.answered = context.Event()  # set once the first call is answered
        self._out: Any = context.Queue()
        self._process = context.Process(
            target=_tick,
            args=(
                parts.hostname or "",
                parts.port,
                path,
                headers,
                self._stopping,
                self._recording,
                self.answered,
                self._out,
            ),
            daemon=True,
        )
        self._latencies: list[float] = []
        self._failures: list[int] = []
        self.baseline = 0.0  # the slowest answer with nothing else running

    def start(self) -> None:
        self._process.start()

    def stop(self) -> None:
        self._stopping.set()
        self._process.join(timeout=600)
        self._drain()

    @property
    def recording(self) -> bool:
        return self._recording.is_set()

    @recording.setter
    def recording(self, on: bool) -> None:
        if on:
            self._recording.set()
        else:
            self._recording.clear()

    @property
    def latencies(self) -> list[float]:
        self._drain()
        return self._latencies

    @property
    def failures(self) -> list[int]:
        self._drain()
        return self._failures

    def worst(self) -> float:
        return max(self.latencies, default=0.0)

    def _drain(self) -> None:
        while True:
            try:
                elapsed, counted, status = self._out.get_nowait()
            except queue.Empty:
                return
            if status != 200:
                self._failures.append(status)
            if counted:
                self._latencies.append(elapsed)
