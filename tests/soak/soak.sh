#!/usr/bin/env bash
# Fault and crash soak: deploys the soak app (tests/fixtures/cdk.out/soak) under injected faults,
# SIGKILLs and double Ctrl-Cs, and checks after every round that the emulator holds exactly the
# resources the state record names (no duplicate, no leak, nothing lost) and nothing after a
# destroy. See docs/testing.md ("Soak").
#   bash tests/soak/soak.sh [ROUNDS] [soak.py options]   # ROUNDS of each kind, default 3
# Needs the debug build (cargo build --workspace) and the emulator's venv (tests/emulator/setup.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
rounds=3
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  rounds=$1
  shift
fi
cdkd="$repo/target/debug/cdkd"
app="$repo/tests/fixtures/cdk.out/soak"
[ -x "$cdkd" ] || { echo "soak: $cdkd is missing: run cargo build --workspace" >&2; exit 2; }
[ -x .venv/bin/python ] || { echo "soak: .venv is missing: run tests/emulator/setup.sh" >&2; exit 2; }
[ -f "$app/SoakStack.template.json" ] || { echo "soak: $app is missing: run tests/fixtures/apps/regenerate.sh" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/cdkd-soak.XXXXXX")
emulator=
cleanup() {
  status=$?
  if [ -n "$emulator" ]; then kill "$emulator" 2>/dev/null || true; wait "$emulator" 2>/dev/null || true; fi
  if [ "$status" -eq 0 ] && [ -z "${SOAK_KEEP:-}" ]; then rm -rf "$work"; else echo "soak: logs kept in $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
EMU_LATENCY_MS=50 .venv/bin/python tests/emulator/server.py --port 0 --endpoint-file "$work/endpoint" \
  --exit-with-parent >"$work/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 1 300); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
[ -s "$work/endpoint" ] || { echo "soak: the emulator did not start" >&2; cat "$work/emulator.log" >&2; exit 2; }
endpoint=$(cat "$work/endpoint")
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
  CDKD_S3_FORCE_PATH_STYLE=true CDKD_PLUGINS="$repo/plugins.toml"
bucket=soak-state
timeout 120 "$cdkd" --state-bucket "$bucket" bootstrap --no-assets >"$work/bootstrap.log" 2>&1 \
  || { echo "soak: bootstrap failed" >&2; cat "$work/bootstrap.log" >&2; exit 2; }
# A backstop over the driver's own limits (each cdkd command is bounded by --step-timeout).
timeout 3600 .venv/bin/python tests/soak/soak.py --endpoint "$endpoint" --cdkd "$cdkd" --app "$app" \
  --bucket "$bucket" --work "$work" --rounds "$rounds" "$@"
