"""Reachable-state exploration of the session lifecycle, properties over it, and reading diffs.

The graph is computed by *running the oracle's own model*: ``SessionModel`` instances driven by
``TableEngine`` over the ``Table`` that ``compile_machine`` derives from ``SessionLifecycle``. The
explorer adds no protocol knowledge of its own except two things that are not the protocol:

* an abstract alphabet (which wire events to try in a state, with fresh ids and indices), kept
  finite by :class:`Bounds`;
* small *observers* that watch the event stream to judge the properties independently of the
  model's bookkeeping. A property that merely re-read the model's own records could never catch
  a model that forgot to record something (e.g. a ``cancel`` action that does nothing).

Nodes are canonical configurations: every session's ``model.snapshot.snapshot`` with unread trace
indices ranked jointly over all sessions (they share one read frontier) and read ones by their
order within their session, plus the observers' state. The read frontier advances exactly as in
``monitor``: a prompt response proves the agent read everything up to that prompt, and the
abstract ``sync`` event stands for any client request the agent answers at once. Because trace
indices only matter by those orders and by the frontiers, equal keys have equal futures and the
exploration is exact within its bounds (``tests/unit/test_explore.py`` replays merged histories
side by side to check it).

Every edge can be replayed into a concrete JSON-RPC trace with ``TraceBuilder`` (see
:meth:`Exploration.witness`), so anything the explorer claims can be re-checked with
``acp-model check``.
"""

from acp_model.explorer.action import Move
from acp_model.explorer.alphabet import actions, alphabet, make_event
from acp_model.explorer.bounds import Bounds
from acp_model.explorer.config import Config, obligations
from acp_model.explorer.coverage import coverage
from acp_model.explorer.diff import (
    contradictions,
    diff_readings,
    each_reading,
    parse_diff,
    reading_name,
)
from acp_model.explorer.properties import (
    PROPERTIES,
    PROPERTY_NAMES,
    PropertyResult,
    check_properties,
)
from acp_model.explorer.search import (
    Edge,
    Exploration,
    ExplorationTooLarge,
    Refusal,
    Witness,
    explore,
)
from acp_model.spec.contradictions import CONTRADICTIONS

__all__ = [
    "CONTRADICTIONS",
    "PROPERTIES",
    "PROPERTY_NAMES",
    "Bounds",
    "Config",
    "Edge",
    "Exploration",
    "ExplorationTooLarge",
    "Move",
    "PropertyResult",
    "Refusal",
    "Witness",
    "actions",
    "alphabet",
    "check_properties",
    "contradictions",
    "coverage",
    "diff_readings",
    "each_reading",
    "explore",
    "make_event",
    "obligations",
    "parse_diff",
    "reading_name",
]
