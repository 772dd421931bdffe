"""Replicas of the Nextcloud clients, written statement for statement from their code:

- AntennaPod's "Nextcloud" option: `HostnameParser` (the address as typed: scheme,
  host, port, subfolder), `NextcloudLoginFlow` (POST <base>/index.php/login/v2 with an
  empty form, poll the returned endpoint with `token=T` once a second until a 200,
  store the poll's `server`, `loginName`, `appPassword`), `NextcloudSyncService`
  (Basic on every call, exactly 200 or an IOException, episode uploads in batches of
  30, and **its own clock** `System.currentTimeMillis() / 1000` as the timestamp of
  every upload), and `SyncService.syncSubscriptions`/`syncEpisodeActions` with
  `EpisodeActionFilter` (a remote play is applied unless a newer local or remote play
  of the episode is known).
- Kasts' `GPodderNextcloud` provider (`gpodder.cpp`, `sync.cpp`, `syncjob.cpp`): its
  login is `GET subscriptions?since=0`; every stored timestamp is `timestamp + 1`,
  and only when above 1 (`updateDBTimestamp`); integers read with Qt's `toInt()`; the
  episode fetch repeats while the answer has actions and its timestamp is more than
  10 s behind the client's clock; action times sent as `QDateTime` ISO with the `Z`
  cut off.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from tests.support.antennapod_replica import url_equal
from tests.support.kasts_replica import parse_kasts_time, to_int
from tests.support.replica_http import Answer, SyncFailed, basic_header, send

NC = "/index.php/apps/gpoddersync"
UPLOAD_BULK_SIZE = 30
ANTENNAPOD_AGENT = "AntennaPod/3.7.0"
# HostnameParser.URLSPLIT_REGEX
URLSPLIT = re.compile(r"(?:(https?)://)?([^:/]+)(?::(\d+))?(.+)?")
ISO = "%Y-%m-%dT%H:%M:%S"


@dataclass
class HostnameParser:
    scheme: str
    host: str
    port: int
    subfolder: str

    @classmethod
    def parse(cls, hosturl: str) -> HostnameParser:
        m = URLSPLIT.fullmatch(hosturl)
        if m is None:
            return cls("https", hosturl, 443, "")
        scheme, host, port_text, rest = m.groups()
        port = -1 if port_text is None else int(port_text)
        subfolder = "" if rest is None else rest.rstrip("/")  # StringUtils.stripEnd
        if scheme is None and port == 80:
            scheme = "http"
        elif scheme is None:
            scheme = "https"
        if scheme == "https" and port == -1:
            port = 443
        elif scheme == "http" and port == -1:
            port = 80
        return cls(scheme, host, port, subfolder)

    def url(self, path: str) -> str:
        """HttpUrl.Builder: scheme, host, port, addPathSegments(stripStart(subfolder +
        path, "/"))."""
        return f"{self.scheme}://{self.host}:{self.port}/" + (self.subfolder + path).lstrip("/")


def system_clock() -> float:
    return time.time()


@dataclass
class AntennaPodNextcloud:
    """One phone. `clock`: its System.currentTimeMillis() / 1000 (skew it to test a
    phone whose clock is off)."""

    host_url: str  # as typed in the dialog
    user: str = ""
    password: str = ""
    clock: Callable[[], float] = system_clock
    agent: str = ANTENNAPOD_AGENT
    feeds: list[str] = field(default_factory=list)
    queued_add: list[str] = field(default_factory=list)
    queued_remove: list[str] = field(default_factory=list)
    queued_actions: list[dict[str, Any]] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)  # episode -> seconds
    last_subscription_sync: int = 0
    last_episode_sync: int = 0
    token: str | None = None
    endpoint: str | None = None
    calls: list[str] = field(default_factory=list)

    # --- NextcloudLoginFlow ---
    def start_login_flow(self) -> str:
        """start(): the login URL the phone opens in the browser."""
        hostname = HostnameParser.parse(self.host_url)
        result = self._form_request(hostname.url("/index.php/login/v2"), "")
        login_url: str = result["login"]
        self.token = result["poll"]["token"]
        self.endpoint = result["poll"]["endpoint"]
        return login_url

    def poll_login_flow(self, timeout: float = 300.0) -> None:
        """poll(): retryWhen(delay 1 s), timeout 5 minutes; then
        onNextcloudAuthenticated(server, loginName, appPassword), which stores the
        server as the sync address."""
        assert self.endpoint is not None and self.token is not None
        deadline = time.monotonic() + timeout
        while True:
            try:
                result = self._form_request(self.endpoint, "token=" + self.token)
                break
            except SyncFailed:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        self.host_url = result["server"]
        self.user = result["loginName"]
        self.password = result["appPassword"]

    def _form_request(self, url: str, body: str) -> Any:
        headers = {
            "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
            "User-Agent": self.agent,
        }
        answer = send("POST", url, body.encode(), headers)
        if answer.status != 200:
            raise SyncFailed(answer.status, "Return code " + str(answer.status))
        return answer.json()

    # --- NextcloudSyncService ---
    def _perform_request(self, method: str, url: str, body: bytes | None = None) -> Answer:
        self.calls.append(f"{method} {urlsplit(url).path}")
        headers = {
            "Authorization": basic_header(self.user, self.password, "latin-1"),
            "Accept": "application/json",
            "User-Agent": self.agent,
        }
        if body is not None:
            headers["Content-Type"] = "application/json; charset=utf-8"
        answer = send(method, url, body, headers)
        if answer.status != 200:
            raise SyncFailed(answer.status, "Response code: " + str(answer.status))
        return answer

    def _url(self, path: str) -> str:
        return HostnameParser.parse(self.host_url).url(path)

    def get_subscription_changes(self, last_sync: int) -> tuple[list[str], list[str], int]:
        answer = self._perform_request(
            "GET", self._url(f"{NC}/subscriptions") + f"?since={last_sync}"
        )
        obj = answer.json()  # ResponseMapper: getJSONArray / getString / getLong
        added = [str(u).replace("%3A", ":") for u in obj["add"]]
        removed = [str(u).replace("%3A", ":") for u in obj["remove"]]
        return added, removed, int(obj["timestamp"])

    def upload_subscription_changes(self, added: list[str], removed: list[str]) -> int:
        body = json.dumps({"add": added, "remove": removed}).encode()
        self._perform_request("POST", self._url(f"{NC}/subscription_change/create"), body)
        return int(self.clock())  # the answer's timestamp is never read

    def get_episode_action_changes(self, timestamp: int) -> tuple[list[dict[str, Any]], int]:
        url = self._url(f"{NC}/episode_action") + f"?since={timestamp}"
        obj = self._perform_request("GET", url).json()
        stamp = int(obj["timestamp"])
        actions = [a for a in (read_action(o) for o in obj["actions"]) if a is not None]
        return actions, stamp

    def upload_episode_actions(self, queued: list[dict[str, Any]]) -> int:
        for i in range(0, len(queued), UPLOAD_BULK_SIZE):
            batch = [write_action(a) for a in queued[i : i + UPLOAD_BULK_SIZE]]
            body = json.dumps(batch).encode()
            self._perform_request("POST", self._url(f"{NC}/episode_action/create"), body)
        return int(self.clock())

    # --- the user's actions ---
    def subscribe(self, url: str) -> None:
        self.feeds.append(url)
        self.queued_add.append(url)
        self.queued_remove = [u for u in self.queued_remove if u != url]

    def unsubscribe(self, url: str) -> None:
        self.feeds = [u for u in self.feeds if not url_equal(u, url)]
        self.queued_remove.append(url)
        self.queued_add = [u for u in self.queued_add if u != url]

    def play(self, podcast: str, episode: str, position: int, guid: str | None = None) -> None:
        """A play queued with the phone's clock as its time (EpisodeAction.Builder
        .currentTimestamp())."""
        self.positions[episode] = position
        when = datetime.fromtimestamp(int(self.clock()), UTC).replace(tzinfo=None)
        self.queued_actions.append(
            {
                "podcast": podcast,
                "episode": episode,
                "guid": guid,
                "action": "play",
                "timestamp": when,
                "started": 0,
                "position": position,
                "total": 3600,
            }
        )

    # --- SyncService ---
    def sync(self) -> None:
        self.sync_subscriptions()
        self.sync_episode_actions()

    def sync_subscriptions(self) -> None:
        last_sync = self.last_subscription_sync
        local = list(self.feeds)
        added, removed, new_timestamp = self.get_subscription_changes(last_sync)
        queued_removed, queued_added = list(self.queued_remove), list(self.queued_add)
        for url in added:
            if not url.startswith("http"):
                continue
            if any(url_equal(u, url) for u in local) or url in queued_removed:
                continue
            self.feeds.append(url)
        for url in removed:
            if url not in queued_added:
                self.feeds = [u for u in self.feeds if u != url]
        if last_sync == 0:
            queued_added = local
        queued_added = [u for u in queued_added if u not in added]
        queued_removed = [u for u in queued_removed if u not in removed]
        if queued_added or queued_removed:
            new_timestamp = self.upload_subscription_changes(queued_added, queued_removed)
        self.queued_add, self.queued_remove = [], []
        self.last_subscription_sync = new_timestamp

    def sync_episode_actions(self) -> None:
        last_sync = self.last_episode_sync
        remote, new_timestamp = self.get_episode_action_changes(last_sync)
        self.process_episode_actions(remote)
        queued = list(self.queued_actions)
        if queued:
            new_timestamp = self.upload_episode_actions(queued)
            self.queued_actions = []
        self.last_episode_sync = new_timestamp

    def process_episode_actions(self, remote: list[dict[str, Any]]) -> None:
        """EpisodeActionFilter.getRemoteActionsOverridingLocalActions, then the
        position of each episode the phone has."""
        local_most_recent: dict[tuple[str, str], dict[str, Any]] = {}
        for action in self.queued_actions:
            key = (action["podcast"], action["episode"])
            mine = local_most_recent.get(key)
            if mine is None or mine["timestamp"] is None or mine["timestamp"] < action["timestamp"]:
                local_most_recent[key] = action
        overriding: dict[tuple[str, str], dict[str, Any]] = {}
        for action in remote:
            key = (action["podcast"], action["episode"])
            if action["action"] != "play":
                continue
            if _second_overrides_first(action, local_most_recent.get(key)):
                continue
            if _second_overrides_first(action, overriding.get(key)):
                continue
            overriding[key] = action
        for action in overriding.values():
            if action["episode"] in self.positions and action.get("position") is not None:
                self.positions[action["episode"]] = action["position"]


def _second_overrides_first(first: dict[str, Any], second: dict[str, Any] | None) -> bool:
    return (
        second is not None
        and second["timestamp"] is not None
        and (first["timestamp"] is None or second["timestamp"] > first["timestamp"])
    )


def read_action(obj: dict[str, Any]) -> dict[str, Any] | None:
    """EpisodeAction.readFromJsonObject."""
    podcast, episode, action = obj.get("podcast"), obj.get("episode"), obj.get("action")
    if not podcast or not episode or not action:
        return None
    action = str(action).lower()
    if action not in ("new", "download", "play", "delete"):
        return None
    when = None
    if obj.get("timestamp"):
        try:  # SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss") in UTC, lenient about the rest
            when = datetime.strptime(str(obj["timestamp"])[:19], ISO)
        except ValueError:
            when = None
    result: dict[str, Any] = {
        "podcast": podcast,
        "episode": episode,
        "action": action,
        "timestamp": when,
        "guid": obj.get("guid") or None,
    }
    if action == "play":
        started, position, total = (
            _opt_int(obj, "started"),
            _opt_int(obj, "position"),
            _opt_int(obj, "total"),
        )
        if started >= 0 and position > 0 and total > 0:
            result.update(started=started, position=position, total=total)
    return result


def _opt_int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key, -1)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else -1


def write_action(action: dict[str, Any]) -> dict[str, Any]:
    """EpisodeAction.writeToJsonObject (putOpt leaves a null guid out)."""
    obj: dict[str, Any] = {"podcast": action["podcast"], "episode": action["episode"]}
    if action.get("guid") is not None:
        obj["guid"] = action["guid"]
    obj["action"] = action["action"]
    obj["timestamp"] = action["timestamp"].strftime(ISO)
    if action["action"] == "play":
        obj.update(started=action["started"], position=action["position"], total=action["total"])
    return obj


@dataclass
class KastsNextcloud:
    """Kasts with provider "Nextcloud": the hostname as typed, Basic on every call,
    no cookies."""

    hostname: str
    user: str
    password: str
    device: str = "kasts"
    clock: Callable[[], float] = system_clock
    feeds: list[str] = field(default_factory=list)
    queued_add: list[str] = field(default_factory=list)
    queued_remove: list[str] = field(default_factory=list)
    queued_actions: list[dict[str, Any]] = field(default_factory=list)
    received_actions: list[dict[str, Any]] = field(default_factory=list)
    subscription_timestamp: int = 0  # SyncTimeStamps, as stored (already + 1)
    episode_timestamp: int = 0
    episode_fetches: int = 0

    def _call(self, method: str, path: str, body: bytes | None = None) -> Answer:
        # GPodder::addAuthentication: "Basic " + base64(user:password), on every request
        headers = {"Authorization": basic_header(self.user, self.password)}
        answer = send(method, f"{self.hostname}{path}", body, headers)
        if answer.status != 200:  # QNetworkReply::error() for any 4xx/5xx
            raise SyncFailed(answer.status, answer.body.decode(errors="replace"))
        return answer

    def login(self) -> None:
        """Sync::login for GPodderNextcloud: getSubscriptionChanges(0, "")."""
        self._call("GET", f"{NC}/subscriptions?since=0")

    def _update_db_timestamp(self, timestamp: int) -> int | None:
        return timestamp + 1 if timestamp > 1 else None

    def subscribe(self, url: str) -> None:
        self.feeds.append(url)
        self.queued_add.append(url)

    def unsubscribe(self, url: str) -> None:
        self.feeds.remove(url)
        self.queued_remove.append(url)

    def play(self, podcast: str, episode: str, position: int, guid: str = "") -> None:
        self.queued_actions.append(
            {
                "podcast": podcast,
                "url": episode,
                "id": guid,
                "device": self.device,
                "action": "play",
                "timestamp": int(self.clock()),
                "started": 0,
                "position": position,
                "total": 3600,
            }
        )

    def sync(self) -> None:
        self.sync_subscriptions()
        self.sync_episodes()

    def sync_subscriptions(self) -> None:
        first = self.subscription_timestamp == 0
        local_add = list(self.feeds) if first else list(self.queued_add)
        local_remove = [] if first else list(self.queued_remove)
        answer = self._call("GET", f"{NC}/subscriptions?since={self.subscription_timestamp}").json()
        new_timestamp = to_int(answer.get("timestamp"))
        for url in answer.get("remove", []):
            if url in self.feeds:
                self.feeds.remove(url)
        for url in answer.get("add", []):
            if url not in self.feeds:
                self.feeds.append(url)
        stored = self._update_db_timestamp(new_timestamp)
        if stored is not None:
            self.subscription_timestamp = stored
        if local_add or local_remove:
            body = json.dumps({"add": local_add, "remove": local_remove}, separators=(",", ":"))
            posted = self._call("POST", f"{NC}/subscription_change/create", body.encode()).json()
            stored = self._update_db_timestamp(to_int(posted.get("timestamp")))
            if stored is not None:
                self.subscription_timestamp = stored
        self.queued_add, self.queued_remove = [], []

    def sync_episodes(self) -> None:
        while True:
            self.episode_fetches += 1
            answer = self._call("GET", f"{NC}/episode_action?since={self.episode_timestamp}").json()
            actions = answer.get("actions", [])
            for action in actions:
                assert parse_kasts_time(action["timestamp"]) is not None, action
            self.received_actions += actions
            new_timestamp = to_int(answer.get("timestamp"))
            current = int(self.clock())
            stored = self._update_db_timestamp(new_timestamp)
            if stored is not None:
                self.episode_timestamp = stored
            if new_timestamp > current - 10 or not actions:
                break
            assert self.episode_fetches < 100, "the episode loop does not end"
        if self.queued_actions:
            batch = []
            for a in self.queued_actions:
                when = datetime.fromtimestamp(a["timestamp"], UTC).strftime(ISO)  # Z chopped
                obj = {
                    "podcast": a["podcast"],
                    "episode": a["url"],
                    "guid": a["id"],
                    "device": a["device"],
                    "action": a["action"],
                    "timestamp": when,
                }
                if a["action"] == "play":
                    obj.update(started=a["started"], position=a["position"], total=a["total"])
                batch.append(obj)
            posted = self._call(
                "POST", f"{NC}/episode_action/create", json.dumps(batch).encode()
            ).json()
            stored = self._update_db_timestamp(to_int(posted.get("timestamp")))
            if stored is not None:
                self.episode_timestamp = stored
            self.queued_actions = []
