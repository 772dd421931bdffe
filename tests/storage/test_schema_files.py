"""docs/schema-sqlite.sql and docs/schema-postgres.sql are the schema every step
leaves on a new database: bench/schema.py writes them again and nothing differs.
After a schema step, run `python bench/schema.py` (and `--database-url` for
PostgreSQL) and commit the files with the step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.pg_cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
AGAIN = "docs/{name} is not the current schema: run `python bench/schema.py{option}`"


def _write(out: Path, *options: str) -> None:
    argv = [sys.executable, str(ROOT / "bench" / "schema.py"), "--out", str(out), *options]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_sqlite_schema_file_is_current(tmp_path: Path) -> None:
    _write(tmp_path)
    name = "schema-sqlite.sql"
    written = (tmp_path / name).read_text()
    assert "CREATE TABLE users" in written
    assert (ROOT / "docs" / name).read_text() == written, AGAIN.format(name=name, option="")


def test_the_postgres_schema_file_is_current(tmp_path: Path, pg_cluster: Cluster) -> None:
    _write(tmp_path, "--database-url", pg_cluster.new_database())
    name = "schema-postgres.sql"
    written = (tmp_path / name).read_text()
    assert "CREATE TABLE users" in written
    option = " --database-url postgresql://..."
    assert (ROOT / "docs" / name).read_text() == written, AGAIN.format(name=name, option=option)
