"""The per-chain policy override (``Chain(policy_config=...)``) and the action category used to
pick a fail mode.

``PolicyConfigPatch`` mirrors the service's ``PolicyConfigPatchSchema`` (src/policy/schema.ts):
any subset of the organization policy configuration, wire (snake_case) keys, no defaults filled
in, unknown keys rejected. Validating it locally names the offending field before any request.

``categorize`` ports the category rule of the policy engine (src/policy/facts.ts): the category
decides which fail mode applies when the backend is unreachable. It reads top-level payload keys
only, like the engine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ACTION_CATEGORIES",
    "AgentScope",
    "CustomRule",
    "ModelPrice",
    "PolicyConfigPatch",
    "RunawayLimitsPatch",
    "categorize",
]

ACTION_CATEGORIES: tuple[str, ...] = (
    "financial",
    "external_communication",
    "bulk_deletion",
    "bulk_operation",
    "irreversible",
    "llm_call",
    "default",
)
"""Action categories of the policy engine (fail-mode keys)."""

Outcome = Literal["allow", "allow_with_flag", "require_approval", "deny"]

_DOMAIN = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$", re.I)
EMAIL = re.compile(r"^[^\s@]+@[^\s@]+\.[^\s@]+$")


def _domains(values: list[str]) -> list[str]:
    for v in values:
        if not (1 <= len(v) <= 253 and _DOMAIN.match(v)):
            raise ValueError(f"{v!r} must be a domain name")
    return values


def _emails(values: list[str]) -> list[str]:
    for v in values:
        if not EMAIL.match(v):
            raise ValueError(f"{v!r} must be an email address")
    return values


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PayloadCondition(_Strict):
    """A condition on one top-level payload key of a custom rule."""

    eq: str | int | float | bool | None = None
    in_: list[str | int | float] | None = Field(default=None, alias="in")
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None
    exists: bool | None = None
    contains: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CustomRuleMatch(_Strict):
    agent_name: str | None = Field(default=None, min_length=1)
    action_type: str | None = Field(default=None, min_length=1)
    action_name: str | None = Field(default=None, min_length=1)
    destination_domain: str | None = Field(default=None, min_length=1)
    payload: dict[str, str | int | float | bool | PayloadCondition] | None = None


class CustomRule(_Strict):
    """A custom rule: every given matcher must match; string matchers accept ``*`` globs."""

    name: str = Field(min_length=1, max_length=128)
    match: CustomRuleMatch
    outcome: Outcome
    reason: str = Field(default="", max_length=1000)
    remediation: str | None = Field(default=None, max_length=1000)
    docs_url: str | None = None


class AgentScope(_Strict):
    """What an agent is declared to do; lists accept ``*`` globs."""

    action_types: list[str] | None = None
    action_names: list[str] | None = None
    domains: list[str] | None = None

    _check_domains = field_validator("domains")(lambda cls, v: None if v is None else _domains(v))


class ModelPrice(_Strict):
    input_per_1k_usd: float | None = Field(default=None, ge=0)
    output_per_1k_usd: float | None = Field(default=None, ge=0)


class RunawayLimitsPatch(_Strict):
    """Runaway limits: the chain auto-pauses at the action that crosses one; 0 disables one."""

    max_events: int | None = Field(default=None, ge=0)
    max_duration_seconds: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)


class PolicyConfigPatch(_Strict):
    """A per-chain policy override: any subset of the organization's policy configuration."""

    financial_approval_threshold_usd: float | None = Field(default=None, ge=0)
    cumulative_financial_threshold_usd: float | None = Field(default=None, ge=0)
    financial_deny_threshold_usd: float | None = Field(default=None, ge=0)
    financial_notify: list[str] | None = None
    external_domains_allowlist: list[str] | None = None
    internal_domains: list[str] | None = None
    high_risk_agents: list[str] | None = None
    agent_scopes: dict[str, AgentScope] | None = None
    first_external_communication_requires_approval: bool | None = None
    bulk_operation_threshold: int | None = Field(default=None, gt=0)
    bulk_deletion_threshold: int | None = Field(default=None, gt=0)
    irreversible_actions: list[str] | None = None
    pii_to_external_requires_approval: bool | None = None
    custom_rules: list[CustomRule] | None = None
    evaluation_mode: Literal["enforce", "shadow"] | None = None
    runaway_limits: RunawayLimitsPatch | None = None
    llm_pricing: dict[str, ModelPrice] | None = None
    default_llm_price: ModelPrice | None = None

    @field_validator("external_domains_allowlist", "internal_domains")
    @classmethod
    def _domain_lists(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else _domains(v)

    @field_validator("financial_notify")
    @classmethod
    def _notify(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else _emails(v)

    @field_validator("high_risk_agents", "irreversible_actions")
    @classmethod
    def _non_empty(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and any(not s for s in v):
            raise ValueError("entries must not be empty")
        return v


# --- categories (src/policy/facts.ts) -------------------------------------------------------

_DESTINATION_KEYS = (
    "domain",
    "destination_domain",
    "url",
    "endpoint",
    "webhook_url",
    "to",
    "email",
    "recipient",
    "recipients",
    "cc",
    "bcc",
)
_AMOUNT_KEYS = ("amount_usd", "amount", "value")
_RECORD_COUNT_KEYS = ("record_count", "records_count", "count")
_RECORD_ARRAY_KEYS = ("records", "ids", "items")
_DELETION_NAME = re.compile(r"(^|[_\-.])(delete|remove|purge|drop|destroy|erase)", re.I)
_DELETION_OPERATIONS = {"delete", "remove", "purge"}
_HOSTNAME = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$")
_NUMERIC = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$", re.I)
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_HOST_END = re.compile(r"[\s/:?#>),;]")
DEFAULT_IRREVERSIBLE_ACTIONS = (
    "sign_contract",
    "contract_signing",
    "publish_post",
    "public_post",
    "post_publicly",
    "file_legal",
    "legal_filing",
)


def _finite_number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("$"):
        text = text[1:].strip()
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    if not _NUMERIC.match(text):
        return None
    parsed = float(text)
    return parsed if math.isfinite(parsed) else None


def _domain_from_text(text: str) -> str | None:
    trimmed = text.strip()
    if not trimmed:
        return None
    if "://" in trimmed:
        try:
            host = urlsplit(trimmed).hostname or ""
        except ValueError:
            return None
    else:
        rest = trimmed[trimmed.rfind("@") + 1 :]
        host = _HOST_END.split(rest, maxsplit=1)[0]
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    return host if 0 < len(host) <= 253 and _HOSTNAME.match(host) else None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def _domain_matches(domain: str, pattern: str) -> bool:
    d = domain.lower()
    p = pattern.lower()
    if p.endswith("."):
        p = p[:-1]
    if p.startswith("*."):
        return d.endswith(p[1:])
    return d == p or d.endswith(f".{p}")


def _record_count(payload: Mapping[str, Any]) -> float | None:
    for key in _RECORD_COUNT_KEYS:
        n = _finite_number(payload.get(key))
        if n is not None and n >= 0:
            return n
    for key in _RECORD_ARRAY_KEYS:
        v = payload.get(key)
        if isinstance(v, (list, tuple)):
            return len(v)
    return None


def categorize(
    action_type: str,
    action_name: str,
    payload: Mapping[str, Any],
    policy: Mapping[str, Any] | None = None,
) -> str:
    """The action's category as the policy engine computes it, first that applies: financial,
    bulk_deletion, irreversible, external_communication, bulk_operation, llm_call, default.

    ``policy`` is the chain's policy_config (wire keys) over the engine's defaults; the
    organization's own configuration is not known to the client.
    """
    cfg = policy or {}
    internal = list(cfg.get("internal_domains") or [])
    irreversible_actions = cfg.get("irreversible_actions")
    if irreversible_actions is None:
        irreversible_actions = DEFAULT_IRREVERSIBLE_ACTIONS
    bulk_deletion = cfg.get("bulk_deletion_threshold") or 10
    bulk_operation = cfg.get("bulk_operation_threshold") or 100

    is_financial = action_type == "financial" or any(
        _finite_number(payload.get(k)) is not None for k in _AMOUNT_KEYS
    )
    domains = [d for k in _DESTINATION_KEYS for s in _strings(payload.get(k)) if (d := _domain_from_text(s))]
    is_external = any(not any(_domain_matches(d, p) for p in internal) for d in domains)
    count = _record_count(payload)
    op_values = [payload.get("operation"), payload.get("op")]
    is_deletion = bool(_DELETION_NAME.search(action_name)) or any(
        isinstance(v, str) and v.strip().lower() in _DELETION_OPERATIONS for v in op_values
    )
    tags = payload.get("tags")
    is_irreversible = (
        payload.get("irreversible") is True
        or (isinstance(tags, (list, tuple)) and any(isinstance(t, str) and t.lower() == "irreversible" for t in tags))
        or any(str(e).lower() == action_name.lower() for e in irreversible_actions)
    )
    if is_financial:
        return "financial"
    if is_deletion and count is not None and count >= bulk_deletion:
        return "bulk_deletion"
    if is_irreversible:
        return "irreversible"
    if is_external:
        return "external_communication"
    if count is not None and count >= bulk_operation:
        return "bulk_operation"
    if action_type == "llm_call":
        return "llm_call"
    return "default"
