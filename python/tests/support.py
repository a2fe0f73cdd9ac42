"""Test support: the real governance service as a child process, its admin API, a fault-injecting
TCP/HTTP proxy, and a virtual ticker for the approval poll loop.

The service is started the way a developer starts it (``tsx src/service/main.ts`` from the repo
root) on embedded PGlite, a free loopback port, a generated admin token and master key, in a
temporary data directory. Set ``TOLLGATE_TEST_URL`` and ``TOLLGATE_TEST_ADMIN_TOKEN`` to use a
service that is already running instead.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sdk import ChainConfig, SdkInternals, create_config
from sdk.models import ChainDetail

REPO_ROOT = Path(os.environ.get("TOLLGATE_REPO_ROOT", Path(__file__).resolve().parents[2]))


def _die_with_parent() -> None:
    """In the child: receive SIGTERM when the test process dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Postgres:
    """A throwaway PostgreSQL cluster (initdb into a temp dir, pg_ctl start on a free loopback
    port, as the ``postgres`` OS user when running as root). Used when
    ``TOLLGATE_TEST_DATABASE=postgres``; the default is the service's embedded PGlite."""

    def __init__(self) -> None:
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not bins:
            raise RuntimeError("TOLLGATE_TEST_DATABASE=postgres needs PostgreSQL (Debian's postgresql package)")
        self.bin = bins[-1].parent
        self.dir = tempfile.mkdtemp(prefix="tg-pytest-pg-")
        os.chmod(self.dir, 0o777)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, cmd: str, *args: str) -> None:
        argv = [str(self.bin / cmd), *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "pg.log"), "-o", options, "-w", "start")

    def query(self, sql: str) -> str:
        """The unaligned, tuples-only output of ``sql`` run by psql on database ``postgres``."""
        argv = [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-tA", "-c", sql]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        done = subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, text=True)
        return done.stdout.strip()

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "stop", "-m", "fast", "-w", "-t", "20")
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class ServiceProcess:
    """The real service, started from the repository with tsx (embedded PGlite by default)."""

    def __init__(self) -> None:
        self.url = os.environ.get("TOLLGATE_TEST_URL", "")
        self.admin_token = os.environ.get("TOLLGATE_TEST_ADMIN_TOKEN", "")
        self.proc: subprocess.Popen[bytes] | None = None
        self.data_dir: str | None = None
        self.log_path: str | None = None
        self.postgres: Postgres | None = None

    def start(self) -> None:
        if self.url:
            if not self.admin_token:
                raise RuntimeError("TOLLGATE_TEST_URL needs TOLLGATE_TEST_ADMIN_TOKEN")
            return
        tsx = REPO_ROOT / "node_modules" / "tsx"
        if not tsx.exists():
            raise RuntimeError(f"{tsx} is missing: run `npm install` in {REPO_ROOT} first")
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH")
        self.data_dir = tempfile.mkdtemp(prefix="tg-pytest-service-")
        self.log_path = os.path.join(self.data_dir, "service.log")
        self.admin_token = "tga_" + secrets.token_urlsafe(32)
        database = os.environ.get("TOLLGATE_TEST_DATABASE", "pglite")
        if database not in ("pglite", "postgres"):
            raise RuntimeError("TOLLGATE_TEST_DATABASE must be pglite or postgres")
        if database == "postgres":
            self.postgres = Postgres()
            self.postgres.start()
        for _attempt in range(3):
            port = free_port()
            env = {
                **os.environ,
                "PORT": str(port),
                "HOST": "127.0.0.1",
                "TOLLGATE_DATA_DIR": self.data_dir,
                "TOLLGATE_ADMIN_TOKEN": self.admin_token,
                "TOLLGATE_MASTER_KEY": secrets.token_hex(32),
                "TOLLGATE_SCHEDULER_INTERVAL_MS": "100",
                "LOG_LEVEL": "warn",
            }
            if self.postgres is not None:
                env["DATABASE_URL"] = self.postgres.url
            for name in ("TOLLGATE_ADMIN_TOKEN_FILE", "TOLLGATE_MASTER_KEY_FILE", "SMTP_HOST", "OIDC_ISSUER_URL"):
                env.pop(name, None)
            if self.postgres is None:
                env.pop("DATABASE_URL", None)
            log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
            self.proc = subprocess.Popen(
                [node, "--import", "tsx", "src/service/main.ts"],
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            log.close()
            self.url = f"http://127.0.0.1:{port}"
            if self._wait_ready(90):
                return
            self.stop()
            if "EADDRINUSE" not in self.log_tail():
                break
        raise RuntimeError(f"the governance service did not start:\n{self.log_tail()}")

    def _wait_ready(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        return False

    def log_tail(self, chars: int = 4000) -> str:
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-chars:]

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)

    def cleanup(self) -> None:
        self.stop()
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


@dataclass
class Org:
    slug: str
    client_key: str
    admin_key: str


class Admin:
    """The service's admin and approver API, as an operator or reviewer would call it."""

    def __init__(self, service: ServiceProcess) -> None:
        self.service = service
        self.http = httpx.Client(base_url=service.url, timeout=30)

    def call(self, method: str, path: str, token: str, body: Any = None) -> httpx.Response:
        return self.http.request(
            method, path, headers={"authorization": f"Bearer {token}"}, json=body if body is not None else None
        )

    def org(self, name: str, **spec: Any) -> Org:
        slug = f"py-{name}-{secrets.token_hex(3)}"
        token = self.service.admin_token
        r = self.call("PUT", f"/v1/admin/organizations/{slug}", token, spec)
        assert r.status_code in (200, 201), r.text
        keys = []
        for role in ("client", "admin"):
            k = self.call("POST", f"/v1/admin/organizations/{slug}/api-keys", token, {"name": f"{role}-key", "role": role})
            assert k.status_code == 201, k.text
            keys.append(k.json()["api_key"])
        return Org(slug, keys[0], keys[1])

    def api_key(self, org: Org, name: str, role: str = "client") -> tuple[str, str]:
        r = self.call(
            "POST", f"/v1/admin/organizations/{org.slug}/api-keys", self.service.admin_token, {"name": name, "role": role}
        )
        assert r.status_code == 201, r.text
        return r.json()["key_id"], r.json()["api_key"]

    def revoke_key(self, org: Org, key_id: str) -> None:
        r = self.call("POST", f"/v1/admin/organizations/{org.slug}/api-keys/{key_id}/revoke", self.service.admin_token)
        assert r.status_code == 200, r.text

    def kill_switch(self, org: Org, active: bool, reason: str | None = None) -> None:
        r = self.call(
            "POST",
            f"/v1/admin/organizations/{org.slug}/kill-switch",
            self.service.admin_token,
            {"active": active, "reason": reason},
        )
        assert r.status_code == 200, r.text

    def approval(self, org: Org, chain_id: str) -> dict[str, Any] | None:
        r = self.call("GET", f"/v1/chains/{chain_id}/approval-status", org.client_key)
        assert r.status_code == 200, r.text
        approval: dict[str, Any] | None = r.json()["approval"]
        return approval

    def pending_approval_id(self, org: Org, chain_id: str, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while True:
            approval = self.approval(org, chain_id)
            if approval and approval["status"] == "pending":
                return str(approval["approval_id"])
            if time.monotonic() > deadline:
                raise AssertionError(f"no pending approval on chain {chain_id}")
            time.sleep(0.02)

    def decide(self, org: Org, approval_id: str, decision: str, **extra: Any) -> None:
        r = self.call("POST", f"/v1/approvals/{approval_id}/decision", org.admin_key, {"decision": decision, **extra})
        assert r.status_code == 200, r.text

    def stored(self, org: Org, chain_id: str) -> ChainDetail:
        r = self.call("GET", f"/v1/chains/{chain_id}", org.client_key)
        assert r.status_code == 200, r.text
        return ChainDetail.model_validate(r.json())

    def close(self) -> None:
        self.http.close()


class Ticker:
    """An injected sleep and clock for the approval poll loop: each sleep records its duration,
    advances virtual time and calls ``on_tick(n)`` (1-based) before the poll that follows it. The
    HTTP stays real."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.virtual = 0.0
        self.on_tick: Callable[[int], Any] = lambda n: None

    def now(self) -> float:
        return self.virtual

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.virtual += seconds
        self.on_tick(len(self.sleeps))

    async def async_sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.virtual += seconds
        await asyncio.sleep(0)
        result = self.on_tick(len(self.sleeps))
        if inspect.isawaitable(result):
            await result

    def internals(self, **extra: Any) -> SdkInternals:
        return SdkInternals(sleep=self.sleep, async_sleep=self.async_sleep, now=self.now, **extra)


@dataclass
class Env:
    service: ServiceProcess
    admin: Admin
    org: Org
    tickers: list[Ticker] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.service.url

    def config(self, ticker: Ticker | None = None, internals: SdkInternals | None = None, **options: Any) -> ChainConfig:
        """A configuration against the real service (virtual ticker unless ``internals`` is given)."""
        options.setdefault("backend_url", self.url)
        options.setdefault("api_key", self.org.client_key)
        api_key = options.pop("api_key")
        return create_config(api_key, internals=internals or (ticker or Ticker()).internals(), **options)

    def stored(self, chain_id: str) -> ChainDetail:
        return self.admin.stored(self.org, chain_id)

    def metric(self, series: str) -> float:
        """The value of one sample (``name{labels}`` as the service writes it) on /metrics; 0 when absent."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith(f"{series} "):
                return float(line.split(" ")[1])
        return 0.0

    def holds_ended(self) -> dict[str, float]:
        """Held approval-status requests so far by how they ended (first_read, woken, elapsed, shutdown)."""
        ends = ("first_read", "woken", "elapsed", "shutdown")
        return {e: self.metric(f'tollgate_approval_status_holds_total{{ended="{e}"}}') for e in ends}

    def wait_until_held(self, timeout: float = 10) -> None:
        """Returns once the service holds a request whose read showed the approval pending."""
        deadline = time.monotonic() + timeout
        while self.metric("tollgate_approval_status_waiting") < 1:
            if time.monotonic() > deadline:
                raise AssertionError("no approval-status request was held")
            time.sleep(0.02)


# --- a fault-injecting HTTP/1.1 proxy ---------------------------------------------------------


@dataclass
class Captured:
    line: str
    head: bytes
    body: bytes
    at: float = field(default_factory=time.monotonic)


class Proxy:
    """A real TCP proxy in front of the service that understands HTTP/1.1 framing, for fault
    injection and wire capture:

    - ``set_down(True)``: open connections and new ones are reset (RST), as a crashed backend;
    - ``hang(True)``: requests are read and never answered;
    - ``inject(pattern, status)``: requests whose request line matches answer ``status`` with the
      service's error body shape, without reaching the service;
    - everything clients send is recorded (``requests``, ``bodies``, ``received``).
    """

    def __init__(self, target_url: str) -> None:
        m = re.match(r"https?://([^:/]+):(\d+)", target_url)
        assert m, target_url
        self.target = (m.group(1), int(m.group(2)))
        self.requests: list[Captured] = []
        self._down = False
        self._hang = False
        self._rules: list[tuple[re.Pattern[str], int, bytes]] = []
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    # control
    def set_down(self, down: bool) -> None:
        self._down = down
        if down:
            with self._lock:
                for s in list(self._sockets):
                    _reset(s)

    def hang(self, hang: bool) -> None:
        self._hang = hang

    def inject(self, pattern: str, status: int, body: dict[str, Any] | None = None) -> None:
        if body is None:
            body = {
                "statusCode": status,
                "code": f"TG_ERR_INJECTED_{status}",
                "error": "Injected",
                "message": f"injected HTTP {status}",
                "details": {"injected": True},
            }
        self._rules.append((re.compile(pattern), status, json.dumps(body).encode()))

    def clear(self) -> None:
        self._rules.clear()
        self._down = False
        self._hang = False

    # capture
    def count(self, pattern: str) -> int:
        rx = re.compile(pattern)
        return sum(1 for r in list(self.requests) if rx.search(r.line))

    def times(self, pattern: str) -> list[float]:
        rx = re.compile(pattern)
        return [r.at for r in list(self.requests) if rx.search(r.line)]

    def bodies(self, pattern: str) -> list[Any]:
        rx = re.compile(pattern)
        return [json.loads(r.body) for r in list(self.requests) if rx.search(r.line) and r.body]

    def received(self) -> bytes:
        return b"".join(r.head + r.body for r in list(self.requests))

    def close(self) -> None:
        self._closed.set()
        try:
            self._server.close()
        except OSError:
            pass
        with self._lock:
            for s in list(self._sockets):
                try:
                    s.close()
                except OSError:
                    pass

    # internals
    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self._down:
                _reset(client)
                continue
            with self._lock:
                self._sockets.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        reader = _Reader(client)
        try:
            while True:
                request = reader.message(is_request=True)
                if request is None:
                    return
                head, body = request
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                self.requests.append(Captured(line, head, body))
                if self._down:
                    _reset(client)
                    return
                if self._hang:
                    while not self._closed.is_set() and self._hang and not self._down:
                        time.sleep(0.05)
                    _reset(client)
                    return
                rule = next((r for r in self._rules if r[0].search(line)), None)
                if rule is not None:
                    _, status, payload = rule
                    client.sendall(
                        f"HTTP/1.1 {status} Injected\r\ncontent-type: application/json\r\n"
                        f"content-length: {len(payload)}\r\n\r\n".encode()
                        + payload
                    )
                    continue
                if upstream is None:
                    upstream = socket.create_connection(self.target)
                    with self._lock:
                        self._sockets.add(upstream)
                    up_reader = _Reader(upstream)
                upstream.sendall(head + body)
                response = up_reader.message(is_request=False)
                if response is None:
                    _reset(client)
                    return
                client.sendall(response[0] + response[1])
        except OSError:
            return
        finally:
            with self._lock:
                self._sockets.discard(client)
                if upstream is not None:
                    self._sockets.discard(upstream)
            for s in (client, upstream):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass


def _reset(s: socket.socket) -> None:
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    except OSError:
        pass


class _Reader:
    """Reads HTTP/1.1 messages (head + body by content-length or chunked) from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _exact(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self._fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self) -> bytes | None:
        while b"\r\n" not in self.buf:
            if not self._fill():
                return None
        i = self.buf.index(b"\r\n") + 2
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def message(self, is_request: bool) -> tuple[bytes, bytes] | None:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        i = self.buf.index(b"\r\n\r\n") + 4
        head, self.buf = self.buf[:i], self.buf[i:]
        headers = head.decode("latin-1").lower()
        length = re.search(r"\r\ncontent-length:\s*(\d+)", headers)
        if length:
            body = self._exact(int(length.group(1)))
            return (head, body) if body is not None else None
        if re.search(r"\r\ntransfer-encoding:\s*chunked", headers):
            raw = b""
            while True:
                size_line = self._line()
                if size_line is None:
                    return None
                raw += size_line
                size = int(size_line.split(b";")[0].strip(), 16)
                data = self._exact(size + 2)
                if data is None:
                    return None
                raw += data
                if size == 0:
                    return head, raw
        if is_request:
            return head, b""
        status = int(head.split(b" ", 2)[1])
        if status in (204, 304) or 100 <= status < 200:
            return head, b""
        while self._fill():
            pass
        body, self.buf = self.buf, b""
        return head, body
