"""LangChain adapter (spec: "Framework adapters" → ``sdk.langchain.govern``).

Wraps any LangChain runnable — a chain (``RunnableSequence``, ``RunnableLambda``, ...), a tool, an
``AgentExecutor`` or an agent made by ``langchain.agents.create_agent`` — so that every run opens a
chain named ``chain_name`` (default ``langchain_workflow``), records the invocation
(``chain_execution``) and each tool call (``tool_call``) before it runs, and completes the chain
afterwards. The agent name is the wrapped object's type name, taken at wrap time. Needs
``pip install tollgate-sdk[langchain]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._governed import GovernedRunnable
from .config import ChainConfig

__all__ = ["DEFAULT_LANGCHAIN_CHAIN_NAME", "GovernedChain", "govern", "type_name_of"]

DEFAULT_LANGCHAIN_CHAIN_NAME = "langchain_workflow"


def type_name_of(value: object) -> str:
    """The type name of an object at wrap time (``RunnableSequence``, ``AgentExecutor``, ...)."""
    name = type(value).__name__
    return name if name and name != "object" else "langchain"


class GovernedChain(GovernedRunnable):
    """A governed LangChain runnable or agent: ``invoke``, ``ainvoke``, ``stream``, ``astream``."""

    agent_name: str
    """The agent name recorded for every action: the wrapped object's type name at wrap time."""


def govern(
    agent_executor_or_chain: Any,
    chain_name: str = DEFAULT_LANGCHAIN_CHAIN_NAME,
    metadata: Mapping[str, Any] | None = None,
    *,
    policy_config: Mapping[str, Any] | None = None,
    config: ChainConfig | None = None,
) -> GovernedChain:
    """Governs a LangChain runnable or agent (spec: ``govern(agent_executor_or_chain, chain_name,
    metadata)``).

    Raises:
        TypeError: the object has no ``invoke`` method.
    """
    agent_name = type_name_of(agent_executor_or_chain)
    governed = GovernedChain(
        agent_executor_or_chain,
        "langchain",
        chain_name,
        metadata,
        policy_config=policy_config,
        config=config,
        agent_name=agent_name,
    )
    governed.agent_name = agent_name
    return governed
