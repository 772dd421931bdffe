"""podsync: a self-hosted podcast subscription sync server (Open Podcast API)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("podsync")
except PackageNotFoundError:  # running from a source tree or a frozen build without metadata
    __version__ = "0.1.0"
