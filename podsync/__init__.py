"""podsync: a self-hosted podcast subscription sync server (Open Podcast API)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("podsync")
except PackageNotFoundError:  # a source tree that was never installed: say so, never guess
    __version__ = "0+unknown"
