"""podsync behind real nginx and Caddy, each run with the configuration file the
documentation gives (packaging/nginx.conf, packaging/Caddyfile): only the host name,
the ports and the certificate paths are put in, and each substitution must match,
so the files cannot drift from what is tested. Through each proxy, over TLS: the
home page shows the address the client used, an AntennaPod-style login and sync
works between two devices, the session cookie is Secure, /metrics stays hidden.

Skips with one line when nginx or caddy is not installed (Debian: nginx, caddy)."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support import replica_http
from tests.support.antennapod_replica import AntennaPod

pytestmark = pytest.mark.proxy

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"
A, B = "https://a.example/feed.xml", "https://b.example/feed.xml"
START_TIMEOUT = 30.0


@dataclass
class Proxy:
    base: str  # https://localhost:PORT
    tls: ssl.SSLContext
    process: subprocess.Popen[bytes]
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def substitute(text: str, old: str, new: str, count: int = 1) -> str:
    """Replace `old`, which the documented file must hold exactly `count` times."""
    assert text.count(old) == count, f"the documented config no longer has {old!r} x{count}"
    return text.replace(old, new)


def wait_for_tls(
    port: int, context: Callable[[], ssl.SSLContext], proc: subprocess.Popen[bytes], log: Path
) -> ssl.SSLContext:
    deadline = time.monotonic() + START_TIMEOUT
    last: Exception | None = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the proxy exited:\n{log.read_text(errors='replace')}"
        try:
            tls = context()
            with (
                socket.create_connection(("127.0.0.1", port), timeout=2) as raw,
                tls.wrap_socket(raw, server_hostname="localhost"),
            ):
                return tls
        except (OSError, ssl.SSLError) as exc:
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"the proxy did not answer TLS on {port}: {last}\n{log.read_text()}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def start_nginx(directory: Path, upstream: int) -> Proxy:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                       else None)  # fmt: skip
    if nginx is None or shutil.which("openssl") is None:
        pytest.skip("nginx not installed (Debian: apt-get install nginx openssl)")
    directory.mkdir()
    cert, key = self_signed(directory)
    port = free_port()
    site = (PACKAGING / "nginx.conf").read_text()
    site = substitute(site, "pods.example.org", "localhost", count=4)
    site = substitute(site, "listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    site = substitute(
        site, "listen [::]:443 ssl;", f"listen [::1]:{port} ssl;" if ipv6_loopback() else ""
    )
    site = substitute(site, "/etc/letsencrypt/live/localhost/fullchain.pem", str(cert))
    site = substitute(site, "/etc/letsencrypt/live/localhost/privkey.pem", str(key))
    site = substitute(site, "http://127.0.0.1:8080", f"http://127.0.0.1:{upstream}")
    (directory / "site.conf").write_text(site)
    temp = "".join(
        f"    {kind}_temp_path {directory / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (directory / "main.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\nworker_processes 1;\npid {directory / 'nginx.pid'};\n"
        f"error_log {directory / 'error.log'} info;\n"
        "events { worker_connections 64; }\n"
        f"http {{\n    access_log {directory / 'access.log'};\n{temp}"
        f"    include {directory / 'site.conf'};\n}}\n"
    )
    log = directory / "nginx.out"
    args = [nginx, "-p", str(directory), "-e", str(directory / "error.log"),
            "-c", str(directory / "main.conf")]  # fmt: skip
    check = subprocess.run([*args, "-t"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        tls = wait_for_tls(port, lambda: ssl.create_default_context(cafile=str(cert)), proc, log)
    except BaseException:
        stop(proc)
        raise
    return Proxy(f"https://localhost:{port}", tls, proc, directory / "error.log")


def start_caddy(directory: Path, upstream: int) -> Proxy:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy not installed (Debian: apt-get install caddy)")
    directory.mkdir()
    port, http_port = free_port(), free_port()
    site = (PACKAGING / "Caddyfile").read_text()
    site = substitute(site, "pods.example.org {", "localhost {")
    site = substitute(site, "reverse_proxy 127.0.0.1:8080", f"reverse_proxy 127.0.0.1:{upstream}")
    # Global options for a test run: no admin port, its own local CA instead of an
    # ACME one, nothing installed into the system's trust store, loopback ports.
    options = (
        "{\n\tadmin off\n\tlocal_certs\n\tskip_install_trust\n"
        "\tauto_https disable_redirects\n\tdefault_bind 127.0.0.1\n"
        f"\thttp_port {http_port}\n\thttps_port {port}\n}}\n\n"
    )
    caddyfile = directory / "Caddyfile"
    caddyfile.write_text(options + site)
    home = directory / "home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    log = directory / "caddy.out"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [caddy, "run", "--config", str(caddyfile), "--adapter", "caddyfile"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    root = home / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    try:
        tls = wait_for_tls(port, lambda: ssl.create_default_context(cafile=str(root)), proc, log)
    except BaseException:
        stop(proc)
        raise
    return Proxy(f"https://localhost:{port}", tls, proc, log)


STARTERS = {"nginx": start_nginx, "caddy": start_caddy}


@pytest.fixture
def config(make_config: MakeConfig) -> Config:
    """As packaging/podsync.toml: believe the proxy on the loopback; metrics on."""
    return make_config(server={"trusted_proxies": ["127.0.0.1", "::1"], "metrics": True})


@pytest.fixture(params=sorted(STARTERS))
def proxy(
    request: pytest.FixtureRequest,
    config: Config,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Proxy, ServeProcess]]:
    server = serve_process(config)
    started = STARTERS[request.param](tmp_path / request.param, server.port)
    monkeypatch.setattr(replica_http, "TLS_CONTEXT", started.tls)
    try:
        yield started, server
    finally:
        stop(started.process)


def get(url: str, tls: ssl.SSLContext | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10, context=tls) as answer:  # noqa: S310
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(errors="replace")


def test_home_page_shows_the_address_the_client_used(
    proxy: tuple[Proxy, ServeProcess],
) -> None:
    front, server = proxy
    status, page = get(front.base + "/", front.tls)
    assert status == 200, page
    # The scheme, host and port the client typed, from X-Forwarded-Proto/-Host/-Port;
    # not podsync's own http://127.0.0.1:PORT.
    assert f"<output>{front.base}</output>" in page
    assert server.url not in page
    assert "http://" not in page.split("<output>")[1].split("</output>")[0]


def test_antennapod_login_and_sync_between_two_devices(
    proxy: tuple[Proxy, ServeProcess],
) -> None:
    front, _ = proxy
    phone = AntennaPod(front.base, "alice", PASSWORD, "pixel")
    phone.setup("Pixel")
    # Over https (X-Forwarded-Proto from a trusted proxy) the session cookie is Secure,
    # and the app, which only sends Basic on login.json, keeps using it.
    assert phone.jar.cookies["sessionid"].secure
    phone.subscribe(A)
    phone.subscribe(B)
    phone.play(A, "https://a.example/1.mp3", 120, "2026-02-03T04:05:06")
    phone.sync()

    tablet = AntennaPod(front.base, "alice", PASSWORD, "tablet")
    tablet.setup("Tablet")
    tablet.sync()
    assert sorted(tablet.feeds) == [A, B]
    assert [(a["episode"], a["position"]) for a in tablet.received_actions] == [
        ("https://a.example/1.mp3", 120)
    ]
    tablet.unsubscribe(B)
    tablet.sync()
    phone.sync()
    assert phone.feeds == [A]
    # Every call went through the proxy with the session, never another login failure.
    assert phone.calls.count("POST /api/2/auth/alice/login.json") == 3


def test_metrics_are_kept_behind_the_proxy(proxy: tuple[Proxy, ServeProcess]) -> None:
    front, server = proxy
    assert get(server.url + "/metrics")[0] == 200  # on the loopback, for Prometheus
    assert get(front.base + "/metrics", front.tls)[0] == 404
