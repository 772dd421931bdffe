"""`db copy-to` never lets an id be handed out twice (contract section 14): SQLite
never reuses a user id (AUTOINCREMENT keeps the highest one ever issued in
`sqlite_sequence`), so after a move PostgreSQL must not either. Otherwise the id of
the newest deleted user goes to the next new user, and the deleted user's access
token and gpodder cookie (both name the user by id) log in as the new user."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PASSWORD, MakeConfig
from tests.support.cli_support import add_user, run
from tests.support.gpodder_support import basic
from tests.support.http_calls import call
from tests.support.pg_cluster import Cluster
from tests.support.server_support import access_token, serving


def test_a_deleted_users_token_and_cookie_never_name_a_user_created_after_a_move(
    make_config: MakeConfig, pg_cluster: Cluster, tmp_path: Path
) -> None:
    sqlite_config = make_config()
    add_user(sqlite_config, "alice")
    add_user(sqlite_config, "bob")
    with serving(sqlite_config, tmp_path / "sqlite.log") as base:
        token = access_token(base, "bob", PASSWORD)
        login = call("POST", f"{base}/api/2/auth/bob/login.json", headers=basic("bob"))
        assert login.status == 200
        cookie = login.headers["Set-Cookie"].split(";")[0]
        seen = call("GET", f"{base}/api/2/devices/bob.json", headers={"Cookie": cookie})
        assert seen.status == 200
    deleted = run(sqlite_config, "user", "delete", "bob", "--yes")
    assert deleted.exit_code == 0, deleted.output

    url = pg_cluster.new_database()
    copied = run(sqlite_config, "db", "copy-to", url)
    assert copied.exit_code == 0, copied.output
    pg_config = make_config(database={"url": url})
    add_user(pg_config, "carol")  # the first user created after the move

    with serving(pg_config, tmp_path / "pg.log") as base:
        bearer = {"Authorization": f"Bearer {token}"}
        mine = call("GET", f"{base}/api/v1/subscriptions", headers=bearer)
        assert mine.status == 401, mine.body
        as_carol = call("GET", f"{base}/api/2/devices/carol.json", headers={"Cookie": cookie})
        assert as_carol.status == 401, as_carol.body
        # carol herself is fine, and alice's id was carried over unchanged.
        assert call("GET", f"{base}/api/2/devices/carol.json", headers=basic("carol")).status == 200
        assert access_token(base, "alice", PASSWORD)
