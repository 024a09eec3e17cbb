"""The command line (``acp-model``); see :mod:`acp_model.cli.main`."""

from acp_model.cli.main import main

__all__ = ["main"]
