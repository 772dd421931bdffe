"""Counts on the web UI's pages read with their thousands separated ("1,976 episode
actions"), on the Overview through a real app."""

from __future__ import annotations

from typing import Any

from podsync.web.ui.render import number
from tests.support.gpodder_support import basic
from tests.ui.test_webui_episodes import app_for, text_of
from tests.ui.test_webui_http import sign_in


def test_the_filter() -> None:
    assert [number(n) for n in (0, 999, 1976, 200000)] == ["0", "999", "1,976", "200,000"]


async def test_the_overview_counts_episode_actions_with_a_separator(
    aiohttp_client: Any, make_config: Any
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    actions = [
        {"podcast": "https://feeds.example.com/a.xml",
         "episode": f"https://cdn.example.com/{n}.mp3", "action": "download",
         "timestamp": "2026-11-01T08:00:00", "device": "phone"}
        for n in range(1200)
    ]  # fmt: skip
    sent = await ui.post("/api/2/episodes/alice.json", json=actions, headers=basic())
    assert sent.status == 200, await sent.text()
    await sign_in(ui)
    assert "1,200 episode actions" in text_of(await (await ui.get("/ui/")).text())
