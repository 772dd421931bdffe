"""The ids podsync derives or makes for feeds are the standard UUIDs, computed fast."""

from __future__ import annotations

import os
import uuid

import pytest

from podsync.feeds import PODCAST_GUID_NAMESPACE, _as_uuid, derive_guid, new_uuid4


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


def test_new_sync_ids_are_random_version_4_uuids() -> None:
    made = {new_uuid4() for _ in range(1000)}
    assert len(made) == 1000
    for text in made:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_the_uuid_text_is_the_bytes_with_version_and_variant_set() -> None:
    for raw in (bytes(16), b"\xff" * 16, bytes(range(16)), *(os.urandom(16) for _ in range(500))):
        for version in (4, 5):
            expected = uuid.UUID(bytes=raw, version=version)  # sets the same bits
            assert _as_uuid(raw.hex(), str(version)) == str(expected)
