"""The gpodder layer's episode path as wrk sides: a session login, seeding, push and pull.

A gpodder client (AntennaPod, gPodder) logs in once with Basic auth and sends the
`sessionid` cookie after that; these sides do the same, over loopback, through the
public API only.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from http.cookies import SimpleCookie

from harness import PASSWORD, nonce
from rounds import BATCH, Side

EP_PULL_ACTIONS = 1_000
DEVICE = "bench-device"


def gpodder_login(base: str, user: str) -> str:
    """POST /api/2/auth/<user>/login.json with Basic auth; the `sessionid` cookie."""
    basic = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1:<port>
        f"{base}/api/2/auth/{user}/login.json",
        data=b"",
        headers={"Authorization": f"Basic {basic}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        cookie = SimpleCookie(response.headers["Set-Cookie"])
    return cookie["sessionid"].value


def _post(base: str, path: str, session: str, body: object) -> object:
    request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1:<port>
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Cookie": f"sessionid={session}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        return json.loads(response.read())


def seed_episodes(base: str, user: str, session: str, count: int = EP_PULL_ACTIONS) -> None:
    """`count` play actions for `user` (50 podcasts), uploaded 100 at a time."""
    for start in range(0, count, 100):
        actions = [
            {
                "podcast": f"https://fill.example.com/{i % 50}.xml",
                "episode": f"https://media.example.com/r/{i}.mp3",
                "action": "play",
                "timestamp": "2024-01-01T00:00:00",
                "started": 0,
                "position": 60,
                "total": 3600,
                "device": DEVICE,
            }
            for i in range(start, min(start + 100, count))
        ]
        _post(base, f"/api/2/episodes/{user}.json", session, actions)


def ep_push_side(pid: int, base: str, user: str, session: str) -> Side:
    """POST 30 play actions on new episodes a request (AntennaPod's batch)."""
    url = f"{base}/api/2/episodes/{user}.json"
    return Side(url, "episodes.lua", lambda: [session, nonce(), str(BATCH)], pid)


def ep_pull_side(pid: int, base: str, user: str, session: str) -> Side:
    """GET all of a user's episode actions from since=0 (a first sync)."""
    url = f"{base}/api/2/episodes/{user}.json?since=0"
    return Side(url, "gpodder_get.lua", lambda: [session], pid)


def sub_push_side(pid: int, base: str, user: str, session: str) -> Side:
    """POST 30 new feeds in "add" a request (a gpodder subscription push)."""
    url = f"{base}/api/2/subscriptions/{user}/{DEVICE}.json"
    return Side(url, "gpodder_subscriptions.lua", lambda: [session, nonce(), str(BATCH)], pid)
