"""The CLI's argument types: a bad value is a usage error with a message, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from acp_model.argtypes import float_at_least, int_at_least, positive_float


@pytest.mark.parametrize(("parse", "value", "message"), [
    (positive_float, "0", "must be positive"),
    (positive_float, "soon", "expected a number"),
    (int_at_least(2), "1", "must be at least 2"),
    (int_at_least(2), "2.5", "expected a whole number"),
    (float_at_least(1.0), "0.5", "must be at least 1"),
    (float_at_least(1.0), "nan", "must be at least 1"),
])
def test_a_bad_value_names_what_is_wrong(parse: object, value: str, message: str) -> None:
    with pytest.raises(Exception, match=message):
        parse(value)  # type: ignore[operator]


def test_the_values_allowed_come_back_as_numbers() -> None:
    assert positive_float("0.25") == 0.25
    assert int_at_least(2)("3") == 3
    assert float_at_least(1.0)("1") == 1.0 and float_at_least(1.0)("3") == 3.0


def test_a_minimize_growth_below_one_is_a_usage_error() -> None:
    """The search caps each failure's minimizing at growth x budget, never below the budget:
    a growth under 1 would only shrink the time the run reserved for it."""
    done = subprocess.run([sys.executable, "-m", "acp_model", "fuzz", "--minimize-growth",
                           "0.5", "--", "true"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "--minimize-growth: must be at least 1" in done.stderr
    assert "Traceback" not in done.stderr
