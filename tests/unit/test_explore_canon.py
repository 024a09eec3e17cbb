"""The key's ``canon`` methods are exact: a configuration keyed without them (every value as
the model holds it, ``explore(canon=False)``) and with them judge alike.

The explorer merges configurations that differ only in fields the model states dead there
(``canon`` metadata, :mod:`acp_model.model.snapshot`). A ``canon`` method that drops a value
some check still reads would merge configurations whose futures differ: the two graphs would
then not be bisimilar (a refusal, a warning, a broken property or an obligation reached on
one and not the other), and the properties' verdicts could differ. Both are compared here on
several bounds and readings; each case fails with a ``canon`` method that keeps too little
(``test_a_canon_that_drops_a_live_value_is_caught``).
"""

from __future__ import annotations

import pytest

from acp_model.explorer import Bounds, check_properties, explore
from acp_model.explorer.bounds import SYNC
from acp_model.model.dead_fields import DeadFields
from acp_model.model.snapshot import _compiled, _generated
from acp_model.spec.readings import DEFAULT
from benchmarks.bench_explore import joint_bisimulation

LEAN = {"custom": False, "lean": True}
CASES = {
    "perms": (Bounds(reasons=("end_turn", "cancelled"), **LEAN), DEFAULT),
    "two-cancels": (Bounds(max_cancels=2, max_permissions=0, **LEAN), DEFAULT),
    "two-prompts": (Bounds(max_prompts=2, max_permissions=0, **LEAN), DEFAULT),
    "full-alphabet": (Bounds(max_permissions=0, custom=False), DEFAULT),
    "tool-call": (Bounds(max_tools=1, max_cancels=0, **LEAN),
                  DEFAULT.parse(["A-04=idle-cancelled", "A-10=cancel"])),
    "sdk-2.4.0": (Bounds(max_permissions=0, custom=False), DEFAULT.parse(["SPEC=sdk-2.4.0"])),
    "v1": (Bounds(max_permissions=0, custom=False), DEFAULT.parse(["SPEC=v1"])),
}


def _verdicts(exp: object) -> list[tuple[str, bool, list[list[str]]]]:
    """Each property's verdict and its witnesses' events."""
    return [(p.id, p.holds, [v["witness"]["events"] for v in p.violations])
            for p in check_properties(exp, limit=3)]  # type: ignore[arg-type]


SLOW = {"perms"}  # 14,062 states keyed plainly: `make test` runs it, `make test-fast` not


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c
                                  for c in sorted(CASES)])
def test_the_canonical_key_judges_as_the_plain_one(case: str) -> None:
    bounds, readings = CASES[case]
    plain = explore(bounds=bounds, readings=readings, canon=False)
    canon = explore(bounds=bounds, readings=readings)
    assert canon.nodes < plain.nodes, "the canon methods merge nothing here"
    a, b = joint_bisimulation(plain, canon, stutter=frozenset({SYNC}))
    assert a[0] == b[0], "the two keys' graphs are not bisimilar"
    assert _verdicts(canon) == _verdicts(plain)


def test_two_sessions_judge_as_the_plain_key() -> None:
    """Sessions are renamed by sorting their keys, so the graphs' edges name sessions
    differently: the properties' verdicts are compared."""
    bounds = Bounds(sessions=2, max_permissions=0, **LEAN)
    plain = explore(bounds=bounds, canon=False)
    canon = explore(bounds=bounds)
    assert canon.nodes < plain.nodes
    assert [(p.id, p.holds) for p in check_properties(canon)] == \
        [(p.id, p.holds) for p in check_properties(plain)]


def test_a_canon_that_drops_a_live_value_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Work.rejected`` is read by a cancel sent while quiet: dropping it there merges a
    configuration whose next cancel may reach a rejected prompt's work with one where it
    cannot (the full alphabet: the lean one rejects no prompt)."""
    monkeypatch.setattr(DeadFields, "canon_rejected", lambda self, rejected, rec: False)
    _generated.cache_clear()
    _compiled.cache_clear()
    try:
        bounds, readings = CASES["full-alphabet"]
        plain = explore(bounds=bounds, readings=readings, canon=False)
        canon = explore(bounds=bounds, readings=readings)
        a, b = joint_bisimulation(plain, canon, stutter=frozenset({SYNC}))
        assert a[0] != b[0]
    finally:
        _generated.cache_clear()
        _compiled.cache_clear()


def test_a_product_of_readings_judges_as_the_plain_key() -> None:
    """A ``canon`` method may ask the readings (``canon_owes_reply``: only A-04=idle-cancelled
    reads ``owes_reply``); in a product whose first reading is A-04=noop the key must still
    keep what the second reading's checks read (``Context.product``: a snapshot per
    reading)."""
    bounds = Bounds(max_prompts=2, max_permissions=0, **LEAN)
    readings = [DEFAULT.parse(["A-04=noop"]), DEFAULT.parse(["A-04=idle-cancelled"])]
    plain = explore(bounds=bounds, readings=readings, canon=False)
    canon = explore(bounds=bounds, readings=readings)
    a, b = joint_bisimulation(plain, canon, stutter=frozenset({SYNC}))
    assert a[0] == b[0]
