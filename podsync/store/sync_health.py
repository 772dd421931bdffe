"""How each device and app password of a user last fared (tables `sync_refusals`,
`revoked_app_passwords`, and `gpodder_devices.last_seen_at`): the last good sync of
a device, the last refused attempt of a device or an app password (when, from
which address and client, why), and for a while the hashes of revoked app
passwords, so that a device still sending one is told it was revoked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from podsync.store import Connection
from podsync.store.value_lists import in_list

DEVICE = "device"
APP_PASSWORD = "app_password"  # noqa: S105 - a kind of subject, not a password
REASONS = ("password", "locked_out", "revoked", "disabled")
# A revoked app password is remembered this long, and at most this many per user.
REVOKED_KEEP_US = 90 * 86_400_000_000
REVOKED_PER_USER = 100


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: str  # DEVICE or APP_PASSWORD
    subject: str  # the device id, or the app password's id
    refused_at: int
    address: str
    client: str
    reason: str  # one of REASONS


@dataclass(frozen=True, slots=True)
class Revoked:
    password_id: int
    user_id: int
    name: str
    revoked_at: int


async def touch_device(
    conn: Connection, user_id: int, device_id: str, now: int, before: int
) -> None:
    """A good sync of the device at `now`, unless one at or after `before` is kept
    and no refusal came after it."""
    await conn.execute(
        "UPDATE gpodder_devices SET last_seen_at = ? "
        "WHERE user_id = ? AND device_id = ? AND (last_seen_at < ? OR EXISTS ("
        "SELECT 1 FROM sync_refusals r WHERE r.user_id = gpodder_devices.user_id "
        "AND r.kind = 'device' AND r.subject = gpodder_devices.device_id "
        "AND r.refused_at >= gpodder_devices.last_seen_at))",
        (now, user_id, device_id, before),
    )


async def refused(conn: Connection, user_id: int, refusal: Refusal) -> None:
    """Keep this as the subject's last refused attempt. Call in a write."""
    await conn.execute(
        "INSERT INTO sync_refusals (user_id, kind, subject, refused_at, address, client, reason) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, kind, subject) DO UPDATE SET "
        "refused_at = excluded.refused_at, address = excluded.address, "
        "client = excluded.client, reason = excluded.reason",
        (
            user_id,
            refusal.kind,
            refusal.subject,
            refusal.refused_at,
            refusal.address,
            refusal.client,
            refusal.reason,
        ),
    )


async def refusals_of(conn: Connection, user_id: int) -> list[Refusal]:
    rows = await conn.fetch_all(
        "SELECT kind, subject, refused_at, address, client, reason FROM sync_refusals "
        "WHERE user_id = ?",
        (user_id,),
    )
    return [Refusal(str(k), str(s), int(t), str(a), str(c), str(r)) for k, s, t, a, c, r in rows]


async def forget(conn: Connection, user_id: int, kind: str, subjects: Sequence[str]) -> None:
    """Forget the refusals of subjects that are gone (a removed device)."""
    if subjects:
        await conn.execute_many(
            "DELETE FROM sync_refusals WHERE user_id = ? AND kind = ? AND subject = ?",
            [(user_id, kind, subject) for subject in subjects],
        )


async def remember_revoked(
    conn: Connection, user_id: int, password_ids: Sequence[int] | None, now: int
) -> None:
    """Keep the hashes of these app passwords of the user (None: all of them) before
    they are deleted, and forget those revoked long ago or beyond the newest
    REVOKED_PER_USER, with their refusals. Call in the write that deletes them."""
    which = ""
    params: list[object] = [now, user_id]
    if password_ids is not None:
        if not password_ids:
            return
        marks, bound = in_list(password_ids, dialect=conn.dialect)
        which = f" AND id IN ({marks})"
        params += bound
    await conn.execute(
        "INSERT INTO revoked_app_passwords (hash, user_id, password_id, name, revoked_at) "
        f"SELECT hash, user_id, id, name, ? FROM app_passwords WHERE user_id = ?{which} "
        "ON CONFLICT (hash) DO NOTHING",
        params,
    )
    old = await conn.fetch_all(
        "SELECT password_id FROM revoked_app_passwords WHERE user_id = ? AND ("
        "revoked_at < ? OR password_id NOT IN (SELECT password_id FROM revoked_app_passwords "
        "WHERE user_id = ? ORDER BY revoked_at DESC, password_id DESC LIMIT ?))",
        (user_id, now - REVOKED_KEEP_US, user_id, REVOKED_PER_USER),
    )
    gone = [int(r[0]) for r in old]
    if gone:
        await conn.execute_many(
            "DELETE FROM revoked_app_passwords WHERE user_id = ? AND password_id = ?",
            [(user_id, pid) for pid in gone],
        )
        await forget(conn, user_id, APP_PASSWORD, [str(pid) for pid in gone])


async def find_revoked(conn: Connection, secret_hash: bytes) -> Revoked | None:
    row = await conn.fetch_one(
        "SELECT password_id, user_id, name, revoked_at FROM revoked_app_passwords WHERE hash = ?",
        (secret_hash,),
    )
    return None if row is None else Revoked(int(row[0]), int(row[1]), str(row[2]), int(row[3]))


async def revoked_of(conn: Connection, user_id: int) -> list[Revoked]:
    rows = await conn.fetch_all(
        "SELECT password_id, user_id, name, revoked_at FROM revoked_app_passwords "
        "WHERE user_id = ? ORDER BY revoked_at DESC",
        (user_id,),
    )
    return [Revoked(int(p), int(u), str(n), int(t)) for p, u, n, t in rows]
