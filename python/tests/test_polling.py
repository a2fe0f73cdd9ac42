"""The approval wait with real time: the spec's 5-second poll (constant, no backoff), and the
service's long-poll (``?wait=``, beyond the spec) that resumes the caller as soon as the reviewer
decides while still sending at most one request per poll interval. Real service, real HTTP,
timestamps taken at a TCP proxy. "As soon as" is asserted as how the service's held poll ended
(``tollgate_approval_status_holds_total{ended}``: woken by the decision, not at its wait's end),
never as a figure; the resume time is measured in bench/approval-resume."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from typing import Any

import httpx
import pytest

from sdk import DEFAULT_POLL_INTERVAL_SECONDS, ActionDeniedError, Chain, PolicyDecision, SdkInternals, create_config

from .support import Env, Proxy

POLL = r"^GET /v1/chains/[^/]+/approval-status"


def test_the_default_interval_is_5_seconds_and_long_poll_is_on() -> None:
    assert DEFAULT_POLL_INTERVAL_SECONDS == 5.0
    internals = create_config("tg_x").internals
    assert internals.poll_interval_seconds == 5.0
    assert internals.long_poll_enabled is True
    assert SdkInternals(sleep=time.sleep).long_poll_enabled is False
    assert SdkInternals(sleep=time.sleep, long_poll=True).long_poll_enabled is True


def test_plain_polls_are_exactly_5_seconds_apart(env: Env, proxy: Proxy) -> None:
    slept: list[float] = []

    def observed_sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    config = create_config(env.org.client_key, backend_url=proxy.url, internals=SdkInternals(sleep=observed_sleep))
    chain = Chain("polling", config=config).enter()
    assert chain.chain_id is not None
    result: list[Any] = []
    worker = threading.Thread(
        target=lambda: result.append(chain.record_agent_action_sync("payer", "tool_call", "pay", {"amount_usd": 7500}))
    )
    worker.start()
    approval_id = env.admin.pending_approval_id(env.org, chain.chain_id)
    deadline = time.monotonic() + 30
    while proxy.count(POLL) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    env.admin.decide(env.org, approval_id, "approve")
    worker.join(30)
    assert isinstance(result[0], PolicyDecision) and result[0].decision_source == "human_approval"
    times = proxy.times(POLL)
    assert len(times) == 3
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Never sooner than the interval (no hurry), and slept exactly 5 s each time (no backoff).
    assert all(g >= 4.9 for g in gaps), gaps
    assert slept == [5.0, 5.0, 5.0]
    assert "wait=" not in proxy.requests[-1].line
    chain.exit()


def gate(env: Env, chain: Chain) -> tuple[threading.Thread, list[Any], str]:
    """Records a 7,500 USD payment in a thread; returns once the approval is pending."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(chain.record_agent_action_sync("payer", "tool_call", "pay", {"amount_usd": 7500}))
        except Exception as err:  # handed to the test
            out.append(err)

    worker = threading.Thread(target=run)
    worker.start()
    assert chain.chain_id is not None
    return worker, out, env.admin.pending_approval_id(env.org, chain.chain_id)


def test_record_resumes_soon_after_the_approve_not_at_the_next_tick(env: Env, proxy: Proxy) -> None:
    chain = Chain("long-poll-approve", config=create_config(env.org.client_key, backend_url=proxy.url)).enter()
    worker, out, approval_id = gate(env, chain)
    env.wait_until_held()
    before = env.holds_ended()
    env.admin.decide(env.org, approval_id, "approve")
    worker.join(10)
    assert isinstance(out[0], PolicyDecision)
    assert (out[0].decision_source, out[0].approval_id) == ("human_approval", approval_id)
    # The held poll was woken by the approve: the caller resumed on it, not at the next tick.
    assert _since(before, env.holds_ended()) == {"woken": 1}
    assert proxy.count(r"approval-status\?approval_id=[0-9a-f-]{36}&wait=5 HTTP") >= 1
    chain.exit()


async def test_an_async_denial_reaches_the_caller_just_as_fast(env: Env) -> None:
    async with Chain("long-poll-deny", config=create_config(env.org.client_key, backend_url=env.url)) as chain:
        task = asyncio.create_task(chain.record_agent_action("payer", "tool_call", "pay", {"amount_usd": 7500}))
        assert chain.chain_id is not None
        approval_id = await asyncio.to_thread(env.admin.pending_approval_id, env.org, chain.chain_id)
        await asyncio.to_thread(env.wait_until_held)
        before = await asyncio.to_thread(env.holds_ended)
        await asyncio.to_thread(env.admin.decide, env.org, approval_id, "deny", notes="not this vendor")
        with pytest.raises(ActionDeniedError) as info:
            await task
        assert info.value.condition == "not this vendor"
        assert _since(before, await asyncio.to_thread(env.holds_ended)) == {"woken": 1}


def _since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """How the holds that ended between two readings ended (non-zero counts only)."""
    return {e: after[e] - before[e] for e in after if after[e] != before[e]}


class _IgnoresWait(httpx.HTTPTransport):
    """A service that ignores ``wait`` answers at once: simulated by dropping the parameter."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_remove_param("wait")
        return super().handle_request(request)


@pytest.mark.parametrize("behaviour", ["honours wait", "ignores wait"])
def test_at_most_one_request_per_poll_interval_while_pending(env: Env, proxy: Proxy, behaviour: str) -> None:
    internals = SdkInternals(poll_interval_seconds=1.0, transport=_IgnoresWait() if behaviour == "ignores wait" else None)
    chain = Chain(f"long-poll-cadence-{behaviour.replace(' ', '-')}", config=create_config(
        env.org.client_key, backend_url=proxy.url, internals=internals
    )).enter()
    worker, out, approval_id = gate(env, chain)
    t0 = time.monotonic()
    time.sleep(3.2)
    env.admin.decide(env.org, approval_id, "approve")
    worker.join(10)
    elapsed = time.monotonic() - t0
    assert isinstance(out[0], PolicyDecision) and out[0].decision_source == "human_approval"
    sent = proxy.count(POLL)
    assert sent >= 1
    # One per started interval, plus the one in flight when the approve landed.
    assert sent <= math.ceil(elapsed / 1.0) + 1, (sent, elapsed)
    chain.exit()
