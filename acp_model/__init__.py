"""acp-model: a formal model, checker and fuzzer for the ACP v2 prompt lifecycle.

The public API, importable from here (``from acp_model import check_trace, explore``):

* offline checking: :func:`check_trace`, :func:`check_records`, :func:`check_one_sided` (a
  recording of the agent's messages alone), and the oracle itself,
  :class:`Monitor` with its :class:`Violation` records;
* the specification as data: :data:`RULES` / :func:`catalogue` (the rule catalogue),
  :data:`DEFAULT` / :class:`Readings` / :data:`READING_DEFS` (the named readings);
* the model: :class:`SessionLifecycle` and :class:`SessionModel`, :func:`compile_machine`;
* traces: :class:`TraceBuilder`, :func:`summarize`;
* exploration: :func:`explore`, :func:`check_properties`, :func:`diff_readings`,
  :func:`parse_diff`, :func:`contradictions`, :data:`PROPERTIES`, :data:`PROPERTY_NAMES`;
* fuzzing: :class:`FuzzRun` (a whole run as ``acp-model fuzz`` makes it, its report files
  written where :class:`Outputs` says), :func:`run_fuzz`, :func:`replay_once`,
  :class:`FuzzConfig`.

Names are imported on first use (PEP 562), so ``import acp_model`` stays cheap: the pytest
plugin is loaded by every pytest run in an environment where acp-model is installed, and the
reference agent (``acp_model.agents``) must not load the oracle it is tested by.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "check_records": "acp_model.oracle.offline",
    "check_trace": "acp_model.oracle.offline",
    "check_one_sided": "acp_model.oracle.offline",
    "Monitor": "acp_model.oracle.monitor",
    "Violation": "acp_model.oracle.monitor",
    "RULES": "acp_model.spec.rules",
    "Rule": "acp_model.spec.rules",
    "catalogue": "acp_model.spec.rules",
    "DEFAULT": "acp_model.spec.readings",
    "READING_DEFS": "acp_model.spec.readings",
    "Readings": "acp_model.spec.readings",
    "SessionLifecycle": "acp_model.model.lifecycle",
    "SessionModel": "acp_model.model.session",
    "compile_machine": "acp_model.model.engine",
    "TraceBuilder": "acp_model.trace.builder",
    "summarize": "acp_model.trace.describe",
    "PROPERTIES": "acp_model.explorer",
    "PROPERTY_NAMES": "acp_model.explorer",
    "check_properties": "acp_model.explorer",
    "contradictions": "acp_model.explorer",
    "diff_readings": "acp_model.explorer",
    "explore": "acp_model.explorer",
    "parse_diff": "acp_model.explorer",
    "FuzzConfig": "acp_model.fuzzing.config",
    "FuzzRun": "acp_model.fuzzing.orchestrator",
    "Outputs": "acp_model.fuzzing.orchestrator",
    "replay_once": "acp_model.fuzzing.shrink",
    "run_fuzz": "acp_model.fuzzing.run",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'acp_model' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
