"""Domain errors. The store and services raise these; the web layer and the CLI
translate them (to the JSON error shape and to `Error: ...` lines)."""

from __future__ import annotations


class PodsyncError(Exception):
    """Base of every error podsync reports to a client or an admin."""


class MissingExtra(PodsyncError):
    """The configuration needs an optional part that is not installed."""


# How to install the optional parts that database.url and server.metrics need.
POSTGRES_EXTRA = "pip install 'podsync[postgres]'"
METRICS_EXTRA = "pip install 'podsync[metrics]'"


class AddressInUse(PodsyncError):
    """`podsync serve` cannot listen: another program holds the address and port."""


class InvalidInput(PodsyncError):
    """The request or command carries a value the contract does not allow (400)."""


class LimitExceeded(InvalidInput):
    """A write would take the user past one of the configured limits; nothing of it
    was stored (400). The message names the limit and the count."""


class NotFound(PodsyncError):
    """The addressed thing does not exist, or is not the caller's (404)."""


class Conflict(PodsyncError):
    """The thing to create already exists (a username, a backup file)."""


class Unauthorized(PodsyncError):
    """Credentials or token missing, wrong, expired or revoked (401).

    `invalid_token`: a bearer token was sent but is expired, revoked or forged
    (RFC 6750 `error="invalid_token"`), as opposed to no usable token at all."""

    def __init__(self, message: str, invalid_token: bool = False) -> None:
        super().__init__(message)
        self.invalid_token = invalid_token


class Forbidden(PodsyncError):
    """Not allowed from where the request came (403): a write, or a GET that would
    create a device, that a browser says a page of another site made."""


class TooManyRequests(PodsyncError):
    """Login throttled (429); `retry_after` is in whole seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(PodsyncError):
    """The database cannot take the request now (503 with `Retry-After`): locked
    past the busy timeout, full, or read-only. `reason` says which, in words."""

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
