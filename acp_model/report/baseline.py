"""A baseline: failures a team accepts until they are fixed (``--baseline acp-baseline.toml``).

An agent with one known, filed bug would fail every build until it is fixed; a baseline names
that failure's rule (optionally the agent version it was seen in, and a note such as the
upstream issue), and a run then fails only on failures the baseline does not name. An entry
that no longer earns its place is *stale* and reported (``--baseline-strict`` fails on it):

* its rule was not shown failing in the last ``stale_after`` runs (default 1: this run). The
  report says whether the rule was exercised and passed (fixed, probably) or not reached.
* A racy failure may miss a run: ``stale_after = N`` then counts consecutive runs without it
  in a small state file next to the baseline (``acp-baseline.toml.state.json``; keep it between
  CI runs, e.g. with a cache, or the count starts again at every run).

An entry with ``agent_version`` applies to that version only (the ``version`` the agent gave in
``initialize``); for another version it accepts nothing and is listed as not applying.

The file::

    stale_after = 1

    [[accept]]
    rule = "CANCEL-06"
    agent_version = "0.4.2"          # optional
    note = "upstream issue #123"     # optional
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_model.spec.levels import Level
from acp_model.spec.rules import RULES

STATE_FORMAT = "acp-model-baseline-state/1"
ENTRY_KEYS = {"rule", "agent_version", "note"}
TOP_KEYS = {"stale_after", "accept"}


class BaselineError(Exception):
    """The baseline file cannot be used (a usage error: exit 2)."""


@dataclass(frozen=True)
class Entry:
    rule: str
    agent_version: str | None = None
    note: str = ""

    def applies_to(self, version: str | None) -> bool:
        return self.agent_version is None or self.agent_version == version

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "agent_version": self.agent_version, "note": self.note}


@dataclass
class Baseline:
    path: Path
    entries: list[Entry]
    stale_after: int = 1

    @property
    def state_path(self) -> Path:
        return self.path.with_name(self.path.name + ".state.json")


def load(path: str | Path) -> Baseline:
    """Read and check a baseline file; :class:`BaselineError` says what is wrong, where."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{p}: no such baseline file (make one with `acp-model baseline "
                            "write REPORT.json -o FILE`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{p}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BaselineError(f"{p}: not valid TOML ({exc})") from None
    unknown = set(doc) - TOP_KEYS
    if unknown:
        raise BaselineError(f"{p}: unknown key(s) {', '.join(sorted(unknown))} (known: "
                            f"{', '.join(sorted(TOP_KEYS))})")
    stale_after = doc.get("stale_after", 1)
    if not isinstance(stale_after, int) or isinstance(stale_after, bool) or stale_after < 1:
        raise BaselineError(f"{p}: stale_after must be a whole number of runs, at least 1")
    raw = doc.get("accept", [])
    if not isinstance(raw, list):
        raise BaselineError(f"{p}: `accept` must be an array of tables ([[accept]])")
    entries = [_entry(p, n, item) for n, item in enumerate(raw, start=1)]
    return Baseline(p, entries, stale_after)


def _entry(path: Path, n: int, item: Any) -> Entry:
    where = f"{path}: entry {n}"
    if not isinstance(item, dict):
        raise BaselineError(f"{where} is not a table")
    unknown = set(item) - ENTRY_KEYS
    if unknown:
        raise BaselineError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: "
                            f"{', '.join(sorted(ENTRY_KEYS))})")
    rule = item.get("rule")
    if not isinstance(rule, str):
        raise BaselineError(f"{where}: `rule` (a rule ID such as \"CANCEL-06\") is missing")
    if rule not in RULES:
        raise BaselineError(f"{where}: unknown rule {rule!r} (see `acp-model rules`)")
    version = item.get("agent_version")
    note = item.get("note", "")
    if version is not None and not isinstance(version, str):
        raise BaselineError(f"{where}: `agent_version` must be a string")
    if not isinstance(note, str):
        raise BaselineError(f"{where}: `note` must be a string")
    return Entry(rule, version, note)


@dataclass
class Judgement:
    """What a baseline makes of one run's failures."""

    accepted: list[dict[str, Any]] = field(default_factory=list)  # failure + its entry's note
    new: list[dict[str, Any]] = field(default_factory=list)  # failures no entry accepts
    stale: list[dict[str, Any]] = field(default_factory=list)  # entry + why
    not_applying: list[Entry] = field(default_factory=list)  # for another agent version

    def failed(self, strict: bool) -> bool:
        return bool(self.new) or (strict and bool(self.stale))

    def accepts(self, rule: str) -> bool:
        return any(a["rule"] == rule for a in self.accepted)

    def to_json(self, baseline: Baseline, strict: bool) -> dict[str, Any]:
        return {"file": str(baseline.path), "strict": strict,
                "stale_after": baseline.stale_after,
                "verdict": "fail" if self.failed(strict) else "pass",
                "accepted": self.accepted, "new": self.new, "stale": self.stale,
                "not_applying": [e.to_json() for e in self.not_applying]}


def failures_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in report.get("violations", []) if v.get("level") == Level.FAIL]


def agent_version(report: dict[str, Any]) -> str | None:
    info = report.get("agent_info")
    version = info.get("version") if isinstance(info, dict) else None
    return version if isinstance(version, str) else None


def judge(baseline: Baseline, report: dict[str, Any],
          state: dict[str, int] | None = None) -> tuple[Judgement, dict[str, int]]:
    """Sort the report's failures into accepted and new, find the stale entries, and return
    the updated count of consecutive runs each entry's rule went without failing."""
    version = agent_version(report)
    applying = [e for e in baseline.entries if e.applies_to(version)]
    out = Judgement(not_applying=[e for e in baseline.entries if not e.applies_to(version)])
    failed_rules = set()
    for v in failures_of(report):
        entry = next((e for e in applying if e.rule == v["rule"]), None)
        failed_rules.add(v["rule"])
        if entry is None:
            out.new.append({"rule": v["rule"], "message": v.get("message", "")})
        else:
            out.accepted.append({"rule": v["rule"], "message": v.get("message", ""),
                                 "note": entry.note})
    exercised = {r["id"]: r.get("exercised", 0) for r in report.get("rules", [])}
    counts = dict(state or {})
    for entry in applying:
        unseen = 0 if entry.rule in failed_rules else counts.get(entry.rule, 0) + 1
        counts[entry.rule] = unseen
        if unseen >= baseline.stale_after:
            runs = "this run" if unseen == 1 else f"the last {unseen} runs"
            n = exercised.get(entry.rule, 0)
            why = f"not shown failing in {runs}; " + (
                f"this run exercised its rule {n} time(s) and it passed: fixed?" if n
                else "this run did not reach its rule")
            out.stale.append({**entry.to_json(), "why": why})
    return out, {rule: counts[rule] for rule in sorted({e.rule for e in applying})}


def read_state(baseline: Baseline) -> dict[str, int]:
    """The counts kept next to the baseline (none yet, or unreadable: start again)."""
    try:
        doc = json.loads(baseline.state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    counts = doc.get("runs_without_failure") if isinstance(doc, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {k: v for k, v in counts.items() if isinstance(v, int) and v >= 0}


def write_state(baseline: Baseline, counts: dict[str, int]) -> None:
    baseline.state_path.write_text(json.dumps(
        {"format": STATE_FORMAT, "runs_without_failure": counts}, indent=2) + "\n",
        encoding="utf-8")


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def from_report(report: dict[str, Any], source: str = "") -> str:
    """A baseline accepting every failure of ``report`` (one entry per rule), as TOML."""
    version = agent_version(report)
    lines = ["# acp-model baseline: failures accepted until fixed (acp-model fuzz --baseline).",
             f"# Written from {source or 'a report'}; give each entry a note (the upstream "
             "issue).", "", "stale_after = 1", ""]
    seen: set[str] = set()
    for v in failures_of(report):
        if v["rule"] in seen:
            continue
        seen.add(v["rule"])
        message = " ".join(str(v.get("message", "")).split())
        lines += ["[[accept]]", f"rule = {_toml_string(v['rule'])}"]
        if version is not None:
            lines.append(f"agent_version = {_toml_string(version)}")
        lines += [f"note = {_toml_string(message[:200])}", ""]
    return "\n".join(lines)
