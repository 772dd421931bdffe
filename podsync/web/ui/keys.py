"""Application and request keys of the web UI."""

from __future__ import annotations

from aiohttp import web

from podsync.services.accounts import AccountService
from podsync.services.browsing import BrowseService
from podsync.services.episode_pages import EpisodePages
from podsync.services.episode_search import EpisodeSearch
from podsync.services.feeds.chapters import ChapterCache
from podsync.services.inbox import Inbox
from podsync.services.listening import ListeningService
from podsync.services.listening_stats import ListeningStats
from podsync.services.opml_io import OpmlService
from podsync.services.player import PlayerSettings
from podsync.services.remote_import.jobs import ImportJobs
from podsync.services.up_next import UpNext
from podsync.services.web_listening import WebListening
from podsync.services.web_sessions import SignedIn, WebSessionService

WEB_SESSIONS = web.AppKey("web_sessions", WebSessionService)
BROWSE = web.AppKey("browse", BrowseService)
LISTENING = web.AppKey("listening", ListeningService)
EPISODE_PAGES = web.AppKey("ui_episode_pages", EpisodePages)
WEB_LISTENING = web.AppKey("ui_web_listening", WebListening)
EPISODE_SEARCH = web.AppKey("ui_episode_search", EpisodeSearch)
LISTENING_STATS = web.AppKey("ui_listening_stats", ListeningStats)
ACCOUNTS = web.AppKey("ui_accounts", AccountService)
OPML = web.AppKey("ui_opml", OpmlService)
IMPORT_JOBS = web.AppKey("ui_import_jobs", ImportJobs)
STYLESHEET = web.AppKey("ui_stylesheet", bytes)
FAVICON = web.AppKey("ui_favicon", bytes)
STATIC = web.AppKey("ui_static", dict[str, bytes])
PLAYER_SETTINGS = web.AppKey("ui_player_settings", PlayerSettings)
CHAPTERS = web.AppKey("ui_chapters", ChapterCache)
SIGNED_IN = web.RequestKey("ui_signed_in", SignedIn)
INBOX = web.AppKey("ui_inbox", Inbox)
UP_NEXT = web.AppKey("ui_up_next", UpNext)
UP_NEXT_SCRIPT = web.AppKey("ui_up_next_script", bytes)
# The count of New episodes the navigation shows (pages only: not JSON, not images).
INBOX_COUNT = web.RequestKey("ui_inbox_count", int)
