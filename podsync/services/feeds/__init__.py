"""The opt-in feed fetcher: titles, websites, artwork and episode titles of the feeds
people subscribe to (`[feeds] fetch_metadata`). `addresses` keeps it off private
networks, `http` fetches one feed within its limits, `parse` reads it, `fetcher`
runs the background task."""
