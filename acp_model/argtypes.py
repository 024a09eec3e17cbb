"""Argument types shared by the CLI and the pytest plugin: clear messages, no tracebacks."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["float_at_least", "int_at_least", "positive_float", "rule_ids"]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than ``minimum`` (clear message otherwise)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}")
        return number

    return parse


def float_at_least(minimum: float) -> Callable[[str], float]:
    """An argparse type: a number no smaller than ``minimum`` (clear message otherwise)."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
        if not number >= minimum:  # (NaN too)
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}")
        return number

    return parse


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
