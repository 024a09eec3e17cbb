"""How the scripted model calls an agent's own tools: what each offered tool is, which one a
``Tools`` reply calls, and with which arguments.

Every model request an agent sends lists its tools (name, description, JSON schema of the
arguments). :func:`classify` reads what a tool does from those three alone (no agent's names
are known here): it runs commands, writes or edits files, only reads, or none of these.
:func:`choose` prefers the tools that change things, because those are the ones an agent asks
its client's permission for; a profile's ``prefer`` list (data) may steer it. :func:`arguments`
fills the tool's schema: the fields whose role it recognises (a command, a path, file content,
a request for escalation) get harmless values confined to the run's workspace, the rest is
drawn from the schema by hypothesis-jsonschema, deterministically (the minimal example of a
fixed seed, cached per schema), so a replay sends the same call.

Paths are written with the :data:`WORKSPACE` placeholder, always inside its scratch folder
(:data:`SCRATCH`); :func:`materialize` puts the run's workspace in at send time, so a recorded
call replays in another run's workspace, and :func:`escapes` checks every call before it is
sent (a recorded call edited by hand included): a path outside the scratch folder is never
sent.
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from random import Random
from typing import Any

from acp_model.llm.script import ModelToolCall, Tools

WORKSPACE = "{workspace}"  # replaced by the run's workspace when a call is sent
SCRATCH_DIR = "acpm-scratch"  # the folder of the workspace every call writes in
SCRATCH = f"{WORKSPACE}/{SCRATCH_DIR}"
TEXT = "written by the acp-model scripted model\n"
REASON = "acp-model scripted tool call"
# how long a long-running command runs: long enough for a cancel to meet it running. An agent
# that lets it run on after a cancel is judged once it has ended (fuzzing/stalls.py): a turn
# that still never ends then is one that hangs (claude-agent-acp#680's shape), a turn that
# ends late one that did not stop its tool (CANCEL-05's warning).
LONG_RUN_SECONDS = 6
LONG_RUN = f"sleep {LONG_RUN_SECONDS} && "  # how a long-running command starts
ID_TOKEN = "@@acpm-id@@"  # a call's own name, put in after generation (keeps the cache shared)


class ToolKind(StrEnum):
    """What a tool does, as far as its name, description and schema tell."""

    SHELL = "shell"  # runs a command
    WRITE = "write"  # writes or creates a whole file
    EDIT = "edit"  # changes part of a file (replace, patch)
    READ = "read"  # only looks
    OTHER = "other"


CHANGING = (ToolKind.SHELL, ToolKind.WRITE, ToolKind.EDIT)


@dataclass(frozen=True, eq=False)
class OfferedTool:
    """One tool of a model request: ``schema`` is the JSON schema of its arguments (None: a
    free-form tool whose input is plain text, such as a Responses API custom tool)."""

    name: str
    description: str = ""
    schema: Mapping[str, Any] | None = field(default_factory=dict)

    @property
    def kind(self) -> ToolKind:
        return classify(self)


# --- what a tool is ---------------------------------------------------------------------------
NAME_WORDS: dict[ToolKind, frozenset[str]] = {
    ToolKind.SHELL: frozenset({"bash", "shell", "sh", "zsh", "exec", "execute", "command",
                               "cmd", "terminal", "run", "powershell", "process", "console"}),
    ToolKind.WRITE: frozenset({"write", "create", "save", "put", "new", "overwrite"}),
    ToolKind.EDIT: frozenset({"edit", "patch", "replace", "modify", "update", "apply", "diff",
                              "multiedit", "insert", "str"}),
    ToolKind.READ: frozenset({"read", "view", "cat", "list", "ls", "glob", "grep", "search",
                              "find", "fetch", "get", "show", "open", "look", "web", "todo",
                              "ask", "question", "memory", "think", "plan"}),
}
DESCRIPTION_PHRASES: dict[ToolKind, tuple[str, ...]] = {
    ToolKind.SHELL: ("shell command", "bash command", "executes a", "execute a", "runs a",
                     "run a command", "in a terminal", "command line"),
    ToolKind.WRITE: ("writes a file", "write a file", "write content", "writes content",
                     "create a file", "creates a file", "create a new file", "to a file"),
    ToolKind.EDIT: ("replace", "edit a file", "edits a file", "patch", "modify"),
    ToolKind.READ: ("read a file", "reads a file", "list", "search", "read-only", "fetch"),
}
COMMAND_FIELDS = frozenset({"command", "cmd", "cmdline", "commandline", "command_line",
                            "script", "shell_command"})
PATH_FIELDS = frozenset({"path", "file_path", "filepath", "file", "filename", "file_name",
                         "target", "target_file", "absolute_path", "notebook_path",
                         "destination", "dest", "uri", "target_path"})
DIR_FIELDS = frozenset({"cwd", "workdir", "working_directory", "directory", "dir", "dir_path",
                        "folder"})
CONTENT_FIELDS = frozenset({"content", "contents", "text", "body", "data", "file_text",
                            "new_content", "code", "source", "new_string", "new_str",
                            "replacement", "new_text"})
OLD_FIELDS = frozenset({"old_string", "old_str", "old_text", "search", "find", "pattern"})
REASON_FIELDS = frozenset({"description", "justification", "reason", "explanation",
                           "summary", "title", "purpose", "rationale"})
ESCALATION_WORDS = ("escalat", "approv", "permission", "sandbox", "privilege", "confirm")
ESCALATION_VALUES = ("escalat", "require", "approv", "unsandbox", "bypass", "outside", "ask",
                     "confirm")


def words(text: str) -> list[str]:
    """The lower-case words of a name or text: ``runShellCommand`` -> run, shell, command."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[^a-zA-Z0-9]+", text.lower()) if w]


def is_path_field(name: str) -> bool:
    """Does a field of this name take a file's path (``file_path``, ``absolutePath``)?"""
    key = name.lower()
    return key in PATH_FIELDS or key.endswith("path") or key.endswith("file")


def properties(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return {k: v for k, v in props.items() if isinstance(v, Mapping)} \
        if isinstance(props, Mapping) else {}


def scores(tool: OfferedTool) -> dict[ToolKind, int]:
    """How strongly the tool's name (weighs most), schema fields and description point to
    each kind. A name that speaks of writing or editing counts only for a tool that takes a
    file (a path field, patch text, or free-form input): ``write_stdin`` or ``update_goal``
    change no file."""
    score = dict.fromkeys(ToolKind, 0)
    fields_ = {k.lower() for k in properties(tool.schema)}
    has_path = any(is_path_field(f) for f in fields_)
    takes_file = has_path or tool.schema is None \
        or bool(fields_ & {"patch", "diff", "edits", "input"})
    named = set(words(tool.name))
    for kind, vocab in NAME_WORDS.items():  # a name says a kind or not: once
        if named & vocab and (takes_file or kind not in (ToolKind.WRITE, ToolKind.EDIT)):
            score[kind] += 3
    if fields_ & COMMAND_FIELDS:
        score[ToolKind.SHELL] += 3
    if has_path and fields_ & (OLD_FIELDS | {"patch", "diff", "edits"}):
        score[ToolKind.EDIT] += 3
    elif has_path and fields_ & CONTENT_FIELDS:
        score[ToolKind.WRITE] += 3
    elif has_path:
        score[ToolKind.READ] += 1
    if "patch" in fields_ or "diff" in fields_:
        score[ToolKind.EDIT] += 2
    text = tool.description.lower()[:400]
    for kind, phrases in DESCRIPTION_PHRASES.items():
        score[kind] += sum(1 for p in phrases if p in text)
    return score


def classify(tool: OfferedTool) -> ToolKind:
    """The kind the tool's name, schema fields and description point to most."""
    score = scores(tool)
    best = max(score, key=lambda k: (score[k], -list(ToolKind).index(k)))
    return best if score[best] > 0 else ToolKind.OTHER


# --- which tool a reply calls ---------------------------------------------------------------
WANTED: dict[str, tuple[ToolKind, ...]] = {
    # the program's kind preference -> the kinds it accepts, best first
    "shell": (ToolKind.SHELL, ToolKind.WRITE, ToolKind.EDIT),
    "edit": (ToolKind.WRITE, ToolKind.EDIT, ToolKind.SHELL),
    "long": (ToolKind.SHELL, ToolKind.WRITE, ToolKind.EDIT),  # a shell tool, else a plain call
}


def rank(tool: OfferedTool, want: str, prefer: Sequence[str] = ()
         ) -> tuple[int, int, int, int]:
    """Sort key (lower first): kind fit, then the profile's preference, then how clearly the
    tool is of its kind (``bash {command}`` before ``run_typescript {code}``), then schema
    over free-form (arguments drawn from a schema are valid; free text seldom is)."""
    kinds = WANTED.get(want, WANTED["shell"])
    score = scores(tool)
    kind = classify(tool)
    preferred = tool.name in prefer
    if kind in kinds:
        fit = kinds.index(kind)
    elif preferred and kind is ToolKind.OTHER:
        fit = 0  # the profile says it is the tool to call, though nothing here tells what it is
    else:
        fit = len(kinds) + (1 if kind is ToolKind.READ else 0)
    order = list(prefer).index(tool.name) if preferred else len(prefer)
    return fit, order, -score[kind] if kind is not ToolKind.OTHER else 0, \
        1 if tool.schema is None else 0


def choose(offered: Sequence[OfferedTool], want: str = "shell",
           prefer: Sequence[str] = ()) -> OfferedTool | None:
    """The tool a ``Tools`` reply of kind ``want`` calls (None: none offered). A tool that
    changes nothing is called only when the agent offers nothing else."""
    if not offered:
        return None
    return min(offered, key=lambda t: rank(t, want, prefer))


# --- its arguments ----------------------------------------------------------------------------
def risky_command(risk: str, ident: str) -> str:
    """A command of the shape an approval policy flags (``llm.script.RISKS``), harmless and
    confined to the scratch folder: it deletes, changes the mode of, pipes or resets only
    what it made there itself."""
    where = f"{SCRATCH}/{ident}"
    if risk == "recursive_delete":
        return f"mkdir -p {where}/d && rm -rf {where}"
    if risk == "mode_change":
        return f"touch {where}.txt && chmod 600 {where}.txt"
    if risk == "pipe_to_shell":
        return f"echo 'touch {where}.txt' | sh"
    if risk == "forced_reset":
        return (f"git init -q {where} && git -C {where} -c user.name=acpm "
                f"-c user.email=acpm@localhost commit -q --allow-empty -m scratch && "
                f"git -C {where} reset -q --hard")
    return f"touch {where}.txt"


def command_for(want: str, ident: str, kind: ToolKind, risk: str = "plain") -> str:
    """A harmless command confined to the scratch folder: a new empty file for a shell call
    (or the command of its ``risk``), a short file written for an edit made through a shell,
    and for a long-running one the same after :data:`LONG_RUN_SECONDS` of ``sleep`` (a tool
    still running when the cancel comes)."""
    if want == "edit" or kind in (ToolKind.WRITE, ToolKind.EDIT):
        return f"printf 'written by acp-model\\n' > {SCRATCH}/{ident}.md"
    return f"{LONG_RUN if want == 'long' else ''}{risky_command(risk, ident)}"


def long_running(call: ModelToolCall) -> bool:
    """Does ``call`` run a long-running command (the scripted model's ``sleep``)? Read from
    the call itself, so a replayed call counts as the generated one did."""
    def has(value: Any) -> bool:
        if isinstance(value, str):
            return value.startswith(LONG_RUN)
        if isinstance(value, list):
            return any(has(v) for v in value)
        if isinstance(value, Mapping):
            return any(has(v) for v in value.values())
        return False
    return has(call.arguments)


def _types(prop: Mapping[str, Any]) -> set[str]:
    t = prop.get("type")
    if isinstance(t, str):
        return {t.lower()}
    if isinstance(t, list):
        return {str(x).lower() for x in t}
    if prop.get("enum"):
        names = {str: "string", bool: "boolean", int: "integer", float: "number"}
        return {names.get(type(v), "null") for v in prop["enum"]}
    return set()


def _escalation(name: str, prop: Mapping[str, Any]) -> Any:
    """The value of a field that asks for escalation or approval, or None: an enum's value
    that asks, a boolean set to true, or a value the description quotes that asks."""
    named = any(w in name.lower() for w in ESCALATION_WORDS)
    about = f"{name} {prop.get('description', '')}".lower()
    if not any(w in about for w in ESCALATION_WORDS):
        return None
    types = _types(prop)
    values: list[Any] = list(prop.get("enum") or [])
    if not values and "string" in types and named:
        # a free string whose name says what it is: a value its description quotes (a field
        # that only mentions another one, like a justification, is not it)
        values = re.findall(r"[\"'`]([A-Za-z0-9_\-]+)[\"'`]", str(prop.get("description", "")))
    for marker in ESCALATION_VALUES:
        for value in values:
            if isinstance(value, str) and marker in value.lower():
                return value
    if types == {"boolean"} and any(w in name.lower() for w in ("escalat", "approv", "confirm",
                                                                "require", "unsandbox")):
        return True
    return None


@dataclass(frozen=True)
class Steering:
    """What the fields of one call are steered to: its command and path by purpose."""

    want: str
    kind: ToolKind
    ident: str = ID_TOKEN
    risk: str = "plain"

    def value(self, name: str, prop: Mapping[str, Any], required: bool,
              escalating: bool) -> tuple[bool, Any]:
        """(steered?, value) for the field ``name`` of schema ``prop``."""
        key = name.lower()
        types = _types(prop) or {"string"}
        if (esc := _escalation(name, prop)) is not None:
            return True, esc
        if key in COMMAND_FIELDS or (("command" in key or key.endswith("cmd"))
                                     and "string" in types):
            cmd = command_for(self.want, self.ident, self.kind, self.risk)
            if "array" in types and "string" not in types:
                return True, ["sh", "-c", cmd]
            if "string" in types:
                return True, cmd
        if "string" not in types:
            return False, None
        if key in DIR_FIELDS:
            return required, SCRATCH
        if is_path_field(key):
            return True, f"{SCRATCH}/{self.ident}.md"
        if key in OLD_FIELDS:
            return required, ""
        if key in CONTENT_FIELDS:
            return True, TEXT
        if key in REASON_FIELDS:
            return required or escalating, REASON
        return False, None


def _steer(schema: Any, steering: Steering) -> Any:
    """A copy of ``schema`` whose recognised fields are constants and whose object schemas
    keep only the required and steered fields (a call as short as the schema allows)."""
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    props = properties(schema)
    if props:
        required = [r for r in schema.get("required") or [] if r in props]
        escalating = any(_escalation(k, v) is not None for k, v in props.items())
        kept: dict[str, Any] = {}
        for name, prop in props.items():
            steered, value = steering.value(name, prop, name in required, escalating)
            if steered and _valid(prop, value):  # else the field's own schema decides
                kept[name] = {"const": value}
            elif name in required:
                kept[name] = _steer(prop, steering)
        out["properties"] = kept
        out["required"] = [*required, *(k for k in kept if k not in required)]
        out["additionalProperties"] = False
        out.pop("patternProperties", None)
    return out


def normalize(schema: Any) -> Any:
    """A JSON schema from an API's dialect: upper-case type names (Gemini's ``OBJECT``),
    ``nullable``, and keys JSON Schema does not know are made plain."""
    if isinstance(schema, list):
        return [normalize(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "type" and isinstance(value, list):
            out[key] = [str(v).lower() for v in value]
        elif key in ("properties", "$defs", "definitions", "patternProperties") \
                and isinstance(value, Mapping):
            out[key] = {k: normalize(v) for k, v in value.items()}
        elif key in ("$schema", "nullable", "propertyOrdering", "format", "title", "$id",
                     "example", "examples"):
            continue
        else:
            out[key] = normalize(value)
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


_CACHE: dict[str, Any] = {}
_CACHE_LOCK = threading.Lock()
_NOTHING = object()


def draw(schema: Mapping[str, Any]) -> Any:
    """The minimal value of ``schema`` from a fixed seed (hypothesis-jsonschema), cached:
    the same schema always gives the same value. ``_NOTHING`` when it cannot be drawn."""
    key = json.dumps(schema, sort_keys=True, default=str)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    value = _find(schema)
    with _CACHE_LOCK:
        _CACHE[key] = value
    return value


def _find(schema: Mapping[str, Any]) -> Any:
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis_jsonschema import from_schema

    try:
        strategy = from_schema(dict(schema))
        return find(strategy, lambda _: True, random=Random(0), settings=settings(
            database=None, max_examples=20, deadline=None, derandomize=True,
            phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck)))
    except Exception:  # an unsatisfiable or unsupported schema (never the agent's fault)
        return _NOTHING


def _fill(value: Any, ident: str) -> Any:
    if isinstance(value, str):
        return value.replace(ID_TOKEN, ident)
    if isinstance(value, list):
        return [_fill(v, ident) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ident) for k, v in value.items()}
    return value


def _direct(schema: Mapping[str, Any], steering: Steering) -> dict[str, Any] | None:
    """The steered fields alone, when they are all the schema requires (no drawing)."""
    steered = _steer(schema, steering)
    props = steered.get("properties", {})
    if all("const" in p for p in props.values()):
        return {k: p["const"] for k, p in props.items()}
    return None


def arguments(tool: OfferedTool, want: str, ident: str,
              risk: str = "plain") -> dict[str, Any] | str:
    """The arguments of one call of ``tool`` (``ident``: the call's own file name stem;
    ``risk``: the shape of its command, ``llm.script.RISKS``)."""
    kind = classify(tool)
    if tool.schema is None:  # free-form input: a short text (a command for a shell)
        return command_for(want, ident, kind, risk) if kind is ToolKind.SHELL else TEXT
    schema = normalize(copy.deepcopy(dict(tool.schema)))
    steering = Steering(want, kind, risk=risk)
    value: Any = _direct(schema, steering)
    if value is None or not _valid(schema, value):
        value = draw(_steer(schema, steering))
    if value is _NOTHING or not isinstance(value, dict):
        # the steering contradicts the schema (a pattern, a type): the schema's own minimal
        # value, then our fields where it has none
        plain = draw(schema)
        value = plain if isinstance(plain, dict) else {}
        value = {**(_direct(schema, steering) or {}), **value}
    return _fill(value, ident)


def _valid(schema: Mapping[str, Any], value: Any) -> bool:
    import jsonschema

    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    except Exception:  # a schema it cannot read, a $ref out of reach: our value is the guess
        return True
    return True


# --- the calls of one reply -------------------------------------------------------------------
def plan(reply: Tools, offered: Sequence[OfferedTool], ident: str,
         prefer: Sequence[str] = ()) -> tuple[ModelToolCall, ...]:
    """The concrete calls of a ``Tools`` reply: its recorded calls where it has them and the
    agent offers their tool, else the chosen tool with arguments from its schema (``ident``
    names the reply: ``acpm-<tag>-<step>``, each call adds its index)."""
    names = {t.name for t in offered}
    tool = choose(offered, reply.tool, prefer)
    calls = []
    for k in range(reply.count):
        recorded = reply.calls[k] if k < len(reply.calls) else None
        if recorded is not None and recorded.name in names:
            calls.append(recorded)
        elif tool is not None:
            calls.append(ModelToolCall(tool.name, arguments(tool, reply.tool, f"{ident}-{k}",
                                                       reply.risk)))
    return tuple(calls)


def materialize(value: Any, workspace: str | None) -> Any:
    """``value`` with the run's workspace in place of :data:`WORKSPACE` (without one, paths
    are relative to the agent's directory)."""
    if isinstance(value, str):
        return value.replace(f"{WORKSPACE}/", "" if workspace is None else f"{workspace}/") \
            .replace(WORKSPACE, workspace or ".")
    if isinstance(value, list):
        return [materialize(v, workspace) for v in value]
    if isinstance(value, Mapping):
        return {k: materialize(v, workspace) for k, v in value.items()}
    return value


# a path in a call's text: an absolute one, or one reaching up (``..``) or home (``~``); a
# URL's slashes are not paths (``http://`` is preceded by a colon)
PATH_RE = re.compile(r"(?<![\w:./~-])(?:/|~|\.\./)[^\s'\"`|;&<>(),]*")


def escapes(value: Any, workspace: str | None) -> str | None:
    """The first path in a call's arguments (as sent: :func:`materialize` applied) that
    leaves the scratch folder of ``workspace``, or None: every absolute path must lie inside
    it, and a relative one (read from the workspace, the agent's directory) must not climb
    out of it. Checked before a reply is sent, whatever made the call."""
    root = os.path.normpath(os.path.join(workspace or os.sep, SCRATCH_DIR))
    if isinstance(value, Mapping):
        return next((bad for v in value.values() if (bad := escapes(v, workspace))), None)
    if isinstance(value, list):
        return next((bad for v in value if (bad := escapes(v, workspace))), None)
    if not isinstance(value, str):
        return None
    for path in PATH_RE.findall(value):
        if path.startswith("~") or (workspace is None and path.startswith("/")):
            return path
        full = os.path.normpath(path if path.startswith("/")
                                else os.path.join(workspace or os.sep, path))
        if os.path.commonpath([root, full]) != root:
            return path
    for word in re.split(r"[\s'\"`|;&<>(),=]+", value):  # a relative climb: a/../../b
        if ".." in word.split("/") and escapes("/" + word if workspace is None else
                                               os.path.join(workspace, word), workspace):
            return word
    return None


def offered_tools(raw: Sequence[tuple[str, str, Any]]) -> tuple[OfferedTool, ...]:
    """OfferedTool records from (name, description, schema) triples (adapters' helper)."""
    return tuple(OfferedTool(n, d if isinstance(d, str) else "",
                             s if isinstance(s, Mapping) or s is None else {})
                 for n, d, s in raw if isinstance(n, str) and n)


__all__ = ["CHANGING", "LONG_RUN_SECONDS", "SCRATCH", "SCRATCH_DIR", "WORKSPACE", "OfferedTool",
           "ToolKind", "arguments", "choose", "classify", "escapes", "long_running", "materialize",
           "offered_tools", "plan"]
