"""The settings of one fuzz run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_model.agentcov import Collector
from acp_model.fuzzing.editors import ClientProfile
from acp_model.llm.server import ScriptedModel
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.revisions import Decision


@dataclass
class FuzzConfig:
    argv: list[str]
    max_examples: int = 200
    steps: int = 30
    seed: int | None = None
    time_budget: float | None = 300.0
    deadline: float = 3.0
    startup_deadline: float = 30.0  # the first answer (initialize) may wait for a slow start
    readings: Readings = DEFAULT
    isolate: bool = False
    validate: bool = True
    max_sessions: int = 3
    replay_runs: int = 5
    max_rounds: int = 4
    shrink_budget: float = 15.0  # Hypothesis' own shrinking, per round
    # per failure, the trials (fresh-process replays) minimizing may run (None: what the
    # program's length needs, fuzzing/shrink.py), and ...
    minimize_trials: int | None = None
    # ... the seconds they may take at most (the outer bound; as much for its replays)
    minimize_budget: float = 60.0
    # ... grown up to this many times when its agent's replays are slow (1: never; the matrix
    # grows it: a slow agent's fixpoint needs more trials than a fixed budget buys)
    minimize_growth: float = 1.0
    # a gate file shared by runs side by side (a matrix's rows): each minimizes and replays
    # its failures with none of the others running (fuzzing/alone.py); None: no gate
    minimize_alone: str | None = None
    stop_on: frozenset[str] = frozenset()  # stop generating once all of these rules are found
    # minimize and replay only the failures of these rules (None: every failure); the others
    # are reported as found, unreplayed (the pytest plugin's groups deselected with -k)
    reproduce_only: frozenset[str] | None = None
    # stop generating once each group has one model transition fired ("state:event"): a run
    # that only has to reach some paths (a test's coverage facts) ends when it has, with the
    # time budget as the cap
    stop_when_reached: tuple[frozenset[str], ...] = ()
    guided: bool = True  # coverage guidance with target() (off only to measure what it buys)
    cwd: str | None = None
    # the project folder sessions are opened in and the client serves files and terminals in
    # (None: ``cwd``); a client that serves them without a scripted model gets one of its own
    # while the agent keeps the user's directory (fuzzing/backend.py)
    workspace: str | None = None
    env: dict[str, str] | None = None
    # Root directory of Hypothesis' example database (one subdirectory per agent, see
    # campaign.example_database); None: nothing is stored or replayed from earlier runs.
    database: str | None = None
    # Redis URLs of shared stores (``redis://HOST:PORT/N``), multiplexed with ``database``;
    # read-only: replay what others stored, save nothing there.
    shared_databases: tuple[str, ...] = ()
    database_readonly: bool = False
    # The spec revision: a name, "auto" (a probe prompt decides, fuzzing/revision.py), or None
    # (the revision in ``readings``). ``decision`` is filled in once it is decided.
    spec: str | None = None
    decision: Decision | None = None
    # The protocol version the probe offers under "auto" (--protocol, or a profile's): an
    # agent that answers 1 is judged under v1, and the fuzzer then speaks v1 to it.
    protocol: int = 2
    # A model the fuzzer scripts behind the agent: the API it speaks ("anthropic",
    # "openai-responses"), and the running server once started (fuzzing/backend.py). Prompts
    # then carry what the model does in their turn.
    model_api: str | None = None
    model: ScriptedModel | None = field(default=None, compare=False, repr=False)
    # What a real agent needs from its client: requests sent after every session/new (a
    # profile's mode switch that makes it ask for permissions), and the auth method to log in
    # with when the agent lists it.
    session_config: tuple[tuple[str, dict[str, Any]], ...] = ()
    auth_method: str | None = None
    profile: str | None = None  # the agent profile it came from (reports name it)
    # the package and version that profile ran at (PACKAGE@VERSION): a replay runs the same
    # release, also when it is not the profile's pin (--agent-version)
    profile_package: str | None = None
    # A slow agent's sessions: made this many ahead of need, and closed after each example
    # (a real agent holds a process per session).
    sessions_ahead: int = 0
    close_sessions: bool = False
    # Quiet sessions a later example may take over (at most this many kept): a real client
    # runs many turns in one session, and a slow agent makes sessions slowly.
    reuse_sessions: int = 0
    # How much longer than for a fast agent the client's short waits last (a real agent's
    # turn starts in a few hundred milliseconds, a model round trip later)
    patience: float = 1.0
    # the profile's tool hints (``[tools] prefer``) steer the scripted model's choice; off,
    # it chooses from what each request offers alone (``--no-tool-hints``)
    tool_hints: bool = True
    # the scripted model's replies take drawn times (first byte, pace, pause before a tool
    # call; ``llm.script``); off, every reply comes at once (``--no-model-timing``)
    model_timing: bool = True
    # The agent's own coverage (``--coverage``, ``acp_model.agentcov``): measured in the
    # files ``coverage_scope`` names (``GLOB[#MODULE]``, relative to ``coverage_root``; none:
    # the automatic scope), the running collector once started (fuzzing/backend.py), and the
    # folder ``--coverage-html`` writes the annotated source to.
    # The editor the client plays (``fuzzing/editors.py``): the capabilities it advertises,
    # serves and names in the report, and its habits (None: a bare client, no capability)
    client: ClientProfile | None = None
    coverage: bool = False
    coverage_scope: tuple[str, ...] = ()
    coverage_root: str | None = None
    coverage_html: str | None = None
    collector: Collector | None = field(default=None, compare=False, repr=False)
    batches: bool = True  # send JSON-RPC batch probes (--no-batches skips them)
