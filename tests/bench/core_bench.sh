#!/usr/bin/env bash
# The core-services stack (tests/fixtures/cdk.out/core: 8 each of S3 buckets, DynamoDB tables,
# SQS queues, SNS topics, SSM parameters and log groups, 48 resources) against a private
# emulator answering every request after 50 ms: deploy, no-change deploy and destroy, the
# requests each made by service, and the Cloud Control requests, which must be zero (every type
# has an SDK plugin). Exit 1 when any Cloud Control request was made.
# Usage: core_bench.sh [release|debug] (default release; build the workspace first).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
source "$(dirname "$0")/emulator.sh"
profile=${1:-release}
cdkd="$repo/target/$profile/cdkd"
[ -x "$cdkd" ] || { echo "build it first: cargo build --$profile --workspace" >&2; exit 1; }
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
"$cdkd" --state-bucket bench-core bootstrap --no-assets >/dev/null
cp -r tests/fixtures/cdk.out/core "$work/core"
# Requests by service since the last reset; the Cloud Control count last.
by_service() {
  curl -fsS "$endpoint/_emulator/stats" | python3 -c '
import json, sys
stats = json.load(sys.stdin)
by = {}
for key, count in stats.items():
    by[key.split(":")[0]] = by.get(key.split(":")[0], 0) + count
print("%d (%s)" % (sum(stats.values()), ", ".join("%s %d" % i for i in sorted(by.items()))), by.get("cloudcontrol", 0))'
}
cloud_control=0
for step in deploy no-change destroy; do
  reset_calls
  case $step in
    deploy | no-change) wall=$(timed "$cdkd" --state-bucket bench-core deploy -a "$work/core") ;;
    destroy) wall=$(timed "$cdkd" --state-bucket bench-core destroy -a "$work/core" -f) ;;
  esac
  requests=$(by_service)
  cc=${requests##* }
  echo "$step: ${wall} s, requests ${requests% *}, Cloud Control ${cc}"
  cloud_control=$((cloud_control + cc))
done
echo "Cloud Control requests in all: $cloud_control (target 0): $([ "$cloud_control" = 0 ] && echo PASS || echo MISS)"
[ "$cloud_control" = 0 ]
