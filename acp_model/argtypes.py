"""Argument types shared by the CLI and the pytest plugin: clear messages, no tracebacks."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

__all__ = ["float_at_least", "int_at_least", "positive_float", "rule_ids"]


Number = TypeVar("Number", int, float)


def _at_least(minimum: Number, convert: Callable[[str], Number], expected: str
              ) -> Callable[[str], Number]:
    """An argparse type: ``convert``'s number, no smaller than ``minimum`` (NaN neither)."""

    def parse(value: str) -> Number:
        try:
            number = convert(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}") from None
        if not number >= minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}")
        return number

    return parse


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than ``minimum`` (clear message otherwise)."""
    return _at_least(minimum, int, "a whole number")


def float_at_least(minimum: float) -> Callable[[str], float]:
    """An argparse type: a number no smaller than ``minimum`` (clear message otherwise)."""
    return _at_least(minimum, float, "a number")


def positive_float(value: str) -> float:
    """An argparse type: a number of seconds greater than zero."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return number


def rule_ids(value: str) -> frozenset[str]:
    """An argparse type: comma-separated rule IDs of the catalogue (a typo is named)."""
    from acp_model.spec.rules import RULES

    ids = frozenset(part.strip() for part in value.split(",") if part.strip())
    unknown = sorted(ids - RULES.keys())
    if not ids or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown rule ID {', '.join(unknown)}" if unknown else "expected rule IDs")
    return ids
