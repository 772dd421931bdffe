"""A server killed while it fetches a feed leaves the feed claimed (its next try a
lease ahead); the next start takes back the claims of the process that is gone, says
so in the log, and fetches the feed within a minute, not when the lease runs out."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

from tests.support.feed_server_support import feed_host, log_text, signed_in, subscribe, until_shown
from tests.support.workers_support import ServerTree

FEEDS = "[feeds]\nfetch_metadata = true\nallow_private = true\n"


async def test_a_restart_after_a_kill_mid_fetch_fetches_the_feed_within_a_minute(
    tmp_path: Path,
) -> None:
    host = feed_host("The Slow Show")
    host.delays["/show-1.xml"] = [8.0]  # the first fetch is under way for 8 s
    tree = ServerTree(tmp_path, workers=1, extra=FEEDS)
    subscribe(tree, "alice", [host.url("/show-1.xml")])
    browser = None
    try:
        tree.start()
        deadline = time.monotonic() + 30
        while host.hits["/show-1.xml"] == 0:  # the fetch has begun
            assert time.monotonic() < deadline, log_text(tree)
            await asyncio.sleep(0.05)
        assert tree.proc is not None
        killed = tree.proc.pid  # one process: the fetcher runs in it
        tree.kill_tree()  # SIGKILL: nothing of the stop runs
        await asyncio.sleep(8.5)  # the host's slow answer has gone nowhere; the feed is claimed
        assert "The Slow Show" not in log_text(tree)

        tree.start()
        browser = await signed_in(tree, "alice")
        took = await until_shown(browser, "/ui/subscriptions", "The Slow Show", 60)
        assert took < 60
        assert host.hits["/show-1.xml"] == 2
        took_back = re.search(
            r"took back 1 feeds claimed for fetching by a process that is gone \(pid (\d+)\)",
            log_text(tree),
        )
        assert took_back is not None, log_text(tree)
        assert int(took_back.group(1)) == killed
        assert tree.stop() == 0
    finally:
        if browser is not None:
            await browser.close()
        tree.kill_tree()
        host.close()


async def test_a_stop_mid_fetch_gives_the_claim_back_for_the_next_start(tmp_path: Path) -> None:
    """SIGTERM cancels the fetch under way; the stop gives its claim back, so the next
    start fetches the feed at once (nothing for it to take back)."""
    host = feed_host("The Slow Show")
    host.delays["/show-1.xml"] = [8.0]
    tree = ServerTree(tmp_path, workers=1, extra=FEEDS)
    subscribe(tree, "alice", [host.url("/show-1.xml")])
    browser = None
    try:
        tree.start()
        deadline = time.monotonic() + 30
        while host.hits["/show-1.xml"] == 0:
            assert time.monotonic() < deadline, log_text(tree)
            await asyncio.sleep(0.05)
        assert tree.stop() == 0
        tree.start()
        browser = await signed_in(tree, "alice")
        assert await until_shown(browser, "/ui/subscriptions", "The Slow Show", 60) < 60
        assert "took back" not in log_text(tree)
        assert tree.stop() == 0
    finally:
        if browser is not None:
            await browser.close()
        tree.kill_tree()
        host.close()
