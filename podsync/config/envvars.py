"""`PODSYNC_*` names that are not settings: podsync's own others, Kubernetes service
links, and the closest setting to a misspelt name (contract section 14).

Kubernetes puts service links into every pod of a namespace: for a Service named
`podsync` (or `podsync-db`, ...) `PODSYNC_SERVICE_HOST`, `PODSYNC_SERVICE_PORT`,
`PODSYNC_SERVICE_PORT_<NAME>`, `PODSYNC_PORT=tcp://ip:port` and
`PODSYNC_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`, each behind the Service's name
in upper case with `-` as `_`. They say nothing to podsync and are ignored without
a word; any other unknown name is a warning, never a refusal to start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

CONFIG_ENV = "PODSYNC_CONFIG"  # the config file
COPY_TO_URL_ENV = "PODSYNC_COPY_TO_URL"  # `podsync db copy-to`'s target
IMPORT_PASSWORD_ENV = "PODSYNC_IMPORT_PASSWORD"  # noqa: S105 (a name: import-from's password)
# podsync's names that are not settings, with what they are.
OWN_NAMES = {
    CONFIG_ENV: "the config file",
    COPY_TO_URL_ENV: "db copy-to's target",
    IMPORT_PASSWORD_ENV: "user import-from's remote password",
}

# Each kind of service-link name, behind "PODSYNC" and the rest of the Service's
# name, with the shape of the value it holds. A name can read as more than one kind
# (PODSYNC_SERVICE_PORT: a port number, or a link of a Service "podsync-service").
_SUFFIX = r"PORT_\d+_(?:TCP|UDP|SCTP)"
_KINDS = [
    (rf"SERVICE_HOST|{_SUFFIX}_ADDR", r"[0-9A-Fa-f.:]+"),
    (rf"SERVICE_PORT(?:_[A-Z0-9_]+)?|{_SUFFIX}_PORT", r"\d{1,5}"),
    (rf"PORT|{_SUFFIX}", r"(?:tcp|udp|sctp)://[0-9A-Fa-f.:\[\]]+:\d{1,5}"),
    (rf"{_SUFFIX}_PROTO", r"tcp|udp|sctp"),
]
_SERVICE_LINKS = [
    (re.compile(rf"PODSYNC(?:_[A-Z0-9_]+)?_(?:{name})", re.ASCII), re.compile(value, re.ASCII))
    for name, value in _KINDS
]
_LINK_VALUE = _SERVICE_LINKS[2][1]


def is_service_link(name: str, value: str) -> bool:
    """Whether `name=value` is one Kubernetes sets for a Service named podsync[-...]:
    the name has a link's shape and the value the shape of that kind (so
    `PODSYNC_SERVR_PORT=9000`, a typo, is not taken for one)."""
    return any(
        names.fullmatch(name) is not None and values.fullmatch(value.strip()) is not None
        for names, values in _SERVICE_LINKS
    )


def holds_service_link(value: str) -> bool:
    """`tcp://10.96.0.17:8080`: what a Service named `podsync-server` puts into
    PODSYNC_SERVER_PORT. No setting ever holds such a value."""
    return _LINK_VALUE.fullmatch(value.strip()) is not None


def screen_variable(name: str, value: str, settings: Mapping[str, str]) -> tuple[bool, str | None]:
    """Whether the PODSYNC_* variable `name` sets one of `settings` (variable ->
    "section.key"), and what to warn of. Never a refusal: podsync's other names and
    Kubernetes service links pass in silence; any other unknown name is a warning
    naming the closest setting; a service link that lands on a setting
    (`PODSYNC_SERVER_PORT=tcp://10.96.0.19:8080`, from a Service named
    `podsync-server`) is ignored with a warning. A value is never shown: it may be a
    secret."""
    if name in settings:
        if not holds_service_link(value):
            return True, None
        return False, (
            f"environment variable {name} holds a Kubernetes service link, not a value "
            f"for {settings[name]}, and is ignored (enableServiceLinks: false in the pod "
            "spec stops Kubernetes from setting it)"
        )
    if name in OWN_NAMES or is_service_link(name, value):
        return False, None
    import difflib  # only for a name that is wrong: not loaded by every server

    known = {**settings, **OWN_NAMES}
    nearest = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.0)[0]
    return False, (
        f"environment variable {name} names no setting and is ignored; "
        f"the closest is {nearest} ({known[nearest]})"
    )
