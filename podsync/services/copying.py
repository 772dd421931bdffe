"""Moving an instance between engines: every row of the source, in one snapshot,
into an empty target, in one transaction (all of it lands, or none)."""

from __future__ import annotations

from podsync.errors import Conflict
from podsync.storage.engine import Engine
from podsync.store import copy


async def copy_database(source: Engine, target: Engine) -> dict[str, int]:
    """Copy every table of `source` into the empty `target`; rows copied per table."""
    counts: dict[str, int] = {}
    async with source.snapshot(threaded=True) as src, target.write() as dst:
        if not await copy.is_empty(dst):
            raise Conflict(
                f"{target.path} already holds users or subscriptions; "
                "copy-to only fills an empty database"
            )
        for table in await copy.tables_in_order(src):
            names = await copy.columns(src, table)
            # The migrations seed some rows (the change counter): the source's win.
            await copy.clear(dst, table)
            counts[table] = 0
            async for rows in copy.read_chunks(src, table, names):
                await copy.write_rows(dst, table, names, rows)
                counts[table] += len(rows)
        await copy.advance_identities(dst, await copy.issued_ids(src))
    async with target.read() as dst:
        await copy.analyse(dst, list(counts))
    return counts
