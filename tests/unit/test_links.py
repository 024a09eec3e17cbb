"""The one scheme for a rule's documentation address."""

from acp_model.report.links import rule_anchor, rule_url


def test_a_rule_anchor_is_its_id_in_lower_case_with_dashes() -> None:
    assert rule_anchor("CANCEL-07") == "cancel-07"
    assert rule_anchor("A-04.idle-cancelled") == "a-04-idle-cancelled"


def test_the_docs_address_can_be_overridden(monkeypatch) -> None:
    monkeypatch.setenv("ACP_MODEL_DOCS_URL", "file:///tmp/site/")
    assert rule_url("PERM-11") == "file:///tmp/site/rules/#perm-11"


def test_a_profile_with_an_unknown_key_is_refused() -> None:
    import pytest

    from acp_model.profiles import ProfileError, _profile

    with pytest.raises(ProfileError, match="sessions_ahaed"):
        _profile({"name": "x", "title": "x", "package": "x", "version": "1", "entry": "e",
                  "command": ["node"], "model_api": "anthropic", "sessions_ahaed": 4})
