"""The bound on the fetches one person has podsync make (contract sections 16 and
17): the Subscribe form's checks (`feed_checks`), Refreshes, and the addresses
refused to their import form (`user_fetches`, a refusal standing for the fetch it
refused) count together, at most FETCHES_PER_USER a minute. Past it the person is
told when to try again (TooManyRequests): nothing is fetched. Counted in the
database, so the bound holds whichever process of a server answers.
"""

from __future__ import annotations

from podsync.errors import TooManyRequests
from podsync.storage.engine import Connection
from podsync.store import feed_checks, meta, user_fetches

WINDOW_US = 60_000_000
FETCHES_PER_USER = 5


def seconds(us: int) -> int:
    """Whole seconds to wait, at least one."""
    return max(1, -(-us // 1_000_000))


async def take_turn(
    conn: Connection, user_id: int, now: int, per_user: int = FETCHES_PER_USER
) -> None:
    """TooManyRequests when the user had `per_user` fetches in the last minute; else
    nothing (the caller records its fetch in the same write). Call in a write: the
    user's lock serialises the count across processes."""
    await meta.lock_user(conn, user_id)
    since = now - WINDOW_US
    await user_fetches.forget_before(conn, since)
    made = sorted(
        await feed_checks.made_by(conn, user_id, since)
        + await user_fetches.made_by(conn, user_id, since)
    )
    if len(made) >= per_user:
        wait = seconds(made[-per_user] + WINDOW_US - now)
        raise TooManyRequests(
            f"You had {len(made)} feeds fetched in the last minute (Subscribe and Refresh "
            f"count together), the most there can be. Try again in {wait} s; to add many "
            "feeds at once, import them as an OPML file.",
            wait,
        )
