"""MCP adapter (spec: "Framework adapters" → ``sdk.mcp.McpAdapter``).

Governs MCP tool calls through an already-entered :class:`~sdk.Chain`: each call is recorded as
action_type ``tool_call`` with action_name = the tool name and payload = the call's arguments
(sanitized for the record; the handler gets the original arguments), and the handler runs only
when the backend allows it (after an approval when one is required). Denials, the kill switch,
auto-pause and fail-mode denials are raised before the handler runs; inside a FastMCP tool they
become an ``isError`` tool result carrying the error message.

Works on both sides of MCP:

- server side::

      server = FastMCP("billing")

      @server.tool()
      @adapter.tool("pay_invoice")
      async def pay_invoice(amount_usd: float) -> str: ...

- client or proxy side::

      result = await adapter.handle_tool_call(
          "create_entities", args, lambda a: session.call_tool("create_entities", a)
      )

``install(server)`` always raises ``RuntimeError`` (spec): there is no safe generic way to patch a
server's handlers; wrap each tool explicitly. The adapter itself needs only the SDK; the ``mcp``
package is needed for the servers and clients it is used with (``tollgate-sdk[mcp]``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from .chain import Chain
from .models import PolicyDecision

__all__ = ["McpAdapter"]

R = TypeVar("R")


def _payload(arguments: object) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return {} if arguments is None else {"arguments": arguments}


def _is_context(value: object) -> bool:
    """FastMCP's injected Context parameter (never part of the recorded arguments)."""
    return any(c.__name__ == "Context" and c.__module__.startswith("mcp.") for c in type(value).__mro__)


class McpAdapter:
    """Governs MCP tool calls through an entered chain (see the module docstring).

    Args:
        chain: an already-entered Chain.
        agent_name: the agent recorded for every tool call; default ``mcp-agent``.
        parent_agent_name: the delegating agent, for hierarchical workflows.

    Raises:
        ValueError: the chain has not been entered, or agent_name is empty.
    """

    def __init__(self, chain: Chain, agent_name: str = "mcp-agent", parent_agent_name: str | None = None) -> None:
        if not isinstance(chain, Chain) or chain.chain_id is None:
            raise ValueError("McpAdapter: chain: must be an entered Chain")
        if not isinstance(agent_name, str) or agent_name.strip() == "":
            raise ValueError("McpAdapter: agent_name: must be a non-empty string")
        self.chain = chain
        self.agent_name = agent_name
        self.parent_agent_name = parent_agent_name
        self.last_decision: PolicyDecision | None = None
        """The decision of the most recent allowed call."""

    async def handle_tool_call(
        self,
        tool_name: str,
        arguments: Any,
        handler: Callable[[Any], Awaitable[R] | R],
    ) -> R:
        """Records the tool call and, when allowed, runs ``handler(arguments)`` and returns its
        result (awaited when it is awaitable).

        Raises:
            every error of ``Chain.record_agent_action`` (ActionDeniedError,
            ServiceKillSwitchError, ChainAutoPausedError, ChainTimeoutError,
            BackendUnavailableError, ServiceApiError, ...) — the handler is then not called;
            otherwise whatever the handler raises.
        """
        self.last_decision = await self.chain.record_agent_action(
            self.agent_name, "tool_call", tool_name, _payload(arguments), self.parent_agent_name
        )
        result = handler(arguments)
        if inspect.isawaitable(result):
            awaited: R = await result
            return awaited
        return result

    def handle_tool_call_sync(self, tool_name: str, arguments: Any, handler: Callable[[Any], R]) -> R:
        """The blocking twin of :meth:`handle_tool_call` (for a synchronous handler)."""
        self.last_decision = self.chain.record_agent_action_sync(
            self.agent_name, "tool_call", tool_name, _payload(arguments), self.parent_agent_name
        )
        return handler(arguments)

    def tool(self, tool_name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Awaitable[Any]]]:
        """A decorator for an MCP tool function (spec: ``tool(tool_name)``): the returned async
        function has the same signature (FastMCP reads it for the tool's input schema), records
        the call with its arguments first, then runs the function (sync or async). The default
        tool name is the function's name."""

        def decorate(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
            name = tool_name or fn.__name__
            signature = inspect.signature(fn)

            @functools.wraps(fn)
            async def governed(*args: Any, **kwargs: Any) -> Any:
                bound = signature.bind_partial(*args, **kwargs)
                arguments = {k: v for k, v in bound.arguments.items() if not _is_context(v)}

                async def run(_: Any) -> Any:
                    result = fn(*args, **kwargs)
                    return await result if inspect.isawaitable(result) else result

                return await self.handle_tool_call(name, arguments, run)

            return governed

        return decorate

    def install(self, server: object) -> None:
        """Always raises (spec: install(server) always raises RuntimeError).

        Raises:
            RuntimeError: always.
        """
        raise RuntimeError(
            "McpAdapter.install() is not supported: decorate each tool with @adapter.tool(name), "
            "or call adapter.handle_tool_call(name, arguments, handler)"
        )
