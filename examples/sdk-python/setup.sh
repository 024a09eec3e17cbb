#!/usr/bin/env bash
# Create examples/sdk-python/.venv with the pinned official Python SDK (agent-client-protocol).
# Idempotent and quick when nothing changed: a stamp holds the hash of requirements.txt.
# PYTHON selects the interpreter (the SDK needs 3.10 to 3.14); default python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$here/requirements.txt"
"$venv/bin/python" -c "import acp.experimental.v2"  # fail here, not in the tests
echo "$want" >"$stamp"
echo "sdk-python: $("$venv/bin/python" -m pip --disable-pip-version-check list 2>/dev/null | grep -i agent-client-protocol)"
