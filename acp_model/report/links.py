"""Where a rule's documentation lives: one anchor per rule ID on the docs site's rule page.

Every report format (terminal, HTML, JUnit, SARIF) links a rule through :func:`rule_url`, so
the scheme is written once. The site's address is the package's ``Documentation`` URL
(``pyproject.toml``), overridable with ``ACP_MODEL_DOCS_URL`` (e.g. a locally built site).
"""

from __future__ import annotations

import os
import re
from functools import cache
from importlib import metadata

FALLBACK_DOCS_URL = "https://acp-model.readthedocs.io/en/latest"
RULES_PAGE = "rules/"


@cache
def _declared_docs_url() -> str:
    try:
        urls = metadata.metadata("acp-model").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return FALLBACK_DOCS_URL
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return url.strip()
    return FALLBACK_DOCS_URL


def docs_url() -> str:
    """The docs site's base address, without a trailing slash."""
    return (os.environ.get("ACP_MODEL_DOCS_URL") or _declared_docs_url()).rstrip("/")


def rule_anchor(rule_id: str) -> str:
    """The anchor of a rule on the rule page: ``CANCEL-07`` -> ``cancel-07``,
    ``A-04.idle-cancelled`` -> ``a-04-idle-cancelled``."""
    return re.sub(r"[^a-z0-9]+", "-", rule_id.lower()).strip("-")


def rule_url(rule_id: str) -> str:
    """The address of a rule's entry in the rule catalogue page."""
    return f"{docs_url()}/{RULES_PAGE}#{rule_anchor(rule_id)}"
