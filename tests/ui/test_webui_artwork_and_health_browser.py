"""The web UI's third release (points 5, 6, 8, 9) in a real headless Chromium against a
real `podsync serve`, feeds and artwork served on 127.0.0.1 (`allow_private`), data
pushed through the apps' APIs (gPodder's own library, Basic calls as phones make):

- artwork from podsync's own address: an `http://` image and one on a host that
  refuses other sites' pages (hot-link protection) both show; drawing the list
  makes the browser ask no other host; an image that fails is the letter tile;
- sync health: a refused sync on its device, the lockout and Unlock on the Overview;
- a time zone chosen on the Account page, times as "today 19:49";
- the review's defects: A-Z, the phone tables, a feed not reached said at once, the
  history's plays, the grant's Cancel, /favicon.ico, the new app password on top;

and axe-core on every page changed, at 390 and 1280 px, light and dark, with
screenshots kept (build/screenshots/r3-*)."""

from __future__ import annotations

import base64
import re
import sqlite3
import struct
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from mygpoclient import api

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.feed_site import ThreadedFeedHost, rss
from tests.support.gpodder_support import call
from tests.support.ui_browser import (
    DESKTOP,
    PHONE,
    SCREENSHOTS,
    WHOLE_PAGE_LOADS,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)
from tests.ui.test_webui_browser import heading, run_cli, sign_in

pytestmark = pytest.mark.slow

RSS = "application/rss+xml"


def png(size: int, rgb: tuple[int, int, int]) -> bytes:
    row = b"\x00" + bytes(rgb) * size

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    idat = zlib.compress(row * size)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def screenshot_of(element: Any, name: str) -> list[list[tuple[int, ...]]]:
    """An element's screenshot (kept as an artifact), as rows of RGB(A) pixels."""
    path = SCREENSHOTS / f"{name}.png"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    element.screenshot(path=str(path))
    return png_pixels(path.read_bytes())


def png_pixels(data: bytes) -> list[list[tuple[int, ...]]]:
    """The pixels of an 8-bit RGB or RGBA PNG without interlacing (what Chromium's
    screenshots are), each row undone from its filter (PNG spec, section 9)."""
    width, height, _depth, colour = struct.unpack(">IIBB", data[16:26])
    size = {2: 3, 6: 4}[colour]
    pos, packed = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == b"IDAT":
            packed += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw, stride = zlib.decompress(packed), width * size
    rows, before = [], bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for x in range(stride):
            a = line[x - size] if x >= size else 0
            b, c = before[x], before[x - size] if x >= size else 0
            guess = {0: 0, 1: a, 2: b, 3: (a + b) // 2}.get(kind)
            if guess is None:  # Paeth
                p = a + b - c
                guess = min((abs(p - a), 0, a), (abs(p - b), 1, b), (abs(p - c), 2, c))[2]
            line[x] = (line[x] + guess) & 0xFF
        rows.append([tuple(line[x : x + size]) for x in range(0, stride, size)])
        before = line
    return rows


BLUE, ORANGE, GREEN = png(300, (42, 85, 201)), png(300, (230, 120, 20)), png(200, (30, 140, 60))


@pytest.fixture
def hosts() -> Iterator[tuple[ThreadedFeedHost, ThreadedFeedHost]]:
    """A plain host (http:// artwork) and one with hot-link protection."""
    plain = ThreadedFeedHost({"/cover.png": (200, "image/png", BLUE)})
    guarded = ThreadedFeedHost(
        {"/art.png": (200, "image/png", ORANGE)}, refuse_foreign_referer=True
    )
    plain.answers.update(
        {
            "/show.xml": (200, RSS, rss("The Show", 3, artwork=plain.url("/cover.png"))),
            "/apple.xml": (200, RSS, rss("an Apple a Day", 3, artwork=None)),
            "/mystery.xml": (
                200,
                RSS,
                rss("Mystery Hour", 2, artwork=plain.url("/mystery.png")),
            ),
            "/mystery.png": (200, "image/png", GREEN),
            "/mango.xml": (200, RSS, rss("Mango Talk", 2, artwork=plain.url("/nothing.png"))),
            "/listen.xml": (200, RSS, rss("Listen Later", 6, artwork=None, prefix="Part")),
        }
    )
    guarded.answers["/hot.xml"] = (
        200,
        RSS,
        rss("Über Hotlinks", 2, artwork=guarded.url("/art.png")),
    )
    yield plain, guarded
    plain.close()
    guarded.close()


@pytest.fixture
def served(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> Iterator[tuple[str, Config]]:
    config = make_config(feeds={"allow_private": True})  # fetch_metadata at its default
    result = run_cli(config, "user", "admin", "alice")
    assert result.exit_code == 0, result.output
    yield serve_process(config).url, config


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:  # noqa: F811
    ctx = browser.new_context(viewport=DESKTOP)
    try:
        yield ctx.new_page()
    finally:
        ctx.close()


def subscribe(page: Any, address: str) -> None:
    page.get_by_label("Feed URL").fill(address)
    page.get_by_role("button", name="Subscribe", exact=True).click()


def subscribe_all(
    page: Any, server: str, plain: ThreadedFeedHost, guarded: ThreadedFeedHost
) -> None:
    page.goto(server + "/ui/subscriptions")
    for url in (
        plain.url("/show.xml"),
        guarded.url("/hot.xml"),
        plain.url("/apple.xml"),
        plain.url("/mystery.xml"),
        plain.url("/mango.xml"),
    ):
        subscribe(page, url)
        assert page.get_by_role("status").inner_text().startswith("Subscribed."), url


def basic(name: str, password: str, agent: str) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}", "User-Agent": agent}


def test_artwork_from_podsync_letter_tiles_and_a_to_z(
    served: tuple[str, Config],
    hosts: tuple[ThreadedFeedHost, ThreadedFeedHost],
    page: Any,
) -> None:
    server, config = served
    plain, guarded = hosts
    sign_in(page, server)
    subscribe_all(page, server, plain, guarded)
    # The hot-link protection is real: a page of podsync asking for the image is refused.
    refused = call(guarded.url("/"), "GET", "/art.png", Referer=server + "/ui/subscriptions")
    assert refused.status == 403
    # One of the kept images goes missing under a page (as if deleted meanwhile); a
    # browser that has not kept it (this one has: a year, the address never changes).
    with sqlite3.connect(config.database.path) as db:
        db.execute("DELETE FROM artwork WHERE size = ?", (len(GREEN),))
    context = page.context.browser.new_context(viewport=DESKTOP)
    context.add_init_script(WHOLE_PAGE_LOADS)  # as the `browser` fixture's contexts
    page = context.new_page()
    sign_in(page, server)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(server + "/ui/subscriptions")
    page.wait_for_load_state("networkidle")
    # A-Z as people read: "an Apple a Day" under A, "The Show" under S, "Über" under U.
    titles = page.locator(".sub .title").all_inner_texts()
    assert titles == ["an Apple a Day", "Mango Talk", "Mystery Hour", "The Show", "Über Hotlinks"]
    # Every request the page made went to podsync.
    assert asked and all(url.startswith(server) for url in asked), asked
    drawn = page.evaluate(
        "() => [...document.querySelectorAll('.sub')].map(row => {"
        " const img = row.querySelector('.art img');"
        " return [row.querySelector('.title').textContent,"
        "  img ? img.getAttribute('src') : null, img ? img.naturalWidth : 0]; })"
    )
    by_title = {title: (src, width) for title, src, width in drawn}
    for title in ("The Show", "Über Hotlinks"):  # http:// and hot-link protected
        src, width = by_title[title]
        assert src.startswith("/ui/artwork/") and width == 300, (title, src, width)
    assert by_title["Mango Talk"] == (None, 0)  # its image was never had: the tile
    assert by_title["Mystery Hour"][0] is not None and by_title["Mystery Hour"][1] == 0
    # Each host was asked once per image, by podsync (no browser, no Referer).
    for host, path in ((plain, "/cover.png"), (guarded, "/art.png")):
        fetched = [h for p, h in host.requests if p == path and "Referer" not in h]
        assert len(fetched) == 1 and fetched[0]["User-Agent"].startswith("podsync/"), path
    # The image that went missing draws as a letter tile, as one that never had an
    # image does: where a browser draws its broken-image icon (the top left corner),
    # the two are the same pixels (only the letter's edges and the rounded corners,
    # drawn on another layer, may differ by their anti-aliasing).
    missing = page.locator(".sub", has_text="Mystery Hour").locator(".art")
    tile = page.locator(".sub", has_text="Mango Talk").locator(".art")
    assert missing.inner_text() == tile.inner_text() == "M"
    shot = screenshot_of(missing, "r3-tile-image-gone")
    plain_tile = screenshot_of(tile, "r3-tile-never-an-image")
    corner = [(y, x) for y in range(2, 17) for x in range(2, 17) if y + x >= 8]
    assert [shot[y][x] for y, x in corner] == [plain_tile[y][x] for y, x in corner]
    screenshot(page, "r3-subscriptions-artwork-1280")
    page.get_by_role("link", name="The Show").click()
    assert heading(page) == "The Show"
    big = page.locator(".podcast .art img")
    assert big.evaluate("img => img.naturalWidth") == 300
    screenshot(page, "r3-podcast-artwork-1280")


def test_a_feed_not_reached_is_said_at_once(served: tuple[str, Config], page: Any) -> None:
    server, _ = served
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    subscribe(page, "http://127.0.0.1:1/feed.xml")  # nothing listens there
    said = page.get_by_role("status").inner_text()
    assert said.startswith("Subscribed, but the feed could not be reached just now"), said
    assert heading(page) == "127.0.0.1/feed.xml"
    about = page.locator(".podcast").inner_text()
    assert "the last try failed: cannot connect" in about and "Next try" in about
    screenshot(page, "r3-subscribe-unreachable-1280")


def test_sync_health_on_the_devices_page_and_the_lockout_on_the_overview(
    served: tuple[str, Config], page: Any
) -> None:
    server, _ = served
    client = api.MygPodderClient("alice", PASSWORD, server)
    assert client.update_device_settings("phone-1", "Pixel", "mobile")
    client.update_subscriptions("phone-1", ["https://feeds.example.com/a.xml"], [])
    sign_in(page, server)  # before the lockout below: it refuses this form too
    stale = basic("alice", "the old password", "AntennaPod/3.7.0")
    for _ in range(3):  # a phone still set up with an old password, retrying
        assert call(server, "GET", "/api/2/subscriptions/alice/phone-1.json", **stale).status == 401
    page.goto(server + "/ui/devices")
    pixel = page.locator(".devices li", has=page.get_by_role("heading", name="Pixel"))
    said = pixel.locator("dd.refused").inner_text()
    assert re.fullmatch(
        r"Not syncing: today \d\d:\d\d from 127\.0\.0\.1 by AntennaPod/3\.7\.0: wrong password\.",
        said,
    ), said
    assert "Subscriptions" not in pixel.inner_text()  # the account's count is said once
    assert "1 subscription" in page.locator("main").inner_text()
    screenshot(page, "r3-devices-refused-1280")
    # Four more different wrong passwords: the name is locked out from here.
    for n in range(4):
        guess = basic("alice", f"guess {n}", "curl/8.5.0")
        assert call(server, "GET", "/api/2/devices/alice.json", **guess).status == 401
    right = basic("alice", PASSWORD, "AntennaPod/3.7.0")
    assert call(server, "GET", "/api/2/subscriptions/alice/phone-1.json", **right).status == 429
    page.goto(server + "/ui/devices")
    said = pixel.locator("dd.refused").inner_text()
    assert "locked out: too many different wrong passwords" in said, said
    page.goto(server + "/ui/")
    card = page.get_by_role("region", name="Failed sign-ins")
    warned = card.locator("p.warn").inner_text()
    assert re.match(
        r"Your name is locked out from address 127\.0\.0\.1 until (today|tomorrow) \d\d:\d\d",
        warned,
    )
    assert "refused" in page.locator("#h-devices + ul").inner_text()
    screenshot(page, "r3-overview-locked-1280")
    page.get_by_role("button", name="Unlock my name").click()
    assert page.get_by_role("status").inner_text().startswith("Unlocked")
    assert call(server, "GET", "/api/2/subscriptions/alice/phone-1.json", **right).status == 200
    page.goto(server + "/ui/devices")
    assert "Not syncing" not in pixel.inner_text()


def test_a_time_zone_of_ones_own_and_the_history_in_it(
    served: tuple[str, Config], page: Any
) -> None:
    server, _ = served
    now = datetime.now(UTC).replace(microsecond=0)
    client = api.MygPodderClient("alice", PASSWORD, server)
    client.upload_episode_actions(
        [
            api.EpisodeAction("https://feeds.example.com/a.xml", "https://cdn.example.com/1.mp3",
                              "play", "phone-1", "2026-11-01T08:00:00", started=0, position=1296,
                              total=3600),
            api.EpisodeAction("https://feeds.example.com/a.xml", "https://cdn.example.com/1.mp3",
                              "play", "phone-1", now.strftime("%Y-%m-%dT%H:%M:%S"), started=0,
                              position=3600, total=3600),
        ]
    )  # fmt: skip
    sign_in(page, server)
    page.goto(server + "/ui/account")
    page.get_by_role("combobox", name="Time zone").fill("Mars/Olympus")
    page.get_by_role("button", name="Save time zone").click()
    problem = page.locator("#e-time_zone").inner_text()
    assert problem.startswith("“Mars/Olympus” is not a time zone this server knows."), problem
    assert page.get_by_role("combobox", name="Time zone").input_value() == "Mars/Olympus"
    screenshot(page, "r3-account-zone-refused-1280")
    # On a phone the problem is in view at once, and a reload posts nothing again.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(page.url)
    assert page.locator("#e-time_zone").is_visible()
    box = page.locator("#e-time_zone").bounding_box()
    assert box is not None and 0 <= box["y"] < 844, box
    posted: list[str] = []
    page.on("request", lambda request: posted.append(request.method))
    page.reload()
    assert "POST" not in posted and page.locator("#e-time_zone").count() == 1
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("combobox", name="Time zone").fill("america/new_york")
    page.get_by_role("button", name="Save time zone").click()
    assert page.get_by_role("status").inner_text().startswith("Time zone saved")
    assert page.get_by_role("combobox", name="Time zone").input_value() == "America/New_York"
    page.goto(server + "/ui/history")
    rows = page.locator(".history li").all_inner_texts()
    local = now.astimezone(ZoneInfo("America/New_York"))
    day = "today" if local.date() == datetime.now(ZoneInfo("America/New_York")).date() else ""
    assert "Finished" in rows[0] and f"{day} {local:%H:%M}".strip() in rows[0], rows[0]
    # The earlier part of the episode finished since: what it was, not "In progress".
    assert "Played to 36%" in rows[1] and "2026-11-01 03:00" in rows[1], rows[1]
    assert "Times in America/New_York" in page.locator("footer").inner_text()
    screenshot(page, "r3-history-zone-1280")


def test_phone_tables_the_new_app_password_on_top_grant_and_favicon(
    served: tuple[str, Config],
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(viewport=PHONE)
    phone = ctx.new_page()
    try:
        sign_in(phone, server)
        phone.goto(server + "/ui/account")
        phone.get_by_label("Name").fill("KastsOnTheLaptopInTheKitchen")
        phone.get_by_role("button", name="Create app password").click()
        shown = phone.locator(".secret-shown")
        assert shown.bounding_box()["y"] < PHONE["height"]  # seen without scrolling
        assert shown.bounding_box()["y"] < phone.locator("#h-password").bounding_box()["y"]
        screenshot(phone, "r3-account-new-app-password-390")
        # Used by an app: the table has a time in each of its columns.
        secret = phone.locator("code.secret").inner_text()
        used = basic("alice", secret, "Kasts/25.01")
        assert call(server, "GET", "/api/2/devices/alice.json", **used).status == 200
        phone.goto(server + "/ui/account")
        revoke = phone.get_by_role("button", name="Revoke KastsOnTheLaptopInTheKitchen")
        box = revoke.bounding_box()
        wrap = phone.locator(".table-wrap", has=revoke).bounding_box()
        assert box["x"] + box["width"] <= wrap["x"] + wrap["width"] + 0.5, (box, wrap)
        assert revoke.inner_text() == "Revoke"
        assert phone.evaluate(
            "() => { const w = document.querySelector('.app-passwords').parentElement;"
            " return w.scrollWidth <= w.clientWidth; }"
        )
        # The OPML report's skipped feeds: an address reads as one, not a column.
        long = "ftp://feeds.example.com/podcasts/a-very-long-show-name/feed.xml"
        opml = (
            '<?xml version="1.0"?><opml version="2.0"><body>'
            f'<outline type="rss" text="Broken" xmlUrl="{long}"/></body></opml>'
        ).encode()
        phone.goto(server + "/ui/transfer")
        phone.get_by_label("OPML file", exact=True).set_input_files(
            {"name": "mine.opml", "mimeType": "text/x-opml", "buffer": opml}
        )
        phone.get_by_role("button", name="Import").click()
        cell = phone.locator(".skipped td.url")
        assert cell.inner_text() == long
        width = cell.bounding_box()["width"]
        table = phone.locator(".skipped").bounding_box()["width"]
        assert width >= 0.5 * table, (width, table)
        screenshot(phone, "r3-import-skipped-390")
        # The grant page: Cancel is the quiet button beside Grant access.
        flow = call(server, "POST", "/index.php/login/v2", b"", **{"User-Agent": "AntennaPod"})
        assert flow.status == 200
        login = re.search(rb'"login":\s*"([^"]+)"', flow.body)
        assert login is not None
        phone.goto(login.group(1).decode().replace("\\/", "/"))
        assert heading(phone) == "Grant access"
        grant = phone.get_by_role("button", name="Grant access")
        cancel = phone.get_by_role("button", name="Cancel")
        background = "el => getComputedStyle(el).backgroundColor"
        assert cancel.evaluate(background) == "rgba(0, 0, 0, 0)"
        assert grant.evaluate(background) != "rgba(0, 0, 0, 0)"
        screenshot(phone, "r3-grant-390")
        icon = phone.goto(server + "/favicon.ico")
        assert icon is not None and icon.status == 200
        assert icon.headers["content-type"] == "image/vnd.microsoft.icon"
    finally:
        ctx.close()


CHANGED_PAGES = (
    ("overview", "/ui/"),
    ("subscriptions", "/ui/subscriptions"),
    ("podcast", None),
    ("devices", "/ui/devices"),
    ("account", "/ui/account"),
    ("account-zone-refused", "/ui/account"),
    ("history", "/ui/history"),
    ("transfer-report", "/ui/transfer"),
    ("grant", None),
)


def open_changed(
    page: Any, server: str, name: str, path: str | None, extra: dict[str, str]
) -> None:
    page.goto(server + (path or extra[name]))
    if name == "account-zone-refused":
        page.get_by_role("combobox", name="Time zone").fill("Nowhere/Atlantis")
        page.get_by_role("button", name="Save time zone").click()
        assert page.locator("#e-time_zone").count() == 1
    elif name == "transfer-report":
        opml = (
            b'<?xml version="1.0"?><opml version="2.0"><body>'
            b'<outline type="rss" text="Broken" xmlUrl="ftp://feeds.example.com/x/feed.xml"/>'
            b"</body></opml>"
        )
        page.get_by_label("OPML file", exact=True).set_input_files(
            {"name": "mine.opml", "mimeType": "text/x-opml", "buffer": opml}
        )
        page.get_by_role("button", name="Import").click()
        assert page.locator(".skipped").count() == 1


def test_changed_pages_at_both_sizes_light_and_dark_axe_and_screenshots(
    served: tuple[str, Config],
    hosts: tuple[ThreadedFeedHost, ThreadedFeedHost],
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    plain, guarded = hosts
    source = axe_source()
    setup = browser.new_context(viewport=DESKTOP)
    first = setup.new_page()
    sign_in(first, server)
    subscribe_all(first, server, plain, guarded)
    client = api.MygPodderClient("alice", PASSWORD, server)
    assert client.update_device_settings("phone-1", "Pixel", "mobile")
    client.update_subscriptions("phone-1", [plain.url("/listen.xml")], [])
    client.upload_episode_actions(
        [api.EpisodeAction(plain.url("/show.xml"), "https://cdn.show.example/2.mp3", "play",
                           "phone-1", "2026-11-01T08:00:00", started=0, position=600, total=3000)]
    )  # fmt: skip
    stale = basic("alice", "the old password", "AntennaPod/3.7.0")
    assert call(server, "GET", "/api/2/subscriptions/alice/phone-1.json", **stale).status == 401
    first.goto(server + "/ui/account")
    first.get_by_label("Name").fill("Kasts")
    first.get_by_role("button", name="Create app password").click()
    first.goto(server + "/ui/subscriptions")
    first.get_by_role("link", name="The Show").click()
    extra = {"podcast": first.url.removeprefix(server)}
    setup.close()
    failures: dict[str, Any] = {}
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            ctx = browser.new_context(viewport=size, color_scheme=scheme)
            page = ctx.new_page()
            sign_in(page, server)
            flow = call(server, "POST", "/index.php/login/v2", b"", **{"User-Agent": "Kasts"})
            login = re.search(rb'"login":\s*"([^"]+)"', flow.body)
            assert login is not None
            extra["grant"] = login.group(1).decode().replace("\\/", "/").removeprefix(server)
            for name, path in CHANGED_PAGES:
                open_changed(page, server, name, path, extra)
                label = f"r3-{name}-{size_name}-{scheme}"
                screenshot(page, label)
                found = check_accessibility(page, source)
                if found:
                    failures[label] = found
                width = page.evaluate("() => document.documentElement.scrollWidth")
                assert width <= size["width"], (label, width)
            ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]
