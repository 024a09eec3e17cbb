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


REPORT = {
    "verdict": "fail",
    "summary": {"failures": 1, "warnings": 0},
    "violations": [{"rule": "CANCEL-07", "level": "fail", "index": 7, "session": "s1",
                    "strength": "MUST", "message": "the cancelled work ended end_turn"}],
    "rules": [{"id": "CANCEL-07", "status": "violated", "strength": "MUST", "exercised": 1},
              {"id": "PERM-11", "status": "held", "strength": "MUST", "exercised": 3}],
}


def test_the_terminal_summary_links_each_rule_it_names() -> None:
    import io

    from rich.console import Console

    from acp_model.report.text import counterexample_line, render

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=100)
    render(REPORT, console)
    console.print(counterexample_line({"rule": "CANCEL-07", "steps": 3, "reproduction": "5/5",
                                       "reproduced": 5, "replays": 5}))
    text = out.getvalue()
    assert text.count("\x1b]8;id=") >= 2  # OSC 8 hyperlinks: the violation and the line
    assert text.count(rule_url("CANCEL-07")) >= 2  # rich may split one link into segments


def test_the_html_page_links_findings_and_the_rule_table_to_the_catalogue() -> None:
    from acp_model.report.html import cases_from_violations, render_html

    page = render_html(REPORT, cases=cases_from_violations(REPORT["violations"], []))
    assert page.count(f'href="{rule_url("CANCEL-07")}"') == 2  # the finding, the table row
    assert f'href="{rule_url("PERM-11")}"' in page


def test_the_junit_file_names_each_rule_documentation() -> None:
    import xml.etree.ElementTree as ET

    from acp_model.report.junit import junit_xml

    suite = ET.fromstring(junit_xml(REPORT))
    docs = {case.get("name"): case.find("properties/property[@name='documentation']")
            for case in suite.iter("testcase")}
    assert {name: prop.get("value") for name, prop in docs.items() if prop is not None} == {
        "CANCEL-07": rule_url("CANCEL-07"), "PERM-11": rule_url("PERM-11")}
    failure = suite.find("testcase[@name='CANCEL-07']/failure")
    assert failure is not None and rule_url("CANCEL-07") in (failure.text or "")
