"""What one peer advertised at initialize and what the other then used or refused.

The initialize exchange is a fact of the wire: the client's request states its capabilities,
the agent's result its own and its authentication methods. Every later message is judged
against them here, one check per rule: the client calls only what the agent advertised
(INIT-13, SESS-03, SESS-04, SESS-16, SDK-TOOL-02, SDK-RESUME-02), the agent uses only what
the client advertised (INIT-16) and implements what it advertised or what every agent must
(INIT-11, INIT-12, SDK-CONFIG-02, SDK-CLOSE-04). Neither side's message races the other's
advertisement: it was sent (and read) before the session began, so no check here needs a
proof of what was read.

A capability counts as advertised when it is ``true`` (v1's flags) or an object (v2's
markers): a v2 peer that sends a flag breaks INIT-07, and is still taken at its word here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acp_model.model import wire_table
from acp_model.model.answering import Answering, Asking, Showing
from acp_model.model.check import check
from acp_model.model.vocab import ErrorCode, Level, Reads, Role
from acp_model.model.wire_shapes import Shape, on, said_off

Caps = Mapping[str, Any]

# Content every agent takes in a prompt, whatever it advertised (INIT-11).
BASELINE_BLOCKS = frozenset({"text", "resource_link"})
_UNSUPPORTED = re.compile(r"not supported|unsupported|not support|cannot handle|can't handle|"
                          r"does not accept|not accepted|not allowed", re.I)
_BASELINE_NAMED = re.compile(r"resource[_ ]?link|\btext\b|content", re.I)


def client_capabilities(params: Any, shape: Shape) -> Caps:
    """The capabilities an initialize request advertises (v1 ``clientCapabilities``)."""
    caps = params.get(shape.client_caps_key) if isinstance(params, Mapping) else None
    return caps if isinstance(caps, Mapping) else {}


# --- INIT-11: the baseline content of every prompt ----------------------------------------

@dataclass(frozen=True, slots=True)
class PromptShape:
    """What INIT-11 reads of a prompt as it was sent: its block types, whether it validates
    against the revision's schema, whether the session was quiet (no work, no other open
    prompt), and its text blocks (what a replay must give back, SESS-07)."""

    types: tuple[str, ...]
    valid: bool
    quiet: bool
    texts: tuple[str, ...]

    @staticmethod
    def of(blocks: Any, valid: bool, quiet: bool) -> PromptShape:
        items = [b for b in blocks if isinstance(b, Mapping)] if isinstance(blocks, list) else []
        return PromptShape(tuple(str(b.get("type")) for b in items), valid, quiet,
                           tuple(b["text"] for b in items
                                 if b.get("type") == "text" and isinstance(b.get("text"), str)))

    @property
    def baseline(self) -> bool:
        return bool(self.types) and set(self.types) <= BASELINE_BLOCKS


def _named_unsupported(error: Any) -> str | None:
    """The error's words when they call text or resource_link content unsupported."""
    if not isinstance(error, Mapping):
        return None
    words = " ".join(str(error.get(k, "")) for k in ("message", "data"))
    if _UNSUPPORTED.search(words) and _BASELINE_NAMED.search(words):
        return words.strip()
    return None


@check("INIT-11", role=Role.FINDING, reads=[Reads.PROMPT_ANSWER])
def baseline_content_refused(a: Answering) -> str | None:
    """A prompt made of text and resource_link blocks is never refused with an error that
    names such content as unsupported."""
    shape, error = a.asked, a.error
    if error is None or shape is None or not shape.baseline or not isinstance(error, Mapping):
        return None  # (a result: nothing refused)
    named = _named_unsupported(error)
    if named is None:
        return None
    return (f"the agent refused a prompt made only of {', '.join(sorted(set(shape.types)))} "
            f"blocks, which every agent must take without a capability, saying: "
            f"{named[:200]!r}")


@check("INIT-11", role=Role.FINDING, level=Level.WARN, reads=[Reads.PROMPT_ANSWER])
def baseline_content_invalid(a: Answering) -> str | None:
    """A valid prompt of text and resource_link blocks, sent while the session was quiet, is
    not answered -32602 (the code for unsupported content): probably the baseline content
    refused, a warning, since the agent may have found something else invalid (a linked
    resource, a length) that the wire does not show."""
    shape, error = a.asked, a.error
    if error is None or shape is None or not shape.baseline or not isinstance(error, Mapping) \
            or _named_unsupported(error) is not None:
        return None
    if error.get("code") != ErrorCode.INVALID_PARAMS or not shape.valid or not shape.quiet:
        return None
    kinds = " and ".join(sorted(set(shape.types)))
    return (f"the agent answered -32602 (Invalid params, the code for unsupported content) to "
            f"a prompt of {kinds} blocks only, which validates against the schema and was sent "
            "while the session had no work and no other prompt open: such content needs no "
            "capability, so unless something the wire does not show was invalid, the agent "
            "refused baseline content")


# --- the agent implements what it advertised -----------------------------------------------

@check("INIT-12", role=Role.FINDING, reads=[Reads.AUTH_ANSWER])
def auth_methods_implemented(a: Answering) -> str | None:
    """An agent that listed authentication methods answers auth/login and auth/logout
    (never -32601; the rows of the two declare this answer's kind)."""
    auth_methods = a.told.auth_methods
    if a.code == ErrorCode.METHOD_NOT_FOUND and auth_methods:
        return (f"the agent listed {len(auth_methods)} authentication method(s) in its "
                f"initialize result, which obliges it to implement auth/login and "
                f"auth/logout, and answered {a.method} with -32601 (Method not found)")
    return None


@check("SDK-CONFIG-02", role=Role.FINDING, reads=[Reads.CONFIG_ANSWER])
def config_method_implemented(a: Answering) -> str | None:
    """An agent that advertised config options for a session implements
    session/set_config_option for it."""
    if a.code == ErrorCode.METHOD_NOT_FOUND and a.session in a.told.configured:
        return ("the agent advertised config options for this session and answered "
                "session/set_config_option with -32601 (Method not found)")
    return None


@check("V1-CONFIG-02", role=Role.FINDING, reads=[Reads.CONFIG_ANSWER])
def config_result_complete(a: Answering) -> str | None:
    """v1: a successful session/set_config_option lists every config option, the one set
    included."""
    if a.has_error:
        return None
    config_id, options = a.asked, config_options_of(a.result)
    if not isinstance(config_id, str) or options is None:
        return None  # (a result without the list is the schema's to judge)
    ids = {o.get("id", o.get("configId")) for o in options if isinstance(o, Mapping)}
    if config_id in ids:
        return None
    return (f"session/set_config_option of {config_id!r} succeeded, but the result's "
            f"configOptions ({len(ids)} option(s)) do not list it: the response is the "
            "complete list of the session's options")


@check("SDK-CLOSE-04", role=Role.FINDING, reads=[Reads.CLOSE_ANSWER])
def inactive_close_succeeds(a: Answering) -> str | None:
    """Closing a session that is not active on the connection succeeds (or answers
    -32002)."""
    code = a.code
    if code is not None and not a.active and code != ErrorCode.RESOURCE_NOT_FOUND:
        return (f"session/close of a session not active on this connection was answered with "
                f"error {code}: such a close should succeed (-32002 counts as success)")
    return None


# --- INIT-16: the agent uses only what the client advertised ------------------------------

@check("INIT-16", role=Role.FINDING, reads=[Reads.CLIENT_METHOD_USE])
def client_method_advertised(a: Asking) -> str | None:
    """The agent sends a request of a client method only when the client advertised its
    capability (fs, terminal, elicitation)."""
    method = a.method
    path = wire_table.advertised_by(method, "a2c")
    if not path or on(a.told.client_caps, *path):
        return None
    name = ".".join(path)
    how = (f"declared {name} false: the method is not available"
           if said_off(a.told.client_caps, *path) else
           f"did not advertise {name}: an omitted capability is unsupported")
    return f"the agent sent {method}, but the client's initialize {how}"


@check("INIT-16", role=Role.FINDING, reads=[Reads.INITIALIZE_ANSWER])
def terminal_auth_advertised(a: Answering) -> str | None:
    """The agent lists a terminal authentication method only when the client advertised
    terminal authentication: ``auth.terminal``, or ``_meta["terminal-auth"]``, Zed's own
    declaration of it, which predates the capability and which agents (claude-agent-acp)
    read: listing the methods to a client that declared it there is no breach its maintainer
    would accept (the s5 matrix's claude-agent-acp v1 row, played as Zed)."""
    if a.has_error or not isinstance(a.result, dict):
        return None  # (a failed initialize lists nothing)
    auth_methods, client_caps = auth_methods_of(a.result), a.told.client_caps
    if on(client_caps, "auth", "terminal") or on(client_caps, "_meta", "terminal-auth"):
        return None
    named = [str(m.get("methodId", m.get("id"))) for m in auth_methods
             if isinstance(m, Mapping) and m.get("type") == "terminal"]
    if not named:
        return None
    return (f"the initialize result lists the terminal authentication method(s) "
            f"{', '.join(named)}, but the client did not advertise auth.terminal")


@check("INIT-16", role=Role.FINDING, reads=[Reads.CONFIG_OPTIONS_USE])
def boolean_options_advertised(s: Showing) -> str | None:
    """v1: boolean config options only for a client that advertised
    session.configOptions.boolean (a config_option_update's, a session result's)."""
    config_options = config_options_of(s.payload)
    if not s.shape.gates_boolean_options or config_options is None \
            or on(s.told.client_caps, "session", "configOptions", "boolean"):
        return None
    named = [str(o.get("id", o.get("configId"))) for o in config_options
             if isinstance(o, Mapping) and o.get("type") == "boolean"]
    if not named:
        return None
    return (f"boolean config option(s) {', '.join(named)} sent to a client that did not "
            "advertise session.configOptions.boolean")


@check("SDK-STATE-01", role=Role.FINDING, reads=[Reads.STATE_USE])
def custom_state_advertised(s: Showing) -> str | None:
    """Work reported only in a custom state (no running or requires_action since it began
    in it, before this idle) is so only for a client whose capabilities' _meta name that
    state."""
    if s.custom is None:
        return None
    began, state = s.custom
    meta = s.told.client_caps.get("_meta") if isinstance(s.told.client_caps, Mapping) else None
    if isinstance(meta, Mapping) and state in json.dumps(meta):
        return None
    return (f"foreground work that began in the custom state {state!r} at #{began} ended "
            "without a running or requires_action report, and the client's capabilities "
            "advertise no such state: the standard states are still owed")


@check("V1-NOTICE-01", role=Role.FINDING, reads=[Reads.NOTICE_USE])
def notice_advertised(s: Showing) -> str | None:
    """v1: a notice goes only to a client whose initialize advertised ``session.notices``
    (an object; omitted or null: not advertised)."""
    caps = s.told.client_caps
    session = caps.get("session") if isinstance(caps, Mapping) else None
    if isinstance(session, Mapping) and isinstance(session.get("notices"), Mapping):
        return None
    return ("a notice session update, but the client's initialize did not advertise "
            "session.notices: v1 agents send notices only to clients that can present them")


# --- the client calls only what the agent advertised ---------------------------------------

@check("INIT-13", role=Role.FINDING, reads=[Reads.AUTH_USE])
def auth_call_allowed(a: Asking) -> str | None:
    """auth/login and auth/logout only after the agent listed authentication methods; a
    login (v1: authenticate) only with a listed method that is not a terminal one."""
    method, params, auth_methods = a.method, a.params, a.told.auth_methods
    if auth_methods is None:
        return None
    if method != "authenticate" and not auth_methods:
        return (f"the client called {method} although the agent's initialize result listed "
                "no authentication methods")
    if method == "auth/logout":
        return None
    chosen = params.get("methodId") if isinstance(params, Mapping) else None
    listed = {m.get("methodId", m.get("id")): m for m in auth_methods if isinstance(m, Mapping)}
    method_def = listed.get(chosen)
    if method_def is not None and method_def.get("type") == "terminal":
        return (f"the client passed the terminal authentication method {chosen!r} to "
                f"{method}: a terminal method is run by the client, never passed to a login")
    if method_def is None and method != "authenticate":
        return (f"the client logged in with method {chosen!r}, which the agent's initialize "
                "result does not list")
    return None


@check("SESS-03", role=Role.FINDING,
       reads=[Reads.NEW_SESSION_USE, Reads.LOAD_USE, Reads.RESUME_USE])
def additional_directories_advertised(a: Asking) -> str | None:
    """A session request carries additional directories only when the agent advertised
    additionalDirectories."""
    params = a.params
    dirs = params.get("additionalDirectories") if isinstance(params, Mapping) else None
    if not dirs or on(a.shape.session_caps(a.told.agent_caps), "additionalDirectories"):
        return None
    return (f"the client sent {len(dirs) if isinstance(dirs, list) else 'some'} additional "
            "director(ies), but the agent did not advertise additionalDirectories")


@check("SESS-04", role=Role.FINDING,
       reads=[Reads.NEW_SESSION_USE, Reads.LOAD_USE, Reads.RESUME_USE])
def mcp_transports_advertised(a: Asking) -> str | None:
    """Each MCP server the client lists uses a transport the agent advertised."""
    servers = a.params.get("mcpServers") if isinstance(a.params, Mapping) else None
    missing = [need for s in servers if isinstance(s, Mapping)
               if (need := a.shape.mcp_needs(s.get("type", "stdio"), a.told.agent_caps))] \
        if isinstance(servers, list) else []
    if not missing:
        return None
    return (f"the client listed MCP server(s) needing {', '.join(sorted(set(missing)))}, "
            "which the agent did not advertise")


@check("SESS-16", role=Role.FINDING, reads=[Reads.LOAD_USE, Reads.RESUME_USE, Reads.CLOSE_USE])
def session_method_advertised(a: Asking) -> str | None:
    """v1: session/load, session/resume and session/close only when the agent advertised
    them."""
    path = wire_table.advertised_by(a.method, "c2a")  # (its row's: v1's spelling)
    if not path or on(a.told.agent_caps, *path):
        return None
    return (f"the client called {a.method}, but the agent did not advertise "
            f"{'.'.join(path)}")


def _norm_dir(path: str) -> str:
    return re.sub(r"[\\/]+", "/", path).rstrip("/") or "/"


def _same_dir(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and _norm_dir(a) == _norm_dir(b)


def root_set(params: Any) -> tuple[str, ...]:
    """A session request's root set: its cwd, then its additional directories."""
    if not isinstance(params, Mapping) or not isinstance(params.get("cwd"), str):
        return ()
    extra = params.get("additionalDirectories")
    return (params["cwd"], *(d for d in (extra if isinstance(extra, list) else [])
                             if isinstance(d, str)))


@check("SESS-17", role=Role.FINDING, reads=[Reads.CLIENT_METHOD_USE])
def file_in_root_set(a: Asking) -> str | None:
    """v1: fs/read_text_file and fs/write_text_file name files inside the session's root
    set."""
    method, params, roots = a.method, a.params, a.roots
    if method not in ("fs/read_text_file", "fs/write_text_file") or not roots:
        return None
    path = params.get("path") if isinstance(params, Mapping) else None
    if not isinstance(path, str):
        return None
    target = _norm_dir(path)
    if any(target == _norm_dir(r) or target.startswith(_norm_dir(r).rstrip("/") + "/")
           for r in roots):
        return None
    return (f"the agent asked the client to {'read' if 'read' in method else 'write'} "
            f"{path!r}, outside the session's root set ({', '.join(roots)})")


@check("SDK-RESUME-02", role=Role.FINDING, reads=[Reads.RESUME_USE])
def resume_keeps_cwd(a: Asking) -> str | None:
    """session/resume sends the working directory the session was created with."""
    params, roots = a.params, a.roots
    created_cwd = roots[0] if roots else None
    cwd = params.get("cwd") if isinstance(params, Mapping) else None
    if created_cwd is None or cwd is None or _same_dir(cwd, created_cwd):
        return None
    return (f"session/resume sends cwd {cwd!r}, but the session was created with "
            f"{created_cwd!r}")


@check("SDK-TOOL-02", role=Role.FINDING, reads=[Reads.CANCEL_CONTROL_USE])
def cancel_request_advertised(a: Asking) -> str | None:
    """tool_call/cancel and terminal/cancel only for what currently advertises
    capabilities.cancel (``a.target``: its noun, the row's control, the target, and whether
    the client's view showed it advertising cancel; None: the client never saw it)."""
    if a.target is None:
        return None
    what, target, advertised = a.target
    if advertised:
        return None
    seen = "which no update reported" if advertised is None else \
        "which does not advertise capabilities.cancel now"
    return f"the client sent {a.method} for {what} {target!r}, {seen}"


@check("SDK-TOOL-03", role=Role.FINDING, reads=[Reads.CANCEL_CONTROL_ANSWER])
def ended_cancel_refused(a: Answering) -> str | None:
    """tool_call/cancel and terminal/cancel of what had ended when the client sent it are
    refused with -32602 (the request kept its target's noun, the row's control, the target
    and how the client's view showed it then; None: not ended)."""
    if a.asked is None or a.has_error:
        return None
    what, target, ended = a.asked
    if ended is None:
        return None
    return (f"the client sent {a.method} for {what} {target!r} after the agent had reported it "
            f"{ended}, and the agent answered with a result: a cancel of what already ended "
            "is answered with -32602")


def auth_methods_of(result: Any) -> list[Any]:
    methods = result.get("authMethods") if isinstance(result, Mapping) else None
    return methods if isinstance(methods, list) else []


def config_options_of(container: Any) -> list[Any] | None:
    options = container.get("configOptions") if isinstance(container, Mapping) else None
    return options if isinstance(options, list) else None
