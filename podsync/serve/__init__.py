"""The process side of `podsync serve`: the listening sockets, signals, a reload,
and the fork of several workers. Above web/, which it runs."""

# The debugging aid's switch: a directory for heap reports (serve/heap_report.py,
# loaded only when it is set).
HEAP_REPORT_DIR_ENV = "PODSYNC_DEBUG_HEAP_DIR"
