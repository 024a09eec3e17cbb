"""The rule catalogue, the named readings, the doc-vs-schema contradictions and the vendored
schemas: data about the specification, no protocol logic."""
