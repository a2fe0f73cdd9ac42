"""init() / ChainConfig (spec: init's parameter table): defaults, validation naming the field,
the deprecated parameters' DeprecationWarning, fail-mode resolution, and the API key kept out of
every printable form. No service needed."""

from __future__ import annotations

import warnings

import pytest

import sdk
from sdk import DEFAULT_FAIL_MODES, ChainConfig, create_config, init
from sdk._testing import reset_config


def test_init_has_the_spec_defaults_and_stores_the_configuration() -> None:
    config = init("tg_secret_key_value")
    assert isinstance(config, ChainConfig)
    assert sdk.get_config() is config
    assert config.environment == "production"
    assert config.backend_url == "http://localhost:8000"
    assert config.backend_timeout_seconds == 5.0
    assert config.fail_modes is None and config.fail_mode is None
    assert config.financial_approval_threshold_usd == 5000.0
    assert config.cumulative_financial_threshold_usd == 10000.0
    assert config.external_domains_allowlist is None and config.high_risk_agents is None
    assert config.default_approval_timeout_hours == 24
    assert config.fallback_approvers is None
    assert config.sensitive_field_patterns is None and config.sensitive_value_patterns is None
    assert config.max_payload_string_length == 1000
    assert config.enable_local_fast_path is True
    assert config.offline_buffer_max_events == 100
    assert dict(config.policy_settings) == {}
    assert config.internals.poll_interval_seconds == 5.0
    assert config.internals.long_poll_enabled is True


def test_only_explicit_policy_settings_go_into_each_chains_policy_config() -> None:
    config = create_config(
        "tg_x",
        financial_approval_threshold_usd=100,
        external_domains_allowlist=["partner.example"],
        fallback_approvers=["cfo@example.com"],
    )
    assert dict(config.policy_settings) == {
        "financial_approval_threshold_usd": 100.0,
        "external_domains_allowlist": ["partner.example"],
    }


def test_the_api_key_is_never_printed() -> None:
    config = create_config("tg_very_secret_value", backend_url="http://127.0.0.1:1/")
    assert config.api_key == "tg_very_secret_value"
    assert "tg_very_secret_value" not in repr(config)
    assert "tg_very_secret_value" not in str(config.to_dict())
    assert config.to_dict()["api_key"] == "[REDACTED]"
    assert config.backend_url == "http://127.0.0.1:1"
    with pytest.raises(AttributeError):
        config.environment = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"backend_url": "ftp://x"}, "backend_url"),
        ({"backend_timeout_seconds": 0}, "backend_timeout_seconds"),
        ({"fail_modes": {"financial": "maybe"}}, "fail_modes.financial"),
        ({"fail_modes": {"nonsense": "deny"}}, "fail_modes.nonsense"),
        ({"fail_mode": "open"}, "fail_mode"),
        ({"financial_approval_threshold_usd": -1}, "financial_approval_threshold_usd"),
        ({"default_approval_timeout_hours": 0}, "default_approval_timeout_hours"),
        ({"fallback_approvers": ["not-an-email"]}, "fallback_approvers"),
        ({"max_payload_string_length": 0}, "max_payload_string_length"),
        ({"environment": ""}, "environment"),
        ({"high_risk_agents": [""]}, "high_risk_agents"),
    ],
)
def test_invalid_options_raise_naming_the_field(options: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        create_config("tg_x", **options)


def test_an_empty_api_key_and_both_fail_mode_forms_are_rejected() -> None:
    with pytest.raises(ValueError, match="api_key"):
        init("")
    with pytest.raises(TypeError, match="fail_mode"):
        init("tg_x", fail_modes={"default": "deny"}, fail_mode="deny")


def test_deprecated_parameters_warn_and_do_nothing() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = init("tg_x", enable_local_fast_path=True, offline_buffer_max_events=5)
    assert [w.category for w in caught] == [DeprecationWarning, DeprecationWarning]
    assert "enable_local_fast_path" in str(caught[0].message)
    assert "offline_buffer_max_events" in str(caught[1].message)
    assert caught[0].filename == __file__  # attributed to the caller of init()
    assert config.offline_buffer_max_events == 5
    with warnings.catch_warnings(record=True) as none:
        warnings.simplefilter("always")
        init("tg_x")
    assert none == []


def test_fail_mode_resolution_order() -> None:
    assert DEFAULT_FAIL_MODES["financial"] == "deny"
    assert DEFAULT_FAIL_MODES["default"] == "allow"
    defaults = create_config("tg_x")
    assert defaults.fail_mode_for("financial") == ("deny", "financial")
    assert defaults.fail_mode_for("llm_call") == ("allow", "llm_call")
    assert defaults.fail_mode_for("something_new") == ("allow", "default")
    legacy = create_config("tg_x", fail_mode="deny")
    assert legacy.fail_mode_for("llm_call") == ("deny", "default")
    custom = create_config("tg_x", fail_modes={"financial": "allow", "default": "deny"})
    assert custom.fail_mode_for("financial") == ("allow", "financial")
    assert custom.fail_mode_for("external_communication") == ("deny", "default")
    partial = create_config("tg_x", fail_modes={"llm_call": "deny"})
    assert partial.fail_mode_for("financial") == ("deny", "financial")
    assert partial.fail_mode_for("default") == ("allow", "default")


def test_get_config_without_init_raises() -> None:
    reset_config()
    with pytest.raises(RuntimeError, match="init"):
        sdk.get_config()


def test_reset_config_is_not_public() -> None:
    assert not hasattr(sdk, "reset_config")
    assert "reset_config" not in sdk.__all__
