"""Refusals say no more than they must (contract section 17): an address refused to
a non-admin's Subscribe or import form is "not allowed", never which private address
a name resolves to; an admin sees the detail and the log has it; the refusals count
toward the person's fetches a minute, like the fetches they stand for. Through a real
`podsync serve` with the address checks on (no private addresses)."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlencode

import pytest

from podsync.config import Config
from podsync.services.person_fetches import FETCHES_PER_USER
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.gpodder_support import Answer, call
from tests.support.ui_session import cli
from tests.ui.test_subscribe_fetch_limits import FORM, sign_in, subscribe

pytestmark = pytest.mark.both_engines
PRIVATE = "http://localhost:9/show.xml"  # localhost resolves to 127.0.0.1 (and ::1)


@pytest.fixture
def server(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> tuple[Config, ServeProcess]:
    config = make_config(feeds={"fetch_metadata": True}, log={"level": "info"})
    cli(config, "user", "add", "root", "--admin", "--password-stdin", input=PASSWORD + "\n")
    return config, serve_process(config)


def podcast_page(base: str, session: tuple[str, str], answer: Answer) -> str:
    assert answer.status == 303, answer.body[-500:]
    location = answer.headers["Location"]
    assert re.fullmatch(r"/ui/podcasts/[0-9a-f-]+\?done=unreachable", location), location
    return call(base, "GET", location, Cookie=session[0]).body.decode()


def import_from(base: str, session: tuple[str, str], url: str) -> Answer:
    cookie, csrf = session
    form = {"csrf": csrf, "url": url, "username": "me", "password": "secret", "api": ""}
    return call(base, "POST", "/ui/import-from", urlencode(form).encode(), **FORM, Cookie=cookie)


def test_a_refused_address_is_not_allowed_for_others_and_in_full_for_the_admin(
    server: tuple[Config, ServeProcess],
) -> None:
    _, process = server
    alice, root = sign_in(process.url, "alice"), sign_in(process.url, "root")
    page = podcast_page(process.url, alice, subscribe(process.url, alice, PRIVATE))
    assert "refused: the address is not allowed" in page
    assert "127.0.0.1" not in page and "resolves" not in page
    page = podcast_page(process.url, root, subscribe(process.url, root, PRIVATE))
    assert "localhost resolves to no public address (" in page and "127.0.0.1" in page
    # The import form: not allowed, and no more.
    answer = import_from(process.url, alice, "http://localhost:9")
    assert answer.status == 403, answer.body[-800:]
    text = answer.body.decode()
    assert "This address is not allowed." in text
    assert "127.0.0.1" not in text and "resolves" not in text and "private" not in text
    # The log has the detail of both.
    log = process.output()
    assert "a feed address to subscribe to was refused: refused: localhost resolves" in log
    assert "import refused: " in log and "localhost resolves to no public address" in log


def test_refusals_count_toward_a_persons_fetches_a_minute(
    server: tuple[Config, ServeProcess],
) -> None:
    """The finding: 26 refusals in a row on the import form, none throttled."""
    _, process = server
    alice = sign_in(process.url, "alice")
    assert subscribe(process.url, alice, PRIVATE).status == 303  # one
    for n in range(FETCHES_PER_USER - 1):
        assert import_from(process.url, alice, f"http://localhost:{10 + n}").status == 403, n
    past = import_from(process.url, alice, "http://localhost:9")
    assert past.status == 429, past.body[-800:]
    assert 1 <= int(past.headers["Retry-After"]) <= 60
    assert subscribe(process.url, alice, "http://localhost:8/other.xml").status == 429
    # Another person has a bound of their own.
    assert import_from(process.url, sign_in(process.url, "bob"), "http://localhost:9").status == 403
