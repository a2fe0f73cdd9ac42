"""sdk.langgraph.govern with a real LangGraph StateGraph (an agent node that plans tool calls, a
prebuilt ToolNode with real langchain-core tools) against the real service. No LLM: the agent
node scripts its tool calls."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from sdk import ActionDeniedError, Chain
from sdk.langgraph import GovernedGraph, govern

from .support import Env, Ticker


def build_graph(amount: float, handle_tool_errors: bool = True) -> tuple[Any, dict[str, Any]]:
    ran: dict[str, Any] = {"agent": 0, "lookup": 0, "pay": []}

    @tool
    def lookup_customer(customer: str) -> str:
        """Looks up a customer."""
        ran["lookup"] += 1
        return f"customer {customer}: ok"

    @tool
    def pay_invoice(amount_usd: float) -> str:
        """Pays an invoice."""
        ran["pay"].append(amount_usd)
        return f"paid {amount_usd}"

    def agent(state: MessagesState) -> dict[str, Any]:
        ran["agent"] += 1
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage("done")]}
        return {
            "messages": [
                AIMessage(
                    "",
                    tool_calls=[
                        {"id": "call_1", "name": "lookup_customer", "args": {"customer": "acme"}},
                        {"id": "call_2", "name": "pay_invoice", "args": {"amount_usd": amount}},
                    ],
                )
            ]
        }

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = (
        StateGraph(MessagesState)
        .add_node("agent", agent)
        .add_node("tools", ToolNode([lookup_customer, pay_invoice], handle_tool_errors=handle_tool_errors))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", route)
        .add_edge("tools", "agent")
        .compile()
    )
    return graph, ran


def summary(env: Env, chain_id: str) -> list[tuple[str, str, str, str]]:
    return [
        (e.agent_name, e.action_type, e.action_name, e.decision.policy_decision) for e in env.stored(chain_id).events
    ]


EXPECTED = [
    ("agent", "node_execution", "agent", "allow"),
    ("tools", "node_execution", "tools", "allow"),
    ("tools", "tool_call", "lookup_customer", "allow"),
    ("tools", "tool_call", "pay_invoice", "allow"),
    ("agent", "node_execution", "agent", "allow"),
]


def same_run(actual: list[tuple[str, str, str, str]]) -> bool:
    """The expected run; the two tool calls of one ToolNode run in parallel, in either order."""
    return (
        len(actual) == len(EXPECTED)
        and actual[:2] == EXPECTED[:2]
        and sorted(actual[2:4]) == sorted(EXPECTED[2:4])
        and actual[4:] == EXPECTED[4:]
    )


def test_records_each_node_and_tool_call_and_completes_with_a_receipt(env: Env) -> None:
    graph, ran = build_graph(25)
    governed = govern(graph, metadata={"team": "billing"}, config=env.config())
    assert isinstance(governed, GovernedGraph)
    assert governed.chain_name == "langgraph_workflow"
    out = governed.invoke({"messages": [HumanMessage("pay acme")]})
    assert out["messages"][-1].content == "done"
    assert ran == {"agent": 2, "lookup": 1, "pay": [25]}
    assert governed.last_chain is not None and governed.last_chain.chain_id is not None
    chain_id = governed.last_chain.chain_id
    assert same_run(summary(env, chain_id))
    stored = env.stored(chain_id)
    assert stored.name == "langgraph_workflow"
    assert stored.status == "completed"
    assert stored.events[0].payload == {"langgraph_step": 1, "langgraph_triggers": ["branch:to:agent"]}
    assert next(e for e in stored.events if e.action_name == "pay_invoice").payload == {"amount_usd": 25}
    receipt = governed.last_chain.receipt_sync()
    assert receipt is not None
    assert receipt.metadata == {"team": "billing"}
    assert receipt.agents_involved == ["agent", "tools"]


async def test_ainvoke_records_the_same_actions(env: Env) -> None:
    graph, ran = build_graph(25)
    governed = govern(graph, "lg-async", config=env.config())
    out = await governed.ainvoke({"messages": [HumanMessage("pay acme")]})
    assert out["messages"][-1].content == "done"
    assert ran["pay"] == [25]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert same_run(summary(env, governed.last_chain.chain_id))
    assert env.stored(governed.last_chain.chain_id).status == "completed"


def test_a_denied_tool_does_not_run_and_the_denial_goes_back_to_the_model(env: Env) -> None:
    graph, ran = build_graph(25)
    governed = govern(
        graph,
        "lg-tool-deny",
        config=env.config(),
        policy_config={
            "custom_rules": [
                {"name": "no-payments", "match": {"action_name": "pay_invoice"}, "outcome": "deny", "reason": "Payments are frozen"}
            ]
        },
    )
    out = governed.invoke({"messages": [HumanMessage("pay acme")]})
    assert ran["pay"] == []
    assert ran["lookup"] == 1
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    denied = next(m for m in tool_messages if m.name == "pay_invoice")
    assert "Payments are frozen" in str(denied.content)
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert ("tools", "tool_call", "pay_invoice", "deny") in summary(env, governed.last_chain.chain_id)
    assert env.stored(governed.last_chain.chain_id).status == "completed"


def test_without_tool_error_handling_a_denial_stops_the_run_and_marks_the_chain_failed(env: Env) -> None:
    graph, ran = build_graph(25, handle_tool_errors=False)
    governed = govern(graph, "lg-tool-deny-raise", config=env.config(), policy_config={"financial_deny_threshold_usd": 10})
    with pytest.raises(ActionDeniedError) as info:
        governed.invoke({"messages": [HumanMessage("pay acme")]})
    assert info.value.policy_name == "financial_deny_threshold"
    assert ran["pay"] == []
    assert governed.last_chain is not None and governed.last_chain.chain_id
    stored = env.stored(governed.last_chain.chain_id)
    assert stored.status == "failed"
    assert stored.failure is not None and stored.failure["mode"] == "ActionDeniedError"


def test_a_denied_node_does_not_run(env: Env) -> None:
    graph, ran = build_graph(25)
    governed = govern(
        graph,
        "lg-node-deny",
        config=env.config(),
        policy_config={
            "custom_rules": [
                {"name": "agent-disabled", "match": {"action_type": "node_execution", "action_name": "agent"}, "outcome": "deny"}
            ]
        },
    )
    with pytest.raises(ActionDeniedError) as info:
        governed.invoke({"messages": [HumanMessage("pay acme")]})
    assert info.value.policy_name == "agent-disabled"
    assert ran["agent"] == 0
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert summary(env, governed.last_chain.chain_id) == [("agent", "node_execution", "agent", "deny")]


def test_a_tool_call_that_requires_approval_blocks_the_graph_until_a_reviewer_approves(env: Env) -> None:
    ticker = Ticker()
    graph, ran = build_graph(7500)
    governed = govern(graph, "lg-approval", config=env.config(ticker))

    def on_tick(n: int) -> None:
        assert ran["pay"] == []
        if n == 2:
            assert governed.last_chain is not None and governed.last_chain.chain_id
            approval_id = env.admin.pending_approval_id(env.org, governed.last_chain.chain_id)
            env.admin.decide(env.org, approval_id, "approve")

    ticker.on_tick = on_tick
    governed.invoke({"messages": [HumanMessage("pay acme")]})
    assert ran["pay"] == [7500]
    assert ticker.sleeps == [5.0, 5.0]
    assert governed.last_handler is not None
    rec = next(r for r in governed.last_handler.recorded if r.action_name == "pay_invoice")
    assert rec.decision.decision_source == "human_approval"


def test_stream_yields_the_graphs_updates_inside_a_chain_and_completes_it(env: Env) -> None:
    graph, _ = build_graph(25)
    governed = govern(graph, "lg-stream", config=env.config())
    nodes: list[str] = []
    for chunk in governed.stream({"messages": [HumanMessage("pay acme")]}, stream_mode="updates"):
        nodes.extend(chunk.keys())
    assert nodes == ["agent", "tools", "agent"]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert env.stored(governed.last_chain.chain_id).status == "completed"


async def test_astream_completes_the_chain(env: Env) -> None:
    graph, _ = build_graph(25)
    governed = govern(graph, "lg-astream", config=env.config())
    nodes = [key async for chunk in governed.astream({"messages": [HumanMessage("pay")]}, stream_mode="updates") for key in chunk]
    assert nodes == ["agent", "tools", "agent"]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert same_run(summary(env, governed.last_chain.chain_id))
    assert env.stored(governed.last_chain.chain_id).status == "completed"


def test_records_into_a_passed_entered_chain_and_leaves_it_open(env: Env) -> None:
    graph, _ = build_graph(25)
    chain = Chain("lg-shared", config=env.config()).enter()
    governed = govern(graph, config=env.config())
    governed.invoke({"messages": [HumanMessage("pay acme")]}, chain=chain)
    governed.invoke({"messages": [HumanMessage("pay acme again")]}, chain=chain)
    assert chain.chain_id is not None
    stored = env.stored(chain.chain_id)
    assert stored.status == "open"
    assert len(stored.events) == 10
    chain.exit()


def test_govern_rejects_objects_without_invoke(env: Env) -> None:
    with pytest.raises(TypeError, match="invoke"):
        govern(object(), config=env.config())
