"""`podsync user import-from`: subscriptions and every episode action of an account
on another server, applied with the upload rules; twice adds nothing; a failure half
way is completed by a second run; a wrong remote password changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from click.testing import Result

from podsync.config import Config, load_config
from tests.conftest import MakeConfig
from tests.support.cli_support import add_user, dump, run, stored
from tests.support.remote_peers import (
    FEEDS,
    REMOTE_PASSWORD,
    UNSUBSCRIBED,
    FlakyGpodder,
    NextcloudGpodderSync,
    NotASyncServer,
    actions,
    expected_rows,
    opodsync,
    seed_gpodder,
    stored_actions,
)
from tests.support.server_support import serving

SUBSCRIBED = {(url, None, True) for url in FEEDS if url != UNSUBSCRIBED}


def import_from(config: Config, url: str, *extra: str, password: str = REMOTE_PASSWORD) -> Result:
    return run(
        config,
        "user",
        "import-from",
        "alice",
        url,
        "--username",
        "remote",
        *extra,
        env={"PODSYNC_IMPORT_PASSWORD": password},
    )


def test_an_opodsync_account_arrives_whole_and_a_second_run_adds_nothing(
    config: Config, tmp_path: Path
) -> None:
    add_user(config)
    with opodsync(tmp_path) as base:
        seed_gpodder(base)
        first = import_from(config, base)
        assert first.exit_code == 0, first.output
        assert "(gpodder API)" in first.output
        assert "3 subscriptions on 2 devices, 1 feed unsubscribed there, 40 episode actions" in (
            first.output
        )
        assert "Subscriptions: 3 added, 0 subscribed again, 0 already there, 0 skipped." in (
            first.output
        )
        assert "Episode actions: 40 added, 0 already there, 0 skipped." in first.output
        assert stored(config) == SUBSCRIBED
        assert stored_actions(config.database.path, "alice") == expected_rows()
        second = import_from(config, base)
    assert second.exit_code == 0, second.output
    assert "Subscriptions: 0 added, 0 subscribed again, 3 already there" in second.output
    assert "Episode actions: 0 added, 40 already there, 0 skipped." in second.output
    assert "Nothing new: everything was already here." in second.output
    assert stored_actions(config.database.path, "alice") == expected_rows()


def test_a_wrong_remote_password_exits_non_zero_and_changes_nothing(
    config: Config, tmp_path: Path
) -> None:
    add_user(config)
    before = dump(config)
    with opodsync(tmp_path) as base:
        seed_gpodder(base)
        result = import_from(config, base, password="not-the-password")
    assert result.exit_code == 1, result.output
    assert f"POST {base}/api/2/auth/remote/login.json: HTTP 401" in result.output
    assert "refused user 'remote'" in result.output
    assert "not-the-password" not in result.output
    assert dump(config) == before


def remote_podsync(tmp_path: Path, page_size: int = 7) -> Config:
    """Another podsync's config (its own database), with user `remote`."""
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    toml = remote_dir / "podsync.toml"
    toml.write_text(
        f'[database]\npath = "{remote_dir / "podsync.db"}"\n'
        f"[gpodder]\nepisode_page_size = {page_size}\n[log]\naccess_log = false\n"
    )
    remote = load_config(toml, environ={})
    add_user(remote, "remote", REMOTE_PASSWORD)
    return remote


def test_another_podsync_over_the_gpodder_api_pages_and_arrives_whole(
    config: Config, tmp_path: Path
) -> None:
    add_user(config)
    with serving(remote_podsync(tmp_path), tmp_path / "remote.log") as base:
        seed_gpodder(base)
        first = import_from(config, base, "--api", "gpodder")
        second = import_from(config, base)
    assert first.exit_code == 0, first.output
    # podsync answers since=0 with the list as it is (no removals to replay)
    assert "3 subscriptions on 2 devices, 0 feeds unsubscribed there, 40 episode actions" in (
        first.output
    )
    assert "Episode actions: 40 added, 0 already there, 0 skipped." in first.output
    assert stored(config) == SUBSCRIBED
    assert stored_actions(config.database.path, "alice") == expected_rows()
    assert second.exit_code == 0, second.output
    assert "(gpodder API)" in second.output  # found by asking
    assert "Episode actions: 0 added, 40 already there, 0 skipped." in second.output


def test_another_podsync_over_the_nextcloud_api_arrives_whole(
    config: Config, tmp_path: Path
) -> None:
    add_user(config)
    with serving(remote_podsync(tmp_path), tmp_path / "remote.log") as base:
        seed_gpodder(base)
        first = import_from(config, base, "--api", "nextcloud")
        second = import_from(config, base + "/index.php/apps/gpoddersync")
        refused = import_from(config, base, "--api", "nextcloud", password="wrong-password")
    assert first.exit_code == 0, first.output
    assert "(nextcloud API)" in first.output
    assert "3 subscriptions, 0 feeds unsubscribed there, 40 episode actions." in first.output
    assert "Episode actions: 40 added, 0 already there, 0 skipped." in first.output
    assert stored(config) == SUBSCRIBED
    assert stored_actions(config.database.path, "alice") == expected_rows()
    assert second.exit_code == 0, second.output
    assert "Episode actions: 0 added, 40 already there, 0 skipped." in second.output
    assert refused.exit_code == 1
    assert "/index.php/apps/gpoddersync/subscriptions?since=0: HTTP 401" in refused.output


def test_a_remote_that_drops_the_connection_half_way_is_completed_by_a_second_run(
    config: Config,
) -> None:
    add_user(config)
    with FlakyGpodder(count=40, page=10, fail_at=20) as remote:
        first = import_from(config, remote.base)
        assert first.exit_code == 1, first.output
        call = f"GET {remote.base}/api/2/episodes/remote.json?since=20"
        assert f"The import stopped: {call}: the answer was cut off" in first.output
        assert "Episode actions: 20 added, 0 already there, 0 skipped." in first.output
        assert len(stored_actions(config.database.path, "alice")) == 20
        remote.fail_at = None
        remote.calls.clear()
        second = import_from(config, remote.base)
        third = import_from(config, remote.base)
    assert second.exit_code == 0, second.output
    # It goes on from the page that failed: what was read is not read again.
    assert "Episode actions read from where the import of " in second.output
    assert next(c for c in remote.calls if c.startswith("episodes")) == "episodes since=20"
    assert "Episode actions: 20 added, 0 already there, 0 skipped." in second.output
    assert stored_actions(config.database.path, "alice") == expected_rows()
    assert stored(config) == {(url, None, True) for url in FEEDS[:2]}
    # Once complete, the next import reads everything again (and adds nothing).
    assert third.exit_code == 0, third.output
    assert "Episode actions: 0 added, 40 already there, 0 skipped." in third.output


def test_a_nextcloud_gpodder_sync_account_is_detected_and_arrives_whole(
    config: Config,
) -> None:
    add_user(config)
    plays = {
        (episode, action, at, position, None)
        for episode, action, at, position, _device in expected_rows()
        if action == "play"
    }
    with NextcloudGpodderSync() as remote:
        first = import_from(config, remote.base)  # --api left out: found by asking
        second = import_from(config, remote.base + "/index.php/apps/gpoddersync/")
        refused = import_from(config, remote.base, "--api", "nextcloud", password="wrong-9")
    assert first.exit_code == 0, first.output
    assert "(nextcloud API)" in first.output
    assert remote.calls[0] == "/api/2/auth/remote/login.json"  # redirected to sign in
    assert "2 subscriptions, 1 feed unsubscribed there, 10 episode actions." in first.output
    assert "Episode actions: 10 added, 0 already there, 0 skipped." in first.output
    assert stored(config) == {(url, None, True) for url in FEEDS[:2]}
    assert stored_actions(config.database.path, "alice") == plays
    assert second.exit_code == 0, second.output
    assert "Episode actions: 0 added, 10 already there, 0 skipped." in second.output
    assert refused.exit_code == 1
    assert "/index.php/apps/gpoddersync/subscriptions?since=0: HTTP 401" in refused.output


def test_a_limit_refuses_the_actions_past_it_and_says_which(make_config: MakeConfig) -> None:
    config = make_config(gpodder={"max_episode_actions_per_user": 25})
    add_user(config)
    with FlakyGpodder(count=40, page=10, fail_at=None) as remote:
        result = import_from(config, remote.base)
    assert result.exit_code == 1, result.output
    assert "Episode actions: 20 added, 0 already there, 0 skipped." in result.output
    assert "The import stopped: episode action limit reached" in result.output
    assert "gpodder.max_episode_actions_per_user" in result.output
    assert len(stored_actions(config.database.path, "alice")) == 20


def test_an_unknown_user_is_refused_before_any_password_is_asked(config: Config) -> None:
    add_user(config)
    result = run(config, "user", "import-from", "nobody", "https://example.org", "--username", "x")
    assert result.exit_code == 1
    assert "nobody" in result.output
    assert "Password" not in result.output


@pytest.mark.both_engines
def test_importing_twice_adds_nothing_on_either_engine(config: Config) -> None:
    add_user(config)
    with FlakyGpodder(count=40, page=10, fail_at=None) as remote:
        first = import_from(config, remote.base)
        second = import_from(config, remote.base)
    assert first.exit_code == 0, first.output
    assert "Episode actions: 40 added, 0 already there, 0 skipped." in first.output
    assert second.exit_code == 0, second.output
    assert "Subscriptions: 0 added, 0 subscribed again, 2 already there" in second.output
    assert "Episode actions: 0 added, 40 already there, 0 skipped." in second.output


def test_a_server_that_cannot_page_past_one_second_is_an_error_not_a_silent_end(
    config: Config,
) -> None:
    add_user(config)
    with FlakyGpodder(count=40, page=10, fail_at=None, one_second=True) as remote:
        result = import_from(config, remote.base)
    assert result.exit_code == 1, result.output
    call = f"GET {remote.base}/api/2/episodes/remote.json?since=1000"
    assert f"The import stopped: {call}: the same 10 actions came back again" in result.output
    assert "Episode actions: 10 added, 0 already there, 0 skipped." in result.output


def test_a_server_that_speaks_neither_api_is_named_and_nothing_changes(config: Config) -> None:
    add_user(config)
    before = dump(config)
    with NotASyncServer() as remote:
        result = import_from(config, remote.base + "/podcasts/")
    assert result.exit_code == 1, result.output
    assert "neither API answered" in result.output
    assert f"POST {remote.base}/podcasts/api/2/auth/remote/login.json: HTTP 404" in result.output
    assert f"GET {remote.base}/podcasts/index.php/apps/gpoddersync/subscriptions" in result.output
    assert dump(config) == before


def test_the_password_comes_from_stdin_or_the_environment_never_the_command_line(
    config: Config,
) -> None:
    add_user(config)
    with FlakyGpodder(count=4, page=10, fail_at=None) as remote:
        args = ("user", "import-from", "alice", remote.base, "--username", "remote")
        piped = run(
            config,
            *args,
            "--password-stdin",
            input=REMOTE_PASSWORD + "\n",
            env={"PODSYNC_IMPORT_PASSWORD": None},
        )
        from_env = run(config, *args, env={"PODSYNC_IMPORT_PASSWORD": REMOTE_PASSWORD})
        neither = run(config, *args, env={"PODSYNC_IMPORT_PASSWORD": None})
    assert piped.exit_code == 0, piped.output
    assert "Episode actions: 4 added" in piped.output
    assert from_env.exit_code == 0, from_env.output
    assert "names no setting" not in from_env.output  # podsync's own variable
    assert neither.exit_code == 1
    assert "set PODSYNC_IMPORT_PASSWORD or use --password-stdin" in neither.output
    for result in (piped, from_env):
        assert REMOTE_PASSWORD not in result.output


class _Hostile(FlakyGpodder):
    """Signs in and lists a device, then answers episodes nested 100,000 deep."""

    async def _episodes(self, request: web.Request) -> web.StreamResponse:
        deep = b'{"actions": [' + b"[" * 100_000 + b"]" * 100_000 + b'], "timestamp": 1}'
        return web.Response(body=deep, content_type="application/json")


def test_a_hostile_answer_is_named_not_a_crash(config: Config) -> None:
    add_user(config)
    with _Hostile() as remote:
        result = import_from(config, remote.base)
    assert result.exit_code == 1, result.output
    call = f"GET {remote.base}/api/2/episodes/remote.json?since=0"
    assert f"The import stopped: {call}: not JSON" in result.output
    assert "Traceback" not in result.output


def test_actions_podsync_cannot_store_are_skipped_with_their_reasons(config: Config) -> None:
    add_user(config)
    items = actions(5)
    del items[0]["timestamp"]  # the time of receipt would make it new on every run
    items[1]["timestamp"] = "2999-01-01T00:00:00"  # far ahead of any clock
    items[2]["episode"] = "ftp://media.example.com/x.mp3"
    items[3]["action"] = "listen"
    with FlakyGpodder(page=10, fail_at=None, items=items) as remote:
        first = import_from(config, remote.base)
        second = import_from(config, remote.base)
    assert first.exit_code == 0, first.output
    assert "Episode actions: 1 added, 0 already there, 4 skipped." in first.output
    assert "2 actions skipped: no usable time" in first.output
    assert "1 action skipped: episode is not an http(s) URL" in first.output
    assert "1 action skipped: unknown action" in first.output
    assert "Episode actions: 0 added, 1 already there, 4 skipped." in second.output
    assert len(stored_actions(config.database.path, "alice")) == 1
