"""`podsync user add --admin` and `podsync user admin NAME [--revoke]`: who may use
the web UI's Users page. Nobody is an admin by default."""

from __future__ import annotations

import asyncio

from podsync.config import Config
from tests.conftest import PASSWORD, run_cli, with_accounts


def is_admin(config: Config, name: str) -> bool:
    user = asyncio.run(with_accounts(config, lambda accounts: accounts.get_user(name)))
    return bool(user.admin)


def test_admin_flag_from_the_cli(config: Config) -> None:
    added = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    assert added.exit_code == 0 and added.output.endswith("user alice created\n")
    assert not is_admin(config, "alice")  # the first user is no admin either
    added = run_cli(
        config, "user", "add", "root", "--admin", "--password-stdin", input=PASSWORD + "\n"
    )
    assert added.output == "user root created (an admin)\n"
    assert is_admin(config, "root")
    made = run_cli(config, "user", "admin", "alice")
    assert (made.exit_code, made.output) == (0, "user alice is an admin\n")
    assert is_admin(config, "alice")
    revoked = run_cli(config, "user", "admin", "alice", "--revoke")
    assert (revoked.exit_code, revoked.output) == (0, "user alice is no longer an admin\n")
    assert not is_admin(config, "alice")
    missing = run_cli(config, "user", "admin", "ghost")
    assert missing.exit_code == 1 and "no user named 'ghost'" in missing.output
