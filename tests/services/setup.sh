#!/usr/bin/env bash
# What the test suite needs beyond Python and the SDK examples: a real Chromium (the HTML
# reports are loaded in it, and mermaid-cli renders on it), a real redis-server (the shared
# example database), libfaketime (a held replay holds the agent's wall clock:
# acp_model/fuzzing/clock.py), and mermaid-cli pinned by mermaid/package-lock.json. Debian packages are
# installed with apt-get when missing (root needed; CI runs as root); everything is idempotent
# and quick when already there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v redis-server >/dev/null || missing+=(redis-server)
fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
compgen -G "/usr/lib/*/faketime/libfaketime.so.1" >/dev/null \
    || [ -e /usr/lib/faketime/libfaketime.so.1 ] || missing+=(libfaketime)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "services: missing ${missing[*]}; install them (Debian: apt-get install ${missing[*]})" >&2
        exit 1
    fi
    echo "services: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
stamp="$here/mermaid/node_modules/.lock.sha256"
want="$(sha256sum "$here/mermaid/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    # Puppeteer must not download its own browser: mermaid-cli runs on the system Chromium
    # (acp_model/render/mermaid_cli.py writes the puppeteer config).
    (cd "$here/mermaid" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi
echo "services: $(chromium --version 2>/dev/null | head -1); $(redis-server --version | cut -d' ' -f1-3); mermaid-cli $(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).version' "$here/mermaid/node_modules/@mermaid-js/mermaid-cli/package.json")"
