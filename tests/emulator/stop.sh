#!/usr/bin/env bash
# Stops the emulator started by start.sh, if it runs.
set -euo pipefail
dir="$(cd "$(dirname "$0")/../.." && pwd)/.emulator"
if [ -f "$dir/pid" ]; then
  kill "$(cat "$dir/pid")" 2>/dev/null || true
  rm -f "$dir/pid" "$dir/endpoint"
fi
