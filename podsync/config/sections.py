"""The sections of the configuration, one frozen dataclass each, with their
defaults (`config.example.toml` documents every key). `podsync.config` builds and
validates them; import them from there."""

from __future__ import annotations

from dataclasses import dataclass, field

from podsync.config.locations import DATABASE_FILE


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str = ""
    trusted_proxies: tuple[str, ...] = ()
    max_body_bytes: int = 1048576
    tls_cert: str = ""
    tls_key: str = ""
    shutdown_timeout: int = 10
    cors_origins: tuple[str, ...] = ()
    metrics: bool = False
    workers: int = 1  # processes serving the one address and database (serve/workers.py)


@dataclass(frozen=True)
class DatabaseConfig:
    path: str = DATABASE_FILE  # a loaded config has it absolute: `default_database_path`
    durability: str = "full"
    url: str = field(default="", repr=False)  # may hold a password
    start_wait: int = 60  # seconds serve waits for a PostgreSQL server not up yet


@dataclass(frozen=True)
class AuthConfig:
    secret_key: str = field(default="", repr=False)
    access_token_lifetime: int = 3600
    refresh_token_lifetime: int = 2592000
    login_max_failures: int = 5
    login_lockout_seconds: int = 900
    login_max_failures_per_address: int = 50
    login_max_failures_per_name: int = 50  # an hour, from all addresses together
    max_pending_logins: int = 16
    password_hash_memory_kib: int = 65536  # argon2id's memory cost of one hash (64 MiB)
    password_hash_time_cost: int = 3  # argon2id's passes over that memory


@dataclass(frozen=True)
class SyncConfig:
    max_clock_skew: int = 300
    page_size_default: int = 50
    page_size_max: int = 500
    action_id_retention_days: int = 90
    max_subscriptions_per_user: int = 20000  # subscribed feeds
    max_entities_per_user: int = 100000  # subscribed or not (unsubscribed ones are kept)


@dataclass(frozen=True)
class LogConfig:
    level: str = "info"
    access_log: bool = True
    format: str = "text"


@dataclass(frozen=True)
class GpodderConfig:
    enabled: bool = True
    session_lifetime: int = 2592000
    episode_page_size: int = 10000
    basic_cache_seconds: int = 300
    max_devices_per_user: int = 100
    max_episode_actions_per_user: int = 200000
    episode_history_days: int = 365  # superseded episode actions older than this are pruned


@dataclass(frozen=True)
class UiConfig:
    time_zone: str = "UTC"  # an IANA zone name: the web UI shows times in it
    session_lifetime: int = 1209600  # seconds a web UI sign-in lasts (14 days)


@dataclass(frozen=True)
class FeedsConfig:
    fetch_metadata: bool = True  # false: podsync makes no outbound connection at all
    refresh_hours: int = 24
    allow_private: bool = False  # fetch from loopback and private networks too
    artwork_max_kib: int = 1024  # a feed's image is kept up to this size; 0: none kept
    artwork_store_mib: int = 1024  # all kept images together, at most
    artwork_user_share_mib: int = 100  # the images one user's feeds name, at most
