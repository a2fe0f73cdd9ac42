"""CrewAI adapter (spec: "Framework adapters" → ``sdk.crewai.govern``).

Wraps a ``crewai.Crew`` so that every ``kickoff`` opens a chain named ``chain_name`` (default
``crewai_workflow``) and records each tool call of the crew's agents before the tool runs
(agent_name = the agent's role, action_type ``tool_call``, action_name = the tool name, payload =
the tool input), through CrewAI's own before/after tool-call hooks. The chain is completed when
the kickoff returns (marked failed when it raises).

A call the governance does not allow is blocked by the hook, so the tool never runs; CrewAI hands
the agent a tool result saying so ("Tool execution blocked by Tollgate: ..." with the denial's
message) and the crew goes on, the way it handles a failed tool. Any other governance failure of a
call (kill switch, auto-pause, unreachable backend with fail mode deny, local approval timeout, a
service error) also blocks the tool (CrewAI swallows other hook errors, which would let the tool
run, so none escapes), and the first such error is raised from ``kickoff`` after the crew stops,
with the chain marked failed. Needs ``pip install tollgate-sdk[crewai]``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

try:
    from crewai.hooks.dispatch import HookAborted
    from crewai.hooks.tool_hooks import (
        ToolCallHookContext,
        register_after_tool_call_hook,
        register_before_tool_call_hook,
        unregister_after_tool_call_hook,
        unregister_before_tool_call_hook,
    )
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError("sdk.crewai needs crewai: pip install 'tollgate-sdk[crewai]'") from err

from .chain import Chain
from .config import ChainConfig
from .exceptions import ActionDeniedError
from .models import PolicyDecision

__all__ = ["DEFAULT_CREWAI_CHAIN_NAME", "BlockedToolCall", "GovernedCrew", "govern"]

DEFAULT_CREWAI_CHAIN_NAME = "crewai_workflow"
BLOCKED_PREFIX = "Tool execution blocked by Tollgate"


@dataclass(frozen=True)
class RecordedToolCall:
    """An allowed tool call of a kickoff and its decision."""

    agent_name: str
    tool_name: str
    decision: PolicyDecision


@dataclass(frozen=True)
class BlockedToolCall:
    """A tool call the governance blocked, and why."""

    agent_name: str
    tool_name: str
    error: Exception


class _Run:
    """The hooks of one kickoff: record each tool call of ``crew`` into ``chain``."""

    def __init__(self, crew: Any, chain: Chain) -> None:
        self.crew = crew
        self.chain = chain
        self.lock = threading.Lock()
        self.recorded: list[RecordedToolCall] = []
        self.blocked: list[BlockedToolCall] = []
        self._messages: dict[int, str] = {}

    def _ours(self, ctx: ToolCallHookContext) -> bool:
        if ctx.crew is not None:
            return ctx.crew is self.crew
        agents = getattr(self.crew, "agents", None) or []
        return any(ctx.agent is a for a in agents)

    def before(self, ctx: ToolCallHookContext) -> bool | None:
        if not self._ours(ctx):
            return None
        agent = str(getattr(ctx.agent, "role", "") or "crewai-agent").strip() or "crewai-agent"
        try:
            with self.lock:
                decision = self.chain.record_agent_action_sync(agent, "tool_call", ctx.tool_name, dict(ctx.tool_input))
                self.recorded.append(RecordedToolCall(agent, ctx.tool_name, decision))
            return None
        except Exception as err:  # every governance failure blocks the tool (fail closed)
            self.blocked.append(BlockedToolCall(agent, ctx.tool_name, err))
            self._messages[id(ctx.tool_input)] = f"{BLOCKED_PREFIX}: {err}"
            raise HookAborted(reason=f"{BLOCKED_PREFIX}: {type(err).__name__}", source="tollgate") from None

    def after(self, ctx: ToolCallHookContext) -> str | None:
        if not self._ours(ctx):
            return None
        return self._messages.pop(id(ctx.tool_input), None)

    def fatal(self) -> Exception | None:
        """The first governance failure that is not a plain denial (raised after the kickoff)."""
        return next((b.error for b in self.blocked if not isinstance(b.error, ActionDeniedError)), None)


class GovernedCrew:
    """A governed crew: ``kickoff`` and ``kickoff_async`` like the crew's own."""

    def __init__(
        self,
        crew: Any,
        chain_name: str,
        metadata: Mapping[str, Any] | None,
        *,
        policy_config: Mapping[str, Any] | None = None,
        config: ChainConfig | None = None,
    ) -> None:
        if not callable(getattr(crew, "kickoff", None)):
            raise TypeError("govern: the wrapped object must be a crewai Crew (a kickoff method)")
        self.crew = crew
        self.chain_name = chain_name
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._policy_config = dict(policy_config) if policy_config else None
        self._config = config
        self.last_chain: Chain | None = None
        """The chain of the most recent kickoff."""
        self.recorded: list[RecordedToolCall] = []
        """The allowed tool calls of the most recent kickoff."""
        self.blocked: list[BlockedToolCall] = []
        """The blocked tool calls of the most recent kickoff."""

    def kickoff(self, inputs: Mapping[str, Any] | None = None, *, chain: Chain | None = None) -> Any:
        """Runs the crew inside a chain and returns its output.

        Args:
            inputs: the crew's inputs.
            chain: record into this entered chain instead of opening (and completing) a new one.

        Raises:
            the first non-denial governance error of a tool call (ServiceKillSwitchError,
            ChainAutoPausedError, BackendUnavailableError, ChainTimeoutError, ServiceApiError),
            after the crew stopped; the crew's own errors; BackendUnavailableError /
            ServiceApiError when the chain cannot be opened or completed.
        """
        own = chain is None
        if chain is None:
            chain = Chain(self.chain_name, self.metadata, self._policy_config, config=self._config).enter()
        elif chain.chain_id is None:
            raise TypeError("chain: must be an entered Chain")
        run = _Run(self.crew, chain)
        self.last_chain, self.recorded, self.blocked = chain, run.recorded, run.blocked
        register_before_tool_call_hook(run.before)
        register_after_tool_call_hook(run.after)
        try:
            output = self.crew.kickoff(inputs=dict(inputs) if inputs is not None else None)
            fatal = run.fatal()
            if fatal is not None:
                raise fatal
        except BaseException as err:
            if own:
                try:
                    chain.exit(err)
                except Exception:  # noqa: S110 - never hide the run's error
                    pass
            raise
        finally:
            unregister_before_tool_call_hook(run.before)
            unregister_after_tool_call_hook(run.after)
        if own:
            chain.exit()
        return output

    async def kickoff_async(self, inputs: Mapping[str, Any] | None = None, *, chain: Chain | None = None) -> Any:
        """Runs :meth:`kickoff` in a worker thread (CrewAI's hooks are synchronous and an approval
        wait may take hours, so it must not block the event loop)."""
        return await asyncio.to_thread(self.kickoff, inputs, chain=chain)


def govern(
    crew: Any,
    chain_name: str = DEFAULT_CREWAI_CHAIN_NAME,
    metadata: Mapping[str, Any] | None = None,
    *,
    policy_config: Mapping[str, Any] | None = None,
    config: ChainConfig | None = None,
) -> GovernedCrew:
    """Governs a CrewAI crew (spec: ``govern(crew, chain_name, metadata)``).

    Raises:
        TypeError: the object has no ``kickoff`` method.
    """
    return GovernedCrew(crew, chain_name, metadata, policy_config=policy_config, config=config)
