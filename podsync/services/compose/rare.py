"""The services only the web UI and the CLI's commands use, over the core ones:
loaded with the web UI's first page (on a worker thread) or by the command that
needs them, never by an idle server (docs/performance.md, "idle memory")."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from podsync.services.accounts import AccountService
from podsync.services.browsing import BrowseService
from podsync.services.compose.core import Services
from podsync.services.episode_pages import EpisodePages
from podsync.services.episode_search import EpisodeSearch
from podsync.services.inbox import Inbox
from podsync.services.listening import ListeningService
from podsync.services.listening_stats import ListeningStats
from podsync.services.player import PlayerSettings
from podsync.services.remote_import import RemoteImportService
from podsync.services.remote_import.bounds import ImportBounds
from podsync.services.remote_import.jobs import ImportJobs
from podsync.services.up_next import UpNext
from podsync.services.web_listening import WebListening
from podsync.services.web_sessions import WebSessionService

if TYPE_CHECKING:
    from podsync.services.opml_io import OpmlService


class RareServices:
    """Built on first use over `core`, and shared from then on."""

    def __init__(self, core: Services) -> None:
        self.core = core

    @cached_property
    def accounts(self) -> AccountService:
        return AccountService(self.core.db, self.core.passwords)

    @property
    def opml(self) -> OpmlService:
        return self.core.opml

    @cached_property
    def import_jobs(self) -> ImportJobs:
        config = self.core.config
        importer = RemoteImportService(
            self.opml, self.core.episode_writes, ImportBounds.for_config(config)
        )
        return ImportJobs(self.core.db, importer, config.auth)

    @cached_property
    def web_sessions(self) -> WebSessionService:
        lifetime = self.core.config.ui.session_lifetime
        return WebSessionService(self.core.db, self.core.auth, self.accounts, lifetime)

    @cached_property
    def browse(self) -> BrowseService:
        return BrowseService(self.core.db, self.core.sync, self.core.feed_fetcher)

    @cached_property
    def listening(self) -> ListeningService:
        return ListeningService(self.core.db)

    @cached_property
    def episode_pages(self) -> EpisodePages:
        return EpisodePages(self.core.db)

    @cached_property
    def episode_search(self) -> EpisodeSearch:
        return EpisodeSearch(self.core.db)

    @cached_property
    def inbox(self) -> Inbox:
        return Inbox(self.core.db, self.episode_pages)

    @cached_property
    def up_next(self) -> UpNext:
        return UpNext(self.core.db, self.episode_pages)

    @cached_property
    def listening_stats(self) -> ListeningStats:
        return ListeningStats(self.core.db)

    @cached_property
    def web_listening(self) -> WebListening:
        return WebListening(self.episode_pages, self.core.episode_writes, self.core.sync_health)

    @cached_property
    def player_settings(self) -> PlayerSettings:
        return PlayerSettings(self.core.db, self.episode_pages)
