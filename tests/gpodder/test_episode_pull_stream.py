"""A long history is written as it is read, on both engines and both APIs: a full
pull goes out chunked, a piece at a time, holding no more than a piece in memory
however long the answer; a page that fits one piece is answered at once as before;
a fault after the answer has started cuts it off (the client sees a broken answer,
never a complete wrong one) and the next request is served."""

from __future__ import annotations

import json
import logging
import tracemalloc
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from podsync.errors import Unavailable
from podsync.services.episodes import pieces as pulls
from podsync.store import episode_actions
from tests.support.gpodder_support import GpWith, basic

pytestmark = pytest.mark.both_engines

PIECE = 100  # actions per piece in these tests (the server's is larger)
NC = "/index.php/apps/gpoddersync"


def history(start: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://feeds.example.org/{n % 7}.xml",
            "episode": f"https://media.example.org/{n % 7}/{n}.mp3",
            "guid": f"g-{n}",
            "action": "play",
            "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}",
            "started": 0,
            "position": n,
            "total": 3600,
            "device": "phone",
        }
        for n in range(start, start + count)
    ]


async def filled(gp_with: GpWith, count: int, page: int) -> TestClient[Any, Any]:
    gp = await gp_with(gpodder={"episode_page_size": page})
    for start in range(0, count, 500):
        sent = await gp.post(
            "/api/2/episodes/alice.json",
            json=history(start, min(500, count - start)),
            headers=basic(),
        )
        assert sent.status == 200, await sent.text()
    return gp


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulls, "PIECE", PIECE)


async def test_a_full_pull_goes_out_a_piece_at_a_time_on_both_apis(gp_with: GpWith) -> None:
    gp = await filled(gp_with, 1_050, page=5_000)
    for path in ("/api/2/episodes/alice.json?since=0", f"{NC}/episode_action?since=0"):
        response = await gp.get(path, headers=basic())
        assert response.status == 200
        assert "Content-Length" not in response.headers, path
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert response.headers["Cache-Control"] == "no-store"
        body = await response.read()
        answer = json.loads(body)
        assert [a["position"] for a in answer["actions"]] == list(range(1_050)), path
        assert body == json.dumps(answer, separators=(",", ":")).encode("ascii")
    # The gpodder cursor at the end: the head, so a poll with it finds nothing new.
    head = json.loads(await (await gp.get("/api/2/episodes/alice.json", headers=basic())).read())
    polled = await gp.get(f"/api/2/episodes/alice.json?since={head['timestamp']}", headers=basic())
    assert (await polled.json())["actions"] == []


async def test_a_page_of_several_pieces_ends_at_its_last_action(gp_with: GpWith) -> None:
    gp = await filled(gp_with, 450, page=250)  # a page of two and a half pieces
    seen: list[int] = []
    since = 0
    while True:
        response = await gp.get(f"/api/2/episodes/alice.json?since={since}", headers=basic())
        answer = await response.json()
        if not answer["actions"]:
            break
        seen += [a["position"] for a in answer["actions"]]
        assert len(answer["actions"]) in (250, 200)
        since = answer["timestamp"]
    assert seen == list(range(450))
    # A page within one piece is answered at once, with its length.
    one_podcast = "/api/2/episodes/alice.json?since=0&podcast=https://feeds.example.org/3.xml"
    small = await gp.get(one_podcast, headers=basic())
    assert small.headers["Content-Length"] == str(len(await small.read()))


async def _peak(gp: TestClient[Any, Any], path: str) -> tuple[int, int]:
    """(the answer's size, the peak of Python's allocations while it went out)."""
    tracemalloc.start()
    try:
        size = 0
        response = await gp.get(path, headers=basic())
        async for chunk in response.content.iter_chunked(16_384):
            size += len(chunk)
        return size, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_memory_stays_a_few_pieces_however_long_the_answer(gp_with: GpWith) -> None:
    """Python's allocations while a full pull goes out do not grow with the history
    (the release before held every action's view, then the joined body: twice the
    answer; a history four times as long took four times as much)."""
    gp = await filled(gp_with, 2_000, page=10_000)  # 20 pieces: past the buffers' growth
    paths = ("/api/2/episodes/alice.json?since=0", f"{NC}/episode_action?since=0")
    before = [await _peak(gp, path) for path in paths]
    for start in range(2_000, 8_000, 500):
        sent = await gp.post(
            "/api/2/episodes/alice.json", json=history(start, 500), headers=basic()
        )
        assert sent.status == 200
    for path, (size, peak) in zip(paths, before, strict=True):
        longer, longer_peak = await _peak(gp, path)
        assert longer > 3.9 * size, path
        # The release before: up 2 bytes per byte of answer added. Here: buffers.
        assert longer_peak - peak < 0.5 * (longer - size), (path, peak, longer_peak, size, longer)


async def test_a_fault_once_the_answer_has_started_cuts_it_off(
    gp_with: GpWith, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gp = await filled(gp_with, 350, page=5_000)
    read = episode_actions.received_page
    calls = 0

    async def failing(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the first piece is read before the answer starts
            raise Unavailable("the database is locked; try again shortly", 1)
        return await read(*args, **kwargs)

    monkeypatch.setattr(episode_actions, "received_page", failing)
    with caplog.at_level(logging.WARNING, logger="podsync"):
        response = await gp.get(f"{NC}/episode_action?since=0", headers=basic())
        assert response.status == 200  # sent before the fault
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()
    assert "the answer was cut off" in caplog.text and "Traceback" not in caplog.text
    again = await gp.get(f"{NC}/episode_action?since=0", headers=basic())
    assert len((await again.json())["actions"]) == 350


async def test_a_database_fault_before_the_answer_is_a_503(
    gp_with: GpWith, monkeypatch: pytest.MonkeyPatch
) -> None:
    gp = await filled(gp_with, 50, page=5_000)

    async def locked(*args: Any, **kwargs: Any) -> Any:
        raise Unavailable("the database is locked; try again shortly", 1)

    monkeypatch.setattr(episode_actions, "page", locked)
    response = await gp.get("/api/2/episodes/alice.json?since=0", headers=basic())
    assert response.status == 503
    assert response.headers["Retry-After"]
