"""The fuzz client's answers to the agent's requests.

Every permission request is answered exactly once (PERM-12), whichever thread gets there
first: at once when the model constrains the answer (a cancel is outstanding: CANCEL-04), by an
action otherwise, careful or (on purpose, marked as a probe) sloppy. Any other agent request
gets "method not found" unless the client's capabilities advertised it (then
``fuzzing/services.py`` serves it).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from acp_model.fuzzing.calls import AgentExited
from acp_model.fuzzing.ops import Mistake
from acp_model.model.permissions import option_for
from acp_model.model.vocab import Answer, ErrorCode
from acp_model.report.reach import Reach

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import AnswerWaits, LookOps, ReplyOps

CANCELLED = {"outcome": {"outcome": "cancelled"}}
CANCELLED_ERROR = {"code": ErrorCode.REQUEST_CANCELLED, "message": "Request cancelled"}


class PermissionAnswers:
    """The permission requests this client answered (per session, in order), and how it
    answers the next one.

    It is built with the three small contexts it uses: ``replies`` (the connection's calls
    and the reach they count in), ``look`` (the client's sessions and the judge's view of
    them) and ``waits`` (what a careful or sloppy answer waits for)."""

    def __init__(self, replies: ReplyOps, look: LookOps, waits: AnswerWaits) -> None:
        self.replies = replies
        self.look = look
        self.waits = waits
        self.answered: set[Any] = set()
        self.answered_in: dict[str, list[Any]] = {}  # sid -> those ids, in order

    def waiting(self, rids: list[Any]) -> list[Any]:
        """Those of ``rids`` this client has not answered yet."""
        return [rid for rid in rids if rid not in self.answered]

    def _claim(self, sid: str, rid: Any) -> bool:
        """Count ``rid`` answered (the client's lock held); False if it already was."""
        if rid in self.answered:
            return False
        self.answered.add(rid)
        self.answered_in.setdefault(sid, []).append(rid)
        return True

    def send(self, sid: str, rid: Any, result: Any = None, error: Any = None) -> None:
        """Answer a permission request exactly once (PERM-12), whichever thread gets there."""
        with self.look.lock:
            if not self._claim(sid, rid):
                return
        self._respond(rid, result, error)

    def _respond(self, rid: Any, result: Any = None, error: Any = None) -> None:
        with contextlib.suppress(AgentExited, TimeoutError):
            self.replies.calls.respond(rid, result=result, error=error)

    def as_required(self, sid: str, rid: Any) -> bool:
        """Answer a permission request now if the model constrains the answer (a cancel is
        outstanding: CANCEL-04); True when it did."""
        with self.look.lock:
            required = self.look.oracle.required_answers(sid, rid)
        if required is None:
            return False
        if (Answer.CANCELLED, None) in required:
            self.send(sid, rid, CANCELLED)
        else:
            self.send(sid, rid, error=CANCELLED_ERROR)
        return True

    def agent_request(self, msg: dict[str, Any]) -> None:
        """Client duties towards agent requests that no fuzz action decides."""
        if msg.get("method") != "session/request_permission":
            # Nothing the client's capabilities advertised (those are served before this):
            # not implemented.
            self._respond(msg["id"], error={"code": ErrorCode.METHOD_NOT_FOUND,
                                            "message": "Method not found"})
            return
        self.replies.reach[Reach.PERMISSION_REQUESTS] += 1
        params = msg.get("params") or {}
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(sid, str):
            self.as_required(sid, msg["id"])

    def answer(self, idx: int, wanted: Answer, *, newest: bool = False, late: bool = False,
               sync: bool = False) -> None:
        """Answer one open permission request of session ``idx`` with ``wanted``, or with
        what the model says the client rules still allow."""
        c, w = self.look, self.waits
        if late:  # a quiet session asks for nothing: waiting for a request would only idle
            w.wait_until(lambda: bool(c.open_permissions(idx)) or not c.busy(idx),
                         w.window(0.05))
        else:
            w.wait_until(lambda: bool(c.open_permissions(idx)) or w.settled(idx),
                         w.window(0.2))
        perms = c.open_permissions(idx)
        if not perms:
            return
        rid = perms[-1] if newest else perms[0]
        sid = c.sessions[idx].sid
        asked = wanted
        code = ErrorCode.REQUEST_CANCELLED if wanted == Answer.ERROR else None
        with c.lock:
            options = c.oracle.permission_options(sid, rid)
            required = c.oracle.required_answers(sid, rid)
            withdrawn = c.oracle.withdrawn(rid)
        if required is not None and (wanted, code) not in required:
            wanted = Answer.CANCELLED  # the model says only the cancelled outcome is allowed
        if withdrawn and wanted != Answer.CANCELLED:
            wanted = Answer.ERROR  # a withdrawn request: -32800, as cancellation.mdx shows
        if wanted == Answer.CUSTOM and not c.oracle.shape.custom_outcomes:
            wanted = Answer.REJECT  # v1's outcomes are a closed union: no custom ones
        option = option_for(options, wanted) if wanted in (Answer.ALLOW, Answer.REJECT) else None
        if wanted == Answer.ERROR:
            self.send(sid, rid, error=CANCELLED_ERROR)
        elif option is not None:
            self.send(sid, rid, {"outcome": {"outcome": "selected", "optionId": option}})
        elif wanted == Answer.CUSTOM:
            self.send(sid, rid, {"outcome": {"outcome": "_acp_model_undecided"}})
        else:
            self.send(sid, rid, CANCELLED)
        if sync or asked != Answer.ALLOW:
            # Makes what the agent does with a refusal provable (PERM-11): a sync costs one
            # round trip and turns "maybe it had not read the answer yet" into a verdict.
            w.sync()

    def sloppy(self, idx: int, mistake: Mistake) -> None:
        """A permission answer a careful client would not send, sent on purpose and marked as
        a probe (the client's own rule breach is not judged; what the agent does next is):
        ``duplicate``, a second allow for the session's last answered request; ``withdrawn``,
        allow for a request the agent withdrew; ``after_cancel``, a cancel and then allow (not
        cancelled) for the requests it leaves pending; ``late``, the same once its work ended."""
        c, w = self.look, self.waits
        sid = c.sessions[idx].sid
        if mistake != Mistake.DUPLICATE:  # a request to answer wrongly, while the work goes on
            w.settle(idx, w.window(1.0))
        with c.lock:
            if mistake == Mistake.DUPLICATE:
                targets = self.answered_in.get(sid, [])[-1:]
            elif mistake == Mistake.WITHDRAWN:
                targets = [r for r in c.open_permissions(idx) if c.oracle.withdrawn(r)]
            else:
                targets = c.open_permissions(idx)
        if not targets:
            return
        if mistake in (Mistake.AFTER_CANCEL, Mistake.LATE):  # late: once the work has ended
            self.replies.calls.notify("session/cancel", {"sessionId": sid})
            w.wait_until(lambda: not c.busy(idx), w.deadline if mistake == Mistake.LATE else 0)
        for rid in targets:
            with c.lock:
                option = option_for(c.oracle.permission_options(sid, rid), Answer.ALLOW)
                if option is None:
                    continue
                self._claim(sid, rid)  # its one answer, however wrong
            self.replies.calls.send({"jsonrpc": "2.0", "id": rid, "result": {
                "outcome": {"outcome": "selected", "optionId": option}}}, probe=True)
        w.sync()  # what the agent makes of it is provable from here on
