"""Sanitization before anything leaves the process (spec: "Limits" → payload sanitization
defaults): every default field-name substring and value prefix, the API key prefix, custom
patterns appended, truncation at max_payload_string_length — asserted on the bytes that crossed a
real TCP proxy and on what the service stored. Plus parity with the service's own sanitizer
(src/policy/sanitize.ts, run with tsx) on a fixed and a generated corpus."""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from sdk import Chain
from sdk.sanitize import REDACTED, cut_text, redact_text, sanitize_payload

from .support import REPO_ROOT, Env, Proxy

SECRETS = {
    "api_key_field": "plain-value-under-api_key-1",
    "password_field": "hunter2-under-password-2",
    "secret_field": "plain-value-under-client_secret-3",
    "token_field": "plain-value-under-github_token-4",
    "credit_card_field": "4111111111111111",
    "ssn_field": "123-45-6789",
    "private_key_field": "-----BEGIN PRIVATE KEY----- abc",
    "nested_password": "nested-password-value-5",
    "upper_case_field": "value-under-API_KEY-6",
    "sk_prefix": "sk_live_51Habcdef0123456789",
    "pk_prefix": "pk_test_0123456789abcdef",
    "ghp_prefix": "ghp_0123456789abcdefABCDEF0123456789abcd",
    "hf_prefix": "hf_abcdefghijklmnopqrstuvwxyz012345",
    "jwt_prefix": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "aws_prefix": "AKIAIOSFODNN7EXAMPLE",
    "tollgate_prefix": "tg_0123456789abcdefghij",
    "custom_field": "value-under-internal_note-7",
    "custom_prefix": "corp-secret-0123456789",
    "in_array": "sk_in_array_0123456789",
}


def test_every_default_pattern_the_api_key_prefix_and_custom_patterns_are_redacted_before_sending(
    env: Env, proxy: Proxy
) -> None:
    config = env.config(
        backend_url=proxy.url,
        sensitive_field_patterns=["internal_note"],
        sensitive_value_patterns=["corp-"],
        max_payload_string_length=50,
    )
    long = "x" * 80
    payload: dict[str, Any] = {
        "api_key": SECRETS["api_key_field"],
        "password": SECRETS["password_field"],
        "client_secret": SECRETS["secret_field"],
        "github_token": SECRETS["token_field"],
        "credit_card": SECRETS["credit_card_field"],
        "customer_ssn": SECRETS["ssn_field"],
        "private_key": SECRETS["private_key_field"],
        "API_KEY_HEADER": SECRETS["upper_case_field"],
        "nested": {"deeper": {"password": SECRETS["nested_password"], "keep": "visible"}},
        "stripe": SECRETS["sk_prefix"],
        "publishable": SECRETS["pk_prefix"],
        "github": SECRETS["ghp_prefix"],
        "huggingface": SECRETS["hf_prefix"],
        "jwt": SECRETS["jwt_prefix"],
        "aws": SECRETS["aws_prefix"],
        "tollgate": SECRETS["tollgate_prefix"],
        "internal_note": SECRETS["custom_field"],
        "corp": SECRETS["custom_prefix"],
        "list": ["fine", SECRETS["in_array"]],
        "long": long,
        "amount_usd": 12,
        "input_tokens": 100,
        "path": "/reports/q3.pdf",
    }
    with Chain("sanitize", config=config) as chain:
        d = chain.record_agent_action_sync("reader", "tool_call", "read_file", payload)
        assert d.policy_decision == "allow"
    r = REDACTED
    expected = {
        "api_key": r,
        "password": r,
        "client_secret": r,
        "github_token": r,
        "credit_card": r,
        "customer_ssn": r,
        "private_key": r,
        "API_KEY_HEADER": r,
        "nested": {"deeper": {"password": r, "keep": "visible"}},
        "stripe": r,
        "publishable": r,
        "github": r,
        "huggingface": r,
        "jwt": r,
        "aws": r,
        "tollgate": r,
        "internal_note": r,
        "corp": r,
        "list": ["fine", r],
        "long": "x" * 50 + "…[truncated]",
        "amount_usd": 12,
        "input_tokens": 100,
        "path": "/reports/q3.pdf",
    }
    # What crossed the wire.
    sent = proxy.bodies(r"^POST /v1/chains/[^/]+/actions")
    assert len(sent) == 1
    assert sent[0]["payload"] == expected
    wire = proxy.received().decode("utf-8", "replace")
    for name, secret in SECRETS.items():
        assert secret not in wire, f"{name} crossed the wire"
    assert long not in wire
    assert config.api_key not in json.dumps(sent)
    # What the service stored.
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).events[0].payload == expected
    # The caller's object is untouched.
    assert payload["password"] == SECRETS["password_field"]


def test_truncates_at_the_default_1000_characters(env: Env) -> None:
    with Chain("sanitize-default-length", config=env.config()) as chain:
        chain.record_agent_action_sync("reader", "tool_call", "read_file", {"body": "y" * 1001, "ok": "y" * 1000})
    assert chain.chain_id is not None
    assert env.stored(chain.chain_id).events[0].payload == {"body": "y" * 1000 + "…[truncated]", "ok": "y" * 1000}


def test_python_values_without_a_json_counterpart() -> None:
    class Thing:
        def __str__(self) -> str:
            return "sk_hidden_by_prefix"

    cyclic: dict[str, Any] = {"name": "root"}
    cyclic["self"] = cyclic
    out = sanitize_payload(
        {
            "when": dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc),
            "day": dt.date(2026, 1, 2),
            "nan": float("nan"),
            "big": 2**60,
            "tup": (1, "a"),
            "fn": lambda: None,
            "fns": [print],
            "raw": b"secret bytes",
            "thing": Thing(),
            1: "int key",
            "cyclic": cyclic,
            "input_tokens": 12,
            "prompt_tokens": "12",
        }
    )
    assert out.payload == {
        "when": "2026-01-02T03:04:05.678Z",
        "day": "2026-01-02",
        "nan": None,
        "big": str(2**60),
        "tup": [1, "a"],
        "fns": [None],
        "raw": "[12 bytes]",
        "thing": REDACTED,
        "1": "int key",
        "cyclic": {"name": "root", "self": "[CIRCULAR]"},
        "input_tokens": 12,
        "prompt_tokens": REDACTED,
    }


# --- parity with the service's sanitizer ----------------------------------------------------

_NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { cutText, redactText, sanitizePayload } from "%s";
const { cases, texts } = JSON.parse(readFileSync(0, "utf8"));
const payloads = cases.map((c) => sanitizePayload(c.payload, {
  fieldPatterns: c.field_patterns, valuePrefixes: c.value_prefixes, maxStringLength: c.max,
}));
const redacted = texts.map((t) => redactText(t.text, { fieldPatterns: t.field_patterns, valuePrefixes: t.value_prefixes }));
const cuts = texts.map((t) => cutText(t.text, 7));
process.stdout.write(JSON.stringify({ payloads, redacted, cuts }));
"""

KEYS = ["id", "name", "api_key", "API_Key_x", "password", "my_secret", "access_token", "input_tokens", "max_tokens",
        "total_tokens", "credit_card", "ssn", "classname", "private_key", "note", "data", "items", "x", "émoji", "k"]
PREFIXES = ["", "sk_", "pk_", "ghp_", "hf_", "eyJ", "AKIA", "tg_", "tgs_", "corp-", "Sk_", "tg"]


def _string(rng: random.Random) -> str:
    body = rng.choice(["a", "é", "😀", "x", " "]) * rng.choice([0, 1, 5, 9, 10, 11, 19, 20, 21, 40])
    return rng.choice(PREFIXES) + body


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.random()
    if depth > 24 or kind < 0.35:
        return _string(rng)
    if kind < 0.5:
        return rng.choice([0, 1, -7, 3.5, 1e20, 2**53 - 1, True, False, None])
    if kind < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": "sk_bottom", "ok": "bottom"}
    for i in range(levels):
        node = {f"l{i}": node, "arr": [node] if i % 5 == 0 else []}
    return node


def _cases() -> list[dict[str, Any]]:
    fixed: list[dict[str, Any]] = [
        {"payload": {"a": "😀" * 6, "b": "a😀😀😀"}, "max": 5},
        {"payload": {"a": "é" * 11, "b": "x" * 10}, "max": 10},
        {"payload": {"input_tokens": 5, "output_tokens": "5", "max_tokens": 1.5, "usage": {"prompt_tokens": 3}}, "max": 1000},
        {"payload": {"k": ["tg_x", "tgs_y", "tgp_z", "tga_w", "TG_x"]}, "max": 1000},
        {"payload": {"Secret_Value": 1, "note": "corp-1"}, "field_patterns": ["", "NOTE"], "value_prefixes": ["", "corp-"], "max": 1000},
        {"payload": _deep(30), "max": 1000},
        {"payload": {"list": [[[[[[{"password": "p"}]]]]]]}, "max": 1000},
    ]
    rng = random.Random(20261124)
    generated = [
        {
            "payload": {rng.choice(KEYS): _value(rng, 0) for _ in range(rng.randint(1, 6))},
            "field_patterns": rng.choice([[], ["note"], ["id", ""]]),
            "value_prefixes": rng.choice([[], ["corp-"], ["x"]]),
            "max": rng.choice([1, 5, 10, 20, 1000]),
        }
        for _ in range(300)
    ]
    return fixed + generated


def _texts() -> list[dict[str, Any]]:
    fixed = [
        "crashed holding ghp_failure_secret_9 and password=meta-pw-10",
        'config {"api_key": "abc", "input_tokens": 12, "max_tokens": "x"} done',
        "token=tgp_abc; session tgs_x, admin(tga_y) key:tg_z",
        "prompt_tokens=0x10 total_tokens: 12 secret='a b' note=corp-1",
        "nothing to see here 😀😀😀",
        "eyJhbGciOi.x [REDACTED] sk_",
    ]
    rng = random.Random(7)
    words = ["a", "password", "=", ":", " ", '"', "'", "sk_x", "tg_1", "note", "corp-z", "input_tokens", "12",
             ";", ",", "&", "é", "😀", "(", ")", "my_secret", "x.y-z", "api_key"]
    generated = ["".join(rng.choice(words) for _ in range(rng.randint(1, 14))) for _ in range(300)]
    return [
        {"text": t, "field_patterns": ["note"] if i % 3 == 0 else [], "value_prefixes": ["corp-"] if i % 2 else []}
        for i, t in enumerate(fixed + generated)
    ]


def test_metadata_and_failure_messages_leave_the_process_sanitized(env: Env, proxy: Proxy) -> None:
    chain = Chain(
        "meta-secrets",
        metadata={"owner": "team-a", "db_password": "meta-hunter2-7", "note": "sk_live_meta_8", "long": "x" * 5000},
        config=env.config(backend_url=proxy.url),
    ).enter()
    chain.exit(RuntimeError("crashed holding ghp_failure_secret_9 and password=meta-pw-10"))
    bodies = json.dumps(proxy.bodies(r"^POST /v1/chains(/[^/]+/complete)? "))
    for secret in ("meta-hunter2-7", "sk_live_meta_8", "ghp_failure_secret_9", "meta-pw-10"):
        assert secret not in bodies
    assert chain.chain_id is not None
    stored = env.stored(chain.chain_id)
    assert {k: stored.metadata[k] for k in ("owner", "db_password", "note")} == {
        "owner": "team-a",
        "db_password": REDACTED,
        "note": REDACTED,
    }
    assert len(stored.metadata["long"]) == 5000
    assert stored.failure is not None
    assert stored.failure["message"] == "crashed holding [REDACTED] and password=[REDACTED]"


def test_cuts_never_split_a_surrogate_pair() -> None:
    assert cut_text("ab😀", 3) == "ab"
    assert cut_text("ab😀", 4) == "ab😀"
    assert cut_text("abc😀", 3) == "abc"


def test_the_client_sanitizes_exactly_as_the_service_does() -> None:
    node = shutil.which("node")
    assert node is not None, "node is required to run the service's sanitizer"
    source = REPO_ROOT / "src" / "policy" / "sanitize.ts"
    assert source.exists()
    cases = _cases()
    texts = _texts()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "sanitize.mts"
        script.write_text(_NODE_SCRIPT % source.as_posix())
        proc = subprocess.run(
            [node, "--import", "tsx", str(script)],
            cwd=REPO_ROOT,
            input=json.dumps({"cases": cases, "texts": texts}, ensure_ascii=True).encode(),
            capture_output=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    theirs = result["payloads"]
    assert len(theirs) == len(cases)
    for i, t in enumerate(texts):
        ours_text = redact_text(t["text"], field_patterns=t["field_patterns"], value_prefixes=t["value_prefixes"])
        assert ours_text == result["redacted"][i], f"text {i}: {t!r}"
        assert cut_text(t["text"], 7) == result["cuts"][i], f"cut {i}: {t!r}"
    for i, case in enumerate(cases):
        ours = sanitize_payload(
            case["payload"],
            field_patterns=case.get("field_patterns"),
            value_prefixes=case.get("value_prefixes"),
            max_string_length=case["max"],
        )
        assert {"payload": ours.payload, "redacted": ours.redacted, "truncated": ours.truncated} == theirs[i], (
            f"case {i}: {json.dumps(case)[:300]}"
        )
