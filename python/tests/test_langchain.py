"""sdk.langchain.govern with real LangChain runnables: a RunnableSequence that calls a real tool, a
tool on its own, and an agent made by langchain's create_agent with langchain-core's fake chat
model (scripted tool calls; no LLM) — against the real service."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool

from sdk import ActionDeniedError
from sdk.langchain import GovernedChain, govern

from .support import Env, Ticker


class ToolCallingFakeModel(FakeMessagesListChatModel):
    """langchain-core's fake chat model, answering the scripted messages; tools bind as a no-op."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def make_tools(ran: dict[str, list[float]]) -> list[BaseTool]:
    @tool
    def pay_invoice(amount_usd: float) -> str:
        """Pays an invoice."""
        ran["pay"].append(amount_usd)
        return f"paid {amount_usd}"

    return [pay_invoice]


def events(env: Env, chain_id: str) -> list[tuple[str, str, str, str]]:
    return [(e.agent_name, e.action_type, e.action_name, e.decision.policy_decision) for e in env.stored(chain_id).events]


def make_agent(amount: float, ran: dict[str, list[float]]) -> Any:
    model = ToolCallingFakeModel(
        responses=[
            AIMessage("", tool_calls=[{"id": "call_1", "name": "pay_invoice", "args": {"amount_usd": amount}}]),
            AIMessage("done"),
        ]
    )
    return create_agent(model, tools=make_tools(ran))


def test_a_runnable_sequence_records_the_invocation_and_its_tool_call(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    (pay,) = make_tools(ran)
    chain = RunnableLambda(lambda x: {"amount_usd": x["amount"]}) | pay
    governed = govern(chain, metadata={"app": "accounts-payable"}, config=env.config())
    assert isinstance(governed, GovernedChain)
    assert governed.agent_name == "RunnableSequence"
    assert governed.chain_name == "langchain_workflow"
    assert governed.invoke({"amount": 42}) == "paid 42.0"
    assert ran["pay"] == [42]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    chain_id = governed.last_chain.chain_id
    assert events(env, chain_id) == [
        ("RunnableSequence", "chain_execution", "RunnableSequence", "allow"),
        ("RunnableSequence", "tool_call", "pay_invoice", "allow"),
    ]
    stored = env.stored(chain_id)
    assert stored.events[0].payload == {"amount": 42}
    assert stored.events[1].payload == {"amount_usd": 42}
    assert stored.status == "completed"
    receipt = governed.last_chain.receipt_sync()
    assert receipt is not None and receipt.metadata == {"app": "accounts-payable"}


def test_an_agent_from_create_agent_is_governed_tool_by_tool(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    agent = make_agent(25, ran)
    governed = govern(agent, "lc-agent", config=env.config())
    assert governed.agent_name == type(agent).__name__
    out = governed.invoke({"messages": [HumanMessage("pay invoice 7")]})
    assert out["messages"][-1].content == "done"
    assert ran["pay"] == [25]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    recorded = events(env, governed.last_chain.chain_id)
    assert recorded[0][1] == "chain_execution"
    assert (governed.agent_name, "tool_call", "pay_invoice", "allow") in recorded
    assert env.stored(governed.last_chain.chain_id).name == "lc-agent"


async def test_ainvoke_of_an_agent_blocks_on_approval_and_resumes(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    ticker = Ticker()
    governed = govern(make_agent(7500, ran), "lc-agent-approval", config=env.config(ticker))

    def on_tick(n: int) -> None:
        assert ran["pay"] == []
        assert governed.last_chain is not None and governed.last_chain.chain_id
        env.admin.decide(env.org, env.admin.pending_approval_id(env.org, governed.last_chain.chain_id), "approve")

    ticker.on_tick = on_tick
    out = await governed.ainvoke({"messages": [HumanMessage("pay invoice 7")]})
    assert out["messages"][-1].content == "done"
    assert ran["pay"] == [7500]
    assert ticker.sleeps == [5.0]
    assert governed.last_handler is not None
    pay = next(r for r in governed.last_handler.recorded if r.action_name == "pay_invoice")
    assert pay.decision.decision_source == "human_approval"


def test_a_denied_tool_inside_an_agent_never_runs(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    governed = govern(
        make_agent(25, ran), "lc-agent-deny", config=env.config(), policy_config={"financial_deny_threshold_usd": 10}
    )
    try:
        out = governed.invoke({"messages": [HumanMessage("pay invoice 7")]})
    except ActionDeniedError as err:
        assert err.policy_name == "financial_deny_threshold"
    else:  # the agent's tool node turned the denial into a message for the model
        messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert any("financial_deny_threshold" in str(m.content) for m in messages)
    assert ran["pay"] == []
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert (governed.agent_name, "tool_call", "pay_invoice", "deny") in events(env, governed.last_chain.chain_id)


def test_a_denied_invocation_stops_before_anything_runs(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    (pay,) = make_tools(ran)
    governed = govern(
        RunnableLambda(lambda x: {"amount_usd": x["amount"]}) | pay,
        "lc-deny",
        config=env.config(),
        policy_config={
            "custom_rules": [
                {"name": "frozen", "match": {"action_type": "chain_execution"}, "outcome": "deny", "reason": "Frozen"}
            ]
        },
    )
    with pytest.raises(ActionDeniedError) as info:
        governed.invoke({"amount": 1})
    assert info.value.condition == "Frozen"
    assert ran["pay"] == []
    assert governed.last_chain is not None and governed.last_chain.chain_id
    stored = env.stored(governed.last_chain.chain_id)
    assert stored.status == "failed"
    assert [e.action_type for e in stored.events] == ["chain_execution"]


def test_a_tool_on_its_own_is_one_tool_call(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    (pay,) = make_tools(ran)
    governed = govern(pay, config=env.config())
    assert governed.agent_name == type(pay).__name__
    assert governed.invoke({"amount_usd": 3}) == "paid 3.0"
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert events(env, governed.last_chain.chain_id) == [(type(pay).__name__, "tool_call", "pay_invoice", "allow")]


async def test_astream_of_a_sequence_completes_the_chain(env: Env) -> None:
    ran: dict[str, list[float]] = {"pay": []}
    (pay,) = make_tools(ran)
    governed = govern(RunnableLambda(lambda x: {"amount_usd": x["amount"]}) | pay, "lc-astream", config=env.config())
    chunks = [c async for c in governed.astream({"amount": 5})]
    assert chunks == ["paid 5.0"]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert env.stored(governed.last_chain.chain_id).status == "completed"
    assert len(env.stored(governed.last_chain.chain_id).events) == 2
