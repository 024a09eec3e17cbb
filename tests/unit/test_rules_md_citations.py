"""Every citation of ``RULES.md`` (the rule catalogue the project was built from, vendored at
``acp_model/spec/data/RULES.md``) names an entry or section the vendored file holds: a reader
who follows a citation finds what it names in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "acp_model" / "spec" / "data" / "RULES.md"
CITED = re.compile(r"RULES\.md[ ,]*(?:(?:§ ?|section )(?P<section>\d+(?:\.\d+)*)"
                   r"|(?P<entry>[A-Z]+(?:-[A-Z0-9]+)*-\d+[a-z]?))")


def _citations() -> list[tuple[str, str, str]]:
    found = []
    for folder, pattern in (("acp_model", "*.py"), ("docs", "*.md"), ("tests", "*.py")):
        for path in sorted((ROOT / folder).rglob(pattern)):
            if path == VENDORED or path == Path(__file__):
                continue
            for m in CITED.finditer(path.read_text(encoding="utf-8")):
                found.append((str(path.relative_to(ROOT)), m["section"] or "", m["entry"] or ""))
    return found


def test_the_catalogue_is_vendored_and_every_citation_resolves() -> None:
    text = VENDORED.read_text(encoding="utf-8")
    sections = set(re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", text, flags=re.M))
    entries = set(re.findall(r"^\| ([A-Z]+(?:-[A-Z0-9]+)*-\d+[a-z]?) \|", text, flags=re.M))
    entries |= set(re.findall(r"\*\*([A-Z]+(?:-[A-Z0-9]+)*-\d+[a-z]?)\b", text))
    citations = _citations()
    assert len(citations) > 20  # the code and docs cite it (a broken pattern finds none)
    missing = [c for c in citations if (c[1] and c[1].rstrip(".") not in sections)
               or (c[2] and c[2] not in entries)]
    assert not missing, missing
