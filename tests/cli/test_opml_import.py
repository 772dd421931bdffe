"""`podsync opml import` (contract section 10): each feed a subscribe through the
sync rules, one transaction, counts printed, nothing stored from a bad file."""

from __future__ import annotations

import os
import pty
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from podsync import timestamps
from podsync.cli.opml import PROGRESS_THRESHOLD
from podsync.config import Config
from podsync.feeds import derive_guid
from podsync.services.opml_io import clean_title
from tests.opa.test_opml_parse import EXPECTED, FIXTURES, REFUSED
from tests.support.cli_support import add_user, big_opml, dump, run, stored, unsubscribe
from tests.support.server_support import podsync_command
from tests.support.terminal import read_until


def import_file(config: Config, name: str, user: str = "alice") -> str:
    result = run(config, "opml", "import", user, str(FIXTURES / name))
    assert result.exit_code == 0, result.output
    return result.stdout


def counts(output: str) -> dict[str, int]:
    lines = [line.split(": ") for line in output.splitlines()[:4]]
    return {name: int(value) for name, value in lines}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_real_export_imports_exactly_its_feeds(config: Config, name: str) -> None:
    add_user(config)
    output = import_file(config, name)
    expected = {(url, clean_title(title), True) for url, title in EXPECTED[name]}
    assert stored(config) == expected
    assert counts(output) == {
        "added": len(expected),
        "resubscribed": 0,
        "already subscribed": 0,
        "skipped": 0,
    }


def test_guid_is_derived_and_subscribed_at_is_the_server_clock(config: Config) -> None:
    add_user(config)
    before = timestamps.now_us()
    import_file(config, "castro.opml")
    after = timestamps.now_us()
    with closing(sqlite3.connect(config.database.path)) as conn:
        rows = conn.execute("SELECT feed_url, guid, subscribed_at FROM subscriptions").fetchall()
    for url, guid, subscribed_at in rows:
        assert guid == derive_guid(url)
        assert before <= subscribed_at <= after


def test_invalid_urls_and_repeats_are_skipped_counted_and_explained(config: Config) -> None:
    add_user(config)
    output = import_file(config, "skipped.opml")
    assert counts(output) == {
        "added": 2,
        "resubscribed": 0,
        "already subscribed": 0,
        "skipped": 6,
    }
    assert stored(config) == {
        ("https://good.example.com/feed/", "Good", True),
        ("https://second.example.com/rss", "Second good", True),
    }
    assert "https://good.example.com/feed/: same feed as https://good.example.com/feed/" in output
    assert "http://GOOD.example.com/feed: same feed as" in output
    assert "file:///etc/passwd: feed_url must be an absolute http or https URL" in output
    assert "/feed.xml: feed_url must be an absolute http or https URL" in output
    assert "https://bad example.com/rss: feed_url contains white space" in output


def test_skipped_urls_print_on_one_line_each(config: Config) -> None:
    add_user(config)
    long_url = "https://long.example.com/" + "x" * 3000
    doc = (
        '<opml version="2.0"><body>'
        '<outline type="rss" text="newline" xmlUrl="https://a.example.com/&#10;rss"/>'
        f'<outline type="rss" text="long" xmlUrl="{long_url}"/>'
        "</body></opml>"
    )
    result = run(config, "opml", "import", "alice", "-", input=doc.encode())
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[4:] == [
        "  https://a.example.com/\\nrss: feed_url contains a control character",
        f"  {long_url[:197]}...: feed_url is longer than 2048 characters",
    ]


def test_a_second_import_changes_nothing(config: Config) -> None:
    add_user(config)
    import_file(config, "antennapod.opml")
    before = dump(config)
    output = import_file(config, "antennapod.opml")
    assert counts(output) == {
        "added": 0,
        "resubscribed": 0,
        "already subscribed": 4,
        "skipped": 0,
    }
    # Same rows, same change numbers and counters: not one write.
    assert dump(config) == before


def test_an_unsubscribed_feed_is_subscribed_again(config: Config) -> None:
    add_user(config)
    import_file(config, "castro.opml")
    unsubscribe(config, "https://feeds.megaphone.fm/replyall", timestamps.now_us())
    assert ("https://feeds.megaphone.fm/replyall", "Reply All", False) in stored(config)
    output = import_file(config, "castro.opml")
    assert counts(output) == {
        "added": 0,
        "resubscribed": 1,
        "already subscribed": 1,
        "skipped": 0,
    }
    assert ("https://feeds.megaphone.fm/replyall", "Reply All", True) in stored(config)


def test_an_unsubscribe_stamped_later_than_the_import_wins_and_is_reported(
    config: Config,
) -> None:
    add_user(config)
    import_file(config, "castro.opml")
    # A client whose clock runs 2 minutes ahead (within the allowed skew).
    unsubscribe(config, "https://feeds.megaphone.fm/replyall", timestamps.now_us() + 120_000_000)
    output = import_file(config, "castro.opml")
    assert counts(output)["skipped"] == 1
    assert "https://feeds.megaphone.fm/replyall: unsubscribed later than this import" in output
    assert ("https://feeds.megaphone.fm/replyall", "Reply All", False) in stored(config)


def test_import_reads_standard_input(config: Config) -> None:
    add_user(config)
    data = (FIXTURES / "pocketcasts.opml").read_bytes()
    result = run(config, "opml", "import", "alice", "-", input=data)
    assert result.exit_code == 0, result.output
    assert counts(result.stdout)["added"] == 3


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_that_is_not_opml_imports_nothing(config: Config, name: str) -> None:
    add_user(config)
    import_file(config, "castro.opml")
    before = dump(config)
    result = run(config, "opml", "import", "alice", str(FIXTURES / name))
    assert result.exit_code == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"Error: {FIXTURES / name}: ")
    assert line.endswith("nothing imported")
    assert dump(config) == before


def test_an_unknown_user_is_an_error_and_nothing_changes(config: Config) -> None:
    add_user(config)
    before = dump(config)
    result = run(config, "opml", "import", "bob", str(FIXTURES / "castro.opml"))
    assert result.exit_code == 1
    assert result.stderr == "Error: no user named 'bob'\n"
    assert dump(config) == before


def test_a_missing_file_is_a_usage_error(config: Config, tmp_path: Path) -> None:
    add_user(config)
    result = run(config, "opml", "import", "alice", str(tmp_path / "nope.opml"))
    assert result.exit_code == 2
    assert "nope.opml" in result.stderr


def test_export_then_import_into_another_account_gives_the_same_set(
    config: Config, tmp_path: Path
) -> None:
    add_user(config, "alice")
    add_user(config, "bob")
    for name in ("antennapod.opml", "entities.opml", "iso-8859-1.opml", "overcast.opml"):
        import_file(config, name, "alice")
    out = tmp_path / "alice.opml"
    result = run(config, "opml", "export", "alice", "-o", str(out))
    assert result.exit_code == 0, result.output
    result = run(config, "opml", "import", "bob", str(out))
    assert result.exit_code == 0, result.output
    assert counts(result.stdout)["added"] == 11
    assert stored(config, "bob") == stored(config, "alice")


def test_a_large_file_shows_a_progress_bar_on_a_terminal(config: Config, tmp_path: Path) -> None:
    add_user(config)
    opml = tmp_path / "big.opml"
    big_opml(opml, PROGRESS_THRESHOLD + 1)
    main, secondary = pty.openpty()
    process = subprocess.Popen(
        podsync_command(config, "opml", "import", "alice", str(opml)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=secondary,
    )
    os.close(secondary)
    seen = bytearray()
    try:
        read_until(main, b"saving feeds", seen)
        stdout, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)
    assert process.returncode == 0
    assert b"checking feeds" in seen
    assert stdout.decode().startswith(f"added: {PROGRESS_THRESHOLD + 1}\n")


def test_no_progress_bar_without_a_terminal(config: Config, tmp_path: Path) -> None:
    add_user(config)
    opml = tmp_path / "big.opml"
    big_opml(opml, PROGRESS_THRESHOLD + 1)
    result = run(config, "opml", "import", "alice", str(opml))
    assert result.exit_code == 0
    assert result.stderr == ""


def test_a_punycode_declaration_is_one_error_line_not_a_traceback(
    config: Config, tmp_path: Path
) -> None:
    # Issue 10 item 10: the CLI printed a traceback for encoding="punycode".
    add_user(config)
    path = tmp_path / "puny.opml"
    path.write_bytes(
        b'<?xml version="1.0" encoding="punycode"?>'
        b'<opml version="2.0"><body><outline xmlUrl="https://a.example/f"/></body></opml>'
    )
    result = run(config, "opml", "import", "alice", str(path))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"Error: {path}: the file cannot be decoded as punycode")
