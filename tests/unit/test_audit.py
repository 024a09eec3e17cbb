"""The audit of the normative sentences (docs/audit.md) is generated and complete."""

from __future__ import annotations

from pathlib import Path

from acp_model.spec import audit
from acp_model.spec.rules import RULES

AUDIT = Path(__file__).resolve().parents[2] / "docs" / "audit.md"


def test_the_audit_page_is_generated_from_the_texts_and_the_catalogue() -> None:
    assert AUDIT.read_text(encoding="utf-8") == audit.markdown()


def test_every_normative_sentence_is_judged_or_says_why_not() -> None:
    rows = audit.sentences()
    assert {s.revision for s in rows} == {"seed", "sdk-2.4.0", "v1"}
    for s in rows:
        rid = audit.judged_by(s)
        if rid is not None:
            assert RULES[rid].applies(s.revision), (rid, s)
        else:
            assert audit.reason(s), s


def test_a_sentence_a_rule_quotes_is_judged_by_that_rule() -> None:
    [load] = [s for s in audit.sentences() if s.revision == "v1"
              and "MUST NOT replay the conversation history" in s.text]
    assert audit.judged_by(load) == "V1-RESUME-01"
    [receipt] = [s for s in audit.sentences() if s.where.startswith("$defs.ClientRequest")
                 and "MUST NOT answer with an error" in s.text]
    assert audit.judged_by(receipt) == "SDK-PROMPT-02"


def test_the_sentences_come_from_the_texts_not_from_a_list() -> None:
    # every page sentence carries its strength word, and the schema's are located by $def
    for s in audit.sentences():
        assert s.strength in s.text
    assert any(s.where.startswith("$defs.PromptResponse") for s in audit.sentences())


def test_the_close_order_of_sdk_2_4_0_is_judged_and_no_sentence_gets_the_catch_all() -> None:
    """The close sentences sdk-2.4.0 states as MUSTs are judged by their rules, and every
    sentence no rule judges has a reason of its own, not the last row's catch-all."""
    close = {s.text.split(",")[0]: audit.judged_by(s) for s in audit.sentences()
             if s.where == "$defs.CloseSessionRequest" and s.strength == "MUST"}
    assert close == {"The Agent MUST cancel any ongoing work related to the session as if "
                     "`session/cancel` was called": "SESS-10",
                     "When closing cancels active foreground work": "SDK-CLOSE-01",
                     "If closing prevents a prompt's user message from being inserted":
                         "SDK-CLOSE-02",
                     "If the message has already been inserted": "SDK-PROMPT-02"}
    catch_all = audit.NOT_MODELLED[-1][1]
    assert [s for s in audit.sentences()
            if audit.judged_by(s) is None and audit.reason(s) == catch_all] == []
