"""The oracle: classifies wire messages, keeps the JSON-RPC bookkeeping, feeds the model and
records violations (live, from the fuzzer or the proxy, or offline from a trace)."""
