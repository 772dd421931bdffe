"""GET /: a page for the person setting up their apps (contract section 12).

One self-contained HTML document: inline CSS, no script, nothing from another
host (a Content-Security-Policy says so to the browser too). Every value that
comes from the configuration or the request is escaped.
"""

from __future__ import annotations

import ipaddress
import re
from html import escape
from urllib.parse import urlsplit

from aiohttp import web

from podsync import __version__
from podsync.numbers import parse_int
from podsync.web.keys import CONFIG, FROM_TRUSTED_PROXY

API_DOCUMENT = "/api/v1/openapi.json"
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def server_address(request: web.Request) -> str:
    """The address to type into an app: `server.public_url`, else this request's
    own origin; a proxy's X-Forwarded-Proto/-Host/-Port/-Prefix count only from a
    trusted proxy (the port when the forwarded host names none and it is not the
    scheme's; the prefix when it is a plain path such as `/podsync`)."""
    public_url: str = request.app[CONFIG].server.public_url
    if public_url:
        return public_url.rstrip("/")
    scheme, host, prefix = request.scheme, request.host, ""
    if request.get(FROM_TRUSTED_PROXY, False):
        proto = _first(request, "X-Forwarded-Proto").lower()
        if proto in ("http", "https"):
            scheme = proto
        host = _first(request, "X-Forwarded-Host") or host
        # A port that is not one ("²", "0", "99999") is ignored, like a missing one.
        port = parse_int(_first(request, "X-Forwarded-Port"), 1, 65535)
        has_port = host.rpartition("]")[2].count(":") > 0  # "[::1]:8080", "host:8080"
        if port is not None and port != DEFAULT_PORTS[scheme] and not has_port:
            host = f"{host}:{port}"
        forwarded_prefix = _first(request, "X-Forwarded-Prefix").rstrip("/")
        if _PREFIX.fullmatch(forwarded_prefix):
            prefix = forwarded_prefix
    # aiohttp keeps a header's bytes that are not UTF-8 as lone surrogates, which no
    # page can be encoded with: show each as U+FFFD.
    address = f"{scheme}://{host}{prefix}"
    return address.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


DEFAULT_PORTS = {"http": 80, "https": 443}
# A path prefix a proxy may say it serves podsync under: plain path segments.
_PREFIX = re.compile(r"(/[A-Za-z0-9._~-]+)+", re.ASCII)


def _first(request: web.Request, header: str) -> str:
    return request.headers.get(header, "").split(",")[0].strip()


def is_loopback(address: str) -> bool:
    """Whether the address names the server machine itself (from a phone: the phone)."""
    try:
        host = urlsplit(address).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def home(request: web.Request) -> web.Response:
    address = server_address(request)
    gpodder_enabled = request.app[CONFIG].gpodder.enabled
    return web.Response(
        text=render(address, gpodder_enabled),
        content_type="text/html",
        charset="utf-8",
        headers={
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        },
    )


def render(address: str, gpodder_enabled: bool = True) -> str:
    a = escape(address)
    try:
        at_root = urlsplit(address).path in ("", "/")
    except ValueError:  # a Host header urllib cannot read ("[::1", say): no path in it
        at_root = True
    notes = _LOOPBACK_NOTE if is_loopback(address) else ""
    if address.lower().startswith("http://"):
        notes += _PLAIN_HTTP_NOTE
    apps = _GPODDER_APPS.format(address=a) if gpodder_enabled else _GPODDER_OFF
    if gpodder_enabled and not at_root:
        apps += _SUBPATH_NOTE
    nextcloud = _NEXTCLOUD_APPS.format(address=a) if gpodder_enabled else ""
    return _PAGE.format(
        version=escape(__version__),
        address=a,
        notes=notes,
        apps=apps,
        nextcloud=nextcloud,
        api=a + API_DOCUMENT,
        api_path=API_DOCUMENT,
    )


_GPODDER_APPS = """
<section>
  <h2>AntennaPod <small>Android</small></h2>
  <ol>
    <li>Settings &rsaquo; Synchronization &rsaquo; Choose synchronization provider
      &rsaquo; <b>gpodder.net</b>.</li>
    <li>Server: <code>{address}</code></li>
    <li>Your podsync username and password.</li>
    <li>Pick this phone from the device list, or name a new device.</li>
  </ol>
</section>
<section>
  <h2>gPodder <small>desktop</small></h2>
  <ol>
    <li>Podcasts &rsaquo; Preferences &rsaquo; <b>gpodder.net</b> tab; tick
      &ldquo;Synchronize subscriptions and episode actions&rdquo;.</li>
    <li>Server: <code>{address}</code></li>
    <li>Username, password, and a device name for this computer.</li>
  </ol>
</section>
<section>
  <h2>Kasts <small>Linux, Android</small></h2>
  <ol>
    <li>Settings &rsaquo; Synchronization &rsaquo; Login; provider
      <b>gpodder.net</b>.</li>
    <li>Tick <b>Use custom server</b>; Hostname: <code>{address}</code></li>
    <li>Username and password, then pick or create a device. Before Kasts 25.08,
      answer <b>Cancel</b> when it asks whether to sync all subscriptions across
      all devices.</li>
  </ol>
</section>"""

_NEXTCLOUD_APPS = """
<h3>Nextcloud &ldquo;GPodder Sync&rdquo; apps</h3>
<div class="apps">
<section>
  <h2>AntennaPod <small>Nextcloud option</small></h2>
  <ol>
    <li>Settings &rsaquo; Synchronization &rsaquo; Choose synchronization provider
      &rsaquo; <b>Nextcloud</b>.</li>
    <li>Server address: <code>{address}</code>, then <b>Login</b>.</li>
    <li>In the browser it opens: sign in, then <b>Grant access</b>.</li>
  </ol>
</section>
<section>
  <h2>Kasts <small>GPodder Nextcloud provider</small></h2>
  <ol>
    <li>Settings &rsaquo; Synchronization &rsaquo; Login; provider
      <b>GPodder Nextcloud</b>.</li>
    <li>Hostname: <code>{address}</code></li>
    <li>Your username and an app password (web UI &rsaquo; Account &rsaquo; App
      passwords), or your password.</li>
  </ol>
</section>
<section>
  <h2>Cardo, GNOME Podcasts and other GPodder Sync apps</h2>
  <p>Where they ask for a Nextcloud: <code>{address}</code>, your username and an app
  password.</p>
</section>
</div>"""

_GPODDER_OFF = """
<section>
  <h2>AntennaPod, gPodder, Kasts, Nextcloud GPodder Sync apps</h2>
  <p>The gpodder.net-compatible API (and the Nextcloud one with it) is switched off on this server
  (<code>gpodder.enabled = false</code>); ask its admin.</p>
</section>"""

_LOOPBACK_NOTE = """
<p class="warn">This address is the server machine itself: a phone cannot reach it.
On the server, set <code>server.host = "0.0.0.0"</code> (listen on the network) and
open this page at the machine's network address, or put podsync behind HTTPS and
set <code>server.public_url</code> to the address your apps should use.</p>"""

_PLAIN_HTTP_NOTE = """
<p class="note">This is plain http. AntennaPod assumes https: type <code>http://</code>
in front of the address. Passwords cross the network unencrypted, so keep it to
your home network.</p>"""

_SUBPATH_NOTE = """
<p class="note">This server lives under a path. AntennaPod releases older than
its fix of November 2025 ignore the path and call the root of the host: for them,
serve podsync at the root of a host.</p>"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>podsync</title>
<style>
:root {{ --fg: #1d2330; --muted: #5b6475; --bg: #f6f7fb; --card: #fff;
  --line: #dde1ea; --accent: #2f5bd3; --code: #eef1f8; }}
@media (prefers-color-scheme: dark) {{
  :root {{ --fg: #e6e9ef; --muted: #a3abbb; --bg: #141821; --card: #1c2230;
    --line: #2d3546; --accent: #8fb0ff; --code: #262e3f; }} }}
* {{ box-sizing: border-box; }}
body {{ margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }}
main {{ max-width: 46rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }}
header h1 {{ margin: 0; font-size: 1.9rem; letter-spacing: -0.02em; }}
header p {{ margin: 0.2rem 0 0; color: var(--muted); }}
.version {{ font-size: 0.95rem; font-weight: 500; color: var(--muted); }}
.address {{ margin: 1.5rem 0; padding: 1rem 1.1rem; background: var(--card);
  border: 1px solid var(--line); border-left: 4px solid var(--accent);
  border-radius: 10px; }}
.address span {{ display: block; font-size: 0.9rem; color: var(--muted); }}
.address output {{ display: block; margin-top: 0.3rem; font: 600 1.25rem/1.3
  ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  overflow-wrap: anywhere; user-select: all; }}
h2 {{ font-size: 1.15rem; margin: 0 0 0.4rem; }}
h2 small {{ font-weight: 400; color: var(--muted); font-size: 0.85rem; }}
section {{ background: var(--card); border: 1px solid var(--line);
  border-radius: 10px; padding: 1rem 1.1rem; margin: 0 0 1rem; }}
.apps {{ display: grid; gap: 1rem; grid-template-columns: 1fr; }}
.apps section {{ margin: 0; }}
@media (min-width: 52rem) {{ main {{ max-width: 60rem; }}
  .apps {{ grid-template-columns: repeat(3, 1fr); }} }}
ol {{ margin: 0; padding-left: 1.3rem; }}
section p {{ margin: 0; }}
li {{ margin: 0.25rem 0; }}
code {{ background: var(--code); padding: 0.1rem 0.35rem; border-radius: 5px;
  font: 0.92em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  overflow-wrap: anywhere; }}
a {{ color: var(--accent); overflow-wrap: anywhere; }}
.note {{ color: var(--muted); font-size: 0.92rem; }}
.warn {{ padding: 0.7rem 1rem; border-radius: 10px; border: 1px solid #d9a400;
  background: color-mix(in srgb, #ffd24d 18%, var(--card)); }}
h3 {{ font-size: 1.05rem; margin: 2rem 0 0.8rem; }}
.signin {{ margin-top: 0.6rem; }}
.signin a {{ font-weight: 600; }}
footer {{ margin-top: 2rem; color: var(--muted); font-size: 0.9rem; }}
</style>
</head>
<body>
<main>
<header>
  <h1>podsync <span class="version">{version}</span></h1>
  <p>Keeps your podcast subscriptions in sync between your apps.</p>
  <p class="signin"><a href="/ui/">Sign in</a> to see and manage what your apps
  synced.</p>
</header>
<div class="address">
  <span>Server address to type into your app</span>
  <output>{address}</output>
</div>{notes}
<p>You need a username and password: the admin of this server creates them with
<code>podsync user add NAME</code>. Apps of both families below sync the same
account.</p>
<h3>gpodder.net-compatible apps</h3>
<div class="apps">{apps}
</div>{nextcloud}
<h3>Open Podcast API clients</h3>
<section>
  <p>Server: <code>{address}</code>. The API is described in
  <a href="{api_path}">{api}</a>; log in with <code>POST /auth/login</code>.</p>
</section>
<footer>podsync {version} &middot; <a href="{api_path}">API document</a>
&middot; <a href="/healthz">health</a></footer>
</main>
</body>
</html>
"""
