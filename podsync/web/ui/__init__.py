"""The web UI for people, under `/ui/` (server-rendered pages)."""
