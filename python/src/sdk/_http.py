"""HTTP to the service, once for sync and async callers.

The SDK's logic is written as generator "flows" (sans-I/O): a flow yields :class:`Request` and
:class:`Sleep` operations and receives the parsed JSON body (or has the typed error thrown into
it). :func:`run_sync` drives a flow with ``httpx.Client`` and a blocking sleep, :func:`run_async`
with ``httpx.AsyncClient`` and an async sleep, so recording, approval polling and the fail-mode
rules exist once.

Error mapping (the fail-closed rule): only an unreachable backend is
:class:`BackendUnavailableError` — connection refused or reset, DNS failure, the per-request
timeout, a connection closed without an answer, HTTP 502/503/504. Every other non-2xx answer is
:class:`ServiceApiError` with the service's ``code``, ``message`` and ``details``; another transport
failure (TLS, protocol) is :class:`ServiceTransportError`. Messages name the
route template (``GET /public/v2/verify/{token}``), never the concrete path, so bearer secrets in
paths cannot leak into errors.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar, Union

import httpx
from pydantic import BaseModel, ValidationError

from .exceptions import BackendUnavailableError, ServiceApiError, ServiceTransportError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
"""HTTP statuses that mean "the backend is unreachable" (a gateway or proxy answered for it)."""

USER_AGENT = "tollgate-sdk-python"


@dataclass(frozen=True)
class Request:
    """One request of a flow. ``path`` is already percent-encoded."""

    method: str
    path: str
    route: str
    body: Any = None
    has_body: bool = False
    auth: bool = True
    extra_timeout: float = 0.0
    secret_path: bool = False


@dataclass(frozen=True)
class Sleep:
    seconds: float


Op = Union[Request, Sleep]
Flow = Generator[Op, Any, T]


@dataclass(frozen=True)
class HttpSettings:
    base_url: str
    api_key: str | None
    timeout: float
    transport: httpx.BaseTransport | None = None
    async_transport: httpx.AsyncBaseTransport | None = None


def encode_json(value: Any) -> bytes:
    """JSON as the service expects it: ASCII-escaped (lone surrogates survive), no NaN."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def _headers(settings: HttpSettings, req: Request) -> dict[str, str]:
    headers = {"accept": "application/json", "user-agent": USER_AGENT}
    if req.auth and settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    if req.has_body:
        headers["content-type"] = "application/json"
    return headers


def _timeout(settings: HttpSettings, req: Request) -> httpx.Timeout:
    return httpx.Timeout(settings.timeout + req.extra_timeout, connect=settings.timeout)


def _reason(exc: BaseException) -> str:
    """A short, secret-free reason of a network failure (the innermost OS error when there is one)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        current = current.__cause__ or current.__context__
    return type(exc).__name__


def _request_args(settings: HttpSettings, req: Request) -> dict[str, Any]:
    """The arguments of ``httpx.Client.request`` / ``httpx.AsyncClient.request`` for ``req``."""
    return {
        "method": req.method,
        "url": settings.base_url + req.path,
        "content": encode_json(req.body) if req.has_body else None,
        "headers": _headers(settings, req),
        "timeout": _timeout(settings, req),
    }


def _send_failure(settings: HttpSettings, req: Request, exc: httpx.HTTPError) -> Exception:
    """The mapped error of a failed send. Raised here, chained to ``exc``, unless the path holds a
    secret; then returned, for the caller to raise outside its ``except`` block (no cause, no
    context: httpx's exception names the URL)."""
    err = network_error(settings, req, exc)
    if not req.secret_path:
        raise err from exc
    return err


def network_error(settings: HttpSettings, req: Request, exc: Exception) -> Exception:
    """Maps an httpx exception to the SDK's error (see the module docstring)."""
    if isinstance(exc, httpx.TimeoutException):
        return BackendUnavailableError(
            f"{req.route}: no response from the governance service within {settings.timeout:g} s"
        )
    if isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)):
        return BackendUnavailableError(
            f"{req.route}: cannot reach the governance service at {settings.base_url} ({_reason(exc)})"
        )
    return ServiceTransportError(
        f"{req.route}: the request to the governance service at {settings.base_url} failed ({type(exc).__name__})",
        type(exc).__name__,
    )


def interpret(req: Request, status: int, content: bytes) -> Any:
    """The parsed JSON body of a 2xx answer; raises the mapped error otherwise."""
    body: Any = None
    if content:
        try:
            body = json.loads(content)
        except ValueError:
            body = None
    if status in UNAVAILABLE_STATUSES:
        raise BackendUnavailableError(
            f"{req.route}: the governance service is unavailable (HTTP {status})", status_code=status
        )
    if not 200 <= status < 300:
        fields = body if isinstance(body, dict) else {}
        code = fields.get("code")
        message = fields.get("message")
        details = fields.get("details")
        raise ServiceApiError(
            status,
            code if isinstance(code, str) else f"TG_ERR_HTTP_{status}",
            f"{req.route}: {message if isinstance(message, str) else f'HTTP {status}'}",
            details if isinstance(details, dict) else None,
        )
    return body


def parse(model: type[M], body: Any, route: str) -> M:
    """Validates a 2xx body; a malformed one is ServiceApiError ``TG_ERR_BAD_RESPONSE``."""
    try:
        return model.model_validate(body)
    except ValidationError as err:
        issues = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in err.errors())
        raise ServiceApiError(200, "TG_ERR_BAD_RESPONSE", f"{route}: unexpected response ({issues})") from None


class SyncHttp:
    """A lazily created ``httpx.Client`` for one configuration."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def _get(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(transport=self.settings.transport, follow_redirects=False)
            return self._client

    def send(self, req: Request) -> Any:
        try:
            res = self._get().request(**_request_args(self.settings, req))
        except httpx.HTTPError as exc:
            failure = _send_failure(self.settings, req, exc)
        else:
            return interpret(req, res.status_code, res.content)
        raise failure  # outside the handler: no context (see _send_failure)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


class AsyncHttp:
    """A lazily created ``httpx.AsyncClient`` per event loop for one configuration (a client is
    bound to the loop it was made on; several loops in several threads each get their own)."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _get(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                client = httpx.AsyncClient(transport=self.settings.async_transport, follow_redirects=False)
                self._clients[loop] = client
            return client

    async def send(self, req: Request) -> Any:
        try:
            res = await self._get().request(**_request_args(self.settings, req))
        except httpx.HTTPError as exc:
            failure = _send_failure(self.settings, req, exc)
        else:
            return interpret(req, res.status_code, res.content)
        raise failure  # outside the handler: no context (see _send_failure)

    async def aclose(self) -> None:
        """Closes the current loop's client (clients of other loops end with their loops)."""
        with self._lock:
            client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()


def run_sync(flow: Flow[T], http: SyncHttp, sleep: Any = None) -> T:
    """Drives a flow with blocking I/O and returns its result."""
    do_sleep = sleep or time.sleep
    try:
        op = next(flow)
        while True:
            try:
                if isinstance(op, Request):
                    result = http.send(op)
                else:
                    do_sleep(op.seconds)
                    result = None
            except Exception as exc:
                op = flow.throw(exc)
                continue
            op = flow.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        flow.close()


async def run_async(flow: Flow[T], http: AsyncHttp, sleep: Any = None) -> T:
    """Drives a flow with async I/O and returns its result (cancellation stops it at once)."""
    do_sleep = sleep or asyncio.sleep
    try:
        op = next(flow)
        while True:
            try:
                if isinstance(op, Request):
                    result = await http.send(op)
                else:
                    await do_sleep(op.seconds)
                    result = None
            except Exception as exc:
                op = flow.throw(exc)
                continue
            op = flow.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        flow.close()
