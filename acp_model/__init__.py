"""acp-model: a formal model, checker and fuzzer for the ACP v2 prompt lifecycle."""

__version__ = "0.1.0"
