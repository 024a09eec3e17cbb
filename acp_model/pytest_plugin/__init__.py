"""pytest plugin: ``pytest --acp-agent "CMD ARGS"`` fuzzes an ACP agent (v2, v1) as tests.

Installed with the package (entry point ``pytest11``, name ``acp_model``). Without
``--acp-agent`` it only registers its options, the ``acp`` marker and its fixtures, so it never
changes anybody else's test run.

With ``--acp-agent`` pytest gets one extra test per rule group (``acp-model::test_acp[CANCEL]``
...), so the outcome reads like a conformance report. The lifecycle fuzz itself runs once per
session (the session-scoped ``acp_fuzz`` fixture; the group tests read the same run) under a
profile (``--acp-profile quick|ci|deep``) that is a registered Hypothesis settings profile
(``acp-model-quick`` ...) plus the fuzzer's own budgets. A group test fails with that group's
violations, the minimal counterexample of each and how often it reproduced in fresh agent
processes; SHOULD-level findings are emitted as :class:`AcpWarning` (``-W error::...`` turns
them into failures); a group none of whose rules was exercised is skipped.

Fixtures for hand-written tests: ``acp_client`` (a connected, initialized
:class:`~acp_model.fuzzing.client.FuzzClient`), ``acp_monitor`` (its monitor),
``acp_state_machine`` (the Hypothesis state machine class bound to a fresh agent pool, to
subclass with extra rules; see :func:`~acp_model.pytest_plugin.api.lifecycle_machine`),
``acp_settings`` (the profile's Hypothesis settings), ``acp_config`` (the
:class:`~acp_model.fuzzing.config.FuzzConfig`) and ``acp_fuzz`` (the session's :class:`AcpRun`).
See ``docs/pytest-plugin.md``.
"""

from acp_model.pytest_plugin.fixtures import (
    acp_client,
    acp_config,
    acp_fuzz,
    acp_monitor,
    acp_settings,
    acp_state_machine,
)
from acp_model.pytest_plugin.hooks import (
    pytest_addoption,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_configure_node,
    pytest_sessionstart,
    pytest_terminal_summary,
    pytest_unconfigure,
)
from acp_model.pytest_plugin.items import AcpWarning

__all__ = ["AcpWarning", "acp_client", "acp_config", "acp_fuzz", "acp_monitor", "acp_settings",
           "acp_state_machine", "pytest_addoption", "pytest_collection_finish",
           "pytest_collection_modifyitems",
           "pytest_configure", "pytest_configure_node", "pytest_sessionstart",
           "pytest_terminal_summary", "pytest_unconfigure"]
