"""``Chain``: a governed chain of agent actions (spec: "Chain(name, metadata=None,
policy_config=None)", "States and transitions").

Entering creates the chain on the backend (``chain_id`` set); ``record_agent_action`` records one
action and returns the backend's decision, blocking on ``require_approval``; leaving completes the
chain (receipt issued), marked with the failure when it is left through an exception::

    with Chain("invoice-run", metadata={"ticket": "AP-42"}) as chain:
        decision = chain.record_agent_action_sync("payer", "tool_call", "pay_invoice", {"amount_usd": 2500})

    async with Chain("invoice-run") as chain:
        decision = await chain.record_agent_action("payer", "tool_call", "pay_invoice", {"amount_usd": 2500})
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any

from pydantic import ValidationError

from ._http import AsyncHttp, Flow, HttpSettings, Sleep, SyncHttp, run_async, run_sync
from .client import (
    MAX_APPROVAL_WAIT_SECONDS,
    approval_status_flow,
    complete_chain_flow,
    create_chain_flow,
    get_receipt_flow,
    record_action_flow,
)
from .config import ChainConfig, get_config
from .exceptions import (
    ActionDeniedError,
    BackendUnavailableError,
    ChainAutoPausedError,
    ChainTimeoutError,
    PolicyViolationError,
    ServiceApiError,
    ServiceKillSwitchError,
    ServiceTransportError,
)
from .models import ApprovalStatusResponse, CompleteResult, PolicyDecision, Receipt, RecordActionResponse
from .policy import EMAIL, PolicyConfigPatch, categorize
from .sanitize import cut_text, redact_text, sanitize_payload

__all__ = ["Chain", "sanitize_for_config"]

log = logging.getLogger("sdk")

MAX_BODY_BYTES = 1024 * 1024
"""The service's largest request body; metadata strings are never cut below it."""


def sanitize_for_config(payload: Mapping[str, Any] | None, config: ChainConfig) -> dict[str, Any]:
    """Sanitizes ``payload`` with the configuration's patterns and length limit (a new dict)."""
    return sanitize_payload(
        payload,
        field_patterns=config.sensitive_field_patterns or (),
        value_prefixes=config.sensitive_value_patterns or (),
        max_string_length=config.max_payload_string_length,
    ).payload


def _issues(err: ValidationError, prefix: str) -> str:
    return "; ".join(
        f"{prefix}{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else f"{prefix.rstrip('.')}: {e['msg']}"
        for e in err.errors()
    )


def _text(name: str, value: object, maximum: int, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or value == "" or len(value) > maximum:
        raise ValueError(f"record_agent_action: {name}: must be a non-empty string of at most {maximum} characters")
    return value


def _transient(err: Exception) -> bool:
    """Errors retried on the next tick while waiting for approval: unreachability, other transport
    failures, 408, 429 and 5xx (retrying keeps the caller blocked, so nothing is let through)."""
    if isinstance(err, (BackendUnavailableError, ServiceTransportError)):
        return True
    return isinstance(err, ServiceApiError) and (err.status_code in (408, 429) or err.status_code >= 500)


class Chain:
    """A governed chain (see the module docstring).

    Args:
        name: human-readable label (convention: lowercase, hyphen-separated).
        metadata: JSON-serializable key/value pairs, set once at creation, visible in receipts
            (not sanitized: do not put secrets here).
        policy_config: per-chain override with the wire keys (e.g.
            ``{"financial_approval_threshold_usd": 100}``), merged key by key over the
            organization's configuration; validated locally.
        config: the configuration to use; default the one stored by ``init()``.

    Raises:
        ValueError: an argument is invalid (the message names it).
        RuntimeError: no ``config`` is given and ``init()`` has not been called.
    """

    def __init__(
        self,
        name: str,
        metadata: Mapping[str, Any] | None = None,
        policy_config: Mapping[str, Any] | PolicyConfigPatch | None = None,
        *,
        config: ChainConfig | None = None,
    ) -> None:
        if not isinstance(name, str) or name.strip() == "" or len(name) > 200:
            raise ValueError("Chain: name: must be a non-empty string of at most 200 characters")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValueError("Chain: metadata: must be a mapping")
        meta = dict(metadata or {})
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"Chain: metadata: must be JSON-serializable ({err})") from None
        self.name = name
        self._metadata = meta
        self._own_policy = self._validate_policy(policy_config)
        self.config = config or get_config()
        self._chain_id: str | None = None
        self._state = "new"
        self._result: CompleteResult | None = None
        self._settings = HttpSettings(
            base_url=self.config.backend_url,
            api_key=self.config.api_key,
            timeout=self.config.backend_timeout_seconds,
            transport=self.config.internals.transport,
            async_transport=self.config.internals.async_transport,
        )
        self._sync_http: SyncHttp | None = None
        self._async_http: AsyncHttp | None = None

    @staticmethod
    def _validate_policy(policy_config: Mapping[str, Any] | PolicyConfigPatch | None) -> dict[str, Any]:
        if policy_config is None:
            return {}
        try:
            patch = (
                policy_config
                if isinstance(policy_config, PolicyConfigPatch)
                else PolicyConfigPatch.model_validate(dict(policy_config))
            )
        except ValidationError as err:
            raise ValueError(f"Chain: {_issues(err, 'policy_config.')}") from None
        except TypeError:
            raise ValueError("Chain: policy_config: must be a mapping") from None
        return patch.model_dump(exclude_unset=True, by_alias=True)

    # --- properties ---------------------------------------------------------------------------

    @property
    def chain_id(self) -> str | None:
        """The backend-assigned id; None before the chain is entered."""
        return self._chain_id

    @property
    def metadata(self) -> Mapping[str, Any]:
        return MappingProxyType(self._metadata)

    @property
    def policy_config(self) -> dict[str, Any]:
        """The policy_config sent at creation: init's explicit settings, then the chain's own."""
        return {**self.config.policy_settings, **self._own_policy}

    @property
    def result(self) -> CompleteResult | None:
        """What completing the chain returned (receipt id and number); None before."""
        return self._result

    @property
    def status(self) -> str:
        """Local state: new, entering, open, exiting, closed."""
        return self._state

    def add_financial_threshold(self, usd: float, notify: Sequence[str] | None = None, deny: bool = False) -> Chain:
        """Adds a per-chain financial threshold (spec: add_financial_threshold).

        With ``deny`` false a single amount above ``usd`` requires approval
        (``financial_approval_threshold_usd``); with ``deny`` true it is denied outright
        (``financial_deny_threshold_usd``). ``notify`` adds recipients to the financial approval
        e-mails (``financial_notify``). Returns the chain.

        Raises:
            ValueError: invalid arguments.
            RuntimeError: the chain has already started.
        """
        if self._state != "new":
            raise RuntimeError("add_financial_threshold: the policy must be set before the chain starts")
        if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd) or usd < 0:
            raise ValueError("add_financial_threshold: usd: must be a finite number >= 0")
        if notify is not None and (isinstance(notify, str) or any(not isinstance(n, str) or not EMAIL.match(n) for n in notify)):
            raise ValueError("add_financial_threshold: notify: must be a list of e-mail addresses")
        if not isinstance(deny, bool):
            raise ValueError("add_financial_threshold: deny: must be a bool")
        key = "financial_deny_threshold_usd" if deny else "financial_approval_threshold_usd"
        self._own_policy[key] = float(usd)
        if notify:
            current = list(self._own_policy.get("financial_notify") or [])
            self._own_policy["financial_notify"] = list(dict.fromkeys([*current, *notify]))
        return self

    # --- HTTP -----------------------------------------------------------------------------------

    def _sync(self) -> SyncHttp:
        if self._sync_http is None:
            self._sync_http = SyncHttp(self._settings)
        return self._sync_http

    def _async(self) -> AsyncHttp:
        if self._async_http is None:
            self._async_http = AsyncHttp(self._settings)
        return self._async_http

    def _run(self, flow: Flow[Any]) -> Any:
        return run_sync(flow, self._sync(), self.config.internals.sleep)

    async def _arun(self, flow: Flow[Any]) -> Any:
        return await run_async(flow, self._async(), self.config.internals.async_sleep)

    def _close_sync(self) -> None:
        http, self._sync_http = self._sync_http, None
        if http is not None:
            http.close()

    async def _close_async(self) -> None:
        http, self._async_http = self._async_http, None
        if http is not None:
            await http.aclose()

    # --- entering and leaving ---------------------------------------------------------------

    def _enter_flow(self) -> Flow[Chain]:
        if self._state != "new":
            raise RuntimeError(f'Chain "{self.name}" was already entered')
        self._state = "entering"
        body = {
            "name": self.name,
            # Metadata leaves the process like a payload: secrets redacted, strings kept whole.
            "metadata": sanitize_payload(
                self._metadata,
                field_patterns=self.config.sensitive_field_patterns or (),
                value_prefixes=self.config.sensitive_value_patterns or (),
                max_string_length=MAX_BODY_BYTES,
            ).payload,
            "policy_config": self.policy_config,
            "environment": self.config.environment,
        }
        try:
            created = yield from create_chain_flow(body)
        except BaseException:
            self._state = "new"
            raise
        self._chain_id = created.chain_id
        self._state = "open"
        return self

    def _failure(self, error: BaseException) -> dict[str, str]:
        mode = type(error).__name__ or "Exception"
        message = redact_text(
            str(error),
            field_patterns=self.config.sensitive_field_patterns or (),
            value_prefixes=self.config.sensitive_value_patterns or (),
        )
        return {"mode": cut_text(mode, 200), "message": cut_text(message, 2000)}

    def _exit_flow(self, error: BaseException | None) -> Flow[CompleteResult | None]:
        if self._state != "open":
            return self._result
        assert self._chain_id is not None
        self._state = "exiting"
        try:
            done = yield from complete_chain_flow(self._chain_id, None if error is None else self._failure(error))
        except ServiceApiError as err:
            if err.code == "TG_ERR_CHAIN_COMPLETED":
                self._state = "closed"
                return None
            self._state = "open"
            raise
        except BaseException:
            self._state = "open"
            raise
        self._result = done
        self._state = "closed"
        return done

    def enter(self) -> Chain:
        """Creates the chain on the backend (``POST /v1/chains``) and returns it.

        Raises:
            BackendUnavailableError: the service is unreachable (a chain cannot exist without it).
            ServiceApiError: e.g. 401, or 400 naming the field.
            RuntimeError: the chain was already entered.
        """
        result: Chain = self._run(self._enter_flow())
        return result

    async def aenter(self) -> Chain:
        """The async twin of :meth:`enter`."""
        result: Chain = await self._arun(self._enter_flow())
        return result

    def exit(self, error: BaseException | None = None) -> CompleteResult | None:
        """Completes the chain (``POST /v1/chains/{chain_id}/complete``): the receipt is issued.

        With ``error`` the chain is marked failed with ``{mode: the error's class name, message:
        its sanitized message}``. Idempotent: returns the earlier result (None when the chain was
        never entered or was completed elsewhere).

        Raises:
            BackendUnavailableError, ServiceApiError: completion failed; the chain stays open and
                exit may be retried.
        """
        try:
            result: CompleteResult | None = self._run(self._exit_flow(error))
        finally:
            if self._state == "closed":
                self._close_sync()
        return result

    async def aexit(self, error: BaseException | None = None) -> CompleteResult | None:
        """The async twin of :meth:`exit`."""
        try:
            result: CompleteResult | None = await self._arun(self._exit_flow(error))
        finally:
            if self._state == "closed":
                await self._close_async()
                self._close_sync()
        return result

    def __enter__(self) -> Chain:
        return self.enter()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.exit()
            return
        try:
            self.exit(exc)
        except Exception as err:  # never hide the exception that left the block
            log.warning("could not complete chain %s after %s: %s", self._chain_id, type(exc).__name__, err)

    async def __aenter__(self) -> Chain:
        return await self.aenter()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await self.aexit()
            return
        try:
            await self.aexit(exc)
        except Exception as err:
            log.warning("could not complete chain %s after %s: %s", self._chain_id, type(exc).__name__, err)

    # --- recording ------------------------------------------------------------------------------

    def _record_flow(
        self,
        agent_name: str,
        action_type: str,
        action_name: str,
        payload: Mapping[str, Any] | None,
        parent_agent_name: str | None,
    ) -> Flow[PolicyDecision]:
        _text("agent_name", agent_name, 200)
        _text("action_type", action_type, 100)
        _text("action_name", action_name, 200)
        _text("parent_agent_name", parent_agent_name, 200, optional=True)
        if payload is not None and not isinstance(payload, Mapping):
            raise ValueError("record_agent_action: payload: must be a mapping or None")
        if self._state != "open":
            if self._state in ("closed", "exiting"):
                raise RuntimeError(f'Chain "{self.name}" is completed and accepts no further actions')
            raise RuntimeError(f'Chain "{self.name}" is not entered: use "with" / "async with" or call enter()')
        chain_id = self._chain_id
        assert chain_id is not None
        action: dict[str, Any] = {
            "agent_name": agent_name,
            "action_type": action_type,
            "action_name": action_name,
            "payload": sanitize_for_config(payload, self.config),
        }
        if parent_agent_name:
            action["parent_agent_name"] = parent_agent_name

        try:
            res: RecordActionResponse = yield from record_action_flow(chain_id, action)
        except BackendUnavailableError as err:
            return self._fail_mode(action, err)
        except ServiceApiError as err:
            if err.code == "TG_ERR_CHAIN_PAUSED":
                raise ChainAutoPausedError(chain_id, "the chain was halted earlier by a runaway limit") from err
            if err.code == "TG_ERR_APPROVAL_PENDING":
                raise PolicyViolationError(
                    f'Chain "{self.name}": an earlier action is still waiting for approval', err.code
                ) from err
            raise

        decision = PolicyDecision.from_wire(
            res,
            event_id=res.event_id,
            sequence=res.sequence,
            approval_id=res.approval_id,
            exception_id=res.exception_id,
            category=res.category,
        )
        if decision.kill_switch_active and decision.policy_decision == "deny":
            raise ServiceKillSwitchError(decision)
        if decision.auto_paused:
            raise ChainAutoPausedError(chain_id, decision.decision_reason, decision)
        if decision.policy_decision == "deny":
            raise ActionDeniedError(decision.decision_source, decision.decision_reason, decision.policy_name, decision)
        if decision.policy_decision == "require_approval":
            if not res.approval_id:
                raise ServiceApiError(200, "TG_ERR_BAD_RESPONSE", "require_approval without approval_id")
            approved: PolicyDecision = yield from self._wait_flow(chain_id, res)
            return approved
        return decision

    def _wait_flow(self, chain_id: str, res: RecordActionResponse) -> Flow[PolicyDecision]:
        """Blocks on an approval gate: polls approval-status every poll interval (5 s: constant,
        no backoff), each poll held by the service up to the interval (long-poll) unless
        disabled; transient errors are retried on the next tick; the local wait window is
        ``default_approval_timeout_hours`` from the start of the wait."""
        approval_id = res.approval_id
        assert approval_id is not None
        internals = self.config.internals
        now = internals.now
        hours = self.config.default_approval_timeout_hours
        deadline = now() + hours * 3600
        interval = internals.poll_interval_seconds
        long_poll = internals.long_poll_enabled
        wait = min(interval, MAX_APPROVAL_WAIT_SECONDS) if long_poll else 0.0
        started = -math.inf
        while True:
            pause = started + interval - now() if long_poll else interval
            if pause > 0:
                yield Sleep(pause)
            started = now()
            try:
                status: ApprovalStatusResponse = yield from approval_status_flow(chain_id, approval_id, wait)
            except (BackendUnavailableError, ServiceApiError, ServiceTransportError) as err:
                if not _transient(err):
                    raise
                if now() >= deadline:
                    raise ChainTimeoutError(chain_id, approval_id, hours) from None
                continue
            approval = status.approval
            if approval is not None and approval.status != "pending":
                exception_id = approval.exception.get("exception_id") if approval.exception else None
                decision = PolicyDecision.from_wire(
                    approval.decision,
                    event_id=res.event_id,
                    sequence=res.sequence,
                    approval_id=approval_id,
                    exception_id=exception_id if isinstance(exception_id, str) else None,
                    category=res.category,
                )
                if approval.status == "approved":
                    return decision
                condition = approval.condition if approval.condition is not None else decision.decision_reason
                raise ActionDeniedError(decision.decision_source, condition, decision.policy_name, decision)
            if now() >= deadline:
                raise ChainTimeoutError(chain_id, approval_id, hours)

    def _fail_mode(self, action: Mapping[str, Any], cause: BackendUnavailableError) -> PolicyDecision:
        category = categorize(action["action_type"], action["action_name"], action["payload"], self.policy_config)
        mode, key = self.config.fail_mode_for(category)
        if mode == "deny":
            raise BackendUnavailableError(
                f"{cause.message}; fail mode deny for {category} actions (fail_modes.{key}), the action was not recorded",
                category=category,
                fail_mode_key=key,
                status_code=cause.status_code,
            ) from cause
        return PolicyDecision(
            policy_decision="allow_with_flag",
            decision_reason=(
                f"Backend unavailable ({cause.message}); allowed without evaluation by fail mode allow "
                f"(fail_modes.{key}, category {category}); not recorded"
            ),
            decision_source="fail_mode",
            policy_name=f"fail_modes.{key}",
            remediation="Restore connectivity to the governance service; this action was not recorded in the chain",
            category=category,
        )

    async def record_agent_action(
        self,
        agent_name: str,
        action_type: str,
        action_name: str,
        payload: Mapping[str, Any] | None = None,
        parent_agent_name: str | None = None,
    ) -> PolicyDecision:
        """Records one action and returns the backend's decision (``allow`` or
        ``allow_with_flag``; spec: record_agent_action).

        The payload is sanitized before it leaves the process. On ``require_approval`` it waits,
        polling approval-status every 5 s (each poll held by the service until the decision or
        the interval's end), and returns the resumed decision (``decision_source`` human_approval)
        once a reviewer approves. Cancelling the awaiting task stops the wait.

        Args:
            agent_name: the agent taking the action.
            action_type: category: tool_call, llm_call, state_update, ...
            action_name: name within the type (for tool_call, the tool name).
            payload: the action inputs (sanitized before sending).
            parent_agent_name: the delegating agent, for hierarchical workflows.

        Raises:
            ActionDeniedError: policy deny; reviewer deny (notes as ``condition``); backend
                approval timeout (``condition`` contains "not resolved within").
            ServiceKillSwitchError: the organization kill switch is active.
            ChainAutoPausedError: a runaway limit halted the chain (now or earlier).
            PolicyViolationError: an earlier action of this chain still awaits approval.
            ChainTimeoutError: the local wait window expired.
            BackendUnavailableError: the backend is unreachable and the category's fail mode is
                deny (with allow, a flagged decision with ``decision_source`` fail_mode and
                ``event_id`` None is returned instead; nothing is buffered).
            ServiceApiError: any other answer of the service (400, 401, 403, 404, 409, 500, ...).
            ValueError: invalid arguments. RuntimeError: the chain is not open.
        """
        result: PolicyDecision = await self._arun(
            self._record_flow(agent_name, action_type, action_name, payload, parent_agent_name)
        )
        return result

    def record_agent_action_sync(
        self,
        agent_name: str,
        action_type: str,
        action_name: str,
        payload: Mapping[str, Any] | None = None,
        parent_agent_name: str | None = None,
    ) -> PolicyDecision:
        """The blocking twin of :meth:`record_agent_action` (same arguments, result and errors)."""
        result: PolicyDecision = self._run(
            self._record_flow(agent_name, action_type, action_name, payload, parent_agent_name)
        )
        return result

    async def receipt(self) -> Receipt | None:
        """The signed receipt after the chain has completed, else None (spec: chain.receipt())."""
        if self._chain_id is None:
            return None
        if self._state == "closed":
            http = AsyncHttp(self._settings)
            try:
                found: Receipt | None = await run_async(get_receipt_flow(self._chain_id), http)
            finally:
                await http.aclose()
            return found
        result: Receipt | None = await self._arun(get_receipt_flow(self._chain_id))
        return result

    def receipt_sync(self) -> Receipt | None:
        """The blocking twin of :meth:`receipt`."""
        if self._chain_id is None:
            return None
        if self._state == "closed":
            http = SyncHttp(self._settings)
            try:
                found: Receipt | None = run_sync(get_receipt_flow(self._chain_id), http)
            finally:
                http.close()
            return found
        result: Receipt | None = self._run(get_receipt_flow(self._chain_id))
        return result

    def __repr__(self) -> str:
        return f"Chain(name={self.name!r}, chain_id={self._chain_id!r}, status={self._state!r})"
