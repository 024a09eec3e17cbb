"""A conforming ACP v2 reference agent and a zoo of seeded-bug mutants.

This package is an independent implementation of the protocol: it imports nothing from
``acp_model`` outside ``acp_model.agents``, so that its bugs are not correlated with the
oracle's. Run it with ``python -m acp_model.agents.reference`` (see ``README.md`` here).
"""
