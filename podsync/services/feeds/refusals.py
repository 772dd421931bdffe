"""The words of a refusal to fetch from an address, and who reads which (one place,
so that every page and the log say the same).

A refused address is stored and logged with its detail ("localhost resolves to no
public address (127.0.0.1)"): the admin, who runs the network, needs it. Anyone
else is told only that the address is not allowed: naming the private address a
name resolves to would let any user map the server's network by trying names.
"""

from __future__ import annotations

# How a fetch's failure starts when its address was refused (services/feeds/http.py).
REFUSED = "refused: "
NOT_ALLOWED = "refused: the address is not allowed"
IMPORT_NOT_ALLOWED = (
    "This address is not allowed. Ask an admin of this podsync to run the import for "
    "you; if you run this podsync yourself, run `podsync user import-from` on the "
    "server. Nothing was changed."
)


def fetch_refusal(detail: str) -> str:
    """A fetch's failure for an address refused, with its detail (stored, logged)."""
    return REFUSED + detail


def is_refusal(error: str | None) -> bool:
    return error is not None and error.startswith(REFUSED)


def for_person(error: str | None, admin: bool) -> str | None:
    """A feed's (or its artwork's) failure as a person reads it: an admin in full;
    anyone else without the detail of a refused address."""
    if not admin and is_refusal(error):
        return NOT_ALLOWED
    return error
