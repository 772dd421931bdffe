"""Contract section 8, transport: podsync serves HTTPS itself when tls_cert and
tls_key are set."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest

from podsync import __version__
from podsync.serve.server import start
from tests.conftest import MakeConfig


def _self_signed(directory: Path) -> Path:
    """cert.pem and key.pem for 127.0.0.1 in `directory`; returns the certificate."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert


async def test_serves_https_with_the_configured_certificate(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    cert = _self_signed(tmp_path)
    config = make_config(server={"port": 0, "tls_cert": "cert.pem", "tls_key": "key.pem"})
    runner, urls = await start(config)
    try:
        [url] = urls
        assert url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=str(cert))
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/healthz", ssl=trusted) as response:
                assert response.status == 200
                assert await response.json() == {"status": "ok", "version": __version__}
            plain = url.replace("https://", "http://")
            with pytest.raises(aiohttp.ClientError):
                async with session.get(f"{plain}/healthz") as response:
                    await response.read()
    finally:
        await runner.cleanup()


async def test_unreadable_certificate_fails_start(make_config: MakeConfig, tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("not a certificate")
    (tmp_path / "key.pem").write_text("not a key")
    config = make_config(server={"port": 0, "tls_cert": "cert.pem", "tls_key": "key.pem"})
    with pytest.raises(ssl.SSLError):
        await start(config)
