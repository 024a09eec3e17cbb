"""Hypothesis profiles, and the rule sweep's options (tests/rule_sweep.py)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.rule_sweep import pytest_addoption, pytest_configure

__all__ = ["pytest_addoption", "pytest_configure"]

settings.register_profile("acpm-dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("acpm-ci", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("acpm-ci" if os.environ.get("CI") else "acpm-dev")
