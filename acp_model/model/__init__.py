"""The model: the session and connection state machines, their checks, the engine that runs
them, single-message checks and the client-side reducers. Pure: no I/O, no threads."""
