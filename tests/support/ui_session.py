"""A person's browser session against a real `podsync serve` (cookies, the CSRF token
of a form's page, post and redirect), and the real `podsync` command in its own
process, for tests that drive a server the way people and admins do."""

from __future__ import annotations

import os
import re
import subprocess

import aiohttp

from podsync.config import Config
from tests.conftest import PASSWORD
from tests.support.server_support import podsync_command

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def cli(config: Config, *args: str, input: str = "") -> str:
    """The real `podsync` command in its own process; its standard output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    done = subprocess.run(
        podsync_command(config, *args),
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Browser:
    """A browser's cookies and forms against the real server (one session each)."""

    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.http = aiohttp.ClientSession(
            cookie_jar=aiohttp.CookieJar(unsafe=True), headers=headers
        )

    async def sign_in(self, name: str, password: str = PASSWORD) -> None:
        async with self.http.post(
            self.base + "/ui/login",
            data={"username": name, "password": password},
            allow_redirects=False,
        ) as response:
            assert response.status == 303, await response.text()

    async def page(self, path: str) -> tuple[int, str]:
        async with self.http.get(self.base + path, allow_redirects=False) as response:
            return response.status, await response.text()

    async def submit(self, form_page: str, action: str, **fields: str) -> int:
        """Post a form of `form_page` (its CSRF token) to `action`; the status."""
        status, text = await self.page(form_page)
        assert status == 200, text
        found = CSRF.search(text)
        assert found is not None, text
        async with self.http.post(
            self.base + action, data={"csrf": found.group(1), **fields}, allow_redirects=False
        ) as response:
            assert response.status in (200, 303), await response.text()
            return response.status

    async def close(self) -> None:
        await self.http.close()


def words(page: str) -> str:
    """A page's text as a person reads it: tags out, blocks apart, spaces collapsed."""
    text = re.sub(r"</?(?:dt|dd|p|h\d|li|tr|td|th|caption)\b[^>]*>", " ", page)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"\s+", " ", text)
