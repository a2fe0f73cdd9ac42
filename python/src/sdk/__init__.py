"""Tollgate's client library (the spec's module ``sdk``): governed chains of agent actions,
human approval gates, signed receipts and verification, over HTTP to the governance service.

Quick start::

    import sdk
    sdk.init(os.environ["TOLLGATE_API_KEY"], backend_url="http://localhost:8000")
    with sdk.Chain("invoice-run", metadata={"ticket": "AP-42"}) as chain:
        decision = chain.record_agent_action_sync("payer", "tool_call", "pay_invoice", {"amount_usd": 2500})

Adapters live in ``sdk.langgraph``, ``sdk.langchain``, ``sdk.crewai`` and ``sdk.mcp`` (each needs
its framework installed: ``pip install tollgate-sdk[langgraph]`` and so on).
"""

from __future__ import annotations

from . import exceptions
from .chain import Chain
from .client import AsyncServiceClient, ServiceClient
from .config import (
    DEFAULT_BACKEND_URL,
    DEFAULT_FAIL_MODES,
    DEFAULT_POLL_INTERVAL_SECONDS,
    ChainConfig,
    SdkInternals,
    create_config,
    get_config,
    init,
)
from .exceptions import (
    ActionDeniedError,
    BackendUnavailableError,
    ChainAutoPausedError,
    ChainTimeoutError,
    PolicyViolationError,
    ServiceApiError,
    ServiceKillSwitchError,
    ServicePolicyError,
    ServiceTransportError,
    VerificationError,
)
from .models import CompleteResult, PolicyDecision, Receipt
from .policy import PolicyConfigPatch

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BACKEND_URL",
    "DEFAULT_FAIL_MODES",
    "DEFAULT_POLL_INTERVAL_SECONDS",
    "ActionDeniedError",
    "AsyncServiceClient",
    "BackendUnavailableError",
    "Chain",
    "ChainAutoPausedError",
    "ChainConfig",
    "ChainTimeoutError",
    "CompleteResult",
    "PolicyConfigPatch",
    "PolicyDecision",
    "PolicyViolationError",
    "Receipt",
    "SdkInternals",
    "ServiceApiError",
    "ServiceClient",
    "ServiceKillSwitchError",
    "ServicePolicyError",
    "ServiceTransportError",
    "VerificationError",
    "__version__",
    "create_config",
    "exceptions",
    "get_config",
    "init",
]
