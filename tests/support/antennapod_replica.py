"""An AntennaPod replica (gpodder spec 8 and 10.2): Basic only on login.json, with
`Content-Type: plain/text`; every later call carries only the cookie the login set,
through an OkHttp-like jar; exactly 200 or the sync fails; strict JSON reading
(getJSONArray/getLong: a missing key fails); episode uploads in batches of 30; the
first sync (since 0) uploads every local feed and every played episode."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tests.support.replica_http import Answer, OkHttpCookieJar, SyncFailed, basic_header, send

EPISODE_BATCH = 30


def url_equal(a: str, b: str) -> bool:
    """AntennaPod's UrlChecker.urlEquals: scheme, host case and trailing / ignored."""

    def norm(u: str) -> str:
        parts = urlsplit(u)
        return (parts.netloc.lower() + parts.path).rstrip("/") + (
            "?" + parts.query if parts.query else ""
        )

    return norm(a) == norm(b)


@dataclass
class AntennaPod:
    base: str
    user: str
    password: str
    device: str
    jar: OkHttpCookieJar = field(default_factory=OkHttpCookieJar)
    feeds: list[str] = field(default_factory=list)
    queued_add: list[str] = field(default_factory=list)
    queued_remove: list[str] = field(default_factory=list)
    queued_actions: list[dict[str, Any]] = field(default_factory=list)
    received_actions: list[dict[str, Any]] = field(default_factory=list)
    last_sync: int = 0
    last_episode_sync: int = 0
    calls: list[str] = field(default_factory=list)

    def _call(self, method: str, path: str, body: bytes | None = None, **headers: str) -> Answer:
        self.calls.append(f"{method} {path.split('?')[0]}")
        answer = send(method, self.base + path, body, headers, self.jar)
        if answer.status != 200:  # checkStatusCode: anything but 200 fails
            raise SyncFailed(answer.status, answer.body.decode(errors="replace"))
        return answer

    # --- user actions ---
    def subscribe(self, url: str) -> None:
        self.feeds.append(url)
        self.queued_add.append(url)
        self.queued_remove = [u for u in self.queued_remove if u != url]

    def unsubscribe(self, url: str) -> None:
        self.feeds = [u for u in self.feeds if not url_equal(u, url)]
        self.queued_remove.append(url)
        self.queued_add = [u for u in self.queued_add if u != url]

    def play(self, podcast: str, episode: str, position: int, when: str) -> None:
        self.queued_actions.append(
            {
                "podcast": podcast,
                "episode": episode,
                "device": self.device,
                "action": "play",
                "timestamp": when,
                "started": 0,
                "position": position,
                "total": 3600,
            }
        )

    # --- the protocol ---
    def login(self) -> None:
        self._call(
            "POST",
            f"/api/2/auth/{self.user}/login.json",
            b"",
            Authorization=basic_header(self.user, self.password),
            **{"Content-Type": "plain/text; charset=utf-8"},
        )

    def setup(self, caption: str) -> None:
        """The setup dialog: login, list devices, create ours if it is new."""
        self.login()
        devices = json.loads(self._call("GET", f"/api/2/devices/{self.user}.json").body)
        for d in devices:  # ResponseMapper reads each key strictly
            for key in ("id", "caption", "type", "subscriptions"):
                assert key in d, d
        if self.device not in [d["id"] for d in devices]:
            body = json.dumps({"caption": caption, "type": "mobile"}).encode()
            self._call("POST", f"/api/2/devices/{self.user}/{self.device}.json", body)

    def sync(self) -> None:
        self.login()
        self.sync_subscriptions()
        self.sync_episodes()

    def sync_subscriptions(self) -> None:
        path = f"/api/2/subscriptions/{self.user}/{self.device}.json?since={self.last_sync}"
        changes = self._call("GET", path).json()
        add, remove, timestamp = changes["add"], changes["remove"], int(changes["timestamp"])
        for url in remove:
            if not any(url_equal(url, q) for q in self.queued_add):
                self.feeds = [u for u in self.feeds if not url_equal(u, url)]
        for url in add:
            if url.startswith("http") and not any(url_equal(url, u) for u in self.feeds):
                self.feeds.append(url)
        if self.last_sync == 0:  # first sync: upload everything local
            self.queued_add = list(dict.fromkeys(self.queued_add + self.feeds))
        if self.queued_add or self.queued_remove:
            body = json.dumps({"add": self.queued_add, "remove": self.queued_remove}).encode()
            path = f"/api/2/subscriptions/{self.user}/{self.device}.json"
            answer = self._call("POST", path, body).json()
            _ = answer["update_urls"]  # GpodnetUploadChangesResponse: required
            timestamp = int(answer["timestamp"])
            self.queued_add, self.queued_remove = [], []
        self.last_sync = timestamp

    def sync_episodes(self) -> None:
        path = f"/api/2/episodes/{self.user}.json?since={self.last_episode_sync}"
        answer = self._call("GET", path).json()
        self.received_actions += answer["actions"]
        timestamp = int(answer["timestamp"])
        while self.queued_actions:
            batch = self.queued_actions[:EPISODE_BATCH]
            body = json.dumps(batch).encode()
            posted = self._call("POST", f"/api/2/episodes/{self.user}.json", body).json()
            _ = posted["update_urls"]
            timestamp = int(posted["timestamp"])
            self.queued_actions = self.queued_actions[EPISODE_BATCH:]
        self.last_episode_sync = timestamp

    def positions(self) -> dict[str, tuple[int, bool]]:
        """What AntennaPod does with the plays it received (EpisodeActionFilter,
        then SyncService.processEpisodeAction): per episode, the play with the latest
        timestamp wins; its position becomes the episode's (seconds), and it is
        marked played when that is within the smart-mark window (30 s) of the end."""
        latest: dict[str, dict[str, Any]] = {}
        for action in self.received_actions:
            if action["action"].lower() != "play":
                continue
            seen = latest.get(action["episode"])
            if seen is None or action["timestamp"] >= seen["timestamp"]:
                latest[action["episode"]] = action
        applied = {}
        for episode, action in latest.items():
            position, total = int(action["position"]), int(action.get("total") or 0)
            applied[episode] = (position, bool(total) and position >= total - 30)
        return applied
