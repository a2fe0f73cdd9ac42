"""Fail modes and the fail-closed rule.

Fail modes apply ONLY when the backend is unreachable: connection refused, connection reset,
DNS failure, the per-request timeout, HTTP 502/503/504. Every other non-2xx answer (400, 401, 403,
404, 409, 500) raises ServiceApiError, even when every fail mode is allow: a server error never
lets an action through. Each class is produced for real: a closed port, a proxy that resets
connections, an unresolvable host name, a server that never answers, a proxy that answers a given
status in front of the real service, and the real service's own 401/403/404/409."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from sdk import (
    DEFAULT_FAIL_MODES,
    BackendUnavailableError,
    Chain,
    ChainConfig,
    PolicyDecision,
    ServiceApiError,
    ServiceClient,
    create_config,
)
from sdk.client import record_action_flow
from sdk._http import SyncHttp, HttpSettings, run_sync

from .support import Env, Proxy, free_port

ALL_ALLOW = {k: "allow" for k in DEFAULT_FAIL_MODES}
ALL_DENY = {k: "deny" for k in DEFAULT_FAIL_MODES}


@pytest.fixture
def hanging_server() -> Iterator[str]:
    """Accepts connections, reads, never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    server.close()
    for c in held:
        c.close()


def open_chain(env: Env, proxy: Proxy, name: str, **options: object) -> Chain:
    """A chain created through the proxy while it forwards."""
    return Chain(name, config=env.config(backend_url=proxy.url, **options)).enter()


def read(chain: Chain) -> PolicyDecision:
    return chain.record_agent_action_sync("reader", "tool_call", "read_file", {"path": "/tmp/x"})


def pay(chain: Chain) -> PolicyDecision:
    return chain.record_agent_action_sync("payer", "tool_call", "pay", {"amount_usd": 10})


# --- every "unreachable" class applies the fail mode ----------------------------------------


@pytest.mark.parametrize("kind", ["refused", "reset", "dns", "timeout", "502", "503", "504"])
def test_unreachable_backend_applies_the_fail_mode(env: Env, proxy: Proxy, kind: str, hanging_server: str) -> None:
    allow = open_chain(env, proxy, f"fm-{kind}-allow", fail_modes=ALL_ALLOW, backend_timeout_seconds=0.5)
    deny = open_chain(env, proxy, f"fm-{kind}-deny", fail_modes=ALL_DENY, backend_timeout_seconds=0.5)
    if kind in ("refused", "dns", "timeout"):
        url = {
            "refused": f"http://127.0.0.1:{free_port()}",
            "dns": "http://tollgate-backend.invalid:8000",
            "timeout": hanging_server,
        }[kind]
        # Same chains, another backend address: rebuild the chains' configs against it.
        for c in (allow, deny):
            c._settings = HttpSettings(url, c.config.api_key, 0.5)
            c._close_sync()
    elif kind == "reset":
        proxy.set_down(True)
    else:
        proxy.inject(r"/actions", int(kind))

    d = read(allow)
    assert (d.policy_decision, d.decision_source, d.event_id, d.flagged) == ("allow_with_flag", "fail_mode", None, True)
    assert "Backend unavailable" in d.decision_reason
    with pytest.raises(BackendUnavailableError) as info:
        read(deny)
    assert info.value.category == "default"
    assert info.value.fail_mode_key == "default"
    assert "fail mode deny" in str(info.value)
    if kind.isdigit():
        assert info.value.status_code == int(kind)
    if kind == "timeout":
        assert "no response from the governance service within 0.5 s" in str(info.value)
    if kind in ("refused", "dns", "reset"):
        assert "cannot reach the governance service" in str(info.value)


# --- every other answer is a typed error, never the fail mode -------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 500])
def test_any_other_error_status_raises_service_api_error_even_with_fail_mode_allow(
    env: Env, proxy: Proxy, status: int
) -> None:
    chain = open_chain(env, proxy, f"fm-status-{status}", fail_modes=ALL_ALLOW)
    proxy.inject(r"/actions", status)
    with pytest.raises(ServiceApiError) as info:
        read(chain)
    err = info.value
    assert not isinstance(err, BackendUnavailableError)
    assert err.status_code == status
    assert err.code == f"TG_ERR_INJECTED_{status}"
    assert err.message == f"POST /v1/chains/{{chain_id}}/actions: injected HTTP {status}"
    assert err.details == {"injected": True}
    proxy.clear()
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).events == []


def test_the_real_services_401_403_404_409_are_service_api_errors(env: Env) -> None:
    config = env.config(fail_modes=ALL_ALLOW)
    # 401: an unknown key.
    with pytest.raises(ServiceApiError) as e401:
        Chain("fm-401", config=create_config("tg_not_a_key", backend_url=env.url, fail_modes=ALL_ALLOW)).enter()
    assert (e401.value.status_code, e401.value.code) == (401, "TG_ERR_UNAUTHENTICATED")
    # 403: the service admin token is no organization key.
    with pytest.raises(ServiceApiError) as e403:
        Chain("fm-403", config=create_config(env.service.admin_token, backend_url=env.url)).enter()
    assert (e403.value.status_code, e403.value.code) == (403, "TG_ERR_FORBIDDEN")
    # 404 and 409 through the recording route itself.
    http = SyncHttp(HttpSettings(env.url, env.org.client_key, 5))
    action = {"agent_name": "a", "action_type": "tool_call", "action_name": "x", "payload": {}}
    with pytest.raises(ServiceApiError) as e404:
        run_sync(record_action_flow("00000000-0000-4000-8000-000000000000", action), http)
    assert (e404.value.status_code, e404.value.code) == (404, "TG_ERR_NOT_FOUND")
    chain = Chain("fm-409", config=config).enter()
    chain.exit()
    assert chain.chain_id is not None
    with pytest.raises(ServiceApiError) as e409:
        run_sync(record_action_flow(chain.chain_id, action), http)
    assert (e409.value.status_code, e409.value.code) == (409, "TG_ERR_CHAIN_COMPLETED")
    assert e409.value.details is not None and e409.value.details["chain_id"] == chain.chain_id
    http.close()


# --- the fail-mode table --------------------------------------------------------------------


@pytest.fixture
def down(env: Env, proxy: Proxy) -> Iterator[dict[str, Chain]]:
    chains = {
        "defaults": open_chain(env, proxy, "fm-defaults"),
        "legacy": open_chain(env, proxy, "fm-legacy", fail_mode="deny"),
        "custom": open_chain(env, proxy, "fm-custom", fail_modes={"financial": "allow", "default": "deny", "llm_call": "allow"}),
    }
    read(chains["defaults"])
    proxy.set_down(True)
    yield chains


def test_the_service_defaults_deny_financial_and_external_actions(down: dict[str, Chain]) -> None:
    assert DEFAULT_FAIL_MODES["financial"] == "deny"
    with pytest.raises(BackendUnavailableError) as info:
        pay(down["defaults"])
    assert (info.value.category, info.value.fail_mode_key) == ("financial", "financial")
    assert "cannot reach the governance service" in str(info.value)
    assert "fail mode deny" in str(info.value)
    with pytest.raises(BackendUnavailableError) as ext:
        down["defaults"].record_agent_action_sync("mailer", "tool_call", "send_email", {"to": "someone@outside.example"})
    assert ext.value.category == "external_communication"
    for name, payload, category in (
        ("delete_rows", {"ids": list(range(12))}, "bulk_deletion"),
        ("publish_post", {"text": "hello"}, "irreversible"),
        ("update_rows", {"record_count": 150}, "bulk_operation"),
    ):
        with pytest.raises(BackendUnavailableError) as other:
            down["defaults"].record_agent_action_sync("agent", "tool_call", name, payload)
        assert other.value.category == category


def test_the_service_defaults_allow_other_actions_flagged_and_not_recorded(down: dict[str, Chain]) -> None:
    d = read(down["defaults"])
    assert (d.policy_decision, d.flagged, d.decision_source, d.event_id, d.category, d.policy_name) == (
        "allow_with_flag",
        True,
        "fail_mode",
        None,
        "default",
        "fail_modes.default",
    )
    assert "fail mode allow" in d.decision_reason
    llm = down["defaults"].record_agent_action_sync("writer", "llm_call", "gpt", {"input_tokens": 10})
    assert (llm.policy_decision, llm.category, llm.event_id) == ("allow_with_flag", "llm_call", None)


def test_the_legacy_fail_mode_is_fail_modes_with_only_default(down: dict[str, Chain]) -> None:
    for action_type in ("tool_call", "llm_call"):
        with pytest.raises(BackendUnavailableError) as info:
            down["legacy"].record_agent_action_sync("reader", action_type, "read_file")
        assert (info.value.category, info.value.fail_mode_key) == (
            "default" if action_type == "tool_call" else "llm_call",
            "default",
        )


def test_fail_modes_apply_per_category_then_their_default(down: dict[str, Chain]) -> None:
    d = pay(down["custom"])
    assert (d.policy_decision, d.category, d.policy_name) == ("allow_with_flag", "financial", "fail_modes.financial")
    with pytest.raises(BackendUnavailableError) as info:
        read(down["custom"])
    assert info.value.fail_mode_key == "default"


async def test_async_recording_applies_the_fail_modes_too(down: dict[str, Chain]) -> None:
    d = await down["defaults"].record_agent_action("reader", "tool_call", "read_file")
    assert d.decision_source == "fail_mode"
    with pytest.raises(BackendUnavailableError):
        await down["defaults"].record_agent_action("payer", "tool_call", "pay", {"amount_usd": 1})


def test_entering_and_completing_raise_backend_unavailable_and_exit_can_be_retried(
    env: Env, proxy: Proxy, down: dict[str, Chain]
) -> None:
    with pytest.raises(BackendUnavailableError):
        Chain("fm-new", config=env.config(backend_url=proxy.url, fail_modes=ALL_ALLOW)).enter()
    chain = down["defaults"]
    with pytest.raises(BackendUnavailableError):
        chain.exit()
    with pytest.raises(BackendUnavailableError):
        chain.exit()
    assert chain.status == "open"
    proxy.set_down(False)
    done = chain.exit()
    assert done is not None and done.status == "completed"


def test_nothing_is_buffered_the_flagged_actions_never_reach_the_service(env: Env, proxy: Proxy, down: dict[str, Chain]) -> None:
    chain = down["defaults"]
    for _ in range(3):
        read(chain)
    proxy.set_down(False)
    assert chain.chain_id is not None
    assert [e.action_name for e in env.stored(chain.chain_id).events] == ["read_file"]
    chain.exit()
    assert [e.action_name for e in env.stored(chain.chain_id).events] == ["read_file"]


def test_a_backend_that_does_not_answer_within_the_timeout_is_unavailable(hanging_server: str) -> None:
    config: ChainConfig = create_config("tg_test", backend_url=hanging_server, backend_timeout_seconds=0.2)
    with pytest.raises(BackendUnavailableError, match=r"no response from the governance service within 0\.2 s"):
        Chain("fm-timeout", config=config).enter()
    with ServiceClient("tg_test", backend_url=hanging_server, timeout_seconds=0.2) as client:
        with pytest.raises(BackendUnavailableError):
            client.approval_status("00000000-0000-4000-8000-000000000000")
