"""LangGraph adapter (spec: "Framework adapters" → ``sdk.langgraph.govern``).

Wraps a compiled graph (``StateGraph(...).compile()``) so that every run opens a chain named
``chain_name`` (default ``langgraph_workflow``) and records each node execution and each tool
call before it runs (see ``sdk._governed`` for what is recorded). A denial stops the run; inside
a ``ToolNode(handle_tool_errors=True)`` a tool denial becomes an error ToolMessage for the model
instead, and the tool does not run. Needs ``pip install tollgate-sdk[langgraph]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._governed import GovernedRunnable
from .config import ChainConfig

__all__ = ["DEFAULT_LANGGRAPH_CHAIN_NAME", "GovernedGraph", "govern"]

DEFAULT_LANGGRAPH_CHAIN_NAME = "langgraph_workflow"


class GovernedGraph(GovernedRunnable):
    """A governed compiled LangGraph graph: ``invoke``, ``ainvoke``, ``stream``, ``astream``."""

    @property
    def graph(self) -> Any:
        """The wrapped compiled graph."""
        return self.runnable


def govern(
    compiled_graph: Any,
    chain_name: str = DEFAULT_LANGGRAPH_CHAIN_NAME,
    metadata: Mapping[str, Any] | None = None,
    *,
    policy_config: Mapping[str, Any] | None = None,
    config: ChainConfig | None = None,
) -> GovernedGraph:
    """Governs a compiled LangGraph graph (spec: ``govern(compiled_graph, chain_name, metadata)``).

    Args:
        compiled_graph: the compiled graph.
        chain_name: name of the chain each run opens.
        metadata: chain metadata (visible in receipts).
        policy_config: per-chain policy override (wire keys).
        config: the configuration; default the one stored by ``init()``.

    Raises:
        TypeError: the object has no ``invoke`` method.
    """
    return GovernedGraph(
        compiled_graph, "langgraph", chain_name, metadata, policy_config=policy_config, config=config
    )
