#!/usr/bin/env bash
# Installs the emulator (moto 5.2.5 + the Cloud Control wrapper's needs) into <repo>/.venv.
# Idempotent: does nothing when the venv already holds exactly these requirements.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv="$repo/.venv"
req="$repo/tests/emulator/requirements.txt"
stamp="$venv/.cdkd-requirements"
if [ -f "$stamp" ] && cmp -s "$stamp" "$req"; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
cp "$req" "$stamp"
echo "emulator installed in $venv" >&2
