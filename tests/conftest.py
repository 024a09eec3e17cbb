"""Shared test helpers."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("acpm-dev", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("acpm-ci", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("acpm-ci" if os.environ.get("CI") else "acpm-dev")
