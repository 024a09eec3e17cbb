"""The agent's own code coverage, measured while it is fuzzed (``--coverage``).

Node agents are measured by V8 (an in-process inspector session that a ``--require`` hook
starts), Python agents by coverage.py (a ``sitecustomize`` hook), both restricted to the
agent's ACP layer (``scope``). After each example the fuzzer asks for a snapshot: the lines
reached for the first time steer generation (``fuzzing/machine.py``); at the end the figures
go into the report (``coverage_agent``) and, with ``--coverage-html``, an annotated source.
This package imports nothing else of acp_model: the fuzzer uses it, the model does not know it.
"""

from acp_model.agentcov.collector import Collector
from acp_model.agentcov.result import AgentCoverage, FileFigures
from acp_model.agentcov.scope import AUTO, Scope

__all__ = ["AUTO", "AgentCoverage", "Collector", "FileFigures", "Scope"]
