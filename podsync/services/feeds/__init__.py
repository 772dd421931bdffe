"""The feed fetcher: titles, websites, artwork and episode titles of the feeds people
subscribe to (`[feeds] fetch_metadata`). `addresses` keeps it off private networks,
`http` fetches one feed within its limits, `parse` reads it, `fetcher` runs the
background task. `parse` (feedparser, an XML and an HTML parser: about 2 MB) is
loaded with the first feed to read, not by a server that has none to read yet."""


class NotAFeed(ValueError):
    """The body is not an RSS or Atom feed."""
