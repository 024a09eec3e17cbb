"""``python -m acp_model`` is the ``acp-model`` command."""

from acp_model.cli import run

run()
