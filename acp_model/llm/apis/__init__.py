"""The model APIs the scripted model speaks: one adapter module per wire format."""

from acp_model.llm.apis.anthropic import AnthropicMessages
from acp_model.llm.apis.gemini import Gemini
from acp_model.llm.apis.openai_chat import OpenAIChat
from acp_model.llm.apis.openai_responses import OpenAIResponses

ADAPTERS = {cls.name: cls for cls in (AnthropicMessages, OpenAIResponses, OpenAIChat, Gemini)}

__all__ = ["ADAPTERS"]
