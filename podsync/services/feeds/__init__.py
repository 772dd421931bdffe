"""The feed fetcher: titles, websites, artwork and episode titles of the feeds people
subscribe to (`[feeds] fetch_metadata`). `addresses` keeps it off private networks,
`http` fetches one feed within its limits, `parse` reads it, `fetcher` runs the
background task. `parse` (feedparser, an XML and an HTML parser: about 2 MB) is
loaded with the first feed to read, not by a server that has none to read yet."""

from __future__ import annotations

import time

# A feed's items are read within this long, checked between items (a thread cannot be
# stopped in the middle of one; `notes` bounds what one item costs).
PARSE_DEADLINE_S = 5.0


class NotAFeed(ValueError):
    """The body is not an RSS or Atom feed."""


class TooSlowToRead(NotAFeed):
    """Reading the feed's items took past its deadline."""


class Deadline:
    """When the reading of one feed must end (`time.monotonic`), checked between its
    items."""

    def __init__(self, seconds: float = PARSE_DEADLINE_S) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def check(self) -> None:
        """TooSlowToRead once the deadline has passed."""
        if time.monotonic() > self.ends:
            raise TooSlowToRead(
                f"reading the feed took longer than {self.seconds:g} s; podsync reads no more of it"
            )
