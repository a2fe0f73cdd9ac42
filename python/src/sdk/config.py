"""``init()`` and ``ChainConfig`` (spec: "Client library operations" → init).

Every parameter of the spec's table with its default, validated at the boundary (errors name
the field). ``init`` stores the configuration process-wide; ``create_config`` returns one without
storing it, so several configurations can live in one process.
"""

from __future__ import annotations

import re
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import httpx

from .policy import ACTION_CATEGORIES, EMAIL

__all__ = [
    "DEFAULT_BACKEND_URL",
    "DEFAULT_FAIL_MODES",
    "DEFAULT_POLL_INTERVAL_SECONDS",
    "ChainConfig",
    "FailMode",
    "SdkInternals",
    "create_config",
    "get_config",
    "init",
]

FailMode = Literal["deny", "allow"]

DEFAULT_FAIL_MODES: Mapping[str, FailMode] = MappingProxyType(
    {
        "financial": "deny",
        "external_communication": "deny",
        "bulk_deletion": "deny",
        "bulk_operation": "deny",
        "irreversible": "deny",
        "llm_call": "allow",
        "default": "allow",
    }
)
"""The service defaults of ``fail_modes`` (the spec leaves the values to us): fail closed for the
categories that move money, send data out or cannot be undone, fail open for the rest."""

DEFAULT_BACKEND_URL = "http://localhost:8000"
"""The local development service (spec: "local development address on port 8000")."""

DEFAULT_POLL_INTERVAL_SECONDS = 5.0
"""The approval-status poll interval (spec: "every 5 seconds, constant")."""

_URL = re.compile(r"^https?://[^/\s]+", re.I)


@dataclass(frozen=True)
class SdkInternals:
    """Test and embedding hooks (not part of the spec).

    Attributes:
        poll_interval_seconds: approval-status poll interval; default 5.0.
        long_poll: ask the service to hold each poll until the approval is decided or the interval
            ends (``?wait=``, beyond the spec); still one request per interval, but the caller
            resumes as soon as the decision is made. Default: on, unless a ``sleep`` or
            ``async_sleep`` is injected (virtual time; the service would hold in real time).
        sleep: blocking sleep used by the sync API between polls.
        async_sleep: sleep used by the async API between polls.
        now: clock of the local approval wait window, in seconds (default ``time.monotonic``).
        transport / async_transport: httpx transports (default: httpx's own).
    """

    poll_interval_seconds: float = DEFAULT_POLL_INTERVAL_SECONDS
    long_poll: bool | None = None
    sleep: Callable[[float], None] | None = None
    async_sleep: Callable[[float], Awaitable[None]] | None = None
    now: Callable[[], float] = field(default=time.monotonic)
    transport: httpx.BaseTransport | None = None
    async_transport: httpx.AsyncBaseTransport | None = None

    @property
    def long_poll_enabled(self) -> bool:
        if self.long_poll is not None:
            return self.long_poll
        return self.sleep is None and self.async_sleep is None


class ChainConfig:
    """A validated client configuration (the return value of ``init``). Read-only.

    The API key is a secret: it is not in ``repr()`` and not in ``to_dict()``.
    """

    __slots__ = (
        "__api_key",
        "backend_timeout_seconds",
        "backend_url",
        "cumulative_financial_threshold_usd",
        "default_approval_timeout_hours",
        "enable_local_fast_path",
        "environment",
        "external_domains_allowlist",
        "fail_mode",
        "fail_modes",
        "fallback_approvers",
        "financial_approval_threshold_usd",
        "high_risk_agents",
        "internals",
        "max_payload_string_length",
        "offline_buffer_max_events",
        "policy_settings",
        "sensitive_field_patterns",
        "sensitive_value_patterns",
    )

    environment: str
    backend_url: str
    backend_timeout_seconds: float
    fail_modes: Mapping[str, FailMode] | None
    fail_mode: FailMode | None
    financial_approval_threshold_usd: float
    cumulative_financial_threshold_usd: float
    external_domains_allowlist: tuple[str, ...] | None
    high_risk_agents: tuple[str, ...] | None
    default_approval_timeout_hours: float
    fallback_approvers: tuple[str, ...] | None
    sensitive_field_patterns: tuple[str, ...] | None
    sensitive_value_patterns: tuple[str, ...] | None
    max_payload_string_length: int
    enable_local_fast_path: bool
    offline_buffer_max_events: int
    policy_settings: Mapping[str, Any]
    """The init settings sent as each chain's base policy_config: only the ones passed to init,
    so client defaults never override the organization's policy."""
    internals: SdkInternals

    def __init__(self, api_key: str, values: Mapping[str, Any], internals: SdkInternals) -> None:
        """Use :func:`create_config` or :func:`init`; this constructor does not validate."""
        object.__setattr__(self, "_ChainConfig__api_key", api_key)
        for name, value in values.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "internals", internals)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ChainConfig is read-only")

    @property
    def api_key(self) -> str:
        """The service API key (a secret: never log it)."""
        key: str = object.__getattribute__(self, "_ChainConfig__api_key")
        return key

    def fail_mode_for(self, category: str) -> tuple[FailMode, str]:
        """The fail mode for an action category and the key that decided it.

        Resolution order: the given ``fail_modes[category]``, the given ``fail_modes["default"]``
        (the legacy ``fail_mode`` is exactly this), the service default for the category, the
        service default ``default``.
        """
        given: Mapping[str, FailMode] | None = self.fail_modes
        if given is None and self.fail_mode is not None:
            given = {"default": self.fail_mode}
        if given is not None and category in given:
            return given[category], category
        if given is not None and "default" in given:
            return given["default"], "default"
        if category in DEFAULT_FAIL_MODES:
            return DEFAULT_FAIL_MODES[category], category
        return DEFAULT_FAIL_MODES["default"], "default"

    def to_dict(self) -> dict[str, Any]:
        """The configuration without the API key (``api_key`` is ``"[REDACTED]"``)."""
        out: dict[str, Any] = {"api_key": "[REDACTED]"}
        for name in self.__slots__:
            if name.startswith("__") or name == "internals":
                continue
            value = getattr(self, name)
            out[name] = dict(value) if isinstance(value, Mapping) else value
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"ChainConfig({inner})"


_DEPRECATIONS = {
    "enable_local_fast_path": (
        "init(): enable_local_fast_path is deprecated and has no effect; "
        "the backend is the only authority for decisions"
    ),
    "offline_buffer_max_events": (
        "init(): offline_buffer_max_events is deprecated and has no effect; an unreachable backend "
        "raises BackendUnavailableError where the fail mode is deny (nothing is buffered)"
    ),
}


def _number(name: str, value: object, *, positive: bool = False, maximum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"init: {name}: must be a number, got {type(value).__name__}")
    f = float(value)
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError(f"init: {name}: must be a finite number")
    if positive and f <= 0:
        raise ValueError(f"init: {name}: must be greater than 0")
    if f < 0:
        raise ValueError(f"init: {name}: must not be negative")
    if maximum is not None and f > maximum:
        raise ValueError(f"init: {name}: must be at most {maximum:g}")
    return f


def _strings(name: str, value: Iterable[str] | None, check: Callable[[str], bool] | None = None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"init: {name}: must be a list of strings")
    items = tuple(value)
    for i, item in enumerate(items):
        if not isinstance(item, str) or item == "":
            raise ValueError(f"init: {name}[{i}]: must be a non-empty string")
        if check is not None and not check(item):
            raise ValueError(f"init: {name}[{i}]: {item!r} is not valid")
    return items


def _fail_mode(name: str, value: object) -> FailMode:
    if value not in ("deny", "allow"):
        raise ValueError(f"init: {name}: must be 'deny' or 'allow', got {value!r}")
    return value


def _create(
    api_key: str,
    stacklevel: int,
    *,
    environment: str = "production",
    backend_url: str = DEFAULT_BACKEND_URL,
    backend_timeout_seconds: float = 5.0,
    fail_modes: Mapping[str, str] | None = None,
    fail_mode: str | None = None,
    financial_approval_threshold_usd: float | None = None,
    cumulative_financial_threshold_usd: float | None = None,
    external_domains_allowlist: Iterable[str] | None = None,
    high_risk_agents: Iterable[str] | None = None,
    default_approval_timeout_hours: float = 24,
    fallback_approvers: Iterable[str] | None = None,
    sensitive_field_patterns: Iterable[str] | None = None,
    sensitive_value_patterns: Iterable[str] | None = None,
    max_payload_string_length: int = 1000,
    enable_local_fast_path: bool | None = None,
    offline_buffer_max_events: int | None = None,
    internals: SdkInternals | None = None,
) -> ChainConfig:
    if not isinstance(api_key, str) or api_key.strip() == "":
        raise ValueError("init: api_key: must be a non-empty string")
    if not isinstance(environment, str) or not 1 <= len(environment) <= 63:
        raise ValueError("init: environment: must be a string of 1 to 63 characters")
    if not isinstance(backend_url, str) or not _URL.match(backend_url):
        raise ValueError("init: backend_url: must be an http(s) URL")
    if fail_modes is not None and fail_mode is not None:
        raise TypeError("init: fail_mode: do not pass the legacy fail_mode together with fail_modes")
    modes: Mapping[str, FailMode] | None = None
    if fail_modes is not None:
        if not isinstance(fail_modes, Mapping):
            raise TypeError("init: fail_modes: must be a mapping of category to 'deny' or 'allow'")
        checked: dict[str, FailMode] = {}
        for key, value in fail_modes.items():
            if key not in ACTION_CATEGORIES:
                raise ValueError(f"init: fail_modes.{key}: unknown category (known: {', '.join(ACTION_CATEGORIES)})")
            checked[key] = _fail_mode(f"fail_modes.{key}", value)
        modes = MappingProxyType(checked)
    legacy = None if fail_mode is None else _fail_mode("fail_mode", fail_mode)
    if (
        isinstance(max_payload_string_length, bool)
        or not isinstance(max_payload_string_length, int)
        or max_payload_string_length < 1
    ):
        raise ValueError("init: max_payload_string_length: must be a positive integer")
    if offline_buffer_max_events is not None and (
        isinstance(offline_buffer_max_events, bool)
        or not isinstance(offline_buffer_max_events, int)
        or offline_buffer_max_events < 0
    ):
        raise ValueError("init: offline_buffer_max_events: must be a non-negative integer")
    if enable_local_fast_path is not None and not isinstance(enable_local_fast_path, bool):
        raise TypeError("init: enable_local_fast_path: must be a bool")

    settings: dict[str, Any] = {}
    if financial_approval_threshold_usd is not None:
        settings["financial_approval_threshold_usd"] = _number(
            "financial_approval_threshold_usd", financial_approval_threshold_usd
        )
    if cumulative_financial_threshold_usd is not None:
        settings["cumulative_financial_threshold_usd"] = _number(
            "cumulative_financial_threshold_usd", cumulative_financial_threshold_usd
        )
    allowlist = _strings("external_domains_allowlist", external_domains_allowlist)
    if allowlist is not None:
        settings["external_domains_allowlist"] = list(allowlist)
    risky = _strings("high_risk_agents", high_risk_agents)
    if risky is not None:
        settings["high_risk_agents"] = list(risky)

    internals = internals or SdkInternals()
    if not internals.poll_interval_seconds >= 0:
        raise ValueError("init: internals.poll_interval_seconds: must be a non-negative number")

    values: dict[str, Any] = {
        "environment": environment,
        "backend_url": backend_url.rstrip("/"),
        "backend_timeout_seconds": _number("backend_timeout_seconds", backend_timeout_seconds, positive=True, maximum=600),
        "fail_modes": modes,
        "fail_mode": legacy,
        "financial_approval_threshold_usd": settings.get("financial_approval_threshold_usd", 5000.0),
        "cumulative_financial_threshold_usd": settings.get("cumulative_financial_threshold_usd", 10000.0),
        "external_domains_allowlist": allowlist,
        "high_risk_agents": risky,
        "default_approval_timeout_hours": _number(
            "default_approval_timeout_hours", default_approval_timeout_hours, positive=True, maximum=8760
        ),
        "fallback_approvers": _strings("fallback_approvers", fallback_approvers, lambda s: bool(EMAIL.match(s))),
        "sensitive_field_patterns": _strings("sensitive_field_patterns", sensitive_field_patterns),
        "sensitive_value_patterns": _strings("sensitive_value_patterns", sensitive_value_patterns),
        "max_payload_string_length": max_payload_string_length,
        "enable_local_fast_path": True if enable_local_fast_path is None else enable_local_fast_path,
        "offline_buffer_max_events": 100 if offline_buffer_max_events is None else offline_buffer_max_events,
        "policy_settings": MappingProxyType(settings),
    }
    for name, given in (
        ("enable_local_fast_path", enable_local_fast_path),
        ("offline_buffer_max_events", offline_buffer_max_events),
    ):
        if given is not None:
            warnings.warn(_DEPRECATIONS[name], DeprecationWarning, stacklevel=stacklevel)
    return ChainConfig(api_key, values, internals)


def create_config(api_key: str, **options: Any) -> ChainConfig:
    """Validates the options and returns a :class:`ChainConfig` WITHOUT storing it process-wide.

    Takes the keyword parameters of :func:`init`. Emits a ``DeprecationWarning`` for each
    deprecated option passed.

    Raises:
        TypeError: a parameter has the wrong type or is unknown, or both ``fail_modes`` and the
            legacy ``fail_mode`` are given.
        ValueError: a parameter's value is invalid (the message names it).
    """
    return _create(api_key, 3, **options)


_lock = threading.Lock()
_current: ChainConfig | None = None


def init(
    api_key: str,
    *,
    environment: str = "production",
    backend_url: str = DEFAULT_BACKEND_URL,
    backend_timeout_seconds: float = 5.0,
    fail_modes: Mapping[str, str] | None = None,
    fail_mode: str | None = None,
    financial_approval_threshold_usd: float | None = None,
    cumulative_financial_threshold_usd: float | None = None,
    external_domains_allowlist: Iterable[str] | None = None,
    high_risk_agents: Iterable[str] | None = None,
    default_approval_timeout_hours: float = 24,
    fallback_approvers: Iterable[str] | None = None,
    sensitive_field_patterns: Iterable[str] | None = None,
    sensitive_value_patterns: Iterable[str] | None = None,
    max_payload_string_length: int = 1000,
    enable_local_fast_path: bool | None = None,
    offline_buffer_max_events: int | None = None,
    internals: SdkInternals | None = None,
) -> ChainConfig:
    """Validates the configuration, stores it process-wide and returns it (spec: init).

    Call once at start-up before opening chains; a later call replaces the stored configuration.

    Args:
        api_key: the service API key (``tg_...``); a secret.
        environment: tag on every chain; default ``production``.
        backend_url: the service's base URL; default the local development address
            ``http://localhost:8000``.
        backend_timeout_seconds: per-request timeout (connect, write and each read); default 5.0.
        fail_modes: per action category (``financial``, ``external_communication``,
            ``bulk_deletion``, ``bulk_operation``, ``irreversible``, ``llm_call``, ``default``)
            ``deny`` or ``allow`` when the backend is unreachable; ``default`` is the fallback.
            Unset categories take :data:`DEFAULT_FAIL_MODES`.
        fail_mode: legacy; ``fail_modes={"default": fail_mode}``. Not together with fail_modes.
        financial_approval_threshold_usd: single amount above which approval is required
            (5000 when unset; sent in each chain's policy_config only when given).
        cumulative_financial_threshold_usd: chain exposure above which the next financial action
            requires approval (10000 when unset; sent only when given).
        external_domains_allowlist: domains allowed without exfiltration alerts (sent when given).
        high_risk_agents: agents every action of which requires approval (sent when given).
        default_approval_timeout_hours: the local approval wait limit; default 24.
        fallback_approvers: e-mail addresses; validated, informational (the organization's
            approver team is authoritative).
        sensitive_field_patterns: appended to the default field-name substrings.
        sensitive_value_patterns: appended to the default value prefixes.
        max_payload_string_length: longer strings are truncated before sending; default 1000.
        enable_local_fast_path: deprecated; passing it emits a DeprecationWarning; no effect.
        offline_buffer_max_events: deprecated; passing it emits a DeprecationWarning; no effect.
        internals: test hooks (poll interval, sleep, clock, transports); not part of the spec.

    Raises:
        TypeError, ValueError: as :func:`create_config`.
    """
    global _current
    config = _create(
        api_key,
        3,
        environment=environment,
        backend_url=backend_url,
        backend_timeout_seconds=backend_timeout_seconds,
        fail_modes=fail_modes,
        fail_mode=fail_mode,
        financial_approval_threshold_usd=financial_approval_threshold_usd,
        cumulative_financial_threshold_usd=cumulative_financial_threshold_usd,
        external_domains_allowlist=external_domains_allowlist,
        high_risk_agents=high_risk_agents,
        default_approval_timeout_hours=default_approval_timeout_hours,
        fallback_approvers=fallback_approvers,
        sensitive_field_patterns=sensitive_field_patterns,
        sensitive_value_patterns=sensitive_value_patterns,
        max_payload_string_length=max_payload_string_length,
        enable_local_fast_path=enable_local_fast_path,
        offline_buffer_max_events=offline_buffer_max_events,
        internals=internals,
    )
    with _lock:
        _current = config
    return config


def get_config() -> ChainConfig:
    """The configuration stored by :func:`init`.

    Raises:
        RuntimeError: when ``init`` has not been called.
    """
    config = _current
    if config is None:
        raise RuntimeError("Tollgate SDK is not initialized: call sdk.init(api_key, ...) first")
    return config


def _reset_config() -> None:
    """Forgets the process-wide configuration stored by ``init``.

    Not public: tests reach it as ``sdk._testing.reset_config``.
    """
    global _current
    with _lock:
        _current = None
