"""The words of a refusal to fetch from an address that is not public, in one place.

The fetcher stores a failed fetch's reason (`feed_info.last_error`) and logs it; the
web UI shows it on the podcast's page. A refusal of a private address says what was
refused and which setting lifts it, for the admin who can change it and for the log.
A person who is not an admin learns only that the address is not allowed here and
whom to ask: not which private address a name resolves to (a look at the server's
own network).

The import form's refusal (IMPORT_NOT_ALLOWED) is only ever shown to a person who
is not an admin (an admin may import from any address): it too says only that the
address is not allowed, and whom to ask.

Every refusal starts with PREFIX, in this release and the ones before, so that
turning `feeds.allow_private` on finds the feeds it refused (`is_refusal`).
"""

from __future__ import annotations

PREFIX = "refused: "
SETTING = "feeds.allow_private"
# What lifts a refusal, appended to the stored reason: the log line and an admin's
# page name the setting.
HINT = f"podsync fetches only public addresses unless {SETTING} = true"
IMPORT_NOT_ALLOWED = (
    "This address is not allowed. Ask an admin of this podsync to run the import for "
    "you; if you run this podsync yourself, run `podsync user import-from` on the "
    "server. Nothing was changed."
)
FOR_NON_ADMIN = (
    "refused: the address is not allowed on this server. To fetch feeds on your own "
    "network, ask the server's admin"
)


def refused(detail: str) -> str:
    """The stored and logged reason of a refusal: `detail` says which address
    (e.g. "10.0.0.5 is not a public address")."""
    return f"{PREFIX}{detail} ({HINT})"


def is_refusal(reason: str | None) -> bool:
    """Whether a stored reason is a refusal of an address (any release's words)."""
    return reason is not None and reason.startswith(PREFIX)


def shown_to(reason: str | None, admin: bool) -> str | None:
    """A stored reason as a person sees it: a refusal names the address and the
    setting to an admin (a reason stored by a release before, without the setting,
    gets it), and neither to anyone else; any other reason as it is."""
    if not is_refusal(reason):
        return reason
    assert reason is not None
    if not admin:
        return FOR_NON_ADMIN
    return reason if SETTING in reason else f"{reason} ({HINT})"
