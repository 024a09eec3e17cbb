"""The docs pages that are generated, not written: built from the code at site build time.

A page in ``docs/`` holds a marker ``<!-- generated: NAME -->`` where generated text goes;
the MkDocs hook (:mod:`sitegen.hooks`) replaces it with ``GENERATORS[NAME]()``. Built from
the argparse parsers, the rule registry and ``benchmarks/results/*.json`` on every build, these
pages cannot go stale when another change adds an option, a rule or a figure.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")


def _cell(text: object) -> str:
    """A Markdown table cell: pipes escaped, newlines folded."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --- the CLI reference ----------------------------------------------------------------------

def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_row(action: argparse.Action) -> list[str]:
    if action.option_strings:
        names = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or (action.dest.upper() if not action.choices else
                                         "{" + ",".join(map(str, action.choices)) + "}")
            names += f" `{metavar}`"
    else:
        names = f"`{action.metavar or action.dest}`"
    helptext = (action.help or "").replace("%(default)s", str(action.default))
    if action.choices and not action.option_strings:
        helptext += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    default = action.default
    if (action.option_strings and default not in (None, False, argparse.SUPPRESS, [])
            and "default" not in helptext):
        helptext += f" (default: `{default}`)"
    return [names, helptext]


def cli_reference() -> str:
    """Every subcommand: usage, description, each argument and option, the epilog."""
    from acp_model.cli.main import build_parser

    parser = build_parser()
    parser.formatter_class = argparse.HelpFormatter
    out = []
    top = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    out.append("Options before the subcommand:\n\n" + _table(
        ["option", "what"], [_option_row(a) for a in top]))
    for name, sub in subcommands(parser).items():
        out.append(f"## acp-model {name} {{#{name}}}\n")
        if sub.description:
            out.append(sub.description + "\n")
        usage = sub.format_usage().removeprefix("usage: ").strip()
        out.append(f"```text\n{usage}\n```\n")
        rows = [_option_row(a) for a in sub._actions
                if a.dest != "help" and a.help != argparse.SUPPRESS]
        if rows:
            out.append(_table(["argument", "what"], rows))
        if sub.epilog:
            out.append(f"```text\n{sub.epilog.strip()}\n```\n")
    return "\n".join(out)


# --- the rule catalogue ---------------------------------------------------------------------

GROUP_TITLES = {
    "INIT": "Initialization", "SESS": "Sessions", "PROMPT": "Prompts", "STATE": "State reports",
    "STOP": "Stop reasons", "MSG": "Messages", "TOOL": "Tool calls", "PLAN": "Plans",
    "USAGE": "Usage", "PERM": "Permissions", "CANCEL": "Cancellation", "ENUM": "Open enums",
    "RPC": "JSON-RPC", "ACPM": "acp-model's own rules", "READING": "Rules a strict reading adds",
    "SDK": "The newer revision's rules (sdk-2.4.0)", "V1": "v1's own rules",
}


def rule_catalogue() -> str:
    """One section per rule, its anchor the one :func:`acp_model.report.links.rule_anchor`
    gives, so every report's link lands on it."""
    from acp_model.cli import rule_map
    from acp_model.report.links import rule_anchor
    from acp_model.spec.rules import catalogue, group_of

    decided = rule_map.decisions()
    rules = catalogue()
    groups: dict[str, list[Any]] = {}
    for rule in rules:
        groups.setdefault(group_of(rule.id), []).append(rule)
    out = [f"{len(rules)} rules in {len(groups)} groups.\n"]
    for group, members in groups.items():
        out.append(f"## {GROUP_TITLES.get(group, group)} {{#group-{group.lower()}}}\n")
        for rule in members:
            strength = rule.strength
            changed = ", ".join(f"{s} in `{rev}`" for rev, s in rule.strength_in)
            out.append(f"### {rule.id} {{#{rule_anchor(rule.id)}}}\n")
            facts = [f"**{strength}**" + (f" ({changed})" if changed else ""),
                     f"binds the {rule.party}", rule.kind,
                     "revisions " + ", ".join(f"`{r}`" for r in rule.revisions)]
            if rule.alt_strength:
                facts.append(f"‡ {rule.alt_strength} by the {rule.alt_source or 'schema'}")
            out.append(" · ".join(facts) + "\n")
            out.append(rule.statement + "\n")
            cites = [f"- {rule.citation}"] + [f"- `{rev}`: {c}" for rev, c in rule.cited_in]
            out.append("Source:\n\n" + "\n".join(cites) + "\n")
            where = sorted({m.module for m in decided.get(rule.id, [])})
            if where:
                out.append("Decided in " + ", ".join(f"`{w}`" for w in where) + ".\n")
            elif rule.judged_via:
                out.append("Reported under " + ", ".join(
                    f"[{r}](#{rule_anchor(r)})" for r in rule.judged_via) + ".\n")
            if rule.unobservable:
                out.append(f"Not judged: {rule.unobservable}\n")
            if rule.tck:
                out.append("acp-tck: " + ", ".join(f"`{t}`" for t in rule.tck) + "\n")
            if rule.notes:
                out.append(f"Note: {rule.notes}\n")
    return "\n".join(out)


def rule_map_table() -> str:
    from acp_model.cli import rule_map

    return rule_map.markdown()


def check_reads_table() -> str:
    from acp_model.cli import rule_map

    return rule_map.reads_markdown()


def readings_table() -> str:
    """The named readings: ID, slug, values (default in bold), the question."""
    from acp_model.spec.readings import READING_DEFS

    rows = []
    for d in READING_DEFS.values():
        values = ", ".join(f"**{v}**" if v == d.default else v for v in d.values)
        rows.append([d.id, f"`{d.slug}`", values, d.question])
    return _table(["ID", "slug", "values (**default**)", "question"], rows)


# --- benchmarks -----------------------------------------------------------------------------

def _value(fig: dict[str, Any]) -> str:
    value = fig["value"]
    text = f"{value:,}" if isinstance(value, int | float) and not isinstance(value, bool) \
        else str(value)
    return f"{text} {fig.get('unit', '')}".strip()


KNOWN_BENCHMARKS = {  # name -> (title, command): a section even before its first results
    "check": ("Offline checking", "python benchmarks/bench_check.py"),
    "fuzz": ("Fuzzing", "python benchmarks/bench_fuzz.py --seeds 3"),
    "fuzz-guidance": ("Coverage guidance",
                      "python benchmarks/bench_fuzz.py --guidance 150 --seeds 5"),
    "shrink": ("Counterexamples", "python benchmarks/bench_shrink.py --jobs 2"),
    "explore": ("Exploration", "python benchmarks/bench_explore.py"),
    "proxy": ("Proxy", "python benchmarks/bench_proxy.py"),
    "real-agents-claude-agent-acp": (
        "A real agent: claude-agent-acp",
        "acp-model agents install claude-agent-acp && "
        "python benchmarks/bench_real_agents.py --seconds 60"),
    "budget": ("The time budget bounds the whole run",
               "python benchmarks/bench_budget.py --budget 15"),
    "known_bugs": ("Published bugs of real agents",
                   "python benchmarks/bench_known_bugs.py --budget 45"),
    "tests": ("The test suite's tiers", "python benchmarks/bench_tests.py --tier fast sweep"),
    "tool-hints": ("Tool hints are hints only", "python benchmarks/bench_tool_hints.py"),
    "coverage": ("Coverage guidance on real agents (their ACP layer)",
                 "python benchmarks/bench_coverage.py --seconds 300 --seeds 1 2 3"),
    "verdicts": ("No verdict changes (a refactor, before and after)",
                 "python benchmarks/verdicts.py run --acp-model OLD/.venv/bin/acp-model "
                 "--save old.json && python benchmarks/verdicts.py run --acp-model "
                 ".venv/bin/acp-model --save new.json && python benchmarks/verdicts.py "
                 "compare old.json new.json --record"),
}


def benchmarks(results: Path = RESULTS) -> str:
    """Each benchmark as a section: its headline figures (with targets), its detail table,
    the machine, commit and date it was measured on, and the command that reproduces it; a
    known benchmark without results says so and how to produce them."""
    found = {path.stem: path for path in sorted(results.glob("*.json"))}
    out = []
    for name in [*KNOWN_BENCHMARKS, *(n for n in found if n not in KNOWN_BENCHMARKS)]:
        path = found.get(name)
        if path is None:
            title, command = KNOWN_BENCHMARKS[name]
            out.append(f"## {title} {{#{name}}}\n\nNo results yet. Run:\n\n"
                       f"```sh\n{command}\n```\n")
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        out.append(f"## {doc['title']} {{#{doc['benchmark']}}}\n")
        out.append(f"```sh\n{doc['command']}\n```\n")
        rows = []
        for fig in doc["figures"]:
            target = fig.get("target", "")
            met = {True: "met", False: "**missed**", None: ""}[fig.get("met")]
            rows.append([fig["name"], _value(fig), f"{target} {met}".strip()])
        if rows:
            out.append(_table(["figure", "value", "target"], rows))
        table = doc.get("table")
        if table and table["rows"]:
            out.append(_table(table["columns"], table["rows"]))
        if doc.get("notes"):
            out.append(doc["notes"] + "\n")
        m = doc["machine"]
        params = ", ".join(f"{k} {v}" for k, v in doc.get("parameters", {}).items())
        dirty = " (with uncommitted changes)" if doc.get("dirty") else ""
        out.append(f"*Measured {doc['date'][:10]} at commit `{doc['commit']}`{dirty} on "
                   f"{m['cores']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}, "
                   f"{m['system']}"
                   + (f", load {m['load']}" if "load" in m else "")
                   + f"; {params}.* Source: `benchmarks/results/{path.name}`.\n")
    return "\n".join(out)


# --- the Python API -------------------------------------------------------------------------

DATA_DOCS = {
    "DEFAULT": "the default readings (every literal MUST, every defensible behaviour allowed)",
    "RULES": "the rule catalogue: rule ID to its `Rule` row",
    "READING_DEFS": "the named readings: ID to its question, values and default",
    "PROPERTIES": "the explorer's properties a-e",
    "PROPERTY_NAMES": "each property's one-line name",
    "catalogue": "every rule, in catalogue order",
    "FuzzConfig": "what a fuzz run does: the agent's command line, budgets, deadlines, readings",
}


def python_api() -> str:
    """The names ``acp_model`` exports, each with the module it lives in and its summary."""
    import importlib

    import acp_model

    rows = []
    for name in acp_model.__all__:
        if name == "__version__":
            continue
        module = acp_model._EXPORTS[name]
        obj = getattr(importlib.import_module(module), name)
        doc = (getattr(obj, "__doc__", None) or "") if callable(obj) else ""
        if doc.startswith(f"{name}("):  # a dataclass's generated signature, not prose
            doc = ""
        summary = " ".join(doc.strip().split("\n\n")[0].split()) or DATA_DOCS.get(name, "")
        kind = "class" if isinstance(obj, type) else "function" if callable(obj) else "data"
        rows.append([f"`{name}`", kind, f"`{module}`", summary])
    return _table(["name", "kind", "module", "what"], rows)


def changelog() -> str:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return text.split("\n", 1)[1] if text.startswith("# ") else text  # the page has its title


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "rules": rule_catalogue,
    "rule-map": rule_map_table,
    "check-reads": check_reads_table,
    "readings": readings_table,
    "benchmarks": benchmarks,
    "api": python_api,
    "changelog": changelog,
}


def expand(markdown: str) -> str:
    """Replace every ``<!-- generated: NAME -->`` marker; an unknown name is an error."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in GENERATORS:
            raise KeyError(f"unknown generated block {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()
    return MARKER.sub(one, markdown)
