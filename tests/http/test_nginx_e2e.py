"""Behind a real nginx with TLS (issue 29): Debian's nginx, run with the site in
`deploy/nginx-licore.conf` (only its ports, upstream and certificate paths changed), in front
of a real `licore serve` that trusts it (`LICORE_TRUSTED_PROXIES=127.0.0.1/32`), with a
certificate authority and a server certificate this test makes.

Clients connect from other loopback addresses (127.0.0.2, 127.0.0.3), so nginx sees each as
its own client and licore sees only nginx.

nginx is installed with apt when it is missing and the tests run as root, as the browser
tests install Chromium. With CI=true this test never skips."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from licore.services.signin import FAILURE_WINDOW, FAILURES_PER_NAME_AND_SOURCE, PACE_WINDOW
from tests.browser.site import add_person
from tests.conftest import IN_CI
from tests.http.e2e import license_key, owner_key, setup_people
from tests.http.test_builds_e2e import file_of, upload
from tests.http.test_runtime_e2e import ALL, v1
from tests.http.test_trusted_proxies_e2e import LIMIT
from tests.support.locks import exclusive
from tests.support.models import product_model
from tests.support.server import Server, free_port, running_server

NGINX = Path("/usr/sbin/nginx")
INSTALL = "apt-get update && apt-get install -y nginx"
SITE = Path(__file__).resolve().parents[2] / "deploy" / "nginx-licore.conf"


def _install_nginx() -> str:
    """Try apt as root; what went wrong, or "" when nginx is there."""
    if NGINX.exists():
        return ""
    with exclusive("apt-get"):
        if NGINX.exists():  # another test worker installed it while this one waited
            return ""
        if os.geteuid() != 0:
            return f"{NGINX} is missing and the tests are not root; run: sudo sh -c '{INSTALL}'"
        done = subprocess.run(["sh", "-c", INSTALL], capture_output=True, text=True,
                              timeout=1800, check=False,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if done.returncode != 0 or not NGINX.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return f"`{INSTALL}` failed (exit {done.returncode}): {' | '.join(tail)}"
    # Debian's package starts a system nginx on port 80; this test runs its own.
    subprocess.run(["sh", "-c", "service nginx stop || true"], capture_output=True,
                   timeout=60, check=False)
    return ""


def _certificates(folder: Path) -> Path:
    """A certificate authority (its certificate written to ca.pem, returned) and a server
    certificate for 127.0.0.1 it signed (server.pem, server.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "licore test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (folder / "server.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (folder / "server.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return folder / "ca.pem"


def _site(folder: Path, licore_port: int, http_port: int, https_port: int,
          data_dir: Path | None = None) -> str:
    """The deployed site with this machine's ports, upstream, certificates and licore's
    data folder (the test's folder where no licore's files are served)."""
    data_dir = folder if data_dir is None else data_dir
    text = SITE.read_text()
    swaps = [("server 127.0.0.1:8000;", f"server 127.0.0.1:{licore_port};"),
             ("/var/lib/licore/licore-data/update-files/", f"{data_dir}/update-files/"),
             ("listen 80;", f"listen 127.0.0.1:{http_port};"),
             ("listen 443 ssl http2;", f"listen 127.0.0.1:{https_port} ssl http2;"),
             ("/etc/letsencrypt/live/licore.example.com/fullchain.pem",
              str(folder / "server.pem")),
             ("/etc/letsencrypt/live/licore.example.com/privkey.pem",
              str(folder / "server.key"))]
    for old, new in swaps:
        assert old in text, f"deploy/nginx-licore.conf no longer has {old!r}"
        text = text.replace(old, new)
    # The machine may have no IPv6; the IPv6 listeners are the IPv4 ones again.
    return "\n".join(line for line in text.splitlines() if "listen [::]" not in line)


def _main_config(folder: Path) -> str:
    temp = "\n".join(f"  {kind}_temp_path {folder / kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"user root;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'};\nevents {{ worker_connections 128; }}\n"
            f"http {{\n  access_log off;\n{temp}\n  include {folder / 'site.conf'};\n}}\n")


class Proxy:
    def __init__(self, url: str, ca: Path) -> None:
        self.url = url
        self.ca = ca

    def client(self, source: str) -> httpx.Client:
        """A client connecting from `source`, a loopback address of its own."""
        context = ssl.create_default_context(cafile=str(self.ca))
        transport = httpx.HTTPTransport(verify=context, local_address=source)
        return httpx.Client(base_url=self.url, transport=transport)


@pytest.fixture(scope="module")
def licore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('nginx-db') / 'licore.db'}"
    with running_server(url, LICORE_TRUSTED_PROXIES="127.0.0.1/32",
                        LICORE_RUNTIME_IP_RATE_LIMIT=str(LIMIT),
                        LICORE_RUNTIME_KEY_RATE_LIMIT="100000",
                        LICORE_UPDATE_FILES_ACCEL="/_licore_update_files/") as server:
        yield server


@pytest.fixture(scope="module")
def proxy(licore: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    problem = _install_nginx()
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true and Debian's nginx is not available: {problem}")
        pytest.skip(f"Debian's nginx is not available: {problem}")
    folder = tmp_path_factory.mktemp("nginx")
    ca = _certificates(folder)
    for attempt in range(3):  # a port taken between the pick and nginx's bind: pick again
        https_port = free_port()
        (folder / "site.conf").write_text(_site(folder, licore.port, free_port(), https_port,
                                                licore.data_dir))
        (folder / "nginx.conf").write_text(_main_config(folder))
        process = subprocess.Popen([str(NGINX), "-p", str(folder), "-c",
                                    str(folder / "nginx.conf"), "-g", "daemon off;"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if _listening(process, https_port):
            break
        process.kill()
        process.wait()
        log = (folder / "error.log").read_text() if (folder / "error.log").exists() else ""
        if attempt == 2 or "in use" not in log:
            raise RuntimeError(f"nginx did not start:\n{log}")
    try:
        yield Proxy(f"https://127.0.0.1:{https_port}", ca)
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


def _listening(process: subprocess.Popen[bytes], port: int) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def _check(client: httpx.Client, **headers: str) -> int:
    call = {"key": "no-such-key", "product_id": "prd_x", "user_id": 1, "game_id": 2}
    return client.post("/runtime/check", json=call, headers=headers).status_code


def test_each_client_behind_nginx_has_its_own_runtime_limit(proxy: Proxy,
                                                            licore: Server) -> None:
    one, two = proxy.client("127.0.0.2"), proxy.client("127.0.0.3")

    licore.next_window()  # counts of its own, and a minute before they start again
    # What a client writes into X-Forwarded-For itself is left of nginx's entry: unread.
    assert [_check(one, **{"X-Forwarded-For": f"198.51.100.{i}"})
            for i in range(LIMIT + 1)] == [200] * LIMIT + [429]
    assert _check(two) == 200


def test_the_access_line_names_the_client_nginx_saw(proxy: Proxy, licore: Server) -> None:
    assert proxy.client("127.0.0.3").get("/nginx-probe-1").status_code == 404
    deadline = time.monotonic() + 10
    while "/nginx-probe-1" not in licore.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [json.loads(line) for line in licore.log().splitlines() if line.strip()]
    mine = [r for r in lines if r.get("path") == "/nginx-probe-1"]
    assert [r["client"] for r in mine] == ["127.0.0.3"]


def test_urls_licore_builds_are_https_behind_nginx(proxy: Proxy) -> None:
    r = proxy.client("127.0.0.2").post("/runtime/check/", json={})
    assert r.status_code == 307
    assert r.headers["location"].startswith("https://127.0.0.1")
    # the site tells browsers to use HTTPS only, on every answer (errors too)
    assert r.headers["strict-transport-security"] == "max-age=31536000"


def test_a_strangers_wrong_passwords_behind_nginx_lock_only_the_stranger(
        proxy: Proxy, licore: Server) -> None:
    alice = add_person(licore, "alice", "8201")

    def sign_in(source: str, password: str) -> int:
        client = proxy.client(source)
        token = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").text)
        assert token
        return client.post("/signin", data={"csrf": token.group(1), "username": alice.name,
                                            "password": password}).status_code

    licore.next_window(FAILURE_WINDOW)  # five failures in one window, however slow
    for _ in range(FAILURES_PER_NAME_AND_SOURCE):
        assert sign_in("127.0.0.4", "not hers") == 401
        licore.next_window(PACE_WINDOW)  # a failure slows its source: wait it out
    assert sign_in("127.0.0.4", alice.password) == 429
    assert sign_in("127.0.0.5", alice.password) == 303


def test_nginx_sends_update_files_itself(proxy: Proxy, licore: Server) -> None:
    """The site's internal location serves licore's update files (X-Accel-Redirect): the
    bytes are the file licore made, with ranges, and licore's caching headers."""
    people = setup_people(licore.database_url, "91")
    key = owner_key(licore, people, ALL)
    product = v1(licore, "POST", "/products", key, json={"title": "Nginx"}).json()["id"]
    r = upload(licore, key, product, "1.0.0", file_of(product_model(extra=20)))
    v1(licore, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": r.json()["version"]["id"]})
    v1(licore, "POST", "/licenses", key, json={"product_id": product, "user": "291"})
    client = proxy.client("127.0.0.6")
    answer = client.post("/runtime/update", json={
        "user_id": "291", "product_id": product, "nonce": secrets.token_hex(16),
        "key": license_key(licore, product, "291"), "delivery": "file"}).json()
    name = answer["file"]["url"].rsplit("/", 1)[1]
    on_disk = (licore.data_dir / "update-files" / name[:2] / name).read_bytes()
    whole = client.get(answer["file"]["url"])
    assert whole.status_code == 200
    assert whole.content == on_disk
    assert hashlib.sha256(whole.content).hexdigest() == answer["file"]["sha256"]
    assert "immutable" in whole.headers["cache-control"]
    assert "x-accel-redirect" not in whole.headers  # nginx's own, never shown
    part = client.get(answer["file"]["url"], headers={"Range": "bytes=5-24"})
    assert part.status_code == 206 and part.content == on_disk[5:25]
    assert client.get("/_licore_update_files/" + name[:2] + "/" + name).status_code == 404
