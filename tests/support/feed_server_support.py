"""A real `podsync serve` that fetches feeds from a host on 127.0.0.1, with people
subscribed to them by OPML import and signed in to the web UI: for the tests of what
the fetcher does across a reload and a restart."""

from __future__ import annotations

import asyncio
import html
import re
import time
from pathlib import Path

from tests.conftest import PASSWORD
from tests.support.feed_site import ThreadedFeedHost, rss
from tests.support.ui_session import Browser, words
from tests.support.workers_support import ServerTree

PODCAST_PAGE = re.compile(r'href="(/ui/podcasts/[^"?]+)"')


def feed_host(*titles: str) -> ThreadedFeedHost:
    """A host serving a feed at /show-N.xml for each title, N from 1."""
    return ThreadedFeedHost(
        {
            f"/show-{n}.xml": (200, "application/rss+xml", rss(title, episodes=3))
            for n, title in enumerate(titles, 1)
        }
    )


def subscribe(tree: ServerTree, name: str, urls: list[str], admin: bool = False) -> None:
    """Make the user (an admin or not) and subscribe them to `urls` by OPML import."""
    flags = ["--admin"] if admin else []
    added = tree.cli("user", "add", name, "--password-stdin", *flags, stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    outlines = "".join(f'<outline type="rss" xmlUrl="{url}"/>' for url in urls)
    opml = tree.directory / f"{name}.opml"
    opml.write_text(f'<?xml version="1.0"?><opml version="2.0"><body>{outlines}</body></opml>')
    imported = tree.cli("opml", "import", name, str(opml))
    assert imported.returncode == 0, imported.stderr


async def signed_in(tree: ServerTree, name: str) -> Browser:
    browser = Browser(tree.base_url)
    await browser.sign_in(name)
    return browser


async def podcast_page_text(browser: Browser) -> str:
    """The words of the page of the person's first podcast."""
    status, listing = await browser.page("/ui/subscriptions")
    assert status == 200, listing
    found = PODCAST_PAGE.search(listing)
    assert found is not None, listing
    status, page = await browser.page(found.group(1))
    assert status == 200, page
    return html.unescape(words(page))


async def until_shown(browser: Browser, path: str, text: str, seconds: float) -> float:
    """Poll a page until its words hold `text`; the seconds it took."""
    began = time.monotonic()
    while True:
        status, page = await browser.page(path)
        if status == 200 and text in words(page):
            return time.monotonic() - began
        assert time.monotonic() - began < seconds, f"no {text!r} in {seconds} s:\n{words(page)}"
        await asyncio.sleep(0.5)


def log_text(tree: ServerTree) -> str:
    return Path(tree.log_path).read_text(errors="replace")
