"""The gpodder layer's key: its services, opened with its routes (web/gpodder/routes.py)."""

from __future__ import annotations

from aiohttp import web

from podsync.services.gpodder import Gpodder

GPODDER: web.AppKey[Gpodder] = web.AppKey("gpodder")
