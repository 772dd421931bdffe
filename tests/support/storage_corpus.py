"""A golden corpus of answers, to prove that a change of storage changes no answer.

`python -m tests.support.storage_corpus make DIR` (run once, by the release whose answers are
the reference) seeds a database through the real APIs: three users, devices,
subscriptions moved by an OPA `update` (aliases), URLs rewritten (`feed://`, a
scheme or case variant), episode actions of every kind, spelled every way the apps
spell them, under several devices and app passwords, sent twice, interleaved between
users; then spreads the server's clock of each write two minutes apart (so the
Nextcloud API's `since` windows fall between writes), saves the database as SQL
(`seed.sql`) and records the answers to REQUESTS (`answers.json`).

`tests/storage/test_storage_corpus.py` loads `seed.sql` into a database of that release's
schema on each engine, lets the current code migrate it, replays the same requests
and compares every answer byte for byte. Only two things are left out of the
comparison, both the server's clock at the request: the Nextcloud API's
`timestamp` and an OPML document's `dateCreated`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from podsync import timestamps
from podsync.config import Config, load_config
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService
from podsync.web.app import create_app
from podsync.web.keys import APP_PASSWORDS, DB

PASSWORD = "correct horse battery"
APP_PASSWORD_NAME = "Kasts on the laptop"
PAGE = 7  # gpodder.episode_page_size of the corpus: many pages from a small history
BASE_S = 1_700_000_000  # the server clock of the first write, once spread
STEP_S = 120  # between two writes, once spread
NC = "/index.php/apps/gpoddersync"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "storage_corpus"


def corpus_config(directory: Path, database_url: str = "") -> Config:
    url = f'url = "{database_url}"\n' if database_url else ""
    path = directory / "podsync.toml"
    path.write_text(
        f'[database]\npath = "{directory / "podsync.db"}"\n{url}'
        f"[gpodder]\nepisode_page_size = {PAGE}\n"
        "[feeds]\nfetch_metadata = false\n"
    )
    return load_config(path, environ={})


def basic(name: str, password: str = PASSWORD) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode()).decode("ascii")
    return {"Authorization": f"Basic {token}"}


# --- the seeding (run by the reference release) ---------------------------------

FEEDS = [f"https://feeds.example.org/show{i}/rss.xml" for i in range(10)]


def _episode(
    n: int, feed: int, action: str, when: str | int | None, device: str | None, **more: Any
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "podcast": FEEDS[feed],
        "episode": f"https://media.example.org/show{feed}/ep{n}.mp3",
        "action": action,
    }
    if when is not None:
        item["timestamp"] = when
    if device is not None:
        item["device"] = device
    item.update(more)
    return item


def history_items(user: str, start: int, count: int) -> list[dict[str, Any]]:
    """`count` actions of many shapes: plays with and without positions, downloads,
    deletes, new, flattr, guids or none, devices or none, times in every spelling."""
    items = []
    devices = ["phone", "laptop", None, "tablet.old-1"]
    actions = ["play", "download", "play", "delete", "new", "PLAY", "flattr", "Download"]
    times: list[Any] = [
        "2026-03-01T10:00:{:02d}",
        "2026-03-01T10:00:{:02d}Z",
        "2026-03-01T12:00:{:02d}+02:00",
        "2026-03-01T10:00:{:02d}.123456",
    ]
    for i in range(start, start + count):
        feed = (i * 7) % 6 + (0 if user == "alice" else 4)
        spelling = times[i % len(times)]
        when: Any = spelling.format(i % 60) if i % 9 else 1_772_359_200 + i
        if i % 13 == 0:
            when = None  # no time: the server's receipt time
        extra: dict[str, Any] = {}
        if i % 3:
            extra["guid"] = f"{user}-guid-{i // 2}"
        action = actions[i % len(actions)]
        if action.lower() == "play":
            if i % 5:
                extra.update(started=i % 4, position=30 * i, total=3600 + i)
            elif i % 10 == 0:
                extra.update(position=-1, started=-1, total=-1)  # AntennaPod at times
        item = _episode(i // 2, feed, action, when, devices[i % len(devices)], **extra)
        if i % 11 == 0:
            item["podcast"] = item["podcast"].replace("https://", "http://")  # a variant
        if i % 17 == 0:
            item["episode"] = item["episode"].replace("https://", "feed://")  # rewritten
        if i % 19 == 0:
            item["guid"] = 'unicode \u00e9\u4e2d "quoted" \\ back'
        items.append(item)
    return items


async def _ok(response: Any) -> Any:
    text = await response.text()
    assert response.status == 200, (response.status, text)
    return json.loads(text) if text else None


async def seed(client: TestClient[Any, Any], config: Config) -> dict[str, str]:
    """Fill a fresh database through the APIs; returns the secrets the replay needs."""
    app = client.server.app
    assert app is not None
    passwords = PasswordService.for_config(config.auth)
    try:
        service = AccountService(app[DB], passwords)
        users = {name: await service.add_user(name, PASSWORD) for name in ("alice", "bob", "carol")}
    finally:
        passwords.close()
    _, secret = await app[APP_PASSWORDS].create(users["alice"], APP_PASSWORD_NAME)

    async def gp_post(user: str, path: str, body: Any) -> Any:
        return await _ok(await client.post(path, json=body, headers=basic(user)))

    for device, caption, kind in (("phone", "Phone", "mobile"), ("laptop", "Laptop", "laptop")):
        await gp_post(
            "alice", f"/api/2/devices/alice/{device}.json", {"caption": caption, "type": kind}
        )
    await gp_post("bob", "/api/2/devices/bob/desk.json", {"caption": "Desk", "type": "desktop"})
    # Subscriptions: a gpodder push with a rewrite and two spellings of one feed.
    await gp_post(
        "alice",
        "/api/2/subscriptions/alice/phone.json",
        {
            "add": [
                *FEEDS[:6],
                "feed://feeds.example.org/extra/rss.xml",
                "HTTPS://Feeds.Example.org/show1/rss.xml/",
            ],
            "remove": [],
        },
    )
    await gp_post("bob", "/api/2/subscriptions/bob/desk.json", {"add": FEEDS[3:9], "remove": []})
    token = (
        await _ok(
            await client.post("/auth/login", json={"username": "alice", "password": PASSWORD})
        )
    )["access_token"]
    bearer = {
        "Authorization": f"Bearer {token}",
        "Client-ID": "0b7e1c9a-3f1d-4d55-8d8e-1e0f4b9f2a11",
    }
    listed = await _ok(await client.get("/api/v1/subscriptions?limit=50", headers=bearer))
    by_url = {entity["feed_url"]: entity["sync_id"] for entity in listed["results"]}
    soon = [timestamps.format(timestamps.now_us() + n * 1_000_000) for n in (1, 2, 3)]
    opa = [
        {"type": "subscription", "action": "update", "occurred_at": soon[0],
         "data": {"sync_id": by_url[FEEDS[2]], "feed_url": "https://moved.example.org/show2.xml"}},
        {"type": "subscription", "action": "unsubscribe", "occurred_at": soon[1],
         "data": {"sync_id": by_url[FEEDS[4]]}},
        {"type": "subscription", "action": "subscribe", "occurred_at": soon[2],
         "data": {"feed_url": "https://opa.example.org/only.xml", "guid": "opa-guid"}},
    ]  # fmt: skip
    for n, request in enumerate(opa):
        request["action_id"] = f"00000000-0000-4000-8000-{n:012d}"
    results = (
        await _ok(await client.post("/api/v1/sync", json={"requests": opa}, headers=bearer))
    )["results"]
    assert [r["status"] for r in results] == ["applied"] * 3, results
    # Episode actions, alice and bob in turns (their seqs interleave), one batch twice.
    alice_items = history_items("alice", 0, 120)
    bob_items = history_items("bob", 1000, 40)
    for k in range(0, 120, 30):
        await gp_post("alice", "/api/2/episodes/alice.json", alice_items[k : k + 30])
        await gp_post("bob", "/api/2/episodes/bob.json", bob_items[k // 3 : k // 3 + 10])
    await gp_post("alice", "/api/2/episodes/alice.json", alice_items[30:60])  # sent again
    await gp_post(
        "alice", "/api/2/episodes/alice.json", [{"podcast": "not a url"}, 7, alice_items[0]]
    )
    # The Nextcloud API: an app password's own device, and the account password's.
    nc_items = history_items("alice", 200, 20)
    for item in nc_items:
        item.pop("device", None)
    await _ok(
        await client.post(
            f"{NC}/episode_action/create", json=nc_items[:10], headers=basic("alice", secret)
        )
    )
    await _ok(
        await client.post(f"{NC}/episode_action/create", json=nc_items[10:], headers=basic("alice"))
    )
    change = {"add": [FEEDS[9]], "remove": [FEEDS[0]]}
    await _ok(
        await client.post(
            f"{NC}/subscription_change/create", json=change, headers=basic("alice", secret)
        )
    )
    await gp_post(
        "alice", "/api/2/subscriptions/alice/laptop.json", {"add": [], "remove": [FEEDS[1]]}
    )
    return {"app_password": secret}


def spread_server_clock(path: Path) -> None:
    """Move each write's server clock (episode actions' `received_at`, entities'
    `changed_at`) to BASE_S + k * STEP_S, k counting the writes in order, so that the
    Nextcloud API's `since` falls between writes by whole minutes."""
    con = sqlite3.connect(path)
    with con:
        for table, column, order in (
            ("episode_actions", "received_at", "seq"),
            ("subscriptions", "changed_at", "change_seq"),
        ):
            moments = [
                r[0]
                for r in con.execute(
                    f"SELECT {column} FROM {table} GROUP BY {column} ORDER BY min({order})"  # noqa: S608
                )
            ]
            for k, moment in enumerate(moments):
                con.execute(
                    f"UPDATE {table} SET {column} = ? WHERE {column} = ?",  # noqa: S608
                    ((BASE_S + k * STEP_S) * 1_000_000 + 1, moment),
                )
    con.close()


# --- the requests and their replay -----------------------------------------------

Request = tuple[str, str, str, Any]  # (method, path, who: "alice", "bob", "app", body)


def _since_values(high: int) -> list[int]:
    return sorted(
        {0, 1, 2, 3, *range(5, 2 * high + 6, 7), 2 * high - 1, 2 * high + 1, 2 * high + 3}
    )


def read_requests() -> list[Request]:
    """Reads of every kind over the seeded database (the episode pages are followed
    by the replay itself, from each answer's timestamp)."""
    requests: list[Request] = [
        ("GET", "/api/2/devices/alice.json", "alice", None),
        ("GET", "/api/2/devices/bob.json", "bob", None),
        ("GET", "/api/2/sync-devices/alice.json", "alice", None),
    ]
    for fmt in ("json", "opml", "txt"):
        requests.append(("GET", f"/subscriptions/alice.{fmt}", "alice", None))
        requests.append(("GET", f"/subscriptions/bob/desk.{fmt}", "bob", None))
    for since in _since_values(40):
        requests.append(
            ("GET", f"/api/2/subscriptions/alice/phone.json?since={since}", "alice", None)
        )
    requests.append(("GET", "/api/2/subscriptions/bob/desk.json?since=0", "bob", None))
    requests.append(("GET", "/api/2/subscriptions/alice/phone.json?since=x1", "alice", None))
    episodes = "/api/2/episodes/alice.json"
    for query in (
        "since=0",
        "",
        "since=0&aggregated=true",
        "since=0&device=phone",
        "since=0&device=laptop&aggregated=1",
        "since=0&device=nobody",
        "since=0&device=bad%00id",
        f"since=0&podcast={FEEDS[1]}",
        f"since=0&podcast={FEEDS[1].replace('https', 'http')}",
        "since=0&podcast=HTTPS://FEEDS.example.org/show2/rss.xml/&aggregated=yes",
        "since=0&podcast=not-a-url",
        "since=99999999",
        "since=-3",
    ):
        requests.append(("FOLLOW", f"{episodes}?{query}", "alice", None))
    for since in _since_values(200):
        requests.append(("GET", f"{episodes}?since={since}", "alice", None))
        requests.append(("GET", f"{episodes}?since={since}&aggregated=true", "alice", None))
    requests.append(("FOLLOW", "/api/2/episodes/bob.json?since=0", "bob", None))
    requests.append(("GET", "/api/2/episodes/carol.json?since=0", "carol", None))
    for who in ("alice", "app", "bob"):
        requests.append(("GET", f"{NC}/episode_action", who, None))
        requests.append(("GET", f"{NC}/subscriptions?since=0", who, None))
        for k in range(0, 24):
            for offset in (0, 30, 61, 119):
                since = BASE_S + k * STEP_S + offset
                requests.append(("GET", f"{NC}/episode_action?since={since}", who, None))
        for k in range(0, 16, 3):
            requests.append(
                ("GET", f"{NC}/subscriptions?since={BASE_S + k * STEP_S + 61}", who, None)
            )
    for query in ("limit=5", "limit=3&include_unsubscribed=true"):
        requests.append(("OPA-FOLLOW", f"/api/v1/subscriptions?{query}", "alice", None))
    for query in (
        "limit=4",
        "limit=4&include_own=true",
        "limit=100&include=subscriptions",
        "since=2023-11-14T22:17:00Z&limit=3",
        "since=2023-11-14T22:29:00Z",
    ):
        requests.append(("OPA-FOLLOW", f"/api/v1/sync?{query}", "alice", None))
        requests.append(("OPA-FOLLOW", f"/api/v1/sync?{query}", "bob", None))
    return requests


def _timed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items that all carry a time (none stamped with the server's clock)."""
    for n, item in enumerate(items):
        item.setdefault("timestamp", f"2026-04-0{1 + n % 9}T08:00:00")
    return items


def write_requests() -> list[Request]:
    """alice alone writes after the reads (so her numbers follow the same sequence
    whether numbering is per user or per database), then everything is read again."""
    first = history_items("alice", 300, 12) + history_items("alice", 40, 3)
    change = {
        "add": ["https://new.example.org/a.xml", "feed://new.example.org/b.xml", FEEDS[0]],
        "remove": [FEEDS[3]],
    }
    writes: list[Request] = [
        ("POST", "/api/2/episodes/alice.json", "alice", _timed(first)),
        ("POST", "/api/2/subscriptions/alice/phone.json", "alice", change),
        ("POST", f"{NC}/episode_action/create", "app", _timed(history_items("alice", 400, 5))),
        ("POST", "/api/2/episodes/alice.json", "alice", _timed(history_items("alice", 500, 4))),
    ]
    again: list[Request] = []
    for since in (0, 401, 403, 405):
        again.append(("FOLLOW", f"/api/2/episodes/alice.json?since={since}", "alice", None))
        again.append(
            ("FOLLOW", f"/api/2/episodes/alice.json?since={since}&aggregated=true", "alice", None)
        )
    for since in _since_values(45):
        again.append(("GET", f"/api/2/subscriptions/alice/phone.json?since={since}", "alice", None))
        again.append(("GET", f"/api/2/subscriptions/bob/desk.json?since={since}", "bob", None))
    again.append(("FOLLOW", "/api/2/episodes/bob.json?since=0", "bob", None))
    again.append(("GET", f"{NC}/episode_action", "alice", None))
    again.append(("GET", f"{NC}/episode_action?since={BASE_S + 20 * STEP_S}", "bob", None))
    return [*writes, *again]


_NC_TIMESTAMP = re.compile(rb'"timestamp":\d+\}$')
_OPML_CREATED = re.compile(rb"<dateCreated>[^<]*</dateCreated>")


def _normalised(path: str, body: bytes) -> bytes:
    """The server's clock at the request: the Nextcloud API's `timestamp` and an OPML
    document's creation time."""
    if path.startswith(NC):
        return _NC_TIMESTAMP.sub(b'"timestamp":"NOW"}', body)
    return _OPML_CREATED.sub(b"<dateCreated>NOW</dateCreated>", body)


Recorded = list[dict[str, Any]]


async def replay(client: TestClient[Any, Any], requests: list[Request], secret: str) -> Recorded:
    """Send each request (following pages where asked) and record what came back."""
    tokens: dict[str, str] = {}
    out: Recorded = []

    async def headers(who: str, opa: bool) -> dict[str, str]:
        if not opa:
            return basic("alice", secret) if who == "app" else basic(who)
        if who not in tokens:
            answer = await client.post("/auth/login", json={"username": who, "password": PASSWORD})
            tokens[who] = (await answer.json())["access_token"]
        return {
            "Authorization": f"Bearer {tokens[who]}",
            "Client-ID": "0b7e1c9a-3f1d-4d55-8d8e-1e0f4b9f2a11",
        }

    async def send(method: str, path: str, who: str, body: Any, opa: bool = False) -> bytes:
        kwargs: dict[str, Any] = {"headers": await headers(who, opa)}
        if body is not None:
            kwargs["json"] = body
        response = await client.request(method, path, **kwargs)
        raw = await response.read()
        out.append({"request": [method, path, who], "status": response.status,
                    "body": _normalised(path, raw).decode("ascii")})  # fmt: skip
        return raw

    for method, path, who, body in requests:
        if method == "FOLLOW":  # gpodder episode pages: from each answer's timestamp on
            seen: set[int] = set()
            current = path
            for _ in range(200):
                raw = await send("GET", current, who, None)
                try:
                    answer = json.loads(raw)
                except ValueError:
                    break
                if (
                    not isinstance(answer, dict)
                    or not answer.get("actions")
                    or answer["timestamp"] in seen
                ):
                    break
                seen.add(answer["timestamp"])
                current = re.sub(r"since=[^&]*", f"since={answer['timestamp']}", current)
                if "since=" not in current:
                    current += ("&" if "?" in current else "?") + f"since={answer['timestamp']}"
        elif method == "OPA-FOLLOW":  # cursor pages of the Open Podcast API
            current = path
            for _ in range(50):
                answer = json.loads(await send("GET", current, who, None, opa=True))
                following = answer.get("next_cursor") or (
                    answer.get("next_since") if answer.get("has_next") else None
                )
                if not following:
                    break
                current = following  # a URL of this server: path and query
        else:
            await send(method, path, who, body)
    return out


async def _with_client(
    config: Config, work: Callable[[TestClient[Any, Any]], Awaitable[Any]]
) -> Any:
    client: TestClient[Any, Any] = TestClient(TestServer(create_app(config)))
    await client.start_server()
    try:
        return await work(client)
    finally:
        await client.close()


def make(directory: Path) -> None:
    """Seed, spread the clock, dump `seed.sql`, record `answers.json` (reads, then
    alice's writes and the reads after them) on a copy of the dumped database."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        config = corpus_config(Path(work))
        secrets = asyncio.run(_with_client(config, lambda c: seed(c, config)))
        db = Path(config.database.path)
        spread_server_clock(db)
        con = sqlite3.connect(db)
        version = con.execute("PRAGMA user_version").fetchone()[0]
        dump = "\n".join(con.iterdump())
        con.close()
        (directory / "seed.sql").write_text(f"-- schema version {version}\n{dump}\n")
    with tempfile.TemporaryDirectory() as work:
        config = corpus_config(Path(work))
        load_sql(directory / "seed.sql", Path(config.database.path))
        requests = [*read_requests(), *write_requests()]
        answers = asyncio.run(
            _with_client(config, lambda c: replay(c, requests, secrets["app_password"]))
        )
    meta = {"schema_version": version, "app_password": secrets["app_password"], "page": PAGE}
    save_answers(directory / "answers.json", meta, answers)


def save_answers(path: Path, meta: dict[str, Any], answers: Recorded) -> None:
    """One line per answer; each distinct body once, named by its index (many `since`
    values give the same answer)."""
    bodies: dict[str, int] = {}
    lines = []
    for answer in answers:
        index = bodies.setdefault(answer["body"], len(bodies))
        lines.append(json.dumps([*answer["request"], answer["status"], index]))
    document = {"meta": meta, "bodies": list(bodies)}
    text = json.dumps(document, indent=0)
    path.write_text(text[:-2] + ',\n"answers": [\n' + ",\n".join(lines) + "\n]}\n")


def load_answers(path: Path) -> tuple[dict[str, Any], Recorded]:
    document = json.loads(path.read_text())
    bodies = document["bodies"]
    answers = [
        {"request": [method, target, who], "status": status, "body": bodies[index]}
        for method, target, who, status, index in document["answers"]
    ]
    return document["meta"], answers


def load_sql(sql: Path, target: Path) -> int:
    """Create `target` from a dump made by `make`; returns its schema version."""
    text = sql.read_text()
    version = int(text.splitlines()[0].removeprefix("-- schema version "))
    target.touch(mode=0o600)
    con = sqlite3.connect(target)
    con.executescript(text)
    con.execute(f"PRAGMA user_version = {version}")
    con.execute("PRAGMA journal_mode = WAL")
    con.close()
    return version


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "make":
        sys.exit("usage: python -m tests.support.storage_corpus make DIR")
    make(Path(sys.argv[2]))
