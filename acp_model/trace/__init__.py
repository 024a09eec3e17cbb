"""Traces: the JSONL wire format, a builder for hand-written traces, one-line descriptions and
sequence diagrams."""
