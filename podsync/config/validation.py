"""The checks a configuration passes once it is built: ranges and cross-key rules,
each problem a `ConfigError` naming the key."""

from __future__ import annotations

import ipaddress
from typing import Protocol, TypeVar
from urllib.parse import SplitResult, urlsplit

from podsync.config import database_url
from podsync.config.sections import (
    AuthConfig,
    DatabaseConfig,
    FeedsConfig,
    GpodderConfig,
    LogConfig,
    ServerConfig,
    SyncConfig,
    UiConfig,
)
from podsync.zones import known_zone

LOG_LEVELS = ("debug", "info", "warning", "error")
DURABILITIES = ("full", "normal")
LOG_FORMATS = ("text", "json")
# Each worker is a whole server (its memory, its database connections): far past the
# cores of any machine podsync is meant for, more only costs.
MAX_WORKERS = 64
# argon2id's cost: OWASP's Password Storage Cheat Sheet's weakest line is m=7168 KiB,
# t=5 (its other lines trade memory for passes at about the same product); the
# ceilings keep a typo from making every login take minutes or 4 GiB.
MIN_HASH_MEMORY_KIB, MAX_HASH_MEMORY_KIB = 7168, 4194304
MIN_HASH_TIME_COST, MAX_HASH_TIME_COST = 1, 20
MIN_HASH_COST_PRODUCT = 7168 * 5  # memory_kib * time_cost


class ConfigError(Exception):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


class Sections(Protocol):
    """What `validate` reads of a `podsync.config.Config` (named here by its shape, so
    this module does not import the package that imports it)."""

    @property
    def server(self) -> ServerConfig: ...
    @property
    def database(self) -> DatabaseConfig: ...
    @property
    def auth(self) -> AuthConfig: ...
    @property
    def sync(self) -> SyncConfig: ...
    @property
    def log(self) -> LogConfig: ...
    @property
    def gpodder(self) -> GpodderConfig: ...
    @property
    def ui(self) -> UiConfig: ...
    @property
    def feeds(self) -> FeedsConfig: ...


C = TypeVar("C", bound=Sections)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _split(url: str) -> SplitResult | None:
    """The URL's parts, or None where urllib refuses it (a bracket left open, say)."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


def _check_hash_cost(a: AuthConfig) -> None:
    m, t = a.password_hash_memory_kib, a.password_hash_time_cost
    _require(
        MIN_HASH_MEMORY_KIB <= m <= MAX_HASH_MEMORY_KIB,
        f"auth.password_hash_memory_kib must be between {MIN_HASH_MEMORY_KIB} (OWASP's "
        f"minimum for argon2id) and {MAX_HASH_MEMORY_KIB}, not {m}",
    )
    _require(
        MIN_HASH_TIME_COST <= t <= MAX_HASH_TIME_COST,
        f"auth.password_hash_time_cost must be between {MIN_HASH_TIME_COST} and "
        f"{MAX_HASH_TIME_COST}, not {t}",
    )
    _require(
        m * t >= MIN_HASH_COST_PRODUCT,
        f"auth.password_hash_memory_kib * auth.password_hash_time_cost must be at least "
        f"{MIN_HASH_COST_PRODUCT} (OWASP's minimum for argon2id: 7168 KiB with a time "
        f"cost of 5, 19456 KiB with 2, ...), not {m} * {t} = {m * t}",
    )


def validate(config: C) -> C:
    """Check ranges and cross-key rules; return the config unchanged when it is sound."""
    s, d, a, y, lg = config.server, config.database, config.auth, config.sync, config.log
    g = config.gpodder
    _require(bool(s.host.strip()), "server.host must not be empty")
    _require(0 <= s.port <= 65535, f"server.port must be between 0 and 65535, not {s.port}")
    if s.public_url:
        parts = _split(s.public_url)
        _require(
            parts is not None and parts.scheme in ("http", "https") and bool(parts.netloc),
            f"server.public_url must be an http(s) URL like https://pods.example.org, "
            f"not {s.public_url!r}",
        )
    for proxy in s.trusted_proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ConfigError(
                f"server.trusted_proxies: {proxy!r} is not an IP address or network"
            ) from None
    _require(
        s.max_body_bytes >= 1024,
        f"server.max_body_bytes must be at least 1024, not {s.max_body_bytes}",
    )
    _require(
        bool(s.tls_cert) == bool(s.tls_key),
        "server.tls_cert and server.tls_key must be set together",
    )
    _require(
        s.shutdown_timeout >= 0,
        f"server.shutdown_timeout must be >= 0, not {s.shutdown_timeout}",
    )
    _require(
        1 <= s.workers <= MAX_WORKERS,
        f"server.workers must be between 1 and {MAX_WORKERS}, not {s.workers}",
    )
    for origin in s.cors_origins:
        parts = _split(origin)
        _require(
            origin == "*"
            or (
                parts is not None
                and parts.scheme in ("http", "https")
                and bool(parts.netloc)
                and not parts.path
                and not parts.query
                and not parts.fragment
            ),
            f"server.cors_origins: {origin!r} is not an origin like https://app.example.org "
            f'(scheme and host, no path) or "*"',
        )
    _require(bool(d.path), "database.path must not be empty")
    url_problem = database_url.problem(d.url) if d.url else None
    _require(url_problem is None, f"database.url {url_problem}")
    _require(d.start_wait >= 0, f"database.start_wait must be 0 or more, not {d.start_wait}")
    _require(
        d.durability in DURABILITIES,
        f'database.durability must be "full" or "normal", not {d.durability!r}',
    )
    _require(
        a.secret_key == "" or len(a.secret_key) >= 16,
        "auth.secret_key must be empty (generated) or at least 16 characters",
    )
    for key in (
        "access_token_lifetime",
        "refresh_token_lifetime",
        "login_max_failures",
        "login_lockout_seconds",
        "login_max_failures_per_address",
        "login_max_failures_per_name",
        "max_pending_logins",
    ):
        value = getattr(a, key)
        _require(value >= 1, f"auth.{key} must be at least 1, not {value}")
    _check_hash_cost(a)
    _require(y.max_clock_skew >= 0, f"sync.max_clock_skew must be >= 0, not {y.max_clock_skew}")
    _require(y.page_size_max >= 1, f"sync.page_size_max must be at least 1, not {y.page_size_max}")
    _require(
        1 <= y.page_size_default <= y.page_size_max,
        f"sync.page_size_default must be between 1 and sync.page_size_max "
        f"({y.page_size_max}), not {y.page_size_default}",
    )
    for key in ("action_id_retention_days", "max_subscriptions_per_user", "max_entities_per_user"):
        value = getattr(y, key)
        _require(value >= 1, f"sync.{key} must be at least 1, not {value}")
    _require(
        lg.level in LOG_LEVELS,
        f"log.level must be one of {', '.join(LOG_LEVELS)}, not {lg.level!r}",
    )
    _require(
        lg.format in LOG_FORMATS,
        f"log.format must be one of {', '.join(LOG_FORMATS)}, not {lg.format!r}",
    )
    _require(
        g.session_lifetime >= 1,
        f"gpodder.session_lifetime must be at least 1, not {g.session_lifetime}",
    )
    _require(
        g.episode_page_size >= 1,
        f"gpodder.episode_page_size must be at least 1, not {g.episode_page_size}",
    )
    _require(
        g.basic_cache_seconds >= 0,
        f"gpodder.basic_cache_seconds must be >= 0, not {g.basic_cache_seconds}",
    )
    for key in ("max_devices_per_user", "max_episode_actions_per_user", "episode_history_days"):
        value = getattr(g, key)
        _require(value >= 1, f"gpodder.{key} must be at least 1, not {value}")
    _require(
        config.ui.session_lifetime >= 60,
        f"ui.session_lifetime must be at least 60, not {config.ui.session_lifetime}",
    )
    _require(
        known_zone(config.ui.time_zone),
        f"ui.time_zone must be an IANA time zone name like Europe/Berlin, "
        f"not {config.ui.time_zone!r}",
    )
    hours = config.feeds.refresh_hours
    _require(1 <= hours <= 8760, f"feeds.refresh_hours must be between 1 and 8760, not {hours}")
    kib, mib = config.feeds.artwork_max_kib, config.feeds.artwork_store_mib
    _require(0 <= kib <= 16384, f"feeds.artwork_max_kib must be between 0 and 16384, not {kib}")
    _require(mib >= 1, f"feeds.artwork_store_mib must be at least 1, not {mib}")
    share = config.feeds.artwork_user_share_mib
    _require(share >= 1, f"feeds.artwork_user_share_mib must be at least 1, not {share}")
    return config
