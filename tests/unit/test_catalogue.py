"""The catalogue and the code agree, both ways (as the official conformance kit checks its own).

* every rule, reading and contradiction ID the code cites is catalogued;
* every catalogued agent rule is decided somewhere (or says why it cannot be seen on the wire);
* no MAY rule is ever the ID of a failure, and every check's rule exists;
* every citation resolves in the vendored docs pages and schema of its revision;
* the docs' rule map and rule page are generated from the code (one anchor per rule ID).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from acp_model.cli import rule_map
from acp_model.model.check import CHECKS, Level, Role
from acp_model.spec.citations import unresolved
from acp_model.spec.contradictions import CONTRADICTIONS
from acp_model.spec.readings import DEFAULT, FIXED, READING_DEFS, Readings
from acp_model.spec.revisions import REVISIONS
from acp_model.spec.rules import RULES, catalogue, rule

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "acp_model"

RULE_ID = re.compile(r"(?<![A-Z-])((?:INIT|SESS|PROMPT|STATE|MSG|TOOL|PERM|CANCEL|USAGE|PLAN|STOP"
                     r"|ENUM|RPC)-\d{2})\b|\b(ACPM-[A-Z][A-Z-]*[A-Z])\b|\b(A-\d{2})\b"
                     r"|\b(C-\d{2})\b")


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".md"))


def _cited() -> dict[str, set[str]]:
    """ID -> the files citing it (acp-tck requirement IDs, ``ACP-CANCEL-201``, excluded)."""
    out: dict[str, set[str]] = {}
    for path in _sources():
        text = re.sub(r"ACP-[A-Z]+-\d+", "", path.read_text(encoding="utf-8"))
        for m in RULE_ID.finditer(text):
            out.setdefault(next(g for g in m.groups() if g), set()).add(
                str(path.relative_to(ROOT)))
    return out


def test_every_id_the_code_cites_is_catalogued() -> None:
    contradictions = {c[0] for c in CONTRADICTIONS}
    unknown = {}
    for ident, files in _cited().items():
        if ident.startswith("A-"):
            known = ident in READING_DEFS or ident in FIXED
        elif ident.startswith("C-"):
            known = ident in contradictions
        else:
            try:
                rule(ident)
                known = True
            except KeyError:
                known = False
        if not known:
            unknown[ident] = sorted(files)
    assert unknown == {}


def test_the_scan_sees_what_it_should() -> None:
    cited = _cited()
    assert {"CANCEL-07", "ACPM-ANSWER", "A-11", "C-07"} <= set(cited)
    assert "acp_model/model/cancel_rules.py" in cited["CANCEL-07"]


def test_every_agent_rule_is_decided_somewhere() -> None:
    decided = rule_map.decisions()
    undecided = [r.id for r in RULES.values()
                 if r.party in ("agent", "both") and r.kind not in ("allowance", "definition")
                 and r.id not in decided and not r.judged_via and not r.unobservable]
    assert undecided == []
    for r in RULES.values():
        assert set(r.judged_via) <= set(decided), r.id


def test_no_check_uses_a_may_rule_and_every_check_names_a_rule() -> None:
    rule_map.decisions()  # registers every check
    assert CHECKS
    for key, meta in CHECKS.items():
        if not meta.module.startswith("acp_model."):
            continue  # broken models the tests define on purpose
        assert meta.rule in RULES, key
        assert RULES[meta.rule].strength != "MAY", f"{key} reports MAY rule {meta.rule}"
        assert meta.doc, f"{key} has no docstring to say what is expected"


def _reading_variants() -> list[Readings]:
    """Every revision, and in each every value of every reading it leaves open (one change
    at a time)."""
    out = []
    for rev in REVISIONS.values():
        base = DEFAULT.parse([f"SPEC={rev.name}"])
        out.append(base)
        for d in READING_DEFS.values():
            if d.id == "SPEC" or d.id in rev.decides:
                continue
            out += [base.parse([f"{d.id}={v}"]) for v in d.values if v != base[d.id]]
    return out


def test_checks_at_must_level_name_must_rules() -> None:
    """The strength audit: a check whose failure fails a run, under any revision and reading,
    reports a rule whose strength there is MUST / MUST NOT, with a citation."""
    rule_map.decisions()
    variants = _reading_variants()
    for key, meta in CHECKS.items():
        if not meta.module.startswith("acp_model."):
            continue
        for readings in variants:
            if meta.level(readings) != Level.FAIL:
                continue
            rule = RULES[meta.rule_for(readings)]
            strength = rule.strength_under(readings)
            assert strength in ("MUST", "MUST NOT"), (key, rule.id, readings.changed())
            assert rule.citation_in(readings.revision), (key, rule.id)


def test_every_deciding_module_is_in_the_rule_map() -> None:
    """A module that tags a check but is missing from DECIDING_MODULES would be left off the
    map (and its checks off the meta-tests)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("check",
                                                                                "declare"):
                mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found.add(mod.removesuffix(".__init__"))
    found.discard("acp_model.model.check")
    assert found <= set(rule_map.DECIDING_MODULES), sorted(found - set(
        rule_map.DECIDING_MODULES))


def test_roles_of_declared_decisions() -> None:
    rule_map.decisions()
    roles = {meta.role for meta in CHECKS.values()}
    assert {Role.GUARD, Role.FINDING, Role.OBLIGATION, Role.PROCESS, Role.ROUTE} <= roles


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_citation_resolves_in_the_vendored_sources(rule_id: str) -> None:
    rule = RULES[rule_id]
    assert unresolved(rule.citation) == []
    for _revision, citation in rule.cited_in:  # a revision's own citation, in its schema
        assert unresolved(citation) == []


def test_a_bad_citation_is_caught() -> None:
    assert unresolved("prompt-lifecycle.mdx §9 Nothing Here; schema $defs.NoSuchDef") == [
        "prompt-lifecycle.mdx §9 Nothing Here", "seed $defs.NoSuchDef"]
    assert unresolved("sdk-2.4.0 schema $defs.Notice; $defs.NoSuchDef") == [
        "sdk-2.4.0 $defs.NoSuchDef"]
    assert unresolved("sdk-2.4.0 schema $defs.StopReason") == ["sdk-2.4.0 $defs.StopReason"]


def test_the_design_page_shows_the_rule_map_generated_from_the_code() -> None:
    """docs/design.md holds no copy of the map: the site build puts the generated one there."""
    from sitegen.pages import expand

    page = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert "<!-- generated: rule-map -->" in page
    assert rule_map.markdown() in expand(page)
    for module in rule_map.DECIDING_MODULES:
        assert f"`{module.replace('.', '/')}.py`" in expand(page)


def test_the_rule_page_has_one_anchor_per_rule_as_reports_link_it() -> None:
    from acp_model.report.links import rule_anchor
    from sitegen.pages import rule_catalogue

    anchors = re.findall(r"^### (\S+) \{#([a-z0-9-]+)\}$", rule_catalogue(), re.M)
    assert sorted(rule for rule, _ in anchors) == sorted(r.id for r in catalogue())
    assert all(anchor == rule_anchor(rule) for rule, anchor in anchors)
    assert len({anchor for _, anchor in anchors}) == len(anchors)  # no two rules share one


def test_the_catalogue_has_every_rule_the_code_uses() -> None:
    assert len(RULES) >= 80
    used = {meta.rule for meta in CHECKS.values()}
    assert used <= set(RULES)


def _literal_rule_verdicts(tree: ast.AST) -> list[int]:
    """Lines that build a verdict from a literal rule ID instead of a check's metadata: a dict
    display with a ``"rule": "<ID>"`` entry, or ``Violation("<ID>", ...)``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "rule" \
                        and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Violation" \
                and node.args and isinstance(node.args[0], ast.Constant):
            lines.append(node.lineno)
    return lines


def test_no_verdict_is_written_outside_the_rule_registry() -> None:
    """A verdict names its rule through a check (``@check`` / ``declare``), never a literal:
    a hand-made ``{"rule": "ACPM-ALIVE", "level": "fail"}`` once turned an unusable run (an
    environment problem) into the agent's MUST failure."""
    found = {str(p.relative_to(ROOT)): lines for p in PACKAGE.rglob("*.py")
             if "spec" not in p.relative_to(PACKAGE).parts
             and (lines := _literal_rule_verdicts(ast.parse(p.read_text(encoding="utf-8"))))}
    assert found == {}


def test_the_literal_verdict_scan_sees_one() -> None:
    planted = ast.parse('v = {"rule": "ACPM-ALIVE", "level": "fail"}\nViolation("X-01", "f")')
    assert _literal_rule_verdicts(planted) == [1, 2]


def test_the_catalogue_source_the_code_cites_is_held() -> None:
    """``RULES.md``, the first catalogue the rules were written from, is vendored at the
    repository's root: every rule, reading and section the package and the docs cite in it
    is there."""
    root = Path(__file__).resolve().parents[2]
    source = (root / "RULES.md").read_text(encoding="utf-8")
    headings = {m.group(1) for m in re.finditer(r"^#+ (\d+(?:\.\d+)?)[. ]", source, re.M)}
    cited = set()
    for path in [*(root / "acp_model").rglob("*.py"), *(root / "docs").glob("*.md")]:
        text = path.read_text(encoding="utf-8")
        cited |= set(re.findall(r"RULES\.md,? (?:§|section )?([A-Z0-9][A-Za-z0-9.-]*\d)", text))
    assert len(cited) >= 20, cited
    for ref in cited:
        assert (ref in headings) if ref[0].isdigit() else (ref in source), ref


def test_cancel_07_under_sdk_2_4_0_quotes_the_sentence_an_end_turn_breaks() -> None:
    """The s12 reader: codex-acp v2's CANCEL-07 ended `end_turn`, yet the issue quoted only
    "Agents MUST catch errors ... not error", a wrong-rule reading for its maintainer. The
    citation quotes, word for word (backticks and line breaks aside), the session/cancel
    sentences the failure breaks: what it cancels, and the cancelled idle it owes."""
    import json

    from acp_model.spec.revisions import SDK_2_4_0
    from acp_model.spec.schema import load_schema

    text = " ".join(json.dumps(load_schema(SDK_2_4_0)).replace("\\n", " ")
                    .replace("`", "").split())
    cited = RULES["CANCEL-07"].citation_in(SDK_2_4_0)
    for sentence in ("Cancels a session's foreground work and its prompts not yet inserted",
                     "the Agent MUST send an idle state_update session update with the "
                     "cancelled stop reason if cancellation ended active foreground work",
                     "Agents MUST catch errors caused by aborting cancelled work and report "
                     "the cancelled stop reason, not error"):
        assert sentence in cited and sentence in text, sentence
