"""The AntennaPod replica's cookie jar applies OkHttp's rules, so the replica tests
can catch the cookie traps of gpodder spec section 9."""

from __future__ import annotations

from tests.support.replica_http import OkHttpCookieJar

LOGIN = "http://127.0.0.1:8080/api/2/auth/alice/login.json"
DEVICES = "http://127.0.0.1:8080/api/2/devices/alice.json"


def test_path_slash_cookie_is_sent_everywhere() -> None:
    jar = OkHttpCookieJar()
    jar.store(LOGIN, ["sessionid=abc; Path=/; Max-Age=60; HttpOnly"])
    assert jar.header_for(DEVICES) == "sessionid=abc"


def test_no_path_sticks_to_the_login_directory() -> None:
    jar = OkHttpCookieJar()
    jar.store(LOGIN, ["sessionid=abc; Max-Age=60"])
    assert jar.header_for(DEVICES) is None
    assert jar.header_for("http://127.0.0.1:8080/api/2/auth/alice/x.json") == "sessionid=abc"


def test_secure_cookie_is_not_sent_over_http() -> None:
    jar = OkHttpCookieJar()
    jar.store(LOGIN, ["sessionid=abc; Path=/; Secure"])
    assert jar.header_for(DEVICES) is None
    assert jar.header_for(DEVICES.replace("http:", "https:")) == "sessionid=abc"


def test_a_foreign_or_parent_domain_is_refused() -> None:
    jar = OkHttpCookieJar()
    jar.store(LOGIN, ["sessionid=abc; Path=/; Domain=example.com"])
    assert jar.cookies == {}


def test_an_expires_in_the_past_by_the_phone_clock_drops_it() -> None:
    jar = OkHttpCookieJar(clock_skew=600)  # the phone's clock runs 10 min ahead
    jar.store(LOGIN, ["sessionid=abc; Path=/; Expires=" + _http_date(120)])
    assert jar.header_for(DEVICES) is None
    jar.store(LOGIN, ["sessionid=abc; Path=/; Max-Age=120"])  # relative: fine
    assert jar.header_for(DEVICES) == "sessionid=abc"


def _http_date(seconds_from_now: int) -> str:
    import time
    from email.utils import formatdate

    return formatdate(time.time() + seconds_from_now, usegmt=True)
