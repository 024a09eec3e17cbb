#!/usr/bin/env bash
# Install the pinned official TypeScript SDK into examples/sdk-typescript/node_modules with
# `npm ci` (exactly package-lock.json). Idempotent and quick when nothing changed: npm keeps a
# copy of the lock in node_modules/.package-lock.json, compared through a stamp.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v node >/dev/null || { echo "sdk-typescript: node not found (Node.js >= 20 needed)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
    echo "sdk-typescript: Node.js >= 20 needed, found $(node --version)" >&2
    exit 1
fi
stamp="$here/node_modules/.lock.sha256"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
# fail here, not in the tests
(cd "$here" && node --input-type=module -e 'await import("@agentclientprotocol/sdk/experimental/v2")')
echo "$want" >"$stamp"
echo "sdk-typescript: @agentclientprotocol/sdk $(cd "$here" && node -p 'require("./node_modules/@agentclientprotocol/sdk/package.json").version')"
