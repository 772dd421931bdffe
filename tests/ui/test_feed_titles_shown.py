"""The feed fetcher inside the server: on by default; with `fetch_metadata = false` no
outbound connection at all; on, the titles it learns reach the OPML export and the
gpodder simple API."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.app import create_app
from podsync.web.keys import FEED_INFO
from tests.conftest import PASSWORD, MakeConfig, bearer, login, run_cli
from tests.support.feed_site import FeedSite
from tests.support.gpodder_support import basic

Client = TestClient[Any, Any]
CSRF = re.compile(r'name="csrf" value="([^"]+)"')

# Every connect() and name lookup of this process while a test listens (an audit
# hook cannot be removed, so one hook serves every test and records only then).
_HEARD: list[list[tuple[str, Any]]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _HEARD and event in ("socket.connect", "socket.getaddrinfo"):
        _HEARD[-1].append((event, args[1] if event == "socket.connect" else args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def outbound() -> Iterator[list[tuple[str, Any]]]:
    heard: list[tuple[str, Any]] = []
    _HEARD.append(heard)
    yield heard
    _HEARD.remove(heard)


@pytest.fixture
async def site() -> AsyncIterator[FeedSite]:
    server = FeedSite()
    await server.start()
    yield server
    await server.close()


async def subscribe_before_start(config: Config, tmp_path: Path, *urls: str) -> None:
    """alice's subscriptions, made by the CLI before the server starts, so that the
    fetcher's first pass (at start) finds them."""
    outlines = "".join(f'<outline type="rss" text="" xmlUrl="{u}"/>' for u in urls)
    opml = tmp_path / "feeds.opml"
    opml.write_text(f'<?xml version="1.0"?><opml version="2.0"><body>{outlines}</body></opml>')
    await import_opml(config, opml)


async def import_opml(config: Config, opml: Path) -> None:
    # The CLI runs its own event loop: on a thread of its own, as from a shell.
    result = await asyncio.to_thread(run_cli, config, "opml", "import", "alice", str(opml))
    assert result.exit_code == 0, result.output


async def start(aiohttp_client: Any, config: Config) -> Client:
    client: Client = await aiohttp_client(create_app(config))
    return client


def feeds_config(make_config: MakeConfig, fetch: bool) -> Config:
    return make_config(feeds={"fetch_metadata": fetch, "allow_private": True})


def test_the_fetcher_is_on_by_default(make_config: MakeConfig) -> None:
    assert make_config(feeds={"allow_private": True}).feeds.fetch_metadata is True


async def test_with_fetch_metadata_false_the_server_makes_no_outbound_connection(
    aiohttp_client: Any,
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    site: FeedSite,
    tmp_path: Path,
    outbound: list[tuple[str, Any]],
) -> None:
    config = feeds_config(make_config, fetch=False)
    await subscribe_before_start(config, tmp_path, site.url("/show.xml"))
    outbound.clear()
    client = await start(aiohttp_client, config)
    token = (await login(client))["access_token"]
    await asyncio.sleep(1.5)  # the fetcher, were it on, starts its first pass at once
    export = await client.get("/api/v1/subscriptions.opml", headers=bearer(token))
    assert "The Show" not in await export.text()
    # Subscribing in the web UI, which fetches the feed at once when the fetcher is
    # on, and its Refresh: neither reaches out either.
    origin = {"Origin": str(client.make_url("")).rstrip("/")}
    signed = await client.post(
        "/ui/login", data={"username": "alice", "password": PASSWORD}, headers=origin
    )
    assert signed.status == 200
    csrf = CSRF.search(await (await client.get("/ui/subscriptions")).text())
    assert csrf is not None
    added = await client.post(
        "/ui/subscriptions",
        data={"csrf": csrf.group(1), "feed_url": site.url("/page.html")},
        headers=origin,
    )
    assert added.status == 200 and "Subscribed." in await added.text()
    sync_id = re.search(r'href="/ui/podcasts/([^"]+)"', await added.text())
    assert sync_id is not None
    refreshed = await client.post(
        "/ui/subscriptions/refresh",
        data={"csrf": csrf.group(1), "sync_id": sync_id.group(1)},
        headers=origin,
    )
    assert "feeds.fetch_metadata is off" in await refreshed.text()
    assert sum(site.hits.values()) == 0
    app_port = client.server.port
    # The test client's own connections to the app are the only ones, and no name
    # was looked up but the app's own address.
    elsewhere = [
        (event, target)
        for event, target in outbound
        if not (event == "socket.connect" and target[1] == app_port)
        and not (event == "socket.getaddrinfo" and target in ("127.0.0.1", b"127.0.0.1"))
    ]
    assert elsewhere == []
    assert (await client.app[FEED_INFO].summary()).enabled is False


async def test_when_on_titles_reach_the_opml_export_and_the_gpodder_lists(
    aiohttp_client: Any,
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    site: FeedSite,
    tmp_path: Path,
    outbound: list[tuple[str, Any]],
) -> None:
    config = feeds_config(make_config, fetch=True)
    show, atom, page = site.url("/show.xml"), site.url("/atom.xml"), site.url("/page.html")
    await subscribe_before_start(config, tmp_path, show, atom, page)
    client = await start(aiohttp_client, config)
    service = client.app[FEED_INFO]
    deadline = time.monotonic() + 20
    while (await service.summary()).fetched + (await service.summary()).failing < 3:
        assert time.monotonic() < deadline, "the fetcher did not fetch the feeds in 20 s"
        await asyncio.sleep(0.1)
    assert any(event == "socket.connect" and t[1] == site.port for event, t in outbound)

    token = (await login(client))["access_token"]
    export = await (await client.get("/api/v1/subscriptions.opml", headers=bearer(token))).text()
    assert f'text="The Show" title="The Show" xmlUrl="{show}"' in export
    assert 'text="An Atom Show"' in export

    listed = await (await client.get("/subscriptions/alice.json", headers=basic())).json()
    assert listed == [
        {"url": show, "title": "The Show"},
        {"url": atom, "title": "An Atom Show"},
        {"url": page, "title": page},  # not a feed: no title learned, the URL as before
    ]
    opml = await (await client.get("/subscriptions/alice.opml", headers=basic())).text()
    assert 'text="The Show"' in opml
    failing = await service.failing()
    assert [(f.feed_url, f.last_error) for f in failing] == [
        (page, "the answer is not an RSS or Atom feed")
    ]


async def test_a_title_from_the_users_own_opml_import_wins(
    aiohttp_client: Any,
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    site: FeedSite,
    tmp_path: Path,
) -> None:
    config = feeds_config(make_config, fetch=True)
    opml = tmp_path / "named.opml"
    opml.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        f'<outline type="rss" text="My name for it" xmlUrl="{site.url("/show.xml")}"/>'
        "</body></opml>"
    )
    await import_opml(config, opml)
    client = await start(aiohttp_client, config)
    deadline = time.monotonic() + 20
    while site.hits["/show.xml"] == 0 or (await client.app[FEED_INFO].summary()).fetched < 1:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    listed = await (await client.get("/subscriptions/alice.json", headers=basic())).json()
    assert listed == [{"url": site.url("/show.xml"), "title": "My name for it"}]
