"""Password hashing keeps one core to the event loop: a hash's argon2 lanes are
computed in the one hash thread, and the hashes are argon2-cffi's, byte for byte."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import argon2
import pytest

from podsync.services.passwords import HASH_NICENESS, PasswordService


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _most_threads_while(work: asyncio.Future[object] | None, until: threading.Event) -> int:
    most = 0
    while not until.is_set():
        most = max(most, _threads())
        time.sleep(0.002)
    return most


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.parametrize("call", ["hash", "verify"])
async def test_a_hash_runs_in_one_thread(call: str) -> None:
    passwords = PasswordService()
    stored = argon2.PasswordHasher().hash("a password")  # p=4: four lanes
    await passwords.verify(stored, "warm up")  # the executor's thread exists now
    baseline = _threads()
    done = threading.Event()
    counted: list[int] = []
    watcher = threading.Thread(target=lambda: counted.append(_most_threads_while(None, done)))
    watcher.start()
    try:
        for _ in range(3):
            if call == "hash":
                await passwords.hash("a password")
            else:
                await passwords.verify(stored, "a password")
    finally:
        done.set()
        watcher.join()
        passwords.close()
    # The watcher is the only thread added; argon2-cffi's own calls start one per lane.
    assert counted[0] <= baseline + 1


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice values are Linux's")
async def test_hash_threads_yield_to_the_event_loop() -> None:
    passwords = PasswordService()
    try:
        stored = argon2.PasswordHasher(time_cost=1, memory_cost=1024).hash("abc")
        await passwords.verify(stored, "abc")
        hash_threads = [t for t in threading.enumerate() if t.name.startswith("argon2")]
        assert hash_threads
        own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        for thread in hash_threads:
            assert thread.native_id is not None
            assert os.getpriority(os.PRIO_PROCESS, thread.native_id) == min(19, own + HASH_NICENESS)
        # Only the hash threads: the process (and the event loop's thread) keep theirs.
        assert os.getpriority(os.PRIO_PROCESS, 0) == own
    finally:
        passwords.close()


async def test_hashes_are_argon2_cffi_hashes_both_ways() -> None:
    passwords = PasswordService()
    hasher = argon2.PasswordHasher()
    try:
        ours = await passwords.hash("correct horse battery")
        assert argon2.extract_parameters(ours) == argon2.extract_parameters(hasher.hash("x"))
        assert hasher.verify(ours, "correct horse battery")
        theirs = hasher.hash("staple 1234")
        assert await passwords.verify(theirs, "staple 1234")
        assert not await passwords.verify(theirs, "staple 12345")
        # Other parameters, and other kinds of argon2 hash, still verify.
        small = argon2.PasswordHasher(time_cost=1, memory_cost=1024, parallelism=3).hash("abc")
        assert await passwords.verify(small, "abc")
        assert not await passwords.verify(small, "abd")
        argon2i = argon2.PasswordHasher(type=argon2.Type.I).hash("abc")
        assert await passwords.verify(argon2i, "abc")
        assert not await passwords.verify(argon2i, "abd")
        tail = "$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"  # 12-byte salt, 15-byte hash
        broken = [
            "$argon2id$v=19$m=65536,t=3,p=4$!!$!!",
            "$argon2id$v=19$x",
            "plain",
            "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA",  # salt too short
            "$argon2id$v=19$m=1,t=3,p=4" + tail,  # costs argon2 refuses to compute
            "$argon2id$v=19$m=65536,t=0,p=4" + tail,
            "$argon2id$v=19$m=65536,t=3,p=0" + tail,
            "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$",  # no hash
        ]
        for stored in broken:
            assert not await passwords.verify(stored, "abc"), stored
            with pytest.raises(
                (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError)
            ):
                hasher.verify(stored, "abc")  # as argon2-cffi has it
        assert not await passwords.verify(hasher.hash("x"), "")
    finally:
        passwords.close()
