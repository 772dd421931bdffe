"""The storage engines: what the store sees of a database (`engine`), SQLite
(`sqlite`, `sqlite_connection`) and PostgreSQL (`postgres`), the faults both map to
503 (`errors`), their schema steps (`migrations`) and SQLite file upkeep
(`maintenance`). The SQL of podsync's tables is in `podsync.store`."""
