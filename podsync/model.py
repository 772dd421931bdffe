"""The entities every layer names: users, subscriptions, recorded actions.

The store returns them, the services reason about them and the web layer shows
them; none of them knows SQL or HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii

from podsync import timestamps


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    password_hash: str
    enabled: bool
    token_generation: int
    created_at: int
    admin: bool = False  # may use the web UI's admin pages
    time_zone: str | None = None  # the web UI's zone for this person (None: ui.time_zone)


@dataclass(frozen=True, slots=True)
class UserSummary:
    name: str
    enabled: bool
    subscriptions: int
    created_at: int
    devices: int = 0  # gpodder devices
    admin: bool = False  # a web UI admin


@dataclass(frozen=True, slots=True)
class UserOverview:
    """One row of the admin's Users page."""

    name: str
    enabled: bool
    admin: bool
    subscriptions: int  # subscribed feeds
    devices: int  # gpodder devices
    created_at: int
    last_activity: int | None  # the latest device sync, sign-in or subscription change


@dataclass(frozen=True, slots=True)
class AppPassword:
    """One of a user's app passwords, without its secret (only a hash is stored)."""

    id: int
    name: str  # the app it is for, unique per user
    created_at: int
    last_used_at: int | None  # None: never used; updated at most once a minute


@dataclass(frozen=True, slots=True)
class Caller:
    """Who tries a password: the client's address (what the lockout counts by), the
    door it came through (`opa`, `gpodder`, `nextcloud`, `web`) and what the client
    says it is (its User-Agent), kept with a failed login so a person can tell which
    device keeps failing."""

    address: str
    door: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class LoginFailure:
    """One wrong password tried for a name from one address within the lockout
    window: repeats of it are one failure (contract rev. 5), counted in `attempts`.
    The door, client and reason are those of its latest try."""

    address: str
    first_at: int  # microseconds since the epoch
    last_at: int
    attempts: int  # every try of this password, repeats included
    door: str
    client: str
    reason: str  # "password", "app_password" (one that matched none) or "disabled"


@dataclass(slots=True)
class Subscription:
    """One subscription entity of one user (contract section 1).

    Not frozen, for speed (a frozen dataclass sets each of its 14 fields through
    object.__setattr__, and a batch makes and copies 30 of them): the rules copy an
    entity to change it (dataclasses.replace), and the store fills in `change_seq`,
    `changed_at` and `view` of the copies it saves. Nothing else writes to one."""

    id: int | None  # None until inserted; creation order, the list keyset
    user_id: int
    sync_id: str
    guid: str
    feed_url: str
    url_key: str
    title: str | None
    subscribed_at: int
    unsubscribed_at: int | None
    last_updated: int
    last_client_id: str | None
    change_seq: int
    changed_at: int
    # The entity as the API shows it (subscription_view), kept in the store beside the
    # row so that a list page is a join of stored bytes. b"" until the store saves it.
    view: bytes = b""

    @property
    def subscribed(self) -> bool:
        return self.unsubscribed_at is None


def subscription_view(entity: Subscription) -> bytes:
    """The entity's JSON object as the Open Podcast API shows it (ASCII, compact).

    The store keeps this text with every row it writes, whoever the writer is (the
    sync API, OPML import, the gpodder layer), so it is computed here and only here."""
    # Joined by hand: json.dumps of one string is the C encoder's fast path, while a
    # dict with custom separators builds a new encoder per call (a batch makes 30).
    unsubscribed = (
        ""
        if entity.unsubscribed_at is None
        else f',"unsubscribed_at":"{timestamps.format(entity.unsubscribed_at)}"'
    )
    return (
        f'{{"sync_id":{_string(entity.sync_id)},"guid":{_string(entity.guid)},'
        f'"feed_url":{_string(entity.feed_url)},'
        f'"subscribed_at":"{timestamps.format(entity.subscribed_at)}"{unsubscribed}}}'
    ).encode("ascii")


# One str -> its JSON text (ASCII): the C function json.dumps calls for a lone str
# (ensure_ascii), without its two Python frames and argument checks.
json_string: Callable[[str], str] = encode_basestring_ascii
_string = json_string


@dataclass(frozen=True, slots=True)
class RecordedAction:
    """The first result of an action_id (idempotency), with what the action was."""

    action_id: str
    status: str
    reason: str | None
    sync_id: str | None
    received_at: int
    fingerprint: str | None  # None: recorded before revision 2, compares equal to any
