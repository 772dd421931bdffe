"""`podsync opml ...`: import and export subscriptions."""

from __future__ import annotations

import click


@click.group()
def opml() -> None:
    """Import or export a user's subscriptions as OPML."""
