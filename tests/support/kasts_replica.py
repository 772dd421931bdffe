"""A Kasts replica (gpodder spec 4.1, 8 and 10.2): Basic on every call and no
cookies; integers read with Qt's toInt() (a string, a fraction or anything outside
int32 reads as 0); a cursor stored as `timestamp + 1`, and only when above 1; the
episode fetch loops while the answer is non-empty and its timestamp is at least
10 s old by the client's clock; aggregated=true on the first episode fetch;
action timestamps parsed the Kasts way (cut at '.', then yyyy-MM-ddThh:mm:ss)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tests.support.replica_http import Answer, SyncFailed, basic_header, send

EPISODE_BATCH = 30
INT32_MAX = 2**31 - 1


def to_int(value: Any) -> int:
    """QJsonValue::toInt(): 0 for anything but an integral number within int32."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not value.is_integer():
        return 0
    number = int(value)
    return number if -(2**31) <= number <= INT32_MAX else 0


def parse_kasts_time(text: str) -> datetime | None:
    """Kasts cuts at '.', then needs exactly yyyy-MM-ddThh:mm:ss; a 'Z' makes it invalid."""
    try:
        return datetime.strptime(text.split(".")[0], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None


@dataclass
class Kasts:
    server: str  # as the user typed it: a trailing "/" gives "//api/2/..."
    user: str
    password: str
    device: str
    feeds: list[str] = field(default_factory=list)
    queued_add: list[str] = field(default_factory=list)
    queued_remove: list[str] = field(default_factory=list)
    queued_actions: list[dict[str, Any]] = field(default_factory=list)
    received_actions: list[dict[str, Any]] = field(default_factory=list)
    subscription_cursor: int = 0
    episode_cursor: int = 0
    episode_fetches: int = 0

    def _call(self, method: str, path: str, body: bytes | None = None) -> Answer:
        headers = {"Authorization": basic_header(self.user, self.password)}
        answer = send(method, f"{self.server}{path}", body, headers)  # no cookie jar
        if answer.status != 200:
            raise SyncFailed(answer.status, answer.body.decode(errors="replace"))
        return answer

    def _store_cursor(self, timestamp: Any) -> int:
        value = to_int(timestamp)
        return value + 1 if value > 1 else 0

    def login(self) -> list[dict[str, Any]]:
        devices: list[dict[str, Any]] = self._call("GET", f"/api/2/devices/{self.user}.json").json()
        return devices

    def register(self, caption: str) -> None:
        body = json.dumps({"caption": caption, "type": "desktop"}).encode()
        self._call("POST", f"/api/2/devices/{self.user}/{self.device}.json", body)

    def subscribe(self, url: str) -> None:
        self.feeds.append(url)
        self.queued_add.append(url)

    def unsubscribe(self, url: str) -> None:
        self.feeds.remove(url)
        self.queued_remove.append(url)

    def sync(self) -> None:
        self.sync_subscriptions()
        self.sync_episodes()

    def sync_subscriptions(self) -> None:
        path = f"/api/2/subscriptions/{self.user}/{self.device}.json"
        answer = self._call("GET", f"{path}?since={self.subscription_cursor}").json()
        first = self.subscription_cursor == 0
        for url in answer["remove"]:
            if url in self.feeds:
                self.feeds.remove(url)
        for url in answer["add"]:
            if url not in self.feeds:
                self.feeds.append(url)
        cursor = self._store_cursor(answer["timestamp"])
        if first:
            self.queued_add = list(dict.fromkeys(self.queued_add + self.feeds))
        if self.queued_add or self.queued_remove:
            body = json.dumps({"add": self.queued_add, "remove": self.queued_remove}).encode()
            posted = self._call("POST", path, body).json()
            cursor = self._store_cursor(posted["timestamp"])
            self.queued_add, self.queued_remove = [], []
        self.subscription_cursor = cursor

    def sync_episodes(self) -> None:
        aggregated = "&aggregated=true" if self.episode_cursor == 0 else ""
        while True:
            self.episode_fetches += 1
            path = f"/api/2/episodes/{self.user}.json?since={self.episode_cursor}{aggregated}"
            answer = self._call("GET", path).json()
            for action in answer["actions"]:
                assert parse_kasts_time(action["timestamp"]) is not None, action
            self.received_actions += answer["actions"]
            timestamp = to_int(answer["timestamp"])
            if timestamp > 1:
                self.episode_cursor = timestamp + 1
            if not answer["actions"] or timestamp > time.time() - 10:
                break
            assert self.episode_fetches < 100, "the episode loop does not end"
        while self.queued_actions:
            batch = self.queued_actions[:EPISODE_BATCH]
            posted = self._call(
                "POST", f"/api/2/episodes/{self.user}.json", json.dumps(batch).encode()
            ).json()
            if to_int(posted["timestamp"]) > 1:
                self.episode_cursor = to_int(posted["timestamp"]) + 1
            self.queued_actions = self.queued_actions[EPISODE_BATCH:]

    def logout(self) -> None:
        self._call("POST", f"/api/2/auth/{self.user}/logout.json", b"")
