"""``python -m acp_model.cli`` is the ``acp-model`` command."""

from acp_model.cli import run

run()
