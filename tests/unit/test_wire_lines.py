"""The one-line form of a wire message in counterexamples, proofs and issue bodies."""

from __future__ import annotations

from acp_model.trace.describe import describe


def test_an_error_says_id_null_apart_from_no_id_member() -> None:
    """The s12 reader (O9): claude-agent-acp's answer to a batch (``"id": null``) and
    zed-codex-acp's answer to a notification (no ``id`` member at all) both read "error
    id=None (?)"; an RPC-09 reader must tell a null id from a missing one."""
    error = {"code": -32600, "message": "Invalid request"}
    assert describe({"jsonrpc": "2.0", "id": None, "error": error}).startswith(
        "error id null (?) -32600")
    assert describe({"jsonrpc": "2.0", "error": error}).startswith("error no id member (?)")
    assert describe({"jsonrpc": "2.0", "id": 7, "error": error},
                    {7: "session/prompt"}).startswith("error id=7 (session/prompt) -32600")
