#!/usr/bin/env bash
# Starts the emulator on 127.0.0.1 (a free port) and prints its endpoint URL.
# State lives in <repo>/.emulator/ (endpoint, pid, log). Usage: start.sh [--quiet]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir="$repo/.emulator"
mkdir -p "$dir"
"$repo/tests/emulator/setup.sh"
if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
  cat "$dir/endpoint"
  exit 0
fi
rm -f "$dir/endpoint"
nohup "$repo/.venv/bin/python" "$repo/tests/emulator/server.py" --port "${EMU_PORT:-0}" \
  --endpoint-file "$dir/endpoint" >"$dir/log" 2>&1 &
echo $! >"$dir/pid"
for _ in $(seq 1 300); do
  if [ -s "$dir/endpoint" ] && curl -fsS "$(cat "$dir/endpoint")/_emulator/health" >/dev/null 2>&1; then
    endpoint=$(cat "$dir/endpoint")
    # moto's Docker-based Lambda execution stays off (server.py turns it off too): there is no
    # Docker engine here; the emulator runs Node.js and Python handlers itself (lambda_runner.py).
    curl -fsS -X POST "$endpoint/moto-api/config" -H 'Content-Type: application/json' \
      -d '{"lambda":{"use_docker":false}}' >/dev/null
    echo "$endpoint"
    exit 0
  fi
  if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "the emulator exited while starting; its log:" >&2
    cat "$dir/log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "the emulator did not answer within 30 s; see $dir/log" >&2
exit 1
