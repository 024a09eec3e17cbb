"""Fixtures for hand-written tests of the agent given with ``--acp-agent``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from hypothesis.stateful import RuleBasedStateMachine

    from acp_model.fuzzing.client import FuzzClient
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.oracle.monitor import Monitor


from collections.abc import Iterator

import pytest

from acp_model.pytest_plugin.api import decided, lifecycle_machine
from acp_model.pytest_plugin.run import (
    AcpRun,
    _options,
    fuzz_config,
    profile_settings,
    run_once,
)


@pytest.fixture(scope="session")
def acp_config(request: pytest.FixtureRequest) -> FuzzConfig:
    """The fuzzer configuration for the agent under test (skips without ``--acp-agent``)."""
    opts = _options(request.config)
    if opts is None:
        pytest.skip("needs --acp-agent")
    return decided(fuzz_config(opts))  # --acp-spec auto: the probe decides, as in the CLI


@pytest.fixture(scope="session")
def acp_settings(request: pytest.FixtureRequest, acp_config: FuzzConfig) -> Settings:
    """Hypothesis settings of the selected ``--acp-profile`` (with the agent's database)."""
    opts = _options(request.config)
    assert opts is not None
    return profile_settings(opts.profile, acp_config)


@pytest.fixture(scope="session")
def acp_fuzz(request: pytest.FixtureRequest) -> AcpRun:
    """The session's fuzz run (run once, shared with the ``test_acp[GROUP]`` tests)."""
    return run_once(request.config)


@pytest.fixture
def acp_client(acp_config: FuzzConfig) -> Iterator[FuzzClient]:
    """A connected, initialized client to the agent under test; closed afterwards."""
    from acp_model.fuzzing.client import AgentUnusable, FuzzClient

    cfg = decided(acp_config)  # a no-op for the fixture's own configuration
    try:
        client = FuzzClient(cfg)
    except AgentUnusable as exc:
        pytest.fail(f"cannot start the agent: {exc}", pytrace=False)
    try:
        try:
            client.initialize()
        except AgentUnusable as exc:
            pytest.fail(f"the agent did not initialize: {exc}", pytrace=False)
        yield client
    finally:
        client.close()


@pytest.fixture
def acp_monitor(acp_client: FuzzClient) -> Monitor:
    """The monitor of ``acp_client``: every message both ways, judged as it arrives."""
    return acp_client.monitor


@pytest.fixture
def acp_state_machine(acp_config: FuzzConfig) -> Iterator[type[RuleBasedStateMachine]]:
    """The lifecycle state machine class for the agent under test (see lifecycle_machine)."""
    from acp_model.fuzzing.client import AgentUnusable

    try:
        with lifecycle_machine(acp_config) as machine:
            yield machine
    except AgentUnusable as exc:
        pytest.fail(f"cannot start the agent: {exc}", pytrace=False)
