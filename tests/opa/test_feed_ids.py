"""The ids podsync derives or makes for feeds are the standard UUIDs, computed fast."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from podsync.feeds import PODCAST_GUID_NAMESPACE, _as_uuid, derive_guid, new_uuid7, new_uuid7s


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://example.com/feed/", "example.com/feed"),
        ("HTTP://Example.com/a?b=1", "Example.com/a?b=1"),
        ("https://bücher.example/podcast.xml", "bücher.example/podcast.xml"),
        ("http://a.example//", "a.example"),
    ],
)
def test_a_derived_guid_is_the_uuid5_of_the_url_without_scheme(url: str, name: str) -> None:
    assert derive_guid(url) == str(uuid.uuid5(PODCAST_GUID_NAMESPACE, name))


def test_new_sync_ids_are_time_ordered_version_7_uuids() -> None:
    before_ms = time.time_ns() // 1_000_000
    made = [new_uuid7() for _ in range(1000)]
    after_ms = time.time_ns() // 1_000_000
    assert len(set(made)) == 1000
    for text in made:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
        # RFC 9562: the first 48 bits are the Unix time in milliseconds.
        assert before_ms <= parsed.int >> 80 <= after_ms


def test_sync_ids_made_later_sort_later() -> None:
    """What keeps the sync_id index append-only: an id made after another one (here a
    millisecond apart, and within one millisecond by its 12-bit fraction) sorts after
    it, as text and as a UUID."""
    made = []
    for _ in range(50):
        made.append(new_uuid7())
        time.sleep(0.001)
    assert made == sorted(made)
    burst = [new_uuid7() for _ in range(200)]
    # Within a 244 ns step of the clock two ids may share the time bits; they are
    # never out of order by more than that step.
    tick = [uuid.UUID(u).int >> 64 for u in burst]
    assert tick == sorted(tick)


def test_a_batch_of_sync_ids_made_at_once_is_in_order_after_the_ids_before() -> None:
    """The ids of a batch's new entities are made before the write turn, all at once:
    distinct version 7 UUIDs, in ascending order, after an id made before them."""
    earlier = new_uuid7()
    time.sleep(0.001)
    batch = new_uuid7s(300)
    assert len(set(batch)) == 300
    assert batch == sorted(batch)
    assert earlier < batch[0]
    for text in batch:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert new_uuid7s(0) == []


def test_the_uuid_text_is_the_bytes_with_version_and_variant_set() -> None:
    for raw in (bytes(16), b"\xff" * 16, bytes(range(16)), *(os.urandom(16) for _ in range(500))):
        for version in (4, 5):
            expected = uuid.UUID(bytes=raw, version=version)  # sets the same bits
            assert _as_uuid(raw.hex(), str(version)) == str(expected)
