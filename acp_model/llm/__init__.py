"""A model the fuzzer scripts: a loopback server that stands in for an agent's LLM API.

``script`` holds the behaviour vocabulary (what the model does in a turn), ``server`` the HTTP
server and the matching of requests to scripted turns, ``apis`` one adapter per wire format.
This package imports nothing else of acp_model: the fuzzer uses it, the model does not know it.
"""

from acp_model.llm.script import ModelScript, describe_script
from acp_model.llm.server import ScriptedModel, tag_text

__all__ = ["ModelScript", "ScriptedModel", "describe_script", "tag_text"]
