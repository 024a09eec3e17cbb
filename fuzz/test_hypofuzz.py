"""The lifecycle fuzzer as a plain Hypothesis stateful test, for HypoFuzz (``hypothesis fuzz``).

HypoFuzz runs Hypothesis tests for as long as you let it, on every core, choosing adaptively
which test to give time to, with a live dashboard. The test class is given the example
database of ``acp-model fuzz`` (``ACP_DB``), where HypoFuzz keeps its corpus and findings::

    ACP_AGENT="node my-agent.js --stdio" ACP_DB=redis://ci-redis:6379/0 \
        hypothesis fuzz -n 4 -- fuzz/test_hypofuzz.py      # dashboard on http://localhost:9999

Each worker process starts its own agent when the module is imported. Settings come from the
environment, as for ``fuzz/test_agent.py``: ``ACP_AGENT`` (default: the bundled reference
agent), ``ACP_DB`` (a directory, ``redis://...``, or both comma-separated; default
``.hypothesis/acp-model``), ``ACP_DB_RO``, ``ACP_DEADLINE``, ``ACP_STEPS``, ``ACP_READINGS``,
``ACP_SPEC`` (default auto: a probe prompt decides). A failure is a Hypothesis failure of
``TestAgentLifecycle``: HypoFuzz shows it (with the rule and the proof in the message), and
the worker says so on stderr at once (``acp-model: CANCEL-07 failed (worker PID): ...``);
``acp-model fuzz`` on the same agent writes the counterexample files.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.database import example_database, locations
from acp_model.fuzzing.recorder import Found
from acp_model.fuzzing.revision import resolve
from acp_model.pytest_plugin.api import lifecycle_machine
from acp_model.spec.readings import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
COMMAND = os.environ.get("ACP_AGENT") or shlex.join(
    [sys.executable, "-m", "acp_model.agents.reference"])
DB = os.environ.get("ACP_DB", ".hypothesis/acp-model")
directory, shared = (None, ()) if DB.lower() == "none" else locations([DB], ROOT)

CONFIG = resolve(FuzzConfig(
    argv=shlex.split(COMMAND), deadline=float(os.environ.get("ACP_DEADLINE", "3")),
    steps=int(os.environ.get("ACP_STEPS", "30")),
    readings=DEFAULT.parse([r for r in os.environ.get("ACP_READINGS", "").split(",")
                            if r.strip()]),
    spec=os.environ.get("ACP_SPEC", "auto"), cwd=str(ROOT), database=directory,
    shared_databases=shared, database_readonly=os.environ.get("ACP_DB_RO", "") not in ("", "0")))

_stack = contextlib.ExitStack()
Machine = _stack.enter_context(lifecycle_machine(CONFIG))
atexit.register(_stack.close)


def _announce(found: Found) -> None:
    """Say on stderr (which HypoFuzz leaves to its workers) the moment a rule first fails:
    HypoFuzz's own console line comes only at its next minute-long check, without the rule."""
    print(f"acp-model: {found.rule} failed (worker {os.getpid()}): {found.violation.message}",
          file=sys.__stderr__, flush=True)


Machine.acp_recorder.on_failure = _announce


# HypoFuzz fuzzes with the *default* settings (a stateful TestCase's runTest carries none of its
# own) and collects only tests whose database is the default one: so the campaign's settings are
# the loaded profile. derandomize is stated because Hypothesis loads its ``ci`` profile
# (derandomize=True, no database) when ``CI`` is set, and HypoFuzz refuses a derandomized test.
settings.register_profile("acp-model-hypofuzz", database=example_database(CONFIG),
                          deadline=None, derandomize=False, stateful_step_count=CONFIG.steps,
                          max_examples=200,  # HypoFuzz refuses tests that suppress nested_given
                          suppress_health_check=[h for h in HealthCheck
                                                 if h is not HealthCheck.nested_given])
settings.load_profile("acp-model-hypofuzz")


class TestAgentLifecycle(Machine.TestCase):  # type: ignore[name-defined,misc]
    settings = settings()
