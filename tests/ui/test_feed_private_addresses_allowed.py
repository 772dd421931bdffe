"""A feed on the home network (here 127.0.0.1) is refused while feeds.allow_private
is off; the refusal names the setting to an admin and in the log, and tells anyone
else only to ask the admin. Turning the setting on by SIGHUP fetches it at once,
with no Refresh, whatever backoff the refusal had put it in."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

from tests.support.feed_server_support import (
    feed_host,
    log_text,
    podcast_page_text,
    signed_in,
    subscribe,
    until_shown,
)
from tests.support.server_process import start_listening
from tests.support.ui_session import Browser
from tests.support.workers_support import ServerTree

ON = "[feeds]\nfetch_metadata = true\nallow_private = true\n"
OFF = "[feeds]\nfetch_metadata = true\n"


async def test_turning_allow_private_on_by_sighup_fetches_the_refused_feed(
    tmp_path: Path,
) -> None:
    host = feed_host("The Home Show")
    feed = host.url("/show-1.xml")
    tree = ServerTree(tmp_path, workers=1, extra=OFF)
    subscribe(tree, "alice", [feed], admin=True)
    subscribe(tree, "bob", [feed])
    admin = person = None
    try:
        with tree:
            admin, person = await signed_in(tree, "alice"), await signed_in(tree, "bob")
            tree.wait_for(re.compile(r"fetching the feed \S+ failed"), timeout=30)
            said = await podcast_page_text(admin)
            # The admin sees the address and the setting; the log line names both.
            assert (
                "the last try failed: refused: 127.0.0.1 is not a public address (podsync "
                "fetches only public addresses unless feeds.allow_private = true)." in said
            ), said
            assert "Next try" in said
            assert "127.0.0.1 is not a public address (podsync fetches only public " in (
                log_text(tree)
            )
            assert "feeds.allow_private = true" in log_text(tree)
            # Anyone else: not allowed here, ask the admin; not which address.
            theirs = await podcast_page_text(person)
            assert (
                "the last try failed: refused: the address is not allowed on this server. "
                "To fetch feeds on your own network, ask the server's admin." in theirs
            ), theirs
            assert "127.0.0.1 is not" not in theirs and "allow_private" not in theirs
            assert host.hits["/show-1.xml"] == 0

            tree.extra = ON
            tree.rewrite_config("")
            assert tree.proc is not None
            tree.proc.send_signal(signal.SIGHUP)
            tree.wait_for(re.compile("reloaded the configuration"))
            took = await until_shown(admin, "/ui/subscriptions", "The Home Show", 90)
            assert took < 90
            assert host.hits["/show-1.xml"] == 1  # no Refresh: the fetcher's own pass
            assert "feeds.allow_private is on: fetching now 1 feeds refused before" in (
                log_text(tree)
            )
            fetched = await podcast_page_text(person)
            assert "The Home Show" in fetched and "the last try failed" not in fetched
            assert tree.stop() == 0
    finally:
        for browser in (admin, person):
            if browser is not None:
                await browser.close()
        host.close()


async def test_a_start_with_the_environment_variable_fetches_the_refused_feed(
    tmp_path: Path,
) -> None:
    host = feed_host("The Home Show")
    tree = ServerTree(tmp_path, workers=1, extra=OFF)
    subscribe(tree, "bob", [host.url("/show-1.xml")])
    person = None
    proc = None
    try:
        with tree:
            tree.wait_for(re.compile(r"fetching the feed \S+ failed"), timeout=30)
            assert tree.stop() == 0
        env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
        env["PODSYNC_FEEDS_ALLOW_PRIVATE"] = "true"
        argv = [sys.executable, "-m", "podsync", "--config", str(tree.config_path), "serve"]
        proc, base = start_listening(argv, tmp_path / "again.log", env)
        person = Browser(base)
        await person.sign_in("bob")
        assert await until_shown(person, "/ui/subscriptions", "The Home Show", 60) < 60
        assert host.hits["/show-1.xml"] == 1
    finally:
        if person is not None:
            await person.close()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        host.close()
