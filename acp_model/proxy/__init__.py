"""``acp-model proxy``: the oracle live on the wire between an editor and its agent."""
