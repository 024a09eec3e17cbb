"""Issue bodies a maintainer can file: one per failure of a matrix run.

Each says what the maintainer needs to accept or reject it without running anything first:
the agent, its version and the protocol; the sentence of the spec it breaks, with its strength
and source (and the rule's own note where the strength is the project's reading of a
definition); the minimal program in words and how far minimizing got; the numbered wire lines
that prove it (numbers as in the attached ``transcript.jsonl``); how often it reproduced in
fresh processes, under the recorded schedule and free-running; and the one command that
replays it. ``issue.md`` is written beside the failure's other files, and linked from the
page.

Which failures a person read and found to be true bugs is recorded in
``docs/agent-notes/reviewed.toml``; the agents page says why each is a bug, and each true
one's body is kept in ``docs/agent-notes/bugs/``.

Several failures may share one root in the agent (codex-acp's withdrawn prompt answered before
its turn started, then the turn ran: v1 CANCEL-11, v1 CANCEL-09, v2 SDK-PROMPT-03). Each stays
under the rule it breaks, and the reader says they are one: an entry's ``root`` names an id of
the file's ``[roots]`` table (what the root is, in words). The bug reports and the page of
such failures name and link each other. It is the reader's judgement, kept as data, not a
guess from the wire: failures of one agent whose programs look alike (a cancel and a prompt)
are often different bugs (codex-acp's RPC-09 and CANCEL-07), and failures with one root often
look different (a withdrawn prompt's answer, its turn's content, the next prompt's end).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_model.fuzzing.unsent import program_in_files
from acp_model.matrix.held import held_of
from acp_model.matrix.rewrite import ISSUE
from acp_model.model.check import CHECKS
from acp_model.model.wire_table import UPDATES
from acp_model.oracle import rpc
from acp_model.profiles.sdk import BundledSdk, bundled_sdks
from acp_model.report.breaches import words_in_file
from acp_model.report.links import docs_url
from acp_model.report.matrix import RowStatus, minimized_text, not_filed, reproduction_text
from acp_model.report.matrix_docs import same_root_words
from acp_model.report.proof import proof_from_file, unnumbered_from_file
from acp_model.spec.rules import RULES
from acp_model.trace.format import TraceError, numbers_of, read_trace

TITLE = 140  # characters of an issue's title
VERDICTS = ("true", "probable", "false")


class ReviewError(ValueError):
    """A reviews file that cannot be read."""


@dataclass(frozen=True)
class Review:
    """A person's reading of one failure: is it a bug, and why (against the text)."""

    verdict: str  # true, probable, false
    why: str
    source: str  # where the reading is written down
    root: str | None = None  # the id of the root it shares with other failures ([roots])
    root_why: str = ""  # that root, in words


ReviewKey = tuple[str, str, int, str]  # agent, version, protocol, rule


def load_reviews(path: Path, table: str = "failure") -> dict[ReviewKey, Review]:
    """``[[failure]]`` entries (``table="warning"``: the ``[[warning]]`` ones, readings of
    warnings): agent, version, protocol, rule, verdict, why, source, and ``root``: an id of
    the ``[roots]`` table (id = the root in words), the root it shares with other entries."""
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ReviewError(f"{path}: {exc}") from None
    roots = data.get("roots") or {}
    out: dict[ReviewKey, Review] = {}
    for n, e in enumerate(data.get(table) or [], start=1):
        try:
            key = (str(e["agent"]), str(e["version"]), int(e["protocol"]), str(e["rule"]))
            root = str(e["root"]) if e.get("root") is not None else None
            review = Review(str(e["verdict"]), str(e["why"]).strip(), str(e.get("source", "")),
                            root, " ".join(str(roots.get(root, "")).split()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReviewError(f"{path}: {table} {n}: {exc}") from None
        if review.verdict not in VERDICTS:
            raise ReviewError(f"{path}: {table} {n}: verdict {review.verdict!r} is not one "
                              f"of {', '.join(VERDICTS)}")
        if root is not None and root not in roots:  # a typo would split the root silently
            raise ReviewError(f"{path}: {table} {n}: root {root!r} is not in [roots] ("
                              f"{', '.join(sorted(roots)) or 'none'})")
        out[key] = review
    return out


def same_root(reviews: Mapping[ReviewKey, Review], key: ReviewKey) -> list[ReviewKey]:
    """The other failures the reader found to share ``key``'s root, in the file's order."""
    root = reviews[key].root if key in reviews else None
    return [] if root is None else [k for k, r in reviews.items() if r.root == root
                                    and k != key]


def review_of(reviews: Mapping[ReviewKey, Review], row: Mapping[str, Any], rule: str
              ) -> Review | None:
    return reviews.get((str(row["agent"]), str(row.get("version") or ""),
                        int(row["protocol"]), rule))


def _program(replay: Path | None, transcript: Path | None) -> tuple[list[str], int | None]:
    """The replay file's program in words, each action that wrote less than its words say
    marked so from the transcript and schedule beside it, and its length (None: no readable
    file)."""
    lines = program_in_files(replay, transcript) if replay is not None else None
    return ([], None) if lines is None else (lines, len(lines))


def envelope_rule(rule_id: str) -> bool:
    """Whether ``rule_id`` is decided on the JSON-RPC envelope alone (every check of it is
    one of :mod:`acp_model.oracle.rpc`'s): framing, ids, batches, answers to notifications,
    what an SDK usually does for the agent."""
    from acp_model.oracle import offline  # noqa: F401 (every check is declared by then)

    decided = [m for m in CHECKS.values() if m.rule == rule_id]
    return bool(decided) and all(m.module == rpc.__name__ for m in decided)


def installed_sdks(row: Mapping[str, Any]) -> list[BundledSdk]:
    """The ACP SDKs the row's agent bundles, read from its install directory (the profile's,
    at the row's version) when it is installed here; none for an agent given by command."""
    from dataclasses import replace

    from acp_model.profiles import PROFILES

    profile = PROFILES.get(str(row.get("agent")))
    if profile is None or row.get("command"):
        return []
    version = str(row.get("version") or profile.version)
    return bundled_sdks(replace(profile, version=version).install_dir())


def _sdk_lines(rule_id: str, sdks: Sequence[BundledSdk]) -> list[str]:
    """Where a failure of an envelope rule may belong: the SDK the agent bundles."""
    if not sdks or not envelope_rule(rule_id):
        return []
    names = " and ".join(s.words() for s in sdks)
    homes = ", ".join(s.home for s in sdks if s.home)
    return [f"**Where it may belong:** the agent bundles the ACP SDK {names}. {rule_id} is a "
            "rule of the JSON-RPC envelope, which the SDK reads and writes for the agent: this "
            "behaviour may be the SDK's, not the agent's own code. If the SDK does it, file it "
            "with the SDK" + (f" ({homes})" if homes else "") + ", once for every agent that "
            "bundles that version.", ""]


def title_of(row: Mapping[str, Any], f: Mapping[str, Any]) -> str:
    """``agent version breaks RULE (ACP vN): the rule's sentence``, cut to a title's length."""
    rule = RULES.get(str(f["rule"]))
    what = (rule.statement if rule else str(f.get("message"))).rstrip(".")
    text = f"{row['agent']} {row.get('version') or ''} breaks {f['rule']} (ACP " \
           f"v{row['protocol']}): {what}"
    return text if len(text) <= TITLE else text[:TITLE - 1].rstrip() + "…"


def _agent_line(row: Mapping[str, Any]) -> str:
    """Which agent, as its package and as it names itself, and what judged it."""
    info = row.get("agent_info") or {}
    return (f"**Agent:** {row.get('title') or row['agent']}"
            + (f", `{row['package']}@{row.get('version')}`" if row.get("package")
               else f" {row.get('version') or ''}")
            + (f" (it names itself {info.get('name')} {info.get('version')})"
               if info.get("name") else "")
            + f"; ACP protocol v{row['protocol']}, judged by the `{row.get('revision')}` text"
            + (f" behind a scripted model on the {row['model_api']} API" if row.get("model_api")
               else "") + ".")


def issue_body(row: Mapping[str, Any], f: Mapping[str, Any], base: Path, *,
               files: str | None = None, sdks: Sequence[BundledSdk] = ()) -> str:
    """The body of an issue for failure ``f`` of ``row`` (paths relative to ``base``);
    ``files``: a link to where its transcript and replay file are kept (else: attach them);
    ``sdks``: the ACP SDKs the agent bundles (:func:`installed_sdks`), named where the rule
    is the envelope's."""
    rule = RULES.get(str(f["rule"]))
    replay = base / f["replay"] if f.get("replay") else None
    steps, length = _program(replay, base / f["transcript"] if f.get("transcript") else None)
    lines = [f"# {title_of(row, f)}", "",
             "<!-- written by `acp-model report-bug` from the matrix run's files -->", "",
             _agent_line(row), "",
             f"**The rule:** {f['rule']} ({f.get('strength')}"
             + (f", {rule.binds}" if rule else "") + f"): {f.get('statement')}", "",
             f"> Source: {f.get('citation')}", ""]
    if rule is not None and rule.notes:
        lines += [f"About the rule (how readings grade it): {rule.notes}", ""]
    lines += ["**What happened:** " + str(f.get("message")), ""]
    lines += _sdk_lines(str(f["rule"]), sdks)
    if steps:
        lines += [f"**The program** ({minimized_text({**f, 'steps': length})}):", "",
                  *[f"{n}. {text}" for n, text in enumerate(steps, start=1)],
                  "", "then the client ends every turn still open"
                  + (f" (the teardown, from message #{f['teardown_at']} on)"
                     if f.get("teardown_at") is not None else "") + ": it cancels what is busy, "
                  "answers open permission requests `cancelled`, and waits for the answers.",
                  ""]
    proof = proof_from_file(base / f["transcript"], f.get("index"), f.get("evidence") or [],
                            f.get("teardown_at")) if f.get("transcript") else []
    if proof:
        lines += ["**The wire lines that prove it** (message numbers as in "
                  "`transcript.jsonl`; C->A client to agent, A->C agent to client):", "",
                  "```", *proof, "```", ""]
        lines += _not_the_program(base / f["transcript"], f)
    lines += _model_named(row, base / f["transcript"] if f.get("transcript") else None)
    lines += [f"**Reproduction:** {reproduction_text(f)}.", ""]
    held = f.get("held") or held_of(f, base)
    if held:
        lines += [held, ""]
    if f.get("replay"):
        how = (f"the agent installed by `acp-model agents install {row['agent']}`"
               if not row.get("command") else "the agent's command line is in the file; "
               "another one can be given after `--`")
        lines += [f"**Replay it** ({how}):", "", "```sh",
                  "acp-model replay replay.json --runs 6", "```", ""]
    lines += [("**Files:** the transcript and the replay file are in "
               f"[{files}]({files}/transcript.jsonl)." if files else
               "**Files:** attach `transcript.jsonl` (the wire, numbered as above) and "
               "`replay.json` from the failure's folder."), ""]
    ran = str(row.get("created") or "")[:10]
    lines += [f"Found by the [acp-model]({docs_url()}/) conformance matrix (acp-model "
              f"{row.get('acp_model') or ''}" + (f", run {ran}" if ran else "") + ")."]
    return "\n".join(lines).rstrip() + "\n"


def _not_the_program(transcript: Path, f: Mapping[str, Any]) -> list[str]:
    """What a maintainer must not take for the program's own doing: the client messages the
    proof cites that no numbered action wrote (a spare session, the teardown), and the
    client's deliberate breaches, with whether the proof rests on them."""
    said = unnumbered_from_file(transcript, f.get("index"), f.get("evidence") or [],
                                f.get("teardown_at"))
    breaches = words_in_file(transcript, f.get("index"), f.get("evidence") or [])[0]
    return [*([*said, ""] if said else []),
            *(["**Deliberate breaches the program keeps** (the client breaks a rule on "
               "purpose, to see how the agent copes):", "",
               *(f"- {line}" for line in breaches), ""] if breaches else [])]


def _model_named(row: Mapping[str, Any], transcript: Path | None) -> list[str]:
    """A paragraph on the agent's messages that name the model its profile asks the
    scripted model for (codex-acp's "Model metadata for `gpt-5` not found", s12): a
    maintainer must not read our stand-in's name as part of the failure."""
    from acp_model.profiles import PROFILES

    profile = PROFILES.get(str(row.get("agent")))
    name = profile.model_name if profile is not None and not row.get("command") else ""
    if not name or transcript is None:
        return []
    try:
        records = read_trace(transcript)
    except (OSError, TraceError):
        return []
    named = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
    said = [n for r, n in zip(records, numbers_of(records), strict=True)
            if r.dir == "a2c" and isinstance(r.msg, dict) and "method" in r.msg
            and not _listing(r.msg)
            and named.search(json.dumps(r.msg.get("params"), ensure_ascii=False))]
    if not said:
        return []
    where = ", ".join(f"#{n}" for n in said[:6]) + (" ..." if len(said) > 6 else "")
    return [f"**The model's name:** the agent's message{'s' if len(said) > 1 else ''} {where} "
            f"name{'' if len(said) > 1 else 's'} `{name}`, the model the `{row['agent']}` "
            "profile has the agent ask for. What answers is acp-model's scripted model (the "
            "offline stand-in for the LLM" + (f", on the {row['model_api']} API"
                                               if row.get("model_api") else "")
            + "): a notice about that name is about our stand-in, not part of this failure.",
            ""]


# updates that list the session's settings (its model among them): naming the model there
# is no message about it
LISTINGS = frozenset(row.kind for row in UPDATES if row.settings)


def _listing(msg: Mapping[str, Any]) -> bool:
    params = msg.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") in LISTINGS


def failures(doc: Mapping[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (row, failure) of a matrix that kept its files."""
    return [(row, f) for row in doc.get("rows") or [] if row.get("status") == RowStatus.RAN
            for cell in (row.get("cells") or {}).values() for f in cell.get("failures") or []
            if f.get("transcript")]


def write_issues(doc: dict[str, Any], base: Path) -> list[Path]:
    """``issue.md`` beside each failure's files; each failure then names it (``issue``). A
    failure whose minimizing was cut gets none (a stale one goes), and says why
    (``not_filed``)."""
    written = []
    for row, f in failures(doc):
        folder = (base / f["transcript"]).parent
        path = folder / ISSUE
        f.pop("issue", None)
        if (why := not_filed(f)) is not None:
            f["not_filed"] = why
            path.unlink(missing_ok=True)
            continue
        path.write_text(issue_body(row, f, base), encoding="utf-8")
        f["issue"] = Path(f["transcript"]).parent.joinpath(ISSUE).as_posix()
        written.append(path)
    return written


def write_reviewed(doc: Mapping[str, Any], base: Path, reviews: Mapping[ReviewKey, Review],
                   folder: Path) -> dict[tuple[str, str], Path]:
    """The body of each failure a person found to be a true bug, as
    ``folder/<agent>-v<N>-<RULE>.md`` (its files linked in the run's folder ``base``);
    returns (row key, rule) -> the file. Bodies of failures no longer true are removed."""
    import os

    kept: dict[tuple[str, str], Path] = {}
    true = [(row, f, r) for row, f in failures(doc)
            if (r := review_of(reviews, row, str(f["rule"]))) is not None and r.verdict == "true"
            and not_filed(f) is None]
    name = {_key(row, str(f["rule"])): f"{row['agent']}-v{row['protocol']}-{f['rule']}.md"
            for row, f, _ in true}
    for row, f, review in true:
        folder.mkdir(parents=True, exist_ok=True)
        key = _key(row, str(f["rule"]))
        path = folder / name[key]
        where = Path(os.path.relpath(base / Path(f["transcript"]).parent, folder)).as_posix()
        text = issue_body(row, f, base, files=where)
        text += f"\n## Why it is a bug\n\n{' '.join(review.why.split())}\n" + (
            f"\n(Read by hand: {review.source}.)\n" if review.source else "")
        others = [f"[{_named(k)}]({name[k]})" if k in name else _named(k)
                  for k in same_root(reviews, key)]
        if others:
            text += f"\n## Same root\n\n{same_root_words(others, review.root_why)}\n"
        path.write_text(text, encoding="utf-8")
        kept[(str(row["key"]), str(f["rule"]))] = path
    if folder.is_dir():
        for old in folder.glob("*.md"):
            if old not in kept.values():
                old.unlink()
    return kept


def _key(row: Mapping[str, Any], rule: str) -> ReviewKey:
    return (str(row["agent"]), str(row.get("version") or ""), int(row["protocol"]), rule)


def _named(key: ReviewKey) -> str:
    """A failure as a reader names it: ``codex-acp 2.6.0 v1 CANCEL-09``."""
    agent, version, protocol, rule = key
    return f"{agent} {version} v{protocol} {rule}"


def _target_row(report: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """A matrix row standing for a plain fuzz run's folder (its report beside it): the agent
    as its profile names it (replay files say which), else as it named itself."""
    from acp_model.report.matrix import Target, row_from_report

    replay = next(iter(sorted(folder.glob("*/replay.json"))), None)
    recorded = json.loads(replay.read_text(encoding="utf-8")) if replay else {}
    info = report.get("agent_info") or {}
    revision = str((report.get("spec") or {}).get("revision") or "")
    protocol = 1 if revision == "v1" else 2
    name = recorded.get("profile")
    if name:
        from acp_model.profiles import PROFILES

        package, _, version = str(recorded.get("profile_package") or "").rpartition("@")
        profile = PROFILES.get(str(name))
        target = Target(str(name), protocol, title=profile.title if profile else "",
                        version=version or (profile.version if profile else ""),
                        package=package, model_api=recorded.get("model_api"))
    else:
        target = Target(str(info.get("name") or "agent"), protocol,
                        version=str(info.get("version") or ""),
                        command=tuple(recorded.get("agent") or ()))
    row = row_from_report(target, report, folder, folder / "report.json", folder)
    return {**row, "report": "report.json", "out": "."}


def issues_in(path: Path) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], Path]:
    """The failures under ``path`` as the current code judges them, and the folder their
    paths are relative to: a matrix folder (every row), a fuzz run's ``--out`` folder with its
    ``report.json``, or one failure's folder in either."""
    from acp_model.matrix.rejudge import rejudge, rejudge_row
    from acp_model.report.matrix import MatrixError, load

    if (path / "matrix.json").is_file():
        return failures(rejudge(load(path / "matrix.json"), path)), path
    only = None
    if not (path / "report.json").is_file() and (path / "replay.json").is_file():
        if (path.parent.parent / "matrix.json").is_file():  # a failure of a matrix's row
            found, base = issues_in(path.parent.parent)
            return [(r, f) for r, f in found if str(f.get("transcript", "")).startswith(
                f"{path.parent.name}/{path.name}/")], base
        if (path.parent / "report.json").is_file():
            only, path = path.name, path.parent
    if not (path / "report.json").is_file():
        raise MatrixError(f"{path}: neither a matrix folder (matrix.json), a fuzz run's folder "
                          "(report.json beside its failures: fuzz --out DIR --report "
                          "DIR/report.json) nor one failure's folder in one")
    try:
        report = json.loads((path / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MatrixError(f"{path / 'report.json'}: {exc}") from None
    row = rejudge_row(_target_row(report, path), path)
    found = [(row, f) for r, f in failures({"rows": [row]})
             if only is None or f["rule"] == only]
    return found, path
