"""sdk.crewai.govern with a real CrewAI crew: an Agent with a real CrewAI tool, driven by a
scripted model (crewai's BaseLLM extension point; no LLM is reachable here) through CrewAI's own
ReAct loop and tool machinery, against the real service."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

from sdk import ServiceKillSwitchError  # noqa: E402
from sdk.crewai import GovernedCrew, govern  # noqa: E402

from .support import Env, Ticker  # noqa: E402


class ScriptedLLM(BaseLLM):
    """A deterministic model: answers the scripted ReAct steps in order, records what it saw."""

    responses: list[str] = []
    seen: list[str] = []

    def call(  # type: ignore[override]
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        self.seen.append(messages if isinstance(messages, str) else "\n".join(str(m.get("content")) for m in messages))
        return self.responses[min(len(self.seen) - 1, len(self.responses) - 1)]

    def supports_function_calling(self) -> bool:
        return False


def build_crew(amount: float) -> tuple[Crew, dict[str, Any]]:
    state: dict[str, Any] = {"paid": []}

    @tool("pay_invoice")
    def pay_invoice(amount_usd: float) -> str:
        """Pays an invoice."""
        state["paid"].append(amount_usd)
        return f"paid {amount_usd}"

    llm = ScriptedLLM(
        model="scripted",
        responses=[
            f'Thought: I should pay the invoice.\nAction: pay_invoice\nAction Input: {{"amount_usd": {amount}}}',
            "Thought: I now know the final answer\nFinal Answer: finished",
        ],
        seen=[],
    )
    state["llm"] = llm
    clerk = Agent(role="AP clerk", goal="Pay approved invoices", backstory="Careful.", tools=[pay_invoice], llm=llm)
    task = Task(description="Pay invoice INV-7", expected_output="confirmation", agent=clerk)
    return Crew(agents=[clerk], tasks=[task]), state


def events(env: Env, chain_id: str) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    return [
        (e.agent_name, e.action_type, e.action_name, e.decision.policy_decision, e.payload)
        for e in env.stored(chain_id).events
    ]


def test_a_crew_tool_call_is_recorded_before_the_tool_runs(env: Env) -> None:
    crew, state = build_crew(25)
    governed = govern(crew, metadata={"crew": "ap"}, config=env.config())
    assert isinstance(governed, GovernedCrew)
    assert governed.chain_name == "crewai_workflow"
    out = governed.kickoff()
    assert out.raw == "finished"
    assert state["paid"] == [25]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert events(env, governed.last_chain.chain_id) == [("AP clerk", "tool_call", "pay_invoice", "allow", {"amount_usd": 25})]
    receipt = governed.last_chain.receipt_sync()
    assert receipt is not None and receipt.status == "completed" and receipt.metadata == {"crew": "ap"}


def test_a_denied_tool_call_is_blocked_and_the_agent_is_told_why(env: Env) -> None:
    crew, state = build_crew(25)
    governed = govern(crew, "crew-deny", config=env.config(), policy_config={"financial_deny_threshold_usd": 10})
    out = governed.kickoff()
    assert out.raw == "finished"
    assert state["paid"] == []
    assert [type(b.error).__name__ for b in governed.blocked] == ["ActionDeniedError"]
    assert "Tool execution blocked by Tollgate: Action denied by policy (financial_deny_threshold)" in state["llm"].seen[-1]
    assert governed.last_chain is not None and governed.last_chain.chain_id
    assert events(env, governed.last_chain.chain_id)[0][3] == "deny"
    assert env.stored(governed.last_chain.chain_id).status == "completed"


def test_a_tool_call_that_requires_approval_waits_for_the_reviewer(env: Env) -> None:
    ticker = Ticker()
    crew, state = build_crew(7500)
    governed = govern(crew, "crew-approval", config=env.config(ticker))

    def on_tick(n: int) -> None:
        assert state["paid"] == []
        assert governed.last_chain is not None and governed.last_chain.chain_id
        env.admin.decide(env.org, env.admin.pending_approval_id(env.org, governed.last_chain.chain_id), "approve")

    ticker.on_tick = on_tick
    governed.kickoff()
    assert state["paid"] == [7500]
    assert ticker.sleeps == [5.0]
    assert governed.recorded[0].decision.decision_source == "human_approval"


async def test_the_kill_switch_blocks_the_tool_and_fails_the_kickoff(env: Env) -> None:
    org = env.admin.org("crew-kill")
    crew, state = build_crew(25)
    governed = govern(crew, "crew-kill", config=env.config(api_key=org.client_key))
    env.admin.kill_switch(org, True, "incident 42")
    try:
        with pytest.raises(ServiceKillSwitchError, match="incident 42"):
            await governed.kickoff_async()
    finally:
        env.admin.kill_switch(org, False)
    assert state["paid"] == []
    assert governed.last_chain is not None and governed.last_chain.chain_id
    stored = env.admin.stored(org, governed.last_chain.chain_id)
    assert stored.status == "failed"
    assert stored.failure is not None and stored.failure["mode"] == "ServiceKillSwitchError"


def test_govern_rejects_objects_without_kickoff(env: Env) -> None:
    with pytest.raises(TypeError, match="kickoff"):
        govern(object(), config=env.config())
