#!/usr/bin/env bash
# observedProperties capture and drift (issue 15): a generated stack of 50 Cloud Control
# resources (chains of 10) and the `drift` fixture app (11 resources, plugin and Cloud Control
# types), against a private emulator answering every request after 50 ms. Prints the wall time
# and API calls of a deploy with and without the capture, and the wall time of `cdkd drift`.
# Usage: observe_bench.sh [release|debug] (default release; tests/bench.sh builds it).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
profile=${1:-release}
cdkd="$repo/target/$profile/cdkd"
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
unset CDKD_PLUGINS
"$cdkd" --state-bucket bench-observe bootstrap --no-assets >/dev/null
GEN_RESOURCES=50 GEN_STACKS=1 GEN_CHAIN=10 OUT="$work/gen50" bash tests/fixtures/apps/regenerate.sh generator 2>/dev/null
cp -r tests/fixtures/cdk.out/drift "$work/drift"

calls() { curl -fsS "$endpoint/_emulator/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(sum(s.values()), sum(v for k,v in s.items() if not k.startswith("s3:")))'; }
timed() { /usr/bin/time -f "%e" -o "$work/time" "$@" >"$work/out.log" 2>&1 || { cat "$work/out.log"; exit 1; }; cat "$work/time"; }

for app in gen50 drift; do
  for mode in off on; do
    flag=""; [ "$mode" = off ] && flag="--no-capture-observed-state"
    curl -fsS -X DELETE "$endpoint/_emulator/stats" >/dev/null
    wall=$(timed "$cdkd" --state-bucket bench-observe deploy --all -a "$work/$app" $flag)
    read -r all aws <<<"$(calls)"
    echo "$app: deploy, capture $mode: wall ${wall} s, ${all} requests (${aws} outside the state bucket)"
    if [ "$mode" = on ]; then
      curl -fsS -X DELETE "$endpoint/_emulator/stats" >/dev/null
      wall=$(timed "$cdkd" --state-bucket bench-observe drift --all)
      read -r all aws <<<"$(calls)"
      echo "$app: drift (nothing drifted): wall ${wall} s, ${all} requests"
    fi
    "$cdkd" --state-bucket bench-observe destroy --all -a "$work/$app" -f >/dev/null 2>&1
  done
done
