"""The low-level HTTP client of the governance service and the verification helpers (spec:
"Endpoints", "Verification helpers (sdk.client)").

- :class:`ServiceClient` (blocking) and :class:`AsyncServiceClient` (asyncio): one method per
  route, results as pydantic models with the wire's snake_case names. ``Chain`` builds on the
  same routes.
- Module-level helpers with the spec's names — :func:`verify_receipt_v2`,
  :func:`verify_approval_v2`, :func:`list_public_verification_tokens`,
  :func:`issue_public_verification_token`, :func:`revoke_public_verification_token`,
  :func:`verify_public_token`, :func:`verify_receipt` (legacy) — blocking, using the
  configuration stored by ``init`` unless ``config=`` is given (admin helpers need an admin key).

Errors of every call: :class:`BackendUnavailableError` (unreachable: connection refused or reset,
DNS failure, timeout, HTTP 502/503/504), :class:`ServiceApiError` (any other non-2xx, malformed
answer). Authentication: ``Authorization: Bearer <api key>``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urlencode

from ._http import AsyncHttp, Flow, HttpSettings, Request, SyncHttp, parse, run_async, run_sync
from .config import DEFAULT_BACKEND_URL, _URL, ChainConfig, get_config
from .exceptions import ServiceApiError, VerificationError
from .models import (
    ApprovalStatusResponse,
    ChainDetail,
    ChainView,
    CompleteResult,
    IssuedToken,
    LegacyReceiptVerification,
    PublicVerificationResult,
    Receipt,
    RecordActionResponse,
    TokenRecord,
    VerificationResult,
)

__all__ = [
    "MAX_APPROVAL_WAIT_SECONDS",
    "ArtifactType",
    "AsyncServiceClient",
    "ServiceClient",
    "issue_public_verification_token",
    "list_public_verification_tokens",
    "revoke_public_verification_token",
    "verify_approval_v2",
    "verify_public_token",
    "verify_receipt",
    "verify_receipt_v2",
]

MAX_APPROVAL_WAIT_SECONDS = 5.0
"""Longest hold of one approval-status request (the service's maximum ``wait``)."""

ArtifactType = Literal["approval", "receipt"]
TokenStatus = Literal["active", "revoked"]


def _id(value: object, field: str) -> str:
    if not isinstance(value, str) or value.strip() == "" or len(value) > 200:
        raise ValueError(f"{field}: must be a non-empty string of at most 200 characters")
    return quote(value, safe="")


# --- flows: one per route --------------------------------------------------------------------


def create_chain_flow(body: Mapping[str, Any]) -> Flow[ChainView]:
    route = "POST /v1/chains"
    data = yield Request("POST", "/v1/chains", route, body=dict(body), has_body=True)
    return parse(ChainView, data, route)


def get_chain_flow(chain_id: str) -> Flow[ChainDetail]:
    route = "GET /v1/chains/{chain_id}"
    data = yield Request("GET", f"/v1/chains/{_id(chain_id, 'chain_id')}", route)
    return parse(ChainDetail, data, route)


def record_action_flow(chain_id: str, action: Mapping[str, Any]) -> Flow[RecordActionResponse]:
    route = "POST /v1/chains/{chain_id}/actions"
    data = yield Request("POST", f"/v1/chains/{_id(chain_id, 'chain_id')}/actions", route, body=dict(action), has_body=True)
    return parse(RecordActionResponse, data, route)


def approval_status_flow(
    chain_id: str, approval_id: str | None = None, wait_seconds: float = 0
) -> Flow[ApprovalStatusResponse]:
    if not 0 <= wait_seconds <= MAX_APPROVAL_WAIT_SECONDS:
        raise ValueError(f"wait_seconds: must be within 0..{MAX_APPROVAL_WAIT_SECONDS:g}")
    params: list[tuple[str, str]] = []
    if approval_id:
        params.append(("approval_id", approval_id))
    if wait_seconds > 0:
        params.append(("wait", f"{wait_seconds:g}"))
    qs = f"?{urlencode(params)}" if params else ""
    route = "GET /v1/chains/{chain_id}/approval-status"
    data = yield Request(
        "GET",
        f"/v1/chains/{_id(chain_id, 'chain_id')}/approval-status{qs}",
        route,
        extra_timeout=wait_seconds,
    )
    return parse(ApprovalStatusResponse, data, route)


def complete_chain_flow(chain_id: str, failure: Mapping[str, str] | None = None) -> Flow[CompleteResult]:
    route = "POST /v1/chains/{chain_id}/complete"
    body: dict[str, Any] = {} if failure is None else {"failure": dict(failure)}
    data = yield Request("POST", f"/v1/chains/{_id(chain_id, 'chain_id')}/complete", route, body=body, has_body=True)
    return parse(CompleteResult, data, route)


def get_receipt_flow(chain_id: str) -> Flow[Receipt | None]:
    route = "GET /v1/chains/{chain_id}/receipt"
    try:
        data = yield Request("GET", f"/v1/chains/{_id(chain_id, 'chain_id')}/receipt", route)
    except ServiceApiError as err:
        if err.status_code == 404:
            return None
        raise
    return parse(Receipt, data, route)


def verify_receipt_v2_flow(receipt_id: str) -> Flow[VerificationResult]:
    route = "GET /v1/verification/v2/receipts/{receipt_id}"
    data = yield Request("GET", f"/v1/verification/v2/receipts/{_id(receipt_id, 'receipt_id')}", route)
    return parse(VerificationResult, data, route)


def verify_approval_v2_flow(approval_id: str) -> Flow[VerificationResult]:
    route = "GET /v1/verification/v2/approvals/{approval_id}"
    data = yield Request("GET", f"/v1/verification/v2/approvals/{_id(approval_id, 'approval_id')}", route)
    return parse(VerificationResult, data, route)


def list_tokens_flow(
    status: TokenStatus | None = None,
    artifact_type: ArtifactType | None = None,
    artifact_id: str | None = None,
    limit: int | None = None,
) -> Flow[list[TokenRecord]]:
    params: list[tuple[str, str]] = []
    if status is not None:
        params.append(("status", status))
    if artifact_type is not None:
        params.append(("artifact_type", artifact_type))
    if artifact_id is not None:
        params.append(("artifact_id", artifact_id))
    if limit is not None:
        params.append(("limit", str(limit)))
    qs = f"?{urlencode(params)}" if params else ""
    route = "GET /v1/public-verification-tokens"
    data = yield Request("GET", f"/v1/public-verification-tokens{qs}", route)
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list):
        raise ServiceApiError(200, "TG_ERR_BAD_RESPONSE", f"{route}: unexpected response (tokens: missing)")
    return [parse(TokenRecord, t, route) for t in tokens]


def issue_token_flow(artifact_type: ArtifactType, artifact_id: str) -> Flow[IssuedToken]:
    if artifact_type not in ("approval", "receipt"):
        raise ValueError("artifact_type: must be 'approval' or 'receipt'")
    _id(artifact_id, "artifact_id")
    route = "POST /v1/public-verification-tokens"
    body = {"artifact_type": artifact_type, "artifact_id": artifact_id}
    data = yield Request("POST", "/v1/public-verification-tokens", route, body=body, has_body=True)
    return parse(IssuedToken, data, route)


def revoke_token_flow(token_id: str) -> Flow[TokenRecord]:
    route = "POST /v1/public-verification-tokens/{token_id}/revoke"
    data = yield Request(
        "POST", f"/v1/public-verification-tokens/{_id(token_id, 'token_id')}/revoke", route, body={}, has_body=True
    )
    return parse(TokenRecord, data, route)


def verify_public_token_flow(token: str) -> Flow[PublicVerificationResult]:
    if not isinstance(token, str) or token.strip() == "" or len(token) > 512:
        raise VerificationError()
    route = "GET /public/v2/verify/{token}"
    try:
        data = yield Request(
            "GET", f"/public/v2/verify/{quote(token, safe='')}", route, auth=False, secret_path=True
        )
        return parse(PublicVerificationResult, data, route)
    except ServiceApiError:
        raise VerificationError() from None


def verify_receipt_legacy_flow(receipt_id: str) -> Flow[LegacyReceiptVerification]:
    route = "GET /v1/receipts/{receipt_id}/verify"
    data = yield Request("GET", f"/v1/receipts/{_id(receipt_id, 'receipt_id')}/verify", route)
    return parse(LegacyReceiptVerification, data, route)


_LEGACY_WARNING = "verify_receipt() is deprecated (legacy route); use verify_receipt_v2()"


def _settings(api_key: str, backend_url: str, timeout_seconds: float, config: ChainConfig | None) -> HttpSettings:
    if not isinstance(api_key, str) or api_key.strip() == "":
        raise ValueError("api_key: must be a non-empty string")
    if not isinstance(backend_url, str) or not _URL.match(backend_url):
        raise ValueError("backend_url: must be an http(s) URL")
    if not timeout_seconds > 0:
        raise ValueError("timeout_seconds: must be greater than 0")
    return HttpSettings(
        base_url=backend_url.rstrip("/"),
        api_key=api_key,
        timeout=float(timeout_seconds),
        transport=config.internals.transport if config else None,
        async_transport=config.internals.async_transport if config else None,
    )


_Client = TypeVar("_Client", bound="_BaseClient")


class _BaseClient:
    """The construction :class:`ServiceClient` and :class:`AsyncServiceClient` share."""

    def __init__(
        self,
        api_key: str,
        *,
        backend_url: str = DEFAULT_BACKEND_URL,
        timeout_seconds: float = 5.0,
        _config: ChainConfig | None = None,
    ) -> None:
        self._connect(_settings(api_key, backend_url, timeout_seconds, _config))

    def _connect(self, settings: HttpSettings) -> None:
        raise NotImplementedError

    @classmethod
    def from_config(cls: type[_Client], config: ChainConfig) -> _Client:
        """A client with the configuration's key, URL, timeout and transport."""
        return cls(
            config.api_key,
            backend_url=config.backend_url,
            timeout_seconds=config.backend_timeout_seconds,
            _config=config,
        )


class ServiceClient(_BaseClient):
    """Blocking client of the governance service. Usable as a context manager (closes its
    connection pool)."""

    def _connect(self, settings: HttpSettings) -> None:
        self._http = SyncHttp(settings)

    @property
    def base_url(self) -> str:
        return self._http.settings.base_url

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_chain(
        self,
        name: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        policy_config: Mapping[str, Any] | None = None,
        environment: str | None = None,
    ) -> ChainView:
        """``POST /v1/chains`` → the new chain (``chain_id`` assigned by the backend)."""
        body: dict[str, Any] = {"name": name}
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if policy_config is not None:
            body["policy_config"] = dict(policy_config)
        if environment is not None:
            body["environment"] = environment
        return run_sync(create_chain_flow(body), self._http)

    def get_chain(self, chain_id: str) -> ChainDetail:
        """``GET /v1/chains/{chain_id}`` → the chain and its stored (sanitized) events."""
        return run_sync(get_chain_flow(chain_id), self._http)

    def record_action(self, chain_id: str, action: Mapping[str, Any]) -> RecordActionResponse:
        """``POST /v1/chains/{chain_id}/actions`` (the payload must already be sanitized; use
        ``Chain.record_agent_action`` for the spec's behaviour). Never retried."""
        return run_sync(record_action_flow(chain_id, action), self._http)

    def approval_status(
        self, chain_id: str, approval_id: str | None = None, *, wait_seconds: float = 0
    ) -> ApprovalStatusResponse:
        """``GET /v1/chains/{chain_id}/approval-status[?approval_id=&wait=]``; with
        ``wait_seconds`` (0..5) the service holds the answer while the approval is pending."""
        return run_sync(approval_status_flow(chain_id, approval_id, wait_seconds), self._http)

    def complete_chain(self, chain_id: str, failure: Mapping[str, str] | None = None) -> CompleteResult:
        """``POST /v1/chains/{chain_id}/complete`` → seals the chain and issues the receipt."""
        return run_sync(complete_chain_flow(chain_id, failure), self._http)

    def get_receipt(self, chain_id: str) -> Receipt | None:
        """The signed receipt of a completed chain, None before completion."""
        return run_sync(get_receipt_flow(chain_id), self._http)

    def verify_receipt_v2(self, receipt_id: str) -> VerificationResult:
        """``GET /v1/verification/v2/receipts/{receipt_id}`` (member or admin)."""
        return run_sync(verify_receipt_v2_flow(receipt_id), self._http)

    def verify_approval_v2(self, approval_id: str) -> VerificationResult:
        """``GET /v1/verification/v2/approvals/{approval_id}`` (member or admin; role-aware)."""
        return run_sync(verify_approval_v2_flow(approval_id), self._http)

    def list_public_verification_tokens(
        self,
        *,
        status: TokenStatus | None = None,
        artifact_type: ArtifactType | None = None,
        artifact_id: str | None = None,
        limit: int | None = None,
    ) -> list[TokenRecord]:
        """``GET /v1/public-verification-tokens`` (admin): records, never plaintext or hashes."""
        return run_sync(list_tokens_flow(status, artifact_type, artifact_id, limit), self._http)

    def issue_public_verification_token(self, artifact_type: ArtifactType, artifact_id: str) -> IssuedToken:
        """``POST /v1/public-verification-tokens`` (admin): the plaintext token, returned once."""
        return run_sync(issue_token_flow(artifact_type, artifact_id), self._http)

    def revoke_public_verification_token(self, token_id: str) -> TokenRecord:
        """``POST /v1/public-verification-tokens/{token_id}/revoke`` (admin)."""
        return run_sync(revoke_token_flow(token_id), self._http)

    def verify_public_token(self, token: str) -> PublicVerificationResult:
        """``GET /public/v2/verify/{token}`` without the API key.

        Raises:
            VerificationError: sanitized, for any answer but 2xx (no status, no reason, no token).
            BackendUnavailableError: the service is unreachable.
        """
        return run_sync(verify_public_token_flow(token), self._http)

    def verify_receipt(self, receipt_id: str) -> LegacyReceiptVerification:
        """Legacy ``GET /v1/receipts/{receipt_id}/verify``; emits a DeprecationWarning."""
        warnings.warn(_LEGACY_WARNING, DeprecationWarning, stacklevel=2)
        return run_sync(verify_receipt_legacy_flow(receipt_id), self._http)


class AsyncServiceClient(_BaseClient):
    """The asyncio twin of :class:`ServiceClient` (same methods, awaitable)."""

    def _connect(self, settings: HttpSettings) -> None:
        self._http = AsyncHttp(settings)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncServiceClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def get_chain(self, chain_id: str) -> ChainDetail:
        return await run_async(get_chain_flow(chain_id), self._http)

    async def approval_status(
        self, chain_id: str, approval_id: str | None = None, *, wait_seconds: float = 0
    ) -> ApprovalStatusResponse:
        return await run_async(approval_status_flow(chain_id, approval_id, wait_seconds), self._http)

    async def complete_chain(self, chain_id: str, failure: Mapping[str, str] | None = None) -> CompleteResult:
        return await run_async(complete_chain_flow(chain_id, failure), self._http)

    async def get_receipt(self, chain_id: str) -> Receipt | None:
        return await run_async(get_receipt_flow(chain_id), self._http)

    async def verify_receipt_v2(self, receipt_id: str) -> VerificationResult:
        return await run_async(verify_receipt_v2_flow(receipt_id), self._http)

    async def verify_approval_v2(self, approval_id: str) -> VerificationResult:
        return await run_async(verify_approval_v2_flow(approval_id), self._http)

    async def list_public_verification_tokens(
        self,
        *,
        status: TokenStatus | None = None,
        artifact_type: ArtifactType | None = None,
        artifact_id: str | None = None,
        limit: int | None = None,
    ) -> list[TokenRecord]:
        return await run_async(list_tokens_flow(status, artifact_type, artifact_id, limit), self._http)

    async def issue_public_verification_token(self, artifact_type: ArtifactType, artifact_id: str) -> IssuedToken:
        return await run_async(issue_token_flow(artifact_type, artifact_id), self._http)

    async def revoke_public_verification_token(self, token_id: str) -> TokenRecord:
        return await run_async(revoke_token_flow(token_id), self._http)

    async def verify_public_token(self, token: str) -> PublicVerificationResult:
        return await run_async(verify_public_token_flow(token), self._http)

    async def verify_receipt(self, receipt_id: str) -> LegacyReceiptVerification:
        warnings.warn(_LEGACY_WARNING, DeprecationWarning, stacklevel=2)
        return await run_async(verify_receipt_legacy_flow(receipt_id), self._http)


# --- the spec's module-level helpers ---------------------------------------------------------


def _client(config: ChainConfig | None) -> ServiceClient:
    return ServiceClient.from_config(config or get_config())


def verify_receipt_v2(receipt_id: str, *, config: ChainConfig | None = None) -> VerificationResult:
    """Authenticated v2 receipt verification: ``overall_status``, ``integrity.status``, chain
    status. Needs a member or admin credential."""
    with _client(config) as client:
        return client.verify_receipt_v2(receipt_id)


def verify_approval_v2(approval_id: str, *, config: ChainConfig | None = None) -> VerificationResult:
    """Authenticated v2 approval verification; admins also get ``audit_context``."""
    with _client(config) as client:
        return client.verify_approval_v2(approval_id)


def list_public_verification_tokens(
    *,
    status: TokenStatus | None = None,
    artifact_type: ArtifactType | None = None,
    artifact_id: str | None = None,
    limit: int | None = None,
    config: ChainConfig | None = None,
) -> list[TokenRecord]:
    """Lists public verification tokens (admin); never plaintext tokens or hashes."""
    with _client(config) as client:
        return client.list_public_verification_tokens(
            status=status, artifact_type=artifact_type, artifact_id=artifact_id, limit=limit
        )


def issue_public_verification_token(
    artifact_type: ArtifactType, artifact_id: str, *, config: ChainConfig | None = None
) -> IssuedToken:
    """Issues a public verification token (admin); the plaintext is returned once."""
    with _client(config) as client:
        return client.issue_public_verification_token(artifact_type, artifact_id)


def revoke_public_verification_token(token_id: str, *, config: ChainConfig | None = None) -> TokenRecord:
    """Revokes a public verification token (admin); the public link stops working."""
    with _client(config) as client:
        return client.revoke_public_verification_token(token_id)


def verify_public_token(token: str, *, config: ChainConfig | None = None) -> PublicVerificationResult:
    """``GET /public/v2/verify/{token}`` (sent without the API key).

    Raises:
        VerificationError: sanitized, when the token is unavailable for any reason.
    """
    with _client(config) as client:
        return client.verify_public_token(token)


def verify_receipt(receipt_id: str, *, config: ChainConfig | None = None) -> LegacyReceiptVerification:
    """Legacy receipt verification (compatibility only); emits a DeprecationWarning."""
    warnings.warn(_LEGACY_WARNING, DeprecationWarning, stacklevel=2)
    with _client(config) as client:
        return run_sync(verify_receipt_legacy_flow(receipt_id), client._http)
