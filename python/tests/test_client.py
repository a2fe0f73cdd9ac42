"""sdk.client against the real service: v2 verification, public verification tokens (issue, list,
verify, revoke, the sanitized error), the legacy helper's DeprecationWarning, the module-level
helpers with the spec's names, and the async client."""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import sdk
from sdk import AsyncServiceClient, Chain, ServiceApiError, ServiceClient, VerificationError, create_config
from sdk import client as helpers

from .support import Env, Ticker


@dataclass
class Done:
    chain_id: str
    receipt_id: str
    approval_id: str


@pytest.fixture(scope="module")
def done(env: Env) -> Done:
    ticker = Ticker()
    chain = Chain("verified", config=env.config(ticker)).enter()
    assert chain.chain_id is not None
    chain.record_agent_action_sync("reader", "tool_call", "read_file")

    def on_tick(n: int) -> None:
        assert chain.chain_id is not None
        env.admin.decide(env.org, env.admin.pending_approval_id(env.org, chain.chain_id), "approve", notes="fine")

    ticker.on_tick = on_tick
    paid = chain.record_agent_action_sync("payer", "tool_call", "pay", {"amount_usd": 9000})
    assert paid.approval_id is not None
    result = chain.exit()
    assert result is not None
    return Done(chain.chain_id, result.receipt_id, paid.approval_id)


@pytest.fixture
def admin_client(env: Env) -> Iterator[ServiceClient]:
    with ServiceClient(env.org.admin_key, backend_url=env.url) as c:
        yield c


@pytest.fixture
def client(env: Env) -> Iterator[ServiceClient]:
    with ServiceClient(env.org.client_key, backend_url=env.url) as c:
        yield c


def test_get_receipt_is_none_for_an_open_chain(client: ServiceClient) -> None:
    open_chain = client.create_chain("open-one")
    assert client.get_receipt(open_chain.chain_id) is None
    client.complete_chain(open_chain.chain_id)
    receipt = client.get_receipt(open_chain.chain_id)
    assert receipt is not None and receipt.chain_id == open_chain.chain_id


def test_maps_the_error_body_code_message_and_details(client: ServiceClient, done: Done) -> None:
    with pytest.raises(ServiceApiError) as info:
        client.complete_chain(done.chain_id)
    err = info.value
    assert (err.status_code, err.code) == (409, "TG_ERR_CHAIN_COMPLETED")
    assert err.details is not None
    assert (err.details["chain_id"], err.details["receipt_id"]) == (done.chain_id, done.receipt_id)
    assert err.message.startswith("POST /v1/chains/{chain_id}/complete: ")


def test_verify_receipt_v2_reports_overall_and_integrity_status(
    admin_client: ServiceClient, client: ServiceClient, done: Done
) -> None:
    v = admin_client.verify_receipt_v2(done.receipt_id)
    assert v.overall_status == "valid"
    assert v.integrity.status == "valid"
    assert "hmac-sha256:" not in v.model_dump_json()
    with pytest.raises(ServiceApiError) as denied:
        client.verify_receipt_v2(done.receipt_id)
    assert denied.value.status_code == 403


def test_verify_approval_v2_is_role_aware(admin_client: ServiceClient, done: Done) -> None:
    v = admin_client.verify_approval_v2(done.approval_id)
    assert v.overall_status == "valid"
    assert v.integrity.status == "valid"
    audit = getattr(v, "audit_context", None)
    assert isinstance(audit, dict) and audit["decision"] == "approved"


def test_issue_list_verify_and_revoke_a_public_token_with_one_sanitized_error(
    env: Env, admin_client: ServiceClient, client: ServiceClient, done: Done
) -> None:
    issued = admin_client.issue_public_verification_token("receipt", done.receipt_id)
    assert issued.token.startswith("tgp_")
    assert issued.public_path == f"/public/v2/verify/{issued.token}"
    assert issued.token not in repr(issued)

    listed = admin_client.list_public_verification_tokens(artifact_type="receipt")
    assert issued.token_id in [t.token_id for t in listed]
    assert issued.token not in str([t.model_dump() for t in listed])

    with ServiceClient("tg_unused", backend_url=env.url) as anonymous:
        pub = anonymous.verify_public_token(issued.token)
        assert (pub.artifact_type, pub.verification_status, pub.integrity_status) == ("receipt", "valid", "valid")
        assert "hmac" not in pub.model_dump_json()

        revoked = admin_client.revoke_public_verification_token(issued.token_id)
        assert (revoked.token_id, revoked.status) == (issued.token_id, "revoked")
        assert issued.token not in revoked.model_dump_json()

        for token in (issued.token, "tgp_" + "x" * 43, ""):
            with pytest.raises(VerificationError) as info:
                anonymous.verify_public_token(token)
            err = info.value
            assert str(err) == "Verification is unavailable for this token"
            assert err.__cause__ is None
            assert issued.token not in "".join(traceback.format_exception(err))
    with pytest.raises(ServiceApiError) as forbidden:
        client.issue_public_verification_token("receipt", done.receipt_id)
    assert forbidden.value.status_code == 403


def test_the_legacy_verify_receipt_still_works_and_warns(client: ServiceClient, done: Done) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        legacy = client.verify_receipt(done.receipt_id)
    assert (legacy.receipt_id, legacy.valid) == (done.receipt_id, True)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "verify_receipt_v2" in str(caught[0].message)


def test_the_module_level_helpers_use_the_init_configuration(env: Env, done: Done) -> None:
    sdk.init(env.org.admin_key, backend_url=env.url)
    assert helpers.verify_receipt_v2(done.receipt_id).overall_status == "valid"
    assert helpers.verify_approval_v2(done.approval_id).integrity.status == "valid"
    issued = helpers.issue_public_verification_token("approval", done.approval_id)
    assert issued.token_id in [t.token_id for t in helpers.list_public_verification_tokens(artifact_id=done.approval_id)]
    assert helpers.verify_public_token(issued.token).artifact_type == "approval"
    assert helpers.revoke_public_verification_token(issued.token_id).status == "revoked"
    with pytest.raises(VerificationError):
        helpers.verify_public_token(issued.token)
    with pytest.warns(DeprecationWarning):
        assert helpers.verify_receipt(done.receipt_id).valid is True
    # An explicit configuration wins over init's.
    member = create_config(env.org.client_key, backend_url=env.url)
    with pytest.raises(ServiceApiError):
        helpers.verify_receipt_v2(done.receipt_id, config=member)


async def test_the_async_client_has_the_same_surface(env: Env, done: Done) -> None:
    async with AsyncServiceClient(env.org.admin_key, backend_url=env.url) as c:
        assert (await c.verify_receipt_v2(done.receipt_id)).overall_status == "valid"
        issued = await c.issue_public_verification_token("receipt", done.receipt_id)
        assert (await c.verify_public_token(issued.token)).verification_status == "valid"
        await c.revoke_public_verification_token(issued.token_id)
        with pytest.raises(VerificationError):
            await c.verify_public_token(issued.token)
        detail = await c.get_chain(done.chain_id)
        assert [e.action_name for e in detail.events] == ["read_file", "pay"]


def test_identifiers_and_arguments_are_validated_before_any_request(env: Env, client: ServiceClient, done: Done) -> None:
    with pytest.raises(ValueError, match="chain_id"):
        client.get_chain("")
    with pytest.raises(ValueError, match="artifact_type"):
        client.issue_public_verification_token("chain", done.receipt_id)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="api_key"):
        ServiceClient("", backend_url=env.url)
    with pytest.raises(ValueError, match="backend_url"):
        ServiceClient("tg_x", backend_url="file:///etc")
    with pytest.raises(ValueError, match="wait_seconds"):
        client.approval_status(done.chain_id, wait_seconds=6)
