"""Entry point of the frozen executable (PyInstaller runs this as __main__)."""

from podsync.cli import main

main()
