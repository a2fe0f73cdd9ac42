"""Client-side exceptions of the SDK (spec: "Errors").

The hierarchy is the spec's::

    ServicePolicyError (base for policy denials)
      ActionDeniedError
      PolicyViolationError
      ServiceKillSwitchError
    Exception
      BackendUnavailableError
      ChainTimeoutError
      ChainAutoPausedError

Plus what the spec's table names without a class of its own: :class:`VerificationError` (the
sanitized verification error of ``verify_public_token``), Python's built-in ``RuntimeError``
(raised by ``McpAdapter.install``), and :class:`ServiceApiError` for answers of the service that
are neither a policy outcome nor unreachability (400, 401, 403, 404, 409, 500, ...), and
:class:`ServiceTransportError` for a transport failure that is not unreachability (TLS, protocol).

Fail-closed rule: only an unreachable backend (connection refused or reset, DNS failure, the
per-request timeout, HTTP 502/503/504) is :class:`BackendUnavailableError`, the one error to which
fail modes apply. Every other non-2xx answer raises :class:`ServiceApiError`; it never lets an
action through.

No message or attribute ever carries the API key, a public verification token or a payload value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import PolicyDecision

__all__ = [
    "ActionDeniedError",
    "BackendUnavailableError",
    "ChainAutoPausedError",
    "ChainTimeoutError",
    "PolicyViolationError",
    "ServiceApiError",
    "ServiceKillSwitchError",
    "ServicePolicyError",
    "ServiceTransportError",
    "VerificationError",
]


class ServicePolicyError(Exception):
    """Base class of policy denials.

    Attributes:
        decision: the decision that denied, when the backend returned one.
    """

    def __init__(self, message: str, decision: PolicyDecision | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.decision = decision


class ActionDeniedError(ServicePolicyError):
    """The policy denied the action, a reviewer denied it, or the backend timed the approval out.

    Attributes:
        decision_source: ``backend_evaluation`` for policy denials and approval timeouts,
            ``human_approval`` for reviewer outcomes.
        condition: the reviewer's notes, the timeout text (contains ``not resolved within``),
            or the policy's reason.
        policy_name: the matched policy, or None.
    """

    def __init__(
        self,
        decision_source: str,
        condition: str,
        policy_name: str | None,
        decision: PolicyDecision | None = None,
    ) -> None:
        by = "by a reviewer" if decision_source == "human_approval" else "by policy"
        what = f" ({policy_name})" if policy_name else ""
        super().__init__(f"Action denied {by}{what}: {condition or 'no reason given'}", decision)
        self.decision_source = decision_source
        self.condition = condition
        self.policy_name = policy_name


class PolicyViolationError(ServicePolicyError):
    """A policy condition was violated outside the main evaluation path.

    Raised when an action is recorded into a chain whose earlier action still awaits approval
    (service code ``TG_ERR_APPROVAL_PENDING``): the approval gate is still closed.

    Attributes:
        code: the service's error code.
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class ServiceKillSwitchError(ServicePolicyError):
    """The organization kill switch is active (``kill_switch_active`` true on the decision)."""

    def __init__(self, decision: PolicyDecision) -> None:
        super().__init__(
            f"The organization kill switch is active: {decision.decision_reason or 'no reason given'}",
            decision,
        )


class BackendUnavailableError(Exception):
    """The backend is unreachable and the applicable fail mode is deny. Nothing is buffered.

    Unreachable means: connection refused or reset, DNS failure, the per-request timeout
    (``backend_timeout_seconds``), or HTTP 502, 503 or 504. Outside action recording (opening or
    completing a chain, verification) it is raised whatever the fail modes say.

    Attributes:
        category: the action category whose fail mode is deny; None outside action recording.
        fail_mode_key: the ``fail_modes`` key that decided (the category or ``default``).
        status_code: the HTTP status (502, 503, 504) when the service answered; else None.
    """

    def __init__(
        self,
        message: str,
        *,
        category: str | None = None,
        fail_mode_key: str | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.category = category
        self.fail_mode_key = fail_mode_key
        self.status_code = status_code


class ChainTimeoutError(Exception):
    """The local approval wait window (``default_approval_timeout_hours``) expired.

    The approval stays pending on the backend.
    """

    def __init__(self, chain_id: str, approval_id: str, timeout_hours: float) -> None:
        super().__init__(
            f"Stopped waiting for approval {approval_id} after {timeout_hours:g} h; "
            "the approval is still pending on the backend"
        )
        self.chain_id = chain_id
        self.approval_id = approval_id
        self.timeout_hours = timeout_hours


class ChainAutoPausedError(Exception):
    """The backend halted the chain for a runaway limit (event count, duration, token budget).

    Attributes:
        decision: the decision with ``auto_paused`` true, or None when the chain had been paused
            by an earlier action.
    """

    def __init__(self, chain_id: str, reason: str, decision: PolicyDecision | None = None) -> None:
        super().__init__(f"Chain {chain_id} was auto-paused: {reason}")
        self.chain_id = chain_id
        self.reason = reason
        self.decision = decision


class VerificationError(Exception):
    """The sanitized verification error of ``verify_public_token``.

    The token is unknown, revoked, malformed or otherwise unavailable; the error reveals nothing
    about why and never contains the token.
    """

    def __init__(self) -> None:
        super().__init__("Verification is unavailable for this token")


class ServiceApiError(Exception):
    """An answer of the service that is not a policy outcome and not unreachability.

    Every non-2xx status other than 502/503/504 (400 validation, 401, 403, 404, 409 conflicts,
    429, 500, ...) and a malformed 2xx body (code ``TG_ERR_BAD_RESPONSE``). Fail modes never
    apply: the action is not let through.

    Attributes:
        status_code: the HTTP status (0 when there was none).
        code: the service's stable code, e.g. ``TG_ERR_VALIDATION``, ``TG_ERR_NOT_FOUND``,
            ``TG_ERR_CHAIN_COMPLETED``, ``TG_ERR_INTERNAL``; ``TG_ERR_HTTP_<status>`` when the
            body had none.
        message: the service's message, prefixed with the route template.
        details: the service's ``details`` object, or None.
    """

    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.details = details

    def __repr__(self) -> str:
        return f"ServiceApiError(status_code={self.status_code}, code={self.code!r}, message={self.message!r})"


class ServiceTransportError(Exception):
    """A request failed in transport for a reason that is not unreachability (a TLS or HTTP
    protocol error, an unsupported URL). Not subject to the fail modes: the call fails.

    Attributes:
        code: the failure's kind (the httpx exception class name).
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
