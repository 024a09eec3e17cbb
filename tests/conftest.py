"""Hypothesis profiles, durations kept as data (tests/durations.py) and the rule sweep's
options (tests/rule_sweep.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests import durations, rule_sweep
from tests.rule_sweep import pytest_addoption

__all__ = ["pytest_addoption", "pytest_configure"]

settings.register_profile("acpm-dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("acpm-ci", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("acpm-ci" if os.environ.get("CI") else "acpm-dev")


def pytest_configure(config: pytest.Config) -> None:
    durations.configure(config)
    rule_sweep.pytest_configure(config)
