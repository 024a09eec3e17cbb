"""The client's action vocabulary: one frozen, registered type per thing the fuzzer can do.

The Hypothesis rules build these, :meth:`FuzzClient.perform` runs them (``Action.perform``),
counterexamples describe them (``describe``) and replay files store them (``to_json`` /
:func:`from_json`: ``{"op": "prompt", "s": 0, "blocks": [...]}``, the ``acp-model-replay/1``
format). A bad op or field is refused when the action is built or read, not when it runs.

Session indices (``s``) are those of the program, in its order of creation (numbered in one
place: :mod:`acp_model.fuzzing.program`); before the first session, an action on one is a
no-op. Actions never block on
the agent longer than the deadline, and "nothing to do" is a no-op, which keeps Hypothesis'
choices independent of the agent's timing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from acp_model.fuzzing.ops import Mistake, sync_message
from acp_model.fuzzing.services import USER_ELICITATION_ACTIONS
from acp_model.fuzzing.sessions import first_of
from acp_model.fuzzing.transport import RpcError, is_response_to
from acp_model.llm.script import ModelScript, Tools, describe_script, script_from_json
from acp_model.llm.server import tag_text
from acp_model.model.vocab import Answer, ElicitationAction
from acp_model.report.breaches import Breach
from acp_model.report.reach import Reach

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import (
        CancelOps,
        ClientOps,
        ElicitingOps,
        NewSessionOps,
        PermissionAnswerOps,
        ProbeOps,
        PromptOps,
        ReopenOps,
        SessionHandle,
        WaitOps,
    )
    from acp_model.llm.server import ScriptedModel

GARBAGE = b'{"jsonrpc": "2.0", "method": "session/prompt", "params": '
FINISH_MAX_ANSWERS = 16  # permission requests one finish action answers at most
FINISH_DEADLINES = 4  # how long one finish action may wait, in deadlines

ACTIONS: dict[str, type[Action]] = {}
# Field names replay files written before the rename still use: (op, old name) -> new name.
LEGACY_FIELDS = {("probe", "kind"): "input", ("sloppy_answer", "kind"): "mistake"}


class ActionError(ValueError):
    """An action that names no op of the vocabulary, or fields its op does not have."""


@dataclass(frozen=True)
class Wrote:
    """What one action put on the wire in the run a report shows, as the run recorded it
    (``fuzzing/unsent.py`` reads it from the transcript's action stamps and the schedule's
    looks): the methods of the client messages it wrote; how long its waits took (None: no
    schedule); the message number of the client's prompt still open on its session when it
    acted (None: none shown); and whether reading A-01=forbid held prompts back."""

    methods: tuple[str, ...] = ()
    waited: float | None = None
    open_prompt: int | None = None
    forbid: bool = False
    # the text block its prompt carried first for the scripted turn's tag ("[acpm:50]"), added
    # by the client to a prompt without text of its own (``_tagged``); None: none
    tag: str | None = None


WAITED = 0.05  # seconds: a wait shorter than this is no wait worth saying


@dataclass(frozen=True)
class Action:
    """One client action; subclasses register under their ``op``."""

    op: ClassVar[str] = ""
    # whether it writes to the agent when it acts (a wait, or holding elicitations, need not)
    writes: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.op:
            if cls.op in ACTIONS:
                raise ActionError(f"two actions named {cls.op!r}")
            ACTIONS[cls.op] = cls

    def perform(self, client: ClientOps) -> None:
        raise NotImplementedError

    def describe(self, label: str = "") -> str:
        """One line for people; ``label`` names the session (``" s1"``)."""
        return self.op.replace("_", " ") + label

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        """What a program line adds when the action put less on the wire than its words say
        (None: it wrote what it says): a maintainer reads each line as a message sent."""
        return "nothing sent" if self.writes and not wrote.methods else None

    def sent_line(self, wrote: Wrote, label: str = "") -> str:
        """Its program line as the run shows what it sent: its words, and what it put on the
        wire less than they say (:meth:`unsent`)."""
        return _with(self.describe(label), self.unsent(wrote, label))

    def breach(self) -> Breach | None:
        """The client rule this action may break on purpose (``report/breaches.py``; None:
        it keeps them all): minimizing tries the program without it first."""
        return None

    def without_breach(self) -> list[Action]:
        """What is left of this action without its deliberate breach (the cancel of an allow
        sent after it, the prompt of a late allow; nothing for a pure probe)."""
        return [self]

    def with_turn(self, tag: str) -> Action:
        """This action as the history keeps it, once the scripted model gave the turn it
        started the tag ``tag`` (only a prompt starts one)."""
        return self

    def resolved(self, model: ScriptedModel) -> Action:
        """This action with the concrete tool calls the scripted model sent in its turn (what
        a counterexample shows and a replay sends again)."""
        return self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        for f in dataclasses.fields(self):
            if f.metadata.get("json", True):
                out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True)
class SessionAction(Action):
    """An action on one session of the program (``s``: see the module docstring)."""

    s: int = 0


def from_json(data: Mapping[str, Any] | Action) -> Action:
    """The action a replay file (or a hand-written test) describes; :class:`ActionError` for
    an unknown op or field."""
    if isinstance(data, Action):
        return data
    if not isinstance(data, Mapping) or not isinstance(data.get("op"), str):
        raise ActionError(f"not an action: {data!r}")
    cls = ACTIONS.get(data["op"])
    if cls is None:
        raise ActionError(f"unknown action {data['op']!r} (known: {', '.join(sorted(ACTIONS))})")
    names = {f.name for f in dataclasses.fields(cls) if f.metadata.get("json", True)}
    fields = {LEGACY_FIELDS.get((cls.op, k), k): v for k, v in data.items()
              if k != "op" and not k.startswith("_")}
    extra = set(fields) - names
    if extra:
        raise ActionError(f"action {data['op']!r} has no field {', '.join(sorted(extra))}")
    return cls(**fields)


# --- the vocabulary ------------------------------------------------------------------------

@dataclass(frozen=True)
class NewSession(Action):
    """``session/new``; on a shared process, ``created`` records the connection's index of
    the session it made (how a replay renumbers sessions, see ``Program.standalone``), and
    ``reuses`` the index of the session it took over instead, when a quiet one an earlier
    example left was handed out (a replay goes on with that session)."""

    op: ClassVar[str] = "new_session"
    created: int | None = field(default=None, compare=False, metadata={"json": False})
    reuses: int | None = field(default=None, compare=False, metadata={"json": False})

    def perform(self, client: NewSessionOps) -> None:
        client.new_session()

    def performed(self, sessions: Sequence[SessionHandle], at: int) -> NewSession:
        """This action as the history keeps it, once it gave the connection's session ``at``
        (how a replay renumbers sessions, see ``Program.standalone``)."""
        reuses = first_of(sessions[:at], sessions[at].sid) if sessions[at].reused else None
        return dataclasses.replace(self, created=at, reuses=reuses)

    def describe(self, label: str = "") -> str:
        return f"new session{label}"

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        return None  # it wrote session/new, or took a spare (the spare's line says which)


@dataclass(frozen=True)
class Prompt(SessionAction):
    """``session/prompt``; behind a scripted model, ``model`` is what the model does in the
    turn (its script is registered and the prompt's text carries its tag)."""

    op: ClassVar[str] = "prompt"
    blocks: list[dict[str, Any]] = field(default_factory=list)
    meta: bool = False
    model: ModelScript = ()
    # the scripted model's tag for the turn this prompt started (not part of the program)
    turn: str | None = field(default=None, compare=False, repr=False,
                             metadata={"json": False})

    def __post_init__(self) -> None:
        if not isinstance(self.model, tuple) or any(isinstance(r, Mapping) for r in self.model):
            object.__setattr__(self, "model", script_from_json(self.model))

    def perform(self, client: PromptOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        sess = client.sessions[idx]
        with client.lock:
            if not client.oracle.client_may(sess.sid, "prompt"):
                return  # a reading forbids prompting now (A-01=forbid)
        params = self.params(client, sess.sid)
        if client.profile.cancel_before_prompt:  # the habit: a cancel right before it
            sess.prompts.append(client.calls.notify_then_request(
                "session/cancel", {"sessionId": sess.sid}, "session/prompt", params))
        else:
            sess.prompts.append(client.calls.request("session/prompt", params))

    def params(self, client: PromptOps, sid: str) -> dict[str, Any]:
        """The request's params; behind a scripted model the turn's script is registered."""
        blocks = _in_workspace(self.blocks, client.cwd)
        tag = client.turns.start(self.model, sid)
        if tag is not None:
            blocks = _tagged(blocks, tag_text(tag))
        params: dict[str, Any] = {"sessionId": sid, "prompt": blocks}
        if self.meta:
            params["_meta"] = {"acp-model": {"fuzz": True}}
        return params

    def with_turn(self, tag: str) -> Prompt:
        return dataclasses.replace(self, turn=tag)

    def resolved(self, model: ScriptedModel) -> Prompt:
        if self.turn is None:
            return self
        sent = model.sent(self.turn)
        script = tuple(r.resolved(sent.get(step, ())) if isinstance(r, Tools) else r
                       for step, r in enumerate(self.model))
        return dataclasses.replace(self, model=script, turn=None)

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        if "session/prompt" in wrote.methods:
            return None
        why = _held_back(wrote, label)
        return f"not sent: {why}" if why else "not sent"

    def describe(self, label: str = "", tag: str | None = None) -> str:
        """``tag``: the text block the client put first for the scripted turn's tag (a prompt
        without text of its own carries that block too on the wire: ``_tagged``)."""
        texts = [str(b.get("text", b.get("type"))) for b in self.blocks]
        if tag is not None and _text_at(self.blocks) is None:
            texts.insert(0, f"{tag} (the turn's tag)")
        model = f"; {describe_script(self.model)}" if self.model else ""
        return f"prompt{label}: {', '.join(texts)}{model}"

    def sent_line(self, wrote: Wrote, label: str = "") -> str:
        return _with(self.describe(label, wrote.tag), self.unsent(wrote, label))

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["model"] = [r.to_json() for r in self.model]
        if not self.model:
            del out["model"]
        return out


def _held_back(wrote: Wrote, label: str) -> str:
    """Why the client sent no prompt (Prompt.perform's reading A-01=forbid), in the run's own
    terms: the prompt still open on the session ("" when the run shows no reason)."""
    where = label.strip() or "its session"
    if not wrote.forbid:
        return ""
    if wrote.open_prompt is not None:
        return f"prompt #{wrote.open_prompt} on {where} was still open, A-01=forbid"
    return f"{where} was still working, A-01=forbid"


def _no_request(wrote: Wrote, what: str) -> str | None:
    """An answer that found nothing to answer: it only waited (how long, where the schedule
    says)."""
    if wrote.methods:
        return None
    if wrote.waited is not None and wrote.waited >= WAITED:
        return f"no {what} came: it only waited {wrote.waited:.1f} s"
    return f"no {what} was open: nothing sent"


WORKSPACE = "{workspace}"  # in a generated link's uri: the session's working directory


def _in_workspace(blocks: list[dict[str, Any]], cwd: str) -> list[dict[str, Any]]:
    """The blocks with their links' ``{workspace}`` made the client's working directory."""
    root = cwd.rstrip("/")
    return [{**b, "uri": b["uri"].replace(WORKSPACE, root)}
            if b.get("type") == "resource_link" and isinstance(b.get("uri"), str)
            and WORKSPACE in b["uri"] else b for b in blocks]


def _text_at(blocks: Sequence[Mapping[str, Any]]) -> int | None:
    """Where the first text of a prompt's blocks is (None: it has none), which the turn's tag
    is appended to."""
    return next((n for n, b in enumerate(blocks)
                 if b.get("type") == "text" and isinstance(b.get("text"), str)), None)


def _tagged(blocks: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """The blocks with the turn's tag appended to the first text (a text block is added when
    there is none)."""
    out = [dict(b) for b in blocks]
    at = _text_at(out)
    if at is None:
        return [{"type": "text", "text": tag}, *out]
    out[at]["text"] = f"{out[at]['text']} {tag}"
    return out


def _with(line: str, said: str | None) -> str:
    """A program line with what the run says of it (:meth:`Action.unsent`), if anything."""
    return f"{line} ({said})" if said else line


@dataclass(frozen=True)
class Cancel(SessionAction):
    """``session/cancel``; ``sync``: then a request whose answer proves the cancel read."""

    op: ClassVar[str] = "cancel"
    sync: bool = False

    def perform(self, client: CancelOps) -> None:
        idx = client.session_index(self.s)
        if idx is not None:
            client.cancel(idx, self.sync)

    def describe(self, label: str = "") -> str:
        return f"cancel{label}" + (" (then sync)" if self.sync else "")


@dataclass(frozen=True)
class Interrupt(SessionAction):
    """``session/cancel`` and a new ``session/prompt`` in one write, as an editor's "stop and
    send this instead" does: the cancel ends only the work it met, never the new prompt's.
    Where a reading forbids prompting now (A-01=forbid, v1 while a turn runs), only the
    cancel is sent."""

    op: ClassVar[str] = "interrupt"
    prompt: Prompt = field(default_factory=Prompt)

    def __post_init__(self) -> None:
        prompt = from_json({"op": Prompt.op, **self.prompt}) if isinstance(
            self.prompt, Mapping) else self.prompt
        if not isinstance(prompt, Prompt):
            raise ActionError(f"interrupt: {self.prompt!r} is not a prompt")
        object.__setattr__(self, "prompt", prompt)

    def perform(self, client: CancelOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        sid = client.sessions[idx].sid
        with client.lock:
            allowed = client.oracle.client_may(sid, "prompt")
        client.cancel(idx, then_prompt=self.prompt.params(client, sid) if allowed else None)

    def with_turn(self, tag: str) -> Interrupt:
        return dataclasses.replace(self, prompt=self.prompt.with_turn(tag))

    def resolved(self, model: ScriptedModel) -> Interrupt:
        return dataclasses.replace(self, prompt=self.prompt.resolved(model))

    def describe(self, label: str = "", tag: str | None = None) -> str:
        return f"interrupt{label}: cancel and, in the same write, {self.prompt.describe('', tag)}"

    def sent_line(self, wrote: Wrote, label: str = "") -> str:
        return _with(self.describe(label, wrote.tag), self.unsent(wrote, label))

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        if "session/prompt" in wrote.methods or not wrote.methods:
            return super().unsent(wrote, label)
        why = _held_back(wrote, label)
        return "only the cancel was sent" + (f": {why}" if why else "")

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "s": self.s, "prompt": self.prompt.to_json()}


@dataclass(frozen=True)
class AnswerPermission(SessionAction):
    """Answer the oldest (or newest) open permission request with ``outcome``, as far as the
    client rules allow it (after a cancel only ``cancelled``); ``late``: only if one is open
    right away; ``sync``: then prove the answer read."""

    op: ClassVar[str] = "answer"
    outcome: Answer = Answer.ALLOW
    newest: bool = False
    late: bool = False
    sync: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", _member(Answer, self.outcome, "permission answer"))

    def perform(self, client: PermissionAnswerOps) -> None:
        idx = client.session_index(self.s)
        if idx is not None:
            client.answers.answer(idx, self.outcome, newest=self.newest, late=self.late,
                                  sync=self.sync)

    def describe(self, label: str = "") -> str:
        return f"answer permission{label}: {self.outcome}" + (" (newest)" if self.newest else "")

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        return _no_request(wrote, "permission request")


def _user_action(value: object) -> ElicitationAction:
    action = _member(ElicitationAction, value, "elicitation answer")
    if action not in USER_ELICITATION_ACTIONS:
        raise ActionError(f"elicitation answer {value!r} is not one of "
                          f"{', '.join(USER_ELICITATION_ACTIONS)}")
    return action


@dataclass(frozen=True)
class HoldElicitations(SessionAction):
    """Hold the session's elicitations open from now on, as a user who leaves the form up
    (``fuzzing/elicitations.py``): an ``answer_elicitation`` answers one; a cancel of the
    session answers them with ``after_cancel`` once the cancelled work has ended; the drain
    answers those left. Nothing is held by a client that does not serve elicitations."""

    op: ClassVar[str] = "hold_elicitations"
    writes: ClassVar[bool] = False
    after_cancel: ElicitationAction = ElicitationAction.CANCEL

    def __post_init__(self) -> None:
        object.__setattr__(self, "after_cancel", _user_action(self.after_cancel))

    def perform(self, client: ElicitingOps) -> None:
        idx = client.session_index(self.s)
        if idx is not None:
            client.elicitations.hold(client.sessions[idx].sid, self.after_cancel)

    def describe(self, label: str = "") -> str:
        return f"hold elicitations{label} open (after a cancel, answer {self.after_cancel})"


@dataclass(frozen=True)
class AnswerElicitation(SessionAction):
    """Answer the oldest (or newest) elicitation held open for the session with ``action``
    (error -32800 if the agent withdrew it), once one is held or the session settles; then
    prove the answer read."""

    op: ClassVar[str] = "answer_elicitation"
    action: ElicitationAction = ElicitationAction.ACCEPT
    newest: bool = False

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        return _no_request(wrote, "elicitation")

    def __post_init__(self) -> None:
        object.__setattr__(self, "action", _user_action(self.action))

    def perform(self, client: ElicitingOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        sid = client.sessions[idx].sid
        client.wait_until(lambda: bool(client.elicitations.waiting(sid)) or client.settled(idx),
                          client.window(0.2))
        if client.elicitations.answer(sid, self.action, newest=self.newest):
            client.sync()

    def describe(self, label: str = "") -> str:
        return f"answer elicitation{label}: {self.action}" + (" (newest)" if self.newest else "")


@dataclass(frozen=True)
class Finish(SessionAction):
    """Let the turn end by itself, answering each permission request it opens with
    ``outcome``, as long as the agent keeps making progress, for four deadlines at most."""

    op: ClassVar[str] = "finish"
    writes: ClassVar[bool] = False
    outcome: Answer = Answer.ALLOW

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", _member(Answer, self.outcome, "permission answer"))

    def perform(self, client: PermissionAnswerOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        end = time.monotonic() + FINISH_DEADLINES * client.deadline
        for _ in range(FINISH_MAX_ANSWERS):
            left = end - time.monotonic()
            if left <= 0 or not client.settle(idx, left) or not client.busy(idx) \
                    or not client.open_permissions(idx):
                return
            client.answers.answer(idx, self.outcome)

    def describe(self, label: str = "") -> str:
        return f"finish the turn{label}, answering every permission: {self.outcome}"


class WaitMode(StrEnum):
    """What a :class:`Wait` waits for (its replay-file spelling is the value)."""

    TICK = "tick"  # a moment
    UPDATE = "update"  # the session's next message (while it works unblocked)
    SETTLED = "settled"  # quiet, or blocked on the client or a stalled model


@dataclass(frozen=True)
class Wait(SessionAction):
    """``tick``: a moment; ``update``: the session's next message (while it works unblocked);
    ``settled``: quiet, or blocked on the client or on a stalled scripted model, while the
    agent keeps writing."""

    op: ClassVar[str] = "wait"
    writes: ClassVar[bool] = False
    mode: WaitMode = WaitMode.TICK

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", WaitMode(self.mode))
        except ValueError:
            raise ActionError(f"wait mode {self.mode!r} is not one of "
                              f"{', '.join(WaitMode)}") from None

    def perform(self, client: WaitOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        if self.mode is WaitMode.TICK:
            time.sleep(client.tick)
        elif self.mode is WaitMode.UPDATE:
            if client.settled(idx):
                # A quiet session owes nothing, and work blocked on our answer (or on a
                # stalled model, until a cancel) sends nothing: the wait would only run out
                # (time passing while blocked is what ``tick`` generates).
                return
            mark = client.calls.mark()
            sid = client.sessions[idx].sid
            client.calls.wait_for_index(lambda m: isinstance(m, dict) and isinstance(
                m.get("params"), dict) and m["params"].get("sessionId") == sid,
                client.window(0.2), start=mark)
        else:  # settled; a stuck agent is judged by the drain, not by every wait
            client.settle(idx, client.window(1.0))

    def describe(self, label: str = "") -> str:
        return f"wait{label} until {self.mode}"


# a reopen that does not ask for the history: the program's words name what may be sent, for
# an agent without session/resume is sent session/load (a v1 agent's reopen replays anyway)
NO_REPLAY = "without asking for its history (session/resume; session/load where there is none)"


@dataclass(frozen=True)
class LoadSession(SessionAction):
    """Reopen a session this client made earlier in the run, on the same connection, as an
    editor does when it shows a thread again: ``replay`` asks for its history (v1
    ``session/load``, v2 ``session/resume`` from the start), otherwise none (``session/resume``
    without a cursor). Only what the agent advertised is sent (a no-op otherwise); the
    session may be working, the text does not forbid it."""

    op: ClassVar[str] = "load_session"
    replay: bool = True

    def perform(self, client: ReopenOps) -> None:
        """A request the agent advertised (``replay``: one that replays the history, v1
        ``session/load`` or v2 ``session/resume`` from the start; else ``session/resume``
        without replay, where there is one), then its answer awaited up to the deadline: the
        replay before it is judged as it comes, an answer that never comes by the drain."""
        self.reopen(client, client.session_index(self.s))

    def reopen(self, client: ReopenOps, idx: int | None) -> dict[str, Any] | None:
        """:meth:`perform` on the client's session ``idx``: the agent's answer (None: none
        came, or nothing was sent)."""
        wire = client.oracle.shape
        wanted = wire.reopen_order(self.replay)
        method = next((m for m in wanted if m in client.handshake.reloads), None)
        if idx is None or method is None:
            return None
        params: dict[str, Any] = {"sessionId": client.sessions[idx].sid, "cwd": client.cwd,
                                  "mcpServers": []}
        if self.replay and wire.replays_by_cursor:
            params["replayFrom"] = {"type": "start"}
        client.reach[Reach.LOADS] += 1
        if client.busy(idx):
            client.reach[Reach.LOADS_DURING_WORK] += 1
        mark = client.calls.mark()
        rid = client.calls.request(method, params)
        at = client.calls.wait_for_index(lambda m: is_response_to(m, rid), client.deadline,
                                        start=mark)
        for config_method, config in client.session_config:
            # as after session/new: a client restores the session's settings (its mode)
            with contextlib.suppress(RpcError, TimeoutError):
                client.calls.call(config_method, {"sessionId": params["sessionId"], **config},
                                 timeout=client.deadline)
        answer = client.calls.at(at).get("msg") if at is not None else None
        return answer if isinstance(answer, dict) else None

    def describe(self, label: str = "") -> str:
        return f"load session{label}" + (", replaying its history" if self.replay
                                         else f" {NO_REPLAY}")

    def sent_line(self, wrote: Wrote, label: str = "") -> str:
        """Where the run shows the reopen it wrote, the line names that method instead of
        the alternatives (a v1 agent without session/resume was sent session/load, which
        replays the history: "without asking for it" alone read as a contradiction)."""
        if self.replay or not wrote.methods:
            return super().sent_line(wrote, label)
        return _with(f"load session{label} without asking for its history: sent "
                     f"{wrote.methods[0]}, the reopen the agent offers",
                     self.unsent(wrote, label))


@dataclass(frozen=True)
class Relaunch(SessionAction):
    """The editor restarts: the agent process is replaced by a fresh one (the same command,
    environment, working directory and workspace, so what the agent stored of its sessions is
    still there), initialized as the first was, and the session is reopened in it as
    :class:`LoadSession` reopens one (``replay``). The sessions of the old process are brought
    to rest and judged first; those not reopened are gone (actions on them do nothing), as
    are all of them when the reopen fails. Only the example that owns the process can replace
    it (``Example``); a client alone does nothing."""

    op: ClassVar[str] = "relaunch"
    writes: ClassVar[bool] = False
    replay: bool = True

    def perform(self, client: ReopenOps) -> None:
        return None

    def describe(self, label: str = "") -> str:
        return (f"restart the agent (a fresh process, its store kept) and reopen session{label}"
                + (", replaying its history" if self.replay else f" {NO_REPLAY}"))


@dataclass(frozen=True)
class Sync(Action):
    """A request the agent must answer: its response proves what the agent has read."""

    op: ClassVar[str] = "sync"

    def perform(self, client: WaitOps) -> None:
        client.sync()


@dataclass(frozen=True)
class CancelPromptRequest(SessionAction):
    """``$/cancel_request`` for the session's newest pending prompt."""

    op: ClassVar[str] = "cancel_prompt_request"

    def perform(self, client: CancelOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        pending = client.pending_prompts(idx)
        if pending:
            client.calls.notify("$/cancel_request", {"requestId": pending[-1]})

    def describe(self, label: str = "") -> str:
        return f"$/cancel_request for the pending prompt{label}"


class NegativeInput(StrEnum):
    """Inputs where the spec defines the answer: any error, and the agent lives (:class:`Probe`)."""

    UNKNOWN_SESSION = "unknown_session"
    INVALID_PARAMS = "invalid_params"
    UNKNOWN_METHOD = "unknown_method"
    GARBAGE = "garbage"
    NOTIFICATION_BATCH = "notification_batch"
    REQUEST_BATCH = "request_batch"


# the negative inputs that break a client rule (the others are legal inputs the agent must
# answer as the text says)
BREACHES = {NegativeInput.UNKNOWN_SESSION: Breach.UNKNOWN_SESSION,
            NegativeInput.INVALID_PARAMS: Breach.INVALID_PARAMS,
            NegativeInput.GARBAGE: Breach.GARBAGE}


def _member(enum: type[StrEnum], value: object, what: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        raise ActionError(f"{what} {value!r} is not one of {', '.join(enum)}") from None


@dataclass(frozen=True)
class SloppyAnswer(SessionAction):
    """A client that races and errs, on purpose (``PermissionAnswers.sloppy``): a duplicate
    allow, an allow after the cancel, an allow for a withdrawn request. The trace marks it a
    probe: only what the agent does next is judged."""

    op: ClassVar[str] = "sloppy_answer"
    mistake: Mistake = Mistake.DUPLICATE

    def unsent(self, wrote: Wrote, label: str = "") -> str | None:
        return _no_request(wrote, "permission request")

    def __post_init__(self) -> None:
        object.__setattr__(self, "mistake", _member(Mistake, self.mistake, "sloppy answer"))

    def perform(self, client: PermissionAnswerOps) -> None:
        idx = client.session_index(self.s)
        if idx is not None:
            client.answers.sloppy(idx, self.mistake)

    def breach(self) -> Breach | None:
        # an allow for a withdrawn request breaks nothing (CANCEL-14: it is still answered)
        return {Mistake.DUPLICATE: Breach.SECOND_ANSWER, Mistake.WITHDRAWN: None}.get(
            self.mistake, Breach.ALLOW_AFTER_CANCEL)

    def without_breach(self) -> list[Action]:
        if self.mistake in (Mistake.AFTER_CANCEL, Mistake.LATE):
            return [Cancel(self.s)]
        return [] if self.breach() is not None else [self]

    def describe(self, label: str = "") -> str:
        what = {Mistake.DUPLICATE: "a second allow for the last answered permission request",
                Mistake.AFTER_CANCEL: "cancel, then allow (not cancelled) for the pending "
                                      "permission requests",
                Mistake.WITHDRAWN: "allow for a permission request the agent withdrew",
                Mistake.LATE: "cancel, then allow (not cancelled) for the permission requests "
                              "it left pending once the cancelled work has ended",
                }[self.mistake]
        return f"negative input{label}: {what}"


@dataclass(frozen=True)
class LateAllow(SessionAction):
    """A late allow for cancelled work, then new work that asks again: the session's work is
    cancelled, the permission requests it left pending are answered allow (a probe) only once
    that work has ended, and ``prompt`` starts new work (behind a scripted model, its first
    reply calls a tool that needs permission). An agent that kept the stray allow takes it
    for the new request and runs the tool unasked (PERM-11); the new request is left open for
    the actions that follow, and a sync proves what the agent did meanwhile."""

    op: ClassVar[str] = "late_allow"
    prompt: Prompt = field(default_factory=Prompt)

    def __post_init__(self) -> None:
        prompt = from_json({"op": Prompt.op, **self.prompt}) if isinstance(
            self.prompt, Mapping) else self.prompt
        if not isinstance(prompt, Prompt):
            raise ActionError(f"late allow: {self.prompt!r} is not a prompt")
        object.__setattr__(self, "prompt", prompt)

    def perform(self, client: PermissionAnswerOps) -> None:
        idx = client.session_index(self.s)
        if idx is None:
            return
        client.answers.sloppy(idx, Mistake.LATE)
        dataclasses.replace(self.prompt, s=self.s).perform(client)
        client.settle(idx, client.window(1.0))  # until it asks (or ends, or goes quiet)
        if client.open_permissions(idx):  # unanswered a while: does its tool wait for it?
            mark, sid = client.calls.mark(), client.sessions[idx].sid
            client.calls.wait_for_index(lambda m: isinstance(m, dict) and isinstance(
                m.get("params"), dict) and m["params"].get("sessionId") == sid,
                client.window(0.2), start=mark)
        client.sync()

    def breach(self) -> Breach | None:
        return Breach.ALLOW_AFTER_CANCEL

    def without_breach(self) -> list[Action]:
        return [dataclasses.replace(self.prompt, s=self.s)]

    def with_turn(self, tag: str) -> LateAllow:
        return dataclasses.replace(self, prompt=self.prompt.with_turn(tag))

    def resolved(self, model: ScriptedModel) -> LateAllow:
        return dataclasses.replace(self, prompt=self.prompt.resolved(model))

    def describe(self, label: str = "", tag: str | None = None) -> str:
        return (f"late allow{label}: cancel, allow the pending permission requests once the "
                f"cancelled work has ended (a probe), then {self.prompt.describe('', tag)}")

    def sent_line(self, wrote: Wrote, label: str = "") -> str:
        return _with(self.describe(label, wrote.tag), self.unsent(wrote, label))

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "s": self.s, "prompt": self.prompt.to_json()}


@dataclass(frozen=True)
class Probe(SessionAction):
    """Negative inputs where the spec defines the answer: any error, and the agent lives."""

    op: ClassVar[str] = "probe"
    input: NegativeInput = NegativeInput.UNKNOWN_METHOD

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", _member(NegativeInput, self.input, "probe"))

    def perform(self, client: ProbeOps) -> None:
        PROBES[self.input](client, self.s, client.next_id())

    def breach(self) -> Breach | None:
        # an unknown ``_`` method is an extension and a batch is legal (RPC-06)
        return BREACHES.get(self.input)

    def without_breach(self) -> list[Action]:
        return [] if self.breach() is not None else [self]

    def describe(self, label: str = "") -> str:
        # a deliberate breach says so; a legal input is named as what it is (the s9 reader:
        # "negative input: notification_batch" read as a breach of a valid batch)
        what = PROBE_WORDS[self.input]
        return f"negative input: {what}" if self.breach() is not None else what


def _answered(build: Callable[[ProbeOps, int, int], dict[str, Any]]
              ) -> Callable[[ProbeOps, int, int], None]:
    """A probe that is one request: sent marked as a probe, and its response awaited."""
    def send(client: ProbeOps, s: int, rid: int) -> None:
        calls = client.calls
        mark = calls.mark()
        calls.send(build(client, s, rid), probe=True)
        calls.wait_for_index(lambda m: is_response_to(m, rid), client.deadline, start=mark)
    return send


@_answered
def _unknown_session(client: ProbeOps, s: int, rid: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": {
        "sessionId": "acp-model-no-such-session", "prompt": [{"type": "text", "text": "hi"}]}}


@_answered
def _invalid_params(client: ProbeOps, s: int, rid: int) -> dict[str, Any]:
    idx = client.session_index(s)
    sid = client.sessions[idx].sid if idx is not None else "x"
    return {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": {"sessionId": sid}}


@_answered
def _unknown_method(client: ProbeOps, s: int, rid: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "_acp_model/unknown", "params": {}}


def _notification_batch(client: ProbeOps, s: int, rid: int) -> None:
    """A legal batch (RPC-06) of notifications only: it must get no response at all."""
    client.calls.send([{"jsonrpc": "2.0", "method": "_acp_model/note", "params": {}}])
    client.sync()


def _request_batch(client: ProbeOps, s: int, rid: int) -> None:
    """A legal batch holding a request: the request still gets its own response."""
    if client.batches_unanswered:
        return  # shown once already; again would only wait out another deadline
    calls = client.calls
    mark = calls.mark()
    calls.send([sync_message(rid), {"jsonrpc": "2.0", "method": "_acp_model/note", "params": {}}])
    # an agent that rejects batches answers with one id-null error: that is its answer
    if calls.wait_for_index(lambda m: _answers(m, rid) or _null_error(m), client.deadline,
                            start=mark) is None:
        client.batches_unanswered = True


def _garbage(client: ProbeOps, s: int, rid: int) -> None:
    """A truncated line the agent must survive."""
    client.calls.pipe.send_raw(GARBAGE, probe=True)
    client.sync()


# each input in words, as a counterexample and an issue body list it
PROBE_WORDS: dict[NegativeInput, str] = {
    NegativeInput.UNKNOWN_SESSION: "a prompt for a session that does not exist",
    NegativeInput.INVALID_PARAMS: "a prompt without its content (invalid params)",
    NegativeInput.UNKNOWN_METHOD: "a request of an unknown extension method "
                                  "(`_acp_model/unknown`), which the agent answers with an error",
    NegativeInput.GARBAGE: "a truncated line that is not JSON",
    NegativeInput.NOTIFICATION_BATCH: "a JSON-RPC batch of one notification (legal: it gets no "
                                      "response), then a sync request",
    NegativeInput.REQUEST_BATCH: "a JSON-RPC batch of a sync request and a notification (legal: "
                                 "the request gets its response)",
}

# what each negative input writes (given the program's session and a fresh request id)
PROBES: dict[NegativeInput, Callable[[ProbeOps, int, int], None]] = {
    NegativeInput.UNKNOWN_SESSION: _unknown_session,
    NegativeInput.INVALID_PARAMS: _invalid_params,
    NegativeInput.UNKNOWN_METHOD: _unknown_method,
    NegativeInput.NOTIFICATION_BATCH: _notification_batch,
    NegativeInput.REQUEST_BATCH: _request_batch,
    NegativeInput.GARBAGE: _garbage,
}


def _null_error(msg: Any) -> bool:
    return isinstance(msg, dict) and "error" in msg and msg.get("id") is None \
        and "method" not in msg


def _answers(msg: Any, request_id: Any) -> bool:
    """A response to ``request_id``, alone or inside a batch array."""
    if isinstance(msg, list):
        return any(is_response_to(m, request_id) for m in msg)
    return is_response_to(msg, request_id)


__all__ = ["ACTIONS", "WAITED", "Action", "ActionError", "AnswerElicitation", "AnswerPermission",
           "Cancel", "CancelPromptRequest", "Finish", "HoldElicitations", "LateAllow",
           "LoadSession", "NewSession", "Probe", "Prompt", "Relaunch", "SessionAction",
           "SloppyAnswer", "Sync", "Wait", "Wrote", "from_json"]
