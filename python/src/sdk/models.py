"""What the SDK returns: pydantic models with the spec's snake_case field names.

One casing convention for everything (decisions, receipts, verification results, tokens): the
wire's snake_case, as attributes. Every model tolerates fields the service adds later
(``extra="allow"``: reachable as attributes and in ``model_dump()``), and all are frozen.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ApprovalStatusResponse",
    "ApprovalView",
    "ChainDetail",
    "ChainEvent",
    "ChainView",
    "CompleteResult",
    "CumulativeMetrics",
    "IssuedToken",
    "LegacyReceiptVerification",
    "Outcome",
    "PolicyDecision",
    "PublicVerificationResult",
    "Receipt",
    "RecordActionResponse",
    "StatusBlock",
    "TokenRecord",
    "VerificationResult",
    "WireDecision",
]

Outcome = Literal["allow", "allow_with_flag", "require_approval", "deny"]
DecisionSource = Literal["backend_evaluation", "human_approval", "fail_mode"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class WireDecision(_Open):
    """The spec's PolicyDecision as the service sends it; absent fields take the spec's defaults."""

    policy_decision: Outcome
    decision_reason: str = ""
    decision_source: str = "backend_evaluation"
    policy_name: str | None = None
    kill_switch_active: bool = False
    pause_reason: str | None = None
    remediation: str | None = None
    docs_url: str | None = None
    evaluation_mode: Literal["enforce", "shadow"] | None = None
    shadow_decision: Outcome | None = None
    estimated_cost_usd: float | None = None
    auto_paused: bool = False


class RecordActionResponse(WireDecision):
    """Answer of ``POST /v1/chains/{chain_id}/actions``: the decision and where it was recorded."""

    event_id: str
    chain_id: str | None = None
    sequence: int | None = None
    category: str | None = None
    approval_id: str | None = None
    approval_expires_at: str | None = None
    exception_id: str | None = None
    chain_status: str | None = None


class PolicyDecision(BaseModel):
    """The decision ``record_agent_action`` returns (spec: PolicyDecision), plus where it was
    recorded.

    ``policy_decision`` is ``allow`` or ``allow_with_flag`` when returned; ``require_approval`` and
    ``deny`` appear only on the ``decision`` attribute of errors.
    """

    model_config = ConfigDict(frozen=True)

    policy_decision: Outcome
    decision_reason: str = ""
    decision_source: DecisionSource = "backend_evaluation"
    """``backend_evaluation``, ``human_approval`` once a reviewer resolved the gate, or
    ``fail_mode`` for the flagged allow of an unreachable backend (nothing was evaluated)."""
    policy_name: str | None = None
    kill_switch_active: bool = False
    pause_reason: str | None = None
    remediation: str | None = None
    docs_url: str | None = None
    evaluation_mode: Literal["enforce", "shadow"] | None = None
    shadow_decision: Outcome | None = None
    estimated_cost_usd: float | None = None
    auto_paused: bool = False
    event_id: str | None = None
    """The recorded chain event; None when nothing was recorded (fail mode allow)."""
    sequence: int | None = None
    """1-based position of the event in the chain."""
    approval_id: str | None = None
    """The approval gate this action went through, if any."""
    exception_id: str | None = None
    """The time-boxed exception that allowed the action, or that the approval created."""
    category: str | None = None
    """The action category (financial, external_communication, ..., default)."""

    @field_validator("decision_source", mode="before")
    @classmethod
    def _known_source(cls, v: object) -> object:
        return v if v in ("human_approval", "fail_mode") else "backend_evaluation"

    @property
    def flagged(self) -> bool:
        """True when ``policy_decision`` is ``allow_with_flag``."""
        return self.policy_decision == "allow_with_flag"

    @classmethod
    def from_wire(
        cls,
        wire: WireDecision,
        *,
        event_id: str | None,
        sequence: int | None = None,
        approval_id: str | None = None,
        exception_id: str | None = None,
        category: str | None = None,
    ) -> PolicyDecision:
        return cls(
            policy_decision=wire.policy_decision,
            decision_reason=wire.decision_reason,
            decision_source=wire.decision_source,  # type: ignore[arg-type]  # normalized by the validator
            policy_name=wire.policy_name,
            kill_switch_active=wire.kill_switch_active,
            pause_reason=wire.pause_reason,
            remediation=wire.remediation,
            docs_url=wire.docs_url,
            evaluation_mode=wire.evaluation_mode,
            shadow_decision=wire.shadow_decision,
            estimated_cost_usd=wire.estimated_cost_usd,
            auto_paused=wire.auto_paused,
            event_id=event_id,
            sequence=sequence,
            approval_id=approval_id,
            exception_id=exception_id,
            category=category,
        )


class ChainView(_Open):
    """A chain as ``POST /v1/chains`` returns it."""

    chain_id: str
    name: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    policy_config: dict[str, Any] = Field(default_factory=dict)
    environment: str
    status: str
    failure: dict[str, str] | None = None
    receipt_id: str | None = None


class ChainEvent(_Open):
    """A stored chain event (``GET /v1/chains/{chain_id}`` → ``events``); the payload is sanitized."""

    event_id: str
    sequence: int
    agent_name: str
    parent_agent_name: str | None = None
    action_type: str
    action_name: str
    payload: dict[str, Any] = Field(default_factory=dict)
    category: str | None = None
    decision: WireDecision
    approval_id: str | None = None
    exception_id: str | None = None


class ChainDetail(ChainView):
    """``GET /v1/chains/{chain_id}``: the chain with its events in order."""

    events: list[ChainEvent] = Field(default_factory=list)


class ApprovalView(_Open):
    """One approval as ``approval-status`` returns it. Status values: pending, approved, denied,
    timed_out, cancelled."""

    approval_id: str
    status: Literal["pending", "approved", "denied", "timed_out", "cancelled"]
    condition: str | None = None
    notes: str | None = None
    decision: WireDecision
    exception: dict[str, Any] | None = None
    expires_at: str | None = None


class ApprovalStatusResponse(_Open):
    """``GET /v1/chains/{chain_id}/approval-status``."""

    chain_id: str
    chain_status: str
    approval: ApprovalView | None = None


class CompleteResult(_Open):
    """``POST /v1/chains/{chain_id}/complete``: the sealed chain and its receipt."""

    chain_id: str
    status: str
    """``completed``, or ``failed`` when the chain was left through an exception."""
    receipt_id: str
    receipt_number: str
    """PR-YYYY-NNNNN."""


class CumulativeMetrics(_Open):
    financial_exposure_usd: float = 0
    external_communications_count: int = 0
    records_modified_count: int = 0
    external_domains_contacted: list[str] = Field(default_factory=list)
    estimated_cost_usd: float = 0


class Receipt(_Open):
    """The signed receipt of a completed chain (spec: Receipt; ``receipt_id`` is its identifier).

    ``approvals`` and ``events_summary`` items are the service's objects (see the README).
    """

    receipt_id: str | None = None
    receipt_number: str
    chain_id: str
    organization: str | None = None
    chain_name: str | None = None
    environment: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    status: str | None = None
    failure: dict[str, str] | None = None
    summary: str = ""
    started_at: str | None = None
    completed_at: str | None = None
    agents_involved: list[str] = Field(default_factory=list)
    total_actions: int = 0
    cumulative_metrics: CumulativeMetrics = Field(default_factory=CumulativeMetrics)
    approvals: list[dict[str, Any]] = Field(default_factory=list)
    events_summary: list[dict[str, Any]] = Field(default_factory=list)
    policy_version: str | None = None
    previous_receipt_hash: str | None = None
    signature: str


class StatusBlock(_Open):
    """A ``{status, ...}`` part of a verification result."""

    status: str


class VerificationResult(_Open):
    """Authenticated v2 verification (receipts and approvals): ``overall_status`` and
    ``integrity.status``, plus the service's other fields (``chain``, ``signature``, anchors,
    ``problems``, and for admins on approvals ``audit_context``) as extra attributes."""

    overall_status: str
    integrity: StatusBlock
    artifact_type: str | None = None


class PublicVerificationResult(_Open):
    """The minimized public verification result."""

    artifact_type: str
    verification_status: str
    integrity_status: str
    signature_status: str | None = None
    key_status: str | None = None
    timestamp_anchor_status: str | None = None
    verified_at: str | None = None


class IssuedToken(_Open):
    """A public verification token as issued: the plaintext ``token`` exists only here (it is
    kept out of ``repr``)."""

    token_id: str
    token: str = Field(repr=False)
    public_path: str = Field(repr=False)
    public_url: str | None = Field(default=None, repr=False)
    artifact_type: str | None = None
    artifact_id: str | None = None
    status: str | None = None
    created_at: str | None = None


class TokenRecord(_Open):
    """A public verification token record (never the plaintext or its hash)."""

    token_id: str
    artifact_type: str
    artifact_id: str
    status: str
    created_by: str | None = None
    created_at: str | None = None
    revoked_at: str | None = None
    last_used_at: str | None = None


class LegacyReceiptVerification(_Open):
    """The legacy ``GET /v1/receipts/{receipt_id}/verify`` result (compatibility only)."""

    receipt_id: str | None = None
    receipt_number: str | None = None
    valid: bool
    signature_valid: bool | None = None
    chain_valid: bool | None = None
    verified_at: str | None = None
