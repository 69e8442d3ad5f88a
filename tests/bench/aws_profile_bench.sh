#!/usr/bin/env bash
# The core-services stack (tests/fixtures/cdk.out/core: 8 each of S3 buckets, DynamoDB tables,
# SQS queues, SNS topics, SSM parameters and log groups, 48 resources) against a private emulator
# with the AWS timing profile on (EMU_PROFILE=aws, tests/emulator/timing.py; scale
# EMU_TIME_SCALE, default 0.1): deploy and destroy, each with its wall time, the same time in AWS
# seconds (wall / scale) and the requests it made by service; after the deploy, the DynamoDB
# tables' status as DescribeTable answers it at that moment (a table still CREATING means the
# deploy returned before the table was usable).
# Usage: aws_profile_bench.sh [release|debug] (default debug; build the workspace first).
set -euo pipefail
# Scripted runs have no terminal to approve IAM and security-group changes on (--require-approval).
export CDKD_REQUIRE_APPROVAL=never
export EMU_PROFILE=aws EMU_TIME_SCALE=${EMU_TIME_SCALE:-0.1} EMU_LATENCY_MS=0
source "$(dirname "$0")/emulator.sh"
profile=${1:-debug}
cdkd="$repo/target/$profile/cdkd"
[ -x "$cdkd" ] || { echo "build it first: cargo build --$profile --workspace" >&2; exit 1; }
# The bundled plugins file beside it, every library pinned (docs/providers.md#trust-and-install).
"$cdkd" providers lock "$repo/plugins.toml" --output "$(dirname "$cdkd")/plugins.toml" >/dev/null
"$cdkd" --state-bucket bench-aws bootstrap --no-assets >/dev/null
cp -r tests/fixtures/cdk.out/core "$work/core"
by_service() {
  curl -fsS "$endpoint/_emulator/stats" | python3 -c '
import json, sys
stats = json.load(sys.stdin)
by = {}
for key, count in stats.items():
    by[key.split(":")[0]] = by.get(key.split(":")[0], 0) + count
print("%d (%s)" % (sum(stats.values()), ", ".join("%s %d" % i for i in sorted(by.items()))))'
}
table_states() {
  .venv/bin/python -c '
import sys, boto3
ddb = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1",
                   aws_access_key_id="testing", aws_secret_access_key="testing")
states = {}
for name in ddb.list_tables()["TableNames"]:
    status = ddb.describe_table(TableName=name)["Table"]["TableStatus"]
    states[status] = states.get(status, 0) + 1
print(", ".join("%s %d" % s for s in sorted(states.items())) or "none")' "$endpoint"
}
echo "profile aws, scale $EMU_TIME_SCALE ($cdkd)"
for step in deploy destroy; do
  reset_calls
  case $step in
    deploy) wall=$(timed "$cdkd" --state-bucket bench-aws deploy -a "$work/core") ;;
    destroy) wall=$(timed "$cdkd" --state-bucket bench-aws destroy -a "$work/core" -f) ;;
  esac
  states=$([ "$step" = deploy ] && table_states || echo "-")
  aws_s=$(python3 -c "print(round($wall / $EMU_TIME_SCALE, 1))")
  echo "$step: ${wall} s (${aws_s} s at AWS scale), requests $(by_service); DynamoDB tables right after: $states"
done
