"""The admin's page of one user reads that user's row of the Users page alone (the
page of every user counts every subscription of the server), on both engines: the
same counts as that user's row among all, and none for a name nobody has or for
another case of a user's name (the page links to each user by their own)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from podsync.config import Config
from podsync.services.accounts import AccountService
from podsync.services.sync import SyncService
from podsync.storage.engine import create_engine
from tests.conftest import cheap_passwords
from tests.support.sync_helpers import new_subscribes


@pytest.mark.both_engines
async def test_one_users_row_is_their_row_of_the_users_page(
    config: Config, create_user: Any
) -> None:
    alice, bob = (await create_user("alice")).id, (await create_user("bob")).id
    await create_user("carol")
    async with create_engine(config.database) as db:
        sync = SyncService(db, config.sync)
        await sync.apply(alice, "phone", *new_subscribes(0, size=3))
        await sync.apply(bob, "phone", *new_subscribes(1, size=5))
        with contextlib.closing(cheap_passwords(threads=1)) as passwords:
            accounts = AccountService(db, passwords)
            every = {row.name: row for row in await accounts.admin_rows()}
            rows = {name: await accounts.admin_row(name) for name in every}
            nobody = [await accounts.admin_row(name) for name in ("dave", "ALICE")]
    assert rows == every
    assert (every["alice"].subscriptions, every["bob"].subscriptions) == (3, 5)
    assert every["carol"].subscriptions == 0
    assert nobody == [None, None]
