"""podsync: a self-hosted podcast subscription sync server (Open Podcast API)."""

# The one place the version is written: pyproject.toml reads it from here
# (setuptools' dynamic version), packaging/*.sh read it for file and image names.
__version__ = "0.4.0"
