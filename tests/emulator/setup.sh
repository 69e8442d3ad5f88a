#!/usr/bin/env bash
# Installs the emulator into <repo>/.venv (moto 5.2.5 + the Cloud Control wrapper's needs) and the
# AWS SDK for JavaScript v3 clients that Node.js Lambda handlers get from the runtime into
# tests/emulator/node/node_modules (npm ci from the pinned package-lock.json).
# Idempotent and quick: does nothing when both already match their pinned lists.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv="$repo/.venv"
req="$repo/tests/emulator/requirements.txt"
stamp="$venv/.cdkd-requirements"
if ! { [ -f "$stamp" ] && cmp -s "$stamp" "$req"; }; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
  echo "emulator installed in $venv" >&2
fi

node_dir="$repo/tests/emulator/node"
node_stamp="$node_dir/node_modules/.cdkd-package-lock.json"
if ! { [ -f "$node_stamp" ] && cmp -s "$node_stamp" "$node_dir/package-lock.json"; }; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup.sh: npm not found: Node.js Lambda handlers will run without the AWS SDK clients" >&2
    exit 0
  fi
  (
    # One installer at a time (test processes may run setup.sh together).
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$node_dir/.npm-install.lock"
      flock 9
    fi
    if ! { [ -f "$node_stamp" ] && cmp -s "$node_stamp" "$node_dir/package-lock.json"; }; then
      (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
      cp "$node_dir/package-lock.json" "$node_stamp"
      echo "Lambda runtime SDK clients installed in $node_dir/node_modules" >&2
    fi
  )
fi
