"""Rule families: the columns of the conformance matrix (``acp-model matrix``).

A family groups the rules a maintainer reads together (start-up, cancellation, permissions...).
The mapping is data (``data/families.toml``): exact rule IDs and ID prefixes, an exact ID
winning over a prefix, so a rule added to the catalogue under a known prefix lands in its
family without an edit here, and one under a new prefix is caught by the test that every
catalogued rule has a family.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from acp_model.spec.rules import RULES


class FamilyError(LookupError):
    """A rule ID no family claims."""


@dataclass(frozen=True, slots=True)
class Family:
    id: str
    title: str
    about: str
    prefixes: tuple[str, ...]
    rules: tuple[str, ...]
    reach: tuple[str, ...] = ()  # the run's counters that tell how near it came to them

    def claims(self, rule_id: str) -> bool:
        return rule_id in self.rules or rule_id.split("-", 1)[0] in self.prefixes


@cache
def families() -> tuple[Family, ...]:
    """The families in column order."""
    text = resources.files("acp_model.spec").joinpath("data", "families.toml").read_text(
        encoding="utf-8")
    return tuple(Family(f["id"], f["title"], f.get("about", ""),
                        tuple(f.get("prefixes", ())), tuple(f.get("rules", ())),
                        tuple(f.get("reach", ())))
                 for f in tomllib.loads(text)["family"])


def family_of(rule_id: str) -> Family:
    """The family of a rule: the one listing its ID, else the one claiming its prefix."""
    exact = [f for f in families() if rule_id in f.rules]
    if exact:
        return exact[0]
    prefix = rule_id.split("-", 1)[0]
    for f in families():
        if prefix in f.prefixes:
            return f
    raise FamilyError(f"rule {rule_id} belongs to no family (acp_model/spec/data/families.toml)")


@cache
def members() -> dict[str, tuple[str, ...]]:
    """Family ID -> the catalogued rule IDs in it, in catalogue order."""
    out: dict[str, list[str]] = {f.id: [] for f in families()}
    for rule_id in RULES:
        out[family_of(rule_id).id].append(rule_id)
    return {k: tuple(v) for k, v in out.items()}
