"""Chain against the real service over real HTTP: lifecycle (with / async with), decisions, every
error path of record_agent_action, and the approval wait (virtual sleep and clock; the HTTP stays
real) — the scenarios of the TypeScript SDK's test/sdk/chain.test.ts."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

import sdk
from sdk import (
    ActionDeniedError,
    Chain,
    ChainAutoPausedError,
    ChainTimeoutError,
    PolicyViolationError,
    ServiceApiError,
    ServiceKillSwitchError,
    ServicePolicyError,
    create_config,
)

from .support import Env, Proxy, Ticker

UUID = re.compile(r"^[0-9a-f-]{36}$")


def pay(chain: Chain, amount: float) -> sdk.PolicyDecision:
    """A payment by an agent named after the chain (an exception granted in one test stays there)."""
    return chain.record_agent_action_sync(f"payer-{chain.name}", "tool_call", "pay_invoice", {"amount_usd": amount})


async def apay(chain: Chain, amount: float) -> sdk.PolicyDecision:
    return await chain.record_agent_action(f"payer-{chain.name}", "tool_call", "pay_invoice", {"amount_usd": amount})


# --- lifecycle ------------------------------------------------------------------------------


def test_with_creates_the_chain_exit_completes_it_and_receipt_returns_the_signed_receipt(env: Env) -> None:
    chain = Chain("lifecycle-normal", metadata={"ticket": "T-1"}, config=env.config(environment="staging"))
    assert chain.chain_id is None
    assert chain.receipt_sync() is None
    with chain:
        assert chain.chain_id is not None and UUID.match(chain.chain_id)
        d = chain.record_agent_action_sync("reader", "tool_call", "read_file", {"path": "/etc/hosts"})
        assert (d.policy_decision, d.decision_source, d.flagged, d.sequence, d.category, d.evaluation_mode) == (
            "allow",
            "backend_evaluation",
            False,
            1,
            "default",
            "enforce",
        )
        assert d.event_id is not None and UUID.match(d.event_id)
        assert chain.receipt_sync() is None
    done = chain.result
    assert done is not None and done.status == "completed" and done.chain_id == chain.chain_id
    assert re.match(r"^PR-\d{4}-\d{5}$", done.receipt_number)
    assert chain.exit() == done
    receipt = chain.receipt_sync()
    assert receipt is not None
    assert receipt.receipt_number == done.receipt_number
    assert receipt.receipt_id == done.receipt_id
    assert re.match(r"^hmac-sha256:[0-9a-f]{64}$", receipt.signature)
    assert receipt.metadata == {"ticket": "T-1"}
    assert receipt.total_actions == 1
    assert env.stored(chain.chain_id).environment == "staging"
    with pytest.raises(RuntimeError, match="completed"):
        chain.record_agent_action_sync("a", "tool_call", "x")


async def test_async_with_creates_and_completes_the_chain(env: Env) -> None:
    async with Chain("lifecycle-async", config=env.config()) as chain:
        d = await chain.record_agent_action("reader", "tool_call", "read_file")
        assert d.policy_decision == "allow"
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).status == "completed"
    receipt = await chain.receipt()
    assert receipt is not None and receipt.total_actions == 1


def test_an_exception_leaving_with_marks_the_chain_failed_and_is_reraised(env: Env) -> None:
    boom = OverflowError("quota exceeded for sk_live_abcdef")
    with pytest.raises(OverflowError) as info:
        with Chain("lifecycle-fail", config=env.config()) as chain:
            chain.record_agent_action_sync("reader", "tool_call", "read_file")
            raise boom
    assert info.value is boom
    assert chain.chain_id is not None
    stored = env.stored(chain.chain_id)
    assert stored.status == "failed"
    assert stored.failure is not None and stored.failure["mode"] == "OverflowError"
    # The client redacts values by prefix (the whole message does not start with one); the
    # service may redact more inside the text.
    assert stored.failure["message"].startswith("quota exceeded for ")
    receipt = chain.receipt_sync()
    assert receipt is not None and receipt.status == "failed"
    assert receipt.failure == stored.failure


async def test_an_exception_leaving_async_with_marks_the_chain_failed(env: Env) -> None:
    with pytest.raises(KeyError):
        async with Chain("lifecycle-fail-async", config=env.config()) as chain:
            raise KeyError("missing")
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).failure == {"mode": "KeyError", "message": "'missing'"}


def test_exit_with_an_error_redacts_a_secret_looking_message(env: Env) -> None:
    chain = Chain("lifecycle-exit-error", config=env.config()).enter()
    res = chain.exit(Exception("ghp_0123456789abcdef token leaked"))
    assert res is not None and res.status == "failed"
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).failure == {"mode": "Exception", "message": "[REDACTED] token leaked"}


def test_init_settings_policy_config_and_add_financial_threshold_are_sent(env: Env) -> None:
    config = env.config(high_risk_agents=["rogue"], external_domains_allowlist=["partner.example"])
    chain = Chain("lifecycle-policy", policy_config={"bulk_operation_threshold": 50}, config=config)
    assert chain.add_financial_threshold(250, ["cfo@example.com"]) is chain
    chain.enter()
    with pytest.raises(RuntimeError, match="before the chain starts"):
        chain.add_financial_threshold(1)
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).policy_config == {
        "high_risk_agents": ["rogue"],
        "external_domains_allowlist": ["partner.example"],
        "bulk_operation_threshold": 50,
        "financial_approval_threshold_usd": 250,
        "financial_notify": ["cfo@example.com"],
    }
    chain.exit()
    # The chain threshold is enforced by the backend: 300 > 250 requires approval.
    ticker = Ticker()
    gated = Chain("lifecycle-policy-2", config=env.config(ticker)).add_financial_threshold(250)
    with gated:

        def on_tick(n: int) -> None:
            assert gated.chain_id is not None
            env.admin.decide(env.org, env.admin.pending_approval_id(env.org, gated.chain_id), "approve")

        ticker.on_tick = on_tick
        d = pay(gated, 300)
        assert (d.policy_decision, d.decision_source) == ("allow", "human_approval")


def test_init_stores_the_configuration_process_wide(env: Env) -> None:
    with pytest.raises(RuntimeError, match="init"):
        Chain("no-init")
    config = sdk.init(env.org.client_key, backend_url=env.url)
    assert sdk.get_config() is config
    with Chain("uses-init") as chain:
        assert chain.config is config
        assert chain.record_agent_action_sync("reader", "tool_call", "read_file").policy_decision == "allow"


def test_invalid_arguments_are_rejected_naming_the_field_before_any_request(env: Env) -> None:
    config = env.config()
    with pytest.raises(ValueError, match="name"):
        Chain("", config=config)
    with pytest.raises(ValueError, match=r"policy_config\.financial_approval_threshold_usd"):
        Chain("x", policy_config={"financial_approval_threshold_usd": -1}, config=config)
    with pytest.raises(ValueError, match=r"policy_config\.no_such_key"):
        Chain("x", policy_config={"no_such_key": 1}, config=config)
    with pytest.raises(ValueError, match="metadata"):
        Chain("x", metadata={"n": float("nan")}, config=config)
    chain = Chain("x", config=config)
    with pytest.raises(ValueError, match="usd"):
        chain.add_financial_threshold(-5)
    with pytest.raises(ValueError, match="notify"):
        chain.add_financial_threshold(5, ["not-an-email"])
    with pytest.raises(RuntimeError, match="not entered"):
        chain.record_agent_action_sync("a", "tool_call", "x")
    with chain:
        with pytest.raises(ValueError, match="agent_name"):
            chain.record_agent_action_sync("", "tool_call", "x")
        with pytest.raises(ValueError, match="payload"):
            chain.record_agent_action_sync("a", "tool_call", "x", [])  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="already entered"):
        chain.enter()


# --- decisions and errors -------------------------------------------------------------------


def test_shadow_mode_returns_a_flagged_allow_with_the_enforce_decision(env: Env) -> None:
    with Chain("shadow", policy_config={"evaluation_mode": "shadow"}, config=env.config()) as c:
        d = pay(c, 9000)
        assert (d.policy_decision, d.flagged, d.evaluation_mode, d.shadow_decision, d.category, d.approval_id) == (
            "allow_with_flag",
            True,
            "shadow",
            "require_approval",
            "financial",
            None,
        )


def test_a_flagged_action_is_allowed_with_the_reason(env: Env) -> None:
    with Chain("flag", policy_config={"first_external_communication_requires_approval": False}, config=env.config()) as c:
        d = c.record_agent_action_sync("mailer", "tool_call", "send_email", {"to": "someone@outside.example"})
        assert (d.policy_decision, d.flagged, d.policy_name, d.category) == (
            "allow_with_flag",
            True,
            "exfiltration_alert",
            "external_communication",
        )
        assert d.decision_reason != ""
        assert d.event_id is not None


def test_policy_deny_raises_action_denied_error_and_the_chain_stays_open(env: Env) -> None:
    with Chain("deny", config=env.config()).add_financial_threshold(1000, None, deny=True) as chain:
        with pytest.raises(ActionDeniedError) as info:
            pay(chain, 1500)
        err = info.value
        assert isinstance(err, ServicePolicyError)
        assert err.decision_source == "backend_evaluation"
        assert err.policy_name == "financial_deny_threshold"
        assert re.search(r"1500|1,500", err.condition)
        assert err.decision is not None and err.decision.policy_decision == "deny"
        assert err.decision.event_id is not None and UUID.match(err.decision.event_id)
        assert pay(chain, 10).policy_decision == "allow"
        assert chain.chain_id is not None
        assert [e.decision.policy_decision for e in env.stored(chain.chain_id).events] == ["deny", "allow"]


async def test_kill_switch_raises_service_kill_switch_error(env: Env) -> None:
    org = env.admin.org("kill")
    async with Chain("kill", config=env.config(api_key=org.client_key)) as chain:
        env.admin.kill_switch(org, True, "incident 42")
        try:
            with pytest.raises(ServiceKillSwitchError) as info:
                await chain.record_agent_action("reader", "tool_call", "read_file")
            assert isinstance(info.value, ServicePolicyError)
            assert "incident 42" in str(info.value)
            d = info.value.decision
            assert d is not None and (d.kill_switch_active, d.policy_decision, d.policy_name) == (True, "deny", "kill_switch")
        finally:
            env.admin.kill_switch(org, False)
        assert (await chain.record_agent_action("reader", "tool_call", "read_file")).policy_decision == "allow"


def test_auto_pause_raises_chain_auto_paused_error_at_the_limit_and_after(env: Env) -> None:
    chain = Chain("runaway", policy_config={"runaway_limits": {"max_events": 2}}, config=env.config()).enter()
    chain.record_agent_action_sync("looper", "tool_call", "step")
    chain.record_agent_action_sync("looper", "tool_call", "step")
    with pytest.raises(ChainAutoPausedError) as info:
        chain.record_agent_action_sync("looper", "tool_call", "step")
    assert not isinstance(info.value, ServicePolicyError)
    assert info.value.decision is not None
    assert (info.value.decision.auto_paused, info.value.decision.policy_name) == (True, "runaway_limits")
    assert "max_events" in str(info.value)
    with pytest.raises(ChainAutoPausedError) as later:
        chain.record_agent_action_sync("looper", "tool_call", "step")
    assert later.value.decision is None
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).status == "paused"
    done = chain.exit()
    assert done is not None and done.status == "completed"


# --- approval gates -------------------------------------------------------------------------


def test_blocks_on_require_approval_and_resumes_when_a_reviewer_approves_with_an_exception(env: Env) -> None:
    ticker = Ticker()
    chain = Chain("approve", config=env.config(ticker)).enter()
    seen: list[str] = []

    def on_tick(n: int) -> None:
        assert chain.chain_id is not None
        seen.append(env.admin.call("GET", f"/v1/chains/{chain.chain_id}/approval-status", env.org.client_key).json()["chain_status"])
        if n == 3:
            approval_id = env.admin.pending_approval_id(env.org, chain.chain_id)
            env.admin.decide(env.org, approval_id, "approve", notes="ok", exception_duration="1h")

    ticker.on_tick = on_tick
    d = pay(chain, 7500)
    assert seen[0] == "pending_approval"
    assert ticker.sleeps == [5.0, 5.0, 5.0]
    assert (d.policy_decision, d.decision_source, d.policy_name, d.category, d.flagged) == (
        "allow",
        "human_approval",
        "financial_approval_threshold",
        "financial",
        False,
    )
    assert d.approval_id is not None and UUID.match(d.approval_id)
    assert d.exception_id is not None and UUID.match(d.exception_id)
    assert "ok" in d.decision_reason
    # The exception covers the same agent and action type: no new gate.
    again = pay(chain, 8000)
    assert (again.policy_decision, again.exception_id, again.flagged) == ("allow_with_flag", d.exception_id, True)
    assert len(ticker.sleeps) == 3
    chain.exit()


async def test_async_wait_resumes_after_approval(env: Env) -> None:
    ticker = Ticker()
    async with Chain("approve-async", config=env.config(ticker)) as chain:

        def on_tick(n: int) -> None:
            if n == 2:
                assert chain.chain_id is not None
                env.admin.decide(env.org, env.admin.pending_approval_id(env.org, chain.chain_id), "approve")

        ticker.on_tick = on_tick
        d = await apay(chain, 7500)
        assert (d.policy_decision, d.decision_source) == ("allow", "human_approval")
        assert ticker.sleeps == [5.0, 5.0]


def test_a_reviewers_denial_raises_action_denied_error_with_the_notes_and_the_chain_continues(env: Env) -> None:
    ticker = Ticker()
    with Chain("human-deny", config=env.config(ticker)) as chain:

        def on_tick(n: int) -> None:
            if n == 1:
                assert chain.chain_id is not None
                approval_id = env.admin.pending_approval_id(env.org, chain.chain_id)
                env.admin.decide(env.org, approval_id, "deny", notes="Vendor not on the approved list")

        ticker.on_tick = on_tick
        with pytest.raises(ActionDeniedError) as info:
            pay(chain, 7500)
        err = info.value
        assert err.decision_source == "human_approval"
        assert err.condition == "Vendor not on the approved list"
        assert err.policy_name == "financial_approval_threshold"
        assert err.decision is not None and err.decision.approval_id is not None
        assert chain.record_agent_action_sync("reader", "tool_call", "read_file").policy_decision == "allow"


def test_a_backend_approval_timeout_raises_action_denied_error_not_resolved_within(env: Env) -> None:
    # An organization whose approvals time out after 0.0005 h (1.8 s of real time).
    org = env.admin.org("timeout", approval_timeout_hours=0.0005)
    ticker = Ticker()
    with Chain("backend-timeout", config=env.config(ticker, api_key=org.client_key)) as chain:

        def on_tick(n: int) -> None:
            if n == 2:
                time.sleep(2.2)

        ticker.on_tick = on_tick
        with pytest.raises(ActionDeniedError) as info:
            pay(chain, 7500)
        assert "not resolved within" in info.value.condition
        assert info.value.decision_source == "backend_evaluation"
        assert ticker.sleeps == [5.0, 5.0]


def test_the_local_wait_window_raises_chain_timeout_error_and_the_gate_stays_closed(env: Env) -> None:
    # 0.01 h = 36 s: the 8th poll (at 40 s of virtual time) is the first past the window.
    ticker = Ticker()
    chain = Chain("local-timeout", config=env.config(ticker, default_approval_timeout_hours=0.01)).enter()
    with pytest.raises(ChainTimeoutError) as info:
        pay(chain, 7500)
    assert info.value.timeout_hours == 0.01
    assert ticker.sleeps == [5.0] * 8
    assert chain.chain_id is not None
    approval = env.admin.approval(env.org, chain.chain_id)
    assert approval is not None and approval["status"] == "pending"
    with pytest.raises(PolicyViolationError) as nxt:
        chain.record_agent_action_sync("reader", "tool_call", "read_file")
    assert nxt.value.code == "TG_ERR_APPROVAL_PENDING"
    chain.exit()
    after = env.admin.approval(env.org, chain.chain_id)
    assert after is not None and after["status"] == "cancelled"


async def test_cancelling_the_awaiting_task_stops_the_wait(env: Env) -> None:
    ticker = Ticker()
    async with Chain("cancel", config=env.config(ticker)) as chain:
        started = asyncio.Event()

        async def on_tick(n: int) -> None:
            started.set()
            await asyncio.sleep(3600)

        ticker.on_tick = on_tick
        task = asyncio.create_task(apay(chain, 7500))
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_transient_errors_during_polling_are_retried_on_the_next_tick(env: Env, proxy: Proxy) -> None:
    ticker = Ticker()
    chain = Chain("transient", config=env.config(ticker, backend_url=proxy.url)).enter()
    approval: list[str] = []

    def on_tick(n: int) -> None:
        assert chain.chain_id is not None
        if n == 1:
            approval.append(env.admin.pending_approval_id(env.org, chain.chain_id))
            proxy.set_down(True)
        if n == 2:
            proxy.set_down(False)
            proxy.inject(r"approval-status", 503)
        if n == 3:
            proxy.clear()
            env.admin.decide(env.org, approval[0], "approve")

    ticker.on_tick = on_tick
    d = pay(chain, 7500)
    assert d.decision_source == "human_approval"
    assert ticker.sleeps == [5.0, 5.0, 5.0]
    # Poll 1 was reset, poll 2 got an injected 503 (both retried), poll 3 reached the service.
    assert proxy.count(r"approval-status") >= 2
    chain.exit()


def test_a_permanent_api_error_during_polling_is_not_retried(env: Env) -> None:
    key_id, api_key = env.admin.api_key(env.org, "py-permanent")
    ticker = Ticker()
    chain = Chain("permanent", config=create_config(api_key, backend_url=env.url, internals=ticker.internals())).enter()

    def on_tick(n: int) -> None:
        if n == 1:
            env.admin.revoke_key(env.org, key_id)

    ticker.on_tick = on_tick
    with pytest.raises(ServiceApiError) as info:
        pay(chain, 7500)
    assert info.value.status_code == 401
    assert ticker.sleeps == [5.0]
    assert chain.chain_id is not None
    done = env.admin.call("POST", f"/v1/chains/{chain.chain_id}/complete", env.org.client_key, {})
    assert done.status_code == 200
