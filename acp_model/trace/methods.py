"""The names of the JSON-RPC methods the package acts on, spelled once.

A vocabulary below the model: the wire-level readers of this layer (``--spec auto``'s
:class:`~acp_model.trace.dialect.Detector`) may not import the model, so the names live here
and :mod:`acp_model.model.wire_table` keys its rows by them; what each method *means* to the
monitor (its events, handlers, the obligation its answer discharges) is that table's row, not
this enum. Methods nothing names in code (the schema-checked-only ones) stay plain strings of
the table.
"""

from __future__ import annotations

from enum import StrEnum


class Method(StrEnum):
    """A JSON-RPC method the lifecycle model, the monitor or the wire readers name."""

    INITIALIZE = "initialize"
    NEW_SESSION = "session/new"
    PROMPT = "session/prompt"
    CANCEL = "session/cancel"
    CLOSE = "session/close"
    LOAD = "session/load"
    RESUME = "session/resume"
    PERMISSION = "session/request_permission"
    UPDATE = "session/update"
    CANCEL_REQUEST = "$/cancel_request"
