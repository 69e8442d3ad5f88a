#!/usr/bin/env bash
# Registry-schema lookups (issue 14): what `DescribeType` costs a deploy of the generated app
# (Cloud Control types), against a private emulator answering every request after 50 ms.
# Prints, for a first deploy, a no-change deploy with an empty schema cache and one with a warm
# cache: DescribeType calls and wall time. Uses target/release/cdkd when built (tests/bench.sh),
# else target/debug/cdkd.
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
cdkd="$repo/target/release/cdkd"
[ -x "$cdkd" ] || cdkd="$repo/target/debug/cdkd"
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
work=$(mktemp -d)
trap 'kill $emulator 2>/dev/null || true; rm -rf "$work"' EXIT
EMU_LATENCY_MS=50 .venv/bin/python tests/emulator/server.py --port 0 --endpoint-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
emulator=$!
for _ in $(seq 1 300); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
endpoint=$(cat "$work/endpoint")
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true CDKD_S3_FORCE_PATH_STYLE=true \
  CDKD_CACHE_DIR="$work/cache"
"$cdkd" --state-bucket bench-state bootstrap --no-assets >/dev/null
GEN_RESOURCES=49 GEN_STACKS=1 GEN_CHAIN=7 OUT="$work/app" bash tests/fixtures/apps/regenerate.sh generator 2>/dev/null
run() {
  local label=$1
  curl -fsS -X DELETE "$endpoint/_emulator/describe-type-calls" >/dev/null
  local started ended
  started=$(date +%s.%N)
  "$cdkd" --state-bucket bench-state deploy -a "$work/app" >"$work/deploy.log" 2>&1
  ended=$(date +%s.%N)
  local calls
  calls=$(curl -fsS "$endpoint/_emulator/describe-type-calls" | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"])')
  printf '%-34s DescribeType calls %3s   wall %6.2f s\n' "$label" "$calls" "$(echo "$ended - $started" | bc)"
}
types=$(python3 -c "import json,glob; t=json.load(open(glob.glob('$work/app/*.template.json')[0])); print(len({r['Type'] for r in t['Resources'].values() if r['Type'] != 'AWS::CDK::Metadata'}))")
echo "generated app: 49 resources, $types types, 50 ms per request"
run "first deploy (nothing recorded)"
rm -rf "$work/cache"
run "no-change deploy, empty cache"
run "no-change deploy, warm cache"
