"""The shared part of the ``sdk.langgraph`` and ``sdk.langchain`` adapters: a LangChain callback
handler that records governed runs into a chain, and a wrapper that runs a runnable (anything
with LangChain's ``invoke``/``ainvoke``/``stream``/``astream`` taking ``config={"callbacks": ...}``)
inside a chain.

LangChain calls the handler before every runnable and tool starts; registered with
``raise_error=True``, a denial raised there stops the node or tool before it executes, and an
approval gate blocks it. Recordings of one run are serialized (a lock), so parallel LangGraph
branches wait for each other's decision instead of hitting the service's "approval pending"
conflict.

What is recorded:

- langgraph: each node execution (agent_name = action_name = node name, action_type
  ``node_execution``, payload ``{langgraph_step, langgraph_triggers}``), internal ``__start__``
  style nodes excluded; each tool call (agent_name = the node that ran it, action_type
  ``tool_call``, action_name = tool name, payload = the tool arguments).
- langchain: the invocation itself (agent_name = the wrapped object's type name, action_type
  ``chain_execution``, action_name = its run name, payload = the input) and each tool call inside
  it (``tool_call``). LLM calls are not recorded automatically.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

try:
    from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler, BaseCallbackManager
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "sdk.langgraph and sdk.langchain need langchain-core: pip install 'tollgate-sdk[langgraph]' "
        "or 'tollgate-sdk[langchain]'"
    ) from err

from .chain import Chain
from .config import ChainConfig
from .models import PolicyDecision

Mode = Literal["langgraph", "langchain"]

_Plan = tuple[str, str, str, dict[str, Any]]
"""A governed action to record: agent_name, action_type, action_name, payload."""


@dataclass(frozen=True)
class RecordedRunAction:
    """One allowed action recorded by a run's handler."""

    agent_name: str
    action_type: str
    action_name: str
    decision: PolicyDecision


def tool_payload(value: object) -> dict[str, Any]:
    """A tool's input as a payload: a mapping as is, JSON object text parsed, else ``{input}``."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {} if value is None else {"input": value}


def _serialized_name(serialized: Mapping[str, Any] | None) -> str:
    ident = (serialized or {}).get("id")
    if isinstance(ident, list) and ident and isinstance(ident[-1], str):
        return ident[-1]
    name = (serialized or {}).get("name")
    return name if isinstance(name, str) else ""


class _Planner:
    """Decides which callbacks are governed actions (shared by the sync and async handlers)."""

    def __init__(self, mode: Mode, agent_name: str | None) -> None:
        self.mode = mode
        self.agent_name = agent_name or "langchain"
        self.root: UUID | None = None

    def chain_start(
        self,
        serialized: Mapping[str, Any] | None,
        inputs: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: Mapping[str, Any] | None,
        name: str | None,
    ) -> _Plan | None:
        is_root = self.root is None
        if is_root:
            self.root = run_id
        if self.mode == "langchain":
            if not is_root:
                return None
            action = name or _serialized_name(serialized) or "invoke"
            return self.agent_name, "chain_execution", action, tool_payload(inputs)
        node = (metadata or {}).get("langgraph_node")
        if is_root or parent_run_id != self.root or not isinstance(node, str) or node != name:
            return None
        if node.startswith("__") or "langsmith:hidden" in (tags or []):
            return None
        meta = metadata or {}
        return node, "node_execution", node, {
            "langgraph_step": meta.get("langgraph_step"),
            "langgraph_triggers": list(meta.get("langgraph_triggers") or []) or None,
        }

    def tool_start(
        self,
        serialized: Mapping[str, Any] | None,
        input_str: str,
        run_id: UUID,
        metadata: Mapping[str, Any] | None,
        inputs: Mapping[str, Any] | None,
        name: str | None,
    ) -> _Plan:
        if self.root is None:
            self.root = run_id
        tool = name or _serialized_name(serialized) or "tool"
        if self.mode == "langgraph":
            node = (metadata or {}).get("langgraph_node")
            agent = node if isinstance(node, str) else "langgraph"
        else:
            agent = self.agent_name
        return agent, "tool_call", tool, tool_payload(inputs if inputs is not None else input_str)


class _Recorder:
    """What the blocking and the asyncio handler share: the planner, the lock serializing the
    run's recordings and the blocking recording itself."""

    raise_error = True
    run_inline = True

    def __init__(self, chain: Chain, mode: Mode, agent_name: str | None = None) -> None:
        self.chain = chain
        self._planner = _Planner(mode, agent_name)
        # One lock for both paths of the async handler: LangChain runs it on the run's loop for
        # async runnables, and with asyncio.run() in a worker thread for sync tools inside async runs.
        self._lock = threading.Lock()
        self.recorded: list[RecordedRunAction] = []

    def _record_blocking(self, plan: _Plan | None) -> None:
        if plan is None:
            return
        agent, action_type, action_name, payload = plan
        with self._lock:
            decision = self.chain.record_agent_action_sync(agent, action_type, action_name, payload)
            self.recorded.append(RecordedRunAction(agent, action_type, action_name, decision))


class GovernanceCallbackHandler(_Recorder, BaseCallbackHandler):
    """Records a governed run into a chain (blocking; used by ``invoke`` and ``stream``)."""

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        self._record_blocking(
            self._planner.chain_start(serialized, inputs, run_id, parent_run_id, tags, metadata, kwargs.get("name"))
        )

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        self._record_blocking(self._planner.tool_start(serialized, input_str, run_id, metadata, inputs, kwargs.get("name")))


class AsyncGovernanceCallbackHandler(_Recorder, AsyncCallbackHandler):
    """Records a governed run into a chain (asyncio; used by ``ainvoke`` and ``astream``)."""

    _home: asyncio.AbstractEventLoop | None = None

    def bind(self) -> None:
        """Remembers the loop of the run (called by the wrapper inside the run's loop)."""
        self._home = asyncio.get_running_loop()

    async def _record(self, plan: _Plan | None) -> None:
        if plan is None:
            return
        agent, action_type, action_name, payload = plan
        if asyncio.get_running_loop() is not self._home:
            # A throwaway loop in a worker thread: blocking here blocks only that thread.
            self._record_blocking(plan)
            return
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(0.005)
        try:
            decision = await self.chain.record_agent_action(agent, action_type, action_name, payload)
            self.recorded.append(RecordedRunAction(agent, action_type, action_name, decision))
        finally:
            self._lock.release()

    async def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        await self._record(
            self._planner.chain_start(serialized, inputs, run_id, parent_run_id, tags, metadata, kwargs.get("name"))
        )

    async def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        await self._record(self._planner.tool_start(serialized, input_str, run_id, metadata, inputs, kwargs.get("name")))


def _with_handler(config: Mapping[str, Any] | None, handler: Any) -> dict[str, Any]:
    """A copy of a RunnableConfig with ``handler`` added to its callbacks."""
    out = dict(config or {})
    callbacks = out.get("callbacks")
    if callbacks is None:
        out["callbacks"] = [handler]
    elif isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        out["callbacks"] = manager
    else:
        out["callbacks"] = [*callbacks, handler]
    return out


class GovernedRunnable:
    """Base of ``GovernedGraph`` and ``GovernedChain``.

    Each ``invoke``/``ainvoke``/``stream``/``astream`` opens a chain named ``chain_name`` and
    completes it afterwards (marked failed when the run raises), unless ``chain=`` passes an
    already-entered chain, which is then used and left open.
    """

    def __init__(
        self,
        runnable: Any,
        mode: Mode,
        chain_name: str,
        metadata: Mapping[str, Any] | None,
        *,
        policy_config: Mapping[str, Any] | None = None,
        config: ChainConfig | None = None,
        agent_name: str | None = None,
    ) -> None:
        if not callable(getattr(runnable, "invoke", None)):
            raise TypeError("govern: the wrapped object must have an invoke(input, config) method")
        self.runnable = runnable
        self.chain_name = chain_name
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._policy_config = dict(policy_config) if policy_config else None
        self._config = config
        self._mode: Mode = mode
        self._agent_name = agent_name
        self.last_chain: Chain | None = None
        """The chain of the most recent run (opened or passed in)."""
        self.last_handler: GovernanceCallbackHandler | AsyncGovernanceCallbackHandler | None = None
        """The handler of the most recent run (its ``recorded`` actions)."""

    def _new_chain(self, given: Chain | None) -> tuple[Chain, bool]:
        if given is not None:
            if given.chain_id is None:
                raise TypeError("chain: must be an entered Chain")
            return given, False
        return Chain(self.chain_name, self.metadata, self._policy_config, config=self._config), True

    def _open(self, given: Chain | None) -> tuple[Chain, bool, GovernanceCallbackHandler]:
        """The run's chain (entered when it is the run's own), whether it is, and its handler."""
        governed, own = self._new_chain(given)
        if own:
            governed.enter()
        handler = GovernanceCallbackHandler(governed, self._mode, self._agent_name)
        self.last_chain, self.last_handler = governed, handler
        return governed, own, handler

    async def _aopen(self, given: Chain | None) -> tuple[Chain, bool, AsyncGovernanceCallbackHandler]:
        """The async twin of :meth:`_open` (the handler bound to the running loop)."""
        governed, own = self._new_chain(given)
        if own:
            await governed.aenter()
        handler = AsyncGovernanceCallbackHandler(governed, self._mode, self._agent_name)
        handler.bind()
        self.last_chain, self.last_handler = governed, handler
        return governed, own, handler

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None, *, chain: Chain | None = None, **kwargs: Any) -> Any:
        """Runs the wrapped object inside a chain and returns its result.

        Raises:
            the run's error (ActionDeniedError, ServiceKillSwitchError, ChainAutoPausedError,
            ChainTimeoutError, BackendUnavailableError from the handler, or the framework's own);
            BackendUnavailableError / ServiceApiError when the chain cannot be opened or completed.
        """
        governed, own, handler = self._open(chain)
        try:
            result = self.runnable.invoke(input, _with_handler(config, handler), **kwargs)
        except BaseException as err:
            if own:
                _quiet(lambda: governed.exit(err))
            raise
        if own:
            governed.exit()
        return result

    async def ainvoke(
        self, input: Any, config: Mapping[str, Any] | None = None, *, chain: Chain | None = None, **kwargs: Any
    ) -> Any:
        """The async twin of :meth:`invoke`."""
        governed, own, handler = await self._aopen(chain)
        try:
            result = await self.runnable.ainvoke(input, _with_handler(config, handler), **kwargs)
        except BaseException as err:
            if own:
                await _aquiet(governed.aexit(err))
            raise
        if own:
            await governed.aexit()
        return result

    def stream(
        self, input: Any, config: Mapping[str, Any] | None = None, *, chain: Chain | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Streams the wrapped object's output inside a chain; the chain is completed when the
        stream ends (also when the consumer stops early) and marked failed when it raises."""
        governed, own, handler = self._open(chain)
        failed = False
        try:
            yield from self.runnable.stream(input, _with_handler(config, handler), **kwargs)
        except Exception as err:
            failed = True
            if own:
                _quiet(lambda: governed.exit(err))
            raise
        finally:
            if own and not failed:
                governed.exit()

    async def astream(
        self, input: Any, config: Mapping[str, Any] | None = None, *, chain: Chain | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The async twin of :meth:`stream`."""
        governed, own, handler = await self._aopen(chain)
        failed = False
        try:
            async for chunk in self.runnable.astream(input, _with_handler(config, handler), **kwargs):
                yield chunk
        except Exception as err:
            failed = True
            if own:
                await _aquiet(governed.aexit(err))
            raise
        finally:
            if own and not failed:
                await governed.aexit()


def _quiet(fn: Any) -> None:
    try:
        fn()
    except Exception:  # noqa: S110 - completion errors must not hide the run's error
        pass


async def _aquiet(completion: Awaitable[Any]) -> None:
    """The async twin of :func:`_quiet`."""
    try:
        await completion
    except Exception:  # noqa: S110 - completion errors must not hide the run's error
        pass
