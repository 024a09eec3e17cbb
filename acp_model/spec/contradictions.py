"""The doc-vs-schema and doc-vs-doc contradictions of RULES.md section 6.3, as data."""

from __future__ import annotations

# RULES.md §6.3, summarised: (id, where the sources disagree, catalogue rules concerned).
CONTRADICTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("C-01", "stop reason on the idle that ends work: MUST in the lifecycle page, SHOULD in "
             "the schema's IdleStateUpdate", ("STATE-03",)),
    ("C-02", "idle(cancelled) after a cancel: MUST in the docs, SHOULD in the schema's "
             "cancel notification and stop reason texts", ("CANCEL-06",)),
    ("C-03", "running after requires_action: MUST in lifecycle §3, SHOULD in §5",
     ("STATE-06",)),
    ("C-04", "baseline session methods: 4 in AgentCapabilities.session, 7 elsewhere",
     ("INIT-10",)),
    ("C-05", "tool kind switch_mode: in the schema, not in the docs", ("TOOL-15",)),
    ("C-06", "ToolCallLocation.line: minimum 0 in the schema, 1-based in the docs",
     ("TOOL-19",)),
    ("C-07", "cancelled permission answers: error -32800 in the cancellation diagram, the "
             "cancelled outcome everywhere else", ("CANCEL-04",)),
    ("C-08", "plan update fallback rejects the reserved file/markdown types", ("PLAN-04",)),
    ("C-09", "initialize capabilities: MUST in the docs, optional in the schema",
     ("INIT-03",)),
    ("C-10", "several initialize examples omit the required info", ("INIT-09",)),
    ("C-11", "§5 lets tools use client capabilities v2 no longer defines", ()),
    ("C-12", "the lifecycle diagram draws two idles on the cancel path", ("ACPM-ONE-STOP",)),
    ("C-13", "v1 notification type names in the docs vs the v2 schema names", ()),
)


# Contradictions the model resolves with a reading instead of a strength.
CONTRADICTION_READINGS = {"C-07": "A-14", "C-12": "A-05"}
