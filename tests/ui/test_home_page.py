"""Contract section 12 (rev. 2): GET / is a page for a person, self-contained."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import __version__
from podsync.web.app import create_app
from tests.conftest import MakeConfig, ServeProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


class _Links(HTMLParser):
    """Every URL the page would load or link to, and its visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.text: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "srcset", "action")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


async def _page(client: TestClient[Any, Any], **headers: str) -> tuple[str, _Links]:
    response = await client.get("/", headers=headers)
    assert response.status == 200
    assert response.content_type == "text/html"
    assert response.charset == "utf-8"
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    html = await response.text()
    parser = _Links()
    parser.feed(html)
    return html, parser


async def test_the_page_names_the_server_and_its_address_and_loads_nothing_else(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    client = await aiohttp_client(create_app(make_config()))
    _, page = await _page(client)
    text = " ".join(" ".join(page.text).split())
    origin = f"http://{client.host}:{client.port}"
    assert f"podsync {__version__}" in text
    assert f"Server address to type into your app {origin}" in text
    for app in ("AntennaPod", "gPodder", "Kasts", "Open Podcast API"):
        assert app in text
    assert f"{origin}/api/v1/openapi.json" in text
    # Nothing from another host: no script, no external style sheet, no image;
    # links are relative.
    assert not page.tags & {"script", "link", "img", "iframe", "object", "embed"}
    assert page.urls and all(url.startswith("/") for url in page.urls)
    for url in page.urls:  # and every link works
        assert (await client.get(url)).status == 200


async def test_the_address_comes_from_public_url_when_set(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = make_config(server={"public_url": "https://pods.example.org/"})
    client = await aiohttp_client(create_app(config))
    html, _ = await _page(client, Host="evil.example")
    assert "https://pods.example.org</output>" in html
    assert "evil.example" not in html
    assert "lives under a path" not in html


async def test_a_public_url_with_a_path_warns_about_antennapod(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = make_config(server={"public_url": "https://example.org/pods"})
    client = await aiohttp_client(create_app(config))
    html, _ = await _page(client)
    assert "https://example.org/pods</output>" in html
    assert "https://example.org/pods/api/v1/openapi.json" in html
    assert "lives under a path" in html


async def test_forwarded_headers_count_only_from_a_trusted_proxy(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "pods.example.org"}
    untrusted = await aiohttp_client(create_app(make_config()))
    html, _ = await _page(untrusted, **forwarded)
    assert "pods.example.org" not in html
    assert f"http://{untrusted.host}:{untrusted.port}</output>" in html

    trusted_config = make_config(server={"trusted_proxies": ["127.0.0.1", "::1"]})
    trusted = await aiohttp_client(create_app(trusted_config))
    html, _ = await _page(trusted, **forwarded)
    assert "https://pods.example.org</output>" in html


async def test_everything_from_the_request_is_escaped(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = make_config(server={"trusted_proxies": ["127.0.0.1", "::1"]})
    client = await aiohttp_client(create_app(config))
    html, page = await _page(client, **{"X-Forwarded-Host": '"><script>alert(1)</script>'})
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "script" not in page.tags


async def test_the_page_says_when_the_gpodder_layer_is_off(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    client = await aiohttp_client(create_app(make_config(gpodder={"enabled": False})))
    html, _ = await _page(client)
    assert "switched off on this server" in html
    assert "Settings &rsaquo; Synchronization" not in html


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def test_a_real_browser_renders_the_page_of_a_real_server(
    make_config: MakeConfig, serve_process: Callable[..., ServeProcess], tmp_path: Path
) -> None:
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    server = serve_process(make_config())
    dom = _chromium("--dump-dom", server.url + "/")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f"<output>{server.url}</output>" in dom.stdout
    assert f'podsync <span class="version">{__version__}</span>' in dom.stdout
    # A phone-sized and a desktop-sized window; the screenshots are kept beside the
    # test's files for a person to look at.
    for name, size in (("phone", (390, 844)), ("desktop", (1280, 900))):
        shot = tmp_path / f"home-{name}.png"
        result = _chromium(
            f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}", server.url + "/"
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert _png_size(shot) == size
        assert shot.stat().st_size > 10_000  # rendered, not a blank image
    assert server.stop() == 0
    assert '"GET /" 200' in server.output()


async def test_the_page_says_what_to_type_for_both_families(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = make_config(server={"public_url": "https://pods.example.org/podsync"})
    client = await aiohttp_client(create_app(config))
    html, _ = await _page(client)
    gpodder, _, nextcloud = html.partition("GPodder Sync&rdquo; apps</h3>")
    assert "<b>gpodder.net</b>" in gpodder and nextcloud
    assert "<b>Nextcloud</b>" in nextcloud and "Grant access" in nextcloud
    assert "<b>GPodder Nextcloud</b>" in nextcloud and "app password" in nextcloud
    assert nextcloud.count("<code>https://pods.example.org/podsync</code>") >= 3
