"""JUnit XML: one test case per rule, so CI shows a conformance table."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from acp_model import __version__
from acp_model.report.document import NOT_JUDGED
from acp_model.report.links import rule_url
from acp_model.spec.levels import Level


def junit_xml(report: dict[str, Any]) -> str:
    """One test case per rule, so CI shows a conformance table."""
    suite = ET.Element("testsuite", name="acp-model", tests=str(len(report["rules"])))
    failures = skipped = 0
    by_rule: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in report["violations"]:
        by_rule[v["rule"]].append(v)
    for r in report["rules"]:
        group = r["id"].rsplit("-", 1)[0]
        case = ET.SubElement(suite, "testcase", classname=f"acp-model.{group}", name=r["id"])
        hits = [v for v in by_rule.get(r["id"], []) if v["level"] == Level.FAIL]
        warns = [v for v in by_rule.get(r["id"], []) if v["level"] == Level.WARN]
        if hits:
            failures += 1
            node = ET.SubElement(case, "failure", message=hits[0]["message"][:500],
                                 type=r["strength"])
            node.text = "\n".join(v["message"] for v in hits) + f"\nrule: {rule_url(r['id'])}"
        elif r["status"] in ("not exercised", NOT_JUDGED):  # never a pass
            skipped += 1
            ET.SubElement(case, "skipped", message=r.get("not_judged") or
                          "not exercised in this run")
        if warns:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(f"warning: {v['message']}" for v in warns)
        props = ET.SubElement(case, "properties")  # CI pages show the rule's documentation
        ET.SubElement(props, "property", name="documentation", value=rule_url(r["id"]))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("hostname", f"acp-model {__version__}")
    return ET.tostring(suite, encoding="unicode")


def write_junit(report: dict[str, Any], path: str | Path) -> Path:
    """Write the report's JUnit XML (one test case per rule) to ``path``, creating its folder."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(junit_xml(report), encoding="utf-8")
    return out
